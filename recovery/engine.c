/*
 * ft-restore's driver: survey, then verify or rebuild, and the summary.
 */
#include "recovery/engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "recovery/rebuild.h"
#include "recovery/survey.h"
#include "recovery/verify.h"
#include "snapshot/hold.h"

int ft__restore_arm_hold(ft__restore_t *r, const char *spec, unsigned limit_s,
                         char *msg, size_t msglen) {
  ft__hold_spec_t h;
  if (!ft__hold_spec_for(spec, 1u << FT_HOLD_RESTORE, &h))
    return FT_OK;
  h.limit_s = limit_s;
  int rc = r->dir.fd < 0
               ? ft__store_open_locked(r->store_root, &r->dir, msg, msglen)
               : FT_OK;
  if (rc == FT_OK)
    rc = ft__ctl_create(&r->dir, 0, &r->ctl, msg, msglen);
  if (rc) {
    r->ctl = NULL;
    return rc;
  }
  ft__store32(&r->ctl->phase, FT_PHASE_RESTORE);
  ft__hold_arm(r->ctl, &h);
  return FT_OK;
}

void ft__restore_hold_done(ft__restore_t *r, int detach) {
  if (!r->ctl)
    return;
  ft__store32(&r->ctl->phase, FT_PHASE_DONE);
  ft__ctl_notify(r->ctl);
  if (detach) {
    ft__ctl_detach(r->ctl);
    r->ctl = NULL;
  }
}

int ft__restore_run(ft__restore_t *r) {
  int rc = ft__ragree(r, ft__survey(r));
  r->surveyed_ms = ft__times_now_ms();
  if (rc)
    return rc;
  if (r->opts.verify)
    return ft__ragree(r, ft__verify(r));
  rc = ft__rebuild(r);
  r->rebuilt_ms = ft__times_now_ms();
  return rc;
}

int ft__restore_start_over(ft__restore_t *r, const char *next) {
  char msg[512] = "";
  int rc = FT_OK;
  if (!r->opts.dry_run && r->dir.fd >= 0 &&
      (rc = ft__store_clear(&r->dir, msg, sizeof(msg))))
    ft__rsay(r, rc, "%s: %s", r->host, msg);
  if ((rc = ft__ragree(r, rc)))
    return rc;
  snprintf(r->msg, sizeof(r->msg),
           "nothing to restore: no version of job '%s' was ever committed "
           "(it failed before its first snapshot committed; every surviving "
           "store is whole and holds none): %s",
           r->job, r->opts.dry_run ? "dry run, nothing removed" : next);
  /* Under ft-launch: the recovery's account says so. */
  if (r->rank == 0 && !r->opts.dry_run)
    ft__times_say("fresh", "fresh_ms=%" PRId64, ft__times_now_ms());
  return FT_OK;
}

/* Under ft-launch, the line it reads: when this restore passed each point,
 * and what it rebuilt (base/times.h). */
static void report_times(const ft__restore_t *r) {
  if (r->rebuilt_ms)
    ft__times_say("restore",
                  "mpi_ms=%" PRId64 " survey_ms=%" PRId64 " rebuilt_ms=%" PRId64
                  " bytes=%llu prepared=%d",
                  r->mpi_ms, r->surveyed_ms, r->rebuilt_ms,
                  (unsigned long long)r->bytes_rebuilt, r->prepared);
}

static void report_json(const ft__restore_t *r, int status) {
  printf("{\"status\":\"%s\",\"code\":\"%s\",\"job\":\"%s\",\"version\":%llu,"
         "\"step\":%llu,\"lost\":[",
         status == FT_OK
             ? r->disk    ? "disk"
               : r->never ? "fresh"
                          : (r->nlost || r->ncorrupt || r->ndamaged ? "restored"
                                                                    : "nothing")
             : "failed",
         ft_err_name(status), r->job, (unsigned long long)r->version,
         (unsigned long long)r->step);
  int first = 1;
  for (int node = 0; r->rank_of_node && node < r->nnodes; node++)
    if (r->rank_of_node[node] < 0) {
      printf("%s\"%s\"", first ? "" : ",", r->hosts[node]);
      first = 0;
    }
  printf("],\"disk_version\":%llu,\"disk_step\":%llu",
         (unsigned long long)r->disk_version,
         (unsigned long long)r->disk_step);
  printf(",\"corrupt_chunks\":%d,\"damaged_copies\":%d,\"cleared_slots\":%d,"
         "\"bytes_rebuilt\":%llu,\"prepared_slots\":%d,\"seconds\":%.6f,"
         "\"gbps\":%.3f,\"dry_run\":%s,\"message\":\"",
         r->ncorrupt, r->ndamaged, r->ncleared,
         (unsigned long long)r->bytes_rebuilt, r->prepared, r->seconds,
         r->seconds > 0 ? (double)r->bytes_rebuilt / r->seconds / 1e9 : 0.0,
         r->opts.dry_run ? "true" : "false");
  for (const char *p = r->msg; *p; p++)
    printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
  printf("\"}\n");
}

void ft__restore_report(const ft__restore_t *r, int status) {
  if (r->rank != 0)
    return;
  if (status == FT_OK)
    report_times(r);
  if (r->opts.json) {
    report_json(r, status);
  } else if (status == FT_OK && (r->disk || r->never)) {
    printf("ft-restore: %s\n", r->msg);
  } else if (status != FT_OK) {
    fprintf(stderr, "ft-restore: %s (%s)\n", r->msg[0] ? r->msg : "failed",
            ft_err_name(status));
  } else if (r->opts.verify) {
    printf("ft-restore: %s\n", r->msg);
  } else if (r->opts.dry_run) {
    printf("ft-restore: dry run, nothing changed\n");
  } else if (!r->nlost && !r->ncorrupt && !r->ndamaged) {
    printf("ft-restore: every node holds version %llu (step %llu) whole: "
           "nothing to %s\n",
           (unsigned long long)r->version, (unsigned long long)r->step,
           r->ncleared ? "rebuild (damaged slots holding nothing to keep "
                         "were removed)"
                       : "do");
  } else {
    char damaged[48] = "";
    if (r->ndamaged)
      snprintf(damaged, sizeof(damaged), "%d damaged copy(ies), ", r->ndamaged);
    char prepared[48] = "";
    if (r->prepared)
      snprintf(prepared, sizeof(prepared), ", %d slot(s) prepared on a spare",
               r->prepared);
    printf("ft-restore: restored version %llu (step %llu): %d lost node(s), "
           "%d corrupt chunk(s), %s%.1f MiB rebuilt in %.3f s (%.2f GB/s), "
           "layout epoch %llu%s\n",
           (unsigned long long)r->version, (unsigned long long)r->step,
           r->nlost, r->ncorrupt, damaged, (double)r->bytes_rebuilt / 1048576.0,
           r->seconds,
           r->seconds > 0 ? (double)r->bytes_rebuilt / r->seconds / 1e9 : 0.0,
           (unsigned long long)r->next_epoch, prepared);
  }
  fflush(stdout);
}
