/*
 * ft_init and ft_finalize: roles and communicators (docs/design.md section 3).
 *
 * MPI_COMM_WORLD is split by node (the ranks of one host, or fixed-size
 * groups of consecutive ranks when FT_VIRTUAL_NODE_RANKS asks for virtual
 * nodes on one host).  Each node's SMP is the process of ft-smp there, when
 * the job was started with one beside the trainers (MPMD), else the node's
 * first rank; it never returns, and the others get app_comm.  Every step that can fail is followed by
 * an agreement over MPI_COMM_WORLD, so every rank returns the same status and
 * no rank is left waiting in a collective that the others abandoned.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/pulse.h"
#include "runtime/ctx.h"
#include "runtime/smp.h"
#include "runtime/trainer.h"

static int start_mpi(ft_ctx_t *c, int *argc, char ***argv) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited)
    return FT_OK;
  int provided;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS)
    return FT_EMPI;
  c->mpi_owned = 1;
  return FT_OK;
}

/* What makes ranks one node: the host's name, its kernel's boot id (two
 * machines may both be called "localhost"; the hosts of ft-cluster share a
 * kernel and differ by name) and the file system the store root is on (a
 * container with the host's name and a /dev/shm of its own cannot share
 * the host's store).  Zeroed first: compared as bytes. */
typedef struct node_key {
  char host[HOST_NAME_MAX + 1];
  char boot[40];
  uint64_t store_dev; /* st_dev of the store root's nearest existing dir */
} node_key_t;

/* The key of this process; FT_EIO with msg where a part of it cannot be
 * read (a rank with a key of its own would make a node of its own).  No
 * boot id at all (no /proc) is the same on every rank of a host: allowed. */
static int node_key_of(const ft_ctx_t *c, node_key_t *k, char *msg,
                       size_t msglen) {
  memset(k, 0, sizeof(*k));
  /* A name of HOST_NAME_MAX bytes fits only with the whole buffer. */
  if (gethostname(k->host, sizeof(k->host)) != 0)
    return ft__msgf(FT_EIO, msg, msglen, "gethostname: %s", strerror(errno));
  k->host[sizeof(k->host) - 1] = '\0';
  const char *boot = "/proc/sys/kernel/random/boot_id";
  int fd = open(boot, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, k->boot, sizeof(k->boot) - 1) : -1;
  int err = errno;
  if (fd >= 0)
    close(fd);
  if (n < 0 && !(fd < 0 && err == ENOENT))
    return ft__msgf(FT_EIO, msg, msglen, "cannot read %s: %s", boot,
                    strerror(err));
  char dir[sizeof(c->cfg.store_root)];
  snprintf(dir, sizeof(dir), "%s", c->cfg.store_root);
  struct stat st;
  while (stat(dir, &st) != 0) { /* not made yet: the nearest parent's */
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) {
      snprintf(dir, sizeof(dir), "/");
      if (stat(dir, &st) != 0)
        return ft__msgf(FT_EIO, msg, msglen, "stat /: %s", strerror(errno));
      break;
    }
    *slash = '\0';
  }
  k->store_dev = (uint64_t)st.st_dev;
  return FT_OK;
}

/* node_comm: the ranks of this host, each rank's color the lowest world
 * rank with its key, from one gather every rank sees alike.  Not
 * MPI_COMM_TYPE_SHARED: Open MPI 4.1 with an external PMIx 4.2.3 or later
 * (Ubuntu 24.04's 4.1.6) told the ranks of one host that their neighbour
 * was elsewhere, on one host of two and not the other; the ranks then
 * split differently and waited inside the split for ever (the GPU
 * machine; open-mpi/ompi issues 10416 and 11585).  And ranks
 * that do not share the host's store are no node of ftrt's. */
