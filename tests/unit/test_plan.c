/*
 * ft-restore's plan at scale (issue 14.7): the survey's decisions and the
 * rebuild plan from synthetic summaries of 2,048 nodes in 4+2 groups, as
 * ft__survey_plan and ft__rebuild_plan take them (no MPI, no store).  No
 * fixed table may overflow: one host lost in every group is planned, with a
 * spare for each; three lost in one group (m = 2) is refused with a message
 * naming the group and nothing planned.  The time each plan takes is
 * printed (a figure, not a bound: a test never depends on speed).  The
 * same plan for 40,000 nodes takes its summaries from metadata of 40,000
 * hosts encoded and decoded as a store holds it: no node count is bounded
 * but by memory (the metadata held 4,096 hosts before, and the survey's
 * group tables 16-bit node indexes).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "ec/layout.h"
#include "ftrt.h"
#include "recovery/rebuild.h"
#include "recovery/survey.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"

#define K 4
#define M 2

/* The job's node count: 2,048, or 40,000 for the test that sets it. */
static int NODES = 2048;
/* Where set: the decoded metadata the summaries take their hosts and
 * layout from. */
static const ft__meta_t *from_meta;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The groups of the NODES-node job, as its SMPs form them. */
static void form(ft__groups_t *g) {
  char msg[256];
  ck_assert_msg(ft__groups_form(NODES, NULL, K, M, g, msg, sizeof(msg)) ==
                    FT_OK,
                "%s", msg);
}

/* Node n's summary, as its rank would gather it: it holds version 4 (step
 * 8) committed in slot 0, made under layout 1 at epoch 1. */
static void summary(ft__rnode_t *s, const ft__groups_t *g, int n) {
  memset(s, 0, sizeof(*s));
  int grp = g->group_of[n];
  s->has_meta = 1;
  s->node = n, s->nnodes = NODES, s->k = g->size[grp] - M, s->m = M;
  s->group = grp, s->pos = g->pos_of[n], s->gsize = g->size[grp];
  s->epoch = s->layout = 1;
  s->run = 0x1234;
  if (from_meta) {
    s->nnodes = (int32_t)from_meta->nnodes;
    s->k = (int32_t)from_meta->k, s->m = (int32_t)from_meta->m;
    s->epoch = from_meta->epoch, s->layout = from_meta->layout;
    s->run = from_meta->run;
  }
  s->slot_ok[0] = 1;
  s->version[0] = 4, s->step[0] = 8, s->chunk[0] = 1 << 20;
  s->vepoch[0] = s->vlayout[0] = 1;
  s->state[0] = FT_SLOT_COMMITTED;
  s->slot_rc[1] = FT_ENOENT;
  for (int p = 0; p < FT_RESTORE_MAX_GROUP; p++)
    s->members[p] = p < g->size[grp] ? (int32_t)g->members[grp][p] : -1;
  snprintf(s->host, sizeof(s->host), "%s",
           from_meta ? from_meta->hosts[n] : "");
  if (!from_meta)
    snprintf(s->host, sizeof(s->host), "node%04d", n);
}

/* A restore of the NODES-node job with node lost[n] gone, each replaced by a
 * spare (a rank without a store).  Returns ft__survey_plan's status, then
 * ft__rebuild_plan's. */
static int plan(const unsigned char *lost, ft__restore_t *r, int **helper_of,
                double *secs) {
  ft__groups_t g;
  form(&g);
  memset(r, 0, sizeof(*r));
  snprintf(r->job, sizeof(r->job), "plan");
  snprintf(r->host, sizeof(r->host), "node0000");
  r->opts.mode = FT_RESTORE_REPLACE;
  r->size = NODES; /* survivors, then as many spares as lost nodes */
  r->all = calloc((size_t)r->size, sizeof(ft__rnode_t));
  ck_assert_ptr_nonnull(r->all);
  int i = 0;
  for (int n = 0; n < NODES; n++)
    if (!lost[n])
      summary(&r->all[i++], &g, n);
  for (; i < r->size; i++)
    snprintf(r->all[i].host, sizeof(r->all[i].host), "spare%04d", i);
  ft__groups_free(&g);
  double t0 = now();
  int rc = ft__survey_plan(r);
  if (rc == FT_OK) {
    r->adopt = calloc((size_t)NODES, 1);
    *helper_of = calloc((size_t)NODES, sizeof(int));
    ck_assert_ptr_nonnull(r->adopt);
    ck_assert_ptr_nonnull(*helper_of);
    rc = ft__rebuild_plan(r, *helper_of);
  }
  *secs = now() - t0;
  return rc;
}

static void release(ft__restore_t *r, int *helper_of) {
  free(r->all), free(r->adopt), free(helper_of);
  ft__free(r->rank_of_node), ft__free(r->group_of), ft__free(r->pos_of);
  ft__free(r->gsize), ft__free(r->members), ft__free(r->hosts);
  ft__free(r->chunk_of_group), ft__free(r->bad), ft__free(r->damaged);
}

/* One host lost in every group of the NODES-node job: planned, a spare for
 * each. */
