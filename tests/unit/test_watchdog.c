/*
 * The watchdog (launch/watchdog.h): its decision alone, then the process
 * with a fake mpirun (a sleep of ours) and real probes: a host that fails
 * the probe is named on the verdict descriptor with how long it was
 * silent (the launch's machine says it and ends mpirun: the watchdog
 * leaves both alone); every host failing at once judges none and says so
 * once; a lone host failing is judged; stopping the watchdog ends its
 * hanging probe.  On a cluster, a fake ft-cluster: its watch's lines
 * (3 s at least before a verdict), the pings every second once the watch
 * has ended, and the pings alone with FT_CLUSTER_PROBE=tcp or no ping
 * installed.  No test waits for a time: each waits for what the processes
 * write, Check's timeout bounding a hang.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/watchdog.h"
#include "tests/unit/check_main.h"
#include "tests/unit/procs.h"
#include "tests/unit/tmpdir.h"

/* ---- the decision ---- */

START_TEST(judge_cases) {
  const uint64_t none[] = {0, 0, 0};
  ck_assert_int_eq(ft__watchdog_judge(none, 3, 1000), -1);
  ck_assert_int_eq(ft__watchdog_judge(none, 0, 1000), -1);
  const uint64_t at_limit[] = {1000};
  ck_assert_int_eq(ft__watchdog_judge(at_limit, 1, 1000), -1);
  const uint64_t past[] = {1001};
  ck_assert_int_eq(ft__watchdog_judge(past, 1, 1000), 0);
  const uint64_t several[] = {5, 2000, 3000};
  ck_assert_int_eq(ft__watchdog_judge(several, 3, 1000), 1);
  ck_assert_int_eq(ft__watchdog_judge(several, 3, 2500), 2);
  ck_assert_int_eq(ft__watchdog_judge(several, 3, 3000), -1);
  const uint64_t zero_limit[] = {0, 1};
  ck_assert_int_eq(ft__watchdog_judge(zero_limit, 2, 0), 1);
}
END_TEST

/* ---- the process ---- */

static char *const ENVP[] = {"PATH=/usr/bin:/bin", NULL};
static char code[1024], tries_file[256], err_file[256];

/* A probe: up* answer, slow* hang (pid in pid.HOST), others fail; each
 * try a line of the tries file. */
static ft__probe_t probe_of(const char *timeout) {
  path_of(tries_file, sizeof(tries_file), "tries");
  path_of(err_file, sizeof(err_file), "err");
  snprintf(code, sizeof(code),
           "d=%s; echo \"$0\" >>$d/tries; case $0 in up*) exit 0;; "
           "slow*) echo $$ >$d/pid.$0; exec sleep 60;; esac; exit 1",
           dir);
  return procs_probe(code, 1, timeout);
}

static pid_t fake_mpirun(void) {
  char *const argv[] = {"/bin/sleep", "60", NULL};
  return procs_spawn(argv, ENVP);
}

typedef struct run {
  pid_t mpirun, wd;
  int verdict; /* its read end */
} run_t;

static run_t start(const ft__probe_t *p, const char *const *hosts, int n) {
  run_t r;
  int fds[2];
  ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0); /* none for the sleep */
  r.mpirun = fake_mpirun();
  ft__watchdog_t w = {.mpirun = r.mpirun,
                      .hosts = hosts,
                      .nhosts = n,
                      .probe = p,
                      .verdict_fd = fds[1]};
  procs_err_to(err_file);
  ck_assert_int_eq(ft__watchdog_start(&w, &r.wd), FT_OK);
  procs_err_back();
  close(fds[1]);
  r.verdict = fds[0];
  return r;
}

/* All the verdict descriptor holds once the watchdog has closed it. */
static const char *verdict_of(run_t *r) {
  static char buf[256];
  size_t got = 0;
  ssize_t n;
  while (got < sizeof(buf) - 1 &&
         (n = read(r->verdict, buf + got, sizeof(buf) - 1 - got)) > 0)
    got += (size_t)n;
  buf[got] = '\0';
  return buf;
}

