/*
 * The rebuild: a task list computed identically on every rank (one task per
 * erased chunk of every stripe), walked in the same order by all, so each
 * rank knows when it is a source, when it is the owner that decodes, and
 * when it has nothing to do.  Sources send their chunk in pieces straight
 * from their slot; the owner decodes each piece into its own slot, so no
 * chunk is ever staged whole.
 *
 * The owner of an erased chunk is the spare that replaces a lost node, or,
 * for a chunk that failed its CRC or a member whose copy of the version is
 * damaged or missing, the node that holds it (its slot made anew first).
 * Decode uses the first k healthy chunks of the stripe and marks the other
 * m as erased, so the codec always solves with exactly k known chunks.
 *
 * A rebuilt chunk's CRC is computed where its bytes are made (the chain's
 * last link, as it sends them) and sent after them: the owner seals the slot
 * with it without reading the chunk back, and a byte that arrives wrong, or
 * is corrupted on the owner before anyone reads it, fails that CRC when the
 * slot is read, instead of being sealed as the rebuilt data.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/pulse.h"
#include "ec/codec.h"
#include "ec/crc.h"
#include "recovery/rebuild.h"
#include "recovery/restore.h"
#include "snapshot/ctl.h"
#include "snapshot/groupmeta.h"
#include "snapshot/hold.h"

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

/* An adopted node's parity stays lost: the relaunched job, on fewer
 * nodes, encodes anew at its first snapshot. */
static int wanted(const ft__restore_t *r, int g, int node, int role) {
  return ft__chunk_bad(r, node, role) &&
         !(r->adopt[node] && role >= ft__group_k(r, g));
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

/* ---- spares ---- */

/* Tags of the point-to-point messages of the rebuild. */
enum {
  TAG_META_LEN = 1,
  TAG_META = 2,
  TAG_PIECE = 3,
  TAG_META_ROOM = 5,
  TAG_CRC = 6 /* after a chunk's pieces: the last link's status, the CRC */
};

/* The group table that describes the version: the bytes of r->gname (the
 * survey picked it), to free with ft__free.  With a message on failure. */
static int read_table(ft__restore_t *r, uint8_t **buf, size_t *len) {
  char msg[256];
  *buf = NULL;
  if (!r->gname)
    return ft__rsay(r, FT_ECORRUPT,
                    "%s: no group table in %s describes its layout: the "
                    "lost members of its group cannot be described",
                    r->host, r->dir.path);
  int rc = ft__store_read_file(&r->dir, r->gname, FT_MAX_CHUNKS * FT_META_FILE_MAX, buf, len, msg,
                               sizeof(msg));
  return rc ? ft__rsay(r, rc, "%s", msg) : FT_OK;
}

/* The survivor's side of send_meta: the length of its group table, and
 * the bytes once the helper says it has room for them (a helper out of
 * memory must not leave the survivor blocked in a send nobody receives). */
static int give_table(ft__restore_t *r, int helper) {
  uint8_t *buf = NULL;
  size_t len = 0;
  int rc = read_table(r, &buf, &len);
  int64_t l = rc == FT_OK ? (int64_t)len : rc; /* < 0: the status */
  int room = 0;
  MPI_Send(&l, 1, MPI_INT64_T, helper, TAG_META_LEN, r->comm);
  if (l > 0)
    MPI_Recv(&room, 1, MPI_INT, helper, TAG_META_ROOM, r->comm,
             MPI_STATUS_IGNORE);
  if (room)
    MPI_Send(buf, (int)l, MPI_BYTE, helper, TAG_META, r->comm);
  ft__free(buf);
  return rc;
}

static int take_table(ft__restore_t *r, int from, uint8_t **buf,
                      size_t *len) {
  int64_t l = 0;
  MPI_Recv(&l, 1, MPI_INT64_T, from, TAG_META_LEN, r->comm, MPI_STATUS_IGNORE);
  if (l <= 0) { /* the survivor could not read it: its status, its message */
    r->msg[0] = '\0';
    return l < 0 ? (int)l : FT_ECORRUPT;
  }
  *buf = ft__malloc((size_t)l);
  int room = *buf != NULL;
  MPI_Send(&room, 1, MPI_INT, from, TAG_META_ROOM, r->comm);
  if (!room)
    return ft__rsay(r, FT_ENOMEM, "%s: no memory for %llu bytes of metadata",
                    r->host, (unsigned long long)l);
  MPI_Recv(*buf, (int)l, MPI_BYTE, from, TAG_META, r->comm, MPI_STATUS_IGNORE);
  *len = (size_t)l;
  return FT_OK;
}

/* A survivor of the lost node's group hands its helper the group table
 * (*table, to free with ft__free) and, from it, the node's metadata. */
static int send_meta(ft__restore_t *r, int node, int helper, ft__meta_t *out,
                     uint8_t **table, size_t *tlen) {
  int g = r->group_of[node], from = -1, rc = FT_OK;
  for (int p = 0; p < r->gsize[g] && from < 0; p++)
    from = r->rank_of_node[r->members[g][p]];
  if (r->rank == from && from != helper)
    return give_table(r, helper);
  if (r->rank != helper)
    return FT_OK;
  rc = r->rank == from ? read_table(r, table, tlen)
                       : take_table(r, from, table, tlen);
  char msg[256];
  if (rc == FT_OK &&
      (rc = ft__group_meta_decode(*table, *tlen, r->pos_of[node], out,
                                  "group table", msg, sizeof(msg))))
    ft__rsay(r, rc, "%s: node %d: %s", r->host, node, msg);
  return rc;
}

/* A stale store (survey.c) holds nothing of the current layout: remove
 * its files before it takes a lost node's place, so that no old version,
 * group table or adopted store of it is ever read again.  The survey's
 * mappings of its slots go first. */
static int clear_stale(ft__restore_t *r, char *msg, size_t msglen) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if (r->slot[i].map)
      ft__slot_close(&r->slot[i]);
  return ft__store_clear(&r->dir, msg, msglen);
}

