/* ft-restore's driver (recovery/engine.c): the one entry of the tool. */
#ifndef FT_RECOVERY_ENGINE_H
#define FT_RECOVERY_ENGINE_H

#include "recovery/restore.h"

/* Survey, agree, plan, then restore or verify.  Collective over comm.
 * Returns FT_OK, FT_ETOOMANY (exit 3) or another error, the same on every
 * rank; r->msg holds the reason on rank 0. */
int ft__restore_run(ft__restore_t *r);

/* FT_HOLD=phase=restore (spec): a control segment in the store (made
 * first when the node has none: a spare's, under the lock a launch would
 * take) through which ft-hold sees this rank held mid-rebuild and lets it
 * go (hold.h).  Made only then, so that an unarmed restore writes nothing
 * where it rebuilds nothing.  FT_OK armed or nothing to arm; else r->ctl is
 * NULL, nothing is armed, and msg says why.  limit_s: the hold's bound
 * (FT_HOLD_LIMIT, 0 for none). */
int ft__restore_arm_hold(ft__restore_t *r, const char *spec, unsigned limit_s,
                         char *msg, size_t msglen);

/* The restore is over: a process held or waiting on r->ctl sees DONE; the
 * segment is detached when detach (the caller goes on with others). */
void ft__restore_hold_done(ft__restore_t *r, int detach);

/* Print the summary (rank 0). */
void ft__restore_report(const ft__restore_t *r, int status);

#endif
