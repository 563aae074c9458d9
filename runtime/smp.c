/*
 * The Snapshot Management Process of a node.
 *
 * Start-up (collective over the SMPs): open the store, order the nodes by
 * failure domain and hostname, form the erasure-coding groups, and agree on
 * the version to restore: the newest version that every node holds at least
 * ENCODED (all nodes encoded it, so it is committed even if the commit
 * notice was lost in a crash).
 *
 * Loop: sleep on the control futex; when every local trainer has published
 * its buffer table, size the slots (collective: chunk sizes depend on the
 * group's largest node) and write the metadata; when every trainer has
 * written version V, seal CRCs (LOCAL), encode parity with the group
 * (ENCODED), join the commit allreduce (COMMITTED) and prepare the other slot
 * for V+1.  Collectives are non-blocking and waited for with short sleeps, so
 * an SMP never spins a core that the trainers need.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/smp.h"

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/pulse.h"
#include "base/times.h"
#include "ec/crc.h"
#include "ec/exchange.h"
#include "ec/layout.h"
#include "runtime/flush.h"
#include "runtime/recover.h"
#include "runtime/topo.h"
#include "snapshot/groupmeta.h"
#include "snapshot/hold.h"

typedef struct ft__smp {
  ft_ctx_t *c;
  ft__ctl_t *ctl;
  ft__slot_t slot[FT_NSLOTS];
  ft__slot_geom_t geom;
  ft__meta_t *meta; /* metadata found at start (NULL: none) */
  ft__meta_t *pend; /* FT_META_PENDING found at start (NULL: none): a
                     * layout whose first version may not have committed */
  uint64_t epoch;   /* layout epoch this launch stamps its versions with */
  uint64_t layout;  /* epoch at which its grouping was made (store.h) */
  int pending;      /* its layout is in the pending files until the first
                     * commit (store.h) */
  uint64_t seen;    /* the highest epoch or layout number in the store */
  int nnodes, node; /* node = index in the sorted node order */
  int *order;       /* [nnodes] smp_comm rank of each sorted node */
  char (*hosts)[FT_NAME_MAX]; /* [nnodes] host of each sorted node */
  uint64_t *scratch; /* [nnodes * FT_NSLOTS]: the allgathers after start-up */
  MPI_Comm gcomm;   /* this node's group, ranked by position */
  ft__groups_t groups;
  int k, m, group, pos, gsize;
  int layout_done;
  uint64_t committed, prepared;
  uint64_t run; /* run id (store.h), agreed at start-up */
  int lock_fd; /* flock on the store: this launch's, until the process ends */
  int damaged; /* a slot that is not blank failed validation (store.h) */
  int warned_unreserved; /* said once that slots cannot be reserved */
  int slots_said;        /* told ft-launch the slot size (say_slots) */
  ft__pulse_t pulse; /* heartbeats with the other SMPs (base/pulse.h) */
  double stopped_since[FT_MAX_LOCAL]; /* when a trainer was first seen
                                       * stopped by a signal, 0: running */
  double trainers_checked;
  ft__buf_rec_t *tabs[FT_MAX_LOCAL]; /* each local trainer's buffer table
                                      * (ctl.h), read at the layout */
  int marked;  /* this store holds FT_DISK_MARKER (read at start-up) */
  int dropped; /* ft-restore gave the memory tier up, and every node
                * dropped its store: the disk tier must restore (agreed) */
  uint64_t disk_epoch; /* the highest epoch named on disk (agreed) */
  uint64_t nonce; /* this launch's, agreed: stamps its node manifests */
  ft__flush_t *flush;  /* the disk tier (flush.h), NULL without one */
  uint64_t next_flush; /* the first version the next flush may take */
  uint64_t want_flush; /* a committed version due for a flush while
                        * another ran, 0 none */
  char msg[512];
} smp_t;

/* ---- waiting on MPI without spinning ---- */

/* "SMP rank R", or "node N (HOST)" once the nodes are sorted. */
static void name_rank(const smp_t *s, int rank, char *out, size_t len) {
  snprintf(out, len, "SMP rank %d", rank);
  for (int i = 0; s->order && s->hosts && i < s->nnodes; i++)
    if (s->order[i] == rank && s->hosts[i][0])
      snprintf(out, len, "node %d (%.*s)", i, FT_NAME_MAX, s->hosts[i]);
}

static void stop(smp_t *s, int rc);
static void flush_midway(void *arg);
typedef struct node_id node_id_t;
static int store_empty(const smp_t *s);
static int settle_markers(smp_t *s, node_id_t *all, int mine);

/* A wait on what found a peer silent: say which, then exit at once.  No
 * further MPI call: the abandoned collective still owns its buffers, and
 * the silent peer would never join another one; mpirun ends the job. */
static int silent_peer(smp_t *s, const char *what) {
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
  stop(s, FT_ETIMEDOUT);
  _exit(1);
}

/* Complete a request while exchanging heartbeats; FT_ETIMEDOUT when a peer
 * has been silent for FT_TIMEOUT (however long the wait itself takes),
 * which makes the SMP exit non-zero so that mpirun ends the job and
 * recovery starts. */
static int wait_req(smp_t *s, MPI_Request *req, const char *what) {
  /* Start-up and a recovery's agreements are on the path to training;
   * once the job trains, a wait for the slowest node's commit naps longer
   * (its CPUs are the trainers'). */
  int rc =
      ft__pulse_wait(&s->pulse, 1, req, NULL,
                     s->layout_done ? FT_PULSE_NAP_LONG : FT_PULSE_NAP_SHORT);
  return rc == FT_ETIMEDOUT ? silent_peer(s, what) : rc;
}

static int allgather(smp_t *s, const void *in, void *out, int bytes,
                     const char *what) {
  MPI_Request req;
  if (MPI_Iallgather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE,
                     s->c->smp_comm, &req) != MPI_SUCCESS)
    return FT_EMPI;
  return wait_req(s, &req, what);
}

static int min_u64(smp_t *s, uint64_t in, uint64_t *out, const char *what) {
  MPI_Request req;
  if (MPI_Iallreduce(&in, out, 1, MPI_UINT64_T, MPI_MIN, s->c->smp_comm,
                     &req) != MPI_SUCCESS)
    return FT_EMPI;
  return wait_req(s, &req, what);
}

/* ---- start-up ---- */

struct node_id {
  char host[FT_NAME_MAX];
  char domain[FT_JOB_MAX];
  int rank;
  int stored_node; /* node index in this job's metadata, -1 without */
  int stored_nnodes;
  uint64_t stored_epoch; /* layout epoch of that metadata, 0 without */
  uint64_t pend_epoch;   /* of its pending layout, 0 without (store.h) */
  uint64_t stored_run;   /* its run id, 0 without */
  uint64_t new_run;      /* a fresh run id, should this launch start one */
  int marked;            /* FT_DISK_MARKER here */
  int empty;             /* the store holds nothing: no metadata, no slot
                          * holding a version, none damaged */
};

static int cmp_node(const void *a, const void *b) {
  const node_id_t *x = a, *y = b;
  if (x->stored_node != y->stored_node)
    return x->stored_node - y->stored_node;
  int d = strcmp(x->domain, y->domain);
  if (!d)
    d = strcmp(x->host, y->host);
  return d ? d : x->rank - y->rank;
}

/* This node's index and the node count a relaunch must have: the stored
 * layout's, or after a shrink the re-sliced job's (store.h). */
static void relaunch_place(const ft__meta_t *m, int *node, int *nnodes) {
  int reslice = m && (m->flags & FT_META_RESLICE);
  *node = !m ? -1 : reslice ? (int)m->next_node : (int)m->node;
  *nnodes = !m ? 0 : reslice ? (int)m->next_nnodes : (int)m->nnodes;
}

/* A relaunch keeps the node order of the stored layout (ft-restore may have
 * put a spare with another hostname in a lost node's place); a fresh job
 * orders by failure domain and hostname.  Both at once is an error. */
/* 64 random bits, never 0 (the "no run" mark). */
static uint64_t new_run_id(void) {
  uint64_t id = 0;
  if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
    id = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() << 32;
  return id ? id : 1;
}

/* Append host to a space-separated list of cap bytes (cut when full). */
static void add_host(char *list, size_t cap, const char *host) {
  size_t used = strlen(list);
  snprintf(list + used, cap - used, "%s%s", used ? " " : "", host);
}

/* A store of an older layout epoch than another node's belongs to a host
 * that was given up after a failure (its node was rebuilt elsewhere): it is
 * stale, and never read as current.  ft-restore rebuilds such a node. */
