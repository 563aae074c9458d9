/*
 * The probes (launch/probe.h) with real processes: the probe is a shell
 * whose answer depends on the host it is given (probe_cmd makes it
 * "sh -c CODE HOST true": $0 is the host), and which writes each try into
 * the test's directory.  The hosts lost and their order, the tries and
 * their retries, a hanging probe ended at the timeout (by TERM, or by KILL
 * 2 s later when it ignores TERM), probes ended by the caller's stop,
 * this host never asked, a probe that
 * cannot be started; the cluster's ping from a fake ft-cluster; the words
 * of the messages.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/command.h"
#include "launch/probe.h"
#include "launch/proc.h"
#include "tests/unit/check_main.h"
#include "tests/unit/procs.h"
#include "tests/unit/tmpdir.h"

static char code[2048], tries_file[256];

/* The probe: up* answer, slow* hang until TERM, stubborn* hang ignoring
 * TERM, flaky* fail their first try only, the others fail; every try is
 * a line of the tries file, a hanging one's pid in pid.HOST. */
static ft__probe_t probe_of(int tries, const char *timeout) {
  path_of(tries_file, sizeof(tries_file), "tries");
  snprintf(code, sizeof(code),
           "d=%s; echo \"$0\" >>$d/tries; case $0 in "
           "up*) exit 0;; "
           "slow*) echo $$ >$d/pid.$0; exec sleep 30;; "
           "stubborn*) trap '' TERM; echo $$ >$d/pid.$0; exec sleep 30;; "
           "flaky*) [ -e $d/flaky ] && exit 0; : >$d/flaky;; "
           "esac; exit 1",
           dir);
  return procs_probe(code, tries, timeout);
}

static void lost_are(const ft__probe_t *p, const char *const *hosts, int n,
                     int tries, const char *want) {
  ft__words_t bad = FT__WORDS_INIT;
  ck_assert_int_eq(ft__probe_unreachable(p, hosts, n, tries, &bad), FT_OK);
  procs_words_are(&bad, want);
  ft__words_free(&bad);
}

static pid_t pid_in(const char *name) {
  char path[256];
  path_of(path, sizeof(path), name);
  return (pid_t)atol(procs_slurp(path));
}

/* ---- the probe ---- */

/* The lost hosts in the order of hosts, each host asked once a try. */
START_TEST(lost_in_order) {
  ft__probe_t p = probe_of(1, "10");
  const char *const hosts[] = {"down2", "up1", "down1", "up2"};
  lost_are(&p, hosts, 4, 0, "down2 down1");
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(procs_count(tries_file, hosts[i]), 1);
  lost_are(&p, hosts, 0, 0, "");
}
END_TEST

/* FT_PROBE_TRIES tries for a failing host, one for a live one, two for a
 * host that fails once; tries given to the call instead of p's. */
START_TEST(retries) {
  ft__probe_t p = probe_of(3, "10");
  const char *const hosts[] = {"down1", "up1", "flaky1"};
  lost_are(&p, hosts, 3, 0, "down1");
  ck_assert_int_eq(procs_count(tries_file, "down1"), 3);
  ck_assert_int_eq(procs_count(tries_file, "up1"), 1);
  ck_assert_int_eq(procs_count(tries_file, "flaky1"), 2);
  lost_are(&p, hosts, 1, 1, "down1"); /* named back: asked once */
  ck_assert_int_eq(procs_count(tries_file, "down1"), 4);
}
END_TEST

/* A probe that hangs is ended at the timeout (TERM), one that ignores TERM
 * 2 s later (KILL); both hosts are lost, the live one is not, and the
 * call returns with neither probe left. */
START_TEST(hanging_probe_ended) {
  ft__probe_t p = probe_of(1, "1");
  const char *const hosts[] = {"slow1", "up1", "stubborn1"};
  lost_are(&p, hosts, 3, 0, "slow1 stubborn1");
  ck_assert(procs_gone(pid_in("pid.slow1")));
  ck_assert(procs_gone(pid_in("pid.stubborn1")));
}
END_TEST

/* The caller's stop (its signals): asked while the probes run, nonzero
 * once both hanging probes have started. */
