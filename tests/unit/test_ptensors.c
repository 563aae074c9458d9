/* A persisted version read as tensors (ft_persisted_*, persist/tensors.c),
 * on versions written with persist/'s writer: overlapping slices whose
 * bytes differ take each byte from the first slice by offset (the
 * re-slicing restore's rule), in whole reads and in ranges that cross
 * slices; slices listed by offset; tensors in rank, then registration,
 * order; ten ranks read in turns through the few files kept open; a
 * flipped byte fails only the reads that touch its block, and "latest"
 * then has nothing to open; a global tensor whose sizes disagree, a name
 * both private and a slice, and gaps (named, the first four) refused at
 * open; bad arguments. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "persist/persist.h"
#include "tests/unit/check_main.h"
#include "tests/unit/tmpdir.h"

#define JOB "job-t"

/* One registered buffer of a test version. */
typedef struct spec {
  uint32_t rank;
  const char *name;
  uint64_t bytes, goff, gbytes; /* gbytes 0: private */
} spec_t;

/* Byte i (of the global tensor for a slice) of a buffer of rank r: differs
 * between ranks, so that which replica was read shows. */
static uint8_t byte_of(uint32_t r, const char *name, uint64_t i) {
  return (uint8_t)(i * 7 + (uint64_t)name[0] * 31 + r * 101 + (i >> 12));
}

