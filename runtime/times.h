/*
 * Recovery timing: when a trainer of a relaunched job passed each point of
 * its start, so that ft-launch can say where the downtime of a recovery
 * went (issue 18).  Times are wall-clock (CLOCK_REALTIME) milliseconds, so
 * that ft-launch on another host can set them beside its own.
 */
#ifndef FT_RUNTIME_TIMES_H
#define FT_RUNTIME_TIMES_H

#include <stdint.h>

typedef struct ft__times {
  int64_t start_ms;    /* the process started (from /proc; 10 ms steps) */
  int64_t mpi_ms;      /* MPI initialized */
  int64_t init_ms;     /* ft_init returned */
  int64_t restored_ms; /* ft_restore returned the state */
  int said;            /* the line was printed */
} ft__times_t;

/* Now, in wall-clock milliseconds. */
int64_t ft__times_now_ms(void);

/* Fills start_ms and mpi_ms (called once MPI is up). */
void ft__times_begin(ft__times_t *t);

/* At the first step after a restore: when the process was launched by
 * ft-launch (FTRT_LAUNCH_ID set) and is rank 0 of the trainers, prints
 * once, on stderr, the line ft-launch reads and hides:
 *   ftrt-times: job start_ms=S mpi_ms=M init_ms=I restored_ms=R step_ms=N
 * Nothing when no restore happened in this process. */
void ft__times_first_step(ft__times_t *t, int app_rank);

#endif
