/*
 * The Snapshot Management Process of a node: its loop.
 *
 * Once started (smp_start.c), the SMP sleeps on the control futex and
 * serves its trainers: when every local trainer has published its buffer
 * table it makes the layout (smp_layout.c) and prepares the first slot;
 * when every trainer has written version V it protects V (smp_version.c:
 * CRCs, parity with the group, the commit allreduce, the slot for V+1), and
 * a flush that is due starts (smp_flush.c).  Between passes it exchanges
 * heartbeats and watches its trainers: one stopped by a signal for
 * FT_TIMEOUT fails the SMP, as a silent peer would.  Collectives are
 * non-blocking and waited for with short sleeps (smp_wait.c), so an SMP
 * never spins a core that the trainers need.  Once every trainer has
 * finalized, the newest committed version goes to the disk tier (where
 * there is one), MPI is finalized and the SMP exits 0; on an error it
 * posts the status in the control segment and exits 1 without finalizing,
 * so that mpirun ends the job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/smp.h"

#include "base/error.h"
#include "runtime/smp_impl.h"

static int all_ranks(smp_t *s, int (*pred)(const ft__ctl_rank_t *, uint64_t),
                     uint64_t arg) {
  for (int i = 0; i < s->c->nlocal; i++)
    if (!pred(&s->ctl->rank[i], arg))
      return 0;
  return 1;
}

static int is_registered(const ft__ctl_rank_t *r, uint64_t unused) {
  (void)unused;
  return ft__load32(&r->registered) != 0;
}

static int is_finalized(const ft__ctl_rank_t *r, uint64_t unused) {
  (void)unused;
  return ft__load32(&r->finalized) != 0;
}

static int has_written(const ft__ctl_rank_t *r, uint64_t v) {
  return ft__load64(&r->written_version) >= v;
}

/* One pass: returns 1 if it did something, 0 if idle, < 0 on error. */
static int serve(smp_t *s) {
  if (!s->layout.done) {
    if (!all_ranks(s, is_registered, 0))
      return 0;
    int rc = ft__smp_do_layout(s);
    if (rc == FT_OK)
      rc = ft__smp_prepare(s, s->committed + 1);
    /* Nothing committed: the other slot holds nothing either, and is made
     * now too, so that a store without room for both fails here, before
     * any training, rather than after the first commit. */
    if (rc == FT_OK && s->committed == 0)
      rc = ft__smp_shape_slot(s, (int)((s->committed + 2) % FT_NSLOTS));
    /* The trainers' ft_restore (or first ft_snapshot) fails with it. */
    if (rc != FT_OK && s->ctl->layout_status == FT_OK) {
      s->ctl->layout_status = rc;
      snprintf(s->ctl->msg, sizeof(s->ctl->msg), "%s", s->msg);
    }
    ft__store32(&s->ctl->layout_ready, 1);
    ft__ctl_notify(s->ctl);
    return rc ? rc : 1;
  }
  if (s->ctl->layout_status != FT_OK)
    return 0;
  if (s->prepared > s->committed && all_ranks(s, has_written, s->prepared)) {
    int rc = ft__smp_protect(s, s->prepared);
    return rc ? rc : 1;
  }
  return 0;
}

void ft__smp_stop(smp_t *s, int rc) {
  if (!s->msg[0])
    ft__msgf(rc, s->msg, sizeof(s->msg), "%s", ft_strerror(rc));
  FT_LOGE(&s->c->log, "SMP stopping: %s", s->msg);
  if (!s->ctl) /* at start-up, before the control segment */
    return;
  snprintf(s->ctl->msg, sizeof(s->ctl->msg), "%s", s->msg);
  __atomic_store_n(&s->ctl->smp_status, rc, __ATOMIC_RELEASE);
  ft__ctl_notify(s->ctl);
}

/* Is process pid stopped by a signal (state T; not t, a debugger's stop)? */
static int is_stopped(uint32_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%u/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *end = strrchr(buf, ')'); /* the name may hold spaces */
  return end && end[1] == ' ' && end[2] == 'T';
}

/* A trainer stopped (SIGSTOP) leaves this SMP alive and beating while its
 * peers wait for this node's data: fail once one has been stopped for
 * FT_TIMEOUT, as a silent peer would be.  Checked once a heartbeat period. */
static int check_trainers(smp_t *s) {
  double t = ft__now();
  if (t - s->trainers.checked < s->pulse.period_s)
    return FT_OK;
  s->trainers.checked = t;
  for (int i = 0; i < s->c->nlocal; i++) {
    uint32_t pid = ft__load32(&s->ctl->rank[i].pid);
    if (!pid || !is_stopped(pid)) {
      s->trainers.stopped_since[i] = 0;
      continue;
    }
    if (!s->trainers.stopped_since[i])
      s->trainers.stopped_since[i] = t;
    if (t - s->trainers.stopped_since[i] > s->c->cfg.timeout_s)
      return ft__msgf(FT_ETIMEDOUT, s->msg, sizeof(s->msg),
                      "trainer rank %u (pid %u) on %s has been stopped for "
                      "%.0f s (FT_TIMEOUT)",
                      s->ctl->rank[i].app_rank, pid, s->c->host,
                      t - s->trainers.stopped_since[i]);
  }
  return FT_OK;
}

static int finished(smp_t *s) {
  return all_ranks(s, is_finalized, 0) &&
         !(s->prepared > s->committed &&
           all_ranks(s, has_written, s->prepared));
}

void ft__smp_run(ft_ctx_t *c) {
  smp_t *s = c->smp;
  int rc = FT_OK;
  for (;;) {
    uint32_t seq = ft__ctl_seq(s->ctl);
    rc = serve(s);
    if (rc < 0)
      break;
    if (rc == 0 && finished(s))
      break;
    if (s->disk.flush)
      ft__smp_flush_due(s);
    if (rc == 0 &&
        ((rc = ft__pulse_poll(&s->pulse)) < 0 || (rc = check_trainers(s)) < 0))
      break;
    if (rc == 0)
      ft__ctl_wait(s->ctl, seq,
                   s->pulse.period_s < 2 ? s->pulse.period_s / 2 : 1.0);
  }
  if (rc < 0)
    ft__smp_stop(s, rc);
  ft__store32(&s->ctl->phase, FT_PHASE_DONE);
  ft__ctl_notify(s->ctl);
  /* A failed SMP exits non-zero without MPI_Finalize so that mpirun ends the
   * job instead of leaving peers waiting in a collective. */
  if (rc < 0)
    _exit(1);
  ft__smp_final_flush(s);
  ft__pulse_end(&s->pulse);
  MPI_Finalize();
  exit(0);
}
