/*
 * The slot format.
 *
 * A slot's header page records where every local rank's region starts,
 * how the data region is cut into k chunks and where this node's m parity
 * chunks live, and one CRC64 per chunk, all under a CRC64 of the header
 * itself.  The state word
 * is the only field that changes while others read, so it checks itself
 * instead (slot.h says why).
 *
 * Readers never trust a file: ft__slot_validate checks the magic, the
 * format, the header checksum and the state word before any other field,
 * then every size and offset against the real file length, so a
 * truncated, foreign or scribbled header is an error with a message, never
 * a crash.
 */
#include "snapshot/slot.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "ec/crc.h"

#define SLOT_MAGIC "FTRTSLOT"
#define PAGE 4096u

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

const char *ft__slot_state_name(uint32_t state) {
  static const char *const names[] = {"EMPTY", "FILLING", "LOCAL", "ENCODED",
                                      "COMMITTED"};
  return state <= FT_SLOT_COMMITTED ? names[state] : "INVALID";
}

/* ---- geometry ---- */

int ft__slot_geom_local(ft__slot_geom_t *g, uint32_t nlocal,
                        const uint64_t *rank_bytes) {
  if (nlocal > FT_MAX_LOCAL)
    return FT_ERANGE;
  memset(g, 0, sizeof(*g));
  g->nlocal = nlocal;
  g->data_off = FT_SLOT_HDR_BYTES;
  uint64_t off = g->data_off;
  for (uint32_t r = 0; r < nlocal; r++) {
    g->rank_off[r] = off;
    g->rank_bytes[r] = rank_bytes[r];
    off = round_up(off + rank_bytes[r], PAGE);
  }
  g->local_bytes = off - g->data_off;
  return FT_OK;
}

int ft__slot_geom_code(ft__slot_geom_t *g, uint32_t k, uint32_t m,
                       uint64_t chunk_bytes) {
  if (k < 1 || (uint64_t)k + m > FT_MAX_CHUNKS - 1 ||
      chunk_bytes * k < g->local_bytes)
    return FT_EINVAL;
  g->k = k;
  g->m = m;
  g->chunk_bytes = chunk_bytes;
  g->data_bytes = chunk_bytes * k;
  g->parity_off = round_up(g->data_off + g->data_bytes, PAGE);
  g->parity_bytes = chunk_bytes * m;
  g->seg_bytes = round_up(g->parity_off + g->parity_bytes, PAGE);
  return FT_OK;
}

/* ---- validation (fuzzed) ---- */

static int check_ranks(const ft__slot_hdr_t *h, const char *path, char *msg,
                       size_t msglen) {
  for (uint32_t r = 0; r < h->nlocal; r++) {
    uint64_t off = h->rank_off[r], len = h->rank_bytes[r];
    if (off < h->data_off || len > h->data_bytes ||
        off - h->data_off > h->data_bytes - len)
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: rank region %u [%llu, +%llu) lies outside the data "
                      "region",
                      path, r, (unsigned long long)off,
                      (unsigned long long)len);
  }
  return FT_OK;
}

static int check_regions(const ft__slot_hdr_t *h, size_t file_bytes,
                         const char *path, char *msg, size_t msglen) {
  /* k + m in 64 bits: k = 2^32 - 1, m = 254 must not wrap to 253 */
  if (h->k < 1 || (uint64_t)h->k + h->m >= FT_MAX_CHUNKS ||
      h->nlocal > FT_MAX_LOCAL)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: impossible code or rank count (k=%u m=%u ranks=%u)",
                    path, h->k, h->m, h->nlocal);
  if (h->seg_bytes != file_bytes)
    return ft__msgf(
        FT_ECORRUPT, msg, msglen,
        "%s: file is %zu bytes but its header says %llu (truncated?)", path,
        file_bytes, (unsigned long long)h->seg_bytes);
  uint64_t c = h->chunk_bytes;
  if (c > file_bytes || h->data_bytes != c * h->k ||
      h->parity_bytes != c * h->m || h->data_off < FT_SLOT_HDR_BYTES ||
      h->data_off > file_bytes || h->data_bytes > file_bytes - h->data_off ||
      h->parity_off < h->data_off + h->data_bytes ||
      h->parity_off > file_bytes ||
      h->parity_bytes > file_bytes - h->parity_off)
    return ft__msgf(
        FT_ECORRUPT, msg, msglen,
        "%s: data/parity regions do not fit the file (chunk %llu, k=%u, "
        "m=%u, file %zu bytes)",
        path, (unsigned long long)c, h->k, h->m, file_bytes);
  return check_ranks(h, path, msg, msglen);
}