/* Version 1 of epoch 1, one node of nranks ranks holding specs[]. */
static void write_version(uint32_t nranks, const spec_t *s, size_t n) {
  char msg[512] = "", slot[128];
  ft__dir_t job, vd;
  ck_assert_int_eq(ft__persist_open(dir, JOB, 1, &job, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(ft__persist_mkvdir(&job, "v1.e1", &vd, msg, sizeof(msg)),
                   FT_OK);
  ft__pnode_t pn = {.run = 1,
                    .version = 1,
                    .step = 10,
                    .epoch = 1,
                    .nnodes = 1,
                    .ntrainers = nranks,
                    .nranks = nranks};
  snprintf(pn.job, sizeof(pn.job), JOB);
  pn.ranks = ft__calloc(nranks, sizeof(*pn.ranks));
  snprintf(slot, sizeof(slot), "%s/slot", dir);
  int fd = open(slot, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  uint8_t *buf = malloc(FT_PERSIST_BLOCK);
  for (uint32_t r = 0; r < nranks; r++) {
    ft__prank_t *pr = &pn.ranks[r];
    pr->rank = r;
    pr->bufs = ft__calloc(n + 1, sizeof(ft__buf_rec_t));
    for (size_t k = 0; k < n; k++) {
      if (s[k].rank != r)
        continue;
      ft__buf_rec_t *b = &pr->bufs[pr->nbufs++];
      snprintf(b->name, sizeof(b->name), "%s", s[k].name);
      b->bytes = s[k].bytes, b->offset = pr->bytes;
      b->global_offset = s[k].goff, b->global_bytes = s[k].gbytes;
      pr->bytes += b->bytes;
    }
    /* the rank's region at the start of the slot file, persisted before
     * the next rank's takes its place */
    uint8_t *region = malloc(pr->bytes + 1);
    for (uint32_t k = 0; k < pr->nbufs; k++) {
      const ft__buf_rec_t *b = &pr->bufs[k];
      for (uint64_t i = 0; i < b->bytes; i++)
        region[b->offset + i] = byte_of(r, b->name, b->global_offset + i);
    }
    ck_assert_int_eq(pwrite(fd, region, pr->bytes, 0), (ssize_t)pr->bytes);
    free(region);
    pr->block_crc = ft__calloc(ft__persist_blocks(pr->bytes) + 1, 8);
    ck_assert_int_eq(ft__persist_write_rank(&vd, pr, fd, 0, buf, NULL, NULL,
                                            msg, sizeof(msg)),
                     FT_OK);
  }
  int done = 0;
  ck_assert_int_eq(
      ft__persist_write_node(&vd, &pn, NULL, NULL, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__persist_complete(&vd, &pn, &done, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(done, 1);
  free(buf);
  close(fd);
  ft__pnode_clear(&pn);
  ft__dir_close(&vd);
  ft__dir_close(&job);
}

static ft_persisted_t *open_ok(const char *version) {
  ft_persisted_t *p = NULL;
  char msg[1024] = "";
  int rc = ft_persisted_open(dir, JOB, version, &p, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "%s: %s", ft_err_name(rc), msg);
  return p;
}

static size_t find(const ft_persisted_t *p, const char *name, int64_t rank) {
  ft_persisted_info_t in;
  ft_persisted_info(p, &in);
  for (size_t i = 0; i < in.ntensors; i++) {
    ft_persisted_tensor_t t;
    ck_assert_int_eq(ft_persisted_tensor(p, i, &t), FT_OK);
    if (strcmp(t.name, name) == 0 && t.rank == rank)
      return i;
  }
  ck_abort_msg("no tensor %s of rank %lld", name, (long long)rank);
  return 0;
}

/* ranks 0 [0,60), 2 [30,70), 1 [40,100) of "g": byte i from the first of
 * them by offset that holds it. */
static uint32_t owner(uint64_t i) { return i < 60 ? 0 : i < 70 ? 2 : 1; }

START_TEST(first_slice_wins) {
  const spec_t s[] = {
      {0, "g", 60, 0, 100}, {1, "g", 60, 40, 100}, {2, "g", 40, 30, 100}};
  write_version(3, s, 3);
  ft_persisted_t *p = open_ok("latest");
  size_t g = find(p, "g", -1);
  ft_persisted_tensor_t t;
  ft_persisted_tensor(p, g, &t);
  ck_assert(t.bytes == 100 && t.nslices == 3);
  uint32_t want_rank[] = {0, 2, 1};
  uint64_t want_off[] = {0, 30, 40};
  for (uint32_t j = 0; j < 3; j++) {
    ft_persisted_slice_t sl;
    ck_assert_int_eq(ft_persisted_slice(p, g, j, &sl), FT_OK);
    ck_assert(sl.rank == want_rank[j] && sl.global_offset == want_off[j]);
  }
  ft_persisted_slice_t sl;
  ck_assert_int_eq(ft_persisted_slice(p, g, 3, &sl), FT_ERANGE);
  uint8_t got[100];
  char msg[512];
  for (uint64_t a = 0; a < 100; a += 11)
    for (uint64_t b = a; b <= 100; b += 13) {
      memset(got, 0, sizeof(got));
      ck_assert_int_eq(ft_persisted_read(p, g, a, b - a, got, msg, sizeof(msg)),
                       FT_OK);
      for (uint64_t i = a; i < b; i++)
        ck_assert_msg(got[i - a] == byte_of(owner(i), "g", i),
                      "byte %llu of [%llu, %llu)", (unsigned long long)i,
                      (unsigned long long)a, (unsigned long long)b);
    }
  ck_assert_int_eq(ft_persisted_read(p, g, 90, 11, got, msg, sizeof(msg)),
                   FT_ERANGE);
  ck_assert_int_eq(ft_persisted_read(p, 99, 0, 1, got, msg, sizeof(msg)),
                   FT_ERANGE);
  ft_persisted_close(p);
}
END_TEST

/* Rank order, then each rank's registration order. */
START_TEST(order) {
  const spec_t s[] = {{1, "a", 3, 0, 0},    {0, "zz", 4, 0, 0},
                      {0, "b", 5, 0, 0},    {0, "glob", 2, 0, 4},
                      {1, "glob", 2, 2, 4}, {1, "none", 0, 0, 0}};
  write_version(2, s, 6);
  ft_persisted_t *p = open_ok("1");
  const char *names[] = {"zz", "b", "glob", "a", "none"};
  int64_t ranks[] = {0, 0, -1, 1, 1};
  ft_persisted_info_t in;
  ft_persisted_info(p, &in);
  ck_assert_int_eq(in.ntensors, 5);
  ck_assert_str_eq(in.dir, "v1.e1");
  ck_assert(in.version == 1 && in.step == 10 && in.nranks == 2);
  for (size_t i = 0; i < 5; i++) {
    ft_persisted_tensor_t t;
    ft_persisted_tensor(p, i, &t);
    ck_assert_str_eq(t.name, names[i]);
    ck_assert_int_eq(t.rank, ranks[i]);
  }
  ft_persisted_tensor_t t;
  ck_assert_int_eq(ft_persisted_tensor(p, 5, &t), FT_ERANGE);
  char msg[64];
  ck_assert_int_eq(ft_persisted_read(p, 4, 0, 0, NULL, msg, sizeof(msg)),
                   FT_OK);
  ft_persisted_close(p);
}
END_TEST

/* Ten ranks, read in turns: more files than are kept open. */
START_TEST(many_ranks) {
  spec_t s[20];
  char names[10][8];
  for (uint32_t r = 0; r < 10; r++) {
    snprintf(names[r], sizeof(names[r]), "p%u", r);
    s[2 * r] = (spec_t){r, names[r], 1000 + r, 0, 0};
    s[2 * r + 1] = (spec_t){r, "big", 300000, r * 300000, 3000000};
  }
  write_version(10, s, 20);
  ft_persisted_t *p = open_ok(NULL);
  uint8_t *got = malloc(3000000);
  char msg[512];
  for (int round = 0; round < 3; round++)
    for (uint32_t k = 0; k < 10; k++) {
      uint32_t r = (k * 7 + (uint32_t)round) % 10;
      size_t i = find(p, names[r], r);
      ck_assert_int_eq(
          ft_persisted_read(p, i, 0, 1000 + r, got, msg, sizeof(msg)), FT_OK);
      for (uint64_t j = 0; j < 1000 + r; j++)
        ck_assert_int_eq(got[j], byte_of(r, names[r], j));
    }
  size_t g = find(p, "big", -1);
  ck_assert_int_eq(ft_persisted_read(p, g, 0, 3000000, got, msg, sizeof(msg)),
                   FT_OK);
  for (uint64_t j = 0; j < 3000000; j++)
    ck_assert_int_eq(got[j], byte_of((uint32_t)(j / 300000), "big", j));
  free(got);
  ft_persisted_close(p);
}
END_TEST

/* A flipped byte in block 1 of rank 0's file. */
START_TEST(flipped_block) {
  const uint64_t n = FT_PERSIST_BLOCK + 5000;
  const spec_t s[] = {{0, "w", n, 0, 0}, {1, "v", 10, 0, 0}};
  write_version(2, s, 2);
  char path[256], msg[1024] = "";
  snprintf(path, sizeof(path), "%s/%s/v1.e1/rank0", dir, JOB);
  int fd = open(path, O_RDWR);
  uint8_t b;
  ck_assert_int_eq(pread(fd, &b, 1, (off_t)FT_PERSIST_BLOCK + 10), 1);
  b ^= 1;
  ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)FT_PERSIST_BLOCK + 10), 1);
  close(fd);
  ft_persisted_t *p = NULL;
  ck_assert_int_eq(ft_persisted_open(dir, JOB, "latest", &p, msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_assert_ptr_null(p);
  ck_msg_has(msg, "no complete version verifies: v1.e1 skipped: ");
  ck_msg_has(msg, "rank0: block 1");
  p = open_ok("v1.e1");
  uint8_t *got = malloc(n);
  size_t w = find(p, "w", 0), v = find(p, "v", 1);
  ck_assert_int_eq(ft_persisted_read(p, w, 0, 1000, got, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(ft_persisted_read(p, w, 0, n, got, msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_msg_has(msg, "rank0: block 1 (bytes 4194304..4199304) fails its CRC");
  ck_assert_int_eq(ft_persisted_read(p, v, 0, 10, got, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(got[9], byte_of(1, "v", 9));
  free(got);
  ft_persisted_close(p);
}
END_TEST

static void refused(const spec_t *s, size_t n, uint32_t nranks, int status,
                    const char *says) {
  write_version(nranks, s, n);
  ft_persisted_t *p = (ft_persisted_t *)1;
  char msg[1024] = "";
  ck_assert_int_eq(ft_persisted_open(dir, JOB, "1", &p, msg, sizeof(msg)),
                   status);
  ck_assert_ptr_null(p);
  ck_msg_has(msg, says);
}

START_TEST(sizes_disagree) {
  const spec_t s[] = {{0, "g", 50, 0, 100}, {1, "g", 50, 50, 120}};
  refused(s, 2, 2, FT_EMISMATCH,
          "global tensor 'g': rank 0 registered it with 100 bytes (kind 0), "
          "rank 1 with 120 (kind 0): not one tensor");
}
END_TEST

START_TEST(private_and_slice) {
  const spec_t s[] = {{0, "x", 50, 0, 0}, {1, "x", 50, 0, 50}};
  refused(s, 2, 2, FT_EMISMATCH,
          "'x' is private to rank 0 but a slice of a global tensor on rank 1");
}
END_TEST

START_TEST(gaps) {
  const spec_t s[] = {{0, "g", 10, 10, 50}, {1, "g", 10, 30, 50}};
  refused(s, 2, 2, FT_EMISMATCH,
          "global tensor 'g' (50 bytes): bytes 0..10, 20..30, 40..50 are in "
          "no rank's slice (slices: rank 0 at 10..20, rank 1 at 30..40)");
}
END_TEST

START_TEST(many_gaps) {
  spec_t s[6];
  for (uint32_t r = 0; r < 6; r++)
    s[r] = (spec_t){r, "g", 1, 2 * r + 1, 13};
  refused(s, 6, 6, FT_EMISMATCH,
          "bytes 0..1, 2..3, 4..5, 6..7 and more are in no rank's slice");
}
END_TEST

START_TEST(bad_arguments) {
  const spec_t s[] = {{0, "a", 1, 0, 0}};
  write_version(1, s, 1);
  ft_persisted_t *p = NULL;
  char msg[512] = "";
  ck_assert_int_eq(ft_persisted_open(NULL, JOB, NULL, &p, msg, sizeof(msg)),
                   FT_EINVAL);
  ck_assert_int_eq(ft_persisted_open(dir, "../x", NULL, &p, msg, sizeof(msg)),
                   FT_EINVAL);
  ck_assert_int_eq(ft_persisted_open(dir, JOB, NULL, NULL, msg, sizeof(msg)),
                   FT_EINVAL);
  ck_assert_int_eq(ft_persisted_open(dir, JOB, "v1", &p, msg, sizeof(msg)),
                   FT_EINVAL);
  ck_msg_has(msg, "version 'v1': expected 'latest'");
  ck_assert_int_eq(ft_persisted_open(dir, JOB, "v1.e2", &p, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_msg_has(msg, "no complete version 'v1.e2'; the newest is v1.e1");
  ck_assert_int_eq(ft_persisted_open(dir, "nojob", NULL, &p, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_ptr_null(p);
  ft_persisted_close(NULL);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "ptensors");
  TCase *tc = tmpdir_tcase(s, "ptensors", 120);
  tcase_add_test(tc, first_slice_wins);
  tcase_add_test(tc, order);
  tcase_add_test(tc, many_ranks);
  tcase_add_test(tc, flipped_block);
  tcase_add_test(tc, sizes_disagree);
  tcase_add_test(tc, private_and_slice);
  tcase_add_test(tc, gaps);
  tcase_add_test(tc, many_gaps);
  tcase_add_test(tc, bad_arguments);
  return s;
}
