/*
 * When the SMP flushes a committed version to the disk tier (the writing
 * itself is runtime/flush.c's, in a thread of its own).  A version is due
 * when FT_PERSIST_EVERY versions have passed since the last flush started;
 * it starts once no flush runs and while its slot still holds it, from the
 * loop, without delay to any snapshot.  This node's part is described from
 * the slot header and the layout's buffer tables.  When the job ends, the
 * newest committed version goes to disk whole before the SMP exits.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "runtime/smp_impl.h"

void ft__smp_flush_midway(void *arg) {
  smp_t *s = arg;
  FT_FAULT_POINT(s->c, "flush");
}

/* desc: zeroed.  This node's part of committed version v, as the flush
 * writes it: each local rank's region and buffer table. */
static int describe_part(smp_t *s, const ft__slot_t *sl, ft__pnode_t *d) {
  snprintf(d->job, sizeof(d->job), "%s", s->c->cfg.job);
  d->run = s->job.run, d->version = sl->hdr->version, d->step = sl->hdr->step;
  d->epoch = sl->hdr->epoch; /* the epoch the version was made at */
  d->nonce = s->disk.nonce;
  d->node = (uint32_t)s->node, d->nnodes = (uint32_t)s->nnodes;
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  d->ntrainers = (uint32_t)(world - s->nnodes);
  d->ranks = ft__calloc((size_t)s->c->nlocal, sizeof(*d->ranks));
  if (!d->ranks)
    return FT_ENOMEM;
  d->nranks = (uint32_t)s->c->nlocal;
  for (int i = 0; i < s->c->nlocal; i++) {
    ft__prank_t *r = &d->ranks[i];
    const ft__ctl_rank_t *cr = &s->ctl->rank[i];
    r->rank = cr->app_rank;
    r->bytes = sl->hdr->rank_bytes[i];
    r->nbufs = cr->nbufs;
    r->block_crc = ft__calloc(ft__persist_blocks(r->bytes) + 1, 8);
    r->bufs = ft__calloc(r->nbufs + 1, sizeof(ft__buf_rec_t));
    if (!r->block_crc || !r->bufs)
      return FT_ENOMEM;
    if (r->nbufs)
      memcpy(r->bufs, s->layout.tabs[i], r->nbufs * sizeof(ft__buf_rec_t));
  }
  return FT_OK;
}

static void start_flush(smp_t *s, uint64_t v) {
  const ft__slot_t *sl = &s->store.slot[v % FT_NSLOTS];
  ft__pnode_t d = {0};
  if (describe_part(s, sl, &d) != FT_OK) {
    ft__pnode_clear(&d);
    FT_LOGW(&s->c->log, "flush of version %llu not started: out of memory",
            (unsigned long long)v);
    return;
  }
  ft__flush_start(s->disk.flush, (int)(v % FT_NSLOTS), sl->fd,
                  sl->hdr->rank_off, &d);
}

/* Start the flush that is due, once none runs and while its slot still
 * holds it (until v + 2 is prepared).  Called from the loop: a flush that
 * had to wait for another one (ended, or cancelled) starts without delay
 * to any snapshot. */
void ft__smp_flush_due(smp_t *s) {
  ft__flush_poll(s->disk.flush);
  uint64_t v = s->disk.want_flush;
  if (!v || ft__flush_busy(s->disk.flush))
    return;
  s->disk.want_flush = 0;
  if (s->prepared >= v + FT_NSLOTS)
    return; /* its slot was reused: a newer commit will be due */
  start_flush(s, v);
  s->disk.next_flush = v + (uint64_t)s->c->cfg.persist_every;
}

/* After the commit of v: due when FT_PERSIST_EVERY versions have passed
 * since the last flush started (a newer due version replaces an older one
 * that waits). */
void ft__smp_maybe_flush(smp_t *s, uint64_t v) {
  if (!s->disk.flush || v < s->disk.next_flush)
    return;
  s->disk.want_flush = v;
  ft__smp_flush_due(s);
}

/* Wait for the running flush with heartbeats: the other SMPs, some of
 * them still waiting for their trainers to finish, hear this one while it
 * writes (a silence in them is theirs to judge; this one only finishes). */
static void wait_flush(smp_t *s) {
  while (ft__flush_busy(s->disk.flush)) {
    ft__flush_poll(s->disk.flush);
    ft__pulse_poll(&s->pulse);
    ft__ctl_wait(s->ctl, ft__ctl_seq(s->ctl), 0.05);
  }
}

/* The job ends: the newest committed version goes to disk whole before
 * the SMP exits (a job stopped now resumes from it next time). */
void ft__smp_final_flush(smp_t *s) {
  wait_flush(s);
  /* Not a re-slice's restore point that nothing of this launch replaced:
   * it holds the old ranks' bytes, which this launch's tables do not
   * describe (a plain restore point's tables were checked: smp_layout.c
   * check_tables). */
  if (!s->disk.flush || !s->committed || !s->layout.done ||
      (s->committed <= s->ctl->restore_version && s->ctl->restore_reslice) ||
      ft__flush_done_version(s->disk.flush) >= s->committed)
    return;
  start_flush(s, s->committed);
  wait_flush(s);
}
