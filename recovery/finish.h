/* The rebuild's end: the slots sealed, the new metadata written
 * (recovery/finish.c). */
#ifndef FT_RECOVERY_FINISH_H
#define FT_RECOVERY_FINISH_H

#include "recovery/chain.h"
#include "recovery/restore.h"

/* This rank's rebuilt slots sealed: each adopted slot, and its own where
 * it took a lost node's place (spare) or its copy was damaged, gets the
 * CRCs in made (ft__rebuild_all) and COMMITTED, or is left unsealed
 * (FT_ESTATE) where a chunk of it was not rebuilt; a survivor's repaired
 * chunks must match the CRCs they were written with.  With r->msg on
 * failure. */
int ft__seal(ft__restore_t *r, int spare, const ft__made_t *made);

/* Does slot i of rank `rank` hold nothing to keep: it failed validation,
 * is not the slot the version is restored into, and its member counts?
 * Such slots are removed once the rebuild is sealed. */
int ft__to_clear(const ft__restore_t *r, int rank, int i);

/* This rank's slots that ft__to_clear names, removed.  With r->msg on
 * failure. */
int ft__clear_damaged(ft__restore_t *r);

/* Collective: the re-slice point of a rebuild that adopted lost nodes:
 * every member writes meta.next (where its node goes in the smaller job),
 * all agree, then each renames it to meta and drops a pending layout.
 * spare_meta: the metadata of the lost node this rank took whole as a
 * spare, if any (ft__prepare_helper).  With r->msg on failure; the caller
 * agrees on the status. */
int ft__write_reslice(ft__restore_t *r, ft__meta_t *spare_meta,
                      const int *helper_of);

/* Collective: the new layout epoch (r->next_epoch) written by every
 * member, spares first, then survivors, then each group's table shared;
 * an earlier shrink's adopted stores removed.  With r->msg on failure; the
 * caller agrees on the status. */
int ft__write_epoch(ft__restore_t *r, ft__meta_t *spare_meta,
                    const int *helper_of);

#endif