/* The verdict came, "HOST MS PING_WAIT": silent past the timeout (1 s);
 * the watchdog ended by itself, said nothing of it, and left mpirun
 * alone (the machine ends it). */
static void judged(run_t *r, const char *host, int ping_wait) {
  char got[128];
  size_t have = 0;
  while (have == 0 || got[have - 1] != '\n') {
    ssize_t n = read(r->verdict, got + have, sizeof(got) - 1 - have);
    ck_assert_int_gt(n, 0);
    have += (size_t)n;
  }
  got[have] = '\0';
  char h[64];
  unsigned long long ms = 0;
  int pw = -1;
  ck_assert_int_eq(sscanf(got, "%63s %llu %d", h, &ms, &pw), 3);
  ck_assert_str_eq(h, host);
  ck_assert_uint_gt(ms, 1000);
  ck_assert_int_eq(pw, ping_wait);
  int st;
  ck_assert_int_eq(waitpid(r->wd, &st, 0), r->wd);
  ck_assert(WIFEXITED(st));
  ck_assert_str_eq(verdict_of(r), "");
  close(r->verdict);
  ck_assert_int_eq(kill(r->mpirun, 0), 0); /* not the watchdog's to end */
  kill(r->mpirun, SIGKILL);
  waitpid(r->mpirun, NULL, 0);
  ck_assert_ptr_null(strstr(procs_slurp(err_file), "ending the job"));
}

static const char *words_of(const ft__probe_t *p) {
  static char buf[1200];
  snprintf(buf, sizeof(buf), "%s %s %s HOST true' failed once", p->words[0],
           p->words[1], p->words[2]);
  return buf;
}

/* One host of two fails the probe: it is judged past --timeout and
 * named. */
START_TEST(probe_judges_a_host) {
  ft__probe_t p = probe_of("1");
  const char *const hosts[] = {"up1", "down1"};
  run_t r = start(&p, hosts, 2);
  judged(&r, "down1", 0);
  ck_assert_int_ge(procs_count(tries_file, "up1"), 2);
}
END_TEST

/* In a Slurm allocation (a fake sinfo that reports down1 not responding):
 * the watchdog judges on Slurm's view alone and starts no probe, not even
 * for the hosts Slurm reports fine. */
START_TEST(slurm_view_judges_without_steps) {
  char bin[256], sinfo[300], path[400];
  path_of(bin, sizeof(bin), "bin");
  ck_assert_int_eq(mkdir(bin, 0700), 0);
  snprintf(sinfo, sizeof(sinfo), "%s/sinfo", bin);
  FILE *f = fopen(sinfo, "w");
  ck_assert_ptr_nonnull(f);
  fputs("#!/bin/sh\nprintf 'up1 alloc\\ndown1 alloc*\\n'\n", f);
  fclose(f);
  ck_assert_int_eq(chmod(sinfo, 0700), 0);
  snprintf(path, sizeof(path), "PATH=%s:/usr/bin:/bin", bin);
  char *envp[] = {path, NULL};
  ft__probe_t p = probe_of("1");
  p.envp = envp;
  p.sinfo = "sinfo";
  static const char *const srun[] = {"/usr/bin/srun", "-N1"};
  p.words = srun, p.nwords = 2; /* Slurm's own probe: the view alone */
  const char *const hosts[] = {"up1", "down1"};
  run_t r = start(&p, hosts, 2);
  judged(&r, "down1", 0);
  ck_assert_int_eq(access(tries_file, F_OK), -1); /* no probe ran */
}
END_TEST

/* A lone host failing is judged: "every host at once" needs two. */
START_TEST(probe_judges_a_lone_host) {
  ft__probe_t p = probe_of("1");
  const char *const hosts[] = {"down1"};
  run_t r = start(&p, hosts, 1);
  judged(&r, "down1", 0);
  ck_assert_ptr_null(strstr(procs_slurp(err_file), "every host at once"));
}
END_TEST

