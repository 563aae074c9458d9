/* The slots that receive the rebuilt chunks (recovery/prepare.c). */
#ifndef FT_RECOVERY_PREPARE_H
#define FT_RECOVERY_PREPARE_H

#include "recovery/restore.h"

/* Called by every rank, in node order, for each lost node that has a
 * helper (the rank that takes its data, helper >= 0): the first surviving
 * member of the node's group hands the helper its group table, and the
 * helper decodes the node's metadata from it into *meta and makes the slot
 * that receives the node's chunks (a spare: its store, locked, the group
 * table and both slots; an adopting survivor: a data-only slot in
 * adopt<N>/, and the node's metadata there).  Any other rank returns FT_OK
 * at once.  With r->msg on failure (r->full on FT_ENOSPC; empty on a
 * helper whose survivor failed to hand the table, whose message stands);
 * the caller agrees on the status (ft__ragree) after each node. */
int ft__prepare_helper(ft__restore_t *r, int node, int helper,
                       ft__meta_t *meta);

/* Before any damaged copy is made anew: this rank's whole copy of the
 * version, if it is still ENCODED, becomes COMMITTED.  Returns FT_OK. */
int ft__promote(ft__restore_t *r);

/* On a rank whose copy of the version is damaged (r->damaged[r->rank]):
 * its slot for the version made anew in place, in the group's code and
 * chunk size and its own metadata's rank sizes, stamped as the survivors'
 * copies are, and r->my_slot set to it.  With r->msg on failure (r->full
 * on FT_ENOSPC). */
int ft__reshape_damaged(ft__restore_t *r);

#endif
