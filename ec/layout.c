/*
 * Groups and rotated stripes.  The rotation puts parity of stripe s on the m
 * positions starting at s, so each member keeps parity for m stripes and
 * contributes to the other k: storage and encode work are even across the
 * group, unlike a fixed parity node.  Stripe arithmetic is modular distance
 * from s; everything else is derived from ft__layout_role.
 *
 * Failure domains: dealing nodes sorted by domain round-robin over G groups
 * puts any run of at most G equal domains into G different groups, and a
 * domain with more than G nodes cannot be split that way by any method
 * (pigeonhole), so the one check is "largest domain <= G".
 */
#include "ec/layout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ftrt.h"

#define MAX_GROUP 255 /* the codec's k + m limit */

/* ---- stripes ---------------------------------------------------------- */

static int bad_code(int n, int m) { return n < 1 || m < 0 || m >= n; }
static int in(int x, int hi) { return x >= 0 && x < hi; }
static int mod(int a, int n) { return ((a % n) + n) % n; }

int ft__layout_parity_pos(int n, int m, int s, int j) {
  if (bad_code(n, m) || !in(s, n) || !in(j, m))
    return FT_EINVAL;
  return (s + j) % n;
}

int ft__layout_data_pos(int n, int m, int s, int d) {
  if (bad_code(n, m) || !in(s, n) || !in(d, n - m))
    return FT_EINVAL;
  return (s + m + d) % n;
}

int ft__layout_role(int n, int m, int s, int pos) {
  if (bad_code(n, m) || !in(s, n) || !in(pos, n))
    return FT_EINVAL;
  int r = mod(pos - s, n);
  return r < m ? (n - m) + r : r - m;
}

int ft__layout_data_stripe(int n, int m, int pos, int c) {
  if (bad_code(n, m) || !in(pos, n) || !in(c, n - m))
    return FT_EINVAL;
  return mod(pos - m - c, n);
}

int ft__layout_parity_stripe(int n, int m, int pos, int j) {
  if (bad_code(n, m) || !in(pos, n) || !in(j, m))
    return FT_EINVAL;
  return mod(pos - j, n);
}

/* Every position is in every stripe (parity or data), so each stripe loses
 * exactly as many chunks as there are lost positions. */
int ft__layout_lost_stripes(int n, int m, const unsigned char *lost, int *bad) {
  if (bad_code(n, m) || !lost)
    return FT_EINVAL;
  int gone = 0;
  for (int pos = 0; pos < n; pos++)
    gone += lost[pos] != 0;
  if (gone <= m)
    return 0;
  for (int s = 0; bad && s < n; s++)
    bad[s] = s;
  return n;
}

size_t ft__layout_chunk_bytes(size_t max_node_bytes, int k) {
  if (k < 1)
    return 0;
  size_t q = max_node_bytes / (size_t)k + (max_node_bytes % (size_t)k != 0);
  if (q > SIZE_MAX - 63)
    return 0;
  return (q + 63) & ~(size_t)63;
}

/* ---- groups: validation --------------------------------------------- */

/* A code close to the requested one that nnodes can hold. */
static void suggest(int nnodes, int k, int m, int *sk, int *sm) {
  int cap = nnodes < MAX_GROUP ? nnodes : MAX_GROUP;
  *sm = m < 0 ? 0 : (m > cap - 1 ? cap - 1 : m);
  *sk = k < 1 ? 1 : (k > cap - *sm ? cap - *sm : k);
}