/* Every host failing at once: no verdict however long it lasts, said once;
 * the watchdog ends when mpirun does. */
START_TEST(probe_every_host_at_once) {
  ft__probe_t p = probe_of("1");
  const char *const hosts[] = {"down1", "down2"};
  run_t r = start(&p, hosts, 2);
  /* A fourth round started: the third, past the timeout, was judged. */
  procs_wait_count(tries_file, "down2", 4);
  kill(r.mpirun, SIGTERM);
  int st;
  ck_assert_int_eq(waitpid(r.mpirun, &st, 0), r.mpirun);
  ck_assert_int_eq(waitpid(r.wd, &st, 0), r.wd); /* it ends by itself */
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ck_assert_str_eq(verdict_of(&r), "");
  close(r.verdict);
  char line[1400];
  snprintf(line, sizeof(line),
           "ft-launch: watchdog: '%s for every host at once: it cannot tell "
           "a lost host, and judges none while that lasts",
           words_of(&p));
  ck_assert_int_eq(procs_count(err_file, line), 1);
  ck_assert_ptr_null(strstr(procs_slurp(err_file), "ending the job"));
}
END_TEST

/* Stopping the watchdog ends the probe it waits on. */
START_TEST(stop_ends_probes) {
  ft__probe_t p = probe_of("30");
  const char *const hosts[] = {"up1", "slow1"};
  run_t r = start(&p, hosts, 2);
  char pid_file[256];
  path_of(pid_file, sizeof(pid_file), "pid.slow1");
  procs_wait_count(tries_file, "slow1", 1);
  while (!*procs_slurp(pid_file))
    usleep(10000);
  pid_t slow = (pid_t)atol(procs_slurp(pid_file));
  ft__watchdog_stop(r.wd);
  ck_assert(procs_gone(r.wd));
  while (!procs_gone(slow))
    usleep(10000);
  ck_assert_str_eq(verdict_of(&r), "");
  close(r.verdict);
  kill(r.mpirun, SIGKILL);
  waitpid(r.mpirun, NULL, 0);
}
END_TEST

/* ---- the cluster ---- */

static char calls[256], path_env[300], probe_env[64];
static char *envp_c[3];

/* ft-cluster: its watch runs watch_body; its ping lists the hosts named
 * down*; each call a line of calls ("watch ARGS", "ping ARGS").  PATH: a
 * fake ping first when with_ping, else the test's directory alone (this
 * machine may have a ping). */
static ft__probe_t cluster_of(const char *watch_body, int with_ping,
                              const char *cluster_probe) {
  char prog[256], body[2048];
  ft__probe_t p = probe_of("1");
  path_of(calls, sizeof(calls), "calls");
  snprintf(body, sizeof(body),
           "echo \"$*\" >>%s\ncase $1 in\n"
           "watch) echo $$ >%s/watch.pid; %s ;;\n"
           "ping) for h; do case $h in down*) echo $h;; esac; done ;;\n"
           "esac",
           calls, dir, watch_body);
  procs_script(prog, sizeof(prog), "ft-cluster", body);
  if (with_ping)
    procs_script(prog, sizeof(prog), "ping", "exit 0");
  snprintf(path_env, sizeof(path_env), "PATH=%s%s", dir,
           with_ping ? ":/usr/bin:/bin" : "");
  envp_c[0] = path_env;
  envp_c[1] = NULL;
  if (cluster_probe) {
    snprintf(probe_env, sizeof(probe_env), "FT_CLUSTER_PROBE=%s",
             cluster_probe);
    envp_c[1] = probe_env;
    envp_c[2] = NULL;
  }
  p.cluster = "c1";
  p.cluster_cmd = "ft-cluster";
  p.envp = envp_c;
  return p;
}

