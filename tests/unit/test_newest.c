/* The restore rule (snapshot/newest.h, docs/design.md section 4): the
 * double-buffer reuse rule the SMP applies (version V in slot V%2,
 * prepared once V-1 is committed) keeps the newest committed version whole
 * at every step and across a crash; which versions a node holds whole
 * (ft__slot_held, ft__slots_held: what the SMP and ft-restore offer to the
 * rule); and the rule itself (ft__newest_common, ft-restore's
 * ft__newest_committed), case by case, against a plain statement of it
 * over every small case, and over three nodes' real slot files.  Each test
 * works in its own directory (tmpdir.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrt.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* ================= the reuse rule ================= */

/* What restore agreement offers from one node (ft__slots_held, as the SMP
 * calls it) is exactly {slot 0, slot 1}. */
static void check_held(ft__slot_t sl[FT_NSLOTS], uint64_t want0, uint64_t want1,
                       const char *when) {
  uint64_t held[FT_NSLOTS] = {99, 99};
  ft__slots_held(sl, held);
  ck_assert_msg(held[0] == want0 && held[1] == want1,
                "%s: held {%llu, %llu}, expected {%llu, %llu}", when,
                (unsigned long long)held[0], (unsigned long long)held[1],
                (unsigned long long)want0, (unsigned long long)want1);
}

/* check_held for version v's slot holding `now` and the other slot v-1. */
static void check_held_v(ft__slot_t sl[FT_NSLOTS], uint64_t v, uint64_t now,
                         const char *when) {
  uint64_t want[FT_NSLOTS];
  want[v % FT_NSLOTS] = now;
  want[(v + 1) % FT_NSLOTS] = v - 1;
  check_held(sl, want[0], want[1], when);
}

/* At any point: the slot that holds the latest committed version is not the
 * one being filled, verifies against its CRCs, and holds its bytes -- as
 * seen through our mappings and by a process that opens the store afresh. */
static void check_committed_whole(ft__slot_t sl[FT_NSLOTS], uint64_t latest,
                                  const char *when) {
  if (latest == 0)
    return;
  int found = -1;
  for (int i = 0; i < FT_NSLOTS; i++) {
    uint32_t st = ft__slot_state(&sl[i]);
    if (st == FT_SLOT_COMMITTED)
      ck_assert_msg(sl[i].hdr->version <= latest,
                    "%s: slot %d claims committed version %llu > %llu", when, i,
                    (unsigned long long)sl[i].hdr->version,
                    (unsigned long long)latest);
    if (st == FT_SLOT_COMMITTED && sl[i].hdr->version == latest)
      found = i;
  }
  ck_assert_msg(found >= 0, "%s: version %llu committed but in no slot", when,
                (unsigned long long)latest);
  ck_assert_uint_eq(found, latest % FT_NSLOTS);
  for (int i = 0; i < FT_NSLOTS; i++)
    if (ft__slot_state(&sl[i]) == FT_SLOT_FILLING)
      ck_assert_msg(i != found, "%s: filling the committed slot", when);
  char msg[512] = "";
  const ft__slot_hdr_t *h = sl[found].hdr;
  int rc = ft__slot_verify(&sl[found], 0, h->k + h->m, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "%s: %s", when, msg);
  ck_assert_msg(holds(&sl[found], latest), "%s: bytes of version %llu changed",
                when, (unsigned long long)latest);
  ft__slot_t fresh;
  open_slot(&fresh, found);
  ck_assert_uint_eq(ft__slot_state(&fresh), FT_SLOT_COMMITTED);
  ck_assert_uint_eq(fresh.hdr->version, latest);
  ck_assert_int_eq(ft__slot_verify(&fresh, 0, h->k + h->m, msg, sizeof(msg)),
                   FT_OK);
  ck_assert(holds(&fresh, latest));
  ft__slot_close(&fresh);
}

/* prepare(V) of runtime/smp_version.c: slot V%2, allowed only when V-1 committed.
 * The SMP does not check this (it follows from the order in which it
 * prepares and commits); the test asserts it at every step. */