static int check_code(int nnodes, int k, int m, char *msg, size_t msglen) {
  int sk, sm;
  if (nnodes < 1)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "no nodes to form erasure-coding groups from");
  suggest(nnodes, k, m, &sk, &sm);
  if (k < 1)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "k=%d: a group needs at least 1 data chunk (k >= 1), for "
                    "example k=%d m=%d",
                    k, sk, sm);
  if (m < 0)
    return ft__msgf(
        FT_ECONFIG, msg, msglen,
        "m=%d: parity count must be 0 or more, for example k=%d m=%d", m, sk,
        sm);
  if (k + m > MAX_GROUP)
    return ft__msgf(
        FT_ECONFIG, msg, msglen,
        "k=%d m=%d: k+m=%d, must be at most %d, for example k=%d m=%d", k, m,
        k + m, MAX_GROUP, sk, sm);
  if (k + m > nnodes)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "k=%d m=%d needs at least %d nodes but there are %d: use "
                    "k+m <= %d, for example k=%d m=%d",
                    k, m, k + m, nnodes, nnodes, sk, sm);
  return FT_OK;
}

/* Members of the largest group when nnodes are cut in groups of n. */
static int widest(int nnodes, int n) {
  int g = nnodes / n;
  return nnodes / g + (nnodes % g != 0);
}

static int check_width(int nnodes, int k, int m, char *msg, size_t msglen) {
  int w = widest(nnodes, k + m), n = k + m;
  if (w <= MAX_GROUP)
    return FT_OK;
  while (n > m + 1 && widest(nnodes, n) > MAX_GROUP)
    n--;
  if (widest(nnodes, n) > MAX_GROUP)
    return ft__msgf(
        FT_ECONFIG, msg, msglen,
        "k=%d m=%d over %d nodes: leftover nodes would make a group "
        "of %d members, more than %d; lower m",
        k, m, nnodes, w, MAX_GROUP);
  return ft__msgf(
      FT_ECONFIG, msg, msglen,
      "k=%d m=%d over %d nodes: leftover nodes would make a group of "
      "%d members, more than %d; use k+m <= %d, for example k=%d m=%d",
      k, m, nnodes, w, MAX_GROUP, n, n - m, m);
}

/* ---- groups: domains ------------------------------------------------ */

struct dnode {
  const char *dom; /* NULL: unknown, a domain of its own */
  int node;
};

static int cmp_dnode(const void *pa, const void *pb) {
  const struct dnode *a = pa, *b = pb;
  int c = strcmp(a->dom ? a->dom : "", b->dom ? b->dom : "");
  return c ? c : (a->node > b->node) - (a->node < b->node);
}

static int same_domain(const struct dnode *a, const struct dnode *b) {
  return a->dom && b->dom && strcmp(a->dom, b->dom) == 0;
}

/* Sort nodes by domain; return the start of the largest run in *big. */
static int largest_domain(struct dnode *v, int nnodes, const char *const *doms,
                          int *big) {
  for (int i = 0; i < nnodes; i++) {
    v[i].dom = doms[i] && doms[i][0] ? doms[i] : NULL;
    v[i].node = i;
  }
  qsort(v, (size_t)nnodes, sizeof(*v), cmp_dnode);
  int best = 0, run = 0;
  *big = 0;
  for (int i = 0; i < nnodes; i++) {
    run = i > 0 && same_domain(&v[i - 1], &v[i]) ? run + 1 : 1;
    if (run > best) {
      best = run;
      *big = i - run + 1;
    }
  }
  return best;
}

static int domain_fail(int nnodes, int k, int m, int groups, int count,
                       const char *dom, char *msg, size_t msglen) {
  int n = nnodes / count;
  if (n >= m + 1)
    return ft__msgf(
        FT_ECONFIG, msg, msglen,
        "failure domain '%s' has %d nodes but k=%d m=%d over %d nodes "
        "makes %d groups, so one group would hold two of its nodes; "
        "use k+m <= %d or spread nodes over more domains",
        dom, count, k, m, nnodes, groups, n);
  return ft__msgf(
      FT_ECONFIG, msg, msglen,
      "failure domain '%s' has %d of %d nodes: with m=%d no grouping "
      "keeps each group's members in distinct domains; spread nodes "
      "over more domains",
      dom, count, nnodes, m);
}

/* ---- groups: assembly ----------------------------------------------- */

