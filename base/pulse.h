/*
 * Liveness by heartbeats: a peer has failed when nothing has been heard
 * from it for the timeout (FT_TIMEOUT), not when a phase takes longer than
 * the timeout.  Every process of the communicator sends an empty message to
 * every other one each period while it polls (in every wait, and in its
 * idle loop), so a slow peer that is still sending, or busy and polling,
 * is never taken for a failed one, and a stopped or partitioned one is
 * found within the timeout plus one period.
 *
 * Heartbeats go two ways at once: as empty MPI messages on a duplicate of
 * the communicator (they never match other traffic), and as UDP datagrams
 * to an address each process published at start-up.  MPI's messages share
 * a TCP connection with the bulk data to the same peer and wait behind it
 * on a slow link (head-of-line blocking); a datagram waits only for the
 * link's own queue.  Where datagrams cannot pass (no socket, a firewall),
 * the MPI heartbeats still do.  Single-threaded: only the thread that
 * polls calls MPI (MPI_THREAD_FUNNELED is enough).
 */
#ifndef FT_BASE_PULSE_H
#define FT_BASE_PULSE_H

#include <mpi.h>
#include <netinet/in.h>
#include <stdint.h>

/* A peer heard only by datagram, over MPI not at all for this many times
 * the timeout, has failed too: its MPI path is down, the job's data cannot
 * move (MPI's heartbeats may queue behind bulk data on a slow link for a
 * while, not for this long). */
#define FT_PULSE_MPI_FACTOR 6

typedef struct ft__pulse {
  MPI_Comm comm; /* duplicate of the peers' communicator, same ranks */
  int rank, size;
  double timeout_s; /* a peer silent this long has failed */
  double period_s;  /* heartbeats this often */
  double *heard;     /* [size] when each peer was last heard from */
  double *heard_mpi; /* [size] the same, over MPI only (heartbeats, or a
                        transfer that completed) */
  double sent;      /* when ours last went out */
  double polled;    /* when this process last listened */
  MPI_Request rreq;  /* the heartbeat receive, from any peer */
  MPI_Request *sreq; /* [size] the heartbeat in flight to each peer */
  int *nsent, *nrecv; /* [size] MPI heartbeats sent to, taken from each
                         peer (ft__pulse_end takes what is left) */
  unsigned long beats; /* heartbeats sent */
  /* Optional: called after each round of heartbeats (to show local
   * watchers, such as the trainers of an SMP, that this process lives). */
  void (*on_beat)(void *arg);
  void *on_beat_arg;
  int udp;                  /* datagram socket, -1: MPI heartbeats only */
  struct sockaddr_in *dest; /* [size] where each peer's datagrams go (port
                               0: none) */
  uint32_t *nonce;          /* [size] what each peer's datagrams carry */
  char (*host)[64];         /* [size] each peer's host name (messages) */
  unsigned char *armed;     /* [size] a datagram came from it (watch) */
  int watching;             /* ft__pulse_watch's thread runs */
  volatile int stop_watch;
  int wake;                 /* eventfd: wakes the thread to stop, -1 */
  unsigned long watch_thread; /* pthread_t */
  int *done;           /* room for MPI_Testsome's indices */
  int done_cap;
  int silent;          /* after FT_ETIMEDOUT: the rank that was silent */
  int silent_mpi;      /* ... over MPI only: its datagrams still came */
  double silent_s;     /* and for how long */
} ft__pulse_t;

/* Collective over comm: duplicate it and start listening.  The duplicate is
 * made with MPI_Comm_idup and waited for at most timeout_s (FT_ETIMEDOUT:
 * a peer never came).  FT_ENOMEM, FT_EMPI. */
int ft__pulse_init(ft__pulse_t *p, MPI_Comm comm, double timeout_s);
/* Stop listening (and the watch thread) and free (local; pending
 * heartbeats are dropped). */
void ft__pulse_free(ft__pulse_t *p);
/* The end every process of the communicator reaches (an SMP's end):
 * heartbeats stop, the processes tell each other how many each sent each
 * (MPI_Ialltoall), each takes the ones it has not taken yet, and the
 * pulse is freed with no message left unmatched in its communicator (MPI
 * may refuse to free one that has: MPICH does).  Bounded by the timeout:
 * past it (a peer ended otherwise) the communicator is left to
 * MPI_Finalize and FT_ETIMEDOUT returned; FT_EMPI.  Freed either way. */
int ft__pulse_end(ft__pulse_t *p);

/* Take the heartbeats that arrived, send ours when one is due.  Cheap
 * enough to call from any loop; FT_EMPI. */
int ft__pulse_poll(ft__pulse_t *p);

/* A peer that is silent: nothing heard from it for the timeout, or only
 * datagrams for FT_PULSE_MPI_FACTOR times it; else -1.  Sets silent,
 * silent_mpi and silent_s. */
int ft__pulse_silent(ft__pulse_t *p);

/* Complete one request, polling between tests with naps that grow to
 * nap_max seconds (never spinning in MPI), with a plain deadline and no
 * heartbeats: FT_OK, FT_ETIMEDOUT after timeout_s (the request left
 * pending), FT_EMPI. */
int ft__pulse_wait_plain(MPI_Request *req, double timeout_s, double nap_max);

/* Naps for waits on collectives that are expected to end soon (start-up,
 * a recovery's agreements): a non-blocking collective advances only when
 * tested, one round of its algorithm a test, so each round can cost up to
 * a nap (an MPI_Comm_idup is several allreduces: 2 ms naps made each
 * ft__pulse_init about 70 ms on an 8-rank ft-cluster job).  Long waits
 * where latency matters less (a trainer waiting for its SMP's rebuild)
 * nap up to FT_PULSE_NAP_LONG, taking less CPU from those that work. */
#define FT_PULSE_NAP_SHORT 200e-6
#define FT_PULSE_NAP_LONG 2e-3

/* Complete n requests, polling between tests with naps that grow to
 * nap_max seconds.  A request that completes is a sign of life of its peer
 * (peer[i]: the rank in comm that request i receives from; -1, or peer
 * NULL: none.  Not sends: a small one completes whether or not the peer
 * lives): a peer whose heartbeats queue behind its data on a
 * slow link is alive as long as its data moves.  FT_OK; FT_ETIMEDOUT when a
 * peer has been silent for the timeout (silent, silent_s say which; the
 * requests left are still pending); FT_ENOMEM, FT_EMPI. */
int ft__pulse_wait(ft__pulse_t *p, int n, MPI_Request *req, const int *peer,
                   double nap_max);

/* For a tool that blocks in MPI calls (ft-restore): a thread of its own
 * sends and takes the datagram heartbeats, with no MPI call, and calls
 * on_silent(arg, p, rank) (which should not return: it exits) once a peer
 * that was heard from by datagram at least once has been silent for the
 * timeout.  A peer never heard from by datagram (UDP blocked) is never
 * judged: then nothing is bounded, as without heartbeats.  Use the pulse
 * no other way while the thread runs; ft__pulse_unwatch (or
 * ft__pulse_free) stops it (before MPI_Finalize: a peer that has finished
 * is silent).  FT_OK, or FT_EIO
 * when the thread cannot start (then nothing is watched). */
int ft__pulse_watch(ft__pulse_t *p,
                    void (*on_silent)(void *arg, const ft__pulse_t *p, int rank),
                    void *arg);
void ft__pulse_unwatch(ft__pulse_t *p);

#endif
