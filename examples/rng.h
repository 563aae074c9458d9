/*
 * Small deterministic random generators for the example trainer.
 *
 * splitmix64 derives seeds; xoshiro256** (Blackman and Vigna) produces the
 * streams.  A stream is named by (seed, tag, a, b), for example the data of
 * (seed, DATA, rank, step), so that what a rank sees depends on those numbers
 * alone and a resumed run sees the same data as one that never stopped.
 * An rng_t is plain bytes (no pointers) so that it can be registered with
 * ftrt and restored as it is.
 */
#ifndef EXAMPLES_RNG_H
#define EXAMPLES_RNG_H

#include <stdint.h>

typedef struct rng {
  uint64_t s[4];
} rng_t;

/* Stream tags: one per use, so that no two uses share a stream. */
enum { RNG_TEACHER = 1, RNG_INIT = 2, RNG_DATA = 3, RNG_DROPOUT = 4 };

/* Seed r with the stream named by (seed, tag, a, b). */
void rng_seed(rng_t *r, uint64_t seed, uint64_t tag, uint64_t a, uint64_t b);

/* Next 64 random bits. */
uint64_t rng_next(rng_t *r);

/* Uniform in [0, 1) with 24 random bits (exact in a float). */
float rng_uniform(rng_t *r);

/* Uniform in [-a, a). */
float rng_symmetric(rng_t *r, float a);

#endif
