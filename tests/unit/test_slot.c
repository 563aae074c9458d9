/* The slot format (snapshot/slot.h, docs/design.md section 4): the
 * geometry of a slot (page-aligned rank regions, a data region of exactly
 * k chunks, then the parity), the states a slot goes through as seen
 * through two mappings of its file, and a clear error -- status and a
 * message naming the file and what is wrong -- for every kind of damaged
 * slot file, whether the header checksum catches it or the checks behind
 * it do.  Each test works in its own directory (tmpdir.h). */
#include <check.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* ================= geometry ================= */

START_TEST(geom_local_regions) {
  ft__slot_geom_t g;
  const uint64_t b[4] = {1, 4096, 5000, 0};
  ck_assert_int_eq(ft__slot_geom_local(&g, 4, b), FT_OK);
  ck_assert_uint_eq(g.nlocal, 4);
  ck_assert_uint_eq(g.data_off, FT_SLOT_HDR_BYTES);
  ck_assert_uint_eq(g.rank_off[0], 4096);
  ck_assert_uint_eq(g.rank_off[1], 8192);
  ck_assert_uint_eq(g.rank_off[2], 12288);
  ck_assert_uint_eq(g.rank_off[3], 20480);
  for (int r = 0; r < 4; r++) {
    ck_assert_uint_eq(g.rank_off[r] % PAGE, 0);
    ck_assert_uint_eq(g.rank_bytes[r], b[r]);
    ck_assert_uint_ge(g.rank_off[r], g.data_off);
    if (r > 0) /* disjoint and in order */
      ck_assert_uint_ge(g.rank_off[r], g.rank_off[r - 1] + g.rank_bytes[r - 1]);
  }
  ck_assert_uint_eq(g.local_bytes, 20480 - 4096);
}
END_TEST

START_TEST(geom_code_layout) {
  static const uint32_t km[][2] = {{1, 0}, {3, 0}, {3, 2}, {4, 1}, {7, 3}};
  for (size_t t = 0; t < sizeof(km) / sizeof(km[0]); t++) {
    ft__slot_geom_t g;
    uint32_t k = km[t][0], m = km[t][1];
    geom3(&g, k, m);
    ck_assert_uint_eq(g.k, k);
    ck_assert_uint_eq(g.m, m);
    ck_assert_uint_eq(g.data_bytes, (uint64_t)k * g.chunk_bytes);
    ck_assert_uint_ge(g.data_bytes, g.local_bytes);
    ck_assert_uint_lt(g.data_bytes - g.local_bytes, k); /* chunk is tight */
    ck_assert_uint_eq(g.parity_off % PAGE, 0);
    ck_assert_uint_ge(g.parity_off, g.data_off + g.data_bytes);
    ck_assert_uint_lt(g.parity_off, g.data_off + g.data_bytes + PAGE);
    ck_assert_uint_eq(g.parity_bytes, (uint64_t)m * g.chunk_bytes);
    ck_assert_uint_eq(g.seg_bytes % PAGE, 0);
    ck_assert_uint_ge(g.seg_bytes, g.parity_off + g.parity_bytes);
    ck_assert_uint_lt(g.seg_bytes, g.parity_off + g.parity_bytes + PAGE);
    /* every rank region lies inside the data region */
    for (int r = 0; r < 3; r++)
      ck_assert_uint_le(g.rank_off[r] + g.rank_bytes[r],
                        g.data_off + g.data_bytes);
  }
}
END_TEST

START_TEST(geom_refusals) {
  ft__slot_geom_t g;
  uint64_t many[FT_MAX_LOCAL + 1] = {0};
  ck_assert_int_eq(ft__slot_geom_local(&g, FT_MAX_LOCAL + 1, many), FT_ERANGE);
  ck_assert_int_eq(ft__slot_geom_local(&g, FT_MAX_LOCAL, many), FT_OK);

  ck_assert_int_eq(ft__slot_geom_local(&g, 3, rank_bytes3), FT_OK);
  uint64_t need = g.local_bytes; /* 16384: chunk * k must cover it */
  ck_assert_uint_eq(need, 16384);
  ck_assert_int_eq(ft__slot_geom_code(&g, 0, 1, need), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 3, 1, need / 3), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, 0, need - 1), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 200, 60, need), FT_EINVAL);
  /* k + m must not wrap around 2^32 into an acceptable count */
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, UINT32_MAX, need), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 2, UINT32_MAX - 1, need), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, 0, need), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(&g, 3, 1, need / 3 + 1), FT_OK);
}
END_TEST

