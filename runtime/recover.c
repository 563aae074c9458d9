/*
 * The rebuild of a recovery inside the relaunch (issue 18): with
 * FT_REBUILD=replace|shrink, which ft-launch --restarts sets on the relaunch
 * that follows a failure, the SMPs of the new node set run ft-restore's
 * engine (recovery/engine.h) in ft_init, with their stores locked and
 * before they read them, instead of ft-launch running ft-restore as an MPI
 * job of its own first: one launch a recovery instead of two.
 *
 * It is the same engine on the same node set with the same stores: nothing
 * is changed before the whole plan is known to be recoverable, and a rebuild
 * cut short is finished or redone by the next one.  Only the plain case is
 * taken here: whatever the engine does not end with FT_OK (too many losses,
 * no version, a disk hand-over, a mismatch) fails ft_init with the engine's
 * message, having changed nothing, and ft-launch then runs ft-restore on its
 * own, which decides as it always did (its message, its exit status, the
 * disk tier).  One exception: a job that never committed a version
 * (recovery/survey.c, never_committed) and has no disk tier loses nothing
 * by starting over, so its stores are cleared and the launch goes on as
 * its first did, with a warning that says so.
 */
#include "runtime/recover.h"

#include <stdio.h>
#include <string.h>

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "recovery/engine.h"

int ft__rebuild_in_job(const ft__rebuild_args_t *a, char *msg, size_t msglen) {
  ft__restore_t *r = ft__malloc(sizeof(*r));
  int rc = ft__agree_napping(a->comm, r ? FT_OK : FT_ENOMEM);
  if (rc) {
    ft__free(r);
    return ft__msgf(rc, msg, msglen, "out of memory for the rebuild");
  }
  ft__restore_init(r);
  r->mpi_ms = ft__times_now_ms(); /* the engine's start, here */
  r->comm = a->comm;
  MPI_Comm_rank(r->comm, &r->rank);
  MPI_Comm_size(r->comm, &r->size);
  MPI_Comm_rank(MPI_COMM_WORLD, &r->world_rank);
  snprintf(r->host, sizeof(r->host), "%s", a->host);
  snprintf(r->job, sizeof(r->job), "%s", a->cfg->job);
  snprintf(r->store_root, sizeof(r->store_root), "%s", a->cfg->store_root);
  r->piece_bytes = a->cfg->piece_bytes;
  r->opts.mode = a->cfg->rebuild == 2 ? FT_RESTORE_SHRINK : FT_RESTORE_REPLACE;
  ft__fault_parse(&r->fault, a->cfg->fault);
  r->dir = *a->dir; /* the caller's descriptor and lock: not closed here */
  /* FT_HOLD=phase=restore holds the engine mid-rebuild as it holds
   * ft-restore (ft-chaos sees it with ft-hold). */
  char hmsg[512];
  if (ft__restore_arm_hold(r, a->cfg->hold, a->cfg->hold_limit_s, hmsg,
                           sizeof(hmsg)) != FT_OK)
    FT_LOGW(a->log, "FT_HOLD=%s: %s", a->cfg->hold, hmsg);
  rc = ft__restore_run(r);
  if (rc == FT_ENOSNAPSHOT && r->never && !a->cfg->persist_dir[0] &&
      (rc = ft__restore_start_over(r, "the stores, holding nothing "
                                      "committed, were cleared; the job "
                                      "starts afresh")) == FT_OK &&
      r->rank == 0)
    FT_LOGW(a->log, "the rebuild of the recovery: %s", r->msg);
  /* A version found or rebuilt in memory: a marker of an earlier hand-over
   * to the disk tier is stale (its lost hosts came back), as after
   * ft-restore. */
  /* Its lines and summary when it ended well; else ft_init says why, and
   * ft-restore, run next on its own, says it again with what to do. */
  if (rc == FT_OK && !r->never) {
    ft__store_unlink(&r->dir, FT_DISK_MARKER, NULL, 0);
    ft__restore_report(r, rc);
  }
  ft__restore_hold_done(r, 1); /* the SMP makes its own ctl next */
  if (rc)
    ft__msgf(rc, msg, msglen, "the rebuild of the recovery (FT_REBUILD=%s): %s",
             a->cfg->rebuild == 2 ? "shrink" : "replace",
             r->msg[0] ? r->msg : ft_strerror(rc));
  ft__restore_free(r);
  ft__free(r);
  return rc;
}