static int split_by_host(ft_ctx_t *c, int key, char *msg, size_t msglen) {
  node_key_t me;
  int rc = node_key_of(c, &me, msg, msglen);
  node_key_t *all = NULL;
  if (rc == FT_OK && !(all = ft__calloc((size_t)c->world_size, sizeof(*all))))
    rc = ft__msgf(FT_ENOMEM, msg, msglen,
                  "no memory for the host table of %d ranks", c->world_size);
  /* Every rank takes part in the gather, or none does: the others fail
   * with the reason of the rank that could not (the agreement after
   * setup says it). */
  int have = rc == FT_OK, all_have = 0;
  if (MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) !=
      MPI_SUCCESS)
    rc = FT_EMPI;
  else if (!all_have && rc == FT_OK)
    rc = FT_EIO; /* another rank's reason */
  if (rc == FT_OK &&
      MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me),
                    MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = FT_EMPI;
  int color = c->world_rank;
  for (int r = 0; rc == FT_OK && r < c->world_rank; r++)
    if (memcmp(&all[r], &me, sizeof(me)) == 0) {
      color = r;
      break;
    }
  ft__free(all);
  if (rc == FT_OK && MPI_Comm_split(MPI_COMM_WORLD, color, key,
                                    &c->node_comm) != MPI_SUCCESS)
    rc = FT_EMPI;
  return rc;
}

/* A job whose processes include ft-smp's (MPMD: ft-launch --smp ft-smp)
 * takes them as the SMPs, one on each node; else the first rank of each
 * node is its SMP.  Every rank learns which from one MPI_MAX, and whether
 * some node has none or more than one from another (collective). */
static int smp_program_count(ft_ctx_t *c, char *msg, size_t msglen) {
  int mine = c->role == FT__ROLE_SMP, here = 0;
  if (MPI_Allreduce(&mine, &here, 1, MPI_INT, MPI_SUM, c->node_comm) !=
      MPI_SUCCESS)
    return FT_EMPI;
  /* Every rank fails or none does: the next split is over every process. */
  int bad = c->smp_program && here != 1, any_bad = 0;
  if (MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) !=
      MPI_SUCCESS)
    return FT_EMPI;
  if (!bad)
    return any_bad ? FT_ECONFIG : FT_OK; /* another node's reason */
  char vnode[32] = "";
  if (c->vnode >= 0)
    snprintf(vnode, sizeof(vnode), " (virtual node %d)", c->vnode);
  return ft__msgf(FT_ECONFIG, msg, msglen,
                  "node %s%s has %d process(es) of ft-smp among its %d: a job "
                  "started with ft-smp beside its trainers needs exactly one "
                  "on each node (start it with ft-launch --smp ft-smp, or "
                  "start no ft-smp and the first rank of each node is its SMP)",
                  c->host, vnode, here, c->node_size);
}

static int split_nodes(ft_ctx_t *c, char *msg, size_t msglen) {
  int mine = c->role == FT__ROLE_SMP, any = 0;
  if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) !=
      MPI_SUCCESS)
    return FT_EMPI;
  c->smp_program = any;
  /* ft-smp's process first in its node's communicator, the rest in world
   * order (the trainers' order on the node, either way). */
  int key = mine ? 0 : c->world_rank + 1;
  int rc;
  if (c->cfg.vnode_ranks > 0) {
    c->vnode = c->world_rank / c->cfg.vnode_ranks;
    rc = MPI_Comm_split(MPI_COMM_WORLD, c->vnode, key, &c->node_comm) ==
                 MPI_SUCCESS
             ? FT_OK
             : FT_EMPI;
  } else {
    c->vnode = -1;
    rc = split_by_host(c, key, msg, msglen);
  }
  if (rc)
    return rc;
  int node_rank;
  MPI_Comm_rank(c->node_comm, &node_rank);
  MPI_Comm_size(c->node_comm, &c->node_size);
  c->is_smp = node_rank == 0;
  c->nlocal = c->node_size - 1;
  c->local_idx = node_rank - 1;
  return smp_program_count(c, msg, msglen);
}

