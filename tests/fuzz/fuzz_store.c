/*
 * libFuzzer target for what the node store reads back from tmpfs that another
 * process wrote (docs/design.md section 4, CONTRIBUTING.md "Fuzz what another
 * process wrote"):
 *
 *   first byte & 3 == 0  slot image -> ft__slot_validate, as read (the
 *                        header checksum catches almost every mutation of
 *                        the header: that is the point)
 *                  == 1  slot image with seg_bytes set to the image size and
 *                        the header checksum fixed up, so mutations get past
 *                        both to the regions
 *                  == 2  metadata bytes -> ft__meta_decode, as read
 *                  == 3  metadata with total_bytes and the trailing CRC64
 *                        fixed up, so mutations reach the tables; with bit
 *                        2 set, a group table (group.meta) instead, its
 *                        trailing CRC64 fixed up, member (bits 4-5) ->
 *                        ft__group_meta_decode
 *   bit 2 of the first byte, slot: validate the slot against job
 *   "fuzz-job" (set) or any job (clear).
 *   bit 3, slot as read: fix up the header checksum (not seg_bytes).
 *
 * Besides "no crash, no out-of-bounds read" (ASan, UBSan), what a validator
 * accepts must be safe to use: every region of an accepted slot lies in the
 * image, and the chunk accessors and CRC routines stay inside it; accepted
 * metadata holds only in-range fields and re-encodes to an equal record.
 * And the header checksum must do its job: one byte of an accepted header
 * changed anywhere under the checksum (or in the state word) is refused,
 * and the store's own writers leave an accepted header accepted.
 * A broken promise aborts, which libFuzzer reports as a crash.
 *
 * Built by tests/fuzz/run, not by automake.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec/crc.h"
#include "ftrt.h"
#include "snapshot/groupmeta.h"
#include "snapshot/store.h"

#define REQUIRE(cond)                                                          \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_store: %s:%d: broken promise: %s\n", __FILE__,     \
              __LINE__, #cond);                                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#define META_TOTAL_OFF 16 /* meta_fixed_t.total_bytes in snapshot/meta.c */
#define JOB "fuzz-job"

/* The message of a refusal: terminated, names the path, says something. */
static void check_msg(int rc, const char *msg, size_t cap) {
  REQUIRE(rc == FT_OK || rc == FT_ECORRUPT || rc == FT_EMISMATCH);
  if (rc == FT_OK)
    return;
  REQUIRE(memchr(msg, '\0', cap) != NULL);
  REQUIRE(strncmp(msg, "fuzz: ", 6) == 0);
  REQUIRE(strlen(msg) > 8);
}

static volatile uint8_t sink;

/* Read every byte of [p, p + n): ASan sees an access outside the image. */
static void touch(const uint8_t *p, uint64_t n) {
  uint8_t x = 0;
  for (uint64_t i = 0; i < n; i++)
    x ^= p[i];
  sink = x;
}

static int inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
  return off >= lo && off <= hi && len <= hi - off;
}

/* Change one byte under the checksum or in the state word (which byte,
 * and how, from the header's own bytes): the slot must be refused. */
static void flip_one(uint8_t *img, size_t size, const char *job) {
  const ft__slot_hdr_t *h = (const ft__slot_hdr_t *)img;
  size_t covered = offsetof(ft__slot_hdr_t, filled_ns);
  size_t at = (size_t)(h->crc[0] ^ h->version ^ h->chunk_bytes) % covered;
  uint8_t x = (uint8_t)(1u + (h->crc[1] ^ h->step) % 255u);
  char msg[256];
  img[at] ^= x;
  int rc = ft__slot_validate(img, size, job, "fuzz", msg, sizeof(msg));
  if (rc == FT_OK)
    fprintf(stderr, "fuzz_store: byte %zu ^ 0x%02x accepted\n", at, x);
  REQUIRE(rc != FT_OK);
  img[at] ^= x;
}

static void fix_checksum(uint8_t *img, size_t size) {
  if (size < sizeof(ft__slot_hdr_t))
    return;
  ft__slot_hdr_t h;
  memcpy(&h, img, sizeof(h));
  uint64_t crc = ft__slot_hdr_crc(&h);
  memcpy(img + offsetof(ft__slot_hdr_t, hdr_crc), &crc, sizeof(crc));
}

