/*
 * The survey: every rank reads its own store, the summaries are allgathered
 * and every rank derives the same picture from them: the stored layout
 * (nodes, groups, positions, hosts), which nodes are lost, which ranks are
 * spares, the version to restore (the newest one that counts as committed:
 * store.h, ft__newest_committed), which members lost or damaged their copy
 * of it, and which chunks of it fail their CRC.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recovery/survey.h"

#include "base/alloc.h"
#include "base/error.h"

/* The group table of this node's layout (r->gname): FT_GROUP_META or the
 * pending one, whichever holds this node's own entry for it; NULL for
 * none.  FT_ENOMEM only. */
static int pick_table(ft__restore_t *r, ft__meta_t *tmp) {
  static const char *const names[] = {FT_GROUP_META, FT_GROUP_META_PENDING};
  r->gname = NULL;
  for (int i = 0; i < 2 && !r->gname; i++) {
    int rc = ft__group_meta_read(&r->dir, names[i], (int)r->meta->pos, tmp,
                                 NULL, 0);
    if (rc == FT_ENOMEM)
      return rc;
    /* A table of another layout (a promotion or a rebuild cut short
     * between its renames: store.h) must not name the group's nodes. */
    if (rc == FT_OK && ft__meta_same_entry(r->meta, tmp))
      r->gname = names[i];
  }
  return FT_OK;
}

/* The nodes of this node's group, from its group table (a position without
 * an entry stays -1: the table may be missing).  FT_ENOMEM only. */
static int read_members(ft__restore_t *r, ft__rnode_t *me) {
  ft__meta_t *tmp = ft__calloc(1, sizeof(*tmp));
  char msg[256];
  int rc = tmp ? pick_table(r, tmp) : FT_ENOMEM;
  for (int p = 0; p < FT_RESTORE_MAX_GROUP; p++)
    me->members[p] = -1;
  me->members[me->pos] = (int32_t)me->node;
  for (int p = 0; !rc && r->gname && p < me->gsize && p < FT_RESTORE_MAX_GROUP;
       p++) {
    int grc = ft__group_meta_read(&r->dir, r->gname, p, tmp, msg, sizeof(msg));
    if (grc == FT_OK && tmp->layout == r->meta->layout)
      me->members[p] = (int32_t)tmp->node;
    else if (grc == FT_ENOMEM)
      rc = grc;
  }
  ft__meta_free(tmp);
  return rc;
}

/* The epoch and layout of dir's pending layout (0: none).  One that is
 * there but cannot be read may describe a copy here (pending_copy: one of
 * a layout the metadata does not describe, or a slot that cannot be read):
 * then the node's metadata counts as unreadable (the node as lost), never
 * as without a pending layout.  Otherwise it describes nothing here and is
 * ignored (the rebuild removes it).  FT_ENOMEM only.  After read_slots. */
static int pending_copy(const ft__restore_t *r, const ft__rnode_t *me) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if ((me->slot_rc[i] && me->slot_rc[i] != FT_ENOENT &&
         !ft__slot_blank(&r->dir, i)) ||
        (ft__slot_held(me->slot_ok[i], me->state[i], me->version[i]) &&
         me->vlayout[i] != me->layout))
      return 1;
  return 0;
}

static int read_pending(const ft__restore_t *r, ft__rnode_t *me,
                        ft__meta_t *tmp) {
  int rc = ft__meta_read_as(&r->dir, FT_META_PENDING, tmp, NULL, 0);
  if (rc == FT_OK) {
    me->pend_epoch = tmp->epoch;
    me->pend_layout = tmp->layout;
    me->pend_node = (int32_t)tmp->node;
  } else if (rc != FT_ENOENT && rc != FT_ENOMEM && pending_copy(r, me)) {
    snprintf(me->err_msg, sizeof(me->err_msg), "%s/%s: unreadable",
             r->dir.path, FT_META_PENDING);
    me->has_meta = 0;
    me->meta_bad = 1;
  }
  return rc == FT_ENOMEM ? rc : FT_OK;
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* This node's slots: what each holds, or why it could not be read (a
 * damaged or missing copy is rebuilt in place, mark_damaged). */
