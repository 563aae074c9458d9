/*
 * The SMP's flush thread (flush.h).  One thread per flush, created when the
 * SMP hands a version over and joined by the SMP's loop once it has ended:
 * flushes are every FT_PERSIST_EVERY versions, so a thread's start costs
 * nothing next to the bytes it writes.  The thread shares nothing with the
 * SMP but this struct: the cancel flag (atomic), and the result fields,
 * which the SMP reads only after the join.
 */
#include "runtime/flush.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/crc.h"

struct ft__flush {
  char root[FT_PATH_MAX];
  char job[FT_JOB_MAX];
  int keep;
  ft__ctl_persist_t *st;
  const ft__log_t *log;
  uint8_t *buf; /* FT_PERSIST_BLOCK bytes of scratch */
  pthread_t thread;
  int running;  /* a thread was started and not joined */
  int ended;    /* atomic: the thread is about to return */
  int cancel;   /* atomic */
  int slot, fd;
  uint64_t rank_off[FT_MAX_LOCAL];
  ft__pnode_t desc;
  void (*midway)(void *);
  void *midway_arg;
  /* the result, read after the join */
  int rc, completed;
  uint64_t bytes;
  double seconds;
  uint64_t done_version;
  char msg[512];
  char said[512]; /* the last failure logged: the same one again is only
                   * counted (ft-status), not logged once a version */
};

ft__flush_t *ft__flush_new(const char *root, const char *job, int keep,
                           ft__ctl_persist_t *st, const ft__log_t *log) {
  ft__flush_t *f = ft__calloc(1, sizeof(*f));
  if (!f || !(f->buf = ft__malloc(FT_PERSIST_BLOCK))) {
    ft__free(f);
    return NULL;
  }
  snprintf(f->root, sizeof(f->root), "%s", root);
  snprintf(f->job, sizeof(f->job), "%s", job);
  f->keep = keep;
  f->st = st;
  f->log = log;
  f->fd = -1;
  st->enabled = 1;
  return f;
}

void ft__flush_set_midway(ft__flush_t *f, void (*midway)(void *),
                          void *arg) {
  f->midway = midway;
  f->midway_arg = arg;
}

int ft__flush_busy(ft__flush_t *f) { return f && f->running; }

static int cancelled(void *arg) {
  ft__flush_t *f = arg;
  return __atomic_load_n(&f->cancel, __ATOMIC_SEQ_CST);
}

/* The slot still holds the version, and its data chunks still have the
 * CRCs they were sealed with: checked after the rank files were read from
 * it, so a bit that flipped in memory before the flush read it is never
 * published with fresh CRCs of its own (the memory tier repairs it:
 * ft-restore treats the chunk as an erasure). */
static int check_slot(ft__flush_t *f) {
  ft__slot_hdr_t h;
  if (ft__pread_all(f->fd, &h, sizeof(h), 0) != 0)
    return ft__msgf(FT_EIO, f->msg, sizeof(f->msg),
                    "slot%d: its header could not be read back", f->slot);
  if (h.hdr_crc != ft__slot_hdr_crc(&h) || h.version != f->desc.version ||
      h.k < 1 || h.k >= FT_MAX_CHUNKS)
    return ft__msgf(FT_EBUSY, f->msg, sizeof(f->msg),
                    "slot%d no longer holds version %llu whole", f->slot,
                    (unsigned long long)f->desc.version);
  for (uint32_t c = 0; c < h.k; c++) {
    uint64_t crc = 0;
    for (uint64_t done = 0; done < h.chunk_bytes; done += FT_PERSIST_BLOCK) {
      size_t n = (size_t)(h.chunk_bytes - done < FT_PERSIST_BLOCK
                              ? h.chunk_bytes - done
                              : FT_PERSIST_BLOCK);
      if (cancelled(f))
        return FT_EBUSY;
      if (ft__pread_all(f->fd, f->buf, n,
                        h.data_off + c * h.chunk_bytes + done))
        return ft__msgf(FT_EIO, f->msg, sizeof(f->msg),
                        "slot%d: chunk %u could not be read back", f->slot, c);
      crc = ft__crc64(crc, f->buf, n);
    }
    if (crc != h.crc[c])
      return ft__msgf(FT_ECORRUPT, f->msg, sizeof(f->msg),
                      "slot%d: data chunk %u of version %llu fails its CRC "
                      "in memory: nothing of it is published (ft-restore "
                      "rebuilds the chunk; the job's next restore does)",
                      f->slot, c, (unsigned long long)f->desc.version);
  }
  return FT_OK;
}

