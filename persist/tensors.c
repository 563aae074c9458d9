/*
 * A persisted version read as tensors (include/ftrt.h, ft_persisted_*):
 * the reader behind ft-persist export and the Python package's
 * load_persisted.
 *
 * Opening reads only manifests: the version's MANIFEST and every node
 * manifest (each checked against the CRC its MANIFEST names), then builds
 * the table of tensors from the buffer records.  Records are sorted by
 * name so that every name is one tensor: all its records private (one per
 * rank), or all slices of one global tensor of one size, which must cover
 * it -- a version that cannot give a tensor whole is refused at open, with
 * the missing bytes named, before a caller has written anything.  Where
 * slices overlap (a tensor replicated over data-parallel groups), each
 * byte is taken from the first slice by offset that holds it, the rule of
 * the re-slicing restore (runtime/reslice.c), so that both read the same
 * bytes.
 *
 * Reading goes through ft__pfile_read, which checks every 4 MiB block it
 * touches against its CRC before a byte of it is copied out.  A few rank
 * files stay open, least recently used closed first: each holds a block
 * of 4 MiB, and a job of a thousand ranks has a thousand files.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ftrt.h"
#include "persist/persist.h"

#define OPEN_FILES 4

typedef struct pslice {
  const ft__prank_t *r; /* its rank's record (in a node manifest) */
  uint64_t goff, bytes; /* its place in the global tensor */
  uint64_t foff;        /* and in its rank file */
  uint64_t lo, hi;      /* the bytes of the tensor read from it */
} pslice_t;

typedef struct ptensor {
  const char *name; /* in its first record */
  int64_t rank;     /* -1: global */
  uint64_t bytes;
  uint32_t kind;
  uint64_t seq;         /* where it first appears: rank, then registration */
  const ft__prank_t *r; /* private: its rank's record */
  uint64_t foff;        /* private: its offset in the rank file */
  pslice_t *slices;     /* global: [nslices], by offset, into p->slices */
  uint32_t nslices;
} ptensor_t;

typedef struct open_file {
  ft__pfile_t f;
  int open;
  uint64_t used;
} open_file_t;

struct ft_persisted {
  ft__dir_t jobdir;
  ft__pversion_t v;
  ft__pnode_t *nodes; /* [v.nnodes] */
  ptensor_t *t;
  size_t nt;
  pslice_t *slices;
  size_t nslices;
  open_file_t files[OPEN_FILES];
  uint64_t clock;
};

/* One buffer record of one rank, while the table is built. */
typedef struct rec {
  const ft__prank_t *r;
  const ft__buf_rec_t *b;
  uint64_t seq;
} rec_t;

/* ---- choosing the version ---- */

/* A job name as a directory name: ft__valid_job's rule (runtime/config.c,
 * a layer above this one), enough of it that dir/job stays inside dir. */
static int job_ok(const char *job) {
  size_t n = strlen(job);
  return n > 0 && n < FT_JOB_MAX && job[0] != '.' && !strchr(job, '/');
}

static int no_version(const ft_persisted_t *p, const char *what, char *msg,
                      size_t msglen) {
  int incomplete = 0, damaged = 0;
  char why[512] = "";
  ft__persist_unlisted(&p->jobdir, &incomplete, &damaged, why, sizeof(why));
  return ft__msgf(FT_ENOENT, msg, msglen,
                  "%s: %s (%d version director%s without a MANIFEST: a "
                  "flush interrupted or still running; %d with a damaged "
                  "one%s%s); 'ft-persist list' shows what there is",
                  p->jobdir.path, what, incomplete,
                  incomplete == 1 ? "y" : "ies", damaged, damaged ? ": " : "",
                  why);
}

/* "latest": the newest version that verifies; msg, on FT_OK, what was
 * skipped. */
static int pick_latest(ft_persisted_t *p, ft__pversion_t *v, int n, int *pick,
                       char *msg, size_t msglen) {
  char skipped[2048] = "", why[512];
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (ft__persist_verify(&p->jobdir, &v[i], 0, 1, NULL, why, sizeof(why)) ==
        FT_OK) {
      *pick = i;
      if (msg && msglen)
        snprintf(msg, msglen, "%s", skipped);
      return FT_OK;
    }
    int k = snprintf(skipped + at, sizeof(skipped) - at, "%s%s skipped: %s",
                     at ? "; " : "", v[i].name, why);
    at = k < 0 || (size_t)k >= sizeof(skipped) - at ? sizeof(skipped) - 1
                                                    : at + (size_t)k;
  }
  return ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: no complete version verifies: %s", p->jobdir.path,
                  skipped);
}