static void fuzz_slot(uint8_t *img, size_t size, int patch, int fix,
                      int with_job) {
  if (patch && size >= sizeof(ft__slot_hdr_t)) {
    uint64_t n = size;
    memcpy(img + offsetof(ft__slot_hdr_t, seg_bytes), &n, sizeof(n));
  }
  if (patch || fix)
    fix_checksum(img, size);
  char msg[256];
  memset(msg, 'x', sizeof(msg));
  int rc = ft__slot_validate(img, size, with_job ? JOB : NULL, "fuzz", msg,
                             sizeof(msg));
  check_msg(rc, msg, sizeof(msg));
  if (rc != FT_OK)
    return;

  /* What an accepted header promises. */
  const ft__slot_hdr_t *h = (const ft__slot_hdr_t *)img;
  REQUIRE(size >= FT_SLOT_HDR_BYTES);
  REQUIRE(memcmp(h->magic, "FTRTSLOT", 8) == 0);
  REQUIRE(h->format == FT_SLOT_FORMAT);
  REQUIRE(h->hdr_crc == ft__slot_hdr_crc(h));
  uint32_t state = ft__slot_state_decode(h->state_word);
  REQUIRE(state <= FT_SLOT_COMMITTED);
  REQUIRE(strcmp(ft__slot_state_name(state), "INVALID") != 0);
  REQUIRE(memchr(h->job, '\0', sizeof(h->job)) != NULL);
  REQUIRE(!with_job || strcmp(h->job, JOB) == 0);
  REQUIRE(h->k >= 1 && (uint64_t)h->k + h->m < FT_MAX_CHUNKS);
  REQUIRE(h->nlocal <= FT_MAX_LOCAL);
  REQUIRE(h->seg_bytes == size);
  uint64_t data_bytes, parity_bytes;
  REQUIRE(
      !__builtin_mul_overflow(h->chunk_bytes, (uint64_t)h->k, &data_bytes) &&
      data_bytes == h->data_bytes);
  REQUIRE(
      !__builtin_mul_overflow(h->chunk_bytes, (uint64_t)h->m, &parity_bytes) &&
      parity_bytes == h->parity_bytes);
  REQUIRE(inside(h->data_off, h->data_bytes, FT_SLOT_HDR_BYTES, size));
  REQUIRE(inside(h->parity_off, h->parity_bytes, h->data_off + h->data_bytes,
                 size));
  for (uint32_t r = 0; r < h->nlocal; r++)
    REQUIRE(inside(h->rank_off[r], h->rank_bytes[r], h->data_off,
                   h->data_off + h->data_bytes));

  /* The accessors and CRC routines a reader then uses stay in the image. */
  ft__slot_t s;
  memset(&s, 0, sizeof(s));
  s.fd = -1;
  snprintf(s.path, sizeof(s.path), "fuzz");
  s.map = img;
  s.map_bytes = size;
  s.hdr = (ft__slot_hdr_t *)img;
  uint32_t n = h->k + h->m;
  for (uint32_t c = 0; c < n; c++) {
    const uint8_t *p = ft__slot_chunk(&s, c);
    REQUIRE(p >= img + FT_SLOT_HDR_BYTES && p <= img + size &&
            h->chunk_bytes <= (uint64_t)(img + size - p));
    touch(p, h->chunk_bytes);
  }
  for (uint32_t r = 0; r < h->nlocal; r++)
    touch(img + h->rank_off[r], h->rank_bytes[r]);
  rc = ft__slot_verify(&s, 0, n, msg, sizeof(msg));
  check_msg(rc, msg, sizeof(msg));
  for (uint32_t r = 0; r < h->nlocal; r++) {
    rc = ft__slot_verify_range(&s, h->rank_off[r], h->rank_bytes[r], msg,
                               sizeof(msg));
    check_msg(rc, msg, sizeof(msg));
  }
  /* Sealed, everything verifies. */
  ft__slot_seal_data(&s);
  ft__slot_seal_parity(&s);
  REQUIRE(ft__slot_verify(&s, 0, n, msg, sizeof(msg)) == FT_OK);
  for (uint32_t r = 0; r < h->nlocal; r++)
    REQUIRE(ft__slot_verify_range(&s, h->rank_off[r], h->rank_bytes[r], msg,
                                  sizeof(msg)) == FT_OK);
  /* A header accepted once is accepted again after the writers changed it
   * (sealing rewrites the chunk CRCs and the header checksum). */
  REQUIRE(ft__slot_intact(&s));
  uint64_t crc[FT_MAX_CHUNKS];
  memcpy(crc, h->crc, sizeof(crc));
  ft__slot_set_step(&s, h->step + 1);
  ft__slot_set_data_crcs(&s, crc);
  REQUIRE(ft__slot_validate(img, size, with_job ? JOB : NULL, "fuzz", msg,
                            sizeof(msg)) == FT_OK);
  flip_one(img, size, with_job ? JOB : NULL);
}

static ft__meta_t *meta_a, *meta_b;

