/*
 * The slot format: what a slot file's header page says and how a reader
 * decides whether to believe it.  The geometry (where every local rank's
 * region, the k data chunks and this node's m parity chunks lie), the
 * header itself, its checksum, the self-checking state word, and the
 * validator that every reader runs on a header before it uses a field of
 * it.  Plain bytes in, no file: the validator is fuzzed
 * (tests/fuzz/fuzz_store.c).  The files that hold slots are
 * snapshot/slotfile.h.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_SLOT_H
#define FT_SNAPSHOT_SLOT_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/format.h"

/*
 * The slot state machine.  A slot's state is its header's state word
 * (ft__slot_state_word).  Its writers are the SMP of the node and
 * ft-restore; its readers the SMP at start-up, ft-restore's survey, the
 * re-slice (runtime/reslice.c) and ft-status.
 */
typedef enum {
  FT_SLOT_EMPTY = 0,
  FT_SLOT_FILLING = 1,  /* trainers are copying into it */
  FT_SLOT_LOCAL = 2,    /* every local trainer wrote, data CRCs done */
  FT_SLOT_ENCODED = 3,  /* this node's parity written */
  FT_SLOT_COMMITTED = 4 /* every SMP of the job encoded this version */
} ft__slot_state_t;

/*
 * Invariants.  In every state:
 *
 *   (1) The state word is ft__slot_state_word of the state.  Only
 *       ft__slot_set_state changes it, by one atomic release store, and
 *       ft__slot_state reads it with an acquire load: every field that a
 *       state promises below was written before the store that published
 *       the state.
 *   (2) Every other header field is written by one writer at a time (the
 *       SMP, or ft-restore), and hdr_crc is recomputed after each change of
 *       a covered field -- only when the header was intact before it
 *       (ft__slot_intact), so a header damaged in memory stays refused.
 *
 * And in each:
 *
 *   EMPTY     (3) The slot holds no version (ft__slot_held: 0), whatever
 *                 its version field says: 0 in a slot just made, the old
 *                 version's or the new one's while ft__slot_begin
 *                 rewrites it.
 *   FILLING   (4) version, step, epoch, layout and filled_ns are those of
 *                 the version being filled (the SMP's step is 0 until
 *                 ft__slot_set_step), committed_ns is 0; the local
 *                 trainers copy into their rank regions; no chunk CRC can
 *                 be trusted yet.  Holds no version.
 *   LOCAL     (5) Every local trainer wrote its region, the step is set,
 *                 and crc[0, k) are the data chunks' CRCs
 *                 (ft__slot_seal_data, or ft__slot_set_data_crcs with the
 *                 CRCs the exchange computed); this node's parity chunks
 *                 are written, their CRCs not yet.  Holds no version.
 *   ENCODED   (6) As LOCAL, and crc[k, k + m) are this node's parity
 *                 chunks' CRCs (ft__slot_seal_parity): the slot holds the
 *                 version whole (ft__slot_held), and it counts for the
 *                 restore rule whether or not the commit notice came
 *                 (snapshot/newest.h).
 *   COMMITTED (7) As ENCODED, and every SMP of the job encoded the version,
 *                 or ft-restore rebuilt it whole or found it committed by
 *                 the restore rule; committed_ns is the time of that
 *                 store.  The slot that holds the newest committed version
 *                 is not prepared again until a newer one has committed in
 *                 the other slot: version v goes to slot v % FT_NSLOTS,
 *                 prepared only once v - 1 has committed (docs/design.md
 *                 section 4).
 *
 * Transitions, and the function that performs each (who calls it):
 *
 *   any, or no file -> EMPTY
 *       ft__slot_create, ft__slot_create_paced, ft__slot_create_from
 *       (snapshot/slotfile.h): a new header for a new geometry.
 *       runtime/smp_version.c ft__smp_shape_slot, when the slot to prepare is not mapped,
 *       has another geometry or has a damaged header; recovery/prepare.c,
 *       for a spare's store, an adopted copy, the next version's slot (left
 *       EMPTY), and a damaged copy made anew.
 *   any -> EMPTY -> FILLING
 *       ft__slot_begin: EMPTY before the identity fields change, FILLING
 *       after.  runtime/smp_version.c ft__smp_prepare (version v, once v - 1 committed);
 *       recovery/prepare.c, a slot made for a rebuilt copy, stamped as the
 *       survivors' copies are.
 *   FILLING -> LOCAL
 *       ft__slot_set_state.  runtime/smp_version.c ft__smp_protect, once the encode
 *       succeeded (the data CRCs are set by then).
 *   LOCAL -> ENCODED
 *       ft__slot_set_state.  runtime/smp_version.c ft__smp_protect, after
 *       ft__slot_seal_parity.
 *   ENCODED -> COMMITTED
 *       ft__slot_set_state.  runtime/smp_version.c ft__smp_protect, once every SMP offered
 *       the version (the commit); runtime/smp_restore.c ft__smp_agree_restore, the version
 *       a launch restores; recovery/prepare.c ft__promote, a holder's copy
 *       before a damaged copy is made anew.
 *   COMMITTED -> COMMITTED
 *       ft__slot_set_state (committed_ns stamped again).
 *       runtime/smp_restore.c ft__smp_agree_restore, the version a launch restores.
 *   FILLING -> COMMITTED
 *       ft__slot_set_state.  recovery/finish.c commit_slot, a slot rebuilt
 *       whole, after ft__slot_set_crcs of all k + m chunks.
 *
 * No other transition is made: a version that fails stays FILLING or LOCAL
 * until ft__slot_begin prepares the slot again.  (The unit tests and
 * tests/fuzz/gen_seeds.c set states directly to build their cases.)
 */