static void lose_one_per_group(void) {
  unsigned char *lost = calloc((size_t)NODES, 1);
  ck_assert_ptr_nonnull(lost);
  ft__groups_t g;
  form(&g);
  int ngroups = g.ngroups;
  for (int grp = 0; grp < ngroups; grp++) /* a different position each */
    lost[g.members[grp][grp % g.size[grp]]] = 1;
  ft__groups_free(&g);
  ft__restore_t r;
  int *helper_of = NULL;
  double secs;
  int rc = plan(lost, &r, &helper_of, &secs);
  ck_assert_msg(rc == FT_OK, "plan: %s (%s)", r.msg, ft_err_name(rc));
  printf("test_plan: %d nodes in %d groups of %d+%d, one lost in each: "
         "planned in %.3f s\n", NODES, ngroups, K, M, secs);
  ck_assert_int_eq(r.nnodes, NODES);
  ck_assert_int_eq(r.ngroups, ngroups);
  ck_assert_int_eq(r.nlost, ngroups);
  ck_assert_uint_eq(r.version, 4);
  ck_assert_uint_eq(r.step, 8);
  /* every lost node has its own spare; nothing adopted */
  int spares = 0;
  for (int n = 0; n < NODES; n++) {
    ck_assert_int_eq(r.adopt[n], 0);
    if (!lost[n]) {
      ck_assert_int_eq(helper_of[n], -1);
      continue;
    }
    ck_assert_int_ge(helper_of[n], NODES - ngroups);
    ck_assert(!r.all[helper_of[n]].has_meta);
    spares++;
  }
  ck_assert_int_eq(spares, ngroups);
  release(&r, helper_of);
  free(lost);
}

START_TEST(one_lost_per_group) { lose_one_per_group(); }
END_TEST

/* 40,000 nodes, more than the 4,096 the metadata held before and the
 * 32,767 a 16-bit node index reached (issue 14.7): node 0's metadata, with
 * every host of the job, is encoded and decoded as a store holds it; the
 * summaries take their hosts and layout from what was decoded; one host
 * lost in every group is planned. */