static ft__slot_t *prepare(ft__slot_t sl[FT_NSLOTS], uint64_t v,
                           uint64_t latest) {
  ft__slot_t *s = &sl[v % FT_NSLOTS], *other = &sl[(v + 1) % FT_NSLOTS];
  ck_assert_uint_eq(latest, v - 1);
  if (v > 1) {
    ck_assert_uint_eq(ft__slot_state(other), FT_SLOT_COMMITTED);
    ck_assert_uint_eq(other->hdr->version, v - 1);
  }
  ft__slot_begin(s, v, v * 10, 1, 1);
  return s;
}

START_TEST(reuse_rule) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    create_slot(&sl[i], i, &g);
  uint64_t latest = 0;
  char when[64];
  for (uint64_t v = 1; v <= 9; v++) {
    ft__slot_t *s = prepare(sl, v, latest);
    snprintf(when, sizeof(when), "v%llu begun", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, 0, when);
    fill_ranks(s, v, 0, 4);
    snprintf(when, sizeof(when), "v%llu half written", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, 0, when);
    fill_ranks(s, v, 4, 8);
    ft__slot_seal_data(s);
    ft__slot_set_state(s, FT_SLOT_LOCAL);
    snprintf(when, sizeof(when), "v%llu LOCAL", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, 0, when);
    fill_parity(s, v);
    ft__slot_seal_parity(s);
    ft__slot_set_state(s, FT_SLOT_ENCODED);
    snprintf(when, sizeof(when), "v%llu ENCODED", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, v, when);
    ft__slot_set_state(s, FT_SLOT_COMMITTED);
    latest = v;
    snprintf(when, sizeof(when), "v%llu COMMITTED", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, v, when);
  }
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&sl[i]);
}
END_TEST

/* A crash at each point of filling V (nothing after it runs; the mappings
 * just go away): the store on disk still holds V-1 committed and whole, and
 * restore offers V-1 (or V, once this node had encoded it). */
START_TEST(crash_mid_fill) {
  static const uint32_t crash_at[] = {FT_SLOT_EMPTY, FT_SLOT_FILLING,
                                      FT_SLOT_LOCAL, FT_SLOT_ENCODED};
  uint32_t at = crash_at[_i];
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    create_slot(&sl[i], i, &g);
  for (uint64_t v = 1; v <= 5; v++) {
    prepare(sl, v, v - 1);
    write_version(&sl[v % FT_NSLOTS], v);
  }
  /* version 6 goes to slot 0 and never finishes */
  ft__slot_t *s = prepare(sl, 6, 5);
  if (at >= FT_SLOT_FILLING)
    fill_ranks(s, 6, 0, at == FT_SLOT_FILLING ? 3 : 8);
  if (at >= FT_SLOT_LOCAL) {
    ft__slot_seal_data(s);
    ft__slot_set_state(s, FT_SLOT_LOCAL);
  }
  if (at >= FT_SLOT_ENCODED) {
    fill_parity(s, 6);
    ft__slot_seal_parity(s);
    ft__slot_set_state(s, FT_SLOT_ENCODED);
  }
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&sl[i]);

  ft__slot_t re[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    open_slot(&re[i], i);
  ck_assert_uint_eq(ft__slot_state(&re[0]),
                    at == FT_SLOT_EMPTY ? FT_SLOT_FILLING : at);
  ck_assert_uint_eq(re[0].hdr->version, 6);
  ck_assert_uint_eq(ft__slot_state(&re[1]), FT_SLOT_COMMITTED);
  ck_assert_uint_eq(re[1].hdr->version, 5);
  ck_assert_uint_eq(re[1].hdr->step, 50);
  check_committed_whole(re, 5, "after the crash");
  /* version 6 counts once this node had encoded it, and the restore rule
   * over this one node picks it then; 5 otherwise */
  check_held(re, at == FT_SLOT_ENCODED ? 6 : 0, 5, "after the crash");
  uint64_t held[FT_NSLOTS];
  ft__slots_held(re, held);
  ck_assert_uint_eq(ft__newest_common(held, 1, NULL),
                    at == FT_SLOT_ENCODED ? 6 : 5);
  if (at == FT_SLOT_ENCODED) {
    char msg[512];
    ck_assert_int_eq(ft__slot_verify(&re[0], 0, 5, msg, sizeof(msg)), FT_OK);
    ck_assert(holds(&re[0], 6));
  }
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&re[i]);
}
END_TEST

