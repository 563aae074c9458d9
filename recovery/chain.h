/* The erased chunks rebuilt along chains of their sources
 * (recovery/chain.c). */
#ifndef FT_RECOVERY_CHAIN_H
#define FT_RECOVERY_CHAIN_H

#include "recovery/restore.h"

/* The CRC of every chunk this rank rebuilt, as the chain that made its
 * bytes computed it: made[node] for node's adopted slot, made[r->nnodes]
 * for this rank's own. */
typedef struct ft__made {
  uint64_t crc[FT_MAX_CHUNKS];
  unsigned char got[FT_MAX_CHUNKS]; /* chunk c was rebuilt here: crc[c] */
} ft__made_t;

/* How many chunks the rebuild makes, the same on every rank: every chunk
 * that ft__chunk_bad, but an adopted node's parity (the relaunched job,
 * on fewer nodes, encodes anew). */
int ft__count_tasks(const ft__restore_t *r);

/* Collective: every such chunk rebuilt into its owner's slot (for a lost
 * node the rank helper_of[node], else the rank that holds the node), the
 * owners' slots made first (recovery/prepare.h), every rank walking the
 * same task list in the same order.  made ([r->nnodes + 1], zeroed) gets
 * the CRC of each chunk this rank received.  A failure of this rank's
 * part in one chunk stops nothing: it still takes its part in every later
 * chunk's chain, and returns the first such status (with r->msg); only
 * MPI failing (FT_EMPI) stops it early, and no memory for the decode
 * (agreed before the first chunk).  The caller agrees on the status. */
int ft__rebuild_all(ft__restore_t *r, const int *helper_of, ft__made_t *made);

#endif
