/*
 * The rebuild's end, once every erased chunk is in its owner's slot: the
 * rebuilt slots sealed with the CRCs their chunks were made with, and a
 * survivor's repaired chunks checked against the CRCs they were written
 * with; the slots that hold nothing to keep removed; then the new layout
 * epoch written everywhere (spares first, then survivors, then the group
 * tables), or, where lost nodes' data was adopted, the re-slice point the
 * smaller relaunched job starts from, written in two phases.
 */
#include "recovery/finish.h"

#include <math.h>
#include <stdio.h>

#include "base/alloc.h"
#include "base/pulse.h"
#include "recovery/chain.h"
#include "recovery/restore.h"
#include "snapshot/groupmeta.h"

/* ---- sealing ---- */

/* A slot rebuilt whole gets the CRCs its chunks were made with (not read
 * back from it) and COMMITTED; a chunk of it without one was never
 * rebuilt, and the slot is not sealed. */
static int commit_slot(ft__restore_t *r, ft__slot_t *sl, const ft__made_t *m) {
  for (uint32_t c = 0; c < sl->hdr->k + sl->hdr->m; c++)
    if (!m->got[c])
      return ft__rsay(r, FT_ESTATE,
                      "%s: %s: chunk %u was not rebuilt; the slot is left "
                      "unsealed",
                      r->host, sl->path, c);
  ft__slot_set_crcs(sl, m->crc);
  ft__slot_set_state(sl, FT_SLOT_COMMITTED);
  return FT_OK;
}

/* Rebuilt slots get their CRCs and COMMITTED; a survivor's repaired chunk
 * must match the CRC it had when written (read back: it is the CRC of the
 * original bytes, a check of the decode too). */
int ft__seal(ft__restore_t *r, int spare, const ft__made_t *made) {
  for (int node = 0; node < r->nnodes; node++) {
    int rc = r->adopted[node].map
                 ? commit_slot(r, &r->adopted[node], &made[node])
                 : FT_OK;
    if (rc)
      return rc;
  }
  if (r->my_slot < 0)
    return FT_OK;
  ft__slot_t *sl = &r->slot[r->my_slot];
  if (spare || r->damaged[r->rank])
    return commit_slot(r, sl, &made[r->nnodes]);
  /* Only the chunks this node had to repair: the survey verified the rest. */
  const unsigned char *bad = r->bad + (size_t)r->rank * FT_MAX_CHUNKS;
  char msg[512];
  for (uint32_t c = 0; c < sl->hdr->k + sl->hdr->m; c++) {
    int rc = bad[c] ? ft__slot_verify(sl, c, 1, msg, sizeof(msg)) : FT_OK;
    if (rc)
      return ft__rsay(r, rc, "after repair: %s", msg);
  }
  return FT_OK;
}

/* ---- slots that hold nothing to keep ---- */

/* Slot i of rank `rank` failed validation and holds nothing to keep: not
 * the one the version is restored into, of a member that counts.  The
 * newest version that counts as committed is the one restored, so what
 * such a slot held was older or never committed (store.h); left there, it
 * would make the relaunch refuse (runtime/smp_restore.c, refuse_discard). */
int ft__to_clear(const ft__restore_t *r, int rank, int i) {
  const ft__rnode_t *n = &r->all[rank];
  int target = r->damaged[rank] && i == (int)(r->version % FT_NSLOTS);
  return n->has_meta && !target && n->slot_rc[i] &&
         n->slot_rc[i] != FT_ENOENT && n->slot_rc[i] != FT_EMISMATCH;
}

int ft__clear_damaged(ft__restore_t *r) {
  for (int i = 0; i < FT_NSLOTS; i++) {
    char msg[sizeof(r->dir.path) + 128];
    int rc = ft__to_clear(r, r->rank, i)
                 ? ft__slot_unlink(&r->dir, i, msg, sizeof(msg))
                 : FT_OK;
    if (rc)
      return ft__rsay(r, rc, "%s", msg);
  }
  return FT_OK;
}

/* ---- the new metadata ---- */

/* The new epoch's host of every node: the spare that took it, else the
 * rank holding it (a member still at an older epoch may carry an older
 * host list); an adopted node keeps the host it was lost with. */
static void place_hosts(ft__restore_t *r, ft__meta_t *m, const int *helper_of) {
  m->epoch = r->next_epoch;
  /* m's host table has m->nnodes entries: the survey agreed that every
   * node's metadata has r->nnodes */
  for (int node = 0; node < r->nnodes && node < (int)m->nnodes; node++) {
    int rank = helper_of[node] >= 0 && !r->adopt[node] ? helper_of[node]
                                                       : r->rank_of_node[node];
    snprintf(m->hosts[node], FT_NAME_MAX, "%s",
             rank >= 0 ? r->all[rank].host : r->hosts[node]);
  }
  snprintf(m->host, sizeof(m->host), "%s", r->host);
}

/* The node this rank holds in the new epoch (-1: none) and its metadata:
 * a lost node it took whole as a spare, or its own. */
