/*
 * The rebuild, ft-restore's step after the survey.  First the plan, which
 * every rank computes alike from the survey and which changes nothing:
 * the rank that takes each lost node's data, whole as a spare in its
 * place or adopted by a survivor, and whether every stripe keeps k usable
 * chunks; rank 0 prints it.  Then the steps, each agreed on before the
 * next so that every rank goes on or stops together: the slots that
 * receive the rebuilt chunks (prepare.c), every erased chunk along the
 * chain of its sources (chain.c), the slots sealed and the new metadata
 * written (finish.c).
 */
#include "recovery/rebuild.h"

#include <math.h>
#include <stdio.h>

#include "base/alloc.h"
#include "base/pulse.h"
#include "recovery/chain.h"
#include "recovery/finish.h"
#include "recovery/prepare.h"
#include "recovery/restore.h"

/* ---- plan ---- */

static int shrinking(const ft__restore_t *r) {
  return r->opts.mode == FT_RESTORE_SHRINK;
}

/* The rank that takes each lost node's data (-1 where none), in node order,
 * and how (r->adopt): whole, in its own store (a spare, which takes the
 * node's place), or adopted by a survivor, data only, in an adopt<N>/
 * store that the relaunch re-slices.  Shrink mode adopts every lost node,
 * round-robin over the survivors.  Replace mode gives each a spare; on the
 * re-slice point of an earlier shrink (r->reslice) the nodes beyond the
 * spares are adopted as in a shrink, since the relaunch re-slices anyway. */
static void assign_helpers(ft__restore_t *r, int *helper_of) {
  int next = 0, turn = 0;
  for (int node = 0; node < r->nnodes; node++) {
    helper_of[node] = -1;
    r->adopt[node] = 0;
    if (r->rank_of_node[node] >= 0)
      continue;
    r->nlost++;
    while (!shrinking(r) && next < r->size &&
           (r->all[next].has_meta || r->all[next].err))
      next++;
    if (!shrinking(r) && next < r->size) {
      helper_of[node] = next++;
      continue;
    }
    if (!shrinking(r) && !r->reslice)
      continue;
    for (int tries = 0; tries < r->nnodes; tries++) {
      int cand = r->rank_of_node[turn++ % r->nnodes];
      if (cand >= 0) {
        helper_of[node] = cand;
        r->adopt[node] = 1;
        break;
      }
    }
  }
}

/* Does any lost node's data go to an adopt<N>/ store? */
static int adopting(const ft__restore_t *r) {
  for (int node = 0; node < r->nnodes; node++)
    if (r->adopt[node])
      return 1;
  return 0;
}

/* The hosts of group g that are lost (damaged = 0) or whose copy of the
 * version is damaged (damaged = 1), comma-separated. */
static int erased_list(const ft__restore_t *r, int g, int damaged, char *out,
                       size_t len) {
  size_t n = 0;
  int count = 0;
  out[0] = '\0';
  for (int p = 0; p < r->gsize[g] && n < len; p++) {
    int node = r->members[g][p], rank = r->rank_of_node[node];
    if (damaged ? rank < 0 || !r->damaged[rank] : rank >= 0)
      continue;
    n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "",
                          r->hosts[node]);
    count++;
  }
  return count;
}

static void lost_list(const ft__restore_t *r, int g, char *out, size_t len) {
  char lost[256], damaged[256];
  int nl = erased_list(r, g, 0, lost, sizeof(lost));
  if (!erased_list(r, g, 1, damaged, sizeof(damaged)))
    snprintf(out, len, "lost hosts [%s]", lost);
  else if (nl)
    snprintf(out, len, "lost hosts [%s], damaged copies on [%s]", lost,
             damaged);
  else
    snprintf(out, len, "damaged copies on [%s]", damaged);
}

/* Every stripe must have at least k usable chunks. */
static int check_recoverable(ft__restore_t *r) {
  for (int g = 0; g < r->ngroups; g++) {
    int n = r->gsize[g];
    for (int s = 0; s < n; s++) {
      int erased = 0;
      for (int role = 0; role < n; role++)
        erased += ft__chunk_bad(r, ft__node_at(r, g, s, role), role);
      if (erased <= r->m)
        continue;
      char lost[600];
      lost_list(r, g, lost, sizeof(lost));
      return ft__rsay(r, FT_ETOOMANY,
                      "group %d lost %d chunks of stripe %d but m=%d: %s%s; "
                      "version %llu (step %llu) cannot be rebuilt; "
                      "nothing was changed",
                      g, erased, s, r->m, lost,
                      r->ncorrupt ? ", plus chunks that failed their CRC" : "",
                      (unsigned long long)r->version,
                      (unsigned long long)r->step);
    }
  }
  return FT_OK;
}

