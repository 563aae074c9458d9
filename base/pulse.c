/* Heartbeats between the processes of a communicator (pulse.h). */
#include "base/pulse.h"

#include <stddef.h>
#include <time.h>

#include "base/alloc.h"
#include "ftrt.h"

enum { TAG_BEAT = 1 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap(double *s, double max) {
  struct timespec ts = {0, (long)(*s * 1e9)};
  nanosleep(&ts, NULL);
  if (*s < max)
    *s *= 2;
}

static int listen(ft__pulse_t *p) {
  return MPI_Irecv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_BEAT, p->comm,
                   &p->rreq) == MPI_SUCCESS
             ? FT_OK
             : FT_EMPI;
}

int ft__pulse_init(ft__pulse_t *p, MPI_Comm comm, double timeout_s) {
  *p = (ft__pulse_t){.comm = MPI_COMM_NULL, .rreq = MPI_REQUEST_NULL,
                     .timeout_s = timeout_s, .silent = -1};
  /* A quarter of the timeout: three heartbeats may be late before a peer
   * counts as silent.  At most 5 s, so that N peers cost N tiny messages
   * every few seconds; at least 10 ms. */
  p->period_s = timeout_s / 4 > 5 ? 5 : timeout_s / 4;
  if (p->period_s < 0.01)
    p->period_s = 0.01;
  MPI_Comm_rank(comm, &p->rank);
  MPI_Comm_size(comm, &p->size);
  MPI_Request req;
  if (MPI_Comm_idup(comm, &p->comm, &req) != MPI_SUCCESS)
    return FT_EMPI;
  double t0 = now(), s = 20e-6;
  for (int done = 0; !done;) {
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return FT_EMPI;
    if (!done && now() - t0 > timeout_s)
      return FT_ETIMEDOUT; /* the duplicate is never freed: we are exiting */
    if (!done)
      nap(&s, 2e-3);
  }
  p->heard = ft__calloc((size_t)p->size, sizeof(*p->heard));
  p->sreq = ft__calloc((size_t)p->size, sizeof(*p->sreq));
  if (!p->heard || !p->sreq) {
    ft__pulse_free(p);
    return FT_ENOMEM;
  }
  t0 = now();
  for (int i = 0; i < p->size; i++) {
    p->heard[i] = t0;
    p->sreq[i] = MPI_REQUEST_NULL;
  }
  p->sent = t0 - p->period_s; /* the first poll sends */
  p->polled = t0;
  int rc = listen(p);
  if (rc)
    ft__pulse_free(p);
  return rc;
}

void ft__pulse_free(ft__pulse_t *p) {
  if (p->rreq != MPI_REQUEST_NULL) {
    MPI_Cancel(&p->rreq);
    MPI_Wait(&p->rreq, MPI_STATUS_IGNORE);
  }
  /* A heartbeat to a peer that no longer listens may never complete:
   * let MPI finish it on its own. */
  for (int i = 0; p->sreq && i < p->size; i++)
    if (p->sreq[i] != MPI_REQUEST_NULL)
      MPI_Request_free(&p->sreq[i]);
  if (p->comm != MPI_COMM_NULL)
    MPI_Comm_free(&p->comm);
  ft__free(p->heard);
  ft__free(p->sreq);
  ft__free(p->done);
  p->heard = NULL;
  p->sreq = NULL;
  p->done = NULL;
  p->done_cap = 0;
}

static int send_beats(ft__pulse_t *p, double t) {
  for (int i = 0; i < p->size; i++) {
    if (i == p->rank)
      continue;
    int done = 1;
    /* One heartbeat in flight per peer: a peer that stopped reading does
     * not make us queue more. */
    if (p->sreq[i] != MPI_REQUEST_NULL &&
        MPI_Test(&p->sreq[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return FT_EMPI;
    if (done && MPI_Isend(NULL, 0, MPI_BYTE, i, TAG_BEAT, p->comm,
                          &p->sreq[i]) != MPI_SUCCESS)
      return FT_EMPI;
  }
  p->sent = t;
  p->beats++;
  if (p->on_beat)
    p->on_beat(p->on_beat_arg);
  return FT_OK;
}

int ft__pulse_poll(ft__pulse_t *p) {
  if (!p->heard)
    return FT_OK;
  double t = now();
  /* Silence counts only while we listen: after a pause of ours (held at a
   * hold point, long local work) every peer gets one period to be heard
   * again, instead of being failed for our own deafness. */
  if (t - p->polled > p->period_s)
    for (int i = 0; i < p->size; i++)
      if (p->heard[i] < t - p->period_s)
        p->heard[i] = t - p->period_s;
  p->polled = t;
  for (;;) {
    int got = 0;
    MPI_Status st;
    if (MPI_Test(&p->rreq, &got, &st) != MPI_SUCCESS)
      return FT_EMPI;
    if (!got)
      break;
    if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < p->size)
      p->heard[st.MPI_SOURCE] = t;
    if (listen(p))
      return FT_EMPI;
  }
  return t - p->sent >= p->period_s ? send_beats(p, t) : FT_OK;
}

int ft__pulse_silent(ft__pulse_t *p) {
  if (!p->heard)
    return -1;
  double t = now();
  int worst = -1;
  for (int i = 0; i < p->size; i++)
    if (i != p->rank && (worst < 0 || p->heard[i] < p->heard[worst]))
      worst = i;
  if (worst < 0 || t - p->heard[worst] <= p->timeout_s)
    return -1;
  p->silent = worst;
  p->silent_s = t - p->heard[worst];
  return worst;
}

static int room_for(ft__pulse_t *p, int n) {
  if (n <= p->done_cap)
    return FT_OK;
  int *d = ft__realloc(p->done, (size_t)n * sizeof(*d));
  if (!d)
    return FT_ENOMEM;
  p->done = d;
  p->done_cap = n;
  return FT_OK;
}

int ft__pulse_wait(ft__pulse_t *p, int n, MPI_Request *req, const int *peer,
                   double nap_max) {
  if (room_for(p, n))
    return FT_ENOMEM;
  double s = nap_max < 10e-6 ? nap_max : 10e-6;
  for (;;) {
    int out = 0;
    if (MPI_Testsome(n, req, &out, p->done, MPI_STATUSES_IGNORE) !=
        MPI_SUCCESS)
      return FT_EMPI;
    if (out == MPI_UNDEFINED) /* none left active */
      return FT_OK;
    double t = now();
    for (int i = 0; peer && i < out; i++) {
      int r = peer[p->done[i]];
      if (r >= 0 && r < p->size && p->heard)
        p->heard[r] = t;
    }
    if (out > 0) /* test again at once: done when nothing is left */
      continue;
    if (ft__pulse_poll(p))
      return FT_EMPI;
    if (ft__pulse_silent(p) >= 0)
      return FT_ETIMEDOUT;
    nap(&s, nap_max);
  }
}