/* ================= what a node holds whole ================= */

/* Every state, open or not, at small and large versions: only an open slot
 * that reached ENCODED (or COMMITTED) holds its version. */
START_TEST(slot_held_states) {
  static const struct {
    uint32_t state;
    int counts;
  } st[] = {{FT_SLOT_EMPTY, 0},
            {FT_SLOT_FILLING, 0},
            {FT_SLOT_LOCAL, 0},
            {FT_SLOT_ENCODED, 1},
            {FT_SLOT_COMMITTED, 1}};
  static const uint64_t vers[] = {0, 1, 7, (1ull << 32) + 1, UINT64_MAX};
  for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
    for (size_t j = 0; j < sizeof(vers) / sizeof(vers[0]); j++) {
      uint64_t v = vers[j];
      ck_assert_msg(ft__slot_held(0, st[i].state, v) == 0,
                    "unopened %s slot of version %llu counted",
                    ft__slot_state_name(st[i].state), (unsigned long long)v);
      ck_assert_msg(ft__slot_held(1, st[i].state, v) == (st[i].counts ? v : 0),
                    "%s slot of version %llu: held %llu",
                    ft__slot_state_name(st[i].state), (unsigned long long)v,
                    (unsigned long long)ft__slot_held(1, st[i].state, v));
    }
}
END_TEST

/* A slot that is not mapped -- closed, never created, or refused on open
 * because it is damaged -- holds nothing, whatever its file says. */
START_TEST(slots_held_unmapped) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    create_slot(&sl[i], i, &g);
  write_version(&sl[0], 2);
  write_version(&sl[1], 3);
  check_held(sl, 2, 3, "both committed");
  ft__slot_close(&sl[0]);
  check_held(sl, 0, 3, "slot 0 closed");
  char path[160], msg[512] = "";
  path_of(path, sizeof(path), "slot0");
  ck_assert_int_eq(truncate(path, 100), 0);
  ck_assert_int_eq(ft__slot_open(&sl[0], &sdir, 0, JOB, msg, sizeof(msg)),
                   FT_ECORRUPT);
  check_held(sl, 0, 3, "slot 0 truncated");
  ft__slot_close(&sl[1]);
  check_held(sl, 0, 0, "both closed");
  ft__slot_t none[FT_NSLOTS];
  memset(none, 0, sizeof(none));
  check_held(none, 0, 0, "never opened");
}
END_TEST

/* ================= the restore rule ================= */

#define NC_NODES 4

/* with_ignore: pass ignore (else NULL); want: the exact answer. */
typedef struct nc_case {
  const char *name;
  int nnodes;
  uint64_t held[NC_NODES][FT_NSLOTS];
  int with_ignore;
  unsigned char ignore[NC_NODES];
  uint64_t want;
} nc_case_t;

#define MAX UINT64_MAX
#define P32 (1ull << 32)