static void read_slots(ft__restore_t *r, ft__rnode_t *me) {
  for (int i = 0; i < FT_NSLOTS; i++) {
    if (r->slot[i].map)
      ft__slot_close(&r->slot[i]); /* read again with the pending layout */
    r->slot[i].fd = -1;
    me->slot_rc[i] = ft__slot_open(&r->slot[i], &r->dir, i, r->job,
                                   me->slot_msg[i], sizeof(me->slot_msg[i]));
    if (me->slot_rc[i])
      continue;
    me->slot_ok[i] = 1;
    me->version[i] = r->slot[i].hdr->version;
    me->step[i] = r->slot[i].hdr->step;
    me->vepoch[i] = r->slot[i].hdr->epoch;
    me->vlayout[i] = r->slot[i].hdr->layout;
    me->seen = max64(me->seen, max64(me->vepoch[i], me->vlayout[i]));
    me->chunk[i] = r->slot[i].hdr->chunk_bytes;
    me->state[i] = ft__slot_state(&r->slot[i]);
  }
}

/* This rank's store: its metadata (the pending layout's when pending) and
 * slots. */
static void read_local(ft__restore_t *r, ft__rnode_t *me, int pending) {
  memset(me, 0, sizeof(*me));
  snprintf(me->host, sizeof(me->host), "%s", r->host);
  r->gname = NULL;
  if (!r->meta)
    r->meta = ft__calloc(1, sizeof(*r->meta));
  int rc = r->meta ? ft__meta_read_as(&r->dir,
                                      pending ? FT_META_PENDING : FT_META,
                                      r->meta, me->err_msg,
                                      sizeof(me->err_msg))
                   : FT_ENOMEM;
  if (rc == FT_OK) {
    me->has_meta = 1;
    me->node = (int32_t)r->meta->node;
    me->nnodes = (int32_t)r->meta->nnodes;
    me->k = (int32_t)r->meta->k;
    me->m = (int32_t)r->meta->m;
    me->group = (int32_t)r->meta->group;
    me->pos = (int32_t)r->meta->pos;
    me->gsize = (int32_t)r->meta->group_size;
    me->epoch = r->meta->epoch;
    me->layout = r->meta->layout;
    me->flags = r->meta->flags;
    me->next_nnodes = r->meta->next_nnodes;
    me->run = r->meta->run;
    rc = read_members(r, me);
  }
  read_slots(r, me);
  struct stat st;
  me->marked = r->dir.fd >= 0 && (fstatat(r->dir.fd, FT_DISK_MARKER, &st,
                                          AT_SYMLINK_NOFOLLOW) == 0 ||
                                  errno != ENOENT);
  if (rc == FT_OK && me->has_meta) {
    ft__meta_t *tmp = ft__calloc(1, sizeof(*tmp));
    rc = tmp ? read_pending(r, me, tmp) : FT_ENOMEM;
    ft__meta_free(tmp);
  }
  me->seen = max64(me->seen, max64(me->epoch, me->pend_epoch));
  if (rc == FT_ENOMEM)
    snprintf(me->err_msg, sizeof(me->err_msg),
             "%s: out of memory reading the metadata", r->dir.path);
  if (rc == FT_ENOMEM)
    me->err = rc;
  else if (rc != FT_OK && rc != FT_ENOENT)
    me->meta_bad = 1; /* unreadable: counted as lost (mark_damaged) */
}

/* The version slot i of n holds whole, 0 for none (store.h): only a copy
 * made under the layout n's metadata describes counts (its epoch stamp in
 * [layout, epoch]); any other was encoded under groups that this
 * metadata does not describe, and decoding it with them would give wrong
 * bytes. */
static uint64_t held_in(const ft__rnode_t *n, int i) {
  if (n->vlayout[i] != n->layout || n->vepoch[i] < n->layout ||
      n->vepoch[i] > n->epoch)
    return 0;
  return ft__slot_held(n->slot_ok[i], n->state[i], n->version[i]);
}

