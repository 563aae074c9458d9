/*
 * The SMP's waits on the other SMPs.  Every collective of the SMPs is
 * non-blocking and completed here, with heartbeats between short naps
 * (base/pulse.h): an SMP never spins a core its trainers need, and a wait
 * ends when a peer falls silent for FT_TIMEOUT, however long the wait
 * itself takes.  Such a wait names the peer and ends the process (exit 1,
 * no further MPI call), so that mpirun ends the job and recovery starts.
 */
#include <stdio.h>
#include <unistd.h>

#include "base/error.h"
#include "runtime/smp_impl.h"

/* "SMP rank R", or "node N (HOST)" once the nodes are sorted. */
static void name_rank(const smp_t *s, int rank, char *out, size_t len) {
  snprintf(out, len, "SMP rank %d", rank);
  for (int i = 0; s->job.order && s->job.hosts && i < s->nnodes; i++)
    if (s->job.order[i] == rank && s->job.hosts[i][0])
      snprintf(out, len, "node %d (%.*s)", i, FT_NAME_MAX, s->job.hosts[i]);
}

/* A wait on what found a peer silent: say which, then exit at once.  No
 * further MPI call: the abandoned collective still owns its buffers, and
 * the silent peer would never join another one; mpirun ends the job. */
int ft__smp_silent_peer(smp_t *s, const char *what) {
  char who[FT_NAME_MAX + 32];
  name_rank(s, s->pulse.silent, who, sizeof(who));
  if (s->pulse.silent_mpi)
    ft__msgf(FT_ETIMEDOUT, s->msg, sizeof(s->msg),
             "%s: nothing from %s over MPI for %.0f s (%d x FT_TIMEOUT %.0f "
             "s), though its heartbeat datagrams arrive: the network MPI "
             "uses to it may be down",
             what, who, s->pulse.silent_s, FT_PULSE_MPI_FACTOR,
             s->c->cfg.timeout_s);
  else
    ft__msgf(FT_ETIMEDOUT, s->msg, sizeof(s->msg),
             "%s: no sign of life from %s for %.0f s (FT_TIMEOUT %.0f s); "
             "it may be dead, stopped or partitioned",
             what, who, s->pulse.silent_s, s->c->cfg.timeout_s);
  ft__smp_stop(s, FT_ETIMEDOUT);
  _exit(1);
}

/* Complete a request while exchanging heartbeats; FT_ETIMEDOUT when a peer
 * has been silent for FT_TIMEOUT (however long the wait itself takes),
 * which makes the SMP exit non-zero so that mpirun ends the job and
 * recovery starts. */
int ft__smp_wait_req(smp_t *s, MPI_Request *req, const char *what) {
  /* Start-up and a recovery's agreements are on the path to training;
   * once the job trains, a wait for the slowest node's commit naps longer
   * (its CPUs are the trainers'). */
  int rc =
      ft__pulse_wait(&s->pulse, 1, req, NULL,
                     s->layout.done ? FT_PULSE_NAP_LONG : FT_PULSE_NAP_SHORT);
  return rc == FT_ETIMEDOUT ? ft__smp_silent_peer(s, what) : rc;
}

int ft__smp_allgather(smp_t *s, const void *in, void *out, int bytes,
                      const char *what) {
  MPI_Request req;
  if (MPI_Iallgather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, s->c->smp_comm,
                     &req) != MPI_SUCCESS)
    return FT_EMPI;
  return ft__smp_wait_req(s, &req, what);
}

int ft__smp_min_u64(smp_t *s, uint64_t in, uint64_t *out, const char *what) {
  MPI_Request req;
  if (MPI_Iallreduce(&in, out, 1, MPI_UINT64_T, MPI_MIN, s->c->smp_comm,
                     &req) != MPI_SUCCESS)
    return FT_EMPI;
  return ft__smp_wait_req(s, &req, what);
}

/* Collective: FT_OK when every SMP's rc is FT_OK; else rc here (FT_EPEER
 * where rc was FT_OK).  Runs after every local step that may fail alone
 * (memory) and comes before a collective. */
int ft__smp_agree_ok(smp_t *s, int rc, const char *what) {
  uint64_t ok = 0;
  int arc = ft__smp_min_u64(s, rc == FT_OK, &ok, what);
  if (rc == FT_OK)
    rc = arc ? arc : ok ? FT_OK : FT_EPEER;
  return rc;
}
