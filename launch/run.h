/*
 * The supervisor's run: the state machine (machine.h) driven to its end.
 * ft__launch_run feeds the machine its events and carries out the actions
 * it returns: it starts the launcher (the backend's command line for the
 * node set of each RUN) with its standard error through the output filter
 * (filter.h) and the watchdog beside it (watchdog.h), tears a launch down
 * (leftovers.h), asks hosts (probe.h), prepares spares once a job has
 * committed (spares.h) and keeps a recovery's stamps (account.h).  One
 * thread, one poll loop: the launcher's output, the watchdog's verdict and
 * the signals (INT, TERM, HUP, CHLD) each come in on a descriptor of their
 * own; no decision is made here that the machine does not make.
 */
#ifndef FT_LAUNCH_RUN_H
#define FT_LAUNCH_RUN_H

#include "launch/args.h"
#include "launch/backend.h"
#include "launch/env.h"
#include "launch/plan.h"

typedef struct ft__launch_ctx {
  ft__env_t *env;
  const ft__launch_args_t *args;
  const ft__launch_plan_t *plan;
  const ft__launcher_t *be;
  const char *here; /* where ft-launch is: ft-cluster, ft-restore next to it */
  const char *tmp;  /* the launch's temporary directory */
  double t0;        /* when ft-launch started (wall clock, s): say_at */
} ft__launch_ctx_t;

/* Run the job to its end; the exit status of ft-launch. */
int ft__launch_run(const ft__launch_ctx_t *ctx);

#endif