/* The first slot of n that holds version v (> 0) whole, -1 for none. */
static int holds(const ft__rnode_t *n, uint64_t v) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if (held_in(n, i) == v)
      return i;
  return -1;
}

/* The version slot i of n holds whole made under n's pending layout, 0
 * for none; without one, under its current layout (a node that promoted
 * its pending layout already: store.h). */
static uint64_t held_pending(const ft__rnode_t *n, int i) {
  if (!n->pend_epoch)
    return held_in(n, i);
  if (n->vepoch[i] != n->pend_epoch || n->vlayout[i] != n->pend_layout)
    return 0;
  return ft__slot_held(n->slot_ok[i], n->state[i], n->version[i]);
}

/* The version ft-restore restores (ft__newest_committed, store.h: a
 * damaged or missing copy does not veto it) over the ranks with a store
 * (spares left out); with pending, over the copies made under each one's
 * pending layout.  When epoch != 0, only over the nodes of that layout
 * epoch: those at it, and those whose pending layout is of it (an SMP
 * killed between the commit of that layout's first version and its
 * promotion), with their copies made under it. */
static int committed_in(const ft__restore_t *r, uint64_t epoch, int pending,
                        uint64_t *v) {
  ft__slot_seen_t *seen =
      ft__calloc((size_t)r->size * FT_NSLOTS, sizeof(ft__slot_seen_t));
  unsigned char *ignore = ft__calloc((size_t)r->size, 1);
  if (!seen || !ignore) {
    ft__free(seen), ft__free(ignore);
    return FT_ENOMEM;
  }
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    int pend = epoch ? n->epoch != epoch : pending;
    for (int s = 0; s < FT_NSLOTS; s++) {
      ft__slot_seen_t *x = &seen[(size_t)i * FT_NSLOTS + (size_t)s];
      x->held = pend ? held_pending(n, s) : held_in(n, s);
      x->committed = x->held && n->state[s] == FT_SLOT_COMMITTED;
      x->unusable = !n->slot_ok[s];
    }
    ignore[i] = !n->has_meta ||
                (epoch && n->epoch != epoch && n->pend_epoch != epoch);
  }
  *v = ft__newest_committed(seen, r->size, ignore);
  ft__free(seen), ft__free(ignore);
  return FT_OK;
}

/* A launch that changed the layout wrote it as pending and stamped its
 * versions with the pending epoch (store.h).  When the version to restore
 * counted over the copies made under the nodes' pending layouts (a node
 * without one counting with its current metadata) is at least the one
 * counted under their current layouts, and some pending layout describes
 * it, that is the layout it was made in: *use is 1, and every rank with a
 * pending layout surveys again with it.  Otherwise the pending layout
 * never committed a version and is ignored (the rebuild removes it). */
static int pending_newer(const ft__restore_t *r, int *use) {
  uint64_t cur = 0, pend = 0;
  int rc = committed_in(r, 0, 0, &cur);
  if (rc == FT_OK)
    rc = committed_in(r, 0, 1, &pend);
  /* The same version may count in both (a node holding it COMMITTED makes
   * the others' undescribed copies look damaged): the pending layout is
   * the one when some node's pending layout describes its copy of it. */
  int described = 0;
  for (int i = 0; rc == FT_OK && pend && i < r->size; i++)
    for (int s = 0; s < FT_NSLOTS; s++)
      described |= r->all[i].has_meta && r->all[i].pend_epoch &&
                   held_pending(&r->all[i], s) == pend;
  *use = rc == FT_OK && pend >= cur && described;
  return rc;
}

/* Is node i's store of an older layout epoch than newest, yet a member of
 * the newest layout: same shape, its node index claimed by no node of the
 * newest epoch, and holding the version v those nodes hold in common? */
/* Do n and o hold the same copy of version v: same step, made at the same
 * epoch (version numbers alone repeat across histories). */
