/*
 * The SMP's layout, made once every local trainer has registered
 * (collective).  Each trainer's buffer table is read and, for a relaunch,
 * checked against the stored one; the slots are sized (the chunk size
 * depends on the group's largest node); the epoch and layout number are
 * chosen; this node's metadata is written and the group's shared
 * (snapshot/groupmeta.h), as the pending layout while a committed version
 * of the old one is the restore point.  The SMP is then bound to a core no
 * local trainer uses.  The outcome is posted in the control segment, where
 * the trainers' ft_restore or first ft_snapshot finds it.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/layout.h"
#include "runtime/smp_impl.h"
#include "runtime/topo.h"
#include "snapshot/groupmeta.h"

/* Tables registered now must equal the ones that wrote the restore point. */
static int check_tables(smp_t *s) {
  if (!s->store.meta || !s->ctl->restore_version || s->ctl->restore_reslice)
    return FT_OK; /* a re-slicing restore matches buffers by name instead */
  for (int i = 0; i < s->c->nlocal; i++) {
    const ft__ctl_rank_t *r = &s->ctl->rank[i];
    const ft__rank_rec_t *o = &s->store.meta->ranks[i];
    if (r->app_rank != o->rank)
      return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                      "%s/meta: trainer %d of this node was rank %u when the "
                      "snapshot was taken and is rank %u now: launch the "
                      "nodes in the stored order (node %d of the layout is "
                      "here)",
                      s->c->dir.path, i, o->rank, r->app_rank, s->node);
    const ft__buf_rec_t *t = s->layout.tabs[i];
    for (uint32_t b = 0; b < r->nbufs || b < o->nbufs; b++) {
      if (b < r->nbufs && b < o->nbufs &&
          strcmp(t[b].name, o->bufs[b].name) == 0 &&
          t[b].bytes == o->bufs[b].bytes)
        continue;
      return ft__msgf(
          FT_EMISMATCH, s->msg, sizeof(s->msg),
          "%s/meta: trainer %d registered buffer %u as '%s' (%llu bytes) but "
          "the snapshot holds '%s' (%llu bytes): relaunch with the same model "
          "and flags",
          s->c->dir.path, i, b, b < r->nbufs ? t[b].name : "(none)",
          b < r->nbufs ? (unsigned long long)t[b].bytes : 0ull,
          b < o->nbufs ? o->bufs[b].name : "(none)",
          b < o->nbufs ? (unsigned long long)o->bufs[b].bytes : 0ull);
    }
  }
  return FT_OK;
}

static int size_slots(smp_t *s) {
  uint64_t bytes[FT_MAX_LOCAL];
  for (int i = 0; i < s->c->nlocal; i++)
    bytes[i] = s->ctl->rank[i].region_bytes;
  int rc = ft__slot_geom_local(&s->layout.geom, (uint32_t)s->c->nlocal, bytes);
  uint64_t *all = s->scratch; /* allocated at start-up: nothing to agree on */
  uint64_t mine = s->layout.geom.local_bytes;
  int arc = ft__smp_allgather(s, &mine, all, sizeof(mine), "layout");
  uint64_t max = 0;
  for (int j = 0; j < s->ec.gsize; j++) {
    int node = s->ec.groups.members[s->ec.group][j];
    uint64_t b = all[s->job.order[node]]; /* all[] is in smp_comm rank order */
    if (b > max)
      max = b;
  }
  if (rc || arc)
    return rc ? rc : arc;
  size_t chunk = ft__layout_chunk_bytes(max, s->ec.k);
  return ft__slot_geom_code(&s->layout.geom, (uint32_t)s->ec.k,
                            (uint32_t)s->ec.m, chunk);
}

/* m: zeroed.  FT_ENOMEM for its tables. */
static int fill_meta(smp_t *s, ft__meta_t *m) {
  if (ft__meta_alloc_hosts(m, (uint32_t)s->nnodes))
    return FT_ENOMEM;
  snprintf(m->job, sizeof(m->job), "%s", s->c->cfg.job);
  snprintf(m->host, sizeof(m->host), "%s", s->c->host);
  m->epoch = s->layout.epoch;
  m->layout = s->layout.number;
  m->run = s->job.run;
  m->node = (uint32_t)s->node;
  MPI_Comm_size(MPI_COMM_WORLD, (int *)&m->ntrainers);
  m->ntrainers -= (uint32_t)s->nnodes;
  m->k = (uint32_t)s->ec.k, m->m = (uint32_t)s->ec.m;
  m->group = (uint32_t)s->ec.group, m->pos = (uint32_t)s->ec.pos;
  m->group_size = (uint32_t)s->ec.gsize;
  m->nlocal = (uint32_t)s->c->nlocal;
  memcpy(m->hosts, s->job.hosts, (size_t)s->nnodes * FT_NAME_MAX);
  for (int i = 0; i < s->c->nlocal; i++) {
    const ft__ctl_rank_t *r = &s->ctl->rank[i];
    if (ft__meta_alloc_bufs(m, (uint32_t)i, r->nbufs))
      return FT_ENOMEM;
    m->ranks[i].rank = r->app_rank;
    m->ranks[i].region_bytes = r->region_bytes;
    if (r->nbufs)
      memcpy(m->ranks[i].bufs, s->layout.tabs[i],
             r->nbufs * sizeof(ft__buf_rec_t));
  }
  return FT_OK;
}

/* Every member of the group keeps every member's metadata (collective over
 * the group; a member with nothing to share sends zero bytes). */