static int stop_calls;
static int stop_once_hanging(void *arg) {
  (void)arg;
  stop_calls++;
  char a[256], b[256];
  path_of(a, sizeof(a), "pid.slow1");
  path_of(b, sizeof(b), "pid.slow2");
  return access(a, F_OK) == 0 && access(b, F_OK) == 0;
}
static int never_stop(void *arg) {
  (void)arg;
  stop_calls++;
  return 0;
}

/* A stop that says so ends the probes under way at once: hosts that hang
 * for 3 tries of 30 s (Check's 60 s bound a call that waits for them)
 * are lost, their probes gone, the host that answered is not lost.  A
 * stop that never says so changes nothing, its wake-up descriptor a pipe
 * no one writes. */
START_TEST(probes_stopped) {
  ft__probe_t p = probe_of(3, "30");
  p.wake_fd = -1;
  p.stop = stop_once_hanging;
  const char *const hosts[] = {"slow1", "up1", "slow2"};
  lost_are(&p, hosts, 3, 0, "slow1 slow2");
  ck_assert(stop_calls > 0);
  ck_assert(procs_gone(pid_in("pid.slow1")));
  ck_assert(procs_gone(pid_in("pid.slow2")));
  ck_assert_int_eq(procs_count(tries_file, "slow1"), 1);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  p = probe_of(2, "10");
  p.wake_fd = fds[0];
  p.stop = never_stop;
  const char *const more[] = {"down1", "up1", "flaky1"};
  stop_calls = 0;
  lost_are(&p, more, 3, 0, "down1");
  ck_assert_int_eq(procs_count(tries_file, "down1"), 2);
  close(fds[0]);
  close(fds[1]);
}
END_TEST

/* localhost, 127.*, ::1 and this host's names are never asked. */
START_TEST(this_host_not_asked) {
  char name[256] = "", short_name[256];
  ck_assert_int_eq(gethostname(name, sizeof(name) - 1), 0);
  snprintf(short_name, sizeof(short_name), "%s", name);
  short_name[strcspn(short_name, ".")] = '\0';
  ft__probe_t p = probe_of(1, "10");
  const char *const hosts[] = {"localhost", "127.0.0.2", "::1",
                               name,        short_name,  "down1"};
  lost_are(&p, hosts, 6, 0, "down1");
  ck_assert_str_eq(procs_slurp(tries_file), "down1\n");
  ck_assert(ft__probe_is_this_host("localhost"));
  ck_assert(ft__probe_is_this_host("127.1.2.3"));
  ck_assert(ft__probe_is_this_host("::1"));
  ck_assert(ft__probe_is_this_host(name));
  ck_assert(!ft__probe_is_this_host("down1"));
  ck_assert(!ft__probe_is_this_host("128.0.0.1"));
}
END_TEST

/* A probe whose program is not there fails every try: the host is lost. */
START_TEST(probe_not_started) {
  ft__probe_t p = probe_of(2, "10");
  const char *const gone[] = {"/nonexistent/probe"};
  p.words = gone;
  p.nwords = 1;
  const char *const hosts[] = {"h1", "h2"};
  lost_are(&p, hosts, 2, 0, "h1 h2");
  const char *const bare[] = {"no-such-probe-program"};
  p.words = bare;
  lost_are(&p, hosts, 2, 1, "h1 h2");
}
END_TEST

/* ---- the cluster ---- */

/* "ft-cluster ping --name C --wait 1 HOST...", found on PATH; its lines
 * (here in reverse order, with a name that is no host) give the lost
 * hosts in the order of hosts.  A missing ft-cluster is FT_EIO. */