static int copies_match(const ft__rnode_t *n, int a, const ft__rnode_t *o,
                        int b) {
  return a >= 0 && b >= 0 && n->step[a] == o->step[b] &&
         n->vepoch[a] == o->vepoch[b] && n->vlayout[a] == o->vlayout[b];
}

static int same_copy(const ft__rnode_t *n, const ft__rnode_t *o, uint64_t v) {
  return copies_match(n, holds(n, v), o, holds(o, v));
}

static int rightful(const ft__restore_t *r, int i, uint64_t newest,
                    uint64_t v) {
  const ft__rnode_t *n = &r->all[i];
  if (!v || holds(n, v) < 0)
    return 0;
  for (int j = 0; j < r->size; j++) {
    const ft__rnode_t *o = &r->all[j];
    if (!o->has_meta || o->epoch != newest)
      continue;
    if (o->nnodes != n->nnodes || o->m != n->m || o->node == n->node ||
        (holds(o, v) >= 0 && !same_copy(n, o, v)))
      return 0; /* a newest node lacking v (its copy damaged) says nothing */
  }
  return 1;
}

/* Is node i, at an older epoch, a member of the newest layout through its
 * pending layout: the newest nodes' layout is its pending one, and it
 * holds, made under it, the same copy of the version v those nodes hold in
 * common?  (An ft-restore that made the pending layout current was cut
 * short after it wrote some nodes, or an SMP was killed between the
 * commit of that layout's first version and its promotion.)  It is
 * surveyed with its pending layout (pending_newer), never taken for a
 * stale store. */
static int rightful_pending(const ft__restore_t *r, int i, uint64_t newest,
                            uint64_t v) {
  const ft__rnode_t *n = &r->all[i];
  int a = -1;
  for (int s = 0; v && n->pend_epoch && s < FT_NSLOTS; s++)
    if (held_pending(n, s) == v)
      a = s;
  if (a < 0)
    return 0;
  for (int j = 0; j < r->size; j++) {
    const ft__rnode_t *o = &r->all[j];
    if (!o->has_meta || o->epoch != newest)
      continue;
    int b = holds(o, v);
    if (o->layout != n->pend_layout || o->node == n->pend_node)
      return 0;
    if (b >= 0 && !copies_match(n, a, o, b))
      return 0; /* a newest node lacking v (its copy damaged) says nothing */
  }
  return 1;
}

/* Stores of two runs of one job name never mix (store.h): refused, naming
 * the hosts, before anything is changed. */
static int check_runs(ft__restore_t *r) {
  const ft__rnode_t *first = NULL;
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    if (!n->has_meta)
      continue;
    if (!first)
      first = n;
    else if (n->run != first->run)
      return ft__rsay(r, FT_EMISMATCH,
                      "%s and %s hold stores of two different runs of job "
                      "'%s' (run %016llx, run %016llx): ft-restore never "
                      "mixes runs, nothing was changed. Remove the store that "
                      "does not belong (%s/%s on its host) and run it again",
                      first->host, n->host, r->job,
                      (unsigned long long)first->run,
                      (unsigned long long)n->run, r->store_root, r->job);
  }
  return FT_OK;
}

/* A store of an older layout epoch than the newest among the ranks is
 * either a member whose ft-restore was cut short while it wrote the new
 * epoch (it holds the version the newest nodes hold: it stays, and the
 * epoch is written again), or the store of a host given up after a
 * failure and rebuilt elsewhere: stale.  A stale store never counts as
 * current: its rank is treated as a node without a store (a spare), and
 * the rebuild clears it before reuse.  Every rank decides the same. */
