/* Out of memory, the way libuv's test-loop-oom does it: ft_replace_allocator
 * puts a budget allocator under the library, and for budget = 0, 1, 2, ...
 * allocations each operation is tried again until it succeeds.  Every
 * earlier attempt must fail with exactly FT_ENOMEM (a message saying so
 * where the call has one) and leave no block allocated; the one that
 * succeeds must give the same answer as with plenty of memory.  Each loop
 * must see at least one failure, so that none passes because nothing was
 * allocated through the hook.  Files are written beforehand with the normal
 * allocator, in a directory under /tmp removed at the end. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ec/codec.h"
#include "ec/layout.h"
#include "ftrt.h"
#include "snapshot/store.h"
#include "tests/unit/budget.h"
#include "tests/unit/check_main.h"
#include "tests/unit/tmpdir.h"

#define JOB "job-oom"
#define MAX_BUDGET 1000

/* The budget allocator is budget.h's. */

/*
 * The loop: attempt() runs one operation and undoes it (frees what it got);
 * it returns the operation's status.  Returns the number of failed attempts;
 * asserts that each was FT_ENOMEM with nothing left allocated, and that the
 * operation succeeded within MAX_BUDGET allocations.
 */
typedef int (*attempt_fn)(void *arg);

static int oom_loop(const char *what, attempt_fn attempt, void *arg) {
  int failures = 0;
  for (long n = 0;; n++) {
    ck_assert_msg(n <= MAX_BUDGET, "%s: still failing with %d allocations",
                  what, MAX_BUDGET);
    oom_live = 0;
    oom_use_budget(n);
    int rc = attempt(arg);
    oom_use_default();
    ck_assert_msg(oom_live == 0, "%s, budget %ld: %ld block(s) leaked (%s)",
                  what, n, oom_live, ft_err_name(rc));
    if (rc == FT_OK)
      return failures;
    ck_assert_msg(rc == FT_ENOMEM, "%s, budget %ld: %s, not FT_ENOMEM", what, n,
                  ft_err_name(rc));
    ck_assert_msg(oom_refused > 0,
                  "%s, budget %ld: FT_ENOMEM but nothing refused", what, n);
    failures++;
  }
}

/* ---- per-test directory (tmpdir.h) ---- */

/* With CK_FORK=no a failed test does not end a process: put the default
 * allocator back whatever happened. */
static void teardown(void) {
  ft_replace_allocator(malloc, realloc, calloc, free);
  rm_tree(dir);
}

/* ---- the replacement itself ---- */

START_TEST(replace_refuses_null) {
  ck_assert_int_eq(ft_replace_allocator(NULL, realloc, calloc, free),
                   FT_EINVAL);
  ck_assert_int_eq(ft_replace_allocator(malloc, NULL, calloc, free), FT_EINVAL);
  ck_assert_int_eq(ft_replace_allocator(malloc, realloc, NULL, free),
                   FT_EINVAL);
  ck_assert_int_eq(ft_replace_allocator(malloc, realloc, calloc, NULL),
                   FT_EINVAL);
  ck_assert_int_eq(ft_replace_allocator(NULL, NULL, NULL, NULL), FT_EINVAL);
  /* a refused replacement keeps the allocator in place */
  oom_live = 0;
  oom_use_budget(-1);
  ck_assert_int_eq(ft_replace_allocator(oom_malloc, NULL, oom_calloc, oom_free),
                   FT_EINVAL);
  void *p = ft__malloc(10), *q = ft__calloc(3, 4);
  ck_assert_int_eq(oom_live, 2);
  p = ft__realloc(p, 1000);
  ck_assert_int_eq(oom_live, 2);
  ft__free(p);
  ft__free(q);
  ft__free(NULL);
  ck_assert_int_eq(oom_live, 0);
  /* zero bytes are asked as one: NULL only ever means out of memory */
  p = ft__malloc(0);
  q = ft__calloc(0, 8);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(q);
  ft__free(p);
  ft__free(q);
  /* an empty budget refuses, and realloc leaves the block alone */
  p = ft__malloc(4);
  memcpy(p, "abc", 4);
  oom_budget = 0;
  ck_assert_ptr_null(ft__malloc(1));
  ck_assert_ptr_null(ft__calloc(1, 1));
  ck_assert_ptr_null(ft__realloc(p, 64));
  ck_assert_str_eq(p, "abc");
  ft__free(p);
  ck_assert_int_eq(oom_live, 0);
  oom_use_default();
}
END_TEST