static int check_epochs(smp_t *s, const node_id_t *all) {
  uint64_t newest = 0;
  for (int i = 0; i < s->nnodes; i++)
    if (all[i].stored_epoch > newest)
      newest = all[i].stored_epoch;
  char stale[256] = "";
  uint64_t old = 0;
  for (int i = 0; i < s->nnodes; i++) {
    /* A pending layout of the newest epoch: killed between the commit of
     * its first version and its promotion (settle_pending promotes it). */
    if (all[i].stored_node < 0 || all[i].stored_epoch == newest ||
        all[i].pend_epoch == newest)
      continue;
    add_host(stale, sizeof(stale), all[i].host);
    old = all[i].stored_epoch;
  }
  if (!stale[0])
    return FT_OK;
  return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "job '%s': the store on %s is from layout epoch %llu, the "
                  "other nodes' from epoch %llu: a host given up after a "
                  "failure, whose node was rebuilt elsewhere (stale). Run "
                  "ft-restore on these nodes (ft-launch --restarts does): it "
                  "rebuilds that node from the others; or launch on the "
                  "hosts of the newest layout",
                  s->c->cfg.job, stale, (unsigned long long)old,
                  (unsigned long long)newest);
}

/* The run every stored metadata belongs to, or a new one (proposed by the
 * first node, so that every SMP picks the same) when none has any.  Stores
 * of two runs of one job name never mix: refused, naming the hosts. */
static int check_runs(smp_t *s, const node_id_t *all) {
  s->run = 0;
  for (int i = 0; i < s->nnodes && !s->run; i++)
    s->run = all[i].stored_run;
  char other[256] = "";
  uint64_t theirs = 0;
  for (int i = 0; i < s->nnodes; i++) {
    if (!all[i].stored_run || all[i].stored_run == s->run)
      continue;
    add_host(other, sizeof(other), all[i].host);
    theirs = all[i].stored_run;
  }
  if (!s->run)
    s->run = all[0].new_run;
  if (!other[0])
    return FT_OK;
  return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "job '%s': the stores on %s belong to another run of this "
                  "job name (run %016llx) than the others' (run %016llx): two "
                  "runs never mix. Remove the store that does not belong "
                  "(FT_STORE_ROOT/%s on its host), use another --job, or "
                  "start over with --fresh",
                  s->c->cfg.job, other, (unsigned long long)theirs,
                  (unsigned long long)s->run, s->c->cfg.job);
}

static int check_stored(smp_t *s, node_id_t *all) {
  /* FT_FRESH is the same on every node (ft__config_same in ft_init):
   * starting over removes stores everywhere or nowhere. */
  int rc = check_runs(s, all);
  if (rc)
    return rc;
  rc = check_epochs(s, all);
  if (rc)
    return rc;
  int with = 0;
  unsigned char *seen = (unsigned char *)s->scratch; /* nnodes bytes fit */
  memset(seen, 0, (size_t)s->nnodes);
  for (int i = 0; i < s->nnodes; i++) {
    if (all[i].stored_node < 0)
      continue;
    with++;
    int n = all[i].stored_node;
    if (all[i].stored_nnodes != s->nnodes || n >= s->nnodes || seen[n]++)
      rc = FT_EMISMATCH;
  }
  if (rc == FT_OK && with != 0 && with != s->nnodes)
    rc = FT_EMISMATCH;
  if (rc)
    return ft__msgf(rc, s->msg, sizeof(s->msg),
                    "%d of the %d nodes hold a store of job '%s' that does "
                    "not fit this launch (lost or extra nodes?): run "
                    "ft-restore on these nodes first, or use another --job",
                    with, s->nnodes, s->c->cfg.job);
  return FT_OK;
}

/* Collective: FT_OK when every SMP's rc is FT_OK; else rc here (FT_EPEER
 * where rc was FT_OK).  Runs after every local step that may fail alone
 * (memory) and comes before a collective. */
static int agree_ok(smp_t *s, int rc, const char *what) {
  uint64_t ok = 0;
  int arc = min_u64(s, rc == FT_OK, &ok, what);
  if (rc == FT_OK)
    rc = arc ? arc : ok ? FT_OK : FT_EPEER;
  return rc;
}

/* Every array start-up needs, allocated before its first collective. */
static int alloc_startup(smp_t *s, node_id_t **all, const char ***domains) {
  size_t n = (size_t)s->nnodes;
  *all = ft__calloc(n, sizeof(**all));
  *domains = ft__calloc(n, sizeof(**domains));
  s->order = ft__calloc(n, sizeof(*s->order));
  s->hosts = ft__calloc(n, sizeof(*s->hosts));
  s->scratch = ft__calloc(n * FT_NSLOTS, sizeof(*s->scratch));
  if (*all && *domains && s->order && s->hosts && s->scratch)
    return FT_OK;
  return ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "out of memory for the tables of %d nodes", s->nnodes);
}

/* Sort the nodes; domains[i] points into all[i] (NULL when no node has a
 * domain: *any says whether one has). */
static int order_nodes(smp_t *s, node_id_t *all, const char **domains,
                       int *any) {
  ft_ctx_t *c = s->c;
  node_id_t mine = {0};
  snprintf(mine.host, sizeof(mine.host), "%s", c->host);
  ft__config_domain_of(&c->cfg, c->host, mine.domain);
  MPI_Comm_rank(c->smp_comm, &mine.rank);
  relaunch_place(s->meta, &mine.stored_node, &mine.stored_nnodes);
  mine.stored_epoch = s->meta ? s->meta->epoch : 0;
  mine.pend_epoch = s->pend ? s->pend->epoch : 0;
  mine.stored_run = s->meta ? s->meta->run : 0;
  mine.new_run = new_run_id();
  mine.marked = s->marked;
  mine.empty = store_empty(s);
  int rc = allgather(s, &mine, all, sizeof(mine), "node discovery");
  if (rc == FT_OK)
    rc = settle_markers(s, all, mine.rank);
  if (rc == FT_OK)
    rc = check_stored(s, all);
  if (rc)
    return rc;
  qsort(all, (size_t)s->nnodes, sizeof(*all), cmp_node);
  *any = 0;
  for (int i = 0; i < s->nnodes; i++) {
    s->order[i] = all[i].rank;
    memcpy(s->hosts[i], all[i].host, FT_NAME_MAX);
    if (all[i].rank == mine.rank)
      s->node = i;
    *any |= all[i].domain[0] != '\0';
  }
  for (int i = 0; i < s->nnodes; i++)
    domains[i] = all[i].domain;
  return FT_OK;
}

static int form_groups(smp_t *s) {
  MPI_Comm_size(s->c->smp_comm, &s->nnodes);
  node_id_t *all = NULL;
  const char **domains = NULL;
  int k = 1, m = 0, any = 0;
  int rc = agree_ok(s, alloc_startup(s, &all, &domains), "node discovery");
  if (rc == FT_OK)
    rc = order_nodes(s, all, domains, &any);
  if (rc == FT_OK)
    rc = ft__config_ec_for_nodes(&s->c->cfg, s->nnodes, &k, &m, s->msg,
                                 sizeof(s->msg));
  if (rc == FT_OK)
    rc = ft__groups_form(s->nnodes, any ? domains : NULL, k, m, &s->groups,
                         s->msg, sizeof(s->msg));
  ft__free(all);
  ft__free(domains);
  /* Before the split: whether every SMP got this far (memory is local). */
  if ((rc = agree_ok(s, rc, "grouping")))
    return rc;
  s->m = m;
  s->group = s->groups.group_of[s->node];
  s->pos = s->groups.pos_of[s->node];
  s->gsize = s->groups.size[s->group];
  s->k = s->gsize - m;
  if (MPI_Comm_split(s->c->smp_comm, s->group, s->pos, &s->gcomm) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return FT_OK;
}

/* FT_FRESH=1: the user asked to start over.  The whole store goes (both
 * slots, the layout, the group table, adopted stores) before anything can
 * restore from it: nothing of the old run is read or outranks the new
 * run's versions, which start a new run id. */
static int start_over(smp_t *s) {
  uint64_t dropped = 0;
  for (int i = 0; i < FT_NSLOTS; i++) {
    ft__slot_t sl;
    if (ft__slot_open(&sl, &s->c->dir, i, s->c->cfg.job, NULL, 0) != FT_OK)
      continue;
    if (ft__slot_state(&sl) >= FT_SLOT_ENCODED && sl.hdr->version > dropped)
      dropped = sl.hdr->version;
    ft__slot_close(&sl);
  }
  if (dropped)
    FT_LOGW(&s->c->log, "FT_FRESH=1: starting over; version %llu of job '%s' "
            "is discarded", (unsigned long long)dropped, s->c->cfg.job);
  return ft__store_clear(&s->c->dir, s->msg, sizeof(s->msg));
}

/* The pending layout of a launch that may have died before its first
 * commit. */
static int read_pending(smp_t *s) {
  char msg[512];
  s->pend = ft__calloc(1, sizeof(*s->pend));
  if (!s->pend)
    return ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                    "%s/%s: out of memory to read it", s->c->dir.path,
                    FT_META_PENDING);
  int rc = ft__meta_read_as(&s->c->dir, FT_META_PENDING, s->pend, msg,
                            sizeof(msg));
  if (rc != FT_OK) {
    ft__meta_free(s->pend);
    s->pend = NULL;
  }
  if (rc == FT_OK || rc == FT_ENOENT)
    return FT_OK;
  /* One that cannot be read may describe a copy here (a version of a
   * layout the metadata does not describe, or a slot that failed
   * validation): that copy counts as damaged (refuse_discard), so that
   * ft-restore rebuilds it.  Otherwise it describes nothing: removed. */
  int theirs = s->damaged;
  for (int i = 0; i < FT_NSLOTS; i++)
    theirs |= s->slot[i].map &&
              ft__slot_state(&s->slot[i]) >= FT_SLOT_ENCODED &&
              s->slot[i].hdr->layout != s->meta->layout;
  if (theirs) {
    FT_LOGW(&s->c->log, "%s; the copies made under it are damaged here", msg);
    s->damaged = 1;
  } else if (ft__meta_drop_pending(&s->c->dir, s->meta, msg, sizeof(msg)) ==
             FT_OK) {
    FT_LOGW(&s->c->log, "%s/%s could not be read and describes no copy "
            "here: removed", s->c->dir.path, FT_META_PENDING);
  }
  return FT_OK;
}