static int demote_stale(ft__restore_t *r) {
  uint64_t newest = 0;
  for (int i = 0; i < r->size; i++)
    if (r->all[i].has_meta && r->all[i].epoch > newest)
      newest = r->all[i].epoch;
  uint64_t v;
  if (committed_in(r, newest, 0, &v))
    return FT_ENOMEM;
  for (int i = 0; i < r->size; i++) {
    ft__rnode_t *n = &r->all[i];
    if (!n->has_meta || n->epoch == newest)
      continue;
    if (rightful(r, i, newest, v)) {
      r->resync = 1;
      continue;
    }
    if (rightful_pending(r, i, newest, v))
      continue;
    n->has_meta = 0; /* n->epoch stays, for the plan's message */
    memset(n->slot_ok, 0, sizeof(n->slot_ok));
    r->stale |= i == r->rank;
  }
  return FT_OK;
}

static int check_layout(ft__restore_t *r) {
  int first = -1;
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    if (n->err)
      return ft__rsay(r, n->err, "%s: %s", n->host, n->err_msg);
    if (!n->has_meta)
      continue;
    if (first < 0)
      first = i;
    const ft__rnode_t *f = &r->all[first];
    if (n->nnodes != f->nnodes || n->m != f->m || n->layout != f->layout)
      return ft__rsay(r, FT_EMISMATCH,
                 "%s and %s hold stores of different layouts (%d nodes m=%d "
                 "layout %llu vs %d nodes m=%d layout %llu): nothing was "
                 "changed",
                 f->host, n->host, f->nnodes, f->m,
                 (unsigned long long)f->layout, n->nnodes, n->m,
                 (unsigned long long)n->layout);
    if (n->epoch > r->epoch)
      r->epoch = n->epoch;
    r->reslice |= (n->flags & FT_META_RESLICE) != 0;
  }
  if (first < 0)
    return ft__rsay(r, FT_ENOENT, "no node holds a store of job '%s' under %s",
               r->job, r->store_root);
  r->next_epoch = r->epoch + 1;
  for (int i = 0; i < r->size; i++)
    if (r->all[i].seen >= r->next_epoch)
      r->next_epoch = r->all[i].seen + 1;
  r->nnodes = r->all[first].nnodes;
  r->m = r->all[first].m;
  return FT_OK;
}

static int alloc_layout(ft__restore_t *r) {
  int n = r->nnodes;
  r->rank_of_node = ft__malloc((size_t)n * sizeof(int));
  r->group_of = ft__malloc((size_t)n * sizeof(int));
  r->pos_of = ft__malloc((size_t)n * sizeof(int));
  r->gsize = ft__calloc((size_t)n, sizeof(int));
  r->members = ft__calloc((size_t)n, sizeof(*r->members));
  r->hosts = ft__calloc((size_t)n, FT_NAME_MAX);
  r->chunk_of_group = ft__calloc((size_t)n, sizeof(uint64_t));
  r->bad = ft__calloc((size_t)r->size, FT_MAX_CHUNKS); /* for check_chunks */
  if (!r->rank_of_node || !r->group_of || !r->pos_of || !r->gsize ||
      !r->members || !r->hosts || !r->chunk_of_group || !r->bad)
    return ft__rsay(r, FT_ENOMEM, "%s: out of memory for %d nodes' layout",
                    r->host, n);
  for (int i = 0; i < n; i++)
    r->rank_of_node[i] = r->group_of[i] = r->pos_of[i] = -1;
  return FT_OK;
}

/* Place every node named by a survivor's group table into its group. */
static int map_nodes(ft__restore_t *r) {
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    if (!n->has_meta)
      continue;
    if (n->group < 0 || n->group >= r->nnodes || n->gsize < 1 ||
        n->gsize > FT_RESTORE_MAX_GROUP || n->pos >= n->gsize)
      return ft__rsay(r, FT_ECORRUPT, "%s: group fields out of range in meta",
                      n->host);
    if (n->node < 0 || n->node >= r->nnodes || r->rank_of_node[n->node] >= 0)
      return ft__rsay(r, FT_EMISMATCH, "two nodes claim node index %d (%s)",
                 n->node, n->host);
    r->rank_of_node[n->node] = i;
    if (n->group >= r->ngroups)
      r->ngroups = n->group + 1;
    r->gsize[n->group] = n->gsize;
    for (int p = 0; p < n->gsize && p < FT_RESTORE_MAX_GROUP; p++) {
      int node = n->members[p];
      if (node < 0 || node >= r->nnodes)
        continue;
      r->members[n->group][p] = node;
      r->group_of[node] = n->group;
      r->pos_of[node] = p;
    }
  }
  for (int node = 0; node < r->nnodes; node++)
    if (r->group_of[node] < 0)
      return ft__rsay(r, FT_ETOOMANY,
                 "node %d (%s) is described by no survivor's group table: "
                 "its whole group is lost (or the survivors' group.meta "
                 "files are missing); nothing can be rebuilt",
                 node, r->hosts[node][0] ? r->hosts[node] : "?");
  return FT_OK;
}

