/*
 * Restore from the disk tier (persist/persist.h), onto any number of ranks.
 *
 * The SMPs agreed on the version and verified every file of it
 * (runtime/smp_disk.c ft__smp_agree_disk).  Each trainer then reads every node manifest
 * of the version, plans its buffers with the re-slicing rules of a shrink
 * (runtime/reslice.h: a slice of a global tensor from every persisted rank
 * whose slice overlaps it, a private buffer from the persisted rank with
 * the same number), and reads the pieces from the rank files, each block
 * checked against its CRC again as it is read.  Everything goes to a
 * staging copy first: no buffer is touched unless every rank has read all
 * of its bytes (agreed over app_comm).
 */
#include "runtime/disk.h"

#include <stdio.h>
#include <string.h>

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/pages.h"
#include "persist/persist.h"
#include "runtime/reslice.h"

/* Everything read of the version: its manifest, node manifests and, as
 * re-slice entries, every persisted rank (server = index into files). */
typedef struct version {
  ft__dir_t job;
  ft__pversion_t v;
  ft__pnode_t *nodes;
  ft__reslice_entry_t *ranks;
  const ft__prank_t **src; /* [nranks]: the record of each entry */
  int nranks;
} version_t;

static void close_version(version_t *x) {
  for (uint32_t i = 0; x->nodes && i < x->v.nnodes; i++)
    ft__pnode_clear(&x->nodes[i]);
  ft__free(x->nodes);
  ft__free(x->ranks);
  ft__free(x->src);
  ft__pversion_clear(&x->v);
  ft__dir_close(&x->job);
}

static int add_ranks(version_t *x, const ft__pnode_t *n) {
  for (uint32_t i = 0; i < n->nranks; i++) {
    const ft__prank_t *r = &n->ranks[i];
    ft__reslice_entry_t *e = &x->ranks[x->nranks];
    e->rec.rank = r->rank;
    e->rec.nbufs = r->nbufs;
    e->rec.region_bytes = r->bytes;
    e->rec.bufs = r->bufs;
    e->server = x->nranks;
    x->src[x->nranks++] = r;
  }
  return FT_OK;
}

static int open_version(ft_ctx_t *c, version_t *x, char *msg, size_t msglen) {
  int rc = ft__persist_open(c->cfg.persist_dir, c->cfg.job, 0, &x->job, msg,
                            msglen);
  if (rc == FT_OK)
    rc = ft__persist_read_version(&x->job, c->ctl->restore_vdir, &x->v, msg,
                                  msglen);
  if (rc)
    return rc;
  x->nodes = ft__calloc(x->v.nnodes, sizeof(*x->nodes));
  x->ranks = ft__calloc((size_t)x->v.ntrainers + 1, sizeof(*x->ranks));
  x->src = ft__calloc((size_t)x->v.ntrainers + 1, sizeof(*x->src));
  if (!x->nodes || !x->ranks || !x->src)
    return ft__msgf(FT_ENOMEM, msg, msglen, "out of memory for the tables "
                    "of %u nodes", x->v.nnodes);
  for (uint32_t i = 0; rc == FT_OK && i < x->v.nnodes; i++) {
    rc = ft__persist_read_node(&x->job, &x->v, i, &x->nodes[i], msg, msglen);
    if (rc == FT_OK && (uint64_t)x->nranks + x->nodes[i].nranks >
                           x->v.ntrainers)
      rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s/%s: its nodes hold more ranks than its MANIFEST "
                    "says (%u)",
                    x->job.path, x->v.name, x->v.ntrainers);
    if (rc == FT_OK)
      rc = add_ranks(x, &x->nodes[i]);
  }
  if (rc == FT_OK && (uint32_t)x->nranks != x->v.ntrainers)
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s/%s: its nodes hold %d ranks, its MANIFEST says %u",
                  x->job.path, x->v.name, x->nranks, x->v.ntrainers);
  return rc;
}