static int wait_group(void *arg, MPI_Request *req) {
  return ft__smp_wait_req(arg, req, "group metadata");
}

/* Write this node's metadata and share the group's (collective): as the
 * current layout, or as the pending one (store.h). */
static int write_meta(smp_t *s, int rc) {
  ft__meta_t *m = ft__calloc(1, sizeof(*m));
  const char *name = s->layout.pending ? FT_META_PENDING : FT_META;
  if (rc == FT_OK && !m)
    rc = ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "%s/%s: out of memory to write it", s->c->dir.path, name);
  if (rc == FT_OK && fill_meta(s, m))
    rc = ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "%s/%s: out of memory to write it", s->c->dir.path, name);
  if (rc == FT_OK)
    rc = ft__meta_write_as(&s->c->dir, name, m, s->msg, sizeof(s->msg));
  int grc = ft__group_meta_share(
      s->ec.gcomm, rc == FT_OK ? m : NULL, &s->c->dir,
      s->layout.pending ? FT_GROUP_META_PENDING : FT_GROUP_META, wait_group, s,
      s->msg, sizeof(s->msg));
  ft__meta_free(m);
  return rc ? rc : grc;
}

/* Is this launch's grouping the stored one (same nodes, code, groups and
 * positions; check_tables compares the rank tables)? */
static int same_layout(const smp_t *s) {
  const ft__meta_t *m = s->store.meta;
  return m && !(m->flags & FT_META_RESLICE) &&
         m->nnodes == (uint32_t)s->nnodes && m->node == (uint32_t)s->node &&
         m->k == (uint32_t)s->ec.k && m->m == (uint32_t)s->ec.m &&
         m->group == (uint32_t)s->ec.group && m->pos == (uint32_t)s->ec.pos &&
         m->group_size == (uint32_t)s->ec.gsize &&
         m->nlocal == (uint32_t)s->c->nlocal;
}

/* The epoch this launch's layout is written at (collective).  The stored
 * layout kept: its epochs.  A new one: the next epoch, and while a
 * committed version of the old one is the restore point, written as the
 * pending layout, so that a loss before this launch's first commit is
 * still recovered with the layout that version was made in. */
static int choose_epoch(smp_t *s) {
  uint64_t same = 0, seen = 0;
  int rc = ft__smp_min_u64(s, same_layout(s), &same, "layout");
  /* A new layout's number is above every epoch and layout number any
   * node's store holds: none is handed out twice (store.h). */
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, ~s->store.seen, &seen, "layout");
  if (rc)
    return rc;
  s->layout.pending = !same && s->store.meta && s->ctl->restore_version != 0;
  s->layout.epoch = same ? s->store.meta->epoch : ~seen + 1;
  /* The disk holds a newer epoch than this layout's: another timeline's
   * (a launch that resumed from disk elsewhere).  This launch's versions
   * must rank above its (persist.h), so its epoch moves up; the layout,
   * and what it describes, stay (ft__meta_describes: [layout, epoch]). */
  if (same && s->disk.epoch > s->layout.epoch)
    s->layout.epoch = s->disk.epoch + 1;
  s->layout.number = same ? s->store.meta->layout : ~seen + 1;
  return FT_OK;
}

/* Every local trainer's buffer table (ctl.h), or the first failure. */
static int load_tables(smp_t *s) {
  char msg[512];
  for (int i = 0; i < s->c->nlocal; i++) {
    const ft__ctl_rank_t *r = &s->ctl->rank[i];
    int rc = r->reg_status;
    if (rc)
      return ft__msgf(rc, s->msg, sizeof(s->msg),
                      "trainer %d of %s could not hand over its buffer table "
                      "(its log says why)",
                      i, s->c->host);
    ft__free(s->layout.tabs[i]);
    rc = ft__ctl_get_bufs(s->ctl, &s->c->dir, (uint32_t)i, &s->layout.tabs[i],
                          msg, sizeof(msg));
    if (rc)
      return ft__msgf(rc, s->msg, sizeof(s->msg), "%s", msg);
  }
  return FT_OK;
}

/* Files ft-spare prepared on this host when it was a spare, which no
 * rebuild took (it became a node otherwise, or a rebuild gave up waiting
 * for them): the memory they hold is given back.  A preparation under way
 * stops once it sees this store, and is waited for (nothing is waited for
 * where there is none). */
static void drop_prepared(const smp_t *s) {
  ft__dir_t spare;
  int lock;
  if (ft__spare_take(s->c->cfg.store_root, s->c->dir.path, FT_SPARE_WAIT_S,
                     &spare, &lock))
    ft__spare_release(&spare, lock);
}

int ft__smp_do_layout(smp_t *s) {
  ft__store32(&s->ctl->phase, FT_PHASE_LAYOUT);
  drop_prepared(s);
  int trc = load_tables(s);
  int rc = size_slots(s); /* collective: runs whatever the local checks say */
  int erc = choose_epoch(s);
  if (rc == FT_OK)
    rc = trc ? trc : erc ? erc : check_tables(s);
  rc = write_meta(s, rc);
  ft__topo_bind_smp(s->c, s->ctl->binding, sizeof(s->ctl->binding),
                    s->ctl->smp_cpus, sizeof(s->ctl->smp_cpus));
  s->ctl->layout_status = rc;
  snprintf(s->ctl->msg, sizeof(s->ctl->msg), "%s", s->msg);
  s->layout.done = 1;
  ft__store32(&s->ctl->phase, FT_PHASE_IDLE);
  return rc;
}