/* The highest epoch or layout number this node's store holds. */
static uint64_t note_seen(const smp_t *s) {
  uint64_t n = 0;
  const ft__meta_t *m[2] = {s->meta, s->pend};
  for (int i = 0; i < 2; i++)
    if (m[i] && m[i]->epoch > n)
      n = m[i]->epoch;
  for (int i = 0; i < FT_NSLOTS; i++) {
    const ft__slot_hdr_t *h = s->slot[i].map ? s->slot[i].hdr : NULL;
    if (h && h->epoch > n)
      n = h->epoch;
    if (h && h->layout > n)
      n = h->layout;
  }
  return n;
}

static int beat_between(void *pulse) { return ft__pulse_poll(pulse); }
static void poll_pulse(void *pulse) { (void)ft__pulse_poll(pulse); }

/* ft-restore gave the memory tier up (more losses than the erasure code
 * rebuilds, or no version to rebuild) for a persisted version: it left
 * FT_DISK_MARKER, naming FT_PERSIST_DIR, in the live nodes' stores.  Read
 * here; acted on by settle_markers once every node's view is known. */
static int read_disk_marker(smp_t *s) {
  ft_ctx_t *c = s->c;
  uint8_t *buf = NULL;
  size_t len = 0;
  if (ft__store_read_file(&c->dir, FT_DISK_MARKER, 4096, &buf, &len, NULL,
                          0) != FT_OK)
    return FT_OK; /* none */
  char dir[FT_PATH_MAX + 1];
  snprintf(dir, sizeof(dir), "%.*s", (int)(len < FT_PATH_MAX ? len : 0), buf);
  ft__free(buf);
  s->marked = 1;
  if (strcmp(dir, c->cfg.persist_dir) != 0)
    return ft__msgf(FT_ECONFIG, s->msg, sizeof(s->msg),
                    "%s/%s: ft-restore chose to resume job '%s' from the disk "
                    "tier in '%s', but this launch has FT_PERSIST_DIR='%s': "
                    "launch with FT_PERSIST_DIR=%s (ft-launch --persist)",
                    c->dir.path, FT_DISK_MARKER, c->cfg.job, dir,
                    c->cfg.persist_dir, dir);
  return FT_OK;
}

/* Does this store hold nothing (a spare's, a new host's)? */
static int store_empty(const smp_t *s) {
  if (s->meta || s->pend || s->damaged)
    return 0;
  for (int i = 0; i < FT_NSLOTS; i++)
    if (s->slot[i].map && ft__slot_state(&s->slot[i]) >= FT_SLOT_ENCODED)
      return 0;
  return 1;
}

/* What the store holds is no longer looked at (this launch restores from
 * disk): its slots are closed and its metadata forgotten, but its files
 * stay until a persisted version has been verified (clear_dropped), so a
 * launch that then finds none usable changes nothing. */
static void forget_memory(smp_t *s) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if (s->slot[i].map)
      ft__slot_close(&s->slot[i]);
  ft__meta_free(s->meta);
  ft__meta_free(s->pend);
  s->meta = s->pend = NULL;
  s->damaged = 0;
}

/* The version to restore from disk verified on every node: the store's
 * files go (slots, metadata, adopted stores, the marker last). */
static int clear_dropped(smp_t *s) {
  if (!s->dropped)
    return FT_OK;
  return ft__store_clear(&s->c->dir, s->msg, sizeof(s->msg));
}

/* The markers, seen from every node (all[], in smp_comm rank order; mine
 * is this SMP's rank).  Acted on only when some node is marked and every
 * node is marked or holds nothing: then each drops its store, and with
 * nothing in memory anywhere the job restores from disk (agree_disk).  A
 * marker beside a node that holds a store is stale (a later ft-restore
 * found the versions whole, a partition healed): removed, and the memory
 * tier decides as if it were not there. */
static int settle_markers(smp_t *s, node_id_t *all, int mine) {
  int any = 0, every = 1, rc = FT_OK;
  for (int i = 0; i < s->nnodes; i++) {
    any |= all[i].marked;
    every &= all[i].marked || all[i].empty;
  }
  if (!any)
    return FT_OK;
  if (!every) {
    if (s->marked)
      FT_LOGW(&s->c->log, "%s/%s: ignored and removed, another node holds a "
              "store the marker did not give up",
              s->c->dir.path, FT_DISK_MARKER);
    return s->marked ? ft__store_unlink(&s->c->dir, FT_DISK_MARKER, s->msg,
                                        sizeof(s->msg))
                     : FT_OK;
  }
  if (!all[mine].empty)
    FT_LOGW(&s->c->log, "%s: ft-restore gave up the versions held in memory; "
            "the job resumes from the disk tier, and they are removed once "
            "a persisted version has been verified",
            s->c->dir.path);
  forget_memory(s);
  s->dropped = 1;
  for (int i = 0; i < s->nnodes; i++) { /* nothing stored anywhere now */
    all[i].stored_node = -1, all[i].stored_nnodes = 0;
    all[i].stored_epoch = all[i].pend_epoch = all[i].stored_run = 0;
  }
  return rc;
}

/* The store, made when missing, and this launch's lock on it. */
static int lock_store(smp_t *s) {
  ft_ctx_t *c = s->c;
  int rc = ft__store_open_dir(c->cfg.store_root, c->dir.path, 1, &c->dir,
                              s->msg, sizeof(s->msg));
  /* Before anything in the store is read: a second launch of the job on
   * this node would otherwise share the first one's slots. */
  /* Half of FT_TIMEOUT (a previous launch's SMP may still be exiting),
   * with heartbeats between the tries: the other SMPs hear this one while
   * it waits. */
  if (rc == FT_OK)
    rc = ft__store_lock_while(&c->dir, c->cfg.timeout_s / 2, &s->lock_fd,
                              beat_between, &s->pulse, s->msg,
                              sizeof(s->msg));
  return rc;
}

/* FT_REBUILD (runtime/recover.h): ft-restore's engine on the locked
 * stores, before they are read.  Collective over the SMPs: it runs, or is
 * skipped, everywhere alike. */
static int rebuild(smp_t *s, int rc) {
  ft_ctx_t *c = s->c;
  if (!c->cfg.rebuild || c->cfg.fresh)
    return rc;
  if ((rc = agree_ok(s, rc, "start-up")))
    return rc;
  ft__rebuild_args_t a = {c->smp_comm, &c->cfg, &c->dir, c->host, &c->log};
  return ft__rebuild_in_job(&a, s->msg, sizeof(s->msg));
}

/* What the store holds: the disk marker, the slots, the metadata. */
static int open_store(smp_t *s) {
  ft_ctx_t *c = s->c;
  int rc = FT_OK;
  /* FT_FRESH=1: nothing of the store is read; start_over removes it once
   * every node agreed to (whatever format it was written in). */
  if (c->cfg.fresh)
    return rc;
  if (rc == FT_OK)
    rc = read_disk_marker(s);
  for (int i = 0; rc == FT_OK && i < FT_NSLOTS; i++) {
    rc = ft__slot_open(&s->slot[i], &c->dir, i, c->cfg.job, s->msg,
                       sizeof(s->msg));
    if (rc == FT_ECORRUPT) {
      /* A slot cut short by a crash while it was being (re)created holds no
       * committed version; the other slot may.  It is rebuilt when next
       * prepared.  One that is not blank is damaged: it may have held a
       * committed version (refuse_discard). */
      s->damaged |= !ft__slot_blank(&c->dir, i);
      FT_LOGW(&c->log, "%s; treating the slot as empty", s->msg);
      s->msg[0] = '\0';
      rc = FT_OK;
    }
    if (rc == FT_ENOENT) {
      s->msg[0] = '\0'; /* none yet: no error, and no message left over */
      rc = FT_OK;
    }
  }
  if (rc)
    return rc;
  s->meta = ft__calloc(1, sizeof(*s->meta));
  if (!s->meta)
    return ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                    "%s/meta: out of memory to read it", c->dir.path);
  rc = ft__meta_read(&c->dir, s->meta, s->msg, sizeof(s->msg));
  if (rc != FT_OK) { /* none, or unreadable: nothing of it is offered to
                      * the other SMPs (ft-restore rebuilds this node) */
    ft__meta_free(s->meta);
    s->meta = NULL;
  }
  if (rc == FT_ENOENT) {
    s->msg[0] = '\0';
    rc = FT_OK;
  }
  if (rc == FT_OK && s->meta)
    rc = read_pending(s);
  s->seen = note_seen(s);
  return rc;
}

