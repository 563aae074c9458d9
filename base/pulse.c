/* Heartbeats between the processes of a communicator (pulse.h). */
#include "base/pulse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"

enum { TAG_BEAT = 1, MAX_ADDRS = 8 };

/* What each process publishes at start-up for the datagram heartbeats:
 * its IPv4 addresses (network order), their masks, its port and a nonce
 * that its datagrams carry (a datagram of another job or launch is
 * ignored).  n = 0: no datagrams to or from it (MPI heartbeats only). */
typedef struct ft__pulse_addr {
  char host[64];
  uint32_t n;
  uint32_t nonce;
  uint16_t port;
  uint16_t pad;
  uint32_t ip[MAX_ADDRS];
  uint32_t mask[MAX_ADDRS];
} ft__pulse_addr_t;

/* A datagram heartbeat. */
typedef struct beat_msg {
  char magic[8];
  uint32_t nonce;
  uint32_t rank;
} beat_msg_t;
static const char BEAT_MAGIC[8] = "ftpulse1";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleep *s, then double it up to max. */
static void nap(double *s, double max) {
  struct timespec ts = {0, (long)(*s * 1e9)};
  nanosleep(&ts, NULL);
  *s = *s * 2 < max ? *s * 2 : max;
}

static int listen_beats(ft__pulse_t *p) {
  return MPI_Irecv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_BEAT, p->comm,
                   &p->rreq) == MPI_SUCCESS
             ? FT_OK
             : FT_EMPI;
}

int ft__pulse_wait_plain(MPI_Request *req, double timeout_s, double nap_max) {
  double t0 = now(), s = nap_max < 10e-6 ? nap_max : 10e-6;
  for (int done = 0; !done;) {
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return FT_EMPI;
    if (!done && now() - t0 > timeout_s)
      return FT_ETIMEDOUT; /* left pending: the caller is exiting */
    if (!done)
      nap(&s, nap_max);
  }
  return FT_OK;
}

/* A datagram socket on every address, and what peers need to reach it.
 * Any failure leaves me->n = 0: this process then beats over MPI only. */
static void open_socket(ft__pulse_t *p, ft__pulse_addr_t *me) {
  memset(me, 0, sizeof(*me));
  gethostname(me->host, sizeof(me->host) - 1);
  p->udp = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t sl = sizeof(sa);
  struct ifaddrs *ifs = NULL;
  if (p->udp < 0 || bind(p->udp, (struct sockaddr *)&sa, sizeof(sa)) ||
      getsockname(p->udp, (struct sockaddr *)&sa, &sl) || getifaddrs(&ifs)) {
    if (p->udp >= 0)
      close(p->udp);
    p->udp = -1;
    return;
  }
  for (struct ifaddrs *i = ifs; i && me->n < MAX_ADDRS; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_netmask && i->ifa_addr->sa_family == AF_INET &&
        (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING) &&
        !(i->ifa_flags & IFF_LOOPBACK) &&
        (ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr) >> 16) !=
            0xa9feu) { /* not link-local 169.254/16 */
      me->ip[me->n] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
      me->mask[me->n++] =
          ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
    }
  freeifaddrs(ifs);
  if (me->n == 0) { /* a host without a network: peers are on it */
    me->ip[0] = htonl(INADDR_LOOPBACK);
    me->mask[0] = htonl(0xff000000u);
    me->n = 1;
  }
  me->port = sa.sin_port;
  if (getrandom(&me->nonce, sizeof(me->nonce), 0) != sizeof(me->nonce))
    me->nonce = (uint32_t)getpid() ^ (uint32_t)(now() * 1e6);
}

static int same_host(const ft__pulse_addr_t *a, const ft__pulse_addr_t *b) {
  return a->n == b->n && memcmp(a->ip, b->ip, a->n * sizeof(a->ip[0])) == 0;
}

/* Where to send peer r's datagrams: loopback on the same host, else its
 * first address on a subnet of mine, else its first address. */
static void choose_dest(ft__pulse_t *p, const ft__pulse_addr_t *all, int r) {
  const ft__pulse_addr_t *me = &all[p->rank], *it = &all[r];
  struct sockaddr_in *d = &p->dest[r];
  memset(d, 0, sizeof(*d));
  if (r == p->rank || it->n == 0 || it->n > MAX_ADDRS || me->n == 0)
    return; /* port 0: none */
  d->sin_family = AF_INET;
  d->sin_port = it->port;
  d->sin_addr.s_addr = it->ip[0];
  if (same_host(me, it)) {
    d->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return;
  }
  /* Never an address one of mine holds too (a bridge such as docker0 has
   * the same address on every host: it would never leave this one). */
  for (uint32_t j = 0; j < it->n; j++) {
    int mine = 0;
    for (uint32_t i = 0; i < me->n; i++)
      mine |= it->ip[j] == me->ip[i];
    if (mine)
      continue;
    for (uint32_t i = 0; i < me->n; i++)
      if ((it->ip[j] & me->mask[i]) == (me->ip[i] & me->mask[i])) {
        d->sin_addr.s_addr = it->ip[j];
        return;
      }
  }
}