/* One case a line. */
/* clang-format off */
static const nc_case_t nc_cases[] = {
  {"no node holds anything",     3, {{0, 0}, {0, 0}, {0, 0}}, 0, {0}, 0},
  {"no nodes",                   0, {{8, 7}},                 0, {0}, 0},
  {"every node holds v",         3, {{8, 0}, {8, 0}, {8, 0}}, 0, {0}, 8},
  {"every node holds v and v-1", 3, {{8, 7}, {7, 8}, {8, 7}}, 0, {0}, 8},
  {"{v, v-1} and {v-1}",         2, {{8, 7}, {7, 0}},         0, {0}, 7},
  {"{v-1, v} and {0, v-1}",      2, {{7, 8}, {0, 7}},         0, {0}, 7},
  {"a node holding nothing",     3, {{8, 7}, {8, 7}, {0, 0}}, 0, {0}, 0},
  {"the first holding nothing",  3, {{0, 0}, {8, 7}, {8, 7}}, 0, {0}, 0},
  /* ignore: spares and other nodes left out */
  {"spare holding nothing",      3, {{8, 7}, {8, 7}, {0, 0}}, 1, {0, 0, 1}, 8},
  {"spare holding older ones",   3, {{8, 7}, {8, 7}, {3, 2}}, 1, {0, 0, 1}, 8},
  {"spare holding a newer one",  3, {{5, 4}, {5, 4}, {9, 0}}, 1, {0, 0, 1}, 5},
  {"the node lacking v out",     3, {{8, 7}, {7, 6}, {8, 7}}, 1, {0, 1, 0}, 8},
  {"another node out",           3, {{8, 7}, {7, 6}, {8, 7}}, 1, {1, 0, 0}, 7},
  {"no flag set",                3, {{8, 7}, {7, 6}, {8, 7}}, 1, {0, 0, 0}, 7},
  {"every node left out",        2, {{8, 7}, {8, 7}},         1, {1, 1},    0},
  /* where in the two slots v and v-1 are */
  {"{v-1, v} / {v, v-1}",        2, {{7, 8}, {8, 7}},         0, {0}, 8},
  {"{v-1, v} / {0, v-1}",        2, {{7, 8}, {0, 7}},         0, {0}, 7},
  {"{v-1, v} / {0, v}",          2, {{7, 8}, {0, 8}},         0, {0}, 8},
  {"{v-1, v} / {v-1, 0}",        2, {{7, 8}, {7, 0}},         0, {0}, 7},
  {"{v, 0} / {0, v-1}",          2, {{8, 0}, {0, 7}},         0, {0}, 0},
  {"{0, v} / {v, 0}",            2, {{0, 8}, {8, 0}},         0, {0}, 8},
  {"{v, v} / {v, v-1}",          2, {{8, 8}, {8, 7}},         0, {0}, 8},
  /* one node */
  {"one node {v, v-1}",          1, {{8, 7}},                 0, {0}, 8},
  {"one node {v-1, v}",          1, {{7, 8}},                 0, {0}, 8},
  {"one node {0, v}",            1, {{0, 3}},                 0, {0}, 3},
  {"one node holding nothing",   1, {{0, 0}},                 0, {0}, 0},
  {"one node, left out",         1, {{8, 7}},                 1, {1}, 0},
  /* versions outside every common set */
  {"no version common",          3, {{9, 8}, {7, 6}, {5, 4}}, 0, {0}, 0},
  {"each on two nodes of three", 3, {{9, 8}, {8, 7}, {9, 7}}, 0, {0}, 0},
  {"newer ones on some only",    3, {{9, 7}, {8, 7}, {9, 7}}, 0, {0}, 7},
  {"only an old one common",     4, {{10, 2}, {11, 2}, {2, 12}, {2, 13}},
                                                              0, {0}, 2},
  /* large version numbers */
  {"the largest version",        2, {{MAX, MAX - 1}, {MAX - 1, MAX}},
                                                              0, {0}, MAX},
  {"the largest, lacking on one",2, {{MAX, MAX - 1}, {MAX - 1, 0}},
                                                              0, {0}, MAX - 1},
  {"equal in the low 32 bits",   2, {{P32 + 1, 0}, {1, 0}},   0, {0}, 0},
  {"above 2^32, common",         2, {{P32 + 1, 1}, {1, P32 + 1}},
                                                              0, {0}, P32 + 1},
  {"2^32 common, 2^32+1 not",    3, {{P32 + 1, P32}, {P32, 0}, {P32, P32 + 1}},
                                                              0, {0}, P32},
};
/* clang-format on */
#undef MAX
#undef P32