static int pick_named(ft_persisted_t *p, ft__pversion_t *v, int n,
                      const char *version, int *pick, char *msg,
                      size_t msglen) {
  int rc = ft__persist_find(v, n, version, pick);
  if (rc == FT_EINVAL)
    return ft__msgf(FT_EINVAL, msg, msglen,
                    "version '%s': expected 'latest', a version number or a "
                    "directory name v<V>.e<E> (ft-persist list shows them)",
                    version);
  if (rc == FT_OK)
    return FT_OK;
  char what[160];
  snprintf(what, sizeof(what), "no complete version %s'%s'; the newest is %s",
           version[0] == 'v' ? "" : "numbered ", version, v[0].name);
  return no_version(p, what, msg, msglen);
}

static int pick_version(ft_persisted_t *p, const char *version, char *msg,
                        size_t msglen) {
  ft__pversion_t *v = NULL;
  int n = 0, pick = -1;
  int rc = ft__persist_list(&p->jobdir, &v, &n, NULL, msg, msglen);
  if (rc == FT_OK && n == 0)
    rc = no_version(p, "no complete version", msg, msglen);
  if (rc == FT_OK && (!version || strcmp(version, "latest") == 0))
    rc = pick_latest(p, v, n, &pick, msg, msglen);
  else if (rc == FT_OK)
    rc = pick_named(p, v, n, version, &pick, msg, msglen);
  if (rc == FT_OK) { /* the handle takes the chosen one's tables */
    p->v = v[pick];
    memset(&v[pick], 0, sizeof(v[pick]));
  }
  ft__persist_list_free(v, n);
  return rc;
}

/* ---- the table of tensors ---- */

static int read_nodes(ft_persisted_t *p, char *msg, size_t msglen) {
  p->nodes = ft__calloc(p->v.nnodes, sizeof(*p->nodes));
  if (!p->nodes)
    return ft__msgf(FT_ENOMEM, msg, msglen, "out of memory");
  for (uint32_t i = 0; i < p->v.nnodes; i++) {
    int rc =
        ft__persist_read_node(&p->jobdir, &p->v, i, &p->nodes[i], msg, msglen);
    if (rc)
      return rc;
  }
  return FT_OK;
}

static int by_rank(const void *a, const void *b) {
  const ft__prank_t *x = *(const ft__prank_t *const *)a;
  const ft__prank_t *y = *(const ft__prank_t *const *)b;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Every rank of the job once, ascending, into *out ([v.ntrainers]). */
static int rank_table(ft_persisted_t *p, const ft__prank_t ***out, char *msg,
                      size_t msglen) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < p->v.nnodes; i++)
    n += p->nodes[i].nranks;
  if (n != p->v.ntrainers)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s/%s: its node manifests hold %u ranks, its MANIFEST "
                    "says %u",
                    p->jobdir.path, p->v.name, n, p->v.ntrainers);
  const ft__prank_t **r = ft__malloc((n ? n : 1) * sizeof(*r));
  if (!r)
    return ft__msgf(FT_ENOMEM, msg, msglen, "out of memory");
  n = 0;
  for (uint32_t i = 0; i < p->v.nnodes; i++)
    for (uint32_t j = 0; j < p->nodes[i].nranks; j++)
      r[n++] = &p->nodes[i].ranks[j];
  qsort(r, n, sizeof(*r), by_rank);
  for (uint32_t i = 0; i < n; i++)
    if (r[i]->rank != i) {
      ft__free(r);
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s/%s: its node manifests do not hold ranks 0..%u "
                      "once each",
                      p->jobdir.path, p->v.name, n ? n - 1 : 0);
    }
  *out = r;
  return FT_OK;
}

/* Name, then private before global, then offset in the global tensor. */
static int by_name(const void *a, const void *b) {
  const rec_t *x = a, *y = b;
  int c = strcmp(x->b->name, y->b->name);
  if (c)
    return c;
  if ((x->b->global_bytes != 0) != (y->b->global_bytes != 0))
    return x->b->global_bytes ? 1 : -1;
  if (x->b->global_offset != y->b->global_offset)
    return x->b->global_offset < y->b->global_offset ? -1 : 1;
  return x->r->rank < y->r->rank ? -1 : x->r->rank > y->r->rank;
}

