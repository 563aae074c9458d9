/*
 * The spares' preparation (launch/spares.h) with real processes.  The
 * probe's words make ompi4's host command run the line here: "sh -c
 * 'export FT_TEST_HOST=$0; eval \"$1\"' HOST LINE"; ft-spare is a script
 * of the test's directory that writes its host and arguments into a file
 * and ends as its host's name says: ok* prepared, full* no room (4), bad*
 * not prepared (3), gone* unreachable (255), odd* another code, hang* waits
 * for the end of its input (ignoring TERM, as ft-spare over ssh sees only
 * its input end).  The hosts prepared are listed, a failure is said and
 * undone, a hanging preparation is ended by clear and everything prepared
 * is removed; a launch that is closing prepares nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/spares.h"
#include "tests/unit/check_main.h"
#include "tests/unit/procs.h"
#include "tests/unit/tmpdir.h"

static char *const ENVP[] = {"PATH=/usr/bin:/bin", NULL};
static const char *const WORDS[] = {"/bin/sh", "-c",
                                    "export FT_TEST_HOST=\"$0\"; eval \"$1\""};

static char spare[256], calls[256], err_file[256], prepared[256];
static ft__launch_job_t job;
static ft__probe_t probe;

static ft__spares_t spares_of(const char *store) {
  char body[2048];
  path_of(calls, sizeof(calls), "calls");
  path_of(err_file, sizeof(err_file), "err");
  path_of(prepared, sizeof(prepared), "prepared");
  snprintf(body, sizeof(body),
           "log=%s h=$FT_TEST_HOST\n"
           "line=$h; for a; do line=\"$line [$a]\"; done\n"
           "echo \"$line\" >>$log\n" /* one write: the hosts run at once */
           "case \" $* \" in *' remove '*) exit 0;; esac\n"
           "IFS= read -r first && echo \"$h first [$first]\" >>$log\n"
           "case $h in\n"
           "ok*) exit 0;;\n"
           "full*) echo 'ft-spare: only 1 MiB free' >&2; exit 4;;\n"
           "bad*) echo 'ft-spare: cannot write'; exit 3;;\n"
           "gone*) exit 255;;\n"
           "odd*) exit 7;;\n"
           "hang*) trap '' TERM; cat >/dev/null; echo \"$h eof\" >>$log;;\n"
           "esac",
           calls);
  procs_script(spare, sizeof(spare), "ft-spare", body);
  memset(&job, 0, sizeof(job));
  job.job = "j1";
  job.timeout = "10";
  probe = (ft__probe_t){.words = WORDS,
                        .nwords = 3,
                        .tries = 1,
                        .timeout_s = 10,
                        .timeout = "10",
                        .be = &ft__launcher_ompi4,
                        .envp = ENVP};
  ft__spares_t s = {.dir = dir,
                    .job = "j1",
                    .store = store,
                    .ft_spare = spare,
                    .launch = &job,
                    .probe = &probe};
  return s;
}

/* The line of calls for host's ft-spare with those arguments. */
static int called(const char *host, const char *args) {
  char line[512];
  snprintf(line, sizeof(line), "%s %s", host, args);
  return procs_count(calls, line);
}

static pid_t the_group(const ft__spares_t *s, int i) {
  ck_assert_int_gt(s->groups.n, i);
  return (pid_t)atol(s->groups.v[i]);
}

#define PREP "[--job] [j1] [--store] [/st ore] [--until-eof] [prepare] [4096]"
#define REMOVE "[--job] [j1] [--store] [/st ore] [remove]"

/* Each outcome of ft-spare: listed, said as the bash said it, undone
 * unless prepared; then clear removes on every host listed, once each. */
