/*
 * What a launch leaves behind: the processes mpirun started (its daemons,
 * the ranks) carry FTRT_LAUNCH_ID in their environment; once mpirun is gone
 * none should remain, and after a killed mpirun some do (a daemon detaches,
 * and on a partitioned host it would spin).  They are found in
 * /proc/PID/environ and killed (SIGKILL), up to three rounds, each
 * waiting up to 0.2 s (looking every 10 ms) for them to be gone;
 * the first round that finds any says "ft-launch: killing N leftover
 * processes of the job" (N without the sruns of Slurm's daemon step, which
 * outlive mpirun a moment on every run in an allocation).
 */
#ifndef FT_LAUNCH_LEFTOVERS_H
#define FT_LAUNCH_LEFTOVERS_H

#include <sys/types.h>

/* Kill the processes whose environment holds FTRT_LAUNCH_ID=id (never
 * this process).  Returns how many the first round found. */
int ft__leftovers_kill(const char *id);

#endif
