/*
 * Restore onto a different number of ranks (after ft-restore --mode shrink).
 *
 * The restore point then holds the buffers of the OLD ranks: every surviving
 * node keeps its own old ranks in its slot, and the lost nodes' old ranks in
 * adopt<N>/ stores that ft-restore rebuilt there.  The first trainer of each
 * node serves what its node holds.  Every trainer asks for what it needs:
 *
 *  - a private buffer (global_bytes == 0) comes whole from the old rank with
 *    the same app_comm rank (new rank r continues old rank r);
 *  - a slice of a global tensor comes from every old rank whose slice of the
 *    same tensor overlaps it (Universal Checkpointing's re-slicing, in
 *    memory): each restored byte is the snapshot's byte at its global offset.
 *
 * Tables are allgathered, requests move with MPI_Alltoallv; servers verify
 * the CRCs of every region they serve, every rank agrees, and only then do
 * the bytes move, point to point, from the store slots straight into the
 * registered buffers.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/reslice.h"

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/pages.h"

static int too_big(ft_ctx_t *c, uint64_t bytes, const char *what);

/* One old rank held by the calling server. */
typedef struct held {
  ft__rank_rec_t rec; /* its tables belong to the server's metadata */
  ft__slot_t *slot;
  int idx; /* local index inside slot */
} held_t;

/* An adopt<N>/ store: a lost node's metadata and its slot of the version. */
typedef struct adoptee {
  ft__meta_t meta;
  ft__slot_t slot;
} adoptee_t;

/* What this node serves: its own ranks and every adopted node's, however
 * many nodes a shrink gave it. */
typedef struct server {
  ft__meta_t *meta;
  adoptee_t **adopted; /* [nadopted], each allocated on its own: held
                        * entries point into them */
  int nadopted;
  held_t *held; /* [nheld] */
  int nheld;
} server_t;

/* What travels in the table allgather, per old rank: this, then the
 * rank's nbufs buffer records. */
typedef struct wire_entry {
  uint32_t rank, nbufs;
  uint64_t region_bytes;
  int32_t server;
  uint32_t pad;
} wire_entry_t;

/* reslice.h: an old rank and who serves it (rec.bufs points into the
 * gathered bytes), a request for a piece of it, and a planned piece. */
typedef ft__reslice_entry_t entry_t;
typedef ft__reslice_request_t request_t;
typedef ft__reslice_want_t want_t;

static void hold(server_t *sv, const ft__meta_t *m, ft__slot_t *slot) {
  for (uint32_t i = 0; i < m->nlocal; i++) {
    held_t *h = &sv->held[sv->nheld++];
    h->rec = m->ranks[i];
    h->slot = slot;
    h->idx = (int)i;
  }
}

/* One more adopted store, read from the store's subdirectory name (opened
 * and checked through the store's descriptor: store.h). */
static int adopt_one(ft_ctx_t *c, server_t *sv, const char *name) {
  char msg[512];
  adoptee_t **grown =
      ft__realloc(sv->adopted, (size_t)(sv->nadopted + 1) * sizeof(*grown));
  if (!grown)
    return FT_ENOMEM;
  sv->adopted = grown;
  adoptee_t *a = ft__calloc(1, sizeof(*a));
  if (!a)
    return FT_ENOMEM;
  a->slot.fd = -1;
  sv->adopted[sv->nadopted++] = a; /* closed by close_server either way */
  int idx = (int)(c->ctl->restore_version % FT_NSLOTS);
  ft__dir_t sub;
  int rc = ft__dir_sub(&c->dir, name, 0, &sub, msg, sizeof(msg));
  if (rc == FT_OK)
    rc = ft__meta_read(&sub, &a->meta, msg, sizeof(msg));
  if (rc == FT_OK)
    rc = ft__slot_open(&a->slot, &sub, idx, c->cfg.job, msg, sizeof(msg));
  ft__dir_close(&sub);
  if (rc) {
    FT_LOGE(&c->log, "ft_restore: %s", msg);
    return rc;
  }
  if (a->slot.hdr->version != c->ctl->restore_version ||
      ft__slot_state(&a->slot) != FT_SLOT_COMMITTED) {
    FT_LOGE(&c->log, "ft_restore: %s holds version %llu, not %llu committed",
            a->slot.path, (unsigned long long)a->slot.hdr->version,
            (unsigned long long)c->ctl->restore_version);
    return FT_ECORRUPT;
  }
  /* Of this run, and the copy its own metadata describes (store.h): an
   * adopted store of another run or layout with the same version number
   * would serve other bytes under the same names. */
  if (a->meta.run != sv->meta->run ||
      !ft__meta_describes(&a->meta, a->slot.hdr->layout, a->slot.hdr->epoch)) {
    FT_LOGE(&c->log,
            "ft_restore: %s is not a copy of this run's version %llu that "
            "its metadata describes (run %016llx, layout %u, epoch %llu); "
            "run ft-restore again",
            a->slot.path, (unsigned long long)c->ctl->restore_version,
            (unsigned long long)a->meta.run, (unsigned)a->slot.hdr->layout,
            (unsigned long long)a->slot.hdr->epoch);
    return FT_ECORRUPT;
  }
  return FT_OK;
}