static int split_roles(ft_ctx_t *c) {
  if (MPI_Comm_split(MPI_COMM_WORLD, c->is_smp ? MPI_UNDEFINED : 0,
                     c->world_rank, &c->app_comm) != MPI_SUCCESS ||
      MPI_Comm_split(MPI_COMM_WORLD, c->is_smp ? 0 : MPI_UNDEFINED,
                     c->world_rank, &c->smp_comm) != MPI_SUCCESS ||
      (c->app_comm != MPI_COMM_NULL &&
       MPI_Comm_dup(c->app_comm, &c->lib_comm) != MPI_SUCCESS))
    return FT_EMPI;
  /* The duplicate takes app_comm's error handler, which an application
   * may have set to return errors (mpi4py does): a rank whose send failed
   * would then leave its peers waiting for the piece.  On the library's
   * own messages an MPI error ends the job. */
  if (c->lib_comm != MPI_COMM_NULL)
    MPI_Comm_set_errhandler(c->lib_comm, MPI_ERRORS_ARE_FATAL);
  return FT_OK;
}

/* Every node needs its SMP and at least one trainer. */
static int check_node_shape(ft_ctx_t *c, char *msg, size_t msglen) {
  if (c->nlocal >= 1 && c->nlocal <= FT_MAX_LOCAL)
    return FT_OK;
  /* FT_MAX_LOCAL is the slot format's: the slot header page records
   * every local trainer's region (snapshot/store.h). */
  return ft__msgf(FT_ECONFIG, msg, msglen,
                  "node %s has %d rank(s): ftrt needs 1 SMP + 1..%d trainers "
                  "per node (start the job with ft-launch --ppn P; a "
                  "snapshot slot records at most %d trainers of a node)",
                  c->host, c->node_size, FT_MAX_LOCAL, FT_MAX_LOCAL);
}

static void free_comms(ft_ctx_t *c) {
  MPI_Comm *comms[] = {&c->node_comm, &c->app_comm, &c->smp_comm, &c->lib_comm};
  for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++)
    if (*comms[i] != MPI_COMM_NULL)
      MPI_Comm_free(comms[i]);
}

static void destroy(ft_ctx_t *c) {
  if (!c)
    return;
  ft__smp_free(c);
  free_comms(c);
  ft__ctl_detach(c->ctl);
  ft__dir_close(&c->dir);
  int owned = c->mpi_owned;
  ft__free(c->regs);
  ft__free(c);
  if (owned)
    MPI_Finalize();
}

/* End ft_init with a failure agreed by everyone (collective): the lowest
 * rank that knows why logs it, once, instead of a thousand identical lines;
 * then the context is destroyed and rc returned. */
static int log_once_and_destroy(ft_ctx_t *c, int rc, int local_rc,
                                const char *msg) {
  /* The lowest rank with a reason, and whether any rank is under
   * FT_REBUILD (-rebuild: one MPI_MIN for both). */
  int mine[2] = {local_rc != FT_OK && msg[0] ? c->world_rank : INT_MAX,
                 -c->cfg.rebuild},
      all[2];
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int first = all[0];
  if (first == c->world_rank)
    FT_LOGE(&c->log, "ft_init: %s", msg);
  /* No rank returns (and perhaps exits, making mpirun kill the others)
   * before the reason is written. */
  MPI_Barrier(MPI_COMM_WORLD);
  /* Under FT_REBUILD (a relaunch of ft-launch --restarts) the job itself
   * must fail: ft-launch reads a relaunch that exits 0 as a recovery done,
   * and a program that goes on after a failed ft_init (training without
   * ftrt) would exit 0 having restored nothing, while ft-restore, which
   * ft-launch runs after a failed relaunch, never ran.  No process returns
   * into the program: each ends here with status 1 (what it printed
   * first flushed), after the agreement and the reason.  The one exception
   * to CONTRIBUTING.md rule 5 (return a status): FT_REBUILD is ft-launch's, set on its
   * own relaunches only, and ft_init already ends a process whose peers
   * fell silent. */
  int end = all[1] != 0;
  destroy(c);
  if (end) {
    fflush(NULL);
    _exit(1);
  }
  return rc;
}

