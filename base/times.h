/*
 * Recovery timing: the points a relaunched job and ft-restore pass, told to
 * ft-launch so that it can say where the downtime of a recovery went (issue
 * 18; docs/performance.md, downtime_vs_floor).  Times are wall-clock
 * (CLOCK_REALTIME) milliseconds, so that ft-launch can set them beside its
 * own; across hosts they are as close as the hosts' clocks.
 */
#ifndef FT_BASE_TIMES_H
#define FT_BASE_TIMES_H

#include <stdint.h>

typedef struct ft__times {
  int64_t mpi_ms;      /* MPI initialized */
  int64_t init_ms;     /* ft_init returned */
  int64_t restored_ms; /* ft_restore returned the state */
  int step_said;       /* the first step after it was told */
} ft__times_t;

/* Now, in wall-clock milliseconds. */
int64_t ft__times_now_ms(void);

/* Under ft-launch (FTRT_LAUNCH_ID set, not empty): one line on stderr,
 * written at once, that ft-launch reads and hides:
 *   ftrt-times: <FTRT_LAUNCH_ID> WHAT KEY=VALUE ...
 * with fmt giving the KEY=VALUE part.  Nothing otherwise: a program not
 * run by ft-launch never sees such a line. */
void ft__times_say(const char *what, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