/* A relaunch must match the job that wrote the store. */
static int check_relaunch(smp_t *s) {
  const ft__meta_t *m = s->meta;
  if (!m)
    return FT_OK;
  int node, nnodes;
  relaunch_place(m, &node, &nnodes);
  if (m->nlocal != (uint32_t)s->c->nlocal || nnodes != s->nnodes)
    return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                    "%s/meta: the store was written by a job of %d node(s) x "
                    "%u trainer(s); this launch has %d x %d (use the same "
                    "--nodes/--ppn, or run ft-restore --mode shrink first)",
                    s->c->dir.path, nnodes, m->nlocal, s->nnodes, s->c->nlocal);
  return FT_OK;
}

/* The newest committed version this node holds, 0 for none. */
static uint64_t newest_committed(const smp_t *s) {
  uint64_t v = 0;
  for (int i = 0; i < FT_NSLOTS; i++)
    if (s->slot[i].map &&
        ft__slot_state(&s->slot[i]) == FT_SLOT_COMMITTED &&
        s->slot[i].hdr->version > v)
      v = s->slot[i].hdr->version;
  return v;
}

/* The restore may only throw away what was never committed.  Refused, with
 * the versions each node holds, when the version every node holds whole
 * (best, 0 for none) is older than one a node holds COMMITTED (some node
 * lost or damaged its copy), or when a slot is damaged (it may have held
 * the newest committed version) and a newer version than best, or none at
 * all, is what the nodes hold.  The way on is ft-restore (ft-launch
 * --restarts runs it): it rebuilds every copy a live node lost or damaged
 * of the newest version that counts as committed, and removes damaged
 * slots that hold nothing to keep, after which this refuses no more; or it
 * refuses (exit 3, nothing changed).  FT_ALLOW_ROLLBACK=1 and FT_FRESH=1
 * are the explicit ways to give versions up. */
static int refuse_discard(smp_t *s, const uint64_t *all, uint64_t best) {
  uint64_t committed = 0, intact = 0, newest = 0, allowed = 0;
  int rc = min_u64(s, ~newest_committed(s), &committed, "restore agreement");
  if (rc == FT_OK)
    rc = min_u64(s, !s->damaged, &intact, "restore agreement");
  if (rc == FT_OK)
    rc = min_u64(s, (uint64_t)s->c->cfg.allow_rollback, &allowed,
                 "restore agreement");
  committed = ~committed;
  for (int i = 0; i < s->nnodes * FT_NSLOTS; i++)
    newest = all[i] > newest ? all[i] : newest;
  if (rc || (committed <= best && (intact || (best && newest <= best))))
    return rc;
  if (best && allowed) { /* asked for, on every node: said, and done */
    FT_LOGW(&s->c->log, "FT_ALLOW_ROLLBACK=1: resuming from version %llu; "
            "version %llu of job '%s', committed but not held whole by every "
            "node, is discarded", (unsigned long long)best,
            (unsigned long long)(committed > best ? committed : newest),
            s->c->cfg.job);
    return FT_OK;
  }
  char found[384] = "";
  for (int n = 0; n < s->nnodes; n++) {
    const uint64_t *v = all + (size_t)s->order[n] * FT_NSLOTS;
    size_t used = strlen(found);
    snprintf(found + used, sizeof(found) - used, "%snode %d (%s): %llu/%llu",
             n ? ", " : "", n, s->hosts[n], (unsigned long long)v[0],
             (unsigned long long)v[1]);
  }
  char what[128];
  if (committed > best)
    snprintf(what, sizeof(what), "version %llu was committed",
             (unsigned long long)committed);
  else
    snprintf(what, sizeof(what), "a slot failed validation (see the warnings) "
                                 "and may have held a committed version");
  char held[64] = "no version is held whole by every node";
  if (best)
    snprintf(held, sizeof(held), "only version %llu is held whole by every "
             "node", (unsigned long long)best);
  char older[96] = "";
  if (best)
    snprintf(older, sizeof(older), "FT_ALLOW_ROLLBACK=1 resumes from "
             "version %llu and discards the newer one; ",
             (unsigned long long)best);
  return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "job '%s': %s, but %s (versions per node, 0 = none: %s). "
                  "Nothing was started, nothing changed. Run ft-restore to "
                  "rebuild the lost or damaged copies (--restarts does); %s"
                  "`--fresh` (FT_FRESH=1) starts over and discards it all",
                  s->c->cfg.job, what, held, found, older);
}

/* Is the copy in slot i described by this node's metadata (current or
 * pending): was it encoded under a layout the store still describes? */
static int described(const smp_t *s, int i) {
  uint64_t l = s->slot[i].hdr->layout, e = s->slot[i].hdr->epoch;
  return (s->meta && ft__meta_describes(s->meta, l, e)) ||
         (s->pend && ft__meta_describes(s->pend, l, e));
}

/* The version to restore is agreed: if the pending layout describes it,
 * every node encoded it under that layout, so it becomes the current one
 * (the re-slice point it replaces and its adopted stores go); otherwise
 * the pending layout never committed anything and is dropped. */
/* A version of the pending layout has committed on every node: it becomes
 * the current layout, replacing the old one and the re-slice point made in
 * it, whose adopted stores of lost nodes go. */
static int promote_pending(smp_t *s) {
  int rc = ft__meta_promote(&s->c->dir, s->msg, sizeof(s->msg));
  if (rc)
    return rc;
  s->pending = 0;
  s->ctl->restore_reslice = 0;
  char msg[512];
  if (ft__store_remove_adopted(&s->c->dir, msg, sizeof(msg)) != FT_OK)
    FT_LOGW(&s->c->log, "%s (the re-slice point is gone: never read)", msg);
  return FT_OK;
}

static int settle_pending(smp_t *s, int slot) {
  char msg[512];
  if (!s->pend)
    return FT_OK;
  const ft__slot_hdr_t *h = slot >= 0 ? s->slot[slot].hdr : NULL;
  if (!h || ft__meta_describes(s->meta, h->layout, h->epoch) ||
      !ft__meta_describes(s->pend, h->layout, h->epoch)) {
    if (ft__meta_drop_pending(&s->c->dir, s->meta, msg, sizeof(msg)) != FT_OK)
      FT_LOGW(&s->c->log, "%s (a pending layout is never used)", msg);
    return FT_OK;
  }
  int rc = promote_pending(s);
  if (rc == FT_OK) {
    ft__meta_t *old = s->meta;
    s->meta = s->pend;
    s->pend = old;
  }
  return rc;
}

static int agree_restore(smp_t *s) {
  uint64_t mine[FT_NSLOTS]; /* by slot: the version it holds whole, or 0 */
  ft__slots_held(s->slot, mine);
  for (int i = 0; i < FT_NSLOTS; i++)
    if (mine[i] && !described(s, i))
      mine[i] = 0; /* made under a layout no metadata here describes */
  uint64_t *all = s->scratch;
  int rc = allgather(s, mine, all, sizeof(mine), "restore agreement");
  uint64_t best = rc == FT_OK ? ft__newest_common(all, s->nnodes, NULL) : 0;
  if (rc == FT_OK)
    rc = refuse_discard(s, all, best);
  s->committed = best;
  int at = -1;
  for (int i = 0; best && i < FT_NSLOTS; i++)
    at = mine[i] == best ? i : at;
  if (rc == FT_OK)
    rc = settle_pending(s, at);
  for (int i = 0; rc == FT_OK && best && i < FT_NSLOTS; i++) {
    if (mine[i] != best)
      continue;
    ft__slot_set_state(&s->slot[i], FT_SLOT_COMMITTED);
    s->ctl->restore_version = best;
    s->ctl->restore_step = s->slot[i].hdr->step;
    s->ctl->restore_reslice = s->meta && (s->meta->flags & FT_META_RESLICE);
    s->ctl->committed_step = s->slot[i].hdr->step;
  }
  ft__store64(&s->ctl->committed_version, best);
  return rc;
}

/* Every node must take the same restore path (collective): either all
 * re-slice the restore point left by a shrink, or none. */
static int agree_reslice(smp_t *s) {
  uint64_t all_set = 0, none_set = 0;
  uint32_t mine = s->ctl->restore_reslice;
  int rc = min_u64(s, mine, &all_set, "restore agreement");
  if (rc == FT_OK)
    rc = min_u64(s, !mine, &none_set, "restore agreement");
  if (rc == FT_OK && !all_set && !none_set)
    rc = ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "%s: some nodes hold a restore point left by ft-restore "
                  "--mode shrink and some do not (was it interrupted?): run "
                  "ft-restore --mode shrink again on these nodes",
                  s->c->dir.path);
  return rc;
}

