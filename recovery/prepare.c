/*
 * The slots that receive the rebuilt chunks, made before the first chunk
 * is sent.  Each lost node's helper gets the group table from a survivor
 * of the node's group, and from it the node's metadata, then makes the
 * node's slot in its geometry: a spare, its own store's slot for the
 * version (from the files ft-spare prepared on its host, where there are
 * some) and the slot after it, on a thread of its own; an adopting
 * survivor, a data-only slot in its adopt<N>/ store.  A fresh slot's pages
 * are faulted in by a few threads at once, since every other rank waits
 * meanwhile.  A member whose copy of the version is damaged makes its own
 * slot anew in place, once the holders' copies are marked COMMITTED.
 */
#include "recovery/prepare.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "base/alloc.h"
#include "recovery/restore.h"
#include "recovery/tags.h"
#include "snapshot/groupmeta.h"

/* ---- the group table and the node's metadata ---- */

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
  int rc =
      ft__store_read_file(&r->dir, r->gname, FT_MAX_CHUNKS * FT_META_FILE_MAX,
                          buf, len, msg, sizeof(msg));
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

static int take_table(ft__restore_t *r, int from, uint8_t **buf, size_t *len) {
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

/* ---- the slot that receives the node's chunks ---- */

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
 * after the restored one too (runtime/smp_version.c, ft__smp_prepare): it is made here,
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
    rc =
        ft__store_write_file(dir, FT_GROUP_META, table, tlen, msg, sizeof(msg));
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
    ft__slot_begin(sl, r->version, r->step, r->vepoch, r->vlayout);
    if (!adopt)
      r->my_slot = idx;
  } else {
    r->full |= rc == FT_ENOSPC;
    ft__rsay(r, rc, "%s: cannot prepare a store for node %d: %s", r->host, node,
             msg);
  }
  return rc;
}

/* An adopted node's metadata, beside its data in the adopt<N>/ store
 * that shape_helper made: the relaunch reads the two together
 * (runtime/reslice.c). */
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

int ft__prepare_helper(ft__restore_t *r, int node, int helper,
                       ft__meta_t *meta) {
  uint8_t *table = NULL;
  size_t tlen = 0;
  int rc = send_meta(r, node, helper, meta, &table, &tlen);
  if (rc == FT_OK && r->rank == helper)
    rc = shape_helper(r, meta, node, table, tlen);
  if (rc == FT_OK && r->rank == helper && r->adopt[node])
    rc = write_adopted_meta(r, node, meta);
  ft__free(table);
  return rc;
}

/* ---- damaged copies ---- */

/* A member whose copy of the version is damaged or missing is its own
 * spare: its slot for the version is made anew, shaped from its own
 * metadata and the group's code and chunk size, and stamped as the
 * survivors' copies are; the rebuild decodes every chunk of it (data and
 * parity) into it.  Its metadata stays. */
int ft__reshape_damaged(ft__restore_t *r) {
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
int ft__promote(ft__restore_t *r) {
  if (r->my_slot >= 0 && !r->damaged[r->rank] &&
      ft__slot_state(&r->slot[r->my_slot]) == FT_SLOT_ENCODED)
    ft__slot_set_state(&r->slot[r->my_slot], FT_SLOT_COMMITTED);
  return FT_OK;
}