START_TEST(forty_thousand_nodes) {
  NODES = 40000;
  ft__groups_t g;
  form(&g);
  ft__meta_t *m = calloc(1, sizeof(*m)), *got = calloc(1, sizeof(*got));
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_nonnull(got);
  snprintf(m->job, sizeof(m->job), "plan");
  snprintf(m->host, sizeof(m->host), "n00000.example.org");
  ck_assert_int_eq(ft__meta_alloc_hosts(m, (uint32_t)NODES), FT_OK);
  for (int n = 0; n < NODES; n++)
    snprintf(m->hosts[n], FT_NAME_MAX, "n%05d.example.org", n);
  m->k = K, m->m = M, m->epoch = m->layout = 1, m->run = 0x1234;
  m->group = (uint32_t)g.group_of[0], m->pos = (uint32_t)g.pos_of[0];
  m->group_size = (uint32_t)g.size[g.group_of[0]];
  ft__groups_free(&g);
  uint8_t *buf;
  size_t len;
  char msg[256] = "";
  double t0 = now();
  ck_assert_int_eq(ft__meta_encode(m, &buf, &len), FT_OK);
  ck_assert_int_eq(ft__meta_decode(buf, len, got, "meta", msg, sizeof(msg)),
                   FT_OK);
  printf("test_plan: metadata of %d nodes (%zu bytes) encoded and decoded in "
         "%.3f s\n", NODES, len, now() - t0);
  ck_assert(ft__meta_equal(m, got));
  ck_assert_uint_eq(got->nnodes, (uint32_t)NODES);
  ck_assert_str_eq(got->hosts[NODES - 1], "n39999.example.org");
  from_meta = got;
  lose_one_per_group();
  from_meta = NULL;
  NODES = 2048;
  ft__free(buf);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

START_TEST(three_lost_in_one_group) {
  static unsigned char lost[2048];
  ft__groups_t g;
  form(&g);
  int grp = g.ngroups - 1; /* the last group: with the leftover nodes */
  memset(lost, 0, sizeof(lost));
  for (int p = 0; p < M + 1; p++)
    lost[g.members[grp][p]] = 1;
  ft__groups_free(&g);
  ft__restore_t r;
  int *helper_of = NULL;
  double secs;
  int rc = plan(lost, &r, &helper_of, &secs);
  printf("test_plan: %d nodes, %d lost in group %d: refused in %.3f s\n",
         NODES, M + 1, grp, secs);
  ck_assert_int_eq(rc, FT_ETOOMANY);
  char want[64];
  snprintf(want, sizeof(want), "group %d lost 3 chunks", grp);
  ck_assert_msg(strstr(r.msg, want) && strstr(r.msg, "m=2") &&
                    strstr(r.msg, "nothing was changed"),
                "message: %s", r.msg);
  release(&r, helper_of);
}
END_TEST

/* A job lost a node before its first commit: every survivor's slot 0 is
 * FILLING version 1 and slot 1 EMPTY, both whole (the layout makes both).
 * Nothing to restore, and the survey says that nothing was ever committed
 * (r.never: ft-restore clears the stores and the job starts afresh).  Any
 * sign that something may have been committed, on one survivor, keeps the
 * refusal: a slot encoded, damaged or missing, a newer version, a pending
 * layout, a hand-over to disk, unreadable metadata or store, a layout
 * epoch past the first (a launch that resumed from disk begins at version 1
 * again); and a job of which no survivor holds a store, or too few to
 * rebuild the layout (a whole cluster lost looks the same, and so does
 * one store left over from an older run). */
enum {
  FRESH,
  ENCODED,
  DAMAGED,
  MISSING,
  NEWER,
  PENDING,
  MARKED,
  META_BAD,
  UNREADABLE,
  NO_STORES,
  EPOCH,
  LAYOUT,
  TOO_MANY,
  LEFT_ALONE,
  NCASES
};

static int never_after(int variant, char *msg, size_t msglen) {
  unsigned char lost[12];
  memset(lost, 0, sizeof(lost));
  NODES = 12;
  ft__groups_t g;
  form(&g);
  lost[g.members[0][1]] = 1;
  /* m + 1 of group 0's nodes lost; or all but one node of each group,
   * whose stores (an older run's, left over) are all that is there */
  for (int p = 2; variant == TOO_MANY && p < M + 2; p++)
    lost[g.members[0][p]] = 1;
  for (int n = 0; variant == LEFT_ALONE && n < NODES; n++)
    lost[n] = g.pos_of[n] != 0;
  ft__restore_t r;
  memset(&r, 0, sizeof(r));
  snprintf(r.job, sizeof(r.job), "plan");
  r.opts.mode = FT_RESTORE_REPLACE;
  r.size = NODES;
  r.all = calloc((size_t)r.size, sizeof(ft__rnode_t));
  ck_assert_ptr_nonnull(r.all);
  int i = 0;
  for (int n = 0; n < NODES; n++) {
    if (lost[n] || variant == NO_STORES)
      continue;
    ft__rnode_t *s = &r.all[i++];
    summary(s, &g, n);
    s->state[0] = FT_SLOT_FILLING;
    s->version[0] = 1, s->step[0] = 0;
    s->slot_ok[1] = 1, s->slot_rc[1] = FT_OK;
    s->vepoch[1] = s->vlayout[1] = 1;
    s->state[1] = FT_SLOT_EMPTY;
  }
  for (int j = i; j < r.size; j++)
    snprintf(r.all[j].host, sizeof(r.all[j].host), "spare%02d", j);
  ft__groups_free(&g);
  ft__rnode_t *one = &r.all[variant == LEFT_ALONE ? 0 : 5];
  switch (variant) {
  case ENCODED:
    one->state[0] = FT_SLOT_ENCODED;
    break;
  case DAMAGED:
    one->slot_ok[1] = 0, one->slot_rc[1] = FT_ECORRUPT;
    break;
  case MISSING:
    one->slot_ok[1] = 0, one->slot_rc[1] = FT_ENOENT;
    break;
  case NEWER:
    one->version[0] = 3;
    break;
  case PENDING:
    one->pend_epoch = 2;
    break;
  case MARKED:
    one->marked = 1;
    break;
  case META_BAD:
    one->has_meta = 0, one->meta_bad = 1;
    break;
  case UNREADABLE:
    r.all[NODES - 1].err = FT_EIO;
    break;
  case EPOCH: /* a launch that resumed from disk, or after a rebuild */
    for (int k = 0; k < i; k++)
      r.all[k].epoch = 2;
    break;
  case LAYOUT:
    for (int k = 0; k < i; k++)
      r.all[k].epoch = r.all[k].layout = 2, r.all[k].vepoch[1] = 2;
    break;
  default:
    break;
  }
  int rc = ft__survey_plan(&r);
  int never = r.never;
  snprintf(msg, msglen, "%s (%s)", r.msg, ft_err_name(rc));
  ck_assert_int_ne(rc, FT_OK); /* nothing to restore, either way */
  if (never)
    ck_assert_int_eq(rc, FT_ENOSNAPSHOT);
  release(&r, NULL);
  NODES = 2048;
  return never;
}

START_TEST(never_committed) {
  char msg[1024];
  ck_assert_msg(never_after(FRESH, msg, sizeof(msg)), "fresh: %s", msg);
  ck_assert_msg(strstr(msg, "no version of job 'plan' was ever committed"),
                "message: %s", msg);
  for (int v = ENCODED; v < NCASES; v++) {
    ck_assert_msg(!never_after(v, msg, sizeof(msg)),
                  "case %d taken for a job that never committed: %s", v, msg);
  }
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("plan");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120); /* a bound on a hang, not an expected time */
  tcase_add_test(tc, one_lost_per_group);
  tcase_add_test(tc, three_lost_in_one_group);
  tcase_add_test(tc, forty_thousand_nodes);
  tcase_add_test(tc, never_committed);
  suite_add_tcase(s, tc);
  return s;
}
