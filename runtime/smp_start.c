/*
 * The SMP's start-up (ft__smp_start): the store, and the order of the
 * steps.  The store is locked before anything in it is read (a second
 * launch of the job on this node waits, then refuses), rebuilt first under
 * FT_REBUILD, then read: the disk marker, both slots (one cut short by a
 * crash counts as empty, one that is not blank as damaged), the metadata
 * and a pending layout.  The collective steps follow: the nodes and groups
 * (smp_nodes.c), FT_FRESH's clearing of the store, the version to restore
 * from memory (smp_restore.c) and the disk tier's part (smp_disk.c); last,
 * this node's place is published in the control segment.  Collective steps
 * run even after a local error, so that no SMP is left alone in a
 * collective; the local error and its message win.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/smp.h"

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "runtime/recover.h"
#include "runtime/smp_impl.h"
#include "snapshot/hold.h"

/* FT_FRESH=1: the user asked to start over.  The whole store goes (both
 * slots, the layout, the group table, adopted stores) before anything can
 * restore from it: nothing of the old run is read or outranks the new
 * run's versions, which start a new run id. */
static int start_over(smp_t *s) {
  uint64_t dropped = 0;
  for (int i = 0; i < FT_NSLOTS; i++) {
    ft__slot_t sl;
    if (ft__slot_open(&sl, &s->c->dir, i, s->c->cfg.job, NULL, 0) != FT_OK)
      continue;
    if (ft__slot_state(&sl) >= FT_SLOT_ENCODED && sl.hdr->version > dropped)
      dropped = sl.hdr->version;
    ft__slot_close(&sl);
  }
  if (dropped)
    FT_LOGW(&s->c->log,
            "FT_FRESH=1: starting over; version %llu of job '%s' "
            "is discarded",
            (unsigned long long)dropped, s->c->cfg.job);
  return ft__store_clear(&s->c->dir, s->msg, sizeof(s->msg));
}

/* The pending layout of a launch that may have died before its first
 * commit. */
static int read_pending(smp_t *s) {
  char msg[512];
  s->store.pend = ft__calloc(1, sizeof(*s->store.pend));
  if (!s->store.pend)
    return ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                    "%s/%s: out of memory to read it", s->c->dir.path,
                    FT_META_PENDING);
  int rc = ft__meta_read_as(&s->c->dir, FT_META_PENDING, s->store.pend, msg,
                            sizeof(msg));
  if (rc != FT_OK) {
    ft__meta_free(s->store.pend);
    s->store.pend = NULL;
  }
  if (rc == FT_OK || rc == FT_ENOENT)
    return FT_OK;
  /* One that cannot be read may describe a copy here (a version of a
   * layout the metadata does not describe, or a slot that failed
   * validation): that copy counts as damaged (smp_restore.c
   * refuse_discard), so that ft-restore rebuilds it.  Otherwise it
   * describes nothing: removed. */
  int theirs = s->store.damaged;
  for (int i = 0; i < FT_NSLOTS; i++)
    theirs |= s->store.slot[i].map &&
              ft__slot_state(&s->store.slot[i]) >= FT_SLOT_ENCODED &&
              s->store.slot[i].hdr->layout != s->store.meta->layout;
  if (theirs) {
    FT_LOGW(&s->c->log, "%s; the copies made under it are damaged here", msg);
    s->store.damaged = 1;
  } else if (ft__meta_drop_pending(&s->c->dir, s->store.meta, msg,
                                   sizeof(msg)) == FT_OK) {
    FT_LOGW(&s->c->log,
            "%s/%s could not be read and describes no copy "
            "here: removed",
            s->c->dir.path, FT_META_PENDING);
  }
  return FT_OK;
}

