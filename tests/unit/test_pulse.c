/* Heartbeats (base/pulse.h): the watch thread, over MPI_COMM_SELF of a
 * singleton MPI process.  Stopping it must not wait out its poll: with
 * FT_TIMEOUT 60 it polls a quarter of a 5 s period, and every ft_init and
 * ft-restore stops one: waiting out the poll would cost a recovery up to
 * 1.25 s, twice. */
#include <check.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "base/pulse.h"
#include "ftrt.h"
#include "tests/unit/check_main.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void never_silent(void *arg, const ft__pulse_t *p, int rank) {
  (void)arg, (void)p, (void)rank;
  ck_abort_msg("a process alone cannot fall silent");
}

/* Once the thread has sent its first round it sits in poll for 1.25 s;
 * ten stops then took 12.5 s or more.  4 s bounds a hang on a loaded
 * machine: a woken thread ends in microseconds. */
START_TEST(unwatch_wakes_the_thread) {
  enum { ROUNDS = 10 };
  double spent = 0;
  for (int i = 0; i < ROUNDS; i++) {
    ft__pulse_t p;
    ck_assert_int_eq(ft__pulse_init(&p, MPI_COMM_SELF, 60.0), FT_OK);
    ck_assert_double_eq_tol(p.period_s, 5.0, 1e-9);
    double first = p.sent;
    ck_assert_int_eq(ft__pulse_watch(&p, never_silent, NULL), FT_OK);
    double sent = first;
    while (sent == first) { /* until its first round went out */
      sched_yield();
      __atomic_load(&p.sent, &sent, __ATOMIC_ACQUIRE);
    }
    double t = now();
    ft__pulse_unwatch(&p);
    spent += now() - t;
    ck_assert_int_eq(p.watching, 0);
    ft__pulse_free(&p);
  }
  ck_assert_msg(spent < 4.0, "%d stops took %.2f s", ROUNDS, spent);
}
END_TEST

/* A pulse watched, stopped, watched again and freed while watched. */
START_TEST(watch_again_and_free) {
  ft__pulse_t p;
  ck_assert_int_eq(ft__pulse_init(&p, MPI_COMM_SELF, 1.0), FT_OK);
  ck_assert_int_eq(ft__pulse_watch(&p, never_silent, NULL), FT_OK);
  ck_assert_int_eq(ft__pulse_watch(&p, never_silent, NULL), FT_EIO);
  ft__pulse_unwatch(&p);
  ft__pulse_unwatch(&p); /* twice: nothing */
  ck_assert_int_eq(ft__pulse_watch(&p, never_silent, NULL), FT_OK);
  ft__pulse_free(&p); /* stops the thread too */
  ck_assert_int_eq(p.watching, 0);
}
END_TEST

static void finalize(void) { MPI_Finalize(); }

Suite *unit_suite(unit_prog_t *prog) {
  int provided;
  MPI_Init_thread(prog->argc, prog->argv, MPI_THREAD_FUNNELED, &provided);
  prog->fork = CK_NOFORK; /* MPI is this process's */
  prog->done = finalize;
  Suite *s = suite_create("pulse");
  TCase *tc = tcase_create("pulse");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, unwatch_wakes_the_thread);
  tcase_add_test(tc, watch_again_and_free);
  suite_add_tcase(s, tc);
  return s;
}