/* adopt<N>/ directories: a lost node's meta and its slot of the version. */
static int open_adopted(ft_ctx_t *c, server_t *sv) {
  /* A descriptor of its own for the listing (closedir closes it). */
  int fd = ft__store_openat(&c->dir, ".", O_RDONLY | O_DIRECTORY, 0);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0)
      close(fd);
    FT_LOGE(&c->log, "ft_restore: %s: cannot list the store", c->dir.path);
    return FT_EIO;
  }
  struct dirent *e;
  int rc = FT_OK;
  while (rc == FT_OK && (e = readdir(d))) {
    if (strncmp(e->d_name, "adopt", 5) == 0)
      rc = adopt_one(c, sv, e->d_name);
  }
  closedir(d);
  return rc;
}

/* The held table: this node's ranks, then every adopted node's. */
static int hold_all(server_t *sv, ft__slot_t *own) {
  size_t n = sv->meta->nlocal;
  for (int i = 0; i < sv->nadopted; i++)
    n += sv->adopted[i]->meta.nlocal;
  if (n > INT_MAX || !(sv->held = ft__calloc(n + 1, sizeof(*sv->held))))
    return FT_ENOMEM;
  hold(sv, sv->meta, own);
  for (int i = 0; i < sv->nadopted; i++)
    hold(sv, &sv->adopted[i]->meta, &sv->adopted[i]->slot);
  return FT_OK;
}

static int open_server(ft_ctx_t *c, server_t *sv, ft__slot_t *own) {
  char msg[512];
  sv->meta = ft__calloc(1, sizeof(*sv->meta));
  int rc = sv->meta ? FT_OK : FT_ENOMEM;
  if (rc == FT_OK && (rc = ft__meta_read(&c->dir, sv->meta, msg, sizeof(msg))))
    FT_LOGE(&c->log, "ft_restore: %s", msg);
  if (rc == FT_OK)
    rc = open_adopted(c, sv);
  if (rc == FT_OK)
    rc = hold_all(sv, own);
  return rc;
}

static void close_server(server_t *sv) {
  for (int i = 0; i < sv->nadopted; i++) {
    ft__slot_close(&sv->adopted[i]->slot);
    ft__meta_clear(&sv->adopted[i]->meta);
    ft__free(sv->adopted[i]);
  }
  ft__free(sv->adopted);
  ft__free(sv->held);
  ft__meta_free(sv->meta);
}

/* This rank's held tables in their wire form (*cnt bytes, < 2 GiB). */
static int pack_tables(const server_t *sv, int me, uint8_t **out, int *cnt) {
  size_t total = 0;
  for (int i = 0; i < sv->nheld; i++)
    total += sizeof(wire_entry_t) +
             (size_t)sv->held[i].rec.nbufs * sizeof(ft__buf_rec_t);
  *cnt = 0;
  if (total > INT_MAX)
    return FT_ERANGE;
  uint8_t *p = *out = ft__malloc(total + 1);
  if (!p)
    return FT_ENOMEM;
  for (int i = 0; i < sv->nheld; i++) {
    const ft__rank_rec_t *r = &sv->held[i].rec;
    wire_entry_t w = {r->rank, r->nbufs, r->region_bytes, me, 0};
    memcpy(p, &w, sizeof(w));
    p += sizeof(w);
    if (r->nbufs)
      memcpy(p, r->bufs, (size_t)r->nbufs * sizeof(ft__buf_rec_t));
    p += (size_t)r->nbufs * sizeof(ft__buf_rec_t);
  }
  *cnt = (int)total;
  return FT_OK;
}

