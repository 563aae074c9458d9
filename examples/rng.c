/*
 * splitmix64 and xoshiro256**, as published by their authors; see rng.h.
 */
#include "examples/rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_seed(rng_t *r, uint64_t seed, uint64_t tag, uint64_t a, uint64_t b) {
  /* Chain the four numbers through splitmix64 so that nearby names (rank 1
   * step 2, rank 2 step 1) give unrelated states. */
  uint64_t x = seed;
  x = splitmix64(&x) ^ tag;
  x = splitmix64(&x) ^ a;
  x = splitmix64(&x) ^ b;
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

uint64_t rng_next(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

float rng_uniform(rng_t *r) {
  return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

float rng_symmetric(rng_t *r, float a) {
  return (2.0f * rng_uniform(r) - 1.0f) * a;
}