/* The highest epoch or layout number this node's store holds. */
static uint64_t note_seen(const smp_t *s) {
  uint64_t n = 0;
  const ft__meta_t *m[2] = {s->store.meta, s->store.pend};
  for (int i = 0; i < 2; i++)
    if (m[i] && m[i]->epoch > n)
      n = m[i]->epoch;
  for (int i = 0; i < FT_NSLOTS; i++) {
    const ft__slot_hdr_t *h =
        s->store.slot[i].map ? s->store.slot[i].hdr : NULL;
    if (h && h->epoch > n)
      n = h->epoch;
    if (h && h->layout > n)
      n = h->layout;
  }
  return n;
}

static int beat_between(void *pulse) { return ft__pulse_poll(pulse); }

/* ft-restore gave the memory tier up (more losses than the erasure code
 * rebuilds, or no version to rebuild) for a persisted version: it left
 * FT_DISK_MARKER, naming FT_PERSIST_DIR, in the live nodes' stores.  Read
 * here; acted on by ft__smp_settle_markers (smp_disk.c) once every node's
 * view is known. */
static int read_disk_marker(smp_t *s) {
  ft_ctx_t *c = s->c;
  uint8_t *buf = NULL;
  size_t len = 0;
  if (ft__store_read_file(&c->dir, FT_DISK_MARKER, 4096, &buf, &len, NULL, 0) !=
      FT_OK)
    return FT_OK; /* none */
  char dir[FT_PATH_MAX + 1];
  snprintf(dir, sizeof(dir), "%.*s", (int)(len < FT_PATH_MAX ? len : 0), buf);
  ft__free(buf);
  s->store.marked = 1;
  if (strcmp(dir, c->cfg.persist_dir) != 0)
    return ft__msgf(FT_ECONFIG, s->msg, sizeof(s->msg),
                    "%s/%s: ft-restore chose to resume job '%s' from the disk "
                    "tier in '%s', but this launch has FT_PERSIST_DIR='%s': "
                    "launch with FT_PERSIST_DIR=%s (ft-launch --persist)",
                    c->dir.path, FT_DISK_MARKER, c->cfg.job, dir,
                    c->cfg.persist_dir, dir);
  return FT_OK;
}

/* The store, made when missing, and this launch's lock on it. */
static int lock_store(smp_t *s) {
  ft_ctx_t *c = s->c;
  int rc = ft__store_open_dir(c->cfg.store_root, c->dir.path, 1, &c->dir,
                              s->msg, sizeof(s->msg));
  /* Before anything in the store is read: a second launch of the job on
   * this node would otherwise share the first one's slots. */
  /* Half of FT_TIMEOUT (a previous launch's SMP may still be exiting),
   * with heartbeats between the tries: the other SMPs hear this one while
   * it waits. */
  if (rc == FT_OK)
    rc = ft__store_lock_while(&c->dir, c->cfg.timeout_s / 2, &s->store.lock_fd,
                              beat_between, &s->pulse, s->msg, sizeof(s->msg));
  return rc;
}

/* FT_REBUILD (runtime/recover.h): ft-restore's engine on the locked
 * stores, before they are read.  Collective over the SMPs: it runs, or is
 * skipped, everywhere alike. */
static int rebuild(smp_t *s, int rc) {
  ft_ctx_t *c = s->c;
  if (!c->cfg.rebuild || c->cfg.fresh)
    return rc;
  if ((rc = ft__smp_agree_ok(s, rc, "start-up")))
    return rc;
  ft__rebuild_args_t a = {c->smp_comm, &c->cfg, &c->dir, c->host, &c->log};
  return ft__rebuild_in_job(&a, s->msg, sizeof(s->msg));
}

