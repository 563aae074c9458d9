/*
 * Reed-Solomon codec over GF(2^8): k data chunks, m parity chunks, all of one
 * length, parity from the Cauchy matrix of ISA-L's gf_gen_cauchy1_matrix (so
 * any k of the k+m chunks rebuild the rest).  This is the only wrapper around
 * ISA-L's erasure-code calls: ISA-L returns void and trusts its arguments, so
 * every check lives here.
 *
 * Threads: a codec may be used by ONE thread at a time, const calls included:
 * ft__codec_decode keeps the tables of the last erasure pattern inside the
 * codec.  Give each thread its own codec (they are cheap: O(k*m) bytes).
 */
#ifndef FT_EC_CODEC_H
#define FT_EC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define FT_EC_MAX_CHUNKS 255 /* k + m at most: the size of GF(2^8) less one */

typedef struct ft__codec ft__codec_t;

/*
 * A codec for k data and m parity chunks: k >= 1, m >= 0, k + m <= 255, else
 * FT_EINVAL.  FT_ENOMEM when out of memory.  On any failure *out is NULL
 * (out itself NULL: FT_EINVAL).  Everything decode needs is allocated here, so
 * encode and decode never fail for memory.
 */
int ft__codec_create(int k, int m, ft__codec_t **out);

/* Free a codec; NULL is accepted. */
void ft__codec_destroy(ft__codec_t *c);

int ft__codec_k(const ft__codec_t *c);
int ft__codec_m(const ft__codec_t *c);

/*
 * Long chunks are coded in pieces of this many bytes per chunk so that the
 * k+m pieces in flight stay in cache and so that ISA-L, which takes an int
 * length, never sees more than it can count.  bytes: a multiple of 64 from
 * 64 to 1 GiB, or 0 for the default chosen from k+m; else FT_EINVAL and the
 * piece size is unchanged.  Results never depend on it; tests and benchmarks
 * set it.
 */
int ft__codec_set_piece_bytes(ft__codec_t *c, size_t bytes);
size_t ft__codec_piece_bytes(const ft__codec_t *c);

/*
 * parity[j] (j < m) = encoding of data[0..k-1], each len bytes (any len,
 * 0 included).  Buffers may be unaligned; parity must not overlap data.
 * FT_EINVAL for a NULL codec or array, or a NULL buffer when len > 0.
 */
int ft__codec_encode(const ft__codec_t *c, size_t len,
                     const uint8_t *const *data, uint8_t *const *parity);

/*
 * Accumulate: parity[j] ^= contribution of data chunk i (0 <= i < k).
 * Start from zeroed parity; after all k chunks, in any order, parity equals
 * ft__codec_encode's.  Lets an SMP encode chunks as they arrive over the
 * network.  FT_EINVAL for a bad i or NULL pointers as in ft__codec_encode.
 */
int ft__codec_encode_update(const ft__codec_t *c, size_t len, int i,
                            const uint8_t *data, uint8_t *const *parity);

/*
 * One parity row of ft__codec_encode_update: parity_j ^= contribution of
 * data chunk i (0 <= i < k) to parity j (0 <= j < m).  For a holder of one
 * parity chunk of a stripe (the rotated layout gives each node one parity row
 * per stripe it keeps).  FT_EINVAL for a bad i or j, or NULL buffers when
 * len > 0.
 */
int ft__codec_encode_update_row(const ft__codec_t *c, size_t len, int i, int j,
                                const uint8_t *data, uint8_t *parity_j);

/*
 * Rebuild erased chunks in place.  chunks[0..k+m-1]: 0..k-1 data, k..k+m-1
 * parity, each len bytes.  erased[0..nerased-1] are distinct indices whose
 * buffers must be rebuilt (buffers given, contents ignored); every other
 * chunk must hold valid bytes.  Rebuilds erased data and erased parity.
 * Checked in this order, nothing written on any error:
 *  - NULL codec/array, nerased < 0, an index outside 0..k+m-1, a duplicate
 *    index, a NULL chunk pointer when len > 0: FT_EINVAL;
 *  - nerased > m: FT_ETOOMANY;
 *  - singular decode matrix: FT_ECORRUPT (cannot happen with a Cauchy code;
 *    kept because ISA-L reports it).
 * nerased == 0 is FT_OK and touches nothing.  Updates the codec's cache of
 * decode tables (see the thread note at the top).
 */
int ft__codec_decode(const ft__codec_t *c, size_t len, uint8_t *const *chunks,
                     const int *erased, int nerased);

/*
 * The same decode spread over the holders of the sources (a chain: each adds
 * its term to what the one before it sent): acc ^= the term of source s in
 * the rebuild of erased[r].  Source s (0 <= s < k) is the s-th chunk index
 * not in erased, in index order, as ft__codec_decode picks them; the
 * erasure pattern (erased, nerased) is as there, and r < nerased.  From a
 * zeroed acc, after the k terms in any order, acc holds what
 * ft__codec_decode writes into chunks[erased[r]].  Checks and errors as
 * ft__codec_decode, plus FT_EINVAL for a bad r or s, or a NULL buffer when
 * len > 0; nothing written on any error.
 */
int ft__codec_decode_update(const ft__codec_t *c, size_t len,
                            const int *erased, int nerased, int r, int s,
                            const uint8_t *data, uint8_t *acc);

/* The same for the first term of the sum: acc = the term of source s (acc's
 * bytes before are never read, so it needs no zeroing).  Checks and errors
 * as ft__codec_decode_update. */
int ft__codec_decode_first(const ft__codec_t *c, size_t len, const int *erased,
                           int nerased, int r, int s, const uint8_t *data,
                           uint8_t *acc);

#endif