/* After the configuration is agreed: roles, communicators, store path. */
static int setup(ft_ctx_t *c, char *msg, size_t msglen) {
  int rc;
  ft__fault_parse(&c->fault, c->cfg.fault);
  /* An MPI error in these collectives ends the job, whatever handler the
   * application gave MPI_COMM_WORLD (mpi4py returns errors): a rank that
   * returned from one would leave the others in the next. */
  MPI_Errhandler user;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &user);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (!(rc = split_nodes(c, msg, msglen)))
    rc = split_roles(c);
  /* A split takes its parent's handler: app_comm, the application's, gets
   * the application's back; node_comm and smp_comm, the library's own,
   * keep errors fatal (lib_comm is made so in split_roles). */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, user);
  if (c->app_comm != MPI_COMM_NULL)
    MPI_Comm_set_errhandler(c->app_comm, user);
  MPI_Errhandler_free(&user);
  if (rc)
    return rc;
  ft__log_init(&c->log, c->cfg.log_level, c->host, c->world_rank,
               c->is_smp ? "smp" : "trainer");
  if ((rc = check_node_shape(c, msg, msglen)))
    return rc;
  return ft__store_dir(c->cfg.store_root, c->cfg.job, c->vnode, c->dir.path,
                       FT_PATH_MAX);
}

/* A process of the job fell silent during ft_init (dead, stopped or
 * partitioned): the others would wait for it forever in the agreements
 * below (no deadline).  Called by the heartbeat thread; never returns. */
static void init_silent(void *arg, const ft__pulse_t *p, int rank) {
  const ft_ctx_t *c = arg;
  FT_LOGE(&c->log,
          "ft_init: no sign of life from rank %d (%s) for %.0f s "
          "(FT_TIMEOUT %.0f s): it may be dead, stopped or partitioned",
          rank, p->host[rank], p->silent_s, p->timeout_s);
  _exit(1);
}

/* Every process of the job watches the others while ft_init runs (its
 * agreements wait on MPI with no deadline): a thread of its own exchanges
 * datagram heartbeats (base/pulse.h).  Collective. */
static void watch_start(ft_ctx_t *c, ft__pulse_t *p) {
  int rc = ft__pulse_init(p, MPI_COMM_WORLD, c->cfg.timeout_s);
  if (rc == FT_ETIMEDOUT) {
    FT_LOGE(&c->log,
            "ft_init: not every process came within %.0f s "
            "(FT_TIMEOUT): a host may be dead or partitioned",
            c->cfg.timeout_s);
    _exit(1);
  }
  if (rc == FT_OK)
    ft__pulse_watch(p, init_silent, c);
}

/* MPI_Bcast of n uint64_t from rank 0, waiting in naps that grow to 2 ms
 * (ft__pulse_wait_plain): the trainers wait here while their SMP starts,
 * which under FT_REBUILD includes the rebuild of a recovery.  Blocking in
 * MPI they would poll (yielding at best) on CPUs the SMPs need (an
 * oversubscribed ft-cluster host: 8 ranks on 2 CPUs).  No deadline: a
 * silent peer is the watch thread's to find. */
static void bcast_napping(uint64_t *v, int n, MPI_Comm comm) {
  MPI_Request req;
  MPI_Ibcast(v, n, MPI_UINT64_T, 0, comm, &req);
  ft__pulse_wait_plain(&req, HUGE_VAL, FT_PULSE_NAP_LONG);
}

static void watch_stop(ft__pulse_t *p) {
  if (p->heard) /* started (ft__pulse_free ends the thread too) */
    ft__pulse_free(p);
}

