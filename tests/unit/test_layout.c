/* Layout: the stripe functions checked against each other and against brute
 * counts for every group size up to 16 and m up to 4, every loss set that
 * must be recoverable and the sets that must not, and group forming with its
 * refusals (messages included) and failure domains. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec/layout.h"
#include "ftrt.h"
#include "tests/unit/check_main.h"

#define MAXN 16
#define MAXM 4

/* Loop index -> (n, m) with n 1..16, m 0..min(4, n-1). */
static int code_of(int i, int *n, int *m) {
  for (int nn = 1; nn <= MAXN; nn++)
    for (int mm = 0; mm <= MAXM && mm < nn; mm++)
      if (i-- == 0) {
        *n = nn;
        *m = mm;
        return 1;
      }
  return 0;
}

static int ncodes(void) {
  int n, m, i = 0;
  while (code_of(i, &n, &m))
    i++;
  return i;
}

START_TEST(stripe_roles) {
  int n, m;
  ck_assert(code_of(_i, &n, &m));
  int k = n - m;
  for (int s = 0; s < n; s++) {
    int seen[MAXN] = {0}, used[MAXN] = {0};
    for (int pos = 0; pos < n; pos++) {
      int r = ft__layout_role(n, m, s, pos);
      ck_assert_int_ge(r, 0);
      ck_assert_int_lt(r, n);
      ck_assert_int_eq(seen[r]++, 0); /* k data + m parity roles, once each */
    }
    for (int j = 0; j < m; j++) {
      int p = ft__layout_parity_pos(n, m, s, j);
      ck_assert_int_eq(p, (s + j) % n);
      ck_assert_int_eq(ft__layout_role(n, m, s, p), k + j);
      ck_assert_int_eq(ft__layout_parity_stripe(n, m, p, j), s);
      ck_assert_int_eq(used[p]++, 0);
    }
    for (int d = 0; d < k; d++) {
      int p = ft__layout_data_pos(n, m, s, d);
      ck_assert_int_eq(p, (s + m + d) % n);
      ck_assert_int_eq(ft__layout_role(n, m, s, p), d);
      ck_assert_int_eq(ft__layout_data_stripe(n, m, p, d), s);
      ck_assert_int_eq(used[p]++, 0); /* all n positions distinct */
    }
  }
}
END_TEST

/* Every position keeps parity for m stripes and puts each of its k chunks in
 * exactly one stripe, counted by brute force over the roles. */
START_TEST(position_duties) {
  int n, m;
  ck_assert(code_of(_i, &n, &m));
  int k = n - m;
  for (int pos = 0; pos < n; pos++) {
    int parity = 0, chunk[MAXN] = {0}, pstripe[MAXM] = {0};
    for (int s = 0; s < n; s++) {
      int r = ft__layout_role(n, m, s, pos);
      if (r >= k) {
        parity++;
        pstripe[r - k] = s;
      } else {
        chunk[r]++;
        ck_assert_int_eq(ft__layout_data_stripe(n, m, pos, r), s);
      }
    }
    ck_assert_int_eq(parity, m);
    for (int c = 0; c < k; c++)
      ck_assert_int_eq(chunk[c], 1);
    for (int j = 0; j < m; j++)
      ck_assert_int_eq(ft__layout_parity_stripe(n, m, pos, j), pstripe[j]);
  }
}
END_TEST

/* Chunks stripe s lost, counted from parity_pos and data_pos. */
static int brute_lost(int n, int m, int s, const unsigned char *lost) {
  int g = 0;
  for (int j = 0; j < m; j++)
    g += lost[ft__layout_parity_pos(n, m, s, j)] != 0;
  for (int d = 0; d < n - m; d++)
    g += lost[ft__layout_data_pos(n, m, s, d)] != 0;
  return g;
}

/* Every loss set of size <= m+1 (every set at all for n <= 10): the
 * function agrees with the brute count; <= m lost is always recoverable,
 * m+1 never is, and the lost stripes are named. */
