/* The rebuild step of ft-restore (recovery/rebuild.c, its steps in
 * prepare.c, chain.c and finish.c). */
#ifndef FT_RECOVERY_REBUILD_H
#define FT_RECOVERY_REBUILD_H

#include "recovery/restore.h"

/* Collective: plan, check that it is recoverable, then (unless dry-run)
 * prepare spares, rebuild every erased chunk, seal and write a new epoch. */
int ft__rebuild(ft__restore_t *r);

/* The plan alone, from the survey (no MPI, nothing written): each lost
 * node's helper (helper_of[nnodes], -1: none) and r->adopt, r->nlost,
 * r->ncorrupt; FT_ETOOMANY when a stripe has more than m erasures, FT_EINVAL
 * when replace mode lacks spares, with r->msg.  Needs r->adopt
 * ([nnodes]). */
int ft__rebuild_plan(ft__restore_t *r, int *helper_of);

#endif