/* What the store holds: the disk marker, the slots, the metadata. */
static int open_store(smp_t *s) {
  ft_ctx_t *c = s->c;
  int rc = FT_OK;
  /* FT_FRESH=1: nothing of the store is read; start_over removes it once
   * every node agreed to (whatever format it was written in). */
  if (c->cfg.fresh)
    return rc;
  if (rc == FT_OK)
    rc = read_disk_marker(s);
  for (int i = 0; rc == FT_OK && i < FT_NSLOTS; i++) {
    rc = ft__slot_open(&s->store.slot[i], &c->dir, i, c->cfg.job, s->msg,
                       sizeof(s->msg));
    if (rc == FT_ECORRUPT) {
      /* A slot cut short by a crash while it was being (re)created holds no
       * committed version; the other slot may.  It is rebuilt when next
       * prepared.  One that is not blank is damaged: it may have held a
       * committed version (smp_restore.c refuse_discard). */
      s->store.damaged |= !ft__slot_blank(&c->dir, i);
      FT_LOGW(&c->log, "%s; treating the slot as empty", s->msg);
      s->msg[0] = '\0';
      rc = FT_OK;
    }
    if (rc == FT_ENOENT) {
      s->msg[0] = '\0'; /* none yet: no error, and no message left over */
      rc = FT_OK;
    }
  }
  if (rc)
    return rc;
  s->store.meta = ft__calloc(1, sizeof(*s->store.meta));
  if (!s->store.meta)
    return ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                    "%s/meta: out of memory to read it", c->dir.path);
  rc = ft__meta_read(&c->dir, s->store.meta, s->msg, sizeof(s->msg));
  if (rc != FT_OK) { /* none, or unreadable: nothing of it is offered to
                      * the other SMPs (ft-restore rebuilds this node) */
    ft__meta_free(s->store.meta);
    s->store.meta = NULL;
  }
  if (rc == FT_ENOENT) {
    s->msg[0] = '\0';
    rc = FT_OK;
  }
  if (rc == FT_OK && s->store.meta)
    rc = read_pending(s);
  s->store.seen = note_seen(s);
  return rc;
}

static void publish_node(smp_t *s) {
  ft__ctl_t *ctl = s->ctl;
  ctl->node = (uint32_t)s->node;
  ctl->nnodes = (uint32_t)s->nnodes;
  ctl->k = (uint32_t)s->ec.k;
  ctl->m = (uint32_t)s->ec.m;
  ctl->group = (uint32_t)s->ec.group;
  ctl->pos = (uint32_t)s->ec.pos;
  ctl->group_size = (uint32_t)s->ec.gsize;
  snprintf(ctl->host, sizeof(ctl->host), "%s", s->c->host);
  ctl->started_ns = (uint64_t)time(NULL) * 1000000000ull;
}

/* FT_HOLD arms a hold before any trainer attaches: none can pass it.
 * phase=restore is ft-restore's (and the rebuild's, runtime/recover.c). */
static void arm_hold(smp_t *s) {
  ft__hold_spec_t h;
  /* The relaunch of a recovery gets FT_HOLD for its rebuild's point only
   * (runtime/recover.c): it must not stop again where the failed job did. */
  if (s->c->cfg.rebuild)
    return;
  if (ft__hold_spec_for(s->c->cfg.hold, ~(1u << FT_HOLD_RESTORE), &h)) {
    h.limit_s = s->c->cfg.hold_limit_s;
    ft__hold_arm(s->ctl, &h);
  }
}

/* The trainers' sign that their SMP lives (trainer.c wait_for). */
static void publish_beat(void *arg) {
  smp_t *s = arg;
  if (s->ctl)
    ft__store64(&s->ctl->smp_beat, s->pulse.beats);
}