/* Chunks that failed their CRC (a damaged copy's chunks are not counted:
 * the whole copy is rebuilt). */
static int count_corrupt(ft__restore_t *r) {
  int n = 0;
  for (int node = 0; node < r->nnodes; node++) {
    int rank = r->rank_of_node[node];
    if (rank >= 0 && r->damaged[rank])
      continue;
    for (int c = 0; rank >= 0 && c < FT_MAX_CHUNKS; c++)
      n += r->bad[(size_t)rank * FT_MAX_CHUNKS + (size_t)c];
  }
  return n;
}

/* Slots that hold nothing to keep, over every rank (removed at the end). */
static int count_cleared(const ft__restore_t *r) {
  int n = 0;
  for (int rank = 0; rank < r->size; rank++)
    for (int i = 0; i < FT_NSLOTS; i++)
      n += ft__to_clear(r, rank, i);
  return n;
}
/* ---- the plan printed ---- */

/* Why rank i holds no whole copy of the version. */
static void why_damaged(const ft__restore_t *r, int i, char *out, size_t len) {
  const ft__rnode_t *n = &r->all[i];
  int s = (int)(r->version % FT_NSLOTS);
  if (n->slot_rc[s] == FT_ENOENT)
    snprintf(out, len, "slot%d is missing", s);
  else if (n->slot_rc[s])
    snprintf(out, len, "%s", n->slot_msg[s]);
  else
    snprintf(out, len, "slot%d holds version %llu (%s)", s,
             (unsigned long long)n->version[s],
             ft__slot_state_name(n->state[s]));
}

static void print_damage(const ft__restore_t *r) {
  char why[256];
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    if (n->meta_bad)
      printf("ft-restore: %s: unreadable metadata (%s): its node counts as "
             "lost\n",
             n->host, n->err_msg);
    if (r->damaged[i]) {
      why_damaged(r, i, why, sizeof(why));
      printf("ft-restore: damaged copy of version %llu on %s (node %d, group "
             "%d position %d): %s; rebuilt in place\n",
             (unsigned long long)r->version, n->host, n->node, n->group, n->pos,
             why);
    }
    for (int s = 0; s < FT_NSLOTS; s++)
      if (ft__to_clear(r, i, s))
        printf("ft-restore: %s: %s; it holds no version to keep: removed\n",
               n->host, n->slot_msg[s]);
  }
}

static void print_plan(const ft__restore_t *r, const int *helper_of) {
  if (r->rank != 0 || r->opts.json)
    return;
  printf("ft-restore: job %s, %d nodes, m=%d, layout epoch %llu, version %llu "
         "(step %llu)\n",
         r->job, r->nnodes, r->m, (unsigned long long)r->epoch,
         (unsigned long long)r->version, (unsigned long long)r->step);
  for (int node = 0; node < r->nnodes; node++)
    if (r->rank_of_node[node] < 0)
      printf("ft-restore: lost node %d (%s, group %d position %d) -> %s%s\n",
             node, r->hosts[node], r->group_of[node], r->pos_of[node],
             helper_of[node] >= 0 ? r->all[helper_of[node]].host : "(no spare)",
             r->adopt[node] ? " (adopted: data only, re-sliced at relaunch)"
                            : "");
  for (int i = 0; i < r->size; i++)
    if (!r->all[i].has_meta && !r->all[i].meta_bad && r->all[i].epoch)
      printf("ft-restore: %s holds a stale store (layout epoch %llu, the "
             "newest is %llu): never read, cleared if it takes a lost "
             "node's place\n",
             r->all[i].host, (unsigned long long)r->all[i].epoch,
             (unsigned long long)r->epoch);
    else if (r->all[i].has_meta && r->all[i].epoch != r->epoch)
      printf("ft-restore: %s is still at layout epoch %llu (a restore cut "
             "short?): its metadata is written again\n",
             r->all[i].host, (unsigned long long)r->all[i].epoch);
  print_damage(r);
  if (r->ncorrupt)
    printf("ft-restore: %d chunk(s) failed their CRC and will be rebuilt\n",
           r->ncorrupt);
  int tasks = ft__count_tasks(r);
  printf("ft-restore: %d chunk(s) to rebuild, %.1f MiB\n", tasks,
         (double)tasks * (double)r->chunk_of_group[0] / 1048576.0);
  fflush(stdout);
}

