/*
 * CRC64 of snapshot chunks.  Every held chunk (data and parity) carries one,
 * so that a bit flip turns the chunk into an erasure instead of wrong data.
 */
#ifndef FT_EC_CRC_H
#define FT_EC_CRC_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-64/XZ (ISA-L crc64_ecma_refl, reflected ECMA-182 polynomial, inverted
 * in and out).  Pass seed 0 for a fresh CRC; pass a previous result to chain:
 * ft__crc64(ft__crc64(0, a, la), b, lb) == CRC of a followed by b.
 * buf may be NULL when len is 0 (the seed is returned unchanged).
 */
uint64_t ft__crc64(uint64_t seed, const void *buf, size_t len);

#endif