/* Collective: every process's address record; the destinations. */
static int share_addrs(ft__pulse_t *p) {
  ft__pulse_addr_t me, *all = ft__calloc((size_t)p->size, sizeof(*all));
  p->dest = ft__calloc((size_t)p->size, sizeof(*p->dest));
  p->nonce = ft__calloc((size_t)p->size, sizeof(*p->nonce));
  open_socket(p, &me);
  int rc = all && p->dest && p->nonce ? FT_OK : FT_ENOMEM;
  p->host = ft__calloc((size_t)p->size, sizeof(*p->host));
  p->armed = ft__calloc((size_t)p->size, sizeof(*p->armed));
  if (rc == FT_OK && (!p->host || !p->armed))
    rc = FT_ENOMEM;
  if (rc) /* still take part: the others wait for this record */
    memset(&me, 0, sizeof(me));
  MPI_Request req;
  if (MPI_Iallgather(&me, sizeof(me), MPI_BYTE, all ? all : NULL,
                     all ? (int)sizeof(me) : 0, MPI_BYTE, p->comm,
                     &req) != MPI_SUCCESS)
    rc = FT_EMPI;
  else {
    int wrc = ft__pulse_wait_plain(&req, p->timeout_s, FT_PULSE_NAP_SHORT);
    if (wrc == FT_ETIMEDOUT)
      return FT_ETIMEDOUT; /* all stays owned by the pending collective */
    if (rc == FT_OK)
      rc = wrc;
  }
  for (int r = 0; rc == FT_OK && r < p->size; r++) {
    choose_dest(p, all, r);
    p->nonce[r] = all[r].nonce;
    memcpy(p->host[r], all[r].host, sizeof(p->host[r]));
    p->host[r][sizeof(p->host[r]) - 1] = '\0';
  }
  ft__free(all);
  return rc;
}

static void send_datagrams(ft__pulse_t *p) {
  if (p->udp < 0)
    return;
  beat_msg_t b;
  memcpy(b.magic, BEAT_MAGIC, sizeof(b.magic));
  b.nonce = p->nonce[p->rank];
  b.rank = (uint32_t)p->rank;
  for (int r = 0; r < p->size; r++)
    if (p->dest[r].sin_port) /* a lost datagram is only a late heartbeat */
      (void)sendto(p->udp, &b, sizeof(b), MSG_DONTWAIT,
                   (struct sockaddr *)&p->dest[r], sizeof(p->dest[r]));
}