/* ---- codec ---- */

static const int codes[][2] = {{1, 0}, {3, 1}, {4, 2}, {10, 4}, {200, 55}};

typedef struct codec_try {
  int k, m;
} codec_try_t;

/* Create, then prove the codec whole with no allocation allowed at all:
 * encode and decode must not need memory (codec.h). */
static int try_codec(void *arg) {
  const codec_try_t *t = arg;
  ft__codec_t *c = (ft__codec_t *)&c; /* anything but NULL: must be reset */
  int rc = ft__codec_create(t->k, t->m, &c);
  if (rc != FT_OK) {
    ck_assert_ptr_null(c);
    return rc;
  }
  oom_budget = 0;
  enum { LEN = 96 };
  static uint8_t buf[FT_EC_MAX_CHUNKS][LEN], want[LEN];
  uint8_t *chunks[FT_EC_MAX_CHUNKS];
  int n = t->k + t->m;
  for (int i = 0; i < n; i++) {
    chunks[i] = buf[i];
    for (int b = 0; b < LEN; b++)
      buf[i][b] = (uint8_t)(i * 31 + b * 7 + 1);
  }
  ck_assert_int_eq(
      ft__codec_encode(c, LEN, (const uint8_t *const *)chunks, chunks + t->k),
      FT_OK);
  if (t->m > 0) {
    int erased[1] = {0};
    memcpy(want, buf[0], LEN);
    memset(buf[0], 0, LEN);
    ck_assert_int_eq(ft__codec_decode(c, LEN, chunks, erased, 1), FT_OK);
    ck_assert_int_eq(memcmp(buf[0], want, LEN), 0);
  }
  ck_assert_int_eq(oom_refused, 0);
  ft__codec_destroy(c);
  return FT_OK;
}

START_TEST(oom_codec) {
  codec_try_t t = {codes[_i][0], codes[_i][1]};
  char what[64];
  snprintf(what, sizeof(what), "ft__codec_create(%d, %d)", t.k, t.m);
  ck_assert_int_gt(oom_loop(what, try_codec, &t), 0);
}
END_TEST

/* ---- node metadata ---- */

static ft__meta_t *sample_meta(uint32_t node) {
  ft__meta_t *m = calloc(1, sizeof(*m));
  ck_assert_ptr_nonnull(m);
  snprintf(m->job, sizeof(m->job), JOB);
  snprintf(m->host, sizeof(m->host), "node%02u", node);
  m->epoch = 4, m->layout = 2;
  ck_assert_int_eq(ft__meta_alloc_hosts(m, 6), FT_OK);
  m->node = node, m->ntrainers = 12;
  m->k = 2, m->m = 1, m->group = node / 3, m->pos = node % 3;
  m->group_size = 3;
  m->nlocal = 2;
  for (uint32_t n = 0; n < m->nnodes; n++)
    snprintf(m->hosts[n], FT_NAME_MAX, "node%02u", n);
  for (uint32_t r = 0; r < m->nlocal; r++) {
    ft__rank_rec_t *rr = &m->ranks[r];
    rr->rank = 2 * node + r;
    ck_assert_int_eq(ft__meta_alloc_bufs(m, r, 3), FT_OK);
    for (uint32_t b = 0; b < rr->nbufs; b++) {
      snprintf(rr->bufs[b].name, FT_NAME_MAX, "buf%u", b);
      rr->bufs[b].bytes = 100 + b;
      rr->bufs[b].offset = 128 * b;
    }
    rr->region_bytes = 4096;
  }
  return m;
}

