/* The node metadata (snapshot/meta.h): written atomically (a temporary
 * file renamed into place, a reader of the old file undisturbed, a stale
 * temporary file ignored) and read back field for field, with no fixed
 * limit on nodes or buffers; and a clear error -- status and a message
 * naming the file and what is wrong -- for a missing file and for every
 * kind of damage to the file or to the bytes alone.  Each test works in
 * its own directory (tmpdir.h). */
#include <check.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ec/crc.h"
#include "ftrt.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* ================= metadata ================= */

/* A buffer recorded as a slice reaching past its global buffer is refused
 * when read (a re-slice would compute its range with a wrap-around). */
START_TEST(meta_slice_outside_global) {
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  char msg[512] = "";
  ft__buf_rec_t *br = &m->ranks[3].bufs[2];
  br->global_offset = br->global_bytes - br->bytes + 1;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, "buffer 2 of rank 11 is a slice outside its global buffer");
  br->global_offset = UINT64_MAX - 8; /* offset + bytes wraps */
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_ECORRUPT);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

START_TEST(meta_round_trip) {
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  char msg[512] = "", path[128], tmp[128];
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_str_eq(got->job, JOB);
  ck_assert_str_eq(got->host, "node07.cluster");
  ck_assert_uint_eq(got->epoch, 3);
  ck_assert_uint_eq(got->run, 0x8badf00ddeadbeefull);
  ck_assert_uint_eq(got->node, 2);
  ck_assert_uint_eq(got->nnodes, 5);
  ck_assert_uint_eq(got->ntrainers, 20);
  ck_assert_uint_eq(got->k, 3);
  ck_assert_uint_eq(got->m, 2);
  ck_assert_uint_eq(got->pos, 2);
  ck_assert_uint_eq(got->group_size, 5);
  ck_assert_uint_eq(got->nlocal, 4);
  ck_assert_uint_eq(got->ranks[3].rank, 11);
  ck_assert_uint_eq(got->ranks[3].nbufs, 4);
  ck_assert_uint_eq(got->ranks[2].nbufs, 0);
  ck_assert_str_eq(got->ranks[3].bufs[1].name, "layer1.bias");
  ck_assert_str_eq(got->ranks[3].bufs[2].name, "layer2.weight");
  ck_assert_uint_eq(got->ranks[3].bufs[2].bytes, 3003);
  ck_assert_uint_eq(got->ranks[3].bufs[2].global_offset, 3 * 3003);
  ck_assert_uint_eq(got->ranks[3].bufs[2].global_bytes, 4 * 3003);
  ck_assert_uint_eq(got->ranks[1].bufs[1].memory, 1);
  ck_assert_uint_eq(got->ranks[1].region_bytes, m->ranks[1].region_bytes);
  ck_assert_str_eq(got->hosts[0], "node05.cluster");
  ck_assert_str_eq(got->hosts[4], "node09.cluster");
  ck_assert_msg(ft__meta_equal(m, got), "decoded metadata differs");

  /* atomic: the temp file is gone, and a second write replaces the file
   * (a reader holding the old one keeps reading the old bytes) */
  path_of(path, sizeof(path), "meta");
  path_of(tmp, sizeof(tmp), "meta.tmp");
  ck_assert_int_eq(access(tmp, F_OK), -1);
  struct stat st1, st2;
  ck_assert_int_eq(stat(path, &st1), 0);
  ck_assert_uint_eq(st1.st_mode & 0777, 0600);
  int old = open(path, O_RDONLY);
  ck_assert_int_ge(old, 0);
  uint8_t first[16];
  ck_assert_int_eq(read(old, first, 16), 16);

  m->epoch = 4;
  m->nlocal = 1;
  snprintf(m->host, sizeof(m->host), "node08");
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(access(tmp, F_OK), -1);
  ck_assert_int_eq(stat(path, &st2), 0);
  ck_assert_uint_ne(st1.st_ino, st2.st_ino);
  ck_assert_uint_lt(st2.st_size, st1.st_size);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 4);
  ck_assert_uint_eq(got->nlocal, 1);
  ck_assert_str_eq(got->host, "node08");
  ck_assert_uint_eq(got->ranks[1].nbufs, 0); /* nothing left from before */
  struct stat ost;
  ck_assert_int_eq(fstat(old, &ost), 0);
  ck_assert_uint_eq(ost.st_ino, st1.st_ino);
  ck_assert_int_eq(ost.st_size, st1.st_size);
  close(old);

  /* a stale temp file from a crashed writer is ignored, then replaced */
  FILE *f = fopen(tmp, "w");
  ck_assert_ptr_nonnull(f);
  fputs("garbage from a crash", f);
  fclose(f);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 4);
  m->epoch = 5;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(access(tmp, F_OK), -1);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 5);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