/* Host names: from the metadata with the newest epoch. */
static int share_hosts(ft__restore_t *r) {
  int best = -1;
  for (int i = 0; i < r->size; i++)
    if (r->all[i].has_meta &&
        (best < 0 || r->all[i].epoch > r->all[best].epoch))
      best = i;
  if (r->rank == best)
    memcpy(r->hosts, r->meta->hosts, (size_t)r->nnodes * FT_NAME_MAX);
  return MPI_Bcast(r->hosts, r->nnodes * FT_NAME_MAX, MPI_CHAR, best,
                   r->comm) == MPI_SUCCESS
             ? FT_OK
             : FT_EMPI;
}

/* Did the job never commit a version?  Only on evidence: the stores of
 * the job's first layout (epoch and layout 1: every rebuild, restore from
 * disk or change of layout moves them up, and a launch that resumed from
 * disk begins its versions at 1 again) whole on enough nodes that the
 * layout could be rebuilt (at most m lost in every group: one store left
 * over from an older run looks the same as a job never started, and is
 * refused), and on each of them no pending layout, no hand-over to the
 * disk tier, and both slots (made while the SMP serves, runtime/smp.c)
 * intact, never encoded, at version 1 at most.  A commit needs every
 * node's parity (store.h), so no survivor would hold such slots had one
 * been made; a store missing, unreadable or damaged proves nothing, and
 * the restore is refused as before. */
static int never_committed(const ft__restore_t *r) {
  int stores = 0;
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    if (n->err || n->meta_bad || n->marked)
      return 0;
    if (!n->has_meta)
      continue;
    if (n->pend_epoch || n->epoch != 1 || n->layout != 1)
      return 0;
    for (int s = 0; s < FT_NSLOTS; s++)
      if (n->slot_rc[s] || !n->slot_ok[s] || n->version[s] > 1 ||
          n->state[s] >= FT_SLOT_ENCODED)
        return 0;
    stores++;
  }
  for (int g = 0; g < r->ngroups; g++) {
    int lost = 0;
    for (int p = 0; p < r->gsize[g]; p++)
      lost += r->rank_of_node[r->members[g][p]] < 0;
    if (lost > r->m)
      return 0;
  }
  return stores > 0;
}

static int pick_version(ft__restore_t *r) {
  int rc = committed_in(r, 0, 0, &r->version);
  if (rc)
    return ft__rsay(r, rc, "%s: out of memory choosing the version", r->host);
  r->never = !r->version && never_committed(r);
  if (r->never)
    return ft__rsay(r, FT_ENOSNAPSHOT,
                    "no version of job '%s' was ever committed: the slots of "
                    "every surviving store are whole and hold none (the job "
                    "failed before its first snapshot committed)",
                    r->job);
  if (!r->version)
    return ft__rsay(r, FT_ENOSNAPSHOT,
                    "no surviving node holds a committed version of job '%s' "
                    "whole",
                    r->job);
  const ft__rnode_t *ref = NULL;
  for (int i = 0; i < r->size; i++) {
    const ft__rnode_t *n = &r->all[i];
    int s = n->has_meta ? holds(n, r->version) : -1;
    if (s < 0)
      continue;
    if (!ref)
      ref = n;
    else if (!same_copy(n, ref, r->version))
      return ft__rsay(r, FT_EMISMATCH,
                      "version %llu of job '%s' is not the same on %s (step "
                      "%llu, made at layout epoch %llu) and %s: two histories "
                      "of the job meet here; nothing was changed",
                      (unsigned long long)r->version, r->job, n->host,
                      (unsigned long long)n->step[s],
                      (unsigned long long)n->vepoch[s], ref->host);
    r->step = n->step[s];
    r->vepoch = n->vepoch[s];
    r->vlayout = n->vlayout[s];
    r->chunk_of_group[n->group] = n->chunk[s];
  }
  const ft__rnode_t *me = &r->all[r->rank];
  r->my_slot = me->has_meta ? holds(me, r->version) : -1;
  return FT_OK;
}