/* ================= state machine ================= */

START_TEST(state_names) {
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_EMPTY), "EMPTY");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_FILLING), "FILLING");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_LOCAL), "LOCAL");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_ENCODED), "ENCODED");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_COMMITTED), "COMMITTED");
  ck_assert_str_eq(ft__slot_state_name(5), "INVALID");
  ck_assert_str_eq(ft__slot_state_name(UINT32_MAX), "INVALID");
}
END_TEST

START_TEST(state_machine) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t a, b;
  create_slot(&a, 1, &g);
  ck_assert_uint_eq(ft__slot_state(&a), FT_SLOT_EMPTY);
  ck_assert_str_eq(a.path + strlen(dir), "/slot1");
  ck_assert_uint_eq(a.map_bytes, g.seg_bytes);

  /* the file on disk is exactly the geometry's size */
  struct stat st;
  ck_assert_int_eq(stat(a.path, &st), 0);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);

  ft__slot_begin(&a, 7, 700, 3, 1);
  ck_assert_uint_eq(ft__slot_state(&a), FT_SLOT_FILLING);
  ck_assert_uint_eq(a.hdr->version, 7);
  ck_assert_uint_eq(a.hdr->step, 700);
  ck_assert_uint_eq(a.hdr->epoch, 3);
  ck_assert_uint_ne(a.hdr->filled_ns, 0);
  ck_assert_uint_eq(a.hdr->committed_ns, 0);

  /* a second, independent mapping of the same file sees each transition */
  open_slot(&b, 1);
  ck_assert_ptr_ne(a.map, b.map);
  static const uint32_t seq[] = {FT_SLOT_FILLING, FT_SLOT_LOCAL,
                                 FT_SLOT_ENCODED, FT_SLOT_COMMITTED};
  for (size_t i = 0; i < 4; i++) {
    if (i)
      ft__slot_set_state(&a, seq[i]);
    ck_assert_uint_eq(ft__slot_state(&a), seq[i]);
    ck_assert_uint_eq(ft__slot_state(&b), seq[i]);
  }
  ck_assert_uint_ne(a.hdr->committed_ns, 0);
  ck_assert_uint_ge(a.hdr->committed_ns, a.hdr->filled_ns);
  ft__slot_close(&b);
  ft__slot_close(&a);
  ck_assert_ptr_null(a.map);
  ck_assert_int_eq(a.fd, -1);

  /* reopen from disk: same state and fields as written */
  open_slot(&b, 1);
  ck_assert_uint_eq(ft__slot_state(&b), FT_SLOT_COMMITTED);
  ck_assert_str_eq(b.hdr->job, JOB);
  ck_assert_uint_eq(b.hdr->version, 7);
  ck_assert_uint_eq(b.hdr->step, 700);
  ck_assert_uint_eq(b.hdr->epoch, 3);
  ck_assert_uint_eq(b.hdr->format, FT_SLOT_FORMAT);
  ck_assert_uint_eq(b.hdr->seg_bytes, g.seg_bytes);
  ck_assert_uint_eq(b.hdr->k, 3);
  ck_assert_uint_eq(b.hdr->m, 2);
  ck_assert_uint_eq(b.hdr->nlocal, 3);
  ck_assert_uint_eq(b.hdr->chunk_bytes, g.chunk_bytes);
  ck_assert_uint_eq(b.hdr->data_off, g.data_off);
  ck_assert_uint_eq(b.hdr->data_bytes, g.data_bytes);
  ck_assert_uint_eq(b.hdr->parity_off, g.parity_off);
  ck_assert_uint_eq(b.hdr->parity_bytes, g.parity_bytes);
  for (int r = 0; r < 3; r++) {
    ck_assert_uint_eq(b.hdr->rank_off[r], g.rank_off[r]);
    ck_assert_uint_eq(b.hdr->rank_bytes[r], g.rank_bytes[r]);
  }

  /* beginning the next version drops the commit time and the old identity */
  ft__slot_begin(&b, 9, 900, 3, 1);
  ck_assert_uint_eq(ft__slot_state(&b), FT_SLOT_FILLING);
  ck_assert_uint_eq(b.hdr->version, 9);
  ck_assert_uint_eq(b.hdr->committed_ns, 0);
  ft__slot_close(&b);

  /* a slot that was never created */
  char msg[512] = "";
  ck_assert_int_eq(ft__slot_open(&b, &sdir, 0, JOB, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_msg_has(msg, dir);
  ck_msg_has(msg, "/slot0");
}
END_TEST

/* ================= damaged slot files ================= */

/* Each damage below is written with a fresh header checksum (the table is
 * about the checks behind it: what a writer with a bug, or a forger, could
 * put there); slot_header_flips covers damage the checksum catches.  The
 * older-format case drops the checksum, as format 2 had none. */
typedef void (*slot_damage_fn)(ft__slot_hdr_t *h, const char *path);

static void trunc_to(const char *path, off_t n) {
  ck_assert_int_eq(truncate(path, n), 0);
}
static void d_trunc0(ft__slot_hdr_t *h, const char *p) {
  (void)h, trunc_to(p, 0);
}
static void d_trunc_half_hdr(ft__slot_hdr_t *h, const char *p) {
  (void)h, trunc_to(p, sizeof(ft__slot_hdr_t) / 2);
}
static void d_trunc_one(ft__slot_hdr_t *h, const char *p) {
  trunc_to(p, (off_t)h->seg_bytes - 1);
}
static void d_trunc_data(ft__slot_hdr_t *h, const char *p) {
  trunc_to(p, (off_t)h->data_off);
}
static void d_grown(ft__slot_hdr_t *h, const char *p) {
  trunc_to(p, (off_t)h->seg_bytes + 1);
}
static void d_magic(ft__slot_hdr_t *h, const char *p) {
  (void)p, memcpy(h->magic, "FTRTMETA", 8);
}
static void d_format(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->format = 99;
}
/* a slot of format 3 (or 2), before the header had a checksum */
static void d_format_old(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->format = 3;
}
static void d_job(ft__slot_hdr_t *h, const char *p) {
  (void)p, snprintf(h->job, sizeof(h->job), "other-job");
}
static void d_job_unterminated(ft__slot_hdr_t *h, const char *p) {
  (void)p, memset(h->job, 'x', sizeof(h->job));
}
static void d_state(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->state_word = 9;
}
static void d_state_5(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->state_word = ft__slot_state_word(5); /* well formed, no state */
}
static void d_rank_past_data(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_off[1] = h->data_off + h->data_bytes - 10;
}
static void d_rank_before_data(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_off[2] = 0;
}
static void d_rank_huge(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_bytes[0] = UINT64_MAX;
}
static void d_rank_wrap(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_off[0] = UINT64_MAX - 100;
}
static void d_k0(ft__slot_hdr_t *h, const char *p) { (void)p, h->k = 0; }
static void d_km_big(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->k = 200, h->m = 56;
}
static void d_km_wrap(ft__slot_hdr_t *h, const char *p) {
  /* k + m == 2^32 + 2: wraps to 2 in 32-bit arithmetic; with zero-sized
   * chunks every size check would pass */
  (void)p, h->m = UINT32_MAX - 1;
  h->chunk_bytes = 0, h->data_bytes = 0, h->parity_bytes = 0;
  h->nlocal = 0;
}
static void d_nlocal(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->nlocal = FT_MAX_LOCAL + 1;
}
static void d_chunk(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->chunk_bytes *= 2;
}
static void d_chunk_huge(ft__slot_hdr_t *h, const char *p) {
  /* chunk * k wraps to the recorded data_bytes */
  (void)p, h->chunk_bytes = (1ull << 62) + h->chunk_bytes, h->k = 4, h->m = 0;
  h->data_bytes = h->chunk_bytes * 4, h->parity_bytes = 0;
}
static void d_parity_in_data(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->parity_off = h->data_off + h->data_bytes - 1;
}
static void d_parity_past_end(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->parity_off = h->seg_bytes - h->parity_bytes + 1;
}
static void d_data_off(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->data_off = 100;
}
static void d_seg_bytes(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->seg_bytes += PAGE;
}

static const struct {
  const char *what;
  slot_damage_fn damage;
  int status;
  const char *want1, *want2;
} slot_bad[] = {
    {"truncated to 0", d_trunc0, FT_ECORRUPT, "0 bytes, too short",
     "truncated"},
    {"truncated to half a header", d_trunc_half_hdr, FT_ECORRUPT, "too short",
     "truncated"},
    {"one byte short", d_trunc_one, FT_ECORRUPT, "header says", "truncated?"},
    {"data cut off", d_trunc_data, FT_ECORRUPT, "header says", "truncated?"},
    {"one byte long", d_grown, FT_ECORRUPT, "header says", "bytes"},
    {"bad magic", d_magic, FT_ECORRUPT, "bad magic", "not an ftrt slot"},
    {"other format", d_format, FT_EMISMATCH, "store format 99",
     "reads format 4"},
    {"older format", d_format_old, FT_EMISMATCH, "store format 3",
     "without a header checksum"},
    {"other job", d_job, FT_EMISMATCH, "job 'other-job'", "job '" JOB "'"},
    {"job unterminated", d_job_unterminated, FT_EMISMATCH, "belongs to job",
     "not to job '" JOB "'"},
    {"bad state", d_state, FT_ECORRUPT, "invalid slot state word 00000009",
     "damaged"},
    {"state 5", d_state_5, FT_ECORRUPT, "invalid slot state word", "fffa0005"},
    {"rank past data", d_rank_past_data, FT_ECORRUPT, "rank region 1",
     "outside the data region"},
    {"rank before data", d_rank_before_data, FT_ECORRUPT, "rank region 2 [0,",
     "outside the data region"},
    {"rank huge", d_rank_huge, FT_ECORRUPT, "rank region 0",
     "outside the data region"},
    {"rank offset wraps", d_rank_wrap, FT_ECORRUPT, "rank region 0",
     "outside the data region"},
    {"k = 0", d_k0, FT_ECORRUPT, "impossible code", "k=0"},
    {"k + m = 256", d_km_big, FT_ECORRUPT, "impossible code", "k=200 m=56"},
    {"k + m wraps", d_km_wrap, FT_ECORRUPT, "impossible code", "m=4294967294"},
    {"65 ranks", d_nlocal, FT_ECORRUPT, "impossible code", "ranks=65"},
    {"chunk size", d_chunk, FT_ECORRUPT, "do not fit the file", "k=3"},
    {"chunk * k wraps", d_chunk_huge, FT_ECORRUPT, "do not fit the file",
     "chunk"},
    {"parity inside data", d_parity_in_data, FT_ECORRUPT, "do not fit the file",
     "m=2"},
    {"parity past the end", d_parity_past_end, FT_ECORRUPT,
     "do not fit the file", "file"},
    {"data inside the header", d_data_off, FT_ECORRUPT, "do not fit the file",
     "chunk"},
    {"seg_bytes", d_seg_bytes, FT_ECORRUPT, "header says", "truncated?"},
};

START_TEST(slot_damaged) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 1, &g);
  write_version(&s, 3);
  char path[128];
  path_of(path, sizeof(path), "slot1");
  slot_bad[_i].damage(s.hdr, path);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  if ((size_t)st.st_size >= sizeof(ft__slot_hdr_t)) /* still mapped in */
    s.hdr->hdr_crc =
        slot_bad[_i].damage == d_format_old ? 0 : ft__slot_hdr_crc(s.hdr);
  ft__slot_close(&s);

  char msg[512] = "";
  int rc = ft__slot_open(&s, &sdir, 1, JOB, msg, sizeof(msg));
  ck_assert_msg(rc == slot_bad[_i].status, "%s: status %s, want %s (%s)",
                slot_bad[_i].what, ft_err_name(rc),
                ft_err_name(slot_bad[_i].status), msg);
  ck_assert_ptr_null(s.map);
  ck_assert_int_eq(s.fd, -1);
  ck_msg_has(msg, path);
  ck_msg_has(msg, slot_bad[_i].want1);
  ck_msg_has(msg, slot_bad[_i].want2);
}
END_TEST