START_TEST(cluster_ping) {
  char prog[256], body[1024], args[256], path[300];
  path_of(args, sizeof(args), "args");
  snprintf(body, sizeof(body),
           "echo \"$*\" >%s; out=other; for h; do case $h in down*) "
           "out=\"$h\n$out\";; esac; done; printf '%%s\\n' \"$out\"; exit 1",
           args);
  procs_script(prog, sizeof(prog), "ft-cluster", body);
  snprintf(path, sizeof(path), "PATH=%s:/usr/bin:/bin", dir);
  char *const envp[] = {path, NULL};
  ft__probe_t p = probe_of(3, "10");
  p.cluster = "c1";
  p.cluster_cmd = "ft-cluster";
  p.envp = envp;
  const char *const hosts[] = {"down2", "up1", "down1", "localhost"};
  lost_are(&p, hosts, 4, 0, "down2 down1");
  ck_assert_str_eq(procs_slurp(args),
                   "ping --name c1 --wait 1 down2 up1 down1 localhost\n");
  ck_assert_int_eq(procs_count(tries_file, "down2"), 0);
  ft__words_t bad = FT__WORDS_INIT;
  ck_assert_int_eq(ft__probe_cluster_ping(&p, hosts, 2, 0, &bad), FT_OK);
  procs_words_are(&bad, "down2");
  ck_assert_str_eq(procs_slurp(args), "ping --name c1 down2 up1\n");
  p.cluster_cmd = "no-such-ft-cluster";
  ck_assert_int_eq(ft__probe_unreachable(&p, hosts, 4, 0, &bad), FT_EIO);
  procs_words_are(&bad, "down2");
  ft__words_free(&bad);
}
END_TEST

/* ---- Slurm's view ---- */

START_TEST(slurm_states) {
  static const char *const lost[] = {"down", "down*", "drain", "fail",
                                     "idle~", "down$", "down@", "drain$",
                                     "down#", "fail-", "alloc*~", "drain*"};
  static const char *const silent[] = {"alloc*", "idle*", "mix*", "unk*",
                                       "idle*$", "comp*", "mix*@"};
  static const char *const fine[] = {"idle", "alloc", "mix", "comp",
                                     "drng", "failg", "resv", "",
                                     "idle$", "alloc@", "mix-", "idle#"};
  for (size_t i = 0; i < sizeof(lost) / sizeof(*lost); i++)
    ck_assert_msg(ft__probe_slurm_state(lost[i]) == FT__SLURM_LOST, "%s",
                  lost[i]);
  for (size_t i = 0; i < sizeof(silent) / sizeof(*silent); i++)
    ck_assert_msg(ft__probe_slurm_state(silent[i]) == FT__SLURM_SILENT, "%s",
                  silent[i]);
  for (size_t i = 0; i < sizeof(fine) / sizeof(*fine); i++)
    ck_assert_msg(ft__probe_slurm_state(fine[i]) == FT__SLURM_UP, "%s",
                  fine[i]);
}
END_TEST

START_TEST(slurm_parse) {
  /* in the order of hosts; a node listed twice (two partitions) or not
   * at all, a line without a state; not responding apart, or with the
   * lost */
  static const char *const hosts[] = {"h1", "h2", "h3", "h4", "s1", "s2"};
  static const char *const text = "h4 down*\nh1 alloc\nh2 alloc*\nh2 alloc*\n"
                                  "h3\nzz down\ns1 idle\ns2 mix*\ns2 drain*";
  ft__words_t bad = FT__WORDS_INIT, silent = FT__WORDS_INIT;
  ck_assert_int_eq(ft__probe_slurm_parse(text, hosts, 6, &bad, &silent),
                   FT_OK);
  procs_words_are(&bad, "h4 s2");
  procs_words_are(&silent, "h2");
  ft__words_free(&bad);
  ck_assert_int_eq(ft__probe_slurm_parse(text, hosts, 6, &bad, NULL), FT_OK);
  procs_words_are(&bad, "h2 h4 s2");
  ft__words_free(&bad);
  ck_assert_int_eq(ft__probe_slurm_parse("", hosts, 5, &bad, NULL), FT_OK);
  ck_assert_int_eq(bad.n, 0);
  ft__words_free(&silent);
}
END_TEST

/* up1 and down3 tried once each, in either order (they run at once),
 * up2 never. */
static void tried_once(const char *tries) {
  ck_assert_msg(strcmp(tries, "up1\ndown3\n") == 0 ||
                    strcmp(tries, "down3\nup1\n") == 0,
                "tries: %s", tries);
}

/* The fake sinfo of the Slurm tests: code as its body, in the test's bin;
 * envp[0] its PATH. */
