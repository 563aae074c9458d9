/*
 * The restore rule (docs/design.md section 7): which version the slots of
 * a job's nodes hold whole, and the newest one that every counted node
 * holds (ft__newest_common, the SMPs at start-up) or that counts as
 * committed (ft__newest_committed, ft-restore).  Pure functions of what
 * the slots say: version numbers and states, read by the caller.
 */
#ifndef FT_SNAPSHOT_NEWEST_H
#define FT_SNAPSHOT_NEWEST_H

#include <stdint.h>

#include "snapshot/format.h"
#include "snapshot/slotfile.h"

/* The version one slot holds whole, as the restore rule counts it: the
 * slot opened and validated (open != 0) and its state ENCODED or COMMITTED --
 * every local trainer wrote it, its CRCs are sealed and this node's parity
 * is written, so it counts for the restore rule whether or not the commit
 * notice came.  0 for a slot that holds none: not open, EMPTY, FILLING or
 * LOCAL, or version 0.  Pure: the caller reads state (ft__slot_state) and
 * version from the header, or from a survey of them; neither is looked at
 * when open is 0. */
uint64_t ft__slot_held(int open, uint32_t state, uint64_t version);
/* held[i] = ft__slot_held of sl[i], a slot being open when it is mapped
 * (map != NULL; ft__slot_open leaves a slot it refuses unmapped): this
 * node's row of ft__newest_common's held. */
void ft__slots_held(const ft__slot_t sl[FT_NSLOTS], uint64_t held[FT_NSLOTS]);

/* The restore rule of docs/design.md section 7: the newest version that every
 * counted node holds whole (at least ENCODED: all nodes encoded it, so it
 * is committed even if the commit notice was lost).  held[node * FT_NSLOTS
 * + i]: the versions node holds whole (ft__slot_held), 0 for none, in any
 * slot order; ignore (NULL or one flag per node) leaves nodes out, such as
 * spares.  0 when there is none, when nnodes is 0 or every node is left
 * out.  Only version numbers are compared (not epochs or steps). */
uint64_t ft__newest_common(const uint64_t *held, int nnodes,
                           const unsigned char *ignore);

/* What ft-restore saw of one slot of a node, for ft__newest_committed. */
typedef struct ft__slot_seen {
  uint64_t held;     /* ft__slot_held: the version it holds whole, 0 none */
  uint8_t committed; /* and its state is COMMITTED */
  uint8_t unusable;  /* missing, or failed validation: it may have held
                      * anything, a committed version included */
} ft__slot_seen_t;

/*
 * ft-restore's rule (docs/design.md section 7): the newest version that
 * counts as committed.  seen[node * FT_NSLOTS + i] is slot i of node;
 * ignore (NULL, or one flag per node) leaves nodes out, such as spares.  A
 * version v that some counted node holds whole counts when
 *   - some counted node holds it COMMITTED (the commit needed every node to
 *     have encoded it), or
 *   - every counted node holds it whole or has its slot v % FT_NSLOTS
 *     unusable (what that slot held is unknown; a readable slot that does
 *     not hold v says v was never encoded there, so never committed).
 * 0 when no version counts.  A node that counts and lacks the version
 * returned has lost or damaged its copy: ft-restore rebuilds it, or
 * refuses -- it never skips to an older version, which could throw a
 * committed one away.
 */
uint64_t ft__newest_committed(const ft__slot_seen_t *seen, int nnodes,
                              const unsigned char *ignore);

#endif