int ft__init_as(int *argc, char ***argv, ft_ctx_t **ctx, MPI_Comm *app_comm,
                int role) {
  if (!ctx || !app_comm)
    return FT_EINVAL;
  *ctx = NULL;
  *app_comm = MPI_COMM_NULL;
  ft_ctx_t *c = ft__calloc(1, sizeof(*c));
  if (!c)
    return FT_ENOMEM;
  c->node_comm = c->app_comm = c->smp_comm = c->lib_comm = MPI_COMM_NULL;
  c->role = role;
  ft__dir_init(&c->dir, "");
  ft__log_init(&c->log, FT_LOG_WARN, "?", -1, "init");
  int rc = start_mpi(c, argc, argv);
  if (rc) {
    ft__free(c);
    return rc;
  }
  c->times.mpi_ms = ft__times_now_ms();
  MPI_Comm_rank(MPI_COMM_WORLD, &c->world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->world_size);
  gethostname(c->host, sizeof(c->host) - 1);
  ft__log_init(&c->log, FT_LOG_WARN, c->host, c->world_rank, "init");
  char msg[512] = "";
  /* Agree on the configuration before any split: a rank that skipped a
   * collective because of a bad variable would leave the others waiting. */
  int local = ft__config_load(&c->cfg, ft__config_env, NULL, msg, sizeof(msg));
  if ((rc = ft__agree_napping(MPI_COMM_WORLD, local)))
    return log_once_and_destroy(c, rc, local, msg);
  if ((rc =
           ft__config_same(MPI_COMM_WORLD, &c->cfg, c->host, msg, sizeof(msg))))
    return log_once_and_destroy(c, rc, rc, msg);
  static ft__pulse_t watch;
  watch_start(c, &watch);
  local = setup(c, msg, sizeof(msg));
  FT_FAULT_POINT(c, "startup");
  if ((rc = ft__agree_napping(MPI_COMM_WORLD, local))) {
    watch_stop(&watch);
    return log_once_and_destroy(c, rc, local, msg);
  }
  /* The SMP prepares the store and the control segment; the trainers attach
   * only after the node's broadcast says it is ready. */
  local = c->is_smp ? ft__smp_start(c, msg, sizeof(msg)) : FT_OK;
  /* An SMP that found a peer silent must not enter a collective over
   * every process: the silent one would never join it and the job would
   * hang.  It says why and exits; mpirun ends the job. */
  if (c->is_smp && local == FT_ETIMEDOUT) {
    FT_LOGE(&c->log, "ft_init: %s", msg);
    _exit(1);
  }
  /* The SMP's status and its launch's stamp: a trainer that finds another
   * in the control segment it opens does not share the SMP's store. */
  uint64_t smp[2] = {(uint64_t)(int64_t)local,
                     c->is_smp && local == FT_OK ? c->ctl->launch : 0};
  bcast_napping(smp, 2, c->node_comm);
  if (!c->is_smp && (int)(int64_t)smp[0] == FT_OK)
    local = ft__trainer_attach(c, smp[1]);
  rc = ft__agree_napping(MPI_COMM_WORLD, local);
  watch_stop(&watch);
  if (rc)
    return log_once_and_destroy(c, rc, local, msg);
  if (c->is_smp)
    ft__smp_run(c);
  *ctx = c;
  *app_comm = c->app_comm;
  c->times.init_ms = ft__times_now_ms();
  return FT_OK;
}

int ft_init(int *argc, char ***argv, ft_ctx_t **ctx, MPI_Comm *app_comm) {
  return ft__init_as(argc, argv, ctx, app_comm, FT__ROLE_ANY);
}

int ft_finalize(ft_ctx_t *c) {
  if (!c)
    return FT_EINVAL;
  int rc = ft_fence(c);
  ft__trainer_release(c);
  destroy(c);
  return rc;
}