typedef struct meta_try {
  const ft__meta_t *want;
  ft__meta_t *got;
  int pos; /* group.meta member, -1: dir/meta */
} meta_try_t;

static int try_meta_read(void *arg) {
  meta_try_t *t = arg;
  char msg[512] = "";
  int rc = t->pos < 0 ? ft__meta_read(&sdir, t->got, msg, sizeof(msg))
                      : ft__group_meta_read(&sdir, FT_GROUP_META, t->pos,
                                            t->got, msg, sizeof(msg));
  if (rc == FT_ENOMEM) {
    ck_msg_has(msg, "out of memory");
    ck_msg_has(msg, dir);
  } else if (rc == FT_OK) {
    ck_assert_msg(ft__meta_equal(t->got, t->want),
                  "metadata read under a budget differs");
  }
  ft__meta_clear(t->got); /* its tables: nothing left allocated */
  return rc;
}

START_TEST(oom_meta_read) {
  ft__meta_t *m = sample_meta(4);
  char msg[512] = "";
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  meta_try_t t = {m, calloc(1, sizeof(ft__meta_t)), -1};
  ck_assert_ptr_nonnull(t.got);
  ck_assert_int_gt(oom_loop("ft__meta_read", try_meta_read, &t), 0);
  free(t.got);
  ft__meta_free(m);
}
END_TEST

typedef struct bytes_try {
  const uint8_t *buf;
  size_t len;
  const ft__meta_t *want;
  ft__meta_t *got;
} bytes_try_t;

static int try_meta_decode(void *arg) {
  bytes_try_t *t = arg;
  char msg[512] = "";
  int rc = ft__meta_decode(t->buf, t->len, t->got, "meta", msg, sizeof(msg));
  if (rc == FT_OK)
    ck_assert_msg(ft__meta_equal(t->got, t->want), "decoded metadata differs");
  if (rc == FT_ENOMEM)
    ck_msg_has(msg, "out of memory");
  ft__meta_clear(t->got);
  return rc;
}

static int try_meta_encode(void *arg) {
  bytes_try_t *t = arg;
  uint8_t *buf = NULL;
  size_t len = 0;
  int rc = ft__meta_encode(t->want, &buf, &len);
  if (rc == FT_OK) {
    ck_assert_uint_eq(len, t->len);
    ck_assert_int_eq(memcmp(buf, t->buf, len), 0);
    ft__free(buf);
  }
  return rc;
}

/* Decoding allocates the host and buffer tables (sized by the job, not by
 * a fixed limit): each can fail, and a failure leaves nothing allocated.
 * Encoding allocates its buffer. */
START_TEST(oom_meta_codec) {
  ft__meta_t *m = sample_meta(1);
  bytes_try_t t = {.want = m, .got = calloc(1, sizeof(ft__meta_t))};
  ck_assert_ptr_nonnull(t.got);
  uint8_t *buf;
  ck_assert_int_eq(ft__meta_encode(m, &buf, &t.len), FT_OK);
  t.buf = buf;
  ck_assert_int_gt(oom_loop("ft__meta_decode", try_meta_decode, &t), 0);
  ck_assert_int_gt(oom_loop("ft__meta_encode", try_meta_encode, &t), 0);
  ft__free(buf);
  free(t.got);
  ft__meta_free(m);
}
END_TEST

typedef struct write_try {
  ft__meta_t *m;
  uint64_t old_epoch;
} write_try_t;

/* A write that fails for memory leaves the file as it was. */
static int try_meta_write(void *arg) {
  write_try_t *t = arg;
  char msg[512] = "";
  int rc = ft__meta_write(&sdir, t->m, msg, sizeof(msg));
  if (rc == FT_ENOMEM) {
    long saved = oom_budget;
    oom_budget = -1;
    ft__meta_t *now = calloc(1, sizeof(*now));
    ck_assert_ptr_nonnull(now);
    ck_assert_int_eq(ft__meta_read(&sdir, now, msg, sizeof(msg)), FT_OK);
    ck_assert_uint_eq(now->epoch, t->old_epoch);
    ft__meta_clear(now); /* its tables came through the hook, now did not */
    free(now);
    oom_budget = saved;
  }
  return rc;
}