/* ---- the disk tier at start-up ---- */

/* Does every SMP hold the same x (collective)? */
static int same_everywhere(smp_t *s, uint64_t x, int *same) {
  uint64_t lo = 0, hi = 0;
  int rc = min_u64(s, x, &lo, "disk restore");
  if (rc == FT_OK)
    rc = min_u64(s, ~x, &hi, "disk restore");
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
    FT_LOGW(&s->c->log, "persisted version %llu (step %llu) cannot be "
            "restored: %s",
            (unsigned long long)v->version, (unsigned long long)v->step, msg);
  return min_u64(s, mine == FT_OK, ok, "disk restore");
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
static int pick_version(smp_t *s, const ft__dir_t *job,
                        const ft__pversion_t *v, int n) {
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
      FT_LOGW(&s->c->log, "nothing to restore in memory: restoring from the "
              "disk tier, version %llu (step %llu) of %s/%s",
              (unsigned long long)v[i].version,
              (unsigned long long)v[i].step, job->path, v[i].name);
    return FT_OK;
  }
  return ft__msgf(FT_ECORRUPT, s->msg, sizeof(s->msg),
                  "job '%s': every persisted version under %s is damaged "
                  "(the SMPs' warnings name the files) and memory holds "
                  "none%s. Nothing was started, nothing changed; `--fresh` "
                  "(FT_FRESH=1) starts over and discards them",
                  s->c->cfg.job, job->path,
                  s->dropped ? " that ft-restore could rebuild (its copies "
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
  int rc = min_u64(s, mine, &tag, "disk tier");
  snprintf(name, sizeof(name), ".shared.%016llx", (unsigned long long)tag);
  int fd = -1, err = 0;
  if (rc == FT_OK && s->node == 0 &&
      (fd = ft__store_openat(job, name, O_WRONLY | O_CREAT | O_EXCL, 0600)) <
          0)
    err = errno;
  if (fd >= 0)
    close(fd);
  if (rc == FT_OK)
    rc = min_u64(s, s->node != 0 || fd >= 0, &made, "disk tier");
  if (rc == FT_OK && made) {
    struct stat st;
    int here = fstatat(job->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    rc = min_u64(s, here, &seen, "disk tier");
  }
  if (s->node == 0 && fd >= 0)
    unlinkat(job->fd, name, 0);
  if (rc == FT_OK && !made && s->node == 0)
    FT_LOGW(&s->c->log, "%s: cannot write in it (%s): whether every host "
            "sees it is not checked, and flushes will fail until it can be "
            "written", job->path, strerror(err));
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
  return min_u64(s, mine | 1, &s->nonce, "disk tier");
}

/* The disk tier cannot be opened, listed or is not shared: with a version
 * to restore in memory the job goes on without it (said, and flushing
 * off); with none (a first launch, the whole cluster lost, the memory tier
 * given up for it) the launch is refused. */
static int disk_unusable(smp_t *s, int rc) {
  if (!s->committed)
    return rc;
  FT_LOGW(&s->c->log, "the disk tier is off for this launch: %s; the job "
          "resumes from memory (version %llu) and is protected in memory "
          "only", s->msg[0] ? s->msg : "another SMP cannot use it",
          (unsigned long long)s->committed);
  s->msg[0] = '\0';
  ft__flush_free(s->flush);
  s->flush = NULL;
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
  rc = agree_ok(s, rc, "disk tier");
  if (rc == FT_OK)
    rc = check_shared(s, job);
  if (rc == FT_OK)
    rc = min_u64(s, ~highest, &hi, "disk tier");
  s->disk_epoch = ~hi;
  s->seen = s->disk_epoch > s->seen ? s->disk_epoch : s->seen;
  return rc;
}

/* FT_PERSIST_DIR set: with nothing to restore in memory, the newest
 * persisted version every SMP verifies is the restore point; with FT_FRESH=1
 * every persisted version of the job goes (collective).  Either way, the
 * epochs named on disk count as seen: this launch's epoch is above every
 * one of another timeline (choose_epoch, persist.h). */
static int agree_disk(smp_t *s) {
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
  int restore = rc == FT_OK && s->flush && !c->cfg.fresh && !s->committed;
  if (restore)
    rc = agree_listing(s, v, n);
  if (rc == FT_OK && restore && n > 0)
    rc = pick_version(s, &job, v, n);
  if (rc == FT_OK && restore && n > 0)
    rc = agree_ok(s, clear_dropped(s), "disk restore");
  if (rc == FT_OK && restore && n == 0 && s->dropped)
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

static void publish_node(smp_t *s) {
  ft__ctl_t *ctl = s->ctl;
  ctl->node = (uint32_t)s->node;
  ctl->nnodes = (uint32_t)s->nnodes;
  ctl->k = (uint32_t)s->k;
  ctl->m = (uint32_t)s->m;
  ctl->group = (uint32_t)s->group;
  ctl->pos = (uint32_t)s->pos;
  ctl->group_size = (uint32_t)s->gsize;
  snprintf(ctl->host, sizeof(ctl->host), "%s", s->c->host);
  ctl->started_ns = (uint64_t)time(NULL) * 1000000000ull;
}

/* FT_HOLD arms a hold before any trainer attaches: none can pass it.
 * phase=restore is ft-restore's (and the rebuild's, runtime/recover.c). */
static void arm_hold(smp_t *s) {
  ft__hold_spec_t h;
  /* The relaunch of a recovery gets FT_HOLD for its rebuild's point only
   * (runtime/recover.c): it must not stop again where the failed job did. */
  if (s->c->cfg.rebuild)
    return;
  if (ft__hold_spec_for(s->c->cfg.hold, ~(1u << FT_HOLD_RESTORE), &h))
    ft__hold_arm(s->ctl, &h);
}

/* The trainers' sign that their SMP lives (trainer.c wait_for). */
static void publish_beat(void *arg) {
  smp_t *s = arg;
  if (s->ctl)
    ft__store64(&s->ctl->smp_beat, s->pulse.beats);
}

int ft__smp_start(ft_ctx_t *c, char *msg, size_t msglen) {
  smp_t *s = ft__calloc(1, sizeof(*s));
  /* Every later step is collective over the SMPs and needs s: an SMP
   * without it says so now, before anyone waits for it. */
  int rc = ft__agree(c->smp_comm, s ? FT_OK : FT_ENOMEM);
  if (rc) {
    const char *why = s ? "another SMP is out of memory at start-up"
                        : "out of memory for the SMP's state";
    ft__free(s);
    return ft__msgf(rc, msg, msglen, "%s", why);
  }
  c->smp = s;
  s->c = c;
  s->gcomm = MPI_COMM_NULL;
  /* Heartbeats from here on: every later wait on a peer ends when that
   * peer falls silent, not after a fixed time. */
  rc = ft__pulse_init(&s->pulse, c->smp_comm, c->cfg.timeout_s);
  if (rc)
    return ft__msgf(rc, msg, msglen,
                    rc == FT_ETIMEDOUT
                        ? "start-up: not every SMP came within %.0f s "
                          "(FT_TIMEOUT); a node may be dead or partitioned"
                        : "start-up: cannot set up heartbeats (%.0f s)",
                    c->cfg.timeout_s);
  s->pulse.on_beat = publish_beat;
  s->pulse.on_beat_arg = s;
  for (int i = 0; i < FT_NSLOTS; i++)
    s->slot[i].fd = -1;
  s->lock_fd = -1;
  rc = rebuild(s, lock_store(s));
  if (rc == FT_OK)
    rc = open_store(s);
  if (rc == FT_OK)
    rc = ft__ctl_create(&c->dir, (uint32_t)c->nlocal, &s->ctl, s->msg,
                        sizeof(s->msg));
  c->ctl = s->ctl;
  if (rc == FT_OK)
    arm_hold(s);
  if (rc == FT_OK && c->cfg.persist_dir[0] &&
      !(s->flush = ft__flush_new(c->cfg.persist_dir, c->cfg.job,
                                 c->cfg.persist_keep, &s->ctl->persist,
                                 &c->log)))
    rc = ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "out of memory for the disk tier's flush");
  if (s->flush)
    ft__flush_set_midway(s->flush, flush_midway, s);
  /* Collective steps run even after a local error, so that no SMP is left
   * alone in a collective; the local error (and its message) wins. */
  char local_msg[sizeof(s->msg)];
  snprintf(local_msg, sizeof(local_msg), "%s", s->msg);
  int grc = form_groups(s);
  if (rc == FT_OK)
    rc = grc;
  else
    snprintf(s->msg, sizeof(s->msg), "%s", local_msg);
  if (rc == FT_OK)
    rc = check_relaunch(s);
  rc = agree_ok(s, rc, "start-up");
  if (rc == FT_OK && c->cfg.fresh)
    rc = agree_ok(s, start_over(s), "start-up");
  if (rc == FT_OK)
    rc = agree_restore(s);
  if (rc == FT_OK)
    rc = agree_reslice(s);
  if (rc == FT_OK)
    rc = agree_disk(s);
  if (rc == FT_OK)
    publish_node(s);
  return ft__msgf(rc, msg, msglen, "%s", s->msg);
}

void ft__smp_free(ft_ctx_t *c) {
  smp_t *s = c->smp;
  if (!s)
    return;
  ft__flush_free(s->flush);
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&s->slot[i]);
  if (s->gcomm != MPI_COMM_NULL)
    MPI_Comm_free(&s->gcomm);
  ft__groups_free(&s->groups);
  ft__meta_free(s->meta);
  ft__meta_free(s->pend);
  for (int i = 0; i < FT_MAX_LOCAL; i++)
    ft__free(s->tabs[i]);
  ft__free(s->order);
  ft__free(s->hosts);
  ft__free(s->scratch);
  if (s->pulse.heard)
    ft__pulse_free(&s->pulse);
  if (s->lock_fd >= 0)
    close(s->lock_fd); /* this launch gives the store up */
  ft__free(s);
  c->smp = NULL; /* c->ctl is the context's to detach */
}

/* ---- layout ---- */

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

/* Tables registered now must equal the ones that wrote the restore point. */
static int check_tables(smp_t *s) {
  if (!s->meta || !s->ctl->restore_version || s->ctl->restore_reslice)
    return FT_OK; /* a re-slicing restore matches buffers by name instead */
  for (int i = 0; i < s->c->nlocal; i++) {
    const ft__ctl_rank_t *r = &s->ctl->rank[i];
    const ft__rank_rec_t *o = &s->meta->ranks[i];
    if (r->app_rank != o->rank)
      return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                      "%s/meta: trainer %d of this node was rank %u when the "
                      "snapshot was taken and is rank %u now: launch the "
                      "nodes in the stored order (node %d of the layout is "
                      "here)",
                      s->c->dir.path, i, o->rank, r->app_rank, s->node);
    const ft__buf_rec_t *t = s->tabs[i];
    for (uint32_t b = 0; b < r->nbufs || b < o->nbufs; b++) {
      if (b < r->nbufs && b < o->nbufs &&
          strcmp(t[b].name, o->bufs[b].name) == 0 &&
          t[b].bytes == o->bufs[b].bytes)
        continue;
      return ft__msgf(
          FT_EMISMATCH, s->msg, sizeof(s->msg),
          "%s/meta: trainer %d registered buffer %u as '%s' (%llu bytes) but "
          "the snapshot holds '%s' (%llu bytes): relaunch with the same model "
          "and flags",
          s->c->dir.path, i, b, b < r->nbufs ? t[b].name : "(none)",
          b < r->nbufs ? (unsigned long long)t[b].bytes : 0ull,
          b < o->nbufs ? o->bufs[b].name : "(none)",
          b < o->nbufs ? (unsigned long long)o->bufs[b].bytes : 0ull);
    }
  }
  return FT_OK;
}