START_TEST(loss_sets) {
  int n, m;
  ck_assert(code_of(_i, &n, &m));
  int checked_over = 0;
  for (unsigned mask = 0; mask < (1u << n); mask++) {
    int nl = __builtin_popcount(mask);
    if (n > 10 && nl > m + 1)
      continue;
    unsigned char lost[MAXN];
    int bad[MAXN], want[MAXN], nwant = 0;
    for (int p = 0; p < n; p++)
      lost[p] = (mask >> p) & 1 ? (unsigned char)(1 + p) : 0;
    for (int s = 0; s < n; s++)
      if (brute_lost(n, m, s, lost) > m)
        want[nwant++] = s;
    int got = ft__layout_lost_stripes(n, m, lost, bad);
    ck_assert_int_eq(got, nwant);
    ck_assert_int_eq(ft__layout_lost_stripes(n, m, lost, NULL), nwant);
    for (int i = 0; i < got; i++)
      ck_assert_int_eq(bad[i], want[i]);
    if (nl <= m)
      ck_assert_int_eq(got, 0);
    else {
      ck_assert_int_gt(got, 0);
      checked_over++;
    }
  }
  ck_assert_int_gt(checked_over, 0);
}
END_TEST

START_TEST(stripe_bad_arguments) {
  unsigned char lost[4] = {0};
  ck_assert_int_eq(ft__layout_parity_pos(0, 0, 0, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_pos(4, 4, 0, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_pos(4, -1, 0, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_pos(4, 1, 4, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_pos(4, 1, 0, 1), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_pos(4, 1, -1, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_data_pos(4, 1, 0, 3), FT_EINVAL);
  ck_assert_int_eq(ft__layout_data_pos(4, 1, 0, -1), FT_EINVAL);
  ck_assert_int_eq(ft__layout_role(4, 1, 0, 4), FT_EINVAL);
  ck_assert_int_eq(ft__layout_role(4, 1, 5, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_data_stripe(4, 1, 0, 3), FT_EINVAL);
  ck_assert_int_eq(ft__layout_data_stripe(4, 1, 4, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_stripe(4, 1, 0, 1), FT_EINVAL);
  ck_assert_int_eq(ft__layout_parity_stripe(4, 0, 0, 0), FT_EINVAL);
  ck_assert_int_eq(ft__layout_lost_stripes(4, 1, NULL, NULL), FT_EINVAL);
  ck_assert_int_eq(ft__layout_lost_stripes(4, 4, lost, NULL), FT_EINVAL);
  ck_assert_int_eq(ft__layout_lost_stripes(0, 0, lost, NULL), FT_EINVAL);
}
END_TEST

START_TEST(chunk_bytes) {
  ck_assert_uint_eq(ft__layout_chunk_bytes(0, 3), 0);
  ck_assert_uint_eq(ft__layout_chunk_bytes(1, 3), 64);
  ck_assert_uint_eq(ft__layout_chunk_bytes(192, 3), 64);
  ck_assert_uint_eq(ft__layout_chunk_bytes(193, 3), 128);
  ck_assert_uint_eq(ft__layout_chunk_bytes(1000, 1), 1024);
  ck_assert_uint_eq(ft__layout_chunk_bytes(3u << 20, 3), 1u << 20);
  ck_assert_uint_eq(ft__layout_chunk_bytes(100, 0), 0);
  ck_assert_uint_eq(ft__layout_chunk_bytes(SIZE_MAX, 1), 0);
  ck_assert_uint_eq(ft__layout_chunk_bytes(SIZE_MAX, 2),
                    (SIZE_MAX / 2 + 1 + 63) & ~(size_t)63);
  uint64_t x = 12345;
  for (int t = 0; t < 10000; t++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    size_t b = (size_t)(x >> 20) % (1u << 30);
    int k = 1 + (int)((x >> 8) % 254);
    size_t c = ft__layout_chunk_bytes(b, k);
    ck_assert_uint_eq(c % 64, 0);
    ck_assert_uint_ge(c * (size_t)k, b);           /* k chunks hold the data */
    ck_assert(c == 0 || (c - 64) * (size_t)k < b); /* and no more than needed */
  }
}
END_TEST

/* ---- groups ----------------------------------------------------------- */

/* Invariants of any formed grouping. */
static void check_groups(const ft__groups_t *g, int nnodes, int k, int m) {
  int n = k + m, seen[1024] = {0};
  ck_assert_int_eq(g->nnodes, nnodes);
  ck_assert_int_eq(g->m, m);
  ck_assert_int_eq(g->ngroups, nnodes / n);
  int total = 0;
  for (int i = 0; i < g->ngroups; i++) {
    ck_assert_int_ge(g->size[i], n);
    ck_assert_int_le(g->size[i], 255);
    if (i > 0) /* leftovers went to the last groups, evenly */
      ck_assert(g->size[i] == g->size[i - 1] ||
                g->size[i] == g->size[i - 1] + 1);
    ck_assert_int_le(g->size[i] - g->size[0], 1);
    total += g->size[i];
    for (int p = 0; p < g->size[i]; p++) {
      int node = g->members[i][p];
      ck_assert(node >= 0 && node < nnodes);
      ck_assert_int_eq(seen[node]++, 0);
      ck_assert_int_eq(g->group_of[node], i);
      ck_assert_int_eq(g->pos_of[node], p);
      if (p > 0)
        ck_assert_int_lt(g->members[i][p - 1], node);
    }
  }
  ck_assert_int_eq(total, nnodes);
}

START_TEST(groups_sizes) {
  char msg[256];
  for (int nnodes = 1; nnodes <= 40; nnodes++)
    for (int k = 1; k <= 6; k++)
      for (int m = 0; m <= 3 && k + m <= nnodes; m++) {
        ft__groups_t g;
        ck_assert_int_eq(ft__groups_form(nnodes, NULL, k, m, &g, msg, 256),
                         FT_OK);
        check_groups(&g, nnodes, k, m);
        int next = 0; /* without domains: consecutive nodes */
        for (int i = 0; i < g.ngroups; i++)
          for (int p = 0; p < g.size[i]; p++)
            ck_assert_int_eq(g.members[i][p], next++);
        ft__groups_free(&g);
      }
}
END_TEST

START_TEST(groups_examples) {
  static const struct {
    int nnodes, k, m, ngroups, sizes[4];
  } ex[] = {
      {4, 3, 1, 1, {4}},        {8, 3, 1, 2, {4, 4}},
      {9, 3, 1, 2, {4, 5}},     {10, 3, 1, 2, {5, 5}},
      {7, 3, 1, 1, {7}},        {14, 3, 1, 3, {4, 5, 5}},
      {15, 4, 2, 2, {7, 8}},    {3, 1, 0, 3, {1, 1, 1}},
      {13, 3, 1, 3, {4, 4, 5}}, {16, 2, 2, 4, {4, 4, 4, 4}},
  };
  char msg[256];
  for (size_t t = 0; t < sizeof(ex) / sizeof(ex[0]); t++) {
    ft__groups_t g;
    ck_assert_int_eq(ft__groups_form(ex[t].nnodes, NULL, ex[t].k, ex[t].m, &g,
                                     msg, sizeof(msg)),
                     FT_OK);
    ck_assert_int_eq(g.ngroups, ex[t].ngroups);
    for (int i = 0; i < g.ngroups; i++)
      ck_assert_int_eq(g.size[i], ex[t].sizes[i]);
    ft__groups_free(&g);
  }
}
END_TEST

static void refused(int nnodes, const char *const *doms, int k, int m,
                    const char *w1, const char *w2) {
  char msg[256] = "untouched";
  ft__groups_t g;
  memset(&g, 0x5a, sizeof(g));
  ck_assert_int_eq(ft__groups_form(nnodes, doms, k, m, &g, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_assert_msg(strstr(msg, w1), "message '%s' lacks '%s'", msg, w1);
  ck_assert_msg(!w2 || strstr(msg, w2), "message '%s' lacks '%s'", msg, w2);
  ck_assert_ptr_null(strchr(msg, '\n'));
  ck_assert_ptr_null(g.members);
  ck_assert_ptr_null(g.size);
  ft__groups_free(&g);
  ck_assert_int_eq(ft__groups_form(nnodes, doms, k, m, &g, NULL, 0),
                   FT_ECONFIG);
}

/* "k+m <= X" from a message, and check that X is accepted. */
static void suggestion_works(int nnodes, const char *const *doms, int k,
                             int m) {
  char msg[256];
  ft__groups_t g;
  ck_assert_int_eq(ft__groups_form(nnodes, doms, k, m, &g, msg, sizeof(msg)),
                   FT_ECONFIG);
  const char *p = strstr(msg, "k+m <= ");
  ck_assert_msg(p != NULL, "no suggestion in '%s'", msg);
  int n = atoi(p + 7);
  ck_assert_int_ge(n, m + 1);
  ck_assert_int_eq(ft__groups_form(nnodes, doms, n - m, m, &g, msg, 256),
                   FT_OK);
  check_groups(&g, nnodes, n - m, m);
  ft__groups_free(&g);
}

START_TEST(groups_refused) {
  refused(4, NULL, 0, 1, "k=0", "k >= 1");
  refused(4, NULL, -2, 1, "k=-2", "k=1 m=1");
  refused(4, NULL, 3, -1, "m=-1", "0 or more");
  refused(1000, NULL, 200, 56, "k+m=256", "at most 255");
  refused(3, NULL, 3, 1, "needs at least 4 nodes but there are 3",
          "k+m <= 3, for example k=2 m=1");
  refused(1, NULL, 1, 1, "needs at least 2 nodes", "k=1 m=0");
  refused(0, NULL, 1, 0, "no nodes", NULL);
  refused(399, NULL, 199, 1, "group of 399 members", "more than 255");
  refused(401, NULL, 1, 200, "more than 255", "lower m");
  suggestion_works(3, NULL, 3, 1);
  suggestion_works(399, NULL, 199, 1);
  suggestion_works(300, NULL, 160, 0);
  ft__groups_t g;
  ck_assert_int_eq(ft__groups_form(4, NULL, 3, 1, NULL, NULL, 0), FT_EINVAL);
  ft__groups_free(NULL);
  ck_assert_int_eq(ft__groups_form(510, NULL, 254, 1, &g, NULL, 0), FT_OK);
  check_groups(&g, 510, 254, 1);
  ft__groups_free(&g);
  ft__groups_free(&g); /* zeroed by the first free */
}
END_TEST

/* Domains: rack r of `counts` racks has counts[r] nodes. */
static const char **racks(const int *counts, int nr, int *nnodes) {
  static const char *names[] = {"rack-a", "rack-b", "rack-c", "rack-d",
                                "rack-e", "rack-f", "rack-g", "rack-h"};
  int n = 0;
  for (int r = 0; r < nr; r++)
    n += counts[r];
  const char **d = malloc(sizeof(char *) * (size_t)n);
  n = 0;
  for (int r = 0; r < nr; r++)
    for (int i = 0; i < counts[r]; i++)
      d[n++] = names[r];
  *nnodes = n;
  return d;
}

static void check_distinct(const ft__groups_t *g, const char *const *d) {
  for (int i = 0; i < g->ngroups; i++)
    for (int a = 0; a < g->size[i]; a++)
      for (int b = a + 1; b < g->size[i]; b++) {
        const char *x = d[g->members[i][a]], *y = d[g->members[i][b]];
        ck_assert_msg(!x || !y || !x[0] || strcmp(x, y),
                      "group %d holds two nodes of %s", i, x);
      }
}

/* Random rack shapes: formed iff no rack has more nodes than there are
 * groups, and then every group spans distinct racks. */
START_TEST(groups_domains) {
  uint64_t x = 77 + (uint64_t)_i;
  char msg[256];
  int formed = 0, refusals = 0;
  for (int t = 0; t < 300; t++) {
    int counts[8], nr = 1 + (int)((x >> 5) % 8), nnodes, big = 0;
    for (int r = 0; r < nr; r++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      counts[r] = 1 + (int)((x >> 33) % 6);
      big = counts[r] > big ? counts[r] : big;
    }
    const char **d = racks(counts, nr, &nnodes);
    int m = (int)((x >> 40) % 3), k = 1 + (int)((x >> 45) % 5);
    if (t % 2) /* the caller's order need not be grouped by domain */
      for (int i = nnodes - 1; i > 0; i--) {
        int j = (int)((x >> 11) % (uint64_t)(i + 1));
        const char *s = d[i];
        d[i] = d[j];
        d[j] = s;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
      }
    ft__groups_t g;
    int rc = ft__groups_form(nnodes, d, k, m, &g, msg, sizeof(msg));
    if (k + m > nnodes) {
      ck_assert_int_eq(rc, FT_ECONFIG);
    } else if (big > nnodes / (k + m)) {
      ck_assert_int_eq(rc, FT_ECONFIG);
      ck_assert_msg(strstr(msg, "failure domain 'rack-"), "msg '%s'", msg);
      if (strstr(msg, "k+m <= "))
        suggestion_works(nnodes, d, k, m);
      refusals++;
    } else {
      ck_assert_int_eq(rc, FT_OK);
      check_groups(&g, nnodes, k, m);
      check_distinct(&g, d);
      formed++;
      ft__groups_free(&g);
    }
    free(d);
  }
  ck_assert_int_gt(formed, 0);
  ck_assert_int_gt(refusals, 0);
}
END_TEST

START_TEST(groups_domain_cases) {
  char msg[256];
  ft__groups_t g;
  /* 3 racks of 4 nodes, 3+1: 3 groups, each with one node per rack... */
  int c1[] = {4, 4, 4}, nn;
  const char **d = racks(c1, 3, &nn);
  refused(nn, d, 3, 1, "failure domain 'rack-a' has 4 nodes", "use k+m <= 3");
  ck_assert_int_eq(ft__groups_form(nn, d, 2, 1, &g, msg, 256), FT_OK);
  check_groups(&g, nn, 2, 1);
  check_distinct(&g, d);
  ck_assert_int_eq(g.ngroups, 4);
  ft__groups_free(&g);
  free(d);
  /* one rack: only groups of one node can keep racks apart */
  int c2[] = {6};
  d = racks(c2, 1, &nn);
  refused(nn, d, 1, 1, "failure domain 'rack-a' has 6 of 6 nodes",
          "more domains");
  ck_assert_int_eq(ft__groups_form(nn, d, 1, 0, &g, msg, 256), FT_OK);
  ft__groups_free(&g);
  free(d);
  /* unknown domains (NULL, "") are each their own */
  const char *u[] = {NULL, "", "", NULL, "r1", "r1"};
  ck_assert_int_eq(ft__groups_form(6, u, 2, 1, &g, msg, 256), FT_OK);
  check_groups(&g, 6, 2, 1);
  check_distinct(&g, u);
  ck_assert_int_ne(g.group_of[4], g.group_of[5]);
  ft__groups_free(&g);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("layout");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, stripe_roles, 0, ncodes());
  tcase_add_loop_test(tc, position_duties, 0, ncodes());
  tcase_add_loop_test(tc, loss_sets, 0, ncodes());
  tcase_add_test(tc, stripe_bad_arguments);
  tcase_add_test(tc, chunk_bytes);
  tcase_add_test(tc, groups_sizes);
  tcase_add_test(tc, groups_examples);
  tcase_add_test(tc, groups_refused);
  tcase_add_loop_test(tc, groups_domains, 0, 4);
  tcase_add_test(tc, groups_domain_cases);
  suite_add_tcase(s, tc);
  return s;
}