/* The entries of total gathered bytes (each rank packed its own), with
 * their buffer tables left in place. */
static int unpack_tables(const uint8_t *buf, size_t total, int nservers,
                         entry_t **all, int *nall) {
  size_t n = 0;
  for (size_t off = 0; off < total; n++) {
    wire_entry_t w;
    if (total - off < sizeof(w))
      return FT_ECORRUPT;
    memcpy(&w, buf + off, sizeof(w));
    off += sizeof(w);
    if (w.server < 0 || w.server >= nservers) /* indexes per-server tables */
      return FT_ECORRUPT;
    if ((total - off) / sizeof(ft__buf_rec_t) < w.nbufs)
      return FT_ECORRUPT;
    off += (size_t)w.nbufs * sizeof(ft__buf_rec_t);
  }
  entry_t *e = *all = ft__calloc(n + 1, sizeof(*e));
  if (!e)
    return FT_ENOMEM;
  for (size_t off = 0, i = 0; i < n; i++) {
    wire_entry_t w;
    memcpy(&w, buf + off, sizeof(w));
    off += sizeof(w);
    /* records of every rank start 8-byte aligned: the wire entry and a
     * record are multiples of 8 bytes */
    e[i].rec = (ft__rank_rec_t){w.rank, w.nbufs, w.region_bytes,
                                (ft__buf_rec_t *)(uintptr_t)(buf + off)};
    e[i].server = w.server;
    off += (size_t)w.nbufs * sizeof(ft__buf_rec_t);
  }
  *nall = (int)n;
  return FT_OK;
}

/* Every old rank's table, with the app rank that serves it.  Collective;
 * each allocation is agreed on before the collective that needs it, so a
 * rank out of memory leaves nobody waiting.  *blob holds the tables *all
 * points into: free both. */
static int share_tables(ft_ctx_t *c, const server_t *sv, entry_t **all,
                        int *nall, uint8_t **blob) {
  int me, n, cnt = 0;
  MPI_Comm_rank(c->app_comm, &me);
  MPI_Comm_size(c->app_comm, &n);
  *all = NULL;
  *nall = 0;
  *blob = NULL;
  uint8_t *mine = NULL;
  int rc = pack_tables(sv, me, &mine, &cnt);
  int *counts = ft__calloc((size_t)n, sizeof(int));
  int *displs = ft__calloc((size_t)n, sizeof(int));
  if (rc == FT_OK && !(counts && displs))
    rc = FT_ENOMEM;
  rc = ft__agree(c->app_comm, rc);
  if (rc == FT_OK)
    MPI_Allgather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, c->app_comm);
  size_t total = 0;
  for (int i = 0; rc == FT_OK && i < n; i++) {
    displs[i] = (int)total;
    total += (size_t)counts[i];
  }
  if (rc == FT_OK)
    rc = ft__agree(c->app_comm, total > INT_MAX
                                    ? too_big(c, total, "gather tables of")
                                : (*blob = ft__malloc(total + 8)) ? FT_OK
                                                                  : FT_ENOMEM);
  if (rc == FT_OK) {
    MPI_Allgatherv(mine, cnt, MPI_BYTE, *blob, counts, displs, MPI_BYTE,
                   c->app_comm);
    rc = unpack_tables(*blob, total, n, all, nall);
  }
  ft__free(mine);
  ft__free(counts);
  ft__free(displs);
  return rc;
}

static const ft__buf_rec_t *find_buf(const ft__rank_rec_t *r,
                                     const char *name) {
  for (uint32_t b = 0; b < r->nbufs; b++)
    if (strcmp(r->bufs[b].name, name) == 0)
      return &r->bufs[b];
  return NULL;
}