/* A flush that did not finish leaves none of its rank files behind. */
static void remove_ranks(ft__flush_t *f, const ft__dir_t *vd, uint32_t n) {
  char name[32];
  for (uint32_t i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "rank%u", f->desc.ranks[i].rank);
    unlinkat(vd->fd, name, 0);
  }
}

/* This node's part, then the MANIFEST where every part is there. */
static int write_part(ft__flush_t *f, const ft__dir_t *job) {
  char name[64];
  ft__dir_t vd;
  uint32_t written = 0;
  ft__persist_dirname(f->desc.version, f->desc.epoch, name, sizeof(name));
  /* Complete on disk already (a relaunch that flushes the version it
   * restored): left as it is.  Writing it again would replace its parts
   * one by one under a MANIFEST that names the old ones. */
  ft__pversion_t done = {0};
  if (ft__persist_read_version(job, name, &done, NULL, 0) == FT_OK) {
    ft__pversion_clear(&done);
    f->completed = 1;
    return FT_OK;
  }
  int rc = ft__persist_mkvdir(job, name, &vd, f->msg, sizeof(f->msg));
  for (uint32_t i = 0; rc == FT_OK && i < f->desc.nranks; i++) {
    rc = ft__persist_write_rank(&vd, &f->desc.ranks[i], f->fd, f->rank_off[i],
                                f->buf, cancelled, f, f->msg, sizeof(f->msg));
    written += rc == FT_OK;
    f->bytes += rc == FT_OK ? f->desc.ranks[i].bytes : 0;
    if (rc == FT_OK && i == 0 && f->midway)
      f->midway(f->midway_arg);
  }
  if (rc == FT_OK)
    rc = check_slot(f);
  if (rc == FT_OK)
    rc = ft__persist_write_node(&vd, &f->desc, cancelled, f, f->msg,
                                sizeof(f->msg));
  if (rc != FT_OK && vd.fd >= 0) {
    char node[32];
    snprintf(node, sizeof(node), "node%u", f->desc.node);
    unlinkat(vd.fd, node, 0); /* a rename whose directory fsync failed */
    remove_ranks(f, &vd, written);
  }
  if (rc == FT_OK)
    rc = ft__persist_complete(&vd, &f->desc, &f->completed, f->msg,
                              sizeof(f->msg));
  ft__dir_close(&vd);
  return rc;
}

static void *run(void *arg) {
  ft__flush_t *f = arg;
  double t0 = ft__now();
  ft__dir_t job;
  f->msg[0] = '\0';
  f->rc = ft__persist_open(f->root, f->job, 1, &job, f->msg, sizeof(f->msg));
  if (f->rc == FT_OK)
    f->rc = write_part(f, &job);
  if (f->rc == FT_OK && f->completed) {
    char msg[512];
    int removed = 0;
    if (ft__persist_prune(&job, f->keep, &removed, msg, sizeof(msg)) != FT_OK)
      FT_LOGW(f->log, "%s (older persisted versions are kept)", msg);
  }
  ft__dir_close(&job);
  f->seconds = ft__now() - t0;
  __atomic_store_n(&f->ended, 1, __ATOMIC_RELEASE);
  return NULL;
}