static int my_node(ft__restore_t *r, ft__meta_t *spare_meta,
                   const int *helper_of, ft__meta_t **m) {
  for (int node = 0; node < r->nnodes; node++)
    if (helper_of[node] == r->rank && !r->adopt[node]) {
      *m = spare_meta;
      return node;
    }
  *m = r->meta;
  return r->all[r->rank].has_meta ? (int)r->meta->node : -1;
}

static int wait_blocking(void *arg, MPI_Request *req) {
  (void)arg;
  return MPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? FT_OK : FT_EMPI;
}

static int share_group(ft__restore_t *r, const ft__meta_t *m, int group,
                       int pos) {
  MPI_Comm gc;
  MPI_Comm_split(r->comm, group >= 0 ? group : MPI_UNDEFINED, pos, &gc);
  if (gc == MPI_COMM_NULL)
    return FT_OK;
  int rc = ft__group_meta_share(gc, m, &r->dir, FT_GROUP_META, wait_blocking,
                                NULL, r->msg, sizeof(r->msg));
  MPI_Comm_free(&gc);
  return rc;
}

/* After the new metadata is written: a pending layout (store.h) is either
 * what it was written from or one that never committed, and with
 * adopted, the adopted stores of an earlier shrink are not needed. */
static int tidy(ft__restore_t *r, const ft__meta_t *m, int adopted) {
  int rc = ft__meta_drop_pending(&r->dir, m, r->msg, sizeof(r->msg));
  if (rc == FT_OK && adopted)
    rc = ft__store_remove_adopted(&r->dir, r->msg, sizeof(r->msg));
  return rc;
}

/* A re-slice point (a shrink, or a replace on the re-slice point of an
 * earlier shrink with fewer spares than lost nodes): the nodes held whole
 * (survivors, and spares that took a lost node's place) will be nodes
 * 0..S-1 of a smaller job, in node order; the others' data is adopted.
 * The metadata keeps describing the layout the restore point was made in
 * (its nodes, groups and group tables), so that a loss before the smaller
 * job commits is recovered in the same terms; only next_node and
 * next_nnodes say where each member goes.  Two phases (every member writes
 * meta.next, then every member renames it), so that a restore killed in
 * between is finished or undone by the next run's survey (resolve_pending
 * in survey.c) instead of leaving mixed layouts. */
static int reslice_meta(ft__restore_t *r, ft__meta_t *m, int mine,
                        const int *helper_of) {
  int next = 0;
  for (int node = 0; node < r->nnodes; node++) {
    if (r->rank_of_node[node] < 0 && (helper_of[node] < 0 || r->adopt[node]))
      continue;
    if (node == mine)
      m->next_node = (uint32_t)next;
    next++;
  }
  m->next_nnodes = (uint32_t)next;
  place_hosts(r, m, helper_of);
  m->flags |= FT_META_RESLICE;
  uint8_t *buf;
  size_t len;
  int rc = ft__meta_encode(m, &buf, &len);
  if (rc != FT_OK)
    return rc;
  rc = ft__store_write_file(&r->dir, "meta.next", buf, len, r->msg,
                            sizeof(r->msg));
  ft__free(buf);
  return rc;
}

int ft__write_reslice(ft__restore_t *r, ft__meta_t *spare_meta,
                      const int *helper_of) {
  ft__meta_t *m;
  int node = my_node(r, spare_meta, helper_of, &m);
  int rc =
      ft__ragree(r, node >= 0 ? reslice_meta(r, m, node, helper_of) : FT_OK);
  if (rc == FT_OK && node >= 0)
    rc = ft__store_rename(&r->dir, "meta.next", "meta", r->msg, sizeof(r->msg));
  /* The group table stays the one of the version's layout: when that was
   * the pending one, tidy makes it the current one (ft__meta_drop_pending
   * keeps the table that matches m). */
  return rc == FT_OK && node >= 0 ? tidy(r, m, 0) : rc;
}

/* New epoch everywhere: spares first, then survivors, then group tables.
 * Every node of the layout is held whole again: a re-slice point left by
 * an earlier shrink is not needed any more (its adopted stores go). */
int ft__write_epoch(ft__restore_t *r, ft__meta_t *spare_meta,
                    const int *helper_of) {
  ft__meta_t *m;
  int node = my_node(r, spare_meta, helper_of, &m);
  int spare = m == spare_meta, member = node >= 0;
  char msg[512] = "";
  int rc = FT_OK;
  if (member) {
    place_hosts(r, m, helper_of);
    m->flags &= ~FT_META_RESLICE;
    m->next_node = m->next_nnodes = 0;
  }
  if (spare)
    rc = ft__meta_write(&r->dir, m, msg, sizeof(msg));
  MPI_Request bar;
  MPI_Ibarrier(r->comm, &bar);
  (void)ft__pulse_wait_plain(&bar, HUGE_VAL, FT_PULSE_NAP_SHORT);
  if (!spare && member)
    rc = ft__meta_write(&r->dir, m, msg, sizeof(msg));
  int grc =
      share_group(r, m, member ? (int)m->group : -1, member ? (int)m->pos : 0);
  if (rc)
    ft__rsay(r, rc, "%s", msg);
  if (rc == FT_OK && grc == FT_OK && member)
    rc = tidy(r, m, 1);
  return rc ? rc : grc;
}