static int add_want(want_t **w, int *n, int *cap, want_t x) {
  if (*n == *cap) {
    int grown = *cap ? 2 * *cap : 64;
    want_t *p = ft__realloc(*w, (size_t)grown * sizeof(want_t));
    if (!p)
      return FT_ENOMEM;
    *w = p;
    *cap = grown;
  }
  (*w)[(*n)++] = x;
  return FT_OK;
}

/* The piece of old rank e's copy of buffer r that this rank needs, as a
 * want; 0 if that copy has nothing for it. */
static int candidate(const ft__reg_t *r, int reg, const entry_t *e, int me,
                     want_t *x) {
  const ft__buf_rec_t *b = find_buf(&e->rec, r->name);
  if (!b)
    return 0;
  *x =
      (want_t){.q = {.old_rank = e->rec.rank}, .server = e->server, .reg = reg};
  if (!r->opts.global_bytes) {
    if (e->rec.rank != (uint32_t)me || b->global_bytes || b->bytes != r->bytes)
      return 0;
    x->q.src_off = b->offset;
    x->q.len = r->bytes;
    return 1;
  }
  uint64_t lo = r->opts.global_offset, hi = lo + r->bytes;
  uint64_t blo = b->global_offset, bhi = blo + b->bytes;
  if (b->global_bytes != r->opts.global_bytes || bhi <= lo || blo >= hi)
    return 0;
  uint64_t s = blo > lo ? blo : lo, t = bhi < hi ? bhi : hi;
  x->q.src_off = b->offset + (s - blo);
  x->q.len = t - s;
  x->dst_off = s - lo;
  return 1;
}

static int by_dst(const void *a, const void *b) {
  const want_t *x = a, *y = b;
  return x->dst_off < y->dst_off ? -1 : x->dst_off > y->dst_off;
}

int ft__reslice_plan_buffer(ft_ctx_t *c, int reg, const entry_t *all, int nall,
                            int me, want_t **w, int *n, int *cap) {
  const ft__reg_t *r = &c->regs[reg];
  want_t *cand = ft__malloc((size_t)nall * sizeof(*cand));
  if (!cand)
    return FT_ENOMEM;
  int nc = 0, rc = FT_OK;
  for (int e = 0; e < nall; e++)
    nc += candidate(r, reg, &all[e], me, &cand[nc]);
  qsort(cand, (size_t)nc, sizeof(*cand), by_dst);
  uint64_t covered = 0; /* bytes [0, covered) of the buffer are planned */
  for (int i = 0; i < nc && rc == FT_OK && covered < r->bytes; i++) {
    want_t x = cand[i];
    uint64_t end = x.dst_off + x.q.len;
    if (x.dst_off > covered || end <= covered)
      continue; /* a gap (reported below) or nothing new */
    uint64_t skip = covered - x.dst_off;
    x.dst_off += skip, x.q.src_off += skip, x.q.len -= skip;
    covered = end;
    rc = add_want(w, n, cap, x);
  }
  ft__free(cand);
  if (rc == FT_OK && covered != r->bytes) {
    FT_LOGE(&c->log,
            "ft_restore: buffer '%s' (%zu bytes%s): the snapshot holds only "
            "its first %llu bytes: it cannot be re-sliced from what was saved",
            r->name, r->bytes, r->opts.global_bytes ? ", global slice" : "",
            (unsigned long long)covered);
    rc = FT_EMISMATCH;
  }
  return rc;
}

static const held_t *find_held(const server_t *sv, uint32_t rank) {
  for (int i = 0; i < sv->nheld; i++)
    if (sv->held[i].rec.rank == rank)
      return &sv->held[i];
  return NULL;
}

static uint8_t *region_of(const held_t *h) {
  return h->slot->map + h->slot->hdr->rank_off[h->idx];
}

/* The chunks of one slot already checked by this restore: a chunk holds
 * about 1/k of a node's data, and many requests (a piece of every buffer)
 * fall in the same one. */
typedef struct checked {
  const ft__slot_t *slot;
  uint8_t *done; /* [k + m] */
} checked_t;