/* Every buffer record of every rank, by name, into *out. */
static int all_records(ft_persisted_t *p, rec_t **out, size_t *n, char *msg,
                       size_t msglen) {
  const ft__prank_t **r = NULL;
  int rc = rank_table(p, &r, msg, msglen);
  if (rc)
    return rc;
  size_t total = 0;
  for (uint32_t i = 0; i < p->v.ntrainers; i++)
    total += r[i]->nbufs;
  rec_t *all = ft__malloc((total ? total : 1) * sizeof(*all));
  if (!all) {
    ft__free(r);
    return ft__msgf(FT_ENOMEM, msg, msglen, "out of memory");
  }
  size_t k = 0;
  for (uint32_t i = 0; i < p->v.ntrainers; i++)
    for (uint32_t b = 0; b < r[i]->nbufs; b++, k++)
      all[k] = (rec_t){.r = r[i], .b = &r[i]->bufs[b], .seq = k};
  ft__free(r);
  qsort(all, total, sizeof(*all), by_name);
  *out = all;
  *n = total;
  return FT_OK;
}

/* A short list of a global tensor's slices, for a message. */
static void describe_slices(const rec_t *g, size_t n, char *out, size_t len) {
  size_t at = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && at < len; i++) {
    int k = i < 8 ? snprintf(out + at, len - at,
                             "%srank %u at %" PRIu64 "..%" PRIu64,
                             i ? ", " : "", g[i].r->rank, g[i].b->global_offset,
                             g[i].b->global_offset + g[i].b->bytes)
                  : snprintf(out + at, len - at, ", %zu more", n - i);
    if (k < 0)
      return;
    at += (size_t)k;
    if (i >= 8)
      return;
  }
}

/* The records g[0..n) of one global tensor, by offset: one size and kind,
 * every byte covered.  Fills the slices' lo and hi into s[0..n). */
static int plan_global(const ft_persisted_t *p, const rec_t *g, size_t n,
                       pslice_t *s, char *msg, size_t msglen) {
  const char *name = g[0].b->name;
  uint64_t size = g[0].b->global_bytes, covered = 0;
  char gaps[512] = "", slices[512];
  size_t at = 0;
  int ngaps = 0;
  for (size_t i = 0; i < n; i++) {
    const ft__buf_rec_t *b = g[i].b;
    if (b->global_bytes != size || b->kind != g[0].b->kind)
      return ft__msgf(FT_EMISMATCH, msg, msglen,
                      "%s/%s: global tensor '%s': rank %u registered it "
                      "with %" PRIu64 " bytes (kind %u), rank %u with %" PRIu64
                      " (kind %u): not one tensor",
                      p->jobdir.path, p->v.name, name, g[0].r->rank, size,
                      g[0].b->kind, g[i].r->rank, b->global_bytes, b->kind);
    uint64_t end = b->global_offset + b->bytes;
    if (b->global_offset > covered && ngaps++ < 4) {
      int k = snprintf(gaps + at, sizeof(gaps) - at, "%s%" PRIu64 "..%" PRIu64,
                       at ? ", " : "", covered, b->global_offset);
      at = k < 0 || (size_t)k >= sizeof(gaps) - at ? sizeof(gaps) - 1
                                                   : at + (size_t)k;
    }
    s[i] = (pslice_t){.r = g[i].r,
                      .goff = b->global_offset,
                      .bytes = b->bytes,
                      .foff = b->offset};
    s[i].lo = b->global_offset > covered ? b->global_offset : covered;
    s[i].hi = end > s[i].lo ? end : s[i].lo;
    covered = end > covered ? end : covered;
  }
  if (covered < size && ngaps++ < 4)
    snprintf(gaps + at, sizeof(gaps) - at, "%s%" PRIu64 "..%" PRIu64,
             at ? ", " : "", covered, size);
  if (!ngaps)
    return FT_OK;
  describe_slices(g, n, slices, sizeof(slices));
  return ft__msgf(FT_EMISMATCH, msg, msglen,
                  "%s/%s: global tensor '%s' (%" PRIu64 " bytes): bytes %s%s "
                  "are in no rank's slice (slices: %s); the version cannot "
                  "give it whole (were those slices registered?)",
                  p->jobdir.path, p->v.name, name, size, gaps,
                  ngaps > 4 ? " and more" : "", slices);
}