/* A spare takes the lost node's place, and the relaunch lays out the slot
 * after the restored one too (runtime/smp.c, prepare): it is made here,
 * in the same geometry, so that a spare with room for the one slot but
 * not the other is refused now (FT_ENOSPC, ft-restore's exit 5), not by
 * every relaunch's layout after a rebuild that reported success.  It is
 * made on a thread of its own once the restored slot is reserved (so a
 * lack of room always names the second one), while that slot is faulted
 * in: every other rank waits for this one meanwhile, and its other CPU
 * would be idle.  On refusal the restored slot goes too (nothing was
 * written in it yet): no slot of the node is left on the spare. */
typedef struct next_slot {
  ft__restore_t *r;
  const ft__slot_geom_t *geom;
  const ft__dir_t *spare; /* its prepared files (ft__spare_dir), or NULL */
  int idx, rc, taken;
  pthread_t thread;
  int threaded;
  char msg[512];
} next_slot_t;

/* A fresh slot's page tables are filled (its pages zeroed and mapped) by
 * as many threads as this process may run on, up to PREFAULT_THREADS: the
 * other ranks of the rebuild wait meanwhile, and a fault of a fresh tmpfs
 * page costs about a microsecond (341 MiB took 90-120 ms on one thread of
 * the 2-vCPU VM, 38-44 ms on two). */
#define PREFAULT_THREADS 4
#define PREFAULT_ALIGN (2u << 20)
#define PREFAULT_MIN_PART (16u << 20)

typedef struct prefault_part {
  ft__slot_t *sl;
  uint64_t off, len;
  int made; /* the file's pages were made before: ft__slot_prefault_made */
  pthread_t thread;
  int threaded;
} prefault_part_t;

static void *prefault_part(void *arg) {
  prefault_part_t *p = arg;
  if (p->made)
    ft__slot_prefault_made(p->sl, p->off, p->len);
  else
    ft__slot_prefault_range(p->sl, p->off, p->len);
  return NULL;
}

static void prefault_spread(ft__slot_t *sl, int made) {
  cpu_set_t set;
  int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  n = n > PREFAULT_THREADS ? PREFAULT_THREADS : n < 1 ? 1 : n;
  if ((uint64_t)n > sl->map_bytes / PREFAULT_MIN_PART) /* a thread is worth */
    n = (int)(sl->map_bytes / PREFAULT_MIN_PART);      /* 16 MiB at least */
  if (!sl->prefault_ok || n < 1)
    n = 1;
  /* Parts of whole 2 MiB (a huge page), the last taking the rest */
  uint64_t per = sl->map_bytes / (uint64_t)n / PREFAULT_ALIGN * PREFAULT_ALIGN;
  prefault_part_t part[PREFAULT_THREADS];
  for (int i = 0; i < n; i++) {
    part[i] = (prefault_part_t){
        .sl = sl,
        .off = per * (uint64_t)i,
        .len = i == n - 1 ? sl->map_bytes - per * (uint64_t)i : per,
        .made = made};
    part[i].threaded = i > 0 && pthread_create(&part[i].thread, NULL,
                                               prefault_part, &part[i]) == 0;
  }
  for (int i = 0; i < n; i++) /* here, those no thread took */
    if (!part[i].threaded)
      prefault_part(&part[i]);
  for (int i = 1; i < n; i++)
    if (part[i].threaded)
      pthread_join(part[i].thread, NULL);
}

static void *make_next(void *arg) {
  next_slot_t *n = arg;
  ft__slot_t *next = &n->r->slot[n->idx];
  n->rc = ft__slot_create_from(next, &n->r->dir, n->idx, n->r->job, n->geom,
                               n->spare, &n->taken, n->msg, sizeof(n->msg));
  ft__slot_close(next); /* the relaunch's SMP maps it; nothing here does */
  return NULL;
}

static void reserve_next(ft__restore_t *r, const ft__slot_t *sl,
                         const ft__slot_geom_t *geom, const ft__dir_t *spare,
                         next_slot_t *n) {
  *n = (next_slot_t){
      .r = r, .geom = geom, .spare = spare, .idx = (sl->idx + 1) % FT_NSLOTS};
  if (r->slot[n->idx].map)
    ft__slot_close(&r->slot[n->idx]);
  n->threaded = pthread_create(&n->thread, NULL, make_next, n) == 0;
  if (!n->threaded)
    make_next(n);
}

static int reserved_next(next_slot_t *n, ft__slot_t *sl, char *msg,
                         size_t msglen) {
  if (n->threaded)
    pthread_join(n->thread, NULL);
  n->r->prepared += n->taken;
  if (n->rc == FT_OK)
    return FT_OK;
  int idx = sl->idx;
  ft__slot_close(sl);
  (void)ft__slot_unlink(&n->r->dir, idx, NULL, 0);
  snprintf(msg, msglen, "%s", n->msg);
  return n->rc;
}