/* CRC of every chunk of the version, allgathered as a failure map. */
static int check_chunks(ft__restore_t *r) {
  unsigned char mine[FT_MAX_CHUNKS] = {0};
  if (r->my_slot >= 0) {
    const ft__slot_t *s = &r->slot[r->my_slot];
    ft__slot_prefault_read(s, 0, s->hdr->k + s->hdr->m);
    for (uint32_t c = 0; c < s->hdr->k + s->hdr->m; c++)
      mine[c] = ft__slot_chunk_crc(s, c) != s->hdr->crc[c];
  }
  if (MPI_Allgather(mine, FT_MAX_CHUNKS, MPI_BYTE, r->bad, FT_MAX_CHUNKS,
                    MPI_BYTE, r->comm) != MPI_SUCCESS)
    return FT_EMPI;
  return FT_OK;
}

/* A member that counts and lacks a whole copy of the version lost or
 * damaged it: every chunk of its copy is an erasure (as a lost node's), to
 * be rebuilt into its own slot.  Every rank derives the same from the
 * survey.  After check_chunks, whose allgather fills r->bad. */
static int mark_damaged(ft__restore_t *r) {
  r->damaged = ft__calloc((size_t)r->size, 1);
  if (!r->damaged)
    return ft__rsay(r, FT_ENOMEM, "%s: out of memory planning the rebuild",
                    r->host);
  for (int i = 0; i < r->size; i++) {
    if (!r->all[i].has_meta || holds(&r->all[i], r->version) >= 0)
      continue;
    r->damaged[i] = 1;
    r->ndamaged++;
    memset(r->bad + (size_t)i * FT_MAX_CHUNKS, 1, FT_MAX_CHUNKS);
  }
  return FT_OK;
}

/* A shrink killed between its two metadata phases left meta.next on some
 * survivors.  If any survivor already switched to it, every survivor wrote
 * it (the second phase starts after the first ended everywhere): finish the
 * switch.  Otherwise undo it.  Collective. */
typedef struct pending {
  uint64_t next_epoch, cur_epoch; /* 0: none */
} pending_t;

/* The epoch of dir/name in *e, 0 when it is missing or unreadable (as if
 * absent); FT_ENOMEM is an error: a file that is there must not be taken
 * for missing. */
static int epoch_of(const ft__dir_t *dir, const char *name, uint64_t *e) {
  uint8_t *buf;
  size_t len;
  char msg[256], path[sizeof(dir->path) + 16];
  *e = 0;
  ft__meta_t *m = ft__calloc(1, sizeof(*m));
  if (!m)
    return FT_ENOMEM;
  snprintf(path, sizeof(path), "%s/%s", dir->path, name);
  int rc =
      ft__store_read_file(dir, name, FT_META_FILE_MAX, &buf, &len, msg, sizeof(msg));
  if (rc == FT_OK) {
    rc = ft__meta_decode(buf, len, m, path, msg, sizeof(msg));
    if (rc == FT_OK)
      *e = m->epoch;
    ft__free(buf);
  }
  ft__meta_free(m);
  return rc == FT_ENOMEM ? rc : FT_OK;
}

/* Collective, whatever rc says: it is agreed on (with this rank's own
 * reading) before the allgather. */