/* Records g[0..n), one name, into tensors at p->t[p->nt...]. */
static int add_name(ft_persisted_t *p, const rec_t *g, size_t n, char *msg,
                    size_t msglen) {
  if (g[0].b->global_bytes == 0 && g[n - 1].b->global_bytes != 0)
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s/%s: '%s' is private to rank %u but a slice of a "
                    "global tensor on rank %u",
                    p->jobdir.path, p->v.name, g[0].b->name, g[0].r->rank,
                    g[n - 1].r->rank);
  if (g[0].b->global_bytes == 0) {
    for (size_t i = 0; i < n; i++) {
      if (i && g[i].r->rank == g[i - 1].r->rank)
        return ft__msgf(FT_ECORRUPT, msg, msglen,
                        "%s/%s: rank %u has two buffers named '%s'",
                        p->jobdir.path, p->v.name, g[i].r->rank, g[i].b->name);
      p->t[p->nt++] = (ptensor_t){.name = g[i].b->name,
                                  .rank = g[i].r->rank,
                                  .bytes = g[i].b->bytes,
                                  .kind = g[i].b->kind,
                                  .seq = g[i].seq,
                                  .r = g[i].r,
                                  .foff = g[i].b->offset};
    }
    return FT_OK;
  }
  pslice_t *s = p->slices + p->nslices;
  int rc = plan_global(p, g, n, s, msg, msglen);
  if (rc)
    return rc;
  uint64_t seq = g[0].seq;
  for (size_t i = 1; i < n; i++)
    seq = g[i].seq < seq ? g[i].seq : seq;
  p->t[p->nt++] = (ptensor_t){.name = g[0].b->name,
                              .rank = -1,
                              .bytes = g[0].b->global_bytes,
                              .kind = g[0].b->kind,
                              .seq = seq,
                              .slices = s,
                              .nslices = (uint32_t)n};
  p->nslices += n;
  return FT_OK;
}