START_TEST(newest_common_cases) {
  const nc_case_t *c = &nc_cases[_i];
  const uint64_t *held = &c->held[0][0];
  uint64_t got =
      ft__newest_common(held, c->nnodes, c->with_ignore ? c->ignore : NULL);
  ck_assert_msg(got == c->want, "%s: %llu, expected %llu", c->name,
                (unsigned long long)got, (unsigned long long)c->want);
  if (!c->with_ignore) { /* no flag set and no flags at all agree */
    static const unsigned char zero[NC_NODES];
    ck_assert_uint_eq(ft__newest_common(held, c->nnodes, zero), c->want);
  }
}
END_TEST

/* The plain statement of the rule: the largest candidate that some counted
 * node holds and every counted node holds; 0 without one. */
static uint64_t plain_rule(const uint64_t *held, int nnodes,
                           const unsigned char *ignore, const uint64_t *cand,
                           int ncand) {
  int counted = 0;
  for (int n = 0; n < nnodes; n++)
    counted += !ignore[n];
  for (int c = 0; c < ncand && counted; c++) { /* cand: newest first */
    int all = 1;
    for (int n = 0; n < nnodes && all; n++)
      all = ignore[n] || held[n * FT_NSLOTS] == cand[c] ||
            held[n * FT_NSLOTS + 1] == cand[c];
    if (all)
      return cand[c];
  }
  return 0;
}

/* Three nodes, every slot one of {0, 4, 5, 6}, every set of nodes left out:
 * 4096 x 8 cases against the plain rule. */
START_TEST(newest_common_exhaustive) {
  static const uint64_t vals[] = {0, 4, 5, 6}, cand[] = {6, 5, 4};
  uint64_t held[3 * FT_NSLOTS];
  unsigned char ignore[3];
  for (int mask = 0; mask < 8; mask++) {
    for (int n = 0; n < 3; n++)
      ignore[n] = (unsigned char)((mask >> n) & 1);
    for (int code = 0; code < 4096; code++) {
      for (int i = 0; i < 3 * FT_NSLOTS; i++)
        held[i] = vals[(code >> (2 * i)) & 3];
      uint64_t want = plain_rule(held, 3, ignore, cand, 3);
      uint64_t got = ft__newest_common(held, 3, mask ? ignore : NULL);
      ck_assert_msg(got == want,
                    "{%llu,%llu} {%llu,%llu} {%llu,%llu} ignore %d: %llu, "
                    "expected %llu",
                    (unsigned long long)held[0], (unsigned long long)held[1],
                    (unsigned long long)held[2], (unsigned long long)held[3],
                    (unsigned long long)held[4], (unsigned long long)held[5],
                    mask, (unsigned long long)got, (unsigned long long)want);
    }
  }
}
END_TEST

/* Many nodes: one node at either end lacking v decides. */
START_TEST(newest_common_many_nodes) {
  enum { N = 1024 };
  uint64_t *held = calloc(N * FT_NSLOTS, sizeof(uint64_t));
  unsigned char *ignore = calloc(N, 1);
  ck_assert_ptr_nonnull(held);
  ck_assert_ptr_nonnull(ignore);
  for (int n = 0; n < N; n++) {
    held[n * FT_NSLOTS + (n & 1)] = 41;
    held[n * FT_NSLOTS + !(n & 1)] = 40;
  }
  ck_assert_uint_eq(ft__newest_common(held, N, NULL), 41);
  held[(N - 1) * FT_NSLOTS + ((N - 1) & 1)] = 0; /* the last lacks 41 */
  ck_assert_uint_eq(ft__newest_common(held, N, NULL), 40);
  ignore[N - 1] = 1;
  ck_assert_uint_eq(ft__newest_common(held, N, ignore), 41);
  held[0] = held[1] = 0; /* the first holds nothing */
  ck_assert_uint_eq(ft__newest_common(held, N, ignore), 0);
  ignore[0] = 1;
  ck_assert_uint_eq(ft__newest_common(held, N, ignore), 41);
  free(held);
  free(ignore);
}
END_TEST