static char sinfo_path[400], sinfo_env[500];
static void fake_sinfo(const char *body) {
  char bin[256];
  path_of(bin, sizeof(bin), "bin");
  mkdir(bin, 0700);
  snprintf(sinfo_path, sizeof(sinfo_path), "%s/sinfo", bin);
  snprintf(sinfo_env, sizeof(sinfo_env), "PATH=%s:/usr/bin:/bin", bin);
  FILE *f = fopen(sinfo_path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  ck_assert_int_eq(chmod(sinfo_path, 0700), 0);
}

/* A fake sinfo in PATH: its lines, as the probe's view, come before the
 * probe (which fails every host but up*): a host sinfo says is down gets
 * no probe, one not responding is probed; with view_only none is, and
 * not responding is lost. */
START_TEST(slurm_view_first) {
  char args[300], body[600];
  path_of(args, sizeof(args), "sinfo.args");
  snprintf(body, sizeof(body),
           "echo \"$*\" >%s\nprintf 'up2 down*\\nup1 idle\\nup3 mix*\\n'",
           args);
  fake_sinfo(body);
  ft__probe_t p = probe_of(1, "5");
  char *envp[] = {sinfo_env, NULL};
  p.envp = envp;
  p.sinfo = "sinfo";
  static const char *const hosts[] = {"up1", "up2", "down3"};
  lost_are(&p, hosts, 3, 0, "up2 down3");
  ck_assert_str_eq(procs_slurp(args), "-h -a -N -n up1,up2,down3 -o %N %t\n");
  tried_once(procs_slurp(tries_file));
  /* up3: one missed ping, and it answers the probe */
  static const char *const more[] = {"up1", "up3", "up2"};
  lost_are(&p, more, 3, 0, "up2");
  ck_assert_int_eq(procs_count(tries_file, "up3"), 1);
  p.view_only = 1;
  lost_are(&p, hosts, 3, 0, "up2");
  lost_are(&p, more, 3, 0, "up3 up2");
  ck_assert_int_eq(procs_count(tries_file, "up3"), 1);
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__probe_words(&p, 0, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t), "Slurm reports it down or not responding");
  ft__text_free(&t);
}
END_TEST

/* An sinfo that fails or hangs is no view: every host probed, and it is
 * said once where sinfo_failed is given; a hanging one is ended at the
 * timeout. */
START_TEST(slurm_view_failing) {
  fake_sinfo("echo 'sinfo: error: Unable to contact slurm controller' >&2\n"
             "exit 1");
  ft__probe_t p = probe_of(1, "2");
  char *envp[] = {sinfo_env, NULL};
  p.envp = envp;
  p.sinfo = "sinfo";
  int said = 0;
  p.sinfo_failed = &said;
  static const char *const hosts[] = {"up1", "up2", "down3"};
  char err[300];
  path_of(err, sizeof(err), "stderr");
  fflush(stderr);
  int saved = dup(2);
  FILE *e = freopen(err, "w", stderr);
  ck_assert_ptr_nonnull(e);
  lost_are(&p, hosts, 3, 0, "down3");
  lost_are(&p, hosts, 3, 0, "down3");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ck_assert_int_eq(said, 1);
  ck_assert_str_eq(procs_slurp(err),
                   "ft-launch: warning: cannot ask Slurm for its view of the "
                   "job's nodes (sinfo exit 1: sinfo: error: Unable to contact "
                   "slurm controller): the hosts are probed instead\n");
  ft__words_t bad = FT__WORDS_INIT;
  fake_sinfo("exec sleep 30");
  uint64_t t0 = ft__proc_now_ms();
  ck_assert_int_eq(ft__probe_slurm_down(&p, hosts, 3, &bad, NULL), FT_EIO);
  ck_assert_uint_lt(ft__proc_now_ms() - t0, 20000);
  ck_assert_int_eq(bad.n, 0);
  ft__words_free(&bad);
}
END_TEST

/* ---- bounded commands ---- */

/* A command's output is read until its bounded process ends, not until
 * every process it left behind lets go of the pipe. */