const char *ft__slot_state_name(uint32_t state);

/* The header page of a slot.
 *
 * Every field that steers a read (where the data is, how it is cut into
 * chunks, which version, step and layout epoch it holds, the chunk CRCs) is
 * covered by hdr_crc, a CRC64 that ft__slot_validate checks before it looks
 * at anything else: a flipped offset or version makes the slot damaged
 * (FT_ECORRUPT), never a slot that reads the wrong bytes or claims another
 * version.  Not covered: the state word, which checks itself (below), the
 * time stamps, which steer nothing, and hdr_crc itself.
 *
 * Only `state_word` changes while others read: it is read and written with
 * atomics (acquire/release), everything else is written by the one writer
 * (the SMP, or ft-restore) before the state that publishes it, and the
 * writer recomputes hdr_crc after each change (ft__slot_begin, _set_step,
 * _set_data_crcs, _seal_data, _seal_parity).  The state is not under the
 * CRC because it changes while the slot is read: a CRC rewritten after
 * each state store would leave a window in which a reader (or a crash)
 * sees the new state with the old CRC, and a committed slot could turn
 * into a damaged one at the very moment it commits.  Instead the word
 * holds the state and its complement (ft__slot_state_word), so one atomic
 * store changes both and any flipped byte of it is caught. */
typedef struct ft__slot_hdr {
  char magic[8];       /* "FTRTSLOT" */
  uint32_t format;     /* FT_SLOT_FORMAT */
  uint32_t state_word; /* ft__slot_state_word(state); not under hdr_crc */
  char job[FT_JOB_MAX];
  uint64_t version;
  uint64_t step;
  uint64_t epoch;
  uint64_t seg_bytes;
  uint64_t data_off, data_bytes;     /* k * chunk_bytes */
  uint64_t parity_off, parity_bytes; /* m * chunk_bytes */
  uint64_t chunk_bytes;
  uint32_t k, m;
  uint32_t nlocal;
  uint32_t layout; /* the layout (ft__meta_t.layout) it was encoded under */
  uint64_t rank_off[FT_MAX_LOCAL]; /* absolute offsets in the file */
  uint64_t rank_bytes[FT_MAX_LOCAL];
  uint64_t crc[FT_MAX_CHUNKS]; /* data chunks 0..k-1, parity k..k+m-1 */
  /* not under hdr_crc from here on */
  uint64_t filled_ns, committed_ns; /* CLOCK_REALTIME */
  uint64_t hdr_crc; /* ft__slot_hdr_crc: magic through crc[], less the
                     * state word */
} ft__slot_hdr_t;

/* The state word of a state: the state in the low 16 bits, its complement
 * in the high 16.  ft__slot_state_decode gives the state back, or
 * FT_SLOT_STATE_INVALID for a word that is not one of these. */
#define FT_SLOT_STATE_INVALID UINT32_MAX
uint32_t ft__slot_state_word(uint32_t state);
uint32_t ft__slot_state_decode(uint32_t word);
/* The checksum of a header as it is now (see ft__slot_hdr_t). */
uint64_t ft__slot_hdr_crc(const ft__slot_hdr_t *h);

/* Sizes of a slot, computed from the local ranks' bytes and the group code. */
typedef struct ft__slot_geom {
  uint32_t nlocal, k, m;
  uint64_t rank_off[FT_MAX_LOCAL], rank_bytes[FT_MAX_LOCAL];
  uint64_t local_bytes; /* end of the last rank region, from data_off */
  uint64_t chunk_bytes, data_off, data_bytes, parity_off, parity_bytes;
  uint64_t seg_bytes;
} ft__slot_geom_t;

/* Rank regions of nlocal ranks, page aligned, after the header page. */
int ft__slot_geom_local(ft__slot_geom_t *g, uint32_t nlocal,
                        const uint64_t *rank_bytes);
/* Complete the geometry for a code whose chunk is chunk_bytes (>= what the
 * local data needs when cut into k chunks).  k >= 1, m >= 0. */
int ft__slot_geom_code(ft__slot_geom_t *g, uint32_t k, uint32_t m,
                       uint64_t chunk_bytes);
/* A fresh header for a slot of job with geometry g: magic, format, state
 * EMPTY, job, every size and offset, version 0, no CRCs, and its checksum
 * (ft__slot_create writes it into a slot just made). */
void ft__slot_write_header(ft__slot_hdr_t *h, const char *job,
                           const ft__slot_geom_t *g);

/*
 * Check a slot image of file_bytes bytes (at least the header must be there)
 * for job.  FT_ECORRUPT (bad magic, a header checksum that does not match,
 * an invalid state word, sizes, offsets), FT_EMISMATCH (a slot of another
 * format -- an older one has no header checksum -- or of another job), with
 * a message naming path and what is wrong.  Does not check the chunk CRCs.
 * msg may be NULL.
 */
int ft__slot_validate(const void *image, size_t file_bytes, const char *job,
                      const char *path, char *msg, size_t msglen);

#endif
