/*
 * The disk tier at the SMP's start-up (FT_PERSIST_DIR, persist/persist.h),
 * collective.  ft-restore hands a job over to the disk tier by leaving
 * FT_DISK_MARKER in the live stores: when every node is marked or holds
 * nothing, every SMP forgets its store, whose files go only once a
 * persisted version has been verified.  The tier is checked (every host
 * lists the same versions and sees one directory), the launch's nonce is
 * agreed, and with nothing to restore in memory the newest version every
 * SMP verifies becomes the restore point, which the trainers then read
 * (runtime/disk.c).  A tier that cannot be used refuses the launch when the
 * job has nothing else to resume from, and is turned off for the launch
 * otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "ec/crc.h"
#include "runtime/smp_impl.h"

/* What the store holds is no longer looked at (this launch restores from
 * disk): its slots are closed and its metadata forgotten, but its files
 * stay until a persisted version has been verified (clear_dropped), so a
 * launch that then finds none usable changes nothing. */
static void forget_memory(smp_t *s) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if (s->store.slot[i].map)
      ft__slot_close(&s->store.slot[i]);
  ft__meta_free(s->store.meta);
  ft__meta_free(s->store.pend);
  s->store.meta = s->store.pend = NULL;
  s->store.damaged = 0;
}

/* The version to restore from disk verified on every node: the store's
 * files go (slots, metadata, adopted stores, the marker last). */
static int clear_dropped(smp_t *s) {
  if (!s->disk.dropped)
    return FT_OK;
  return ft__store_clear(&s->c->dir, s->msg, sizeof(s->msg));
}

/* The markers, seen from every node (all[], in smp_comm rank order; mine
 * is this SMP's rank).  Acted on only when some node is marked and every
 * node is marked or holds nothing: then each drops its store, and with
 * nothing in memory anywhere the job restores from disk
 * (ft__smp_agree_disk).  A marker beside a node that holds a store is
 * stale (a later ft-restore found the versions whole, a partition healed):
 * removed, and the memory tier decides as if it were not there. */
int ft__smp_settle_markers(smp_t *s, node_id_t *all, int mine) {
  int any = 0, every = 1, rc = FT_OK;
  for (int i = 0; i < s->nnodes; i++) {
    any |= all[i].marked;
    every &= all[i].marked || all[i].empty;
  }
  if (!any)
    return FT_OK;
  if (!every) {
    if (s->store.marked)
      FT_LOGW(&s->c->log,
              "%s/%s: ignored and removed, another node holds a "
              "store the marker did not give up",
              s->c->dir.path, FT_DISK_MARKER);
    return s->store.marked ? ft__store_unlink(&s->c->dir, FT_DISK_MARKER,
                                              s->msg, sizeof(s->msg))
                           : FT_OK;
  }
  if (!all[mine].empty)
    FT_LOGW(&s->c->log,
            "%s: ft-restore gave up the versions held in memory; "
            "the job resumes from the disk tier, and they are removed once "
            "a persisted version has been verified",
            s->c->dir.path);
  forget_memory(s);
  s->disk.dropped = 1;
  for (int i = 0; i < s->nnodes; i++) { /* nothing stored anywhere now */
    all[i].stored_node = -1, all[i].stored_nnodes = 0;
    all[i].stored_epoch = all[i].pend_epoch = all[i].stored_run = 0;
  }
  return rc;
}

/* Does every SMP hold the same x (collective)? */
static int same_everywhere(smp_t *s, uint64_t x, int *same) {
  uint64_t lo = 0, hi = 0;
  int rc = ft__smp_min_u64(s, x, &lo, "disk restore");
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, ~x, &hi, "disk restore");
  *same = rc == FT_OK && lo == ~hi;
  return rc;
}

/* Every SMP checks its share of version v's files (the nodes it is
 * numbered for); *ok when all of them are good (collective). */
static int verify_shared(smp_t *s, const ft__dir_t *job,
                         const ft__pversion_t *v, uint64_t *ok) {
  char msg[512];
  int mine = ft__persist_verify(job, v, (uint32_t)s->node, (uint32_t)s->nnodes,
                                NULL, msg, sizeof(msg));
  if (mine)
    FT_LOGW(&s->c->log,
            "persisted version %llu (step %llu) cannot be "
            "restored: %s",
            (unsigned long long)v->version, (unsigned long long)v->step, msg);
  return ft__smp_min_u64(s, mine == FT_OK, ok, "disk restore");
}