/* The validator alone, on images shorter than a header and with job NULL. */
START_TEST(slot_validate_bytes) {
  ft__slot_geom_t g;
  geom3(&g, 1, 0);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  char msg[512] = "";
  ck_assert_int_eq(
      ft__slot_validate(s.map, s.map_bytes, JOB, "img", msg, sizeof(msg)),
      FT_OK);
  ck_assert_int_eq(
      ft__slot_validate(s.map, s.map_bytes, NULL, "img", msg, sizeof(msg)),
      FT_OK);
  ck_assert_int_eq(
      ft__slot_validate(s.map, s.map_bytes, "job-b", "img", msg, sizeof(msg)),
      FT_EMISMATCH);
  ck_msg_has(msg, "img: belongs to job '" JOB "', not to job 'job-b'");
  ck_assert_int_eq(ft__slot_validate(s.map, sizeof(ft__slot_hdr_t) - 1, JOB,
                                     "img", msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_msg_has(msg, "too short for a slot header");
  ck_assert_int_eq(ft__slot_validate(s.map, 0, JOB, "img", msg, sizeof(msg)),
                   FT_ECORRUPT);
  /* a tiny message buffer is cut, not overrun */
  char tiny[8];
  memset(tiny, '#', sizeof(tiny));
  ck_assert_int_eq(ft__slot_validate(s.map, 0, JOB, "img", tiny, 5),
                   FT_ECORRUPT);
  ck_assert_str_eq(tiny, "img:");
  ck_assert_int_eq(tiny[5], '#');
  ck_assert_int_eq(ft__slot_validate(s.map, 0, JOB, "img", NULL, 0),
                   FT_ECORRUPT);
  ft__slot_close(&s);
}
END_TEST

/* ================= the header checksum ================= */

/* One byte of a header field of a committed slot, flipped on disk (xor
 * mask): the slot is refused (FT_ECORRUPT) with a message that names the
 * file and says what failed.  Every field that steers a read is covered:
 * identity (magic, format, job, version, step, epoch), every size and
 * offset, the code, the rank table and the whole chunk CRC table (entries
 * past k+m included); the state word checks itself (store.h).  Without the
 * checksum, a flipped rank offset would read another region while every
 * chunk CRC passed. */
typedef struct hdr_flip {
  const char *name;
  size_t off;
  uint8_t mask;
  const char *want;
} hdr_flip_t;

#define HDR_OFF(f) offsetof(ft__slot_hdr_t, f)
#define FLIP(f, extra)                                                         \
  { #f "+" #extra, HDR_OFF(f) + (extra), 0xff, "header checksum" }
/* The state word follows the format word (offset 12, see no-silent-fresh). */
#define STATE_OFF (HDR_OFF(format) + 4)

static const hdr_flip_t hdr_flips[] = {
    {"magic", 0, 0xff, "bad magic"},
    FLIP(format, 0),
    FLIP(format, 3),
    {"state COMMITTED -> EMPTY", STATE_OFF, 0x04, "slot state"},
    {"state COMMITTED -> ENCODED", STATE_OFF, 0x07, "slot state"},
    {"state high byte", STATE_OFF + 3, 0x01, "slot state"},
    FLIP(job, 0),
    FLIP(job, 5), /* its NUL */
    FLIP(job, FT_JOB_MAX - 1),
    FLIP(version, 0),
    FLIP(version, 7),
    FLIP(step, 0),
    FLIP(step, 4),
    FLIP(epoch, 0),
    FLIP(seg_bytes, 1),
    FLIP(data_off, 0),
    FLIP(data_bytes, 0),
    FLIP(parity_off, 1),
    FLIP(parity_bytes, 0),
    FLIP(chunk_bytes, 0),
    FLIP(k, 0),
    FLIP(m, 0),
    FLIP(nlocal, 0),
    FLIP(layout, 0),
    FLIP(rank_off, 0),
    FLIP(rank_off, 8 * 2 + 1),
    FLIP(rank_off, 8 * (FT_MAX_LOCAL - 1)), /* past nlocal */
    FLIP(rank_bytes, 0),
    FLIP(rank_bytes, 8 * 1 + 1),
    FLIP(crc, 0),
    FLIP(crc, 8 * 4 + 3),               /* a parity chunk's */
    FLIP(crc, 8 * (FT_MAX_CHUNKS - 1)), /* past k+m */
};
#undef FLIP

START_TEST(slot_header_flips) {
  const hdr_flip_t *f = &hdr_flips[_i];
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 1, &g);
  write_version(&s, 3);
  ft__slot_close(&s);
  char path[160], msg[512] = "";
  path_of(path, sizeof(path), "slot1");
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint8_t b;
  ck_assert_int_eq(pread(fd, &b, 1, (off_t)f->off), 1);
  b ^= f->mask;
  ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)f->off), 1);
  close(fd);
  int rc = ft__slot_open(&s, &sdir, 1, JOB, msg, sizeof(msg));
  ck_assert_msg(rc == FT_ECORRUPT,
                "%s flipped (byte %zu ^ 0x%02x): %s, "
                "expected FT_ECORRUPT (%s)",
                f->name, f->off, f->mask, ft_err_name(rc), rc ? msg : "opened");
  ck_assert_ptr_null(s.map);
  ck_msg_has(msg, path);
  ck_msg_has(msg, f->want);
}
END_TEST