/* No fixed limit on nodes or buffers: 10,000 nodes and 64 ranks of 1,000
 * buffers each are written and read back whole. */
START_TEST(meta_large_tables) {
  enum { NODES = 10000, BUFS = 1000 };
  ft__meta_t *m = calloc(1, sizeof(*m)), *got = calloc(1, sizeof(*got));
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_nonnull(got);
  snprintf(m->job, sizeof(m->job), JOB);
  ck_assert_int_eq(ft__meta_alloc_hosts(m, NODES), FT_OK);
  m->node = NODES - 1, m->group = NODES / 6 - 1;
  m->k = 4, m->m = 2, m->pos = 3, m->nlocal = FT_MAX_LOCAL;
  m->epoch = m->layout = 1;
  m->group_size = 6;
  for (uint32_t n = 0; n < NODES; n++)
    snprintf(m->hosts[n], FT_NAME_MAX, "host%05u.rack%02u", n, n % 50);
  for (uint32_t r = 0; r < FT_MAX_LOCAL; r++) {
    ck_assert_int_eq(ft__meta_alloc_bufs(m, r, BUFS), FT_OK);
    m->ranks[r].rank = r;
    m->ranks[r].region_bytes = BUFS;
    for (uint32_t b = 0; b < BUFS; b++) {
      snprintf(m->ranks[r].bufs[b].name, FT_NAME_MAX, "r%u.layer%u.exp_avg", r,
               b);
      m->ranks[r].bufs[b].offset = b;
      m->ranks[r].bufs[b].bytes = 1;
    }
  }
  char msg[512] = "";
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->nnodes, NODES);
  ck_assert_str_eq(got->hosts[NODES - 1], "host09999.rack49");
  ck_assert_uint_eq(got->ranks[63].nbufs, BUFS);
  ck_assert_str_eq(got->ranks[63].bufs[BUFS - 1].name, "r63.layer999.exp_avg");
  ck_assert(ft__meta_equal(m, got));
  /* read again into the same struct: the old tables are released (ASan,
   * valgrind) and the new ones sized by the new file */
  m->nlocal = 1;
  ck_assert_int_eq(ft__meta_alloc_hosts(m, 7), FT_OK);
  m->node = 6, m->group = 1;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->nnodes, 7);
  ck_assert_ptr_null(got->ranks[1].bufs);
  ck_assert(ft__meta_equal(m, got));
  /* the rank count is the slot format's (FT_MAX_LOCAL); a count whose
   * table is not there is refused, never read past */
  m->nlocal = FT_MAX_LOCAL + 1;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_ERANGE);
  ck_msg_has(msg, "meta: cannot encode");
  m->nlocal = 1;
  free(m->ranks[0].bufs); /* the default allocator */
  m->ranks[0].bufs = NULL;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_EINVAL);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

