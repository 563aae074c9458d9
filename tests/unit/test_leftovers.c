/*
 * The leftovers of a launch (launch/leftovers.h): processes of ours with
 * FTRT_LAUNCH_ID in their environment.  The one whose entry is exactly
 * FTRT_LAUNCH_ID=ID is killed and said; one of another ID, or whose entry
 * only holds the text, is left alone; a process that holds the entry
 * itself and asks (this program again, run with "--kill-leftovers ID")
 * kills the others, never itself.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/leftovers.h"
#include "tests/unit/check_main.h"
#include "tests/unit/procs.h"
#include "tests/unit/tmpdir.h"

static char id[64], entry[96];

static pid_t sleeper(const char *env_entry) {
  char *const argv[] = {"/bin/sleep", "60", NULL};
  char *const envp[] = {"PATH=/usr/bin:/bin", (char *)env_entry, NULL};
  return procs_spawn(argv, envp);
}

static void ids(void) {
  snprintf(id, sizeof(id), "test-%ld", (long)getpid());
  snprintf(entry, sizeof(entry), "FTRT_LAUNCH_ID=%s", id);
}

static void killed(pid_t pid) {
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void left_alone(pid_t pid) {
  int st;
  ck_assert_int_eq(waitpid(pid, &st, WNOHANG), 0);
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
}

START_TEST(kills_the_job_s) {
  char err[256], other[128], inside[128];
  ids();
  path_of(err, sizeof(err), "err");
  snprintf(other, sizeof(other), "%sx", entry);
  snprintf(inside, sizeof(inside), "X=%s", entry);
  pid_t a = sleeper(entry), b = sleeper(entry), c = sleeper(other),
        d = sleeper(inside);
  procs_err_to(err);
  int n = ft__leftovers_kill(id);
  procs_err_back();
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(procs_slurp(err),
                   "ft-launch: killing 2 leftover processes of the job\n");
  killed(a);
  killed(b);
  left_alone(c);
  left_alone(d);
  procs_err_to(err);
  ck_assert_int_eq(ft__leftovers_kill(id), 0);
  procs_err_back();
  ck_assert_str_eq(procs_slurp(err), "");
}
END_TEST

/* A process whose name is srun (Slurm's step launcher, which outlives
 * mpirun a moment on every run) is killed, but not said. */
START_TEST(srun_not_said) {
  char err[256], srun[256];
  ids();
  path_of(err, sizeof(err), "err");
  path_of(srun, sizeof(srun), "srun");
  char *const cp[] = {"/bin/cp", "/bin/sleep", srun, NULL};
  char *const cpenv[] = {"PATH=/usr/bin:/bin", NULL};
  int st;
  pid_t c = procs_spawn(cp, cpenv);
  ck_assert_int_eq(waitpid(c, &st, 0), c);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char *const argv[] = {srun, "60", NULL};
  char *const envp[] = {"PATH=/usr/bin:/bin", entry, NULL};
  pid_t a = procs_spawn(argv, envp);
  procs_err_to(err);
  ck_assert_int_eq(ft__leftovers_kill(id), 1);
  procs_err_back();
  ck_assert_str_eq(procs_slurp(err), "");
  killed(a);
  pid_t b = procs_spawn(argv, envp), d = sleeper(entry);
  procs_err_to(err);
  ck_assert_int_eq(ft__leftovers_kill(id), 2);
  procs_err_back();
  ck_assert_str_eq(procs_slurp(err),
                   "ft-launch: killing 1 leftover processes of the job\n");
  killed(b);
  killed(d);
}
END_TEST

/* The process that asks holds the entry too: only the other dies. */
START_TEST(never_itself) {
  ids();
  pid_t a = sleeper(entry);
  char *const argv[] = {"/proc/self/exe", "--kill-leftovers", id, NULL};
  char *const envp[] = {"PATH=/usr/bin:/bin", entry, NULL};
  pid_t self = procs_spawn(argv, envp);
  int st;
  ck_assert_int_eq(waitpid(self, &st, 0), self);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1,
                "the asking process found other than 1 (status %d)", st);
  killed(a);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  /* This program run by never_itself: how many the first round found is
   * the exit status. */
  if (*prog->argc == 3 && strcmp((*prog->argv)[1], "--kill-leftovers") == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0)
      dup2(fd, 2);
    prog->status = ft__leftovers_kill((*prog->argv)[2]);
    return NULL;
  }
  Suite *s = tmpdir_suite(prog, "leftovers");
  TCase *tc = tmpdir_tcase(s, "leftovers", 60);
  tcase_add_test(tc, kills_the_job_s);
  tcase_add_test(tc, never_itself);
  tcase_add_test(tc, srun_not_said);
  return s;
}