/* What the checksum does not cover: the time stamps steer no read. */
START_TEST(slot_header_times_free) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  write_version(&s, 5);
  s.hdr->filled_ns ^= 0xff;
  s.hdr->committed_ns ^= 0xff00;
  ft__slot_close(&s);
  open_slot(&s, 0);
  ck_assert_uint_eq(ft__slot_state(&s), FT_SLOT_COMMITTED);
  ck_assert_uint_eq(s.hdr->version, 5);
  ft__slot_close(&s);
}
END_TEST

/* The state word: every state round-trips, and every word one flipped
 * byte away from a valid one is invalid (so is one that is all zero). */
START_TEST(state_word_flips) {
  ck_assert_uint_eq(ft__slot_state_decode(0), FT_SLOT_STATE_INVALID);
  for (uint32_t st = FT_SLOT_EMPTY; st <= FT_SLOT_COMMITTED; st++) {
    uint32_t w = ft__slot_state_word(st);
    ck_assert_uint_eq(ft__slot_state_decode(w), st);
    for (int byte = 0; byte < 4; byte++)
      for (uint32_t x = 1; x < 256; x++) {
        uint32_t bad = w ^ (x << (8 * byte));
        ck_assert_msg(ft__slot_state_decode(bad) == FT_SLOT_STATE_INVALID,
                      "state %u: word %08x decodes", st, bad);
      }
  }
  ck_assert_uint_eq(ft__slot_state_decode(ft__slot_state_word(5)),
                    FT_SLOT_STATE_INVALID);
  ck_assert_uint_eq(ft__slot_held(1, FT_SLOT_STATE_INVALID, 7), 0);
}
END_TEST