/* Check the chunks of h's slot under [off, off + len) that are not yet. */
static int check_range(ft_ctx_t *c, checked_t *ck, int *nck,
                       const ft__slot_t *s, uint64_t off, uint64_t len) {
  const ft__slot_hdr_t *hd = s->hdr;
  if (len == 0 || hd->chunk_bytes == 0)
    return FT_OK;
  int i = 0;
  while (i < *nck && ck[i].slot != s)
    i++;
  if (i == *nck) {
    if (!(ck[i].done = ft__calloc(hd->k + hd->m, 1)))
      return FT_ENOMEM;
    ck[i].slot = s;
    (*nck)++;
  }
  /* The ranks' regions lie in the k data chunks (checked when the slot was
   * opened); a range outside them is served by nobody. */
  uint64_t first = 0, last = 0;
  if (off >= hd->data_off) {
    first = (off - hd->data_off) / hd->chunk_bytes;
    last = (off + len - 1 - hd->data_off) / hd->chunk_bytes;
  }
  if (off < hd->data_off || last >= hd->k) {
    FT_LOGE(
        &c->log, "ft_restore: %s: bytes %llu..%llu lie outside its data chunks",
        s->path, (unsigned long long)off, (unsigned long long)(off + len - 1));
    return FT_ECORRUPT;
  }
  char msg[512];
  for (uint64_t k = first; k <= last; k++) {
    if (ck[i].done[k])
      continue;
    int rc = ft__slot_verify(s, (uint32_t)k, 1, msg, sizeof(msg));
    if (rc) {
      FT_LOGE(&c->log, "ft_restore: %s", msg);
      return rc;
    }
    ck[i].done[k] = 1;
  }
  return FT_OK;
}

/* Server side: check every requested range (bounds, CRCs) before any byte
 * moves, each chunk once. */
static int check_requests(ft_ctx_t *c, const server_t *sv, const request_t *q,
                          int nq) {
  checked_t *ck = ft__calloc((size_t)sv->nheld + 1, sizeof(*ck));
  int nck = 0, rc = ck ? FT_OK : FT_ENOMEM;
  for (int i = 0; rc == FT_OK && i < nq; i++) {
    const held_t *h = find_held(sv, q[i].old_rank);
    uint64_t rb = h ? h->slot->hdr->rank_bytes[h->idx] : 0;
    if (!h || q[i].len > rb || q[i].src_off > rb - q[i].len) {
      FT_LOGE(&c->log,
              "ft_restore: asked for %llu bytes at %llu of old rank %u, which "
              "this node %s",
              (unsigned long long)q[i].len, (unsigned long long)q[i].src_off,
              q[i].old_rank, h ? "holds fewer bytes of" : "does not hold");
      rc = FT_EMISMATCH;
    } else {
      rc = check_range(c, ck, &nck, h->slot,
                       h->slot->hdr->rank_off[h->idx] + q[i].src_off, q[i].len);
    }
  }
  for (int i = 0; i < nck; i++)
    ft__free(ck[i].done);
  ft__free(ck);
  return rc;
}

typedef struct plan {
  int n;
  int *scount, *sdispl, *rcount, *rdispl; /* request exchange, in bytes */
} plan_t;

static int alloc_plan(plan_t *p, int n) {
  p->n = n;
  int **v[] = {&p->scount, &p->sdispl, &p->rcount, &p->rdispl};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    if (!(*v[i] = ft__calloc((size_t)n, sizeof(int))))
      return FT_ENOMEM;
  return FT_OK;
}

static void free_plan(plan_t *p) {
  int *v[] = {p->scount, p->sdispl, p->rcount, p->rdispl};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    ft__free(v[i]);
}

static void displs(const int *count, int *displ, int n) {
  int off = 0;
  for (int i = 0; i < n; i++) {
    displ[i] = off;
    off += count[i];
  }
}

/* Sort wants by server so each server's requests are contiguous. */
static int by_server(const void *a, const void *b) {
  return ((const want_t *)a)->server - ((const want_t *)b)->server;
}

static int too_big(ft_ctx_t *c, uint64_t bytes, const char *what) {
  if (bytes <= INT_MAX)
    return FT_OK;
  FT_LOGE(&c->log,
          "ft_restore: re-slicing would %s %llu bytes on this rank; this "
          "version moves at most 2 GiB per rank in a re-sliced restore",
          what, (unsigned long long)bytes);
  return FT_ERANGE;
}