START_TEST(command_bounded_left_behind) {
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  char *bg[] = {"/bin/sh", "-c", "sleep 8 & echo x", NULL};
  char *ss[] = {"/bin/sh", "-c", "setsid sleep 8 & exec sleep 30", NULL};
  ft__text_t out = FT__TEXT_INIT;
  int st = -1;
  uint64_t t0 = ft__proc_now_ms();
  ck_assert_int_eq(ft__command_bounded(bg, envp, 0, 1.0, &out, &st), FT_OK);
  ck_assert_int_eq(st, 0);
  ck_assert_str_eq(ft__text_str(&out), "x\n");
  ck_assert_int_eq(ft__command_bounded(ss, envp, 0, 1.0, &out, &st), FT_OK);
  ck_assert_int_eq(st, 124);
  /* both bounded by their 1 s (and 2 s more for a KILL), not the 8 s of
   * what they left */
  ck_assert_uint_lt(ft__proc_now_ms() - t0, 7000);
  ft__text_free(&out);
}
END_TEST

/* The read end of a command started earlier is not in a later one's
 * descriptors (the numbers a child inherits are the parent's). */
START_TEST(command_no_fd_leak) {
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  char *slow[] = {"/bin/sh", "-c", "sleep 1", NULL};
  ft__command_t a = FT__COMMAND_INIT, b = FT__COMMAND_INIT;
  ck_assert_int_eq(ft__command_start(slow, envp, 0, 5, &a), FT_OK);
  char code[64];
  snprintf(code, sizeof(code), "[ -e /proc/$$/fd/%d ] && echo open || echo closed",
           a.fd);
  char *probe[] = {"/bin/sh", "-c", code, NULL};
  ck_assert_int_eq(ft__command_start(probe, envp, 0, 5, &b), FT_OK);
  ft__text_t out = FT__TEXT_INIT;
  int st;
  ck_assert_int_eq(ft__command_finish(&b, &out, &st), FT_OK);
  ck_assert_int_eq(st, 0);
  ck_assert_str_eq(ft__text_str(&out), "closed\n");
  ft__text_clear(&out);
  ck_assert_int_eq(ft__command_finish(&a, &out, &st), FT_OK);
  ck_assert_int_eq(st, 0);
  ft__text_free(&out);
}
END_TEST

/* ---- the messages ---- */

START_TEST(probe_words) {
  static const char *const ssh[] = {"ssh", "-o", "BatchMode=yes"};
  ft__probe_t p = {.words = ssh, .nwords = 3, .tries = 3};
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__probe_words(&p, 0, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t),
                   "'ssh -o BatchMode=yes HOST true' failed 3 times");
  ft__text_clear(&t);
  ck_assert_int_eq(ft__probe_words(&p, 1, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t),
                   "'ssh -o BatchMode=yes HOST true' failed once");
  ft__text_clear(&t);
  p.tries = 1;
  ck_assert_int_eq(ft__probe_words(&p, 0, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t),
                   "'ssh -o BatchMode=yes HOST true' failed once");
  ft__text_clear(&t);
  p.cluster = "c1";
  ck_assert_int_eq(ft__probe_words(&p, 0, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t), "ping from the head");
  ft__text_free(&t);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "probe");
  TCase *tc = tmpdir_tcase(s, "probe", 60);
  tcase_add_test(tc, lost_in_order);
  tcase_add_test(tc, retries);
  tcase_add_test(tc, hanging_probe_ended);
  tcase_add_test(tc, probes_stopped);
  tcase_add_test(tc, this_host_not_asked);
  tcase_add_test(tc, probe_not_started);
  tcase_add_test(tc, slurm_view_first);
  tcase_add_test(tc, slurm_view_failing);
  tcase_add_test(tc, command_bounded_left_behind);
  tcase_add_test(tc, command_no_fd_leak);
  tc = tmpdir_tcase(s, "cluster", 60);
  tcase_add_test(tc, cluster_ping);
  tc = tcase_create("messages");
  tcase_add_test(tc, probe_words);
  tcase_add_test(tc, slurm_states);
  tcase_add_test(tc, slurm_parse);
  suite_add_tcase(s, tc);
  return s;
}