START_TEST(oom_meta_write) {
  ft__meta_t *m = sample_meta(2);
  char msg[512] = "";
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  write_try_t t = {m, m->epoch};
  m->epoch = 5;
  ck_assert_int_gt(oom_loop("ft__meta_write", try_meta_write, &t), 0);
  ft__meta_t *got = calloc(1, sizeof(*got));
  ck_assert_ptr_nonnull(got);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 5);
  ft__meta_free(got);
  ft__meta_free(m);
}
END_TEST

/* group.meta of a 3-node group written with the normal allocator, then
 * member 1 read back under every budget. */
START_TEST(oom_group_meta_read) {
  ft__meta_t *m[3];
  uint8_t *parts[3];
  size_t lens[3];
  for (int i = 0; i < 3; i++) {
    m[i] = sample_meta((uint32_t)i + 3);
    ck_assert_int_eq(ft__meta_encode(m[i], &parts[i], &lens[i]), FT_OK);
  }
  char msg[512] = "";
  ck_assert_int_eq(ft__group_meta_write(&sdir, FT_GROUP_META,
                                        (const uint8_t *const *)parts, lens, 3,
                                        msg, sizeof(msg)),
                   FT_OK);
  meta_try_t t = {m[1], calloc(1, sizeof(ft__meta_t)), 1};
  ck_assert_ptr_nonnull(t.got);
  /* try_meta_read compared what it read with m[1] (node 4) */
  ck_assert_int_gt(oom_loop("ft__group_meta_read", try_meta_read, &t), 0);
  free(t.got);
  for (int i = 0; i < 3; i++) {
    ft__free(parts[i]);
    ft__meta_free(m[i]);
  }
}
END_TEST

/* ---- groups ---- */

typedef struct groups_try {
  const char *const *domains;
} groups_try_t;

static int try_groups(void *arg) {
  const groups_try_t *t = arg;
  ft__groups_t g;
  char msg[256] = "";
  int rc = ft__groups_form(11, t->domains, 3, 1, &g, msg, sizeof(msg));
  if (rc != FT_OK) { /* layout.h: zeroed on failure */
    ck_assert_ptr_null(g.group_of);
    ck_assert_ptr_null(g.members);
    return rc;
  }
  ck_assert_int_eq(g.ngroups, 2);
  ck_assert_int_eq(g.size[0] + g.size[1], 11);
  ft__groups_free(&g);
  return rc;
}

START_TEST(oom_groups) {
  /* two groups: no domain may hold more than two nodes (NULL: its own) */
  static const char *const doms[11] = {"r0", "r1", "r2", "r3", "r4", "r5",
                                       "r0", "r1", "r2", "r3", NULL};
  groups_try_t plain = {NULL}, dealt = {doms};
  ck_assert_int_gt(oom_loop("ft__groups_form", try_groups, &plain), 0);
  ck_assert_int_gt(oom_loop("ft__groups_form (domains)", try_groups, &dealt),
                   0);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "alloc");
  TCase *tc = tcase_create("alloc");
  tcase_add_checked_fixture(tc, tmpdir_setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, replace_refuses_null);
  tcase_add_loop_test(tc, oom_codec, 0,
                      (int)(sizeof(codes) / sizeof(codes[0])));
  tcase_add_test(tc, oom_meta_read);
  tcase_add_test(tc, oom_meta_codec);
  tcase_add_test(tc, oom_meta_write);
  tcase_add_test(tc, oom_group_meta_read);
  tcase_add_test(tc, oom_groups);
  suite_add_tcase(s, tc);
  return s;
}