int ft__rebuild_plan(ft__restore_t *r, int *helper_of) {
  assign_helpers(r, helper_of);
  r->ncorrupt = count_corrupt(r);
  r->ncleared = count_cleared(r);
  int rc = check_recoverable(r);
  for (int node = 0; rc == FT_OK && node < r->nnodes; node++)
    if (r->rank_of_node[node] < 0 && helper_of[node] < 0)
      rc =
          ft__rsay(r, FT_EINVAL,
                   "replace mode needs %d spare node(s) (nodes without a store "
                   "of this job), this launch has fewer: add spares or use "
                   "--mode shrink",
                   r->nlost);
  return rc;
}

/* ---- the rebuild ---- */

/* How many slots came prepared, over every rank (for the report), before
 * anything is committed: napping, as the agreements wait. */
static int sum_prepared(ft__restore_t *r) {
  int mine = r->prepared, all = 0;
  MPI_Request req;
  if (MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_SUM, r->comm, &req) !=
          MPI_SUCCESS ||
      ft__pulse_wait_plain(&req, HUGE_VAL, FT_PULSE_NAP_SHORT) != FT_OK)
    return ft__rsay(r, FT_EMPI, "%s: MPI failed counting the prepared slots",
                    r->host);
  r->prepared = all;
  return FT_OK;
}

int ft__rebuild(ft__restore_t *r) {
  int *helper_of = ft__calloc((size_t)r->nnodes, sizeof(int));
  ft__meta_t *spare_meta = ft__calloc(1, sizeof(*spare_meta));
  ft__made_t *made = ft__calloc((size_t)r->nnodes + 1, sizeof(ft__made_t));
  r->adopted = ft__calloc((size_t)r->nnodes, sizeof(ft__slot_t));
  r->adopt = ft__calloc((size_t)r->nnodes, 1);
  for (int node = 0; r->adopted && node < r->nnodes; node++)
    r->adopted[node].fd = -1;
  int rc = FT_OK;
  if (!helper_of || !spare_meta || !made || !r->adopted || !r->adopt)
    rc = ft__rsay(r, FT_ENOMEM, "%s: out of memory planning the rebuild",
                  r->host);
  if ((rc = ft__ragree(r, rc)))
    goto out;
  rc = ft__rebuild_plan(r, helper_of);
  if (rc == FT_OK)
    print_plan(r, helper_of);
  if (rc || r->opts.dry_run ||
      (!r->nlost && !r->ncorrupt && !r->resync && !r->ndamaged && !r->ncleared))
    goto out;
  double t0 = MPI_Wtime();
  /* Adopted stores are copies decoded from the version's stripes: an
   * earlier shrink's (or one left by a shrink redone as a replace) would
   * otherwise meet this one's under the same names. */
  if (adopting(r))
    rc = ft__ragree(
        r, r->all[r->rank].has_meta
               ? ft__store_remove_adopted(&r->dir, r->msg, sizeof(r->msg))
               : FT_OK);
  for (int node = 0; rc == FT_OK && node < r->nnodes; node++)
    if (helper_of[node] >= 0)
      rc = ft__ragree(r,
                      ft__prepare_helper(r, node, helper_of[node], spare_meta));
  if (rc == FT_OK && r->ndamaged) /* everywhere before any copy is made */
    rc = ft__ragree(r, ft__promote(r));
  if (rc == FT_OK)
    rc = ft__ragree(r, r->damaged[r->rank] ? ft__reshape_damaged(r) : FT_OK);
  if (rc == FT_OK)
    rc = ft__ragree(r, ft__rebuild_all(r, helper_of, made));
  int is_spare = 0;
  for (int node = 0; node < r->nnodes; node++)
    is_spare |= helper_of[node] == r->rank && !r->adopt[node];
  if (rc == FT_OK)
    rc = ft__ragree(r, ft__seal(r, is_spare, made));
  if (rc == FT_OK)
    rc = ft__ragree(r, sum_prepared(r));
  if (rc == FT_OK)
    rc = ft__ragree(r, ft__clear_damaged(r));
  if (rc == FT_OK)
    rc = ft__ragree(r, adopting(r) ? ft__write_reslice(r, spare_meta, helper_of)
                                   : ft__write_epoch(r, spare_meta, helper_of));
  r->seconds = MPI_Wtime() - t0;
out:
  ft__free(helper_of);
  ft__meta_free(spare_meta);
  ft__free(made);
  return rc;
}