/* The planned pieces into stage (the rank's region), one file at a time. */
static int read_pieces(ft_ctx_t *c, version_t *x,
                       const ft__reslice_want_t *w, int nw, uint8_t *stage,
                       char *msg, size_t msglen) {
  int rc = FT_OK;
  for (int s = 0; rc == FT_OK && s < x->nranks; s++) {
    ft__pfile_t f;
    int open = 0;
    for (int i = 0; rc == FT_OK && i < nw; i++) {
      if (w[i].server != s)
        continue;
      if (!open && (rc = ft__pfile_open(&f, &x->job, x->v.name, x->src[s],
                                        msg, msglen)) == FT_OK)
        open = 1;
      if (rc == FT_OK)
        rc = ft__pfile_read(&f, w[i].q.src_off, w[i].q.len,
                            stage + c->regs[w[i].reg].offset + w[i].dst_off,
                            msg, msglen);
    }
    if (open)
      ft__pfile_close(&f);
  }
  return rc;
}

static int stage_all(ft_ctx_t *c, uint8_t *stage, char *msg, size_t msglen) {
  version_t x = {0};
  ft__dir_init(&x.job, "");
  ft__reslice_want_t *w = NULL;
  int nw = 0, cap = 0, me;
  MPI_Comm_rank(c->app_comm, &me);
  int rc = open_version(c, &x, msg, msglen);
  for (int reg = 0; rc == FT_OK && reg < c->nregs; reg++)
    if ((rc = ft__reslice_plan_buffer(c, reg, x.ranks, x.nranks, me, &w, &nw,
                                      &cap)))
      ft__msgf(rc, msg, msglen,
               "buffer '%s' cannot be restored from %s/%s (see above): "
               "relaunch with the model and flags that wrote it, or start "
               "over with --fresh (FT_FRESH=1), which discards the job's "
               "persisted versions",
               c->regs[reg].name, x.job.path, x.v.name);
  if (rc == FT_OK)
    rc = read_pieces(c, &x, w, nw, stage, msg, msglen);
  ft__free(w);
  close_version(&x);
  return rc;
}

int ft__regs_copy_in(ft_ctx_t *c, const uint8_t *region) {
  for (int i = 0; i < c->nregs; i++) {
    ft__reg_t *r = &c->regs[i];
    if (r->opts.memory == FT_MEM_CUDA) {
      int rc = ft__cuda_copy_h2d(c->cuda, r->ptr, region + r->offset, r->bytes,
                                 r->opts.cuda_stream);
      if (rc) {
        FT_LOGE(&c->log, "ft_restore: device buffer '%s': %s", r->name,
                ft__cuda_last_error(c->cuda));
        return rc;
      }
    } else {
      /* Often untouched in this process (a relaunch): faulted in at once,
       * not a page at a time by the copy. */
      ft__prefault_user(r->ptr, r->bytes);
      memcpy(r->ptr, region + r->offset, r->bytes);
    }
  }
  return FT_OK;
}

int ft__disk_restore(ft_ctx_t *c, uint64_t *step) {
  char msg[512] = "";
  uint8_t *stage = ft__malloc(c->region_bytes ? c->region_bytes : 1);
  int rc = stage ? stage_all(c, stage, msg, sizeof(msg))
                 : ft__msgf(FT_ENOMEM, msg, sizeof(msg),
                            "out of memory to stage %llu bytes",
                            (unsigned long long)c->region_bytes);
  if (rc)
    FT_LOGE(&c->log, "ft_restore from the disk tier: %s", msg);
  /* Nobody touches a buffer unless every rank read all of its bytes. */
  if ((rc = ft__agree(c->app_comm, rc)) == FT_OK)
    rc = ft__agree(c->app_comm, ft__regs_copy_in(c, stage));
  if (rc == FT_OK && step)
    *step = c->ctl->restore_step;
  ft__free(stage);
  return rc;
}