/* The versions every SMP lists, the same on each (collective).  The persist
 * directory must be one every host sees. */
static int agree_listing(smp_t *s, const ft__pversion_t *v, int n) {
  uint64_t h = (uint64_t)n;
  for (int i = 0; i < n; i++)
    h = ft__crc64(h, v[i].name, strlen(v[i].name));
  int same = 0, rc = same_everywhere(s, h, &same);
  if (rc == FT_OK && !same)
    rc = ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "the SMPs see different versions under FT_PERSIST_DIR=%s "
                  "(this node: %d): it must be a directory every host of the "
                  "job shares",
                  s->c->cfg.persist_dir, n);
  return rc;
}

/* Restore from the newest persisted version that every SMP verifies. */
static int pick_version(smp_t *s, const ft__dir_t *job, const ft__pversion_t *v,
                        int n) {
  for (int i = 0; i < n; i++) {
    uint64_t ok = 0;
    int rc = verify_shared(s, job, &v[i], &ok);
    if (rc || !ok)
      continue;
    s->ctl->restore_disk = 1;
    snprintf(s->ctl->restore_vdir, sizeof(s->ctl->restore_vdir), "%s",
             v[i].name);
    s->ctl->restore_step = v[i].step;
    s->ctl->committed_step = v[i].step;
    if (s->node == 0)
      FT_LOGW(&s->c->log,
              "nothing to restore in memory: restoring from the "
              "disk tier, version %llu (step %llu) of %s/%s",
              (unsigned long long)v[i].version, (unsigned long long)v[i].step,
              job->path, v[i].name);
    return FT_OK;
  }
  return ft__msgf(FT_ECORRUPT, s->msg, sizeof(s->msg),
                  "job '%s': every persisted version under %s is damaged "
                  "(the SMPs' warnings name the files) and memory holds "
                  "none%s. Nothing was started, nothing changed; `--fresh` "
                  "(FT_FRESH=1) starts over and discards them",
                  s->c->cfg.job, job->path,
                  s->disk.dropped
                      ? " that ft-restore could rebuild (its copies "
                        "stay in the stores)"
                      : "");
}

/* Does every host see the same FT_PERSIST_DIR (collective)?  Node 0 makes
 * a file of a random name, every SMP looks for it.  A directory that is
 * not shared would never hold a complete version, and a restore from it
 * would find none, silently.  One node 0 cannot write in (full, read-only)
 * is only said: its flushes fail and are counted, and may work again once
 * there is room. */