START_TEST(meta_missing) {
  ft__meta_t *got = calloc(1, sizeof(*got));
  char msg[512] = "", path[128];
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_ENOENT);
  path_of(path, sizeof(path), "meta");
  ck_msg_has(msg, path);
  /* a directory where the file should be */
  ck_assert_int_eq(mkdir(path, 0700), 0);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_EIO);
  ck_msg_has(msg, path);
  ck_msg_has(msg, "read");
  /* writing into a directory that does not exist */
  ft__meta_t *m = sample_meta();
  path_of(path, sizeof(path), "nodir");
  ft__dir_t nodir;
  ck_assert_int_eq(ft__dir_open(&nodir, path, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "nodir");
  ck_assert_int_eq(ft__meta_write(&nodir, m, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "nodir/meta.tmp");
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

/* The wire form of the metadata (snapshot/meta.c): a 224-byte fixed part,
 * nnodes host names of 64 bytes, then per rank 16 bytes and nbufs records,
 * then a CRC64 of all before it.  The sample has 5 nodes. */
enum {
  M_FORMAT = 8,
  M_FLAGS = 12,
  M_TOTAL = 16,
  M_JOB = 24,
  M_HOST = 88,
  M_NODE = 160,
  M_NNODES = 164,
  M_K = 172,
  M_M = 176,
  M_NLOCAL = 192,
  M_LAYOUT = 208,
  M_NEXT_NODE = 216,
  M_NEXT_NNODES = 220,
  M_FIXED = 224,
  M_HOSTS = M_FIXED,
  R_FIXED = 16
};

static uint8_t *mbuf;
static size_t mlen;

static void put32(size_t off, uint32_t v) { memcpy(mbuf + off, &v, 4); }
static void put64(size_t off, uint64_t v) { memcpy(mbuf + off, &v, 8); }
static void refix(void) { /* make total and CRC consistent again */
  put64(M_TOTAL, mlen);
  put64(mlen - 8, ft__crc64(0, mbuf, mlen - 8));
}
/* Offset of rank r's fixed part in the sample. */
static size_t rank_at(uint32_t r) {
  static const uint32_t nbufs[4] = {1, 2, 0, 4};
  size_t off = M_HOSTS + 5 * FT_NAME_MAX;
  for (uint32_t i = 0; i < r; i++)
    off += R_FIXED + nbufs[i] * sizeof(ft__buf_rec_t);
  return off;
}
static size_t buf_at(uint32_t r, uint32_t b) {
  return rank_at(r) + R_FIXED + b * sizeof(ft__buf_rec_t);
}

static void m_trunc0(void) { mlen = 0; }
static void m_trunc100(void) { mlen = 100; }
static void m_trunc_half(void) { mlen /= 2; }
static void m_trunc_crc(void) { mlen -= 1; }
static void m_magic(void) { memcpy(mbuf, "FTRTSLOT", 8); }
static void m_format(void) { put32(M_FORMAT, 9), refix(); }
static void m_flip_body(void) { mbuf[M_HOST + 3] ^= 4; }
static void m_flip_crc(void) { mbuf[mlen - 1] ^= 1; }
static void m_nlocal_less(void) { put32(M_NLOCAL, 3), refix(); }
static void m_extra(void) {
  mlen += 8;
  memset(mbuf + mlen - 16, 0, 8);
  refix();
}
static void m_nlocal_more(void) { put32(M_NLOCAL, 5), refix(); }
static void m_nlocal_65(void) { put32(M_NLOCAL, 65), refix(); }
static void m_k0(void) { put32(M_K, 0), refix(); }
static void m_km_256(void) { put32(M_K, 250), put32(M_M, 6), refix(); }
static void m_km_wrap(void) { put32(M_M, UINT32_MAX), refix(); }
static void m_node(void) { put32(M_NODE, 5), refix(); }
static void m_nnodes0(void) { put32(M_NNODES, 0), put32(M_NODE, 0), refix(); }
/* The versions a metadata describes: a layout epoch after its epoch, or
 * none, describes nothing sane; a re-slice target must fit the nodes. */
static void m_layout0(void) { put64(M_LAYOUT, 0), refix(); }
static void m_layout_late(void) { put64(M_LAYOUT, 4), refix(); }
static void m_next_node(void) {
  put32(M_FLAGS, FT_META_RESLICE), put32(M_NEXT_NODE, 3),
      put32(M_NEXT_NNODES, 3), refix();
}
static void m_next_more(void) {
  put32(M_FLAGS, FT_META_RESLICE), put32(M_NEXT_NODE, 0),
      put32(M_NEXT_NNODES, 6), refix();
}
static void m_job_unterminated(void) {
  memset(mbuf + M_JOB, 'j', FT_JOB_MAX), refix();
}
static void m_host_unterminated(void) {
  memset(mbuf + M_HOST, 'h', FT_NAME_MAX), refix();
}
static void m_nbufs_257(void) { put32(rank_at(1) + 4, UINT32_MAX), refix(); }
static void m_nbufs_more(void) { put32(rank_at(3) + 4, 5), refix(); }
static void m_buf_past_region(void) {
  /* rank 9 buffer 1: offset so that it ends one byte past the region */
  ft__buf_rec_t br;
  memcpy(&br, mbuf + buf_at(1, 1), sizeof(br));
  uint64_t region;
  memcpy(&region, mbuf + rank_at(1) + 8, 8);
  put64(buf_at(1, 1) + offsetof(ft__buf_rec_t, offset), region - br.bytes + 1);
  refix();
}
static void m_buf_huge(void) {
  put64(buf_at(3, 0) + offsetof(ft__buf_rec_t, bytes), UINT64_MAX), refix();
}
static void m_buf_offset_wrap(void) {
  put64(buf_at(3, 2) + offsetof(ft__buf_rec_t, offset), UINT64_MAX), refix();
}
static void m_host_name(void) {
  memset(mbuf + M_HOSTS + 3 * FT_NAME_MAX, 'n', FT_NAME_MAX), refix();
}
/* No fixed node limit: a count is refused only because the bytes do not
 * hold its host table -- before anything is allocated for it. */
static void m_nnodes_max(void) { put32(M_NNODES, UINT32_MAX), refix(); }
static void m_nnodes_no_room(void) { put32(M_NNODES, 1000), refix(); }
static void m_buf_name(void) {
  memset(mbuf + buf_at(0, 0), 'n', FT_NAME_MAX), refix();
}

static const struct {
  const char *what;
  void (*damage)(void);
  int status;
  const char *want1, *want2;
} meta_bad[] = {
    {"empty", m_trunc0, FT_ECORRUPT, "0 bytes, too short", "truncated"},
    {"100 bytes", m_trunc100, FT_ECORRUPT, "100 bytes, too short", "truncated"},
    {"half", m_trunc_half, FT_ECORRUPT, "but the header says", "truncated?"},
    {"one byte short", m_trunc_crc, FT_ECORRUPT, "but the header says",
     "truncated?"},
    {"bad magic", m_magic, FT_ECORRUPT, "bad magic", "not ftrt metadata"},
    {"other format", m_format, FT_EMISMATCH, "store format 9",
     "reads format 3"},
    {"flipped byte", m_flip_body, FT_ECORRUPT, "CRC mismatch", "meta"},
    {"flipped CRC", m_flip_crc, FT_ECORRUPT, "CRC mismatch", "meta"},
    {"rank table after the last rank", m_nlocal_less, FT_ECORRUPT,
     "unexpected trailing bytes", "trailing"},
    {"8 bytes appended", m_extra, FT_ECORRUPT, "8 unexpected trailing bytes",
     "meta"},
    {"rank table missing", m_nlocal_more, FT_ECORRUPT, "rank table truncated",
     "meta"},
    {"65 ranks", m_nlocal_65, FT_ECORRUPT, "fields out of range", "meta"},
    {"k = 0", m_k0, FT_ECORRUPT, "fields out of range", "meta"},
    {"k + m = 256", m_km_256, FT_ECORRUPT, "fields out of range", "meta"},
    {"k + m wraps", m_km_wrap, FT_ECORRUPT, "fields out of range", "meta"},
    {"node >= nnodes", m_node, FT_ECORRUPT, "fields out of range", "meta"},
    {"no nodes", m_nnodes0, FT_ECORRUPT, "fields out of range", "meta"},
    {"layout epoch 0", m_layout0, FT_ECORRUPT, "fields out of range", "meta"},
    {"layout after epoch", m_layout_late, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"re-slice node outside", m_next_node, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"re-slice onto more nodes", m_next_more, FT_ECORRUPT,
     "fields out of range", "meta"},
    {"job unterminated", m_job_unterminated, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"host unterminated", m_host_unterminated, FT_ECORRUPT,
     "fields out of range", "meta"},
    {"host name unterminated", m_host_name, FT_ECORRUPT,
     "host name 3 not terminated", "meta"},
    {"2^32 - 1 nodes", m_nnodes_max, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"host table missing", m_nnodes_no_room, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"2^32 - 1 buffers", m_nbufs_257, FT_ECORRUPT, "buffer table of rank 9 bad",
     "meta"},
    {"more buffers than bytes", m_nbufs_more, FT_ECORRUPT,
     "buffer table of rank 11 bad", "meta"},
    {"buffer past its region", m_buf_past_region, FT_ECORRUPT,
     "buffer 1 of rank 9", "lies outside its region"},
    {"buffer larger than its region", m_buf_huge, FT_ECORRUPT,
     "buffer 0 of rank 11", "lies outside its region"},
    {"buffer offset wraps", m_buf_offset_wrap, FT_ECORRUPT,
     "buffer 2 of rank 11", "lies outside its region"},
    {"buffer name unterminated", m_buf_name, FT_ECORRUPT,
     "name of buffer 0 of rank 8", "not terminated"},
};

START_TEST(meta_damaged) {
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  ck_assert_int_eq(ft__meta_encode(m, &mbuf, &mlen), FT_OK);
  /* the layout the damage functions assume */
  ck_assert_uint_eq(mlen, rank_at(4) + 8);
  ck_assert_int_eq(memcmp(mbuf, "FTRTMETA", 8), 0);
  uint64_t total;
  memcpy(&total, mbuf + M_TOTAL, 8);
  ck_assert_uint_eq(total, mlen);
  ck_assert_int_eq(memcmp(mbuf + M_JOB, JOB, sizeof(JOB)), 0);
  ck_assert_str_eq((const char *)mbuf + M_HOSTS + FT_NAME_MAX,
                   "node06.cluster");
  uint32_t v;
  memcpy(&v, mbuf + M_NLOCAL, 4);
  ck_assert_uint_eq(v, 4);
  memcpy(&v, mbuf + rank_at(3), 4);
  ck_assert_uint_eq(v, 11);
  ck_assert_str_eq((const char *)mbuf + buf_at(3, 1), "layer1.bias");

  mbuf = realloc(mbuf, mlen + 64); /* room for appended bytes */
  meta_bad[_i].damage();
  char path[128], msg[512] = "";
  path_of(path, sizeof(path), "meta");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(mbuf, 1, mlen, f), mlen);
  fclose(f);
  int rc = ft__meta_read(&sdir, got, msg, sizeof(msg));
  ck_assert_msg(rc == meta_bad[_i].status, "%s: status %s, want %s (%s)",
                meta_bad[_i].what, ft_err_name(rc),
                ft_err_name(meta_bad[_i].status), msg);
  ck_msg_has(msg, path);
  ck_msg_has(msg, meta_bad[_i].want1);
  ck_msg_has(msg, meta_bad[_i].want2);
  /* and the bytes alone, without a file */
  rc = ft__meta_decode(mbuf, mlen, got, "mem", msg, sizeof(msg));
  ck_assert_int_eq(rc, meta_bad[_i].status);
  ck_assert(strncmp(msg, "mem: ", 5) == 0);
  free(mbuf);
  mbuf = NULL;
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "meta");
  TCase *tc = tmpdir_tcase(s, "metadata file", 60);
  tcase_add_test(tc, meta_slice_outside_global);
  tcase_add_test(tc, meta_round_trip);
  tcase_add_test(tc, meta_large_tables);
  tcase_add_test(tc, meta_missing);
  tc = tmpdir_tcase(s, "damaged metadata", 60);
  tcase_add_loop_test(tc, meta_damaged, 0,
                      (int)(sizeof(meta_bad) / sizeof(meta_bad[0])));
  return s;
}
