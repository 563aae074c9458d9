/* The survey of ft-restore (recovery/survey.c). */
#ifndef FT_RECOVERY_SURVEY_H
#define FT_RECOVERY_SURVEY_H

#include "recovery/restore.h"

/* Collective: read, allgather, agree on layout, version and chunk health. */
int ft__survey(ft__restore_t *r);

/* The survey's decisions from summaries already gathered (r->all[r->size],
 * r->rank, r->job, r->host): runs, stale stores, the layout, the nodes'
 * places, the version and the damaged copies, in the order ft__survey takes
 * them, without MPI and without reading a store (no host table is shared and
 * no chunk CRC checked: r->hosts stays empty, r->bad zero).  For tests of
 * the plan at scale. */
int ft__survey_plan(ft__restore_t *r);

#endif
