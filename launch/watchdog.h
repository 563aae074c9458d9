/*
 * The watchdog beside a running mpirun: once a host of the job has not
 * answered for longer than --timeout, it names the host to the launch,
 * "HOST SILENT_MS PING_WAIT\n" on verdict_fd (PING_WAIT 1 when the
 * cluster's 3 s ping wait was the bound), and ends.  What follows is the
 * launch's machine's (machine.h's UNREACHABLE): it says "host H unreachable
 * for S s (timeout T s): ending the job" or "host H cannot run a command
 * for S s (...)" and ends mpirun (TERM, then KILL after 2 s).
 *
 * It runs as a child process of its own process group (ft__watchdog_start
 * forks it), so that ending it ends every probe and watch it started:
 *   on an ft-cluster with FT_CLUSTER_PROBE unset or "ping" (and ping
 *   installed): one "ft-cluster watch --name C HOST..." for the whole job,
 *   a line (a host's name) an answer; a host is judged only once a ping
 *   has waited 3 s for it ("timeout T s, a ping waits 3 s" then); should
 *   the watch end before mpirun, a ping every second instead;
 *   elsewhere: the probe (probe.h) every quarter of --timeout, at least
 *   1 s; every host failing at once judges none, and says so once
 *   ("watchdog: PROBE WORDS for every host at once: it cannot tell a lost
 *   host, and judges none while that lasts").
 * A host's silence is counted from the first round it failed (from the
 * watch's first line, for a watch).  Clocks: CLOCK_MONOTONIC.
 *
 * ft__watchdog_judge is the decision alone, for the unit tests.
 */
#ifndef FT_LAUNCH_WATCHDOG_H
#define FT_LAUNCH_WATCHDOG_H

#include <stdint.h>
#include <sys/types.h>

#include "launch/probe.h"

typedef struct ft__watchdog {
  pid_t mpirun;              /* the mpirun it watches and ends */
  const char *const *hosts;  /* the job's hosts */
  int nhosts;
  const ft__probe_t *probe;  /* cluster or probe, timeout */
  int verdict_fd;            /* the verdict is written here */
} ft__watchdog_t;

/* Fork the watchdog: *pid its pid (and process group), or FT_EIO. */
int ft__watchdog_start(const ft__watchdog_t *w, pid_t *pid);
/* End it and every process of its group; wait for it. */
void ft__watchdog_stop(pid_t pid);

/* end_mpirun: TERM, then KILL after 2 s (mpirun may wait on a dead orted),
 * asked every 0.1 s whether it is gone; what the verdict does, and what an
 * interrupted launch does to its mpirun.  pid: a child of the caller or
 * not (an ended child of the caller, not yet waited for, is gone). */
void ft__watchdog_end_mpirun(pid_t pid);

/* The decision: of hosts[0..n), with silent_ms[i] how long host i has not
 * answered (0: it answers), the first whose silence exceeds limit_ms, or
 * -1. */
int ft__watchdog_judge(const uint64_t *silent_ms, int n, uint64_t limit_ms);

#endif