int ft__smp_start(ft_ctx_t *c, char *msg, size_t msglen) {
  smp_t *s = ft__calloc(1, sizeof(*s));
  /* Every later step is collective over the SMPs and needs s: an SMP
   * without it says so now, before anyone waits for it. */
  int rc = ft__agree(c->smp_comm, s ? FT_OK : FT_ENOMEM);
  if (rc) {
    const char *why = s ? "another SMP is out of memory at start-up"
                        : "out of memory for the SMP's state";
    ft__free(s);
    return ft__msgf(rc, msg, msglen, "%s", why);
  }
  c->smp = s;
  s->c = c;
  s->ec.gcomm = MPI_COMM_NULL;
  /* Heartbeats from here on: every later wait on a peer ends when that
   * peer falls silent, not after a fixed time. */
  rc = ft__pulse_init(&s->pulse, c->smp_comm, c->cfg.timeout_s);
  if (rc)
    return ft__msgf(rc, msg, msglen,
                    rc == FT_ETIMEDOUT
                        ? "start-up: not every SMP came within %.0f s "
                          "(FT_TIMEOUT); a node may be dead or partitioned"
                        : "start-up: cannot set up heartbeats (%.0f s)",
                    c->cfg.timeout_s);
  s->pulse.on_beat = publish_beat;
  s->pulse.on_beat_arg = s;
  for (int i = 0; i < FT_NSLOTS; i++)
    s->store.slot[i].fd = -1;
  s->store.lock_fd = -1;
  rc = rebuild(s, lock_store(s));
  if (rc == FT_OK)
    rc = open_store(s);
  if (rc == FT_OK)
    rc = ft__ctl_create(&c->dir, (uint32_t)c->nlocal, &s->ctl, s->msg,
                        sizeof(s->msg));
  c->ctl = s->ctl;
  if (rc == FT_OK)
    arm_hold(s);
  if (rc == FT_OK && c->cfg.persist_dir[0] &&
      !(s->disk.flush =
            ft__flush_new(c->cfg.persist_dir, c->cfg.job, c->cfg.persist_keep,
                          &s->ctl->persist, &c->log)))
    rc = ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "out of memory for the disk tier's flush");
  if (s->disk.flush)
    ft__flush_set_midway(s->disk.flush, ft__smp_flush_midway, s);
  /* Collective steps run even after a local error, so that no SMP is left
   * alone in a collective; the local error (and its message) wins. */
  char local_msg[sizeof(s->msg)];
  snprintf(local_msg, sizeof(local_msg), "%s", s->msg);
  int grc = ft__smp_form_groups(s);
  if (rc == FT_OK)
    rc = grc;
  else
    snprintf(s->msg, sizeof(s->msg), "%s", local_msg);
  if (rc == FT_OK)
    rc = ft__smp_check_relaunch(s);
  rc = ft__smp_agree_ok(s, rc, "start-up");
  if (rc == FT_OK && c->cfg.fresh)
    rc = ft__smp_agree_ok(s, start_over(s), "start-up");
  if (rc == FT_OK)
    rc = ft__smp_agree_restore(s);
  if (rc == FT_OK)
    rc = ft__smp_agree_reslice(s);
  if (rc == FT_OK)
    rc = ft__smp_agree_disk(s);
  if (rc == FT_OK)
    publish_node(s);
  return ft__msgf(rc, msg, msglen, "%s", s->msg);
}

void ft__smp_free(ft_ctx_t *c) {
  smp_t *s = c->smp;
  if (!s)
    return;
  ft__flush_free(s->disk.flush);
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&s->store.slot[i]);
  if (s->ec.gcomm != MPI_COMM_NULL)
    MPI_Comm_free(&s->ec.gcomm);
  ft__groups_free(&s->ec.groups);
  ft__meta_free(s->store.meta);
  ft__meta_free(s->store.pend);
  for (int i = 0; i < FT_MAX_LOCAL; i++)
    ft__free(s->layout.tabs[i]);
  ft__free(s->job.order);
  ft__free(s->job.hosts);
  ft__free(s->scratch);
  /* Collective (ft_init's failure, ft_finalize): the heartbeats end with
   * nothing left unmatched on their communicator. */
  if (s->pulse.heard)
    ft__pulse_end(&s->pulse);
  if (s->store.lock_fd >= 0)
    close(s->store.lock_fd); /* this launch gives the store up */
  ft__free(s);
  c->smp = NULL; /* c->ctl is the context's to detach */
}