/* ---- ft-restore's rule: the newest version that counts as committed ---- */

/* One slot as a short code: held version, C for COMMITTED, X unusable. */
typedef struct seen_case {
  const char *name;
  int nnodes;
  const char *slots[NC_NODES][FT_NSLOTS]; /* "5", "5C", "X", "0" */
  unsigned char ignore[NC_NODES];
  uint64_t want;
} seen_case_t;

static ft__slot_seen_t seen_of(const char *code) {
  ft__slot_seen_t x = {0, 0, 0};
  if (strcmp(code, "X") == 0)
    x.unusable = 1;
  else
    x.held = strtoull(code, NULL, 10), x.committed = strchr(code, 'C') != NULL;
  return x;
}

/* Version v lives in slot v % 2: {slot0, slot1}. */
/* clang-format off */
static const seen_case_t seen_cases[] = {
  {"nothing held anywhere",        3, {{"0", "0"}, {"0", "0"}, {"0", "0"}}, {0}, 0},
  {"v committed everywhere",       3, {{"4C", "0"}, {"4C", "0"}, {"4C", "0"}}, {0}, 4},
  {"v+1 encoded everywhere",       3, {{"4C", "5"}, {"4C", "5"}, {"4C", "5"}}, {0}, 5},
  {"v committed, one copy damaged",3, {{"4C", "0"}, {"4C", "0"}, {"X", "0"}}, {0}, 4},
  {"v committed, one copy missing",3, {{"4C", "3C"}, {"4C", "0"}, {"X", "3C"}}, {0}, 4},
  {"v committed, one holds v-2",   3, {{"4C", "3C"}, {"4C", "3C"}, {"2C", "3C"}}, {0}, 4},
  {"v committed on one node only", 3, {{"4C", "3C"}, {"4", "3C"}, {"X", "3C"}}, {0}, 4},
  {"v encoded, one damaged",       3, {{"4", "3C"}, {"4", "3C"}, {"X", "3C"}}, {0}, 4},
  {"v encoded on one, two damaged",3, {{"4", "3C"}, {"X", "3C"}, {"X", "3C"}}, {0}, 4},
  {"v encoded, one LOCAL (vetoes)",3, {{"4", "3C"}, {"4", "3C"}, {"0", "3C"}}, {0}, 3},
  {"v encoded, one holds v-2",     3, {{"4", "3C"}, {"4", "3C"}, {"2C", "3C"}}, {0}, 3},
  {"veto, damage elsewhere",       3, {{"4", "3C"}, {"0", "3C"}, {"X", "3C"}}, {0}, 3},
  {"v vetoed, v-1 damaged on one", 3, {{"4", "3C"}, {"0", "3C"}, {"0", "X"}}, {0}, 3},
  {"all v-1 copies damaged",       3, {{"X", "X"}, {"X", "X"}, {"X", "X"}}, {0}, 0},
  {"only damaged and unheld",      2, {{"X", "0"}, {"0", "X"}}, {0}, 0},
  {"lacking node left out",        3, {{"4", "3C"}, {"4", "3C"}, {"0", "3C"}}, {0, 0, 1}, 4},
  {"spare holding a newer one",    3, {{"4", "3C"}, {"4", "3C"}, {"6C", "5C"}}, {0, 0, 1}, 4},
  {"every node left out",          2, {{"4C", "3C"}, {"4C", "3C"}}, {1, 1}, 0},
  {"v in the other slot, damaged v-slot",
                                   2, {{"4", "5"}, {"X", "5"}}, {0}, 5},
  {"v only in the wrong slot",     2, {{"4", "0"}, {"0", "4"}}, {0}, 4},
  {"the largest version",          2, {{"18446744073709551614", "18446744073709551615C"},
                                       {"18446744073709551614", "X"}}, {0}, UINT64_MAX},
  {"one node, v damaged",          1, {{"X", "3C"}}, {0}, 3},
  {"one node, v committed",        1, {{"4C", "3C"}}, {0}, 4},
};
/* clang-format on */

