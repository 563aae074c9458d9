/* The one main() of the unit test programs (check_main.c) and what a test
 * file gives it.  A unit test program is one test file linked with
 * check_main.c: the file defines unit_suite(), which builds the program's
 * suite and says what the program needs around it; main runs every test
 * of that suite with CK_NORMAL output ("Checks: N, Failures: F, Errors: E")
 * and exits EXIT_SUCCESS when none failed, EXIT_FAILURE otherwise.  Check's
 * own environment (CK_FORK=no, CK_RUN_CASE, CK_DEFAULT_TIMEOUT, ...) is
 * left to Check. */
#ifndef FT_TESTS_CHECK_MAIN_H
#define FT_TESTS_CHECK_MAIN_H

#include <check.h>
#include <string.h>

typedef struct unit_prog {
  /* main's arguments, for a program that hands them on (MPI_Init_thread). */
  int *argc;
  char ***argv;
  /* Set by unit_suite where the program needs them; zero: not needed. */
  /* NAME: the tests' directories live under a root /tmp/ftrt-NAME-XXXXXX
   * (tmpdir.h), made before the run and removed after it; a root that
   * cannot be made ends the program with "test_NAME: mkdtemp ..." and
   * EXIT_FAILURE before any test runs. */
  const char *tmpdir;
  /* CK_NOFORK where the tests must run in this process (it owns MPI);
   * 0 is Check's default: a process per test unless CK_FORK=no. */
  enum fork_status fork;
  /* Called after the run, before the exit (MPI_Finalize). */
  void (*done)(void);
  /* The exit status when unit_suite returns NULL (77: skipped). */
  int status;
} unit_prog_t;

/* Defined by each test file: its suite, every test in a TCase named for
 * what it tests; or NULL to end the program at once with prog->status,
 * running nothing.  prog arrives with argc and argv set, the rest zero. */
Suite *unit_suite(unit_prog_t *prog);

/* msg holds word, or the test fails naming both. */
#define ck_msg_has(msg, word)                                                  \
  ck_assert_msg(strstr((msg), (word)) != NULL, "message '%s' lacks '%s'",      \
                (msg), (word))

#endif
