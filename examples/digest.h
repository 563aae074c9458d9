/*
 * The digest printed at the end of a run: FNV-1a 64 over the whole training
 * state of all ranks, as one byte stream in this order (native byte order,
 * little-endian on x86-64):
 *
 *   1. the parameters (n floats; replicated, so taken once, from rank 0,
 *      after checking that every rank holds the same ones);
 *   2. the Adam first moment m, every rank's slice in rank order (which is
 *      the global m vector of n floats);
 *   3. the second moment v, the same way;
 *   4. every rank's dropout RNG state (4 x uint64) in rank order;
 *   5. the step counter (uint64; checked equal on every rank).
 *
 * Two runs print the same digest exactly when they end in the same state.
 */
#ifndef EXAMPLES_DIGEST_H
#define EXAMPLES_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

typedef struct fnv1a {
  uint64_t h;
} fnv1a_t;

void fnv1a_init(fnv1a_t *f);
void fnv1a_update(fnv1a_t *f, const void *data, size_t len);

/* What one rank contributes. */
typedef struct digest_part {
  const float *params;
  size_t n_params;
  const float *m, *v; /* this rank's slices */
  size_t slice;
  const void *rng;
  size_t rng_bytes; /* the same on every rank */
  uint64_t step;
} digest_part_t;

/*
 * Collective over comm; *digest is set on rank 0.  Returns 0, 1 when the
 * ranks do not hold the same parameters or step, -1 when out of memory; every
 * rank returns the same value.
 */
int digest_state(MPI_Comm comm, const digest_part_t *p, uint64_t *digest);

#endif
