/*
 * The restore rule.
 *
 * Only version numbers are compared.  ft__newest_common takes the newest
 * version that every counted node holds whole; ft__newest_committed walks
 * the versions some counted node holds, newest first, and takes the first
 * that counts as committed (newest.h), so that it never passes over a
 * committed version to take an older one.
 */
#include "snapshot/newest.h"

#include <stddef.h>

#include "snapshot/slot.h"

uint64_t ft__slot_held(int open, uint32_t state, uint64_t version) {
  return open && (state == FT_SLOT_ENCODED || state == FT_SLOT_COMMITTED)
             ? version
             : 0;
}

void ft__slots_held(const ft__slot_t sl[FT_NSLOTS], uint64_t held[FT_NSLOTS]) {
  /* The state is read only from a mapped header. */
  for (int i = 0; i < FT_NSLOTS; i++)
    held[i] = sl[i].map
                  ? ft__slot_held(1, ft__slot_state(&sl[i]), sl[i].hdr->version)
                  : 0;
}

static int node_holds(const uint64_t *row, uint64_t v) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if (row[i] == v)
      return 1;
  return 0;
}

uint64_t ft__newest_common(const uint64_t *held, int nnodes,
                           const unsigned char *ignore) {
  uint64_t best = 0;
  for (int n = 0; n < nnodes; n++)
    for (int i = 0; i < FT_NSLOTS && !(ignore && ignore[n]); i++) {
      uint64_t v = held[n * FT_NSLOTS + i];
      int everywhere = v > best;
      for (int o = 0; everywhere && o < nnodes; o++)
        everywhere =
            (ignore && ignore[o]) || node_holds(&held[o * FT_NSLOTS], v);
      if (everywhere)
        best = v;
    }
  return best;
}

/* Does v count as committed over the counted nodes (newest.h)? */
static int counts_committed(const ft__slot_seen_t *seen, int nnodes,
                            const unsigned char *ignore, uint64_t v) {
  int committed = 0, vetoed = 0;
  for (int n = 0; n < nnodes; n++) {
    if (ignore && ignore[n])
      continue;
    const ft__slot_seen_t *row = &seen[(size_t)n * FT_NSLOTS];
    int has = 0;
    for (int i = 0; i < FT_NSLOTS; i++)
      if (row[i].held == v) {
        has = 1;
        committed |= row[i].committed;
      }
    vetoed |= !has && !row[v % FT_NSLOTS].unusable;
  }
  return committed || !vetoed;
}

/* The newest version some counted node holds below `below` (of any
 * number when below is 0), 0 for none. */
static uint64_t next_candidate(const ft__slot_seen_t *seen, int nnodes,
                               const unsigned char *ignore, uint64_t below) {
  uint64_t best = 0;
  for (int n = 0; n < nnodes; n++)
    for (int i = 0; i < FT_NSLOTS && !(ignore && ignore[n]); i++) {
      uint64_t v = seen[(size_t)n * FT_NSLOTS + (size_t)i].held;
      if ((!below || v < below) && v > best)
        best = v;
    }
  return best;
}

uint64_t ft__newest_committed(const ft__slot_seen_t *seen, int nnodes,
                              const unsigned char *ignore) {
  uint64_t v = next_candidate(seen, nnodes, ignore, 0);
  while (v && !counts_committed(seen, nnodes, ignore, v))
    v = next_candidate(seen, nnodes, ignore, v);
  return v;
}
