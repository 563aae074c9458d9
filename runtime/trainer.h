/*
 * The trainer side of a node (runtime/trainer.c): registration, snapshots
 * into the SMP's slots, restore.  ft_init calls attach once the SMP has
 * created the control segment; the public ft_* calls do the rest.
 */
#ifndef FT_RUNTIME_TRAINER_H
#define FT_RUNTIME_TRAINER_H

#include "runtime/ctx.h"

/* Attach to the node's control segment and publish this trainer.  launch:
 * the stamp of the SMP's segment (its broadcast): a segment with another,
 * left by an earlier launch where this process sees a store the SMP does
 * not, is refused (FT_ECONFIG).  FT_OK or the error; on failure c holds
 * nothing to release. */
int ft__trainer_attach(ft_ctx_t *c, uint64_t launch);
/* Unmap slots and pinned memory, detach the control segment. */
void ft__trainer_release(ft_ctx_t *c);

#endif