static int by_seq(const void *a, const void *b) {
  const ptensor_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int build_table(ft_persisted_t *p, char *msg, size_t msglen) {
  rec_t *all = NULL;
  size_t n = 0;
  int rc = all_records(p, &all, &n, msg, msglen);
  if (rc)
    return rc;
  p->t = ft__malloc((n ? n : 1) * sizeof(*p->t));
  p->slices = ft__malloc((n ? n : 1) * sizeof(*p->slices));
  if (!p->t || !p->slices)
    rc = ft__msgf(FT_ENOMEM, msg, msglen, "out of memory");
  for (size_t i = 0, j; rc == FT_OK && i < n; i = j) {
    for (j = i + 1; j < n && strcmp(all[j].b->name, all[i].b->name) == 0; j++)
      ;
    rc = add_name(p, all + i, j - i, msg, msglen);
  }
  ft__free(all);
  if (rc == FT_OK && p->nt)
    qsort(p->t, p->nt, sizeof(*p->t), by_seq);
  return rc;
}

int ft_persisted_open(const char *dir, const char *job, const char *version,
                      ft_persisted_t **out, char *msg, size_t msglen) {
  if (!out)
    return ft__msgf(FT_EINVAL, msg, msglen, "ft_persisted_open: out is NULL");
  *out = NULL;
  if (!dir || !*dir || !job || !job_ok(job))
    return ft__msgf(FT_EINVAL, msg, msglen, "ft_persisted_open: %s",
                    !dir || !*dir ? "no directory given" : "bad job name");
  ft_persisted_t *p = ft__calloc(1, sizeof(*p));
  if (!p)
    return ft__msgf(FT_ENOMEM, msg, msglen, "out of memory");
  int rc = ft__persist_open(dir, job, 0, &p->jobdir, msg, msglen);
  char note[2048] = ""; /* what "latest" skipped, or why none would do */
  if (rc == FT_OK && (rc = pick_version(p, version, note, sizeof(note))))
    ft__msgf(rc, msg, msglen, "%s", note);
  if (rc == FT_OK)
    rc = read_nodes(p, msg, msglen);
  if (rc == FT_OK && strcmp(p->v.job, job) != 0)
    rc = ft__msgf(FT_EMISMATCH, msg, msglen,
                  "%s/%s: a version of job '%s', not of '%s'", p->jobdir.path,
                  p->v.name, p->v.job, job);
  if (rc == FT_OK)
    rc = build_table(p, msg, msglen);
  if (rc) {
    ft_persisted_close(p);
    return rc;
  }
  if (msg && msglen) /* what "latest" skipped, or "" */
    snprintf(msg, msglen, "%s", note);
  *out = p;
  return FT_OK;
}

void ft_persisted_info(const ft_persisted_t *p, ft_persisted_info_t *info) {
  memset(info, 0, sizeof(*info));
  snprintf(info->dir, sizeof(info->dir), "%s", p->v.name);
  info->version = p->v.version, info->step = p->v.step;
  info->epoch = p->v.epoch, info->run = p->v.run;
  info->nnodes = p->v.nnodes, info->nranks = p->v.ntrainers;
  info->bytes = p->v.bytes;
  info->ntensors = p->nt;
}

int ft_persisted_tensor(const ft_persisted_t *p, size_t i,
                        ft_persisted_tensor_t *t) {
  if (i >= p->nt)
    return FT_ERANGE;
  const ptensor_t *x = &p->t[i];
  *t = (ft_persisted_tensor_t){.name = x->name,
                               .rank = x->rank,
                               .bytes = x->bytes,
                               .kind = x->kind,
                               .nslices = x->nslices};
  return FT_OK;
}

int ft_persisted_slice(const ft_persisted_t *p, size_t i, uint32_t j,
                       ft_persisted_slice_t *s) {
  if (i >= p->nt || j >= p->t[i].nslices)
    return FT_ERANGE;
  const pslice_t *x = &p->t[i].slices[j];
  *s = (ft_persisted_slice_t){
      .rank = x->r->rank, .global_offset = x->goff, .bytes = x->bytes};
  return FT_OK;
}

/* Rank file r, open: one of the few kept open, the least recently used
 * one closed to make room. */
static int file_of(ft_persisted_t *p, const ft__prank_t *r, ft__pfile_t **f,
                   char *msg, size_t msglen) {
  open_file_t *lru = &p->files[0];
  for (int i = 0; i < OPEN_FILES; i++) {
    open_file_t *o = &p->files[i];
    if (o->open && o->f.r == r) {
      o->used = ++p->clock;
      *f = &o->f;
      return FT_OK;
    }
    if (!o->open || (lru->open && o->used < lru->used))
      lru = o;
  }
  if (lru->open)
    ft__pfile_close(&lru->f);
  lru->open = 0;
  int rc = ft__pfile_open(&lru->f, &p->jobdir, p->v.name, r, msg, msglen);
  if (rc)
    return rc;
  lru->open = 1;
  lru->used = ++p->clock;
  *f = &lru->f;
  return FT_OK;
}

static int read_file(ft_persisted_t *p, const ft__prank_t *r, uint64_t off,
                     uint64_t len, uint8_t *dst, char *msg, size_t msglen) {
  ft__pfile_t *f;
  int rc = file_of(p, r, &f, msg, msglen);
  return rc ? rc : ft__pfile_read(f, off, len, dst, msg, msglen);
}

int ft_persisted_read(ft_persisted_t *p, size_t i, uint64_t off, uint64_t len,
                      void *dst, char *msg, size_t msglen) {
  if (i >= p->nt)
    return ft__msgf(FT_ERANGE, msg, msglen, "no tensor %zu (%zu in %s)", i,
                    p->nt, p->v.name);
  const ptensor_t *t = &p->t[i];
  if (off > t->bytes || len > t->bytes - off)
    return ft__msgf(FT_ERANGE, msg, msglen,
                    "'%s': bytes %" PRIu64 "..%" PRIu64
                    " lie past its %" PRIu64,
                    t->name, off, off + len, t->bytes);
  if (!len)
    return FT_OK;
  if (t->rank >= 0)
    return read_file(p, t->r, t->foff + off, len, dst, msg, msglen);
  for (uint32_t j = 0; j < t->nslices; j++) {
    const pslice_t *s = &t->slices[j];
    uint64_t a = s->lo > off ? s->lo : off;
    uint64_t b = s->hi < off + len ? s->hi : off + len;
    if (a >= b)
      continue;
    int rc = read_file(p, s->r, s->foff + (a - s->goff), b - a,
                       (uint8_t *)dst + (a - off), msg, msglen);
    if (rc)
      return rc;
  }
  return FT_OK;
}

void ft_persisted_close(ft_persisted_t *p) {
  if (!p)
    return;
  for (int i = 0; i < OPEN_FILES; i++)
    if (p->files[i].open)
      ft__pfile_close(&p->files[i].f);
  for (uint32_t i = 0; p->nodes && i < p->v.nnodes; i++)
    ft__pnode_clear(&p->nodes[i]);
  ft__free(p->nodes);
  ft__free(p->t);
  ft__free(p->slices);
  ft__pversion_clear(&p->v);
  ft__dir_close(&p->jobdir);
  ft__free(p);
}