static int check_shared(smp_t *s, const ft__dir_t *job) {
  uint64_t tag = 0, mine = UINT64_MAX, seen = 0, made = 0;
  char name[64];
  if (s->node == 0 && getrandom(&mine, sizeof(mine), 0) != sizeof(mine))
    mine = (uint64_t)getpid() << 20 ^ (uint64_t)time(NULL);
  mine = s->node == 0 ? mine >> 1 : UINT64_MAX;
  int rc = ft__smp_min_u64(s, mine, &tag, "disk tier");
  snprintf(name, sizeof(name), ".shared.%016llx", (unsigned long long)tag);
  int fd = -1, err = 0;
  if (rc == FT_OK && s->node == 0 &&
      (fd = ft__store_openat(job, name, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
    err = errno;
  if (fd >= 0)
    close(fd);
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, s->node != 0 || fd >= 0, &made, "disk tier");
  if (rc == FT_OK && made) {
    struct stat st;
    int here = fstatat(job->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    rc = ft__smp_min_u64(s, here, &seen, "disk tier");
  }
  if (s->node == 0 && fd >= 0)
    unlinkat(job->fd, name, 0);
  if (rc == FT_OK && !made && s->node == 0)
    FT_LOGW(&s->c->log,
            "%s: cannot write in it (%s): whether every host "
            "sees it is not checked, and flushes will fail until it can be "
            "written",
            job->path, strerror(err));
  if (rc == FT_OK && made && !seen)
    rc = ft__msgf(FT_ECONFIG, s->msg, sizeof(s->msg),
                  "FT_PERSIST_DIR=%s: a file made in it by node 0 is not seen "
                  "by every host; it must be one directory every host of the "
                  "job sees (a shared file system)",
                  s->c->cfg.persist_dir);
  return rc;
}

/* This launch's nonce (collective): the node manifests of its flushes
 * carry it, so that one MANIFEST never joins the parts of two launches'
 * flushes of the same version (persist.c ft__persist_complete). */
static int agree_nonce(smp_t *s) {
  uint64_t mine = 0;
  if (getrandom(&mine, sizeof(mine), 0) != sizeof(mine))
    mine = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
  return ft__smp_min_u64(s, mine | 1, &s->disk.nonce, "disk tier");
}

/* The disk tier cannot be opened, listed or is not shared: with a version
 * to restore in memory the job goes on without it (said, and flushing
 * off); with none (a first launch, the whole cluster lost, the memory tier
 * given up for it) the launch is refused. */
static int disk_unusable(smp_t *s, int rc) {
  if (!s->committed)
    return rc;
  FT_LOGW(&s->c->log,
          "the disk tier is off for this launch: %s; the job "
          "resumes from memory (version %llu) and is protected in memory "
          "only",
          s->msg[0] ? s->msg : "another SMP cannot use it",
          (unsigned long long)s->committed);
  s->msg[0] = '\0';
  ft__flush_free(s->disk.flush);
  s->disk.flush = NULL;
  s->ctl->persist.enabled = 0;
  return FT_OK;
}

/* Listed by every SMP, the same list: then the versions to restore from
 * when memory holds none.  FT_FRESH=1 removes them first (node 0). */
static int list_disk(smp_t *s, ft__dir_t *job, ft__pversion_t **v, int *n) {
  ft_ctx_t *c = s->c;
  uint64_t highest = 0, hi = 0;
  int rc = ft__persist_open(c->cfg.persist_dir, c->cfg.job, 1, job, s->msg,
                            sizeof(s->msg));
  if (rc == FT_OK && c->cfg.fresh && s->node == 0)
    rc = ft__persist_remove_all(job, s->msg, sizeof(s->msg));
  if (rc == FT_OK)
    rc = ft__persist_list(job, v, n, &highest, s->msg, sizeof(s->msg));
  rc = ft__smp_agree_ok(s, rc, "disk tier");
  if (rc == FT_OK)
    rc = check_shared(s, job);
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, ~highest, &hi, "disk tier");
  s->disk.epoch = ~hi;
  s->store.seen = s->disk.epoch > s->store.seen ? s->disk.epoch : s->store.seen;
  return rc;
}

/* FT_PERSIST_DIR set: with nothing to restore in memory, the newest
 * persisted version every SMP verifies is the restore point; with FT_FRESH=1
 * every persisted version of the job goes (collective).  Either way, the
 * epochs named on disk count as seen: this launch's epoch is above every
 * one of another timeline (smp_layout.c choose_epoch, persist.h). */
int ft__smp_agree_disk(smp_t *s) {
  ft_ctx_t *c = s->c;
  if (!c->cfg.persist_dir[0])
    return FT_OK;
  ft__dir_t job;
  ft__dir_init(&job, "");
  ft__pversion_t *v = NULL;
  int n = 0;
  int rc = agree_nonce(s);
  if (rc == FT_OK && (rc = list_disk(s, &job, &v, &n)) != FT_OK)
    rc = disk_unusable(s, rc);
  int restore = rc == FT_OK && s->disk.flush && !c->cfg.fresh && !s->committed;
  if (restore)
    rc = agree_listing(s, v, n);
  if (rc == FT_OK && restore && n > 0)
    rc = pick_version(s, &job, v, n);
  if (rc == FT_OK && restore && n > 0)
    rc = ft__smp_agree_ok(s, clear_dropped(s), "disk restore");
  if (rc == FT_OK && restore && n == 0 && s->disk.dropped)
    rc = ft__msgf(FT_ENOENT, s->msg, sizeof(s->msg),
                  "job '%s': ft-restore gave up the memory copies for the "
                  "disk tier, but %s holds no complete version. Nothing was "
                  "started, nothing changed (the copies stay in the stores); "
                  "`--fresh` (FT_FRESH=1) starts over",
                  c->cfg.job, job.path);
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
  return rc;
}