void ft__groups_free(ft__groups_t *g) {
  if (!g)
    return;
  ft__free(g->group_of);
  ft__free(g->pos_of);
  ft__free(g->size);
  if (g->members)
    ft__free(g->members[0]); /* one block holds every group's members */
  ft__free(g->members);
  memset(g, 0, sizeof(*g));
}

static int alloc_groups(ft__groups_t *g, int nnodes, int ngroups, int n) {
  g->nnodes = nnodes;
  g->ngroups = ngroups;
  g->group_of = ft__malloc(sizeof(int) * (size_t)nnodes);
  g->pos_of = ft__malloc(sizeof(int) * (size_t)nnodes);
  g->size = ft__malloc(sizeof(int) * (size_t)ngroups);
  g->members = ft__calloc((size_t)ngroups, sizeof(int *));
  if (!g->group_of || !g->pos_of || !g->size || !g->members ||
      !(g->members[0] = ft__malloc(sizeof(int) * (size_t)nnodes))) {
    ft__groups_free(g);
    return FT_ENOMEM;
  }
  int extra = nnodes % n;
  for (int i = 0; i < ngroups; i++) {
    g->size[i] = n + extra / ngroups + (i >= ngroups - extra % ngroups);
    if (i > 0)
      g->members[i] = g->members[i - 1] + g->size[i - 1];
  }
  return FT_OK;
}

static int cmp_int(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return (a > b) - (a < b);
}

/* Deal the domain-sorted nodes over the groups, last group first, which is
 * what hands the leftovers (one more node each) to the last groups. */
static void deal(ft__groups_t *g, const struct dnode *v) {
  int *fill = g->group_of; /* scratch: members placed per group so far */
  memset(fill, 0, sizeof(int) * (size_t)g->ngroups);
  for (int t = 0; t < g->nnodes; t++) {
    int gi = g->ngroups - 1 - t % g->ngroups;
    g->members[gi][fill[gi]++] = v[t].node;
  }
  for (int i = 0; i < g->ngroups; i++)
    qsort(g->members[i], (size_t)g->size[i], sizeof(int), cmp_int);
}

static void contiguous(ft__groups_t *g) {
  for (int i = 0; i < g->nnodes; i++)
    g->members[0][i] = i;
}

static void index_members(ft__groups_t *g) {
  for (int i = 0; i < g->ngroups; i++)
    for (int p = 0; p < g->size[i]; p++) {
      g->group_of[g->members[i][p]] = i;
      g->pos_of[g->members[i][p]] = p;
    }
}

static int form_dealt(int nnodes, const char *const *domains, int k, int m,
                      ft__groups_t *out, char *msg, size_t msglen) {
  int big, groups = nnodes / (k + m), rc = FT_OK;
  struct dnode *v = ft__malloc(sizeof(*v) * (size_t)nnodes);
  if (!v)
    return FT_ENOMEM;
  int count = largest_domain(v, nnodes, domains, &big);
  if (count > groups)
    rc = domain_fail(nnodes, k, m, groups, count, v[big].dom ? v[big].dom : "",
                     msg, msglen);
  else if (!(rc = alloc_groups(out, nnodes, groups, k + m)))
    deal(out, v);
  ft__free(v);
  return rc;
}

int ft__groups_form(int nnodes, const char *const *domains, int k, int m,
                    ft__groups_t *out, char *msg, size_t msglen) {
  int rc;
  if (!out)
    return FT_EINVAL;
  memset(out, 0, sizeof(*out));
  if (msg && msglen)
    msg[0] = '\0';
  if ((rc = check_code(nnodes, k, m, msg, msglen)) ||
      (rc = check_width(nnodes, k, m, msg, msglen)))
    return rc;
  if (domains)
    rc = form_dealt(nnodes, domains, k, m, out, msg, msglen);
  else if (!(rc = alloc_groups(out, nnodes, nnodes / (k + m), k + m)))
    contiguous(out);
  if (rc)
    return rc;
  out->m = m;
  index_members(out);
  return FT_OK;
}