static void fuzz_meta(uint8_t *buf, size_t len, int patch) {
  if (patch && len >= META_TOTAL_OFF + 8 + 8) {
    uint64_t n = len;
    memcpy(buf + META_TOTAL_OFF, &n, 8);
    uint64_t crc = ft__crc64(0, buf, len - 8);
    memcpy(buf + len - 8, &crc, 8);
  }
  char msg[256];
  memset(msg, 'x', sizeof(msg));
  int rc = ft__meta_decode(buf, len, meta_a, "fuzz", msg, sizeof(msg));
  check_msg(rc, msg, sizeof(msg));
  if (rc != FT_OK)
    return;

  const ft__meta_t *m = meta_a;
  REQUIRE(memchr(m->job, '\0', sizeof(m->job)) != NULL);
  REQUIRE(memchr(m->host, '\0', sizeof(m->host)) != NULL);
  REQUIRE(m->k >= 1 && (uint64_t)m->k + m->m < FT_MAX_CHUNKS);
  REQUIRE(m->nnodes >= 1 && m->node < m->nnodes);
  REQUIRE(m->layout >= 1 && m->layout <= m->epoch);
  if (m->flags & FT_META_RESLICE)
    REQUIRE(m->next_node < m->next_nnodes && m->next_nnodes <= m->nnodes);
  REQUIRE(m->nlocal <= FT_MAX_LOCAL);
  /* No fixed limit on nodes or buffers: each table as long as its count,
   * and the bytes held it (len bounds both). */
  REQUIRE(m->hosts != NULL);
  REQUIRE((uint64_t)m->nnodes * FT_NAME_MAX < len);
  for (uint32_t i = 0; i < m->nnodes; i++)
    REQUIRE(memchr(m->hosts[i], '\0', FT_NAME_MAX) != NULL);
  for (uint32_t r = 0; r < m->nlocal; r++) {
    const ft__rank_rec_t *rr = &m->ranks[r];
    REQUIRE((uint64_t)rr->nbufs * sizeof(ft__buf_rec_t) < len);
    REQUIRE(rr->nbufs == 0 || rr->bufs != NULL);
    for (uint32_t b = 0; b < rr->nbufs; b++) {
      const ft__buf_rec_t *br = &rr->bufs[b];
      REQUIRE(memchr(br->name, '\0', sizeof(br->name)) != NULL);
      REQUIRE(inside(br->offset, br->bytes, 0, rr->region_bytes));
    }
  }
  /* Accepted metadata re-encodes to the same length and decodes equal. */
  uint8_t *out = NULL;
  size_t olen = 0;
  REQUIRE(ft__meta_encode(m, &out, &olen) == FT_OK);
  REQUIRE(olen == len);
  rc = ft__meta_decode(out, olen, meta_b, "fuzz", msg, sizeof(msg));
  if (rc != FT_OK)
    fprintf(stderr, "fuzz_store: re-encoded metadata refused: %s\n", msg);
  REQUIRE(rc == FT_OK);
  REQUIRE(ft__meta_equal(meta_a, meta_b));
  free(out);
}

/* A group table: a member that decodes is metadata as good as a node's
 * own (fuzz_meta's promises), and a refusal leaves nothing held. */
static void fuzz_group(uint8_t *buf, size_t len, int pos) {
  if (len >= 12) {
    uint64_t crc = ft__crc64(0, buf, len - 8);
    memcpy(buf + len - 8, &crc, 8);
  }
  char msg[256];
  memset(msg, 'x', sizeof(msg));
  int rc =
      ft__group_meta_decode(buf, len, pos, meta_a, "fuzz", msg, sizeof(msg));
  check_msg(rc, msg, sizeof(msg));
  if (rc != FT_OK) {
    REQUIRE(meta_a->hosts == NULL && meta_a->nnodes == 0 &&
            meta_a->nlocal == 0);
    return;
  }
  REQUIRE(meta_a->hosts != NULL);
  REQUIRE((uint64_t)meta_a->nnodes * FT_NAME_MAX < len);
  REQUIRE(meta_a->node < meta_a->nnodes && meta_a->nlocal <= FT_MAX_LOCAL);
  uint8_t *out = NULL;
  size_t olen = 0;
  REQUIRE(ft__meta_encode(meta_a, &out, &olen) == FT_OK);
  REQUIRE(ft__meta_decode(out, olen, meta_b, "fuzz", msg, sizeof(msg)) ==
          FT_OK);
  REQUIRE(ft__meta_equal(meta_a, meta_b));
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (!meta_a) {
    meta_a = calloc(1, sizeof(*meta_a));
    meta_b = calloc(1, sizeof(*meta_b));
    if (!meta_a || !meta_b)
      abort();
  }
  uint8_t sel = data[0];
  size--, data++;
  /* An exact-size, aligned copy: reads past the end are caught, the header
   * can be read in place, and the fix-ups may write. */
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy)
    abort();
  if (size)
    memcpy(copy, data, size);
  switch (sel & 3) {
  case 0:
  case 1:
    fuzz_slot(copy, size, sel & 1, (sel >> 3) & 1, (sel >> 2) & 1);
    break;
  case 2:
    fuzz_meta(copy, size, 0);
    break;
  default:
    if (sel & 4)
      fuzz_group(copy, size, (sel >> 4) & 3);
    else
      fuzz_meta(copy, size, 1);
    break;
  }
  free(copy);
  return 0;
}