/* Where ft-chaos's `corrupt HOST header FIELD` and the shell tests flip
 * bytes (scripts/ft-chaos header_offset, tests/mpi/no-silent-fresh.sh). */
START_TEST(slot_header_offsets) {
  ck_assert_uint_eq(HDR_OFF(format), 8);
  ck_assert_uint_eq(HDR_OFF(state_word), 12);
  ck_assert_uint_eq(HDR_OFF(job), 16);
  ck_assert_uint_eq(HDR_OFF(version), 80);
  ck_assert_uint_eq(HDR_OFF(step), 88);
  ck_assert_uint_eq(HDR_OFF(epoch), 96);
  ck_assert_uint_eq(HDR_OFF(seg_bytes), 104);
  ck_assert_uint_eq(HDR_OFF(data_off), 112);
  ck_assert_uint_eq(HDR_OFF(data_bytes), 120);
  ck_assert_uint_eq(HDR_OFF(parity_off), 128);
  ck_assert_uint_eq(HDR_OFF(parity_bytes), 136);
  ck_assert_uint_eq(HDR_OFF(chunk_bytes), 144);
  ck_assert_uint_eq(HDR_OFF(k), 152);
  ck_assert_uint_eq(HDR_OFF(m), 156);
  ck_assert_uint_eq(HDR_OFF(nlocal), 160);
  ck_assert_uint_eq(HDR_OFF(rank_off), 168);
  ck_assert_uint_eq(HDR_OFF(rank_bytes), 168 + 8 * FT_MAX_LOCAL);
  ck_assert_uint_eq(HDR_OFF(crc), 168 + 16 * FT_MAX_LOCAL);
  ck_assert_uint_le(sizeof(ft__slot_hdr_t), FT_SLOT_HDR_BYTES);
}
END_TEST

