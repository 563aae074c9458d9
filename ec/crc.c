/*
 * CRC64 through ISA-L, which picks a carry-less-multiply kernel at run time
 * (several GB/s per core), so checksumming a snapshot costs far less than
 * copying it.  Kept apart from the codec because the store checks CRCs on
 * paths that never encode.
 */
#include "ec/crc.h"

#include <isa-l/crc64.h>

#include "ec/upper.h"

uint64_t ft__crc64(uint64_t seed, const void *buf, size_t len) {
  if (len == 0)
    return seed;
  uint64_t crc =
      crc64_ecma_refl(seed, (const unsigned char *)buf, (uint64_t)len);
  ft__isal_done();
  return crc;
}