/* ---- the header checksum and the state word ---- */

uint32_t ft__slot_state_word(uint32_t state) {
  return (state & 0xffffu) | (~state & 0xffffu) << 16;
}

uint32_t ft__slot_state_decode(uint32_t word) {
  uint32_t state = word & 0xffffu;
  if (word >> 16 != (~state & 0xffffu) || state > FT_SLOT_COMMITTED)
    return FT_SLOT_STATE_INVALID;
  return state;
}

/* Covered: [magic, state_word) and [job, filled_ns). */
uint64_t ft__slot_hdr_crc(const ft__slot_hdr_t *h) {
  const uint8_t *p = (const uint8_t *)h;
  size_t a = offsetof(ft__slot_hdr_t, state_word);
  size_t b = offsetof(ft__slot_hdr_t, job);
  size_t e = offsetof(ft__slot_hdr_t, filled_ns);
  return ft__crc64(ft__crc64(0, p, a), p + b, e - b);
}

/* Magic, format, checksum and state word: what says whether the rest of the
 * header can be believed at all. */
static int check_identity(const ft__slot_hdr_t *h, const char *path, char *msg,
                          size_t msglen) {
  if (memcmp(h->magic, SLOT_MAGIC, 8) != 0)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: bad magic, not an ftrt slot",
                    path);
  /* Formats before 4 wrote no checksum: there, hdr_crc's bytes are 0. */
  if (h->format != FT_SLOT_FORMAT && h->hdr_crc == 0)
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: store format %u (an older ftrt's, without a header "
                    "checksum), this ftrt reads format %u" FT_STORE_UPGRADE,
                    path, h->format, FT_SLOT_FORMAT);
  uint64_t crc = ft__slot_hdr_crc(h);
  if (crc != h->hdr_crc)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: header checksum mismatch (stored %016llx, computed "
                    "%016llx): the slot header is damaged",
                    path, (unsigned long long)h->hdr_crc,
                    (unsigned long long)crc);
  if (h->format != FT_SLOT_FORMAT)
    return ft__msgf(
        FT_EMISMATCH, msg, msglen,
        "%s: store format %u, this ftrt reads format %u" FT_STORE_UPGRADE, path,
        h->format, FT_SLOT_FORMAT);
  if (ft__slot_state_decode(h->state_word) == FT_SLOT_STATE_INVALID)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: invalid slot state word %08x: the slot header is "
                    "damaged",
                    path, h->state_word);
  return FT_OK;
}

int ft__slot_validate(const void *image, size_t file_bytes, const char *job,
                      const char *path, char *msg, size_t msglen) {
  if (file_bytes < sizeof(ft__slot_hdr_t))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes, too short for a slot header (truncated)",
                    path, file_bytes);
  ft__slot_hdr_t h;
  memcpy(&h, image, sizeof(h));
  int rc = check_identity(&h, path, msg, msglen);
  if (rc)
    return rc;
  if (memchr(h.job, '\0', sizeof(h.job)) == NULL ||
      (job && strcmp(h.job, job) != 0))
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: belongs to job '%.*s', not to job '%s'", path,
                    (int)strnlen(h.job, sizeof(h.job)), h.job, job ? job : "?");
  return check_regions(&h, file_bytes, path, msg, msglen);
}

/* ---- a fresh header ---- */

void ft__slot_write_header(ft__slot_hdr_t *h, const char *job,
                           const ft__slot_geom_t *g) {
  memset(h, 0, sizeof(*h));
  memcpy(h->magic, SLOT_MAGIC, 8);
  h->format = FT_SLOT_FORMAT;
  h->state_word = ft__slot_state_word(FT_SLOT_EMPTY);
  snprintf(h->job, sizeof(h->job), "%s", job);
  h->seg_bytes = g->seg_bytes;
  h->data_off = g->data_off;
  h->data_bytes = g->data_bytes;
  h->parity_off = g->parity_off;
  h->parity_bytes = g->parity_bytes;
  h->chunk_bytes = g->chunk_bytes;
  h->k = g->k;
  h->m = g->m;
  h->nlocal = g->nlocal;
  memcpy(h->rank_off, g->rank_off, sizeof(h->rank_off));
  memcpy(h->rank_bytes, g->rank_bytes, sizeof(h->rank_bytes));
  h->hdr_crc = ft__slot_hdr_crc(h);
}
