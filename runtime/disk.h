/* Restore from the disk tier (runtime/disk.c). */
#ifndef FT_RUNTIME_DISK_H
#define FT_RUNTIME_DISK_H

#include "runtime/ctx.h"

/* Collective over app_comm: fill every registered buffer from the
 * persisted version the SMPs chose (ctl->restore_vdir under
 * FT_PERSIST_DIR/<job>), re-sliced for this job's ranks.  *step: the step
 * it holds.  No buffer is changed unless every rank read all of its bytes;
 * every rank returns the same status. */
int ft__disk_restore(ft_ctx_t *c, uint64_t *step);

#endif