START_TEST(newest_committed_cases) {
  const seen_case_t *c = &seen_cases[_i];
  ft__slot_seen_t seen[NC_NODES * FT_NSLOTS];
  for (int n = 0; n < c->nnodes; n++)
    for (int i = 0; i < FT_NSLOTS; i++)
      seen[n * FT_NSLOTS + i] = seen_of(c->slots[n][i]);
  uint64_t got = ft__newest_committed(seen, c->nnodes, c->ignore);
  ck_assert_msg(got == c->want, "%s: %llu, expected %llu", c->name,
                (unsigned long long)got, (unsigned long long)c->want);
}
END_TEST

/* The plain statement of ft-restore's rule, candidate by candidate. */
static uint64_t plain_committed(const ft__slot_seen_t *seen, int nnodes,
                                const unsigned char *ignore) {
  static const uint64_t cand[] = {6, 5, 4};
  for (int c = 0; c < 3; c++) {
    uint64_t v = cand[c];
    int held_somewhere = 0, committed = 0, all = 1;
    for (int n = 0; n < nnodes; n++) {
      if (ignore[n])
        continue;
      const ft__slot_seen_t *row = &seen[n * FT_NSLOTS];
      int has = row[0].held == v || row[1].held == v;
      held_somewhere |= has;
      committed |= (row[0].held == v && row[0].committed) ||
                   (row[1].held == v && row[1].committed);
      all &= has || row[v % 2].unusable;
    }
    if (held_somewhere && (committed || all))
      return v;
  }
  return 0;
}

/* Three nodes, every slot one of {unusable, 0, 4, 4C, 5, 5C, 6, 6C}, no
 * node or the last left out: 2 x 8^6 cases against the plain rule.  With
 * no slot unusable and none COMMITTED it is ft__newest_common's rule. */
START_TEST(newest_committed_exhaustive) {
  static const char *codes[8] = {"X", "0", "4", "4C", "5", "5C", "6", "6C"};
  ft__slot_seen_t seen[3 * FT_NSLOTS];
  uint64_t held[3 * FT_NSLOTS];
  for (int mask = 0; mask < 2; mask++) {
    unsigned char ignore[3] = {0, 0, (unsigned char)mask};
    for (int code = 0; code < 1 << 18; code++) {
      int plain_only = 1;
      for (int i = 0; i < 3 * FT_NSLOTS; i++) {
        seen[i] = seen_of(codes[(code >> (3 * i)) & 7]);
        held[i] = seen[i].held;
        plain_only &= !seen[i].unusable && !seen[i].committed;
      }
      uint64_t want = plain_committed(seen, 3, ignore);
      uint64_t got = ft__newest_committed(seen, 3, ignore);
      ck_assert_msg(got == want, "code %o ignore %d: %llu, expected %llu", code,
                    mask, (unsigned long long)got, (unsigned long long)want);
      if (plain_only)
        ck_assert_uint_eq(got, ft__newest_common(held, 3, ignore));
    }
  }
}
END_TEST

/* ---- the rule over real stores: three nodes' slot files ---- */

#define NODES3 3

static void node_slots(ft__slot_t sl[FT_NSLOTS], int node,
                       const ft__slot_geom_t *g) {
  char sub[160], msg[512] = "";
  snprintf(sub, sizeof(sub), "%s/node%d", dir, node);
  ck_assert_msg(ft__store_mkdir(sub, msg, sizeof(msg)) == FT_OK, "%s", msg);
  ft__dir_t d;
  ck_assert_msg(ft__dir_open(&d, sub, msg, sizeof(msg)) == FT_OK, "%s", msg);
  for (int i = 0; i < FT_NSLOTS; i++) {
    int rc = ft__slot_create(&sl[i], &d, i, JOB, g, msg, sizeof(msg));
    ck_assert_msg(rc == FT_OK, "create: %s", msg);
  }
  ft__dir_close(&d);
}