static int size_slots(smp_t *s) {
  uint64_t bytes[FT_MAX_LOCAL];
  for (int i = 0; i < s->c->nlocal; i++)
    bytes[i] = s->ctl->rank[i].region_bytes;
  int rc = ft__slot_geom_local(&s->geom, (uint32_t)s->c->nlocal, bytes);
  uint64_t *all = s->scratch; /* allocated at start-up: nothing to agree on */
  uint64_t mine = s->geom.local_bytes;
  int arc = allgather(s, &mine, all, sizeof(mine), "layout");
  uint64_t max = 0;
  for (int j = 0; j < s->gsize; j++) {
    int node = s->groups.members[s->group][j];
    uint64_t b = all[s->order[node]]; /* all[] is in smp_comm rank order */
    if (b > max)
      max = b;
  }
  if (rc || arc)
    return rc ? rc : arc;
  size_t chunk = ft__layout_chunk_bytes(max, s->k);
  return ft__slot_geom_code(&s->geom, (uint32_t)s->k, (uint32_t)s->m, chunk);
}

/* m: zeroed.  FT_ENOMEM for its tables. */
static int fill_meta(smp_t *s, ft__meta_t *m) {
  if (ft__meta_alloc_hosts(m, (uint32_t)s->nnodes))
    return FT_ENOMEM;
  snprintf(m->job, sizeof(m->job), "%s", s->c->cfg.job);
  snprintf(m->host, sizeof(m->host), "%s", s->c->host);
  m->epoch = s->epoch;
  m->layout = s->layout;
  m->run = s->run;
  m->node = (uint32_t)s->node;
  MPI_Comm_size(MPI_COMM_WORLD, (int *)&m->ntrainers);
  m->ntrainers -= (uint32_t)s->nnodes;
  m->k = (uint32_t)s->k, m->m = (uint32_t)s->m;
  m->group = (uint32_t)s->group, m->pos = (uint32_t)s->pos;
  m->group_size = (uint32_t)s->gsize;
  m->nlocal = (uint32_t)s->c->nlocal;
  memcpy(m->hosts, s->hosts, (size_t)s->nnodes * FT_NAME_MAX);
  for (int i = 0; i < s->c->nlocal; i++) {
    const ft__ctl_rank_t *r = &s->ctl->rank[i];
    if (ft__meta_alloc_bufs(m, (uint32_t)i, r->nbufs))
      return FT_ENOMEM;
    m->ranks[i].rank = r->app_rank;
    m->ranks[i].region_bytes = r->region_bytes;
    if (r->nbufs)
      memcpy(m->ranks[i].bufs, s->tabs[i], r->nbufs * sizeof(ft__buf_rec_t));
  }
  return FT_OK;
}

/* Every member of the group keeps every member's metadata (collective over
 * the group; a member with nothing to share sends zero bytes). */

static int wait_group(void *arg, MPI_Request *req) {
  return wait_req(arg, req, "group metadata");
}

/* Write this node's metadata and share the group's (collective): as the
 * current layout, or as the pending one (store.h). */
static int write_meta(smp_t *s, int rc) {
  ft__meta_t *m = ft__calloc(1, sizeof(*m));
  const char *name = s->pending ? FT_META_PENDING : FT_META;
  if (rc == FT_OK && !m)
    rc = ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "%s/%s: out of memory to write it", s->c->dir.path, name);
  if (rc == FT_OK && fill_meta(s, m))
    rc = ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "%s/%s: out of memory to write it", s->c->dir.path, name);
  if (rc == FT_OK)
    rc = ft__meta_write_as(&s->c->dir, name, m, s->msg, sizeof(s->msg));
  int grc = ft__group_meta_share(
      s->gcomm, rc == FT_OK ? m : NULL, &s->c->dir,
      s->pending ? FT_GROUP_META_PENDING : FT_GROUP_META, wait_group, s,
      s->msg, sizeof(s->msg));
  ft__meta_free(m);
  return rc ? rc : grc;
}

/* Is this launch's grouping the stored one (same nodes, code, groups and
 * positions; check_tables compares the rank tables)? */
static int same_layout(const smp_t *s) {
  const ft__meta_t *m = s->meta;
  return m && !(m->flags & FT_META_RESLICE) &&
         m->nnodes == (uint32_t)s->nnodes && m->node == (uint32_t)s->node &&
         m->k == (uint32_t)s->k && m->m == (uint32_t)s->m &&
         m->group == (uint32_t)s->group && m->pos == (uint32_t)s->pos &&
         m->group_size == (uint32_t)s->gsize &&
         m->nlocal == (uint32_t)s->c->nlocal;
}

/* The epoch this launch's layout is written at (collective).  The stored
 * layout kept: its epochs.  A new one: the next epoch, and while a
 * committed version of the old one is the restore point, written as the
 * pending layout, so that a loss before this launch's first commit is
 * still recovered with the layout that version was made in. */
static int choose_epoch(smp_t *s) {
  uint64_t same = 0, seen = 0;
  int rc = min_u64(s, same_layout(s), &same, "layout");
  /* A new layout's number is above every epoch and layout number any
   * node's store holds: none is handed out twice (store.h). */
  if (rc == FT_OK)
    rc = min_u64(s, ~s->seen, &seen, "layout");
  if (rc)
    return rc;
  s->pending = !same && s->meta && s->ctl->restore_version != 0;
  s->epoch = same ? s->meta->epoch : ~seen + 1;
  /* The disk holds a newer epoch than this layout's: another timeline's
   * (a launch that resumed from disk elsewhere).  This launch's versions
   * must rank above its (persist.h), so its epoch moves up; the layout,
   * and what it describes, stay (ft__meta_describes: [layout, epoch]). */
  if (same && s->disk_epoch > s->epoch)
    s->epoch = s->disk_epoch + 1;
  s->layout = same ? s->meta->layout : ~seen + 1;
  return FT_OK;
}