static int reopens(int idx) {
  ft__slot_t s;
  int rc = ft__slot_open(&s, &sdir, idx, JOB, NULL, 0);
  ft__slot_close(&s);
  return rc;
}

/* Every writer of a covered field keeps the checksum, in the order the SMP
 * calls them; none blesses a header damaged in memory. */
START_TEST(slot_header_writers) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  ck_assert_int_eq(ft__slot_intact(&s), 1);
  ck_assert_int_eq(reopens(0), FT_OK);
  ft__slot_begin(&s, 6, 0, 2, 1);
  ck_assert_int_eq(reopens(0), FT_OK);
  fill_ranks(&s, 6, 0, 8);
  ft__slot_set_step(&s, 60);
  ck_assert_int_eq(reopens(0), FT_OK);
  uint64_t crc[3];
  for (uint32_t c = 0; c < 3; c++)
    crc[c] = ft__slot_chunk_crc(&s, c);
  ft__slot_set_data_crcs(&s, crc);
  ck_assert_int_eq(reopens(0), FT_OK);
  char msg[512] = "";
  ck_assert_int_eq(ft__slot_verify(&s, 0, 3, msg, sizeof(msg)), FT_OK);
  ft__slot_set_state(&s, FT_SLOT_LOCAL);
  fill_parity(&s, 6);
  ft__slot_seal_parity(&s);
  ft__slot_set_state(&s, FT_SLOT_ENCODED);
  ft__slot_set_state(&s, FT_SLOT_COMMITTED);
  ck_assert_int_eq(reopens(0), FT_OK);
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_OK);

  /* damaged in memory (a stray write to the mapping), then written to:
   * it stays refused, whichever writer comes next */
  s.hdr->rank_off[1] += 8;
  ck_assert_int_eq(ft__slot_intact(&s), 0);
  ft__slot_set_step(&s, 61);
  ft__slot_seal_data(&s);
  ft__slot_seal_parity(&s);
  ft__slot_set_data_crcs(&s, crc);
  ft__slot_begin(&s, 8, 80, 2, 1);
  ft__slot_set_state(&s, FT_SLOT_COMMITTED);
  ck_assert_int_eq(ft__slot_intact(&s), 0);
  ft__slot_close(&s);
  ck_assert_int_eq(ft__slot_open(&s, &sdir, 0, JOB, msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_msg_has(msg, "header checksum");
  /* made anew, it is whole again */
  create_slot(&s, 0, &g);
  ck_assert_int_eq(ft__slot_intact(&s), 1);
  ft__slot_close(&s);
  ck_assert_int_eq(reopens(0), FT_OK);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "slot");
  TCase *tc = tmpdir_tcase(s, "geometry", 60);
  tcase_add_test(tc, geom_local_regions);
  tcase_add_test(tc, geom_code_layout);
  tcase_add_test(tc, geom_refusals);
  tc = tmpdir_tcase(s, "state machine", 60);
  tcase_add_test(tc, state_names);
  tcase_add_test(tc, state_machine);
  tc = tmpdir_tcase(s, "damaged slot files", 60);
  tcase_add_loop_test(tc, slot_damaged, 0,
                      (int)(sizeof(slot_bad) / sizeof(slot_bad[0])));
  tcase_add_test(tc, slot_validate_bytes);
  tc = tmpdir_tcase(s, "header checksum", 60);
  tcase_add_loop_test(tc, slot_header_flips, 0,
                      (int)(sizeof(hdr_flips) / sizeof(hdr_flips[0])));
  tcase_add_test(tc, slot_header_times_free);
  tcase_add_test(tc, state_word_flips);
  tcase_add_test(tc, slot_header_offsets);
  tcase_add_test(tc, slot_header_writers);
  return s;
}
