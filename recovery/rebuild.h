/* The rebuild step of ft-restore (recovery/rebuild.c). */
#ifndef FT_RECOVERY_REBUILD_H
#define FT_RECOVERY_REBUILD_H

#include "recovery/restore.h"

/* Collective: plan, check that it is recoverable, then (unless dry-run)
 * prepare spares, rebuild every erased chunk, seal and write a new epoch. */
int ft__rebuild(ft__restore_t *r);

#endif