/* The slot that receives a lost node's chunks, shaped as the lost node's
 * was: the spare's own slot (and the group table, which the spare keeps
 * as the survivors do), or for an adopted node a data-only slot in the
 * adopting survivor's adopt<N>/ directory. */
static int shape_helper(ft__restore_t *r, const ft__meta_t *m, int node,
                        const uint8_t *table, size_t tlen) {
  int g = r->group_of[node], adopt = r->adopt[node];
  ft__dir_t sub, *dir = adopt ? &sub : &r->dir;
  ft__slot_t *sl = adopt ? &r->adopted[node] : &r->slot[r->version % FT_NSLOTS];
  char name[32];
  snprintf(name, sizeof(name), "adopt%d", node);
  ft__dir_init(&sub, "");
  uint64_t bytes[FT_MAX_LOCAL];
  for (uint32_t i = 0; i < m->nlocal && i < FT_MAX_LOCAL; i++)
    bytes[i] = m->ranks[i].region_bytes;
  ft__slot_geom_t geom;
  int rc = ft__slot_geom_local(&geom, m->nlocal, bytes);
  if (rc == FT_OK)
    rc = ft__slot_geom_code(&geom, (uint32_t)ft__group_k(r, g),
                            adopt ? 0u : (uint32_t)r->m, r->chunk_of_group[g]);
  char msg[512] = "";
  if (rc == FT_OK && r->stale)
    rc = clear_stale(r, msg, sizeof(msg));
  /* A spare's store is made here (lock_store found none), and locked
   * before anything is written in it, as a survivor's is: a job launched
   * on the spare meanwhile gets FT_EINUSE, never a store half rebuilt. */
  if (rc == FT_OK && r->dir.fd < 0)
    rc = ft__store_open_locked(r->store_root, &r->dir, msg, sizeof(msg));
  if (rc == FT_OK && adopt)
    rc = ft__dir_sub(&r->dir, name, 1, &sub, msg, sizeof(msg));
  if (rc == FT_OK && !adopt)
    rc = ft__store_write_file(dir, FT_GROUP_META, table, tlen, msg,
                              sizeof(msg));
  int idx = (int)(r->version % FT_NSLOTS), taken = 0;
  if (rc == FT_OK && sl->map)
    ft__slot_close(sl); /* the survey's mapping of an old slot */
  /* The slot files ft-spare made on this host while the job ran (their
   * pages allocated and written then, not while the job waits): taken for
   * a spare in a lost node's place (a preparation still under way stops
   * once the store exists, which it does by now), the rest removed
   * afterwards.  Where there are none, spare stays closed and the slots
   * are made as without. */
  ft__dir_t spare;
  int spare_lock = -1;
  ft__dir_init(&spare, "");
  if (rc == FT_OK && !adopt)
    (void)ft__spare_take(r->store_root, r->dir.path, FT_SPARE_WAIT_S, &spare,
                         &spare_lock);
  if (rc == FT_OK)
    rc = ft__slot_create_from(sl, dir, idx, r->job, &geom, &spare, &taken, msg,
                              sizeof(msg));
  r->prepared += taken;
  ft__dir_close(&sub); /* the slot keeps a descriptor of its own */
  /* The next version's slot, made by a thread of its own meanwhile (an
   * adopted copy has one slot); reserved after this one, so that where
   * there is room for one slot only it is that one that is refused. */
  next_slot_t next = {0};
  int both = rc == FT_OK && !adopt;
  if (both)
    reserve_next(r, sl, &geom, &spare, &next);
  if (rc == FT_OK) /* before the chains write into it */
    prefault_spread(sl, taken);
  if (both)
    rc = reserved_next(&next, sl, msg, sizeof(msg));
  ft__spare_release(&spare, spare_lock);
  if (rc == FT_OK) {
    /* Stamped like the survivors' copies: every copy of a version says
     * where it was made (survey.c compares them). */
    ft__slot_begin(sl, r->version, r->step, r->vepoch,
                   r->vlayout);
    if (!adopt)
      r->my_slot = idx;
  } else {
    r->full |= rc == FT_ENOSPC;
    ft__rsay(r, rc, "%s: cannot prepare a store for node %d: %s", r->host, node,
        msg);
  }
  return rc;
}

/* ---- damaged copies ---- */

/* A member whose copy of the version is damaged or missing is its own
 * spare: its slot for the version is made anew, shaped from its own
 * metadata and the group's code and chunk size, and stamped as the
 * survivors' copies are; the rebuild decodes every chunk of it (data and
 * parity) into it.  Its metadata stays. */