START_TEST(outcomes) {
  ft__spares_t s = spares_of("/st ore");
  const char *const hosts[] = {"ok1", "full1", "bad1", "gone1", "odd1"};
  procs_err_to(err_file);
  ck_assert_int_eq(ft__spares_prepare(&s, hosts, 5, 4096), FT_OK);
  procs_err_back();
  int st;
  ck_assert_int_eq(waitpid(the_group(&s, 0), &st, 0), the_group(&s, 0));
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(procs_count(prepared, hosts[i]), 1);
    ck_assert_int_eq(called(hosts[i], PREP), 1);
    ck_assert_int_eq(called(hosts[i], "first []"), 1);
    ck_assert_int_eq(called(hosts[i], REMOVE), i == 0 ? 0 : 1);
  }
  const char *err = procs_slurp(err_file);
  ck_msg_has(err, "ft-launch: warning: spare full1 has no room: only 1 MiB "
                  "free\n");
  ck_msg_has(err, "ft-launch: warning: spare bad1 not prepared: cannot "
                  "write\n");
  ck_msg_has(err, "ft-launch: warning: spare odd1 cannot be prepared "
                  "(ft-spare exit 7): no message\n");
  ck_assert_ptr_null(strstr(err, "ok1"));
  ck_assert_ptr_null(strstr(err, "gone1"));
  ft__spares_clear(&s);
  ck_assert_int_eq(s.groups.n, 0);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(called(hosts[i], REMOVE), i == 0 ? 1 : 2);
  char closing[256];
  struct stat sb;
  path_of(closing, sizeof(closing), "closing");
  ck_assert_int_eq(stat(closing, &sb), 0);
}
END_TEST

/* A preparation that waits on its input: clear ends its group, its input
 * ends, it stops; then both hosts are removed. */
START_TEST(clear_ends_a_hang) {
  ft__spares_t s = spares_of(NULL);
  const char *const hosts[] = {"hang1", "ok2"};
  ck_assert_int_eq(ft__spares_prepare(&s, hosts, 2, 1), FT_OK);
  procs_wait_count(calls, "hang1 first []", 1);
  procs_wait_count(calls, "ok2 first []", 1);
  ft__spares_clear(&s);
  ck_assert_int_eq(called("hang1", "eof"), 1);
  ck_assert_int_eq(called("hang1", "[--job] [j1] [--until-eof] [prepare] [1]"),
                   1);
  ck_assert_int_eq(called("hang1", "[--job] [j1] [remove]"), 1);
  ck_assert_int_eq(called("ok2", "[--job] [j1] [remove]"), 1);
  ck_assert_int_eq(s.groups.n, 0);
}
END_TEST

/* A launch that is closing starts no preparation; clear with nothing
 * prepared removes nothing. */
START_TEST(closing_prepares_nothing) {
  ft__spares_t s = spares_of(NULL);
  char closing[256];
  path_of(closing, sizeof(closing), "closing");
  FILE *f = fopen(closing, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  const char *const hosts[] = {"ok1"};
  ck_assert_int_eq(ft__spares_prepare(&s, hosts, 1, 1), FT_OK);
  int st;
  ck_assert_int_eq(waitpid(the_group(&s, 0), &st, 0), the_group(&s, 0));
  ck_assert_str_eq(procs_slurp(prepared), "");
  ft__spares_clear(&s);
  ck_assert_str_eq(procs_slurp(calls), "");
  ck_assert_int_eq(ft__spares_prepare(&s, hosts, 0, 1), FT_OK);
  ck_assert_int_eq(s.groups.n, 0);
}
END_TEST

/* A host command that cannot be started: exit 127 and bash's words. */
START_TEST(host_cmd_not_found) {
  ft__spares_t s = spares_of(NULL);
  static const char *const agent[] = {"no-such-agent"};
  probe.words = agent;
  probe.nwords = 1;
  const char *const hosts[] = {"x1"};
  procs_err_to(err_file);
  ck_assert_int_eq(ft__spares_prepare(&s, hosts, 1, 1), FT_OK);
  procs_err_back();
  int st;
  ck_assert_int_eq(waitpid(the_group(&s, 0), &st, 0), the_group(&s, 0));
  ck_assert_str_eq(procs_slurp(err_file),
                   "ft-launch: warning: spare x1 cannot be prepared (ft-spare "
                   "exit 127): ft-launch: no-such-agent: command not found\n");
  ck_assert_str_eq(procs_slurp(prepared), "x1\n");
  ft__spares_clear(&s);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "spares");
  TCase *tc = tmpdir_tcase(s, "spares", 60);
  tcase_add_test(tc, outcomes);
  tcase_add_test(tc, clear_ends_a_hang);
  tcase_add_test(tc, closing_prepares_nothing);
  tcase_add_test(tc, host_cmd_not_found);
  return s;
}