/* Every local trainer's buffer table (ctl.h), or the first failure. */
static int load_tables(smp_t *s) {
  char msg[512];
  for (int i = 0; i < s->c->nlocal; i++) {
    const ft__ctl_rank_t *r = &s->ctl->rank[i];
    int rc = r->reg_status;
    if (rc)
      return ft__msgf(rc, s->msg, sizeof(s->msg),
                      "trainer %d of %s could not hand over its buffer table "
                      "(its log says why)",
                      i, s->c->host);
    ft__free(s->tabs[i]);
    rc = ft__ctl_get_bufs(s->ctl, &s->c->dir, (uint32_t)i, &s->tabs[i], msg,
                          sizeof(msg));
    if (rc)
      return ft__msgf(rc, s->msg, sizeof(s->msg), "%s", msg);
  }
  return FT_OK;
}

/* Files ft-spare prepared on this host when it was a spare, which no
 * rebuild took (it became a node otherwise, or a rebuild gave up waiting
 * for them): the memory they hold is given back.  A preparation under way
 * stops once it sees this store, and is waited for (nothing is waited for
 * where there is none). */
static void drop_prepared(const smp_t *s) {
  ft__dir_t spare;
  int lock;
  if (ft__spare_take(s->c->cfg.store_root, s->c->dir.path, FT_SPARE_WAIT_S,
                     &spare, &lock))
    ft__spare_release(&spare, lock);
}

static int do_layout(smp_t *s) {
  ft__store32(&s->ctl->phase, FT_PHASE_LAYOUT);
  drop_prepared(s);
  int trc = load_tables(s);
  int rc = size_slots(s); /* collective: runs whatever the local checks say */
  int erc = choose_epoch(s);
  if (rc == FT_OK)
    rc = trc ? trc : erc ? erc : check_tables(s);
  rc = write_meta(s, rc);
  ft__topo_bind_smp(s->c, s->ctl->binding, sizeof(s->ctl->binding),
                    s->ctl->smp_cpus, sizeof(s->ctl->smp_cpus));
  s->ctl->layout_status = rc;
  snprintf(s->ctl->msg, sizeof(s->ctl->msg), "%s", s->msg);
  s->layout_done = 1;
  ft__store32(&s->ctl->phase, FT_PHASE_IDLE);
  return rc;
}

/* Under ft-launch, once per launch at the first commit (both slots made,
 * the job past its start-up and any restore): node 0's slot size, for
 * ft-launch to prepare its free spares with (scripts/ft-spare.c). */
static void say_slots(smp_t *s) {
  s->slots_said = 1;
  if (s->node == 0)
    ft__times_say("slots", "slot_bytes=%" PRIu64, s->geom.seg_bytes);
}

/* ---- one version ---- */

static int same_geom(const ft__slot_t *sl, const ft__slot_geom_t *g) {
  const ft__slot_hdr_t *h = sl->hdr;
  return sl->map && h->seg_bytes == g->seg_bytes &&
         h->chunk_bytes == g->chunk_bytes && h->k == g->k && h->m == g->m &&
         h->nlocal == g->nlocal &&
         memcmp(h->rank_off, g->rank_off, sizeof(h->rank_off)) == 0 &&
         memcmp(h->rank_bytes, g->rank_bytes, sizeof(h->rank_bytes)) == 0;
}

/* Slot i in this launch's geometry: made anew unless it already is.  A
 * slot whose header went bad while mapped is made anew too (its writers
 * never bless a damaged header with a new checksum, store.h). */
static int shape_slot(smp_t *s, int i) {
  ft__slot_t *sl = &s->slot[i];
  if (same_geom(sl, &s->geom) && ft__slot_intact(sl))
    return FT_OK;
  if (sl->map)
    ft__slot_close(sl);
  int rc = ft__slot_create_paced(sl, &s->c->dir, i, s->c->cfg.job, &s->geom,
                                 poll_pulse, &s->pulse, s->msg, sizeof(s->msg));
  if (rc)
    return rc;
  if (sl->unreserved && !s->warned_unreserved) {
    s->warned_unreserved = 1;
    FT_LOGW(&s->c->log,
            "%s: its file system cannot reserve space (fallocate: not "
            "supported): should the store fill up, a write into the slot "
            "is a SIGBUS rather than FT_ENOSPC; keep the store on tmpfs",
            sl->path);
  }
  /* Its pages made in bulk, not a fault at a time as the trainers'
   * copies, the CRCs and the parity first touch them; a piece at a time
   * with heartbeats between (trainers and peers hear this SMP). */
  ft__slot_prefault_paced(sl, poll_pulse, &s->pulse);
  return FT_OK;
}