static int reshape_damaged(ft__restore_t *r) {
  const ft__meta_t *m = r->meta;
  int g = (int)m->group, idx = (int)(r->version % FT_NSLOTS);
  uint64_t bytes[FT_MAX_LOCAL];
  for (uint32_t i = 0; i < m->nlocal && i < FT_MAX_LOCAL; i++)
    bytes[i] = m->ranks[i].region_bytes;
  ft__slot_geom_t geom;
  char msg[512] = "";
  int rc = ft__slot_geom_local(&geom, m->nlocal, bytes);
  if (rc == FT_OK)
    rc = ft__slot_geom_code(&geom, (uint32_t)ft__group_k(r, g), (uint32_t)r->m,
                            r->chunk_of_group[g]);
  if (rc != FT_OK)
    return ft__rsay(r, rc,
                    "%s: the metadata of %s does not fit the group's "
                    "code (k=%d m=%d, chunk %llu bytes): its copy cannot be "
                    "rebuilt in place",
                    r->host, r->dir.path, ft__group_k(r, g), r->m,
                    (unsigned long long)r->chunk_of_group[g]);
  ft__slot_t *sl = &r->slot[idx];
  if (sl->map)
    ft__slot_close(sl);
  rc = ft__slot_create(sl, &r->dir, idx, r->job, &geom, msg, sizeof(msg));
  r->full |= rc == FT_ENOSPC;
  if (rc)
    return ft__rsay(r, rc, "%s: cannot rebuild its copy in place: %s", r->host,
                    msg);
  ft__slot_prefault(sl);
  ft__slot_begin(sl, r->version, r->step, r->vepoch, r->vlayout);
  r->my_slot = idx;
  return FT_OK;
}

/* Before a damaged copy is made anew: the holders' copies become
 * COMMITTED (the SMP does the same to the version it restores).  The
 * version may count as committed only because the damaged slots could not
 * veto it (store.h); once made anew, such a slot reads fine without
 * holding it, and an ft-restore cut short and run again would skip the
 * version and roll back. */
static int promote(ft__restore_t *r) {
  if (r->my_slot >= 0 && !r->damaged[r->rank] &&
      ft__slot_state(&r->slot[r->my_slot]) == FT_SLOT_ENCODED)
    ft__slot_set_state(&r->slot[r->my_slot], FT_SLOT_COMMITTED);
  return FT_OK;
}

/* Slot i of rank `rank` failed validation and holds nothing to keep: not
 * the one the version is restored into, of a member that counts.  The
 * newest version that counts as committed is the one restored, so what
 * such a slot held was older or never committed (store.h); left there, it
 * would make the relaunch refuse (runtime/smp.c, refuse_discard). */
static int to_clear(const ft__restore_t *r, int rank, int i) {
  const ft__rnode_t *n = &r->all[rank];
  int target = r->damaged[rank] && i == (int)(r->version % FT_NSLOTS);
  return n->has_meta && !target && n->slot_rc[i] &&
         n->slot_rc[i] != FT_ENOENT && n->slot_rc[i] != FT_EMISMATCH;
}

static int count_cleared(const ft__restore_t *r) {
  int n = 0;
  for (int rank = 0; rank < r->size; rank++)
    for (int i = 0; i < FT_NSLOTS; i++)
      n += to_clear(r, rank, i);
  return n;
}

static int clear_damaged(ft__restore_t *r) {
  for (int i = 0; i < FT_NSLOTS; i++) {
    char msg[sizeof(r->dir.path) + 128];
    int rc = to_clear(r, r->rank, i)
                 ? ft__slot_unlink(&r->dir, i, msg, sizeof(msg))
                 : FT_OK;
    if (rc)
      return ft__rsay(r, rc, "%s", msg);
  }
  return FT_OK;
}

/* The slot an erased chunk of node is rebuilt into, on its owner. */
static ft__slot_t *target(ft__restore_t *r, int node) {
  return r->adopt[node] ? &r->adopted[node] : &r->slot[r->my_slot];
}

/* ---- one erased chunk ---- */

typedef struct task {
  int g, s, role, node, owner; /* owner: rank that decodes */
  int src_role[FT_MAX_CHUNKS], src_rank[FT_MAX_CHUNKS];
  int failed; /* this rank failed in an earlier task: its message stands */
} task_t;

static void sources(const ft__restore_t *r, task_t *t) {
  int n = r->gsize[t->g], k = ft__group_k(r, t->g), got = 0;
  for (int role = 0; role < n && got < k; role++) {
    int node = ft__node_at(r, t->g, t->s, role);
    if (ft__chunk_bad(r, node, role))
      continue;
    t->src_role[got] = role;
    t->src_rank[got++] = r->rank_of_node[node];
  }
}

/* A chunk is rebuilt along a chain (issue 18): the k sources, in order,
 * each add their term of the decode to the running sum the one before sent
 * (ft__codec_decode_update), piece by piece, and the last sends it to the
 * owner, which receives the rebuilt chunk straight into its slot.  Every
 * link carries the chunk's bytes once: the owner (a spare's one link)
 * receives 1x the lost bytes instead of k x, and the decode's work is
 * spread over the sources.  An owner that holds a source itself (a shrink's
 * adopting survivor) is the chain's last link and sums into its slot. */
#define CHAIN_BUFS 4  /* pieces in flight at a link: received, summed, sent */
#define RECV_BATCH 64 /* pieces the owner posts at once */

typedef struct chain {
  int hop[FT_MAX_CHUNKS]; /* source index (into t->src_*) of each link */
  int erased[FT_MAX_CHUNKS], ne, row; /* the pattern; row: t->role's */
} chain_t;

static void plan_chain(const ft__restore_t *r, const task_t *t, chain_t *ch) {
  int n = r->gsize[t->g], k = ft__group_k(r, t->g), is_src[FT_MAX_CHUNKS] = {0};
  int h = 0, mine = -1;
  for (int i = 0; i < k; i++) {
    is_src[t->src_role[i]] = 1;
    if (t->src_rank[i] == t->owner)
      mine = i;
    else
      ch->hop[h++] = i;
  }
  if (mine >= 0)
    ch->hop[h++] = mine;
  ch->ne = 0;
  for (int role = 0; role < n; role++)
    if (!is_src[role]) {
      if (role == t->role)
        ch->row = ch->ne;
      ch->erased[ch->ne++] = role;
    }
}