/* The watch: up1 answers, down1 never; down1 is judged once a ping has
 * waited 3 s for it; the watch is ended with the watchdog, and no ping
 * was asked. */
START_TEST(cluster_watch) {
  ft__probe_t p =
      cluster_of("while :; do echo up1; echo -; sleep 0.2; done", 1, NULL);
  const char *const hosts[] = {"up1", "down1"};
  run_t r = start(&p, hosts, 2);
  judged(&r, "down1", 1);
  ck_assert_int_eq(procs_count(calls, "watch --name c1 up1 down1"), 1);
  ck_assert_int_eq(procs_count(calls, "ping --name c1 up1 down1"), 0);
  char pid_file[256];
  path_of(pid_file, sizeof(pid_file), "watch.pid");
  pid_t watch = (pid_t)atol(procs_slurp(pid_file));
  ck_assert_int_gt(watch, 0);
  while (!procs_gone(watch))
    usleep(10000);
}
END_TEST

/* The watch ends at once: a ping every second instead, --timeout alone
 * bounding the silence. */
START_TEST(cluster_watch_ends) {
  ft__probe_t p = cluster_of("exit 1", 1, "ping");
  const char *const hosts[] = {"up1", "down1"};
  run_t r = start(&p, hosts, 2);
  judged(&r, "down1", 0);
  ck_assert_int_eq(procs_count(calls, "watch --name c1 up1 down1"), 1);
  ck_assert_int_ge(procs_count(calls, "ping --name c1 up1 down1"), 2);
}
END_TEST

/* FT_CLUSTER_PROBE=tcp, or no ping installed: pings alone, no watch. */
START_TEST(cluster_pings_alone) {
  const char *const hosts[] = {"down1", "up1"};
  for (int i = 0; i < 2; i++) {
    ft__probe_t p =
        i == 0 ? cluster_of("exit 1", 1, "tcp") : cluster_of("exit 1", 0, NULL);
    if (i == 1) {
      char ping[256];
      path_of(ping, sizeof(ping), "ping");
      unlink(ping);
      unlink(calls);
    }
    run_t r = start(&p, hosts, 2);
    judged(&r, "down1", 0);
    ck_assert_int_eq(procs_count(calls, "watch --name c1 down1 up1"), 0);
    ck_assert_int_ge(procs_count(calls, "ping --name c1 down1 up1"), 2);
  }
}
END_TEST

/* end_mpirun: a process that ignores TERM is killed; one already gone is
 * left alone. */
START_TEST(end_mpirun_kills) {
  char ready[256], line[512];
  path_of(ready, sizeof(ready), "ready");
  snprintf(line, sizeof(line), "trap '' TERM; echo ready >%s; exec sleep 60",
           ready);
  char *const argv[] = {"/bin/sh", "-c", line, NULL};
  pid_t pid = procs_spawn(argv, ENVP);
  procs_wait_count(ready, "ready", 1);
  ft__watchdog_end_mpirun(pid);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  pid = fake_mpirun();
  ft__watchdog_end_mpirun(pid);
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  ft__watchdog_end_mpirun(pid);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "watchdog");
  TCase *tc = tcase_create("judge");
  tcase_add_test(tc, judge_cases);
  suite_add_tcase(s, tc);
  tc = tmpdir_tcase(s, "probe", 60);
  tcase_add_test(tc, probe_judges_a_host);
  tcase_add_test(tc, probe_judges_a_lone_host);
  tcase_add_test(tc, slurm_view_judges_without_steps);
  tcase_add_test(tc, probe_every_host_at_once);
  tcase_add_test(tc, stop_ends_probes);
  tcase_add_test(tc, end_mpirun_kills);
  tc = tmpdir_tcase(s, "cluster", 60);
  tcase_add_test(tc, cluster_watch);
  tcase_add_test(tc, cluster_watch_ends);
  tcase_add_test(tc, cluster_pings_alone);
  return s;
}