/* Slot v % 2 may be overwritten: the other slot holds v-1 committed. */
static int prepare(smp_t *s, uint64_t v) {
  int i = (int)(v % FT_NSLOTS);
  ft__slot_t *sl = &s->slot[i];
  /* Before a byte of the slot changes: a flush from it publishes nothing. */
  ft__flush_cancel_slot(s->flush, i);
  int rc = shape_slot(s, i);
  if (rc)
    return rc;
  ft__slot_begin(sl, v, 0, s->epoch, s->layout);
  s->prepared = v;
  s->ctl->prepared_slot = i;
  ft__store64(&s->ctl->prepared_version, v);
  ft__ctl_notify(s->ctl);
  return FT_OK;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void flush_midway(void *arg) {
  smp_t *s = arg;
  FT_FAULT_POINT(s->c, "flush");
}

static void encode_midway(void *arg) {
  smp_t *s = arg;
  FT_FAULT_POINT(s->c, "encode");
}

static int encode(smp_t *s, ft__slot_t *sl, ft__ctl_stats_t *st) {
  if (s->m == 0)
    return FT_OK;
  /* The data CRCs are computed on the way out, then written to the header
   * through the store, which keeps its checksum. */
  uint64_t data_crc[FT_MAX_CHUNKS];
  ft__exchange_t x = {
      .comm = s->c->smp_comm,
      .members = s->groups.members[s->group],
      .order = s->order,
      .n = s->gsize,
      .m = s->m,
      .pos = s->pos,
      .chunk_bytes = sl->hdr->chunk_bytes,
      .piece_bytes = s->c->cfg.piece_bytes,
      .data = ft__slot_chunk(sl, 0),
      .parity = ft__slot_chunk(sl, sl->hdr->k),
      .data_crc = data_crc,
      .pulse = &s->pulse,
      .midway = encode_midway,
      .midway_arg = s,
  };
  int rc = ft__exchange_encode(&x);
  if (rc == FT_ETIMEDOUT)
    rc = silent_peer(s, "encode");
  if (rc == FT_OK)
    ft__slot_set_data_crcs(sl, data_crc);
  st->last_transfer = x.t_transfer;
  st->last_encode = x.t_encode;
  st->last_crc += x.t_crc;
  st->last_bytes_sent = x.bytes_sent;
  st->last_bytes_recv = x.bytes_recv;
  return rc;
}

static void account(ft__ctl_stats_t *tot, const ft__ctl_stats_t *last,
                    uint64_t protected_bytes, double cpu) {
  tot->snapshots++;
  tot->last_crc = last->last_crc;
  tot->last_transfer = last->last_transfer;
  tot->last_encode = last->last_encode;
  tot->last_commit = last->last_commit;
  tot->last_copy = last->last_copy;
  tot->last_bytes_sent = last->last_bytes_sent;
  tot->last_bytes_recv = last->last_bytes_recv;
  tot->t_copy += last->last_copy;
  tot->t_crc += last->last_crc;
  tot->t_transfer += last->last_transfer;
  tot->t_encode += last->last_encode;
  tot->t_commit += last->last_commit;
  tot->bytes_sent += last->last_bytes_sent;
  tot->bytes_recv += last->last_bytes_recv;
  tot->bytes_protected += protected_bytes;
  tot->cpu_s += cpu;
}

/* ---- the disk tier ---- */

/* desc: zeroed.  This node's part of committed version v, as the flush
 * writes it: each local rank's region and buffer table. */
static int describe_part(smp_t *s, const ft__slot_t *sl, ft__pnode_t *d) {
  snprintf(d->job, sizeof(d->job), "%s", s->c->cfg.job);
  d->run = s->run, d->version = sl->hdr->version, d->step = sl->hdr->step;
  d->epoch = sl->hdr->epoch; /* the epoch the version was made at */
  d->nonce = s->nonce;
  d->node = (uint32_t)s->node, d->nnodes = (uint32_t)s->nnodes;
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  d->ntrainers = (uint32_t)(world - s->nnodes);
  d->ranks = ft__calloc((size_t)s->c->nlocal, sizeof(*d->ranks));
  if (!d->ranks)
    return FT_ENOMEM;
  d->nranks = (uint32_t)s->c->nlocal;
  for (int i = 0; i < s->c->nlocal; i++) {
    ft__prank_t *r = &d->ranks[i];
    const ft__ctl_rank_t *cr = &s->ctl->rank[i];
    r->rank = cr->app_rank;
    r->bytes = sl->hdr->rank_bytes[i];
    r->nbufs = cr->nbufs;
    r->block_crc = ft__calloc(ft__persist_blocks(r->bytes) + 1, 8);
    r->bufs = ft__calloc(r->nbufs + 1, sizeof(ft__buf_rec_t));
    if (!r->block_crc || !r->bufs)
      return FT_ENOMEM;
    if (r->nbufs)
      memcpy(r->bufs, s->tabs[i], r->nbufs * sizeof(ft__buf_rec_t));
  }
  return FT_OK;
}

static void start_flush(smp_t *s, uint64_t v) {
  const ft__slot_t *sl = &s->slot[v % FT_NSLOTS];
  ft__pnode_t d = {0};
  if (describe_part(s, sl, &d) != FT_OK) {
    ft__pnode_clear(&d);
    FT_LOGW(&s->c->log, "flush of version %llu not started: out of memory",
            (unsigned long long)v);
    return;
  }
  ft__flush_start(s->flush, (int)(v % FT_NSLOTS), sl->fd, sl->hdr->rank_off,
                  &d);
}

/* Start the flush that is due, once none runs and while its slot still
 * holds it (until v + 2 is prepared).  Called from the loop: a flush that
 * had to wait for another one (ended, or cancelled) starts without delay
 * to any snapshot. */
static void flush_due(smp_t *s) {
  ft__flush_poll(s->flush);
  uint64_t v = s->want_flush;
  if (!v || ft__flush_busy(s->flush))
    return;
  s->want_flush = 0;
  if (s->prepared >= v + FT_NSLOTS)
    return; /* its slot was reused: a newer commit will be due */
  start_flush(s, v);
  s->next_flush = v + (uint64_t)s->c->cfg.persist_every;
}

/* After the commit of v: due when FT_PERSIST_EVERY versions have passed
 * since the last flush started (a newer due version replaces an older one
 * that waits). */
static void maybe_flush(smp_t *s, uint64_t v) {
  if (!s->flush || v < s->next_flush)
    return;
  s->want_flush = v;
  flush_due(s);
}

/* Wait for the running flush with heartbeats: the other SMPs, some of
 * them still waiting for their trainers to finish, hear this one while it
 * writes (a silence in them is theirs to judge; this one only finishes). */
static void wait_flush(smp_t *s) {
  while (ft__flush_busy(s->flush)) {
    ft__flush_poll(s->flush);
    ft__pulse_poll(&s->pulse);
    ft__ctl_wait(s->ctl, ft__ctl_seq(s->ctl), 0.05);
  }
}

/* The job ends: the newest committed version goes to disk whole before
 * the SMP exits (a job stopped now resumes from it next time). */
static void final_flush(smp_t *s) {
  wait_flush(s);
  /* Not a re-slice's restore point that nothing of this launch replaced:
   * it holds the old ranks' bytes, which this launch's tables do not
   * describe (a plain restore point's tables were checked: check_tables). */
  if (!s->flush || !s->committed || !s->layout_done ||
      (s->committed <= s->ctl->restore_version &&
       s->ctl->restore_reslice) ||
      ft__flush_done_version(s->flush) >= s->committed)
    return;
  start_flush(s, s->committed);
  wait_flush(s);
}

/* The hold points an SMP passes in protect() (hold.h). */
#define SMP_HOLDS                                                              \
  ((1u << FT_HOLD_CRC) | (1u << FT_HOLD_ENCODE) | (1u << FT_HOLD_COMMIT))

static int protect(smp_t *s, uint64_t v) {
  ft__slot_t *sl = &s->slot[v % FT_NSLOTS];
  ft__ctl_stats_t st = {0};
  double cpu0 = cpu_seconds(), t = ft__now();
  for (int i = 0; i < s->c->nlocal; i++)
    if (s->ctl->rank[i].written_status != FT_OK)
      return s->ctl->rank[i].written_status;
  ft__slot_set_step(sl, ft__load64(&s->ctl->rank[0].step));
  uint32_t hold = ft__hold_gate(s->ctl, &s->ctl->smp_gate_step, sl->hdr->step,
                                SMP_HOLDS);
  ft__store32(&s->ctl->phase, FT_PHASE_CRC);
  ft__hold_at(s->ctl, hold, FT_HOLD_CRC, sl->hdr->step);
  FT_FAULT_POINT(s->c, "crc");
  /* With peers, the data CRCs are computed as the chunks go out. */
  if (s->m == 0)
    ft__slot_seal_data(sl);
  st.last_crc = ft__now() - t;
  ft__store32(&s->ctl->phase, FT_PHASE_ENCODE);
  ft__hold_at(s->ctl, hold, FT_HOLD_ENCODE, sl->hdr->step);
  int rc = encode(s, sl, &st);
  if (rc == FT_OK)
    ft__slot_set_state(sl, FT_SLOT_LOCAL);
  /* The commit is collective: a failed encode still takes part, offering
   * only the previous version, so nobody commits v. */
  uint64_t offer = rc == FT_OK ? v : v - 1, agreed = 0;
  if (rc == FT_OK) {
    ft__slot_seal_parity(sl);
    ft__slot_set_state(sl, FT_SLOT_ENCODED);
  }
  ft__store32(&s->ctl->phase, FT_PHASE_COMMIT);
  ft__hold_at(s->ctl, hold, FT_HOLD_COMMIT, sl->hdr->step);
  FT_FAULT_POINT(s->c, "commit");
  t = ft__now();
  int crc = min_u64(s, offer, &agreed, "commit");
  st.last_commit = ft__now() - t;
  if (rc == FT_OK)
    rc = crc;
  if (rc == FT_OK && agreed < v)
    rc = FT_EPEER;
  if (rc)
    return rc;
  ft__slot_set_state(sl, FT_SLOT_COMMITTED);
  s->committed = v;
  s->ctl->committed_step = sl->hdr->step;
  account(&s->ctl->stats, &st, sl->hdr->data_bytes, cpu_seconds() - cpu0);
  ft__store64(&s->ctl->committed_version, v);
  ft__store32(&s->ctl->phase, FT_PHASE_IDLE);
  ft__ctl_notify(s->ctl);
  if (s->pending && (rc = promote_pending(s)))
    return rc;
  maybe_flush(s, v);
  rc = prepare(s, v + 1);
  if (rc == FT_OK && !s->slots_said)
    say_slots(s);
  return rc;
}

/* ---- the loop ---- */

/* One pass: returns 1 if it did something, 0 if idle, < 0 on error. */
static int serve(smp_t *s) {
  if (!s->layout_done) {
    if (!all_ranks(s, is_registered, 0))
      return 0;
    int rc = do_layout(s);
    if (rc == FT_OK)
      rc = prepare(s, s->committed + 1);
    /* Nothing committed: the other slot holds nothing either, and is made
     * now too, so that a store without room for both fails here, before
     * any training, rather than after the first commit. */
    if (rc == FT_OK && s->committed == 0)
      rc = shape_slot(s, (int)((s->committed + 2) % FT_NSLOTS));
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
    int rc = protect(s, s->prepared);
    return rc ? rc : 1;
  }
  return 0;
}

static void stop(smp_t *s, int rc) {
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
  if (t - s->trainers_checked < s->pulse.period_s)
    return FT_OK;
  s->trainers_checked = t;
  for (int i = 0; i < s->c->nlocal; i++) {
    uint32_t pid = ft__load32(&s->ctl->rank[i].pid);
    if (!pid || !is_stopped(pid)) {
      s->stopped_since[i] = 0;
      continue;
    }
    if (!s->stopped_since[i])
      s->stopped_since[i] = t;
    if (t - s->stopped_since[i] > s->c->cfg.timeout_s)
      return ft__msgf(FT_ETIMEDOUT, s->msg, sizeof(s->msg),
                      "trainer rank %u (pid %u) on %s has been stopped for "
                      "%.0f s (FT_TIMEOUT)",
                      s->ctl->rank[i].app_rank, pid, s->c->host,
                      t - s->stopped_since[i]);
  }
  return FT_OK;
}

static int finished(smp_t *s) {
  return all_ranks(s, is_finalized, 0) &&
         !(s->prepared > s->committed && all_ranks(s, has_written, s->prepared));
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
    if (s->flush)
      flush_due(s);
    if (rc == 0 && ((rc = ft__pulse_poll(&s->pulse)) < 0 ||
                    (rc = check_trainers(s)) < 0))
      break;
    if (rc == 0)
      ft__ctl_wait(s->ctl, seq,
                   s->pulse.period_s < 2 ? s->pulse.period_s / 2 : 1.0);
  }
  if (rc < 0)
    stop(s, rc);
  ft__store32(&s->ctl->phase, FT_PHASE_DONE);
  ft__ctl_notify(s->ctl);
  /* A failed SMP exits non-zero without MPI_Finalize so that mpirun ends the
   * job instead of leaving peers waiting in a collective. */
  if (rc < 0)
    _exit(1);
  final_flush(s);
  ft__pulse_free(&s->pulse);
  MPI_Finalize();
  exit(0);
}