/* The buffers of one exchange.  Every allocation is agreed on before the
 * collective that needs it: a rank out of memory makes every rank return
 * FT_ENOMEM instead of leaving them in an MPI call, or handing MPI NULL. */
typedef struct xfer {
  plan_t p;
  request_t *q, *in; /* requests sent (one per want), received */
  int nin;
  uint8_t *stage;   /* received bytes of device buffers, in want order */
  MPI_Request *req; /* one per want and one per request served */
  uint64_t want_bytes, stage_bytes;
} xfer_t;

static void free_xfer(xfer_t *x) {
  free_plan(&x->p);
  ft__free(x->q), ft__free(x->in), ft__free(x->stage), ft__free(x->req);
}

/* Requests in server order. */
static int plan_requests(ft_ctx_t *c, xfer_t *x, want_t *w, int nw, int n) {
  int rc = alloc_plan(&x->p, n);
  if (rc == FT_OK &&
      !(x->q = ft__malloc((size_t)(nw ? nw : 1) * sizeof(*x->q))))
    rc = FT_ENOMEM;
  if (rc)
    return rc;
  qsort(w, (size_t)nw, sizeof(*w), by_server);
  for (int i = 0; i < nw; i++) {
    x->q[i] = w[i].q;
    x->p.scount[w[i].server] += (int)sizeof(request_t);
    x->want_bytes += w[i].q.len;
    if (c->regs[w[i].reg].opts.memory == FT_MEM_CUDA)
      x->stage_bytes += w[i].q.len;
  }
  return FT_OK;
}

/* Collective: every server receives the requests it serves. */
static int send_requests(ft_ctx_t *c, xfer_t *x, int n) {
  plan_t *p = &x->p;
  MPI_Alltoall(p->scount, 1, MPI_INT, p->rcount, 1, MPI_INT, c->app_comm);
  displs(p->scount, p->sdispl, n);
  displs(p->rcount, p->rdispl, n);
  x->nin = (p->rdispl[n - 1] + p->rcount[n - 1]) / (int)sizeof(request_t);
  x->in = ft__malloc((size_t)(x->nin ? x->nin : 1) * sizeof(*x->in));
  int rc = ft__agree(c->app_comm, x->in ? FT_OK : FT_ENOMEM);
  if (rc == FT_OK)
    MPI_Alltoallv(x->q, p->scount, p->sdispl, MPI_BYTE, x->in, p->rcount,
                  p->rdispl, MPI_BYTE, c->app_comm);
  return rc;
}

#define RESLICE_TAG 0x7e51

/* Fault in the host buffers' pieces at once (often untouched in a
 * relaunched process); changes no byte. */
static void prefault_wants(ft_ctx_t *c, const want_t *w, int nw) {
  for (int i = 0; i < nw; i++) {
    const ft__reg_t *r = &c->regs[w[i].reg];
    if (r->opts.memory != FT_MEM_CUDA)
      ft__prefault_user((uint8_t *)r->ptr + w[i].dst_off, w[i].q.len);
  }
}

/* Move every piece straight from the server's store slot into the
 * registered host buffer that wants it (device buffers through a host
 * stage of their own): no copy of the served bytes into a buffer of their
 * own, no receive buffer (a first touch of a page cost about 10 us on the
 * 2-vCPU VM, two for every page of a shrink's restore when the bytes went
 * through such buffers).  Between two ranks the pieces go in request order
 * with one tag on the library's own communicator, and MPI does not reorder
 * them; an MPI error there ends the job (its error handler is fatal: a rank
 * that stopped posting would leave its peers waiting for their pieces). */