int ft__flush_start(ft__flush_t *f, int idx, int slot_fd,
                    const uint64_t *rank_off, ft__pnode_t *desc) {
  if (f->running) {
    ft__pnode_clear(desc);
    return FT_EBUSY;
  }
  ft__pnode_clear(&f->desc);
  f->desc = *desc;
  memset(desc, 0, sizeof(*desc));
  memcpy(f->rank_off, rank_off, f->desc.nranks * sizeof(uint64_t));
  f->slot = idx;
  f->fd = dup(slot_fd);
  f->cancel = 0;
  f->ended = 0;
  f->completed = 0;
  f->bytes = 0;
  int err = f->fd < 0 ? errno : pthread_create(&f->thread, NULL, run, f);
  if (err) {
    int rc = ft__from_errno(err);
    snprintf(f->st->msg, sizeof(f->st->msg),
             "flush of version %" PRIu64 " not started: %s", f->desc.version,
             strerror(err));
    FT_LOGW(f->log, "%s", f->st->msg);
    if (f->fd >= 0)
      close(f->fd);
    f->fd = -1;
    return rc;
  }
  f->running = 1;
  f->st->flushing = f->desc.version;
  return FT_OK;
}

void ft__flush_cancel_slot(ft__flush_t *f, int idx) {
  if (f && f->running && f->slot == idx)
    __atomic_store_n(&f->cancel, 1, __ATOMIC_SEQ_CST);
}

/* The thread has returned: its result goes to the log and ft-status. */
static void report(ft__flush_t *f) {
  ft__ctl_persist_t *st = f->st;
  const ft__pnode_t *d = &f->desc;
  st->flushing = 0;
  st->status = f->rc;
  if (f->rc == FT_OK) {
    f->said[0] = '\0';
    st->flushes++;
    st->version = d->version, st->step = d->step;
    st->bytes = f->bytes, st->seconds = f->seconds;
    if (f->completed)
      st->complete = d->version;
    f->done_version = d->version;
    st->msg[0] = '\0';
    FT_LOGI(f->log, "flushed version %" PRIu64 " (step %" PRIu64 "): %" PRIu64
            " bytes in %.3f s%s",
            d->version, d->step, f->bytes, f->seconds,
            f->completed ? ", the version is complete on disk" : "");
  } else if (f->rc == FT_EBUSY) {
    st->abandoned++;
    snprintf(st->msg, sizeof(st->msg),
             "flush of version %" PRIu64 " abandoned after %.1f s: its slot "
             "was needed for a newer version (a flush has from the commit "
             "of its version to the commit of the next one; snapshot less "
             "often, or give FT_PERSIST_DIR a faster file system)",
             d->version, f->seconds);
    FT_LOGW(f->log, "%s", st->msg);
  } else {
    st->failed++;
    snprintf(st->msg, sizeof(st->msg), "flush of version %" PRIu64
             " failed: %.200s", d->version, f->msg);
    /* The same cause again (a full or unwritable directory fails every
     * flush): counted, not logged each time. */
    char cause[512];
    ft__persist_dirname(d->version, d->epoch, cause, sizeof(cause));
    const char *at = strstr(f->msg, cause);
    snprintf(cause, sizeof(cause), "%s", at ? at + strlen(cause) : f->msg);
    if (strcmp(cause, f->said) != 0)
      FT_LOGW(f->log, "%s; training goes on, protected in memory only (free "
              "space or lower FT_PERSIST_KEEP if the file system is full; "
              "the same failure again is counted in ft-status, not logged)",
              st->msg);
    snprintf(f->said, sizeof(f->said), "%s", cause);
  }
}

static void join(ft__flush_t *f) {
  pthread_join(f->thread, NULL);
  f->running = 0;
  close(f->fd);
  f->fd = -1;
  report(f);
}

void ft__flush_poll(ft__flush_t *f) {
  if (f && f->running && __atomic_load_n(&f->ended, __ATOMIC_ACQUIRE))
    join(f);
}

uint64_t ft__flush_done_version(const ft__flush_t *f) {
  return f ? f->done_version : 0;
}

void ft__flush_free(ft__flush_t *f) {
  if (!f)
    return;
  if (f->running) {
    __atomic_store_n(&f->cancel, 1, __ATOMIC_SEQ_CST);
    join(f);
  }
  ft__pnode_clear(&f->desc);
  ft__free(f->buf);
  ft__free(f);
}