/* Take a begun slot of version v up to state `to` (LOCAL and later). */
static void advance(ft__slot_t *s, uint64_t v, uint32_t to) {
  fill_ranks(s, v, 0, 8);
  ft__slot_seal_data(s);
  ft__slot_set_state(s, FT_SLOT_LOCAL);
  if (to >= FT_SLOT_ENCODED) {
    fill_parity(s, v);
    ft__slot_seal_parity(s);
    ft__slot_set_state(s, FT_SLOT_ENCODED);
  }
  if (to >= FT_SLOT_COMMITTED)
    ft__slot_set_state(s, FT_SLOT_COMMITTED);
}

/* What the SMPs' restore agreement computes: each node's ft__slots_held
 * row, then the rule. */
static uint64_t agreed(ft__slot_t (*sl)[FT_NSLOTS],
                       const unsigned char *ignore) {
  uint64_t held[NODES3 * FT_NSLOTS];
  for (int n = 0; n < NODES3; n++)
    ft__slots_held(sl[n], &held[n * FT_NSLOTS]);
  return ft__newest_common(held, NODES3, ignore);
}

/* Versions 1..4 committed everywhere, then version 5 reaches a different
 * state on each node, as when a job dies between encode and commit. */
START_TEST(rule_over_stores) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[NODES3][FT_NSLOTS];
  for (int n = 0; n < NODES3; n++) {
    node_slots(sl[n], n, &g);
    for (uint64_t v = 1; v <= 4; v++) {
      prepare(sl[n], v, v - 1);
      write_version(&sl[n][v % FT_NSLOTS], v);
    }
    prepare(sl[n], 5, 4);
  }
  ck_assert_uint_eq(agreed(sl, NULL), 4); /* 5 FILLING everywhere */
  ft__slot_t *v5[NODES3];
  for (int n = 0; n < NODES3; n++)
    v5[n] = &sl[n][5 % FT_NSLOTS];
  advance(v5[0], 5, FT_SLOT_ENCODED);
  advance(v5[1], 5, FT_SLOT_ENCODED);
  advance(v5[2], 5, FT_SLOT_LOCAL);
  /* encoded on two nodes, not on the third: not committed */
  ck_assert_uint_eq(agreed(sl, NULL), 4);
  /* ft-restore leaving the third node out (as it does a spare) */
  static const unsigned char third[NODES3] = {0, 0, 1};
  ck_assert_uint_eq(agreed(sl, third), 5);
  /* encoded everywhere, the commit notice reached node 0 only */
  ft__slot_seal_parity(v5[2]);
  ft__slot_set_state(v5[2], FT_SLOT_ENCODED);
  ft__slot_set_state(v5[0], FT_SLOT_COMMITTED);
  ck_assert_uint_eq(agreed(sl, NULL), 5);
  /* node 2's slots lost (unmapped): nothing common unless it is left out */
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&sl[2][i]);
  ck_assert_uint_eq(agreed(sl, NULL), 0);
  ck_assert_uint_eq(agreed(sl, third), 5);
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < FT_NSLOTS; i++)
      ft__slot_close(&sl[n][i]);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "newest");
  TCase *tc = tmpdir_tcase(s, "reuse rule", 60);
  tcase_add_test(tc, reuse_rule);
  tcase_add_loop_test(tc, crash_mid_fill, 0, 4);
  tc = tmpdir_tcase(s, "held versions", 60);
  tcase_add_test(tc, slot_held_states);
  tcase_add_test(tc, slots_held_unmapped);
  tc = tmpdir_tcase(s, "restore rule", 60);
  tcase_add_loop_test(tc, newest_common_cases, 0,
                      (int)(sizeof(nc_cases) / sizeof(nc_cases[0])));
  tcase_add_test(tc, newest_common_exhaustive);
  tcase_add_test(tc, newest_common_many_nodes);
  tcase_add_loop_test(tc, newest_committed_cases, 0,
                      (int)(sizeof(seen_cases) / sizeof(seen_cases[0])));
  tcase_add_test(tc, newest_committed_exhaustive);
  tcase_add_test(tc, rule_over_stores);
  return s;
}