static int move(ft_ctx_t *c, const server_t *sv, xfer_t *x, const want_t *w,
                int nw, int n) {
  int k = 0;
  uint64_t staged = 0;
  for (int i = 0; i < nw; i++) {
    const ft__reg_t *r = &c->regs[w[i].reg];
    uint8_t *dst = r->opts.memory == FT_MEM_CUDA
                       ? x->stage + staged
                       : (uint8_t *)r->ptr + w[i].dst_off;
    if (r->opts.memory == FT_MEM_CUDA)
      staged += w[i].q.len;
    MPI_Irecv(dst, (int)w[i].q.len, MPI_BYTE, w[i].server, RESLICE_TAG,
              c->lib_comm, &x->req[k++]);
  }
  for (int s = 0, i = 0; s < n; s++)
    for (int j = 0; j < x->p.rcount[s] / (int)sizeof(request_t); j++, i++) {
      const held_t *h = find_held(sv, x->in[i].old_rank);
      MPI_Isend(region_of(h) + x->in[i].src_off, (int)x->in[i].len, MPI_BYTE, s,
                RESLICE_TAG, c->lib_comm, &x->req[k++]);
    }
  MPI_Waitall(k, x->req, MPI_STATUSES_IGNORE);
  int rc = FT_OK;
  staged = 0;
  for (int i = 0; rc == FT_OK && i < nw; i++) {
    ft__reg_t *r = &c->regs[w[i].reg];
    if (r->opts.memory != FT_MEM_CUDA)
      continue;
    if ((rc = ft__cuda_copy_h2d(c->cuda, (uint8_t *)r->ptr + w[i].dst_off,
                                x->stage + staged, w[i].q.len,
                                r->opts.cuda_stream)))
      FT_LOGE(&c->log, "ft_restore: device buffer '%s': %s", r->name,
              ft__cuda_last_error(c->cuda));
    staged += w[i].q.len;
  }
  return rc;
}

static int exchange(ft_ctx_t *c, const server_t *sv, want_t *w, int nw) {
  int n;
  MPI_Comm_size(c->app_comm, &n);
  xfer_t x = {0};
  int rc = plan_requests(c, &x, w, nw, n);
  /* MPI counts are ints: one exchange moves < 2 GiB per rank (a limit of
   * this version, refused rather than overflowed). */
  if (rc == FT_OK)
    rc = too_big(c, x.want_bytes, "receive");
  if ((rc = ft__agree(c->app_comm, rc)) == FT_OK)
    rc = send_requests(c, &x, n);
  /* Every served range is checked, and every rank has its room, before
   * any byte moves: a bad CRC anywhere leaves every buffer untouched. */
  if (rc == FT_OK) {
    rc = check_requests(c, sv, x.in, x.nin);
    if (rc == FT_OK && x.stage_bytes && !(x.stage = ft__malloc(x.stage_bytes)))
      rc = FT_ENOMEM;
    if (rc == FT_OK && !(x.req = ft__malloc(((size_t)nw + (size_t)x.nin + 1) *
                                            sizeof(*x.req))))
      rc = FT_ENOMEM;
    if (rc == FT_OK)
      prefault_wants(c, w, nw);
    rc = ft__agree(c->app_comm, rc);
  }
  /* A failure while the pieces move (MPI, a device copy) fails the
   * restore on every rank: the caller must not train on a partial state. */
  if (rc == FT_OK)
    rc = ft__agree(c->app_comm, move(c, sv, &x, w, nw, n));
  free_xfer(&x);
  return rc;
}

static int plan_all(ft_ctx_t *c, const server_t *sv, want_t **w, int *nw) {
  entry_t *all = NULL;
  uint8_t *blob = NULL;
  int nall = 0, cap = 0, me;
  MPI_Comm_rank(c->app_comm, &me);
  int rc = share_tables(c, sv, &all, &nall, &blob);
  for (int reg = 0; rc == FT_OK && reg < c->nregs; reg++)
    rc = ft__reslice_plan_buffer(c, reg, all, nall, me, w, nw, &cap);
  ft__free(all);
  ft__free(blob);
  return rc;
}

int ft__reslice_restore(ft_ctx_t *c, ft__slot_t *own) {
  server_t *sv = ft__calloc(1, sizeof(*sv));
  int rc = !sv                 ? FT_ENOMEM
           : c->local_idx == 0 ? open_server(c, sv, own)
                               : FT_OK;
  want_t *w = NULL;
  int nw = 0;
  if ((rc = ft__agree(c->app_comm, rc)) == FT_OK)
    rc = plan_all(c, sv, &w, &nw);
  /* Nobody touches a buffer unless every rank's plan is complete. */
  if ((rc = ft__agree(c->app_comm, rc)) == FT_OK)
    rc = exchange(c, sv, w, nw);
  ft__free(w);
  if (sv)
    close_server(sv);
  ft__free(sv);
  return rc;
}