static int resolve_pending(ft__restore_t *r, int rc) {
  pending_t mine = {0, 0};
  if (rc == FT_OK)
    rc = epoch_of(&r->dir, "meta.next", &mine.next_epoch);
  if (rc == FT_OK)
    rc = epoch_of(&r->dir, "meta", &mine.cur_epoch);
  pending_t *all = ft__calloc((size_t)r->size, sizeof(*all));
  if (rc == FT_OK && !all)
    rc = FT_ENOMEM;
  if (rc == FT_ENOMEM)
    ft__rsay(r, rc, "%s: out of memory surveying %s", r->host, r->dir.path);
  if ((rc = ft__ragree(r, rc))) {
    ft__free(all);
    return rc;
  }
  MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                r->comm);
  uint64_t e = 0;
  for (int i = 0; i < r->size; i++)
    e = all[i].next_epoch > e ? all[i].next_epoch : e;
  int forward = e != 0, switched = 0;
  for (int i = 0; e && i < r->size; i++) {
    switched |= all[i].cur_epoch == e;
    if (all[i].cur_epoch && all[i].cur_epoch != e && all[i].next_epoch != e)
      forward = 0;
  }
  forward = forward && switched;
  ft__free(all);
  if (mine.next_epoch && forward)
    rc = ft__store_rename(&r->dir, "meta.next", "meta", r->msg, sizeof(r->msg));
  else if (mine.next_epoch)
    ft__store_unlink(&r->dir, "meta.next", NULL, 0);
  if (r->rank == 0 && e && !r->opts.quiet && !r->opts.json)
    printf("ft-restore: an interrupted shrink was %s\n",
           forward ? "completed" : "undone");
  return rc;
}

/* Read the local store (with the pending layout when pending), share the
 * summaries, and set the stale ones aside. */
static int gather(ft__restore_t *r, int pending) {
  ft__rnode_t me;
  read_local(r, &me, pending);
  if (MPI_Allgather(&me, sizeof(me), MPI_BYTE, r->all, sizeof(me), MPI_BYTE,
                    r->comm) != MPI_SUCCESS)
    return FT_EMPI;
  r->stale = r->resync = 0;
  int rc = check_runs(r);
  return rc == FT_OK ? demote_stale(r) : rc;
}

/* Every step that can fail on one rank alone (memory) is agreed on before
 * the next collective; the others fail alike everywhere, since every rank
 * derives them from the same allgathered summaries. */
int ft__survey_plan(ft__restore_t *r) {
  int rc = check_runs(r);
  if (rc == FT_OK)
    rc = demote_stale(r);
  if (rc == FT_OK)
    rc = check_layout(r);
  if (rc == FT_OK)
    rc = alloc_layout(r);
  if (rc == FT_OK)
    rc = map_nodes(r);
  if (rc == FT_OK)
    rc = pick_version(r);
  return rc == FT_OK ? mark_damaged(r) : rc;
}

int ft__survey(ft__restore_t *r) {
  r->all = ft__calloc((size_t)r->size, sizeof(ft__rnode_t));
  int prc = ft__ragree(r, resolve_pending(r, r->all ? FT_OK : FT_ENOMEM));
  if (prc)
    return prc;
  int use = 0, rc = ft__ragree(r, gather(r, 0));
  if (rc == FT_OK)
    rc = ft__ragree(r, pending_newer(r, &use));
  if (rc == FT_OK && use)
    rc = ft__ragree(
        r, gather(r, r->all[r->rank].has_meta && r->all[r->rank].pend_epoch));
  if (rc == FT_OK)
    rc = check_layout(r);
  if (rc == FT_OK)
    rc = ft__ragree(r, alloc_layout(r));
  if (rc == FT_OK)
    rc = share_hosts(r);
  if (rc == FT_OK)
    rc = map_nodes(r);
  if (rc == FT_OK)
    rc = ft__ragree(r, pick_version(r));
  if (rc == FT_OK)
    rc = check_chunks(r);
  if (rc == FT_OK)
    rc = ft__ragree(r, mark_damaged(r));
  return rc;
}