/* In the middle of rebuilding a chunk: the hold point, then the fault. */
static void midway(ft__restore_t *r) {
  if (r->ctl)
    ft__hold_at(r->ctl,
                ft__hold_gate(r->ctl, &r->ctl->smp_gate_step, r->step,
                              1u << FT_HOLD_RESTORE),
                FT_HOLD_RESTORE, r->step);
  ft__fault_point(&r->fault, "restore", r->world_rank, r->host);
}

/* FT_FAULT=flip:POINT: one byte of chunk `role` of stripe t (at buf) is
 * corrupted here, as memory or a link might, to show that nothing after
 * this point takes such bytes for good ones.  Points: rebuilt (the owner,
 * the chunk whole) and source (a source, before it gives its chunk). */
static void flip_point(ft__restore_t *r, const char *point, const task_t *t,
                       int role, uint8_t *buf) {
  if (!ft__fault_point(&r->fault, point, r->world_rank, r->host))
    return;
  size_t at = r->chunk_of_group[t->g] / 2;
  buf[at] ^= 0x5a;
  fprintf(stderr,
          "ftrt: fault point '%s' (FT_FAULT) flipped byte %zu of %s chunk %d "
          "(group %d stripe %d) on %s, pid %d\n",
          point, at, role < ft__group_k(r, t->g) ? "data" : "parity", role,
          t->g, t->s, r->host, (int)getpid());
  fflush(stderr);
}

static void rebuilt(ft__restore_t *r, const task_t *t, uint8_t *dst) {
  flip_point(r, "rebuilt", t, t->role, dst);
}

/* FT_FAULT=fail:link: a link that sends its sum on fails halfway through
 * its chunk, as a decode that failed would; the chain must still end on
 * every rank. */
static int link_fault(ft__restore_t *r, const task_t *t) {
  if (!ft__fault_point(&r->fault, "link", r->world_rank, r->host))
    return FT_OK;
  return ft__rsay(r, FT_EIO,
                  "%s (rank %d): fault point 'link' (FT_FAULT) failed its "
                  "link of the rebuild of group %d stripe %d (%s chunk %d), "
                  "pid %d",
                  r->host, r->rank, t->g, t->s,
                  t->role < ft__group_k(r, t->g) ? "data" : "parity",
                  t->role < ft__group_k(r, t->g)
                      ? t->role
                      : t->role - ft__group_k(r, t->g),
                  (int)getpid());
}

/* Bytes of piece q of a chunk of `chunk` bytes cut in pieces of `piece`. */
static size_t piece_len(size_t chunk, size_t piece, size_t q) {
  return chunk - q * piece < piece ? chunk - q * piece : piece;
}

static int wait1(MPI_Request *req) {
  return MPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? FT_OK : FT_EMPI;
}

/* A received piece must be exactly as long as asked: MPI accepts a shorter
 * message silently, and the slot's CRCs are computed over what arrived. */
static int got_all(ft__restore_t *r, const MPI_Status *st, size_t len) {
  int n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  if (n == (int)len)
    return FT_OK;
  return ft__rsay(r, FT_ECORRUPT,
                  "%s: a piece of the rebuild from rank %d had %d bytes, not "
                  "%zu: the nodes disagree on the chunk or piece size "
                  "(FT_PIECE_SIZE); nothing of it is kept",
                  r->host, st->MPI_SOURCE, n, len);
}

/* A status passed along a chain after a chunk's pieces: the first failure
 * of a link at or before the sender (FT_OK: none), and the last link's CRC
 * of the chunk.  Every link sends one on and every link but the first
 * takes one, so that a link that failed still ends the chain: it goes on
 * passing pieces (their bytes no longer matter) and says so at the end,
 * and no link after it waits for a piece that never comes. */