static void take_datagrams(ft__pulse_t *p, double t) {
  if (p->udp < 0)
    return;
  beat_msg_t b;
  /* At most two rounds of every peer's datagrams a call: a flood on the
   * port cannot keep this process from its own work and heartbeats. */
  for (int left = 2 * p->size + 8; left > 0; left--) {
    ssize_t n = recv(p->udp, &b, sizeof(b), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return;
    if (n == (ssize_t)sizeof(b) &&
        memcmp(b.magic, BEAT_MAGIC, sizeof(b.magic)) == 0 &&
        b.rank < (uint32_t)p->size && b.nonce == p->nonce[b.rank]) {
      p->heard[b.rank] = t;
      p->armed[b.rank] = 1;
    }
  }
}

int ft__pulse_init(ft__pulse_t *p, MPI_Comm comm, double timeout_s) {
  *p = (ft__pulse_t){.comm = MPI_COMM_NULL, .rreq = MPI_REQUEST_NULL,
                     .timeout_s = timeout_s, .silent = -1, .udp = -1,
                     .wake = -1};
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
  int rc = ft__pulse_wait_plain(&req, timeout_s, FT_PULSE_NAP_SHORT);
  if (rc == FT_OK)
    rc = share_addrs(p);
  if (rc == FT_ETIMEDOUT)
    return rc; /* nothing is freed: pending collectives own it; exiting */
  /* heard[0..size) any sign of life, heard[size..2 size) signs over MPI */
  p->heard = ft__calloc(2 * (size_t)p->size, sizeof(*p->heard));
  p->sreq = ft__calloc((size_t)p->size, sizeof(*p->sreq));
  p->nsent = ft__calloc(2 * (size_t)p->size, sizeof(*p->nsent));
  p->nrecv = p->nsent ? p->nsent + p->size : NULL;
  if (rc == FT_OK && (!p->heard || !p->sreq || !p->nsent))
    rc = FT_ENOMEM;
  if (rc) {
    ft__pulse_free(p);
    return rc;
  }
  double t0 = now();
  p->heard_mpi = p->heard + p->size;
  for (int i = 0; i < p->size; i++) {
    p->heard[i] = p->heard_mpi[i] = t0;
    p->sreq[i] = MPI_REQUEST_NULL;
  }
  p->sent = t0 - p->period_s; /* the first poll sends */
  p->polled = t0;
  rc = listen_beats(p);
  if (rc)
    ft__pulse_free(p);
  return rc;
}

void ft__pulse_free(ft__pulse_t *p) {
  ft__pulse_unwatch(p); /* its thread reads what is freed below */
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
  ft__free(p->nsent);
  p->nsent = p->nrecv = NULL;
  ft__free(p->done);
  ft__free(p->dest);
  ft__free(p->nonce);
  ft__free(p->host);
  ft__free(p->armed);
  p->host = NULL;
  p->armed = NULL;
  if (p->udp >= 0)
    close(p->udp);
  p->udp = -1;
  p->dest = NULL;
  p->nonce = NULL;
  p->heard = NULL;
  p->sreq = NULL;
  p->done = NULL;
  p->done_cap = 0;
}

/* Heartbeats of peer i still to come (by theirs, what each sent me). */
static int beats_left(const ft__pulse_t *p, const int *theirs) {
  int left = 0;
  for (int i = 0; i < p->size; i++)
    left += i != p->rank && p->nrecv[i] < theirs[i];
  return left;
}

/* Silence counts only while we listen: after a pause of ours (held at a
 * hold point, long local work, the process stopped and continued, the
 * machine paused) every peer gets one period to be heard again, instead of
 * being failed for our own deafness.  n: the entries of heard to forgive
 * (both tables, or the first only where MPI is not listened to). */
static void listening(ft__pulse_t *p, double t, int n) {
  if (t - p->polled > p->period_s)
    for (int i = 0; i < n; i++)
      if (p->heard[i] < t - p->period_s)
        p->heard[i] = t - p->period_s;
  p->polled = t;
}

/* Our heartbeats still in flight: completed ones are set to null. */
static int sends_left(ft__pulse_t *p, int *rc) {
  int left = 0;
  for (int i = 0; i < p->size && *rc == FT_OK; i++) {
    int done = 1;
    if (p->sreq[i] != MPI_REQUEST_NULL &&
        MPI_Test(&p->sreq[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      *rc = FT_EMPI;
    left += !done;
  }
  return left;
}

int ft__pulse_end(ft__pulse_t *p) {
  if (!p->heard || p->comm == MPI_COMM_NULL) {
    ft__pulse_free(p);
    return FT_OK;
  }
  ft__pulse_unwatch(p);
  int *theirs = ft__calloc((size_t)p->size, sizeof(*theirs));
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = FT_OK;
  if (!theirs)
    rc = FT_ENOMEM;
  else if (MPI_Ialltoall(p->nsent, 1, MPI_INT, theirs, 1, MPI_INT, p->comm,
                         &req) != MPI_SUCCESS)
    rc = FT_EMPI;
  double s = 10e-6, sent = 0;
  /* Every peer's count known (what it sent has been sent, and arrives),
   * the receive posted all along takes what is left; it is cancelled only
   * once nothing more can come (a cancel racing a match may lose it).
   * Meanwhile the datagram heartbeats go on (no MPI one: it would not be
   * counted), so that a peer still at work does not take us for silent,
   * and we wait for as long as every peer is heard from: a peer silent
   * for the timeout ends the wait. */
  for (int counted = 0; rc == FT_OK;) {
    int got = 0;
    MPI_Status st;
    double t = now();
    if (!counted && MPI_Test(&req, &counted, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      rc = FT_EMPI;
    else if (p->rreq != MPI_REQUEST_NULL &&
             MPI_Test(&p->rreq, &got, &st) != MPI_SUCCESS)
      rc = FT_EMPI;
    if (rc != FT_OK)
      break;
    if (got) {
      if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < p->size) {
        p->nrecv[st.MPI_SOURCE]++;
        p->heard[st.MPI_SOURCE] = p->heard_mpi[st.MPI_SOURCE] = t;
      }
      rc = listen_beats(p);
      continue;
    }
    if (counted && !beats_left(p, theirs) && !sends_left(p, &rc))
      break;
    take_datagrams(p, t);
    listening(p, t, p->size);
    if (t - sent >= p->period_s) {
      send_datagrams(p);
      sent = t;
    }
    if (ft__pulse_silent(p) >= 0)
      rc = FT_ETIMEDOUT;
    else
      nap(&s, FT_PULSE_NAP_SHORT);
  }
  if (rc != FT_OK) {
    /* Pending requests own the communicator and the counts' buffers:
     * MPI_Finalize's. */
    p->comm = MPI_COMM_NULL;
    p->nsent = p->nrecv = NULL;
  } else {
    ft__free(theirs);
  }
  ft__pulse_free(p);
  return rc;
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
    p->nsent[i] += done;
  }
  send_datagrams(p);
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
  listening(p, t, 2 * p->size);
  take_datagrams(p, t);
  for (;;) {
    int got = 0;
    MPI_Status st;
    if (MPI_Test(&p->rreq, &got, &st) != MPI_SUCCESS)
      return FT_EMPI;
    if (!got)
      break;
    if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < p->size) {
      p->heard[st.MPI_SOURCE] = p->heard_mpi[st.MPI_SOURCE] = t;
      p->nrecv[st.MPI_SOURCE]++;
    }
    if (listen_beats(p))
      return FT_EMPI;
  }
  return t - p->sent >= p->period_s ? send_beats(p, t) : FT_OK;
}

int ft__pulse_silent(ft__pulse_t *p) {
  if (!p->heard)
    return -1;
  double t = now(), mpi_limit = FT_PULSE_MPI_FACTOR * p->timeout_s;
  for (int i = 0; i < p->size; i++) {
    if (i == p->rank)
      continue;
    /* Silent: nothing at all for the timeout, or datagrams only for
     * several times it (its MPI path is down: the job's data cannot move,
     * however alive the peer). */
    double any = t - p->heard[i], mpi = t - p->heard_mpi[i];
    if (any > p->timeout_s || mpi > mpi_limit) {
      p->silent = i;
      p->silent_mpi = any <= p->timeout_s;
      p->silent_s = p->silent_mpi ? mpi : any;
      return i;
    }
  }
  return -1;
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
        p->heard[r] = p->heard_mpi[r] = t;
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

/* ---- the watch thread (no MPI) ---- */

typedef struct watch_arg {
  ft__pulse_t *p;
  void (*on_silent)(void *arg, const ft__pulse_t *p, int rank);
  void *arg;
} watch_arg_t;

static watch_arg_t watch_args; /* one watched pulse a process */

static void *watch_main(void *v) {
  watch_arg_t *w = v;
  ft__pulse_t *p = w->p;
  while (!p->stop_watch) {
    double t = now();
    if (t - p->sent >= p->period_s) {
      send_datagrams(p);
      p->sent = t;
    }
    /* A quarter period, or until ft__pulse_unwatch wakes it: a stop
     * never waits out the poll (ft_init and ft-restore each stop one). */
    struct pollfd pf[2] = {{.fd = p->udp, .events = POLLIN},
                           {.fd = p->wake, .events = POLLIN}};
    int ms = (int)(p->period_s * 250);
    (void)poll(pf, 2, ms < 1 ? 1 : ms);
    t = now();
    listening(p, t, p->size); /* datagrams only: no MPI here */
    take_datagrams(p, t);
    for (int i = 0; i < p->size; i++)
      if (i != p->rank && p->armed[i] && t - p->heard[i] > p->timeout_s) {
        p->silent = i;
        p->silent_s = t - p->heard[i];
        w->on_silent(w->arg, p, i);
      }
  }
  return NULL;
}

int ft__pulse_watch(ft__pulse_t *p,
                    void (*on_silent)(void *arg, const ft__pulse_t *p, int rank),
                    void *arg) {
  if (p->udp < 0 || !p->heard || p->watching)
    return FT_EIO;
  watch_args = (watch_arg_t){.p = p, .on_silent = on_silent, .arg = arg};
  p->stop_watch = 0;
  p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (p->wake < 0)
    return FT_EIO;
  pthread_t th;
  if (pthread_create(&th, NULL, watch_main, &watch_args)) {
    close(p->wake);
    p->wake = -1;
    return FT_EIO;
  }
  p->watch_thread = (unsigned long)th;
  p->watching = 1;
  return FT_OK;
}

void ft__pulse_unwatch(ft__pulse_t *p) {
  if (!p->watching)
    return;
  p->stop_watch = 1;
  uint64_t one = 1;
  ssize_t n = write(p->wake, &one, sizeof(one)); /* no poll to wait out */
  (void)n; /* a full counter (never) still wakes it */
  pthread_join((pthread_t)p->watch_thread, NULL);
  close(p->wake);
  p->wake = -1;
  p->watching = 0;
}
