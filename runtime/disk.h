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

/* Every registered buffer of this rank filled from its place in region (a
 * rank region as the slot lays it out: buffer i at regs[i].offset), device
 * buffers through CUDA.  FT_OK, or the CUDA copy's status, said in the log.
 * Both restore paths use it: from memory (trainer.c) and from disk. */
int ft__regs_copy_in(ft_ctx_t *c, const uint8_t *region);

#endif