static int pass_status(ft__restore_t *r, const task_t *t, int prev, int next,
                       int bad, uint64_t send_sum, uint64_t *got_sum) {
  uint64_t end[2] = {0, 0};
  if (prev >= 0 && MPI_Recv(end, 2, MPI_UINT64_T, prev, TAG_CRC, r->comm,
                            MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return FT_EMPI;
  if (got_sum)
    *got_sum = end[1];
  if (prev >= 0 && bad == FT_OK && (int64_t)end[0] != FT_OK) {
    if (!t->failed)
      r->msg[0] = '\0'; /* the link that failed says why */
    bad = (int)(int64_t)end[0];
  }
  uint64_t out[2] = {(uint64_t)(int64_t)bad, send_sum};
  /* eager: never leaves this rank waiting */
  if (next >= 0 &&
      MPI_Send(out, 2, MPI_UINT64_T, next, TAG_CRC, r->comm) != MPI_SUCCESS)
    return FT_EMPI;
  return bad;
}

/* Link h of the chain (this rank holds source ch->hop[h]): receive the sum
 * of piece q from link h-1 (the first has none: its term starts the sum),
 * add this source's term, send it on (to link h+1, or to the owner); the
 * last link, when it is the owner, sums into dst.  Piece q+1 is received while
 * q is summed.  Only a failure of MPI itself stops a link early; after any
 * other (bad), it passes pieces on untouched and its status says it failed. */
static int chain_link(ft__restore_t *r, const task_t *t, const chain_t *ch,
                      int h, ft__codec_t *codec, uint8_t *bufs, uint8_t *dst,
                      uint64_t *crc, int *src_bad) {
  int k = ft__group_k(r, t->g), i = ch->hop[h], last = h + 1 == k;
  int prev = h > 0 ? t->src_rank[ch->hop[h - 1]] : -1;
  int next = h + 1 < k ? t->src_rank[ch->hop[h + 1]]
                       : t->owner == r->rank ? -1 : t->owner;
  const uint8_t *mine = ft__slot_chunk(&r->slot[r->my_slot],
                                       (uint32_t)t->src_role[i]);
  size_t chunk = r->chunk_of_group[t->g], piece = r->piece_bytes;
  size_t np = (chunk + piece - 1) / piece;
  MPI_Request rreq[CHAIN_BUFS], sreq[CHAIN_BUFS];
  for (int b = 0; b < CHAIN_BUFS; b++)
    rreq[b] = sreq[b] = MPI_REQUEST_NULL;
#define LEN(q) piece_len(chunk, piece, q)
#define AT(q) (next < 0 ? dst + (q) * piece : bufs + ((q) % CHAIN_BUFS) * piece)
  int rc = FT_OK, bad = FT_OK;
  flip_point(r, "source", t, t->src_role[i], (uint8_t *)mine);
  uint64_t sum = 0; /* the last link's CRC of the chunk, piece by piece */
  uint64_t src = 0; /* this source's, checked against its seal at the end */
  if (prev >= 0 && np > 0)
    MPI_Irecv(AT(0), (int)LEN(0), MPI_BYTE, prev, TAG_PIECE, r->comm, &rreq[0]);
  for (size_t q = 0; q < np && rc == FT_OK; q++) {
    size_t b = q % CHAIN_BUFS, nb = (q + 1) % CHAIN_BUFS;
    if (prev >= 0 && q + 1 < np) { /* post q+1 once its buffer is sent */
      if ((rc = wait1(&sreq[nb])))
        break;
      MPI_Irecv(AT(q + 1), (int)LEN(q + 1), MPI_BYTE, prev, TAG_PIECE, r->comm,
                &rreq[nb]);
    }
    uint8_t *acc = AT(q);
    if (prev >= 0) {
      MPI_Status st;
      if (MPI_Wait(&rreq[b], &st) != MPI_SUCCESS) {
        rc = FT_EMPI;
        break;
      }
      if (bad == FT_OK)
        bad = got_all(r, &st, LEN(q));
    } else {
      rc = wait1(&sreq[b]); /* acc is free to write again */
    }
    if (rc == FT_OK && bad == FT_OK && next >= 0 && q == np / 2)
      bad = link_fault(r, t);
    /* The first link's term is the sum so far: set, not added to zeros. */
    if (rc == FT_OK && bad == FT_OK &&
        (bad = (prev < 0 ? ft__codec_decode_first : ft__codec_decode_update)(
             codec, LEN(q), ch->erased, ch->ne, ch->row, i, mine + q * piece,
             acc)))
      ft__rsay(r, bad,
               "%s (rank %d): the decode of %s chunk %d of group %d stripe %d "
               "failed",
               r->host, r->rank, t->role < k ? "data" : "parity",
               t->role < k ? t->role : t->role - k, t->g, t->s);
    if (rc == FT_OK && bad == FT_OK)
      src = ft__crc64(src, mine + q * piece, LEN(q));
    if (rc == FT_OK && bad != FT_OK && prev < 0)
      memset(acc, 0, LEN(q)); /* a failed first link passes zeros on */
    if (rc == FT_OK && bad == FT_OK && last)
      sum = ft__crc64(sum, acc, LEN(q));
    if (rc == FT_OK && next >= 0)
      MPI_Isend(acc, (int)LEN(q), MPI_BYTE, next, TAG_PIECE, r->comm, &sreq[b]);
    if (rc == FT_OK && next < 0 && q == np / 2)
      midway(r);
  }
  if (MPI_Waitall(CHAIN_BUFS, sreq, MPI_STATUSES_IGNORE) != MPI_SUCCESS &&
      rc == FT_OK)
    rc = FT_EMPI;
  if (rc == FT_OK)
    rc = pass_status(r, t, prev, next, bad, sum, NULL);
  if (rc == FT_OK && next < 0) {
    *crc = sum;
    rebuilt(r, t, dst);
  }
  /* The bytes this source gave are the ones sealed (the survey checked
   * them, memory may have changed since): else the chunk just made is of
   * other bytes.  Said after the chain ran, so that no link waits. */
  *src_bad = rc == FT_OK &&
             src != r->slot[r->my_slot].hdr->crc[t->src_role[i]];
#undef LEN
#undef AT
  return rc;
}

/* The owner that holds no source: the chain's sum, straight into dst,
 * RECV_BATCH pieces at a time; every piece and the last link's status are
 * taken even after a short piece, so that nothing is left for the next
 * task to take for its own. */
static int chain_end(ft__restore_t *r, const task_t *t, const chain_t *ch,
                     uint8_t *dst, uint64_t *crc) {
  int last = t->src_rank[ch->hop[ft__group_k(r, t->g) - 1]];
  size_t chunk = r->chunk_of_group[t->g], piece = r->piece_bytes;
  size_t np = (chunk + piece - 1) / piece;
  MPI_Request req[RECV_BATCH];
  MPI_Status st[RECV_BATCH];
  int rc = FT_OK, bad = FT_OK, held = 0;
  for (size_t first = 0; first < np && rc == FT_OK; first += RECV_BATCH) {
    int nb = 0;
    for (size_t q = first; q < np && nb < RECV_BATCH; q++, nb++) {
      MPI_Irecv(dst + q * piece, (int)piece_len(chunk, piece, q), MPI_BYTE,
                last, TAG_PIECE, r->comm, &req[nb]);
    }
    if (MPI_Waitall(nb, req, st) != MPI_SUCCESS)
      rc = FT_EMPI;
    for (int i = 0; rc == FT_OK && bad == FT_OK && i < nb; i++)
      bad = got_all(r, &st[i], piece_len(chunk, piece, first + (size_t)i));
    if (rc == FT_OK && !held && first + (size_t)nb > np / 2) {
      midway(r); /* once half of the chunk is in */
      held = 1;
    }
  }
  uint64_t sum = 0; /* the last link's CRC of the chunk */
  if (rc == FT_OK)
    rc = pass_status(r, t, last, -1, bad, 0, &sum);
  if (rc == FT_OK) {
    *crc = sum;
    rebuilt(r, t, dst);
  }
  return rc;
}

/* On the owner, *crc: the CRC the chunk was made with; on a source,
 * *src_bad: its chunk no longer matches its CRC. */
static int run_task(ft__restore_t *r, task_t *t, uint8_t *bufs,
                    ft__codec_t *const *codec, uint64_t *crc, int *src_bad) {
  sources(r, t);
  chain_t ch;
  plan_chain(r, t, &ch);
  uint8_t *dst = t->owner == r->rank
                     ? ft__slot_chunk(target(r, t->node), (uint32_t)t->role)
                     : NULL;
  for (int h = 0; h < ft__group_k(r, t->g); h++)
    if (t->src_rank[ch.hop[h]] == r->rank)
      return chain_link(r, t, &ch, h, codec[ft__group_k(r, t->g)], bufs, dst,
                        crc, src_bad);
  return t->owner == r->rank ? chain_end(r, t, &ch, dst, crc) : FT_OK;
}

static int owner_of(const ft__restore_t *r, int node, const int *helper_of) {
  int rank = r->rank_of_node[node];
  return rank >= 0 ? rank : helper_of[node];
}

static void progress(const ft__restore_t *r, const task_t *t, int node,
                     int done, int total) {
  if (r->rank != 0 || r->opts.quiet || r->opts.json)
    return;
  printf("ft-restore: [%d/%d] group %d stripe %d: %s chunk %d of %s -> %s\n",
         done, total, t->g, t->s,
         t->role < ft__group_k(r, t->g) ? "data" : "parity",
         t->role < ft__group_k(r, t->g) ? t->role : t->role - ft__group_k(r, t->g),
         r->hosts[node], r->all[t->owner].host);
  fflush(stdout);
}

static int count_tasks(const ft__restore_t *r) {
  int total = 0;
  for (int g = 0; g < r->ngroups; g++)
    for (int s = 0; s < r->gsize[g]; s++)
      for (int role = 0; role < r->gsize[g]; role++)
        total += wanted(r, g, ft__node_at(r, g, s, role), role);
  return total;
}

/* Room to decode and a codec for every group's k, made before the first
 * task: an owner must not fail for memory while its sources send to it. */
static int alloc_decode(ft__restore_t *r, uint8_t **bufs, ft__codec_t **codec) {
  int rc = FT_OK;
  if (!(*bufs = ft__malloc((size_t)CHAIN_BUFS * r->piece_bytes)))
    rc = FT_ENOMEM;
  for (int g = 0; rc == FT_OK && g < r->ngroups; g++) {
    int k = ft__group_k(r, g);
    if (!codec[k])
      rc = ft__codec_create(k, r->m, &codec[k]);
  }
  if (rc == FT_ENOMEM)
    ft__rsay(r, rc, "%s: out of memory for the decode buffers", r->host);
  return rc;
}

/* The CRC of every chunk this rank rebuilt, as the chain that made its
 * bytes computed it: made[node] for node's adopted slot, made[r->nnodes]
 * for this rank's own. */
typedef struct made {
  uint64_t crc[FT_MAX_CHUNKS];
  unsigned char got[FT_MAX_CHUNKS];
} made_t;

static int rebuild_all(ft__restore_t *r, const int *helper_of, made_t *made) {
  uint8_t *bufs = NULL;
  ft__codec_t *codec[FT_RESTORE_MAX_GROUP] = {0};
  int rc = ft__ragree(r, alloc_decode(r, &bufs, codec));
  int done = 0, total = count_tasks(r), late = FT_OK;
  for (int g = 0; g < r->ngroups && rc == FT_OK; g++)
    for (int s = 0; s < r->gsize[g] && rc == FT_OK; s++)
      for (int role = 0; role < r->gsize[g] && rc == FT_OK; role++) {
        int node = ft__node_at(r, g, s, role);
        if (!wanted(r, g, node, role))
          continue;
        task_t t = {.g = g, .s = s, .role = role, .node = node,
                    .owner = owner_of(r, node, helper_of),
                    .failed = late != FT_OK};
        progress(r, &t, node, ++done, total);
        uint64_t crc = 0;
        int src_bad = 0;
        int trc = run_task(r, &t, bufs, codec, &crc, &src_bad);
        /* Every task still runs after a failure of this rank's part in one
         * (its chain ended, the others wait for this rank in theirs); only
         * MPI failing stops (in practice never returned: MPI's errors are
         * fatal, MPI_ERRORS_ARE_FATAL, and mpirun ends the job). */
        if (trc == FT_EMPI)
          rc = trc;
        else if (trc != FT_OK && late == FT_OK)
          late = trc;
        if (src_bad && late == FT_OK)
          late = ft__rsay(r, FT_ECORRUPT,
                          "%s: a chunk of its copy of version %llu (group %d "
                          "stripe %d) no longer matches its CRC, checked by the "
                          "survey: the rebuild from it is refused and nothing "
                          "is sealed; run ft-restore again (it finds the "
                          "chunk corrupt)",
                          r->host, (unsigned long long)r->version, g, s);
        if (trc == FT_OK && t.owner == r->rank) {
          made_t *m = &made[r->adopt[node] ? node : r->nnodes];
          m->crc[role] = crc;
          m->got[role] = 1;
        }
        r->bytes_rebuilt += r->chunk_of_group[g];
      }
  for (int k = 0; k < FT_RESTORE_MAX_GROUP; k++)
    ft__codec_destroy(codec[k]);
  ft__free(bufs);
  return rc ? rc : late;
}

/* ---- finishing ---- */

static int write_adopted_meta(ft__restore_t *r, int node, const ft__meta_t *m) {
  char name[32];
  ft__dir_t sub;
  snprintf(name, sizeof(name), "adopt%d", node);
  int rc = ft__dir_sub(&r->dir, name, 0, &sub, r->msg, sizeof(r->msg));
  if (rc == FT_OK)
    rc = ft__meta_write(&sub, m, r->msg, sizeof(r->msg));
  ft__dir_close(&sub);
  return rc;
}

/* A slot rebuilt whole gets the CRCs its chunks were made with (not read
 * back from it) and COMMITTED; a chunk of it without one was never
 * rebuilt, and the slot is not sealed. */
static int commit_slot(ft__restore_t *r, ft__slot_t *sl, const made_t *m) {
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
static int seal(ft__restore_t *r, int spare, const made_t *made) {
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

static int write_reslice(ft__restore_t *r, ft__meta_t *spare_meta,
                         const int *helper_of) {
  ft__meta_t *m;
  int node = my_node(r, spare_meta, helper_of, &m);
  int rc = ft__ragree(r, node >= 0 ? reslice_meta(r, m, node, helper_of)
                                   : FT_OK);
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
static int write_epoch(ft__restore_t *r, ft__meta_t *spare_meta,
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
  int grc = share_group(r, m, member ? (int)m->group : -1,
                        member ? (int)m->pos : 0);
  if (rc)
    ft__rsay(r, rc, "%s", msg);
  if (rc == FT_OK && grc == FT_OK && member)
    rc = tidy(r, m, 1);
  return rc ? rc : grc;
}

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
      if (to_clear(r, i, s))
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
  int tasks = count_tasks(r);
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
  made_t *made = ft__calloc((size_t)r->nnodes + 1, sizeof(made_t));
  r->adopted = ft__calloc((size_t)r->nnodes, sizeof(ft__slot_t));
  r->adopt = ft__calloc((size_t)r->nnodes, 1);
  for (int node = 0; r->adopted && node < r->nnodes; node++)
    r->adopted[node].fd = -1;
  uint8_t *table = NULL;
  size_t tlen = 0;
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
    rc = ft__ragree(r, r->all[r->rank].has_meta
                           ? ft__store_remove_adopted(&r->dir, r->msg,
                                                      sizeof(r->msg))
                           : FT_OK);
  for (int node = 0; rc == FT_OK && node < r->nnodes; node++) {
    if (helper_of[node] < 0)
      continue;
    int lrc = send_meta(r, node, helper_of[node], spare_meta, &table, &tlen);
    if (lrc == FT_OK && r->rank == helper_of[node])
      lrc = shape_helper(r, spare_meta, node, table, tlen);
    if (lrc == FT_OK && r->rank == helper_of[node] && r->adopt[node])
      lrc = write_adopted_meta(r, node, spare_meta);
    ft__free(table);
    table = NULL;
    rc = ft__ragree(r, lrc);
  }
  if (rc == FT_OK && r->ndamaged) /* everywhere before any copy is made */
    rc = ft__ragree(r, promote(r));
  if (rc == FT_OK)
    rc = ft__ragree(r, r->damaged[r->rank] ? reshape_damaged(r) : FT_OK);
  if (rc == FT_OK)
    rc = ft__ragree(r, rebuild_all(r, helper_of, made));
  int is_spare = 0;
  for (int node = 0; node < r->nnodes; node++)
    is_spare |= helper_of[node] == r->rank && !r->adopt[node];
  if (rc == FT_OK)
    rc = ft__ragree(r, seal(r, is_spare, made));
  if (rc == FT_OK)
    rc = ft__ragree(r, sum_prepared(r));
  if (rc == FT_OK)
    rc = ft__ragree(r, clear_damaged(r));
  if (rc == FT_OK)
    rc = ft__ragree(r, adopting(r) ? write_reslice(r, spare_meta, helper_of)
                                   : write_epoch(r, spare_meta, helper_of));
  r->seconds = MPI_Wtime() - t0;
out:
  ft__free(helper_of);
  ft__meta_free(spare_meta);
  ft__free(made);
  return rc;
}
