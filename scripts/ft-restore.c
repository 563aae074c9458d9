/*
 * ft-restore: rebuild the stores of lost nodes from the survivors
 * (docs/design.md section 7).  Launched with one MPI rank per node of the
 * new node set:
 *
 *   mpirun --map-by ppr:1:node ft-restore [--job NAME] [--mode replace|shrink]
 *          [--dry-run] [--json] [--verify [--verify-losses]]
 *
 * Exit status: 0 restored or nothing to do, 3 unrecoverable (too many
 * losses; nothing changed), 4 a rank fell silent for FT_TIMEOUT (dead,
 * stopped or partitioned), 5 a store without room for what it must write
 * (nothing a later run needs changed), 2 usage, 1 any other error.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/agree.h"
#include "base/error.h"
#include "base/pulse.h"
#include "persist/persist.h"
#include "recovery/engine.h"
#include "runtime/config.h"
#include "snapshot/hold.h"

static void usage(FILE *f) {
  fputs("usage: mpirun --map-by ppr:1:node ft-restore [OPTIONS]\n"
        "       ft-launch --one-per-node -- ft-restore [OPTIONS]\n"
        "  --job NAME       job name (default: FT_JOB, else ftrt)\n"
        "  --mode MODE      replace (default: onto spares) or shrink\n"
        "  --dry-run        print the plan, change nothing\n"
        "  --json           the summary as one JSON object\n"
        "  --verify         check every stripe's parity, change nothing\n"
        "  --verify-losses  with --verify: decode every loss set of <= m\n"
        "  --quiet          no progress lines\n"
        "  --help           this text\n"
        "See ft-restore(1).\n",
        f);
}

static int parse(int argc, char **argv, ft__config_t *cfg,
                 ft__restore_t *r) {
  static const struct option opts[] = {
      {"job", required_argument, 0, 'j'},   {"mode", required_argument, 0, 'm'},
      {"dry-run", no_argument, 0, 'n'},     {"json", no_argument, 0, 'J'},
      {"verify", no_argument, 0, 'v'},      {"verify-losses", no_argument, 0, 'L'},
      {"quiet", no_argument, 0, 'q'},       {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'j':
      if (!ft__valid_job(optarg))
        return fprintf(stderr, "ft-restore: bad job name '%s'\n", optarg), 2;
      snprintf(cfg->job, sizeof(cfg->job), "%s", optarg);
      break;
    case 'm':
      if (strcmp(optarg, "replace") && strcmp(optarg, "shrink"))
        return fprintf(stderr, "ft-restore: --mode replace|shrink\n"), 2;
      r->opts.mode = strcmp(optarg, "shrink") ? FT_RESTORE_REPLACE
                                              : FT_RESTORE_SHRINK;
      break;
    case 'n': r->opts.dry_run = 1; break;
    case 'J': r->opts.json = 1; break;
    case 'v': r->opts.verify = 1; break;
    case 'L': r->opts.verify_losses = 1; break;
    case 'q': r->opts.quiet = 1; break;
    case 'h': usage(stdout); return -1;
    default: usage(stderr); return 2;
    }
  }
  if (optind != argc || (r->opts.verify_losses && !r->opts.verify)) {
    usage(stderr);
    return 2;
  }
  return 0;
}

/* FT_HOLD=phase=restore (ft__restore_arm_hold); a failure to arm is said,
 * and the restore goes on unheld. */
static void arm_hold(ft__restore_t *r, const char *spec, unsigned limit_s) {
  char msg[512];
  if (ft__restore_arm_hold(r, spec, limit_s, msg, sizeof(msg)) != FT_OK)
    fprintf(stderr, "ft-restore: FT_HOLD=%s: %s\n", spec, msg);
}

/* The job's lock on this node's store (store.h), so that a restore never
 * rewrites the store of a running job.  A node without a store (a spare)
 * has nothing to protect yet.  Every rank learns the first failure. */
static int lock_store(ft__restore_t *r, double wait_s) {
  int fd = -1;
  /* A store this restore will read must be this user's own (store.h):
   * opened and checked where it is (then its lock is never waited for),
   * and locked and read through the descriptor checked, so that none put
   * in its place after the look is read.  None: nothing is read here (a
   * spare; shape_helper makes it). */
  int rc = ft__store_open_dir(r->store_root, r->dir.path, 0, &r->dir, r->msg,
                              sizeof(r->msg));
  if (rc == FT_OK)
    rc = ft__store_lock(&r->dir, wait_s, &fd, r->msg, sizeof(r->msg));
  if (rc == FT_ENOENT) {
    r->msg[0] = '\0';
    rc = FT_OK;
  }
  return ft__agree_msg(r->comm, rc, r->msg, sizeof(r->msg));
}

/* A rank of this ft-restore fell silent (dead, stopped or partitioned):
 * the others would wait for it forever in a blocking MPI call.  Called by
 * the heartbeat thread (base/pulse.h); never returns. */
static void restore_silent(void *arg, const ft__pulse_t *p, int rank) {
  const ft__restore_t *r = arg;
  fprintf(stderr,
          "ft-restore on %s: no sign of life from rank %d (%s) for %.0f s "
          "(FT_TIMEOUT %.0f s): it may be dead, stopped or partitioned; "
          "stopping (exit 4): nothing a later ft-restore needs is lost, it "
          "finishes or redoes this one\n",
          r->host, rank, p->host[rank], p->silent_s, p->timeout_s);
  _exit(4);
}

/* More losses than the erasure code rebuilds (r->msg says which): with
 * FT_PERSIST_DIR holding a version of the job, every node with a store gets
 * FT_DISK_MARKER, which makes the relaunch drop what memory holds and
 * resume from disk (runtime/smp_disk.c); nothing else changes.  Without one, the
 * refusal stands (FT_ETOOMANY).  *on_disk: 0 when every rank found no
 * version of the job there.  Collective. */
static int disk_fallback(ft__restore_t *r, const ft__config_t *cfg, int refused,
                         int *on_disk) {
  ft__dir_t job;
  ft__pversion_t *v = NULL;
  int n = 0;
  char msg[512] = "";
  int rc = ft__persist_open(cfg->persist_dir, r->job, 0, &job, msg,
                            sizeof(msg));
  if (rc == FT_OK)
    rc = ft__persist_list(&job, &v, &n, NULL, msg, sizeof(msg));
  if (rc == FT_OK && n == 0)
    rc = FT_ENOENT;
  /* No version of the job there, as every rank sees it (else unknown). */
  int none = rc == FT_ENOENT;
  if (MPI_Allreduce(MPI_IN_PLACE, &none, 1, MPI_INT, MPI_MIN, r->comm) !=
      MPI_SUCCESS)
    none = 0;
  *on_disk = !none;
  rc = ft__agree(r->comm, rc);
  /* The newest version that verifies (each rank reads a share of its
   * files): nothing is marked for one the relaunch could not use. */
  int use = -1;
  for (int i = 0; rc == FT_OK && use < 0 && i < n; i++) {
    char why[512] = "";
    int vrc = ft__persist_verify(&job, &v[i], (uint32_t)r->rank,
                                 (uint32_t)r->size, NULL, why, sizeof(why));
    if (vrc)
      fprintf(stderr, "ft-restore on %s: persisted version %llu (step %llu) "
              "is not usable: %s\n", r->host,
              (unsigned long long)v[i].version,
              (unsigned long long)v[i].step, why);
    if (ft__agree(r->comm, vrc) == FT_OK)
      use = i;
  }
  if (rc == FT_OK && use < 0) {
    rc = FT_ECORRUPT;
    snprintf(msg, sizeof(msg), "every persisted version fails its checks");
  }
  if (rc == FT_OK) {
    ft__pversion_t chosen = v[use];
    v[use] = v[0];
    v[0] = chosen; /* v[0] is the one used below; freed all the same */
    r->disk_version = v[0].version, r->disk_step = v[0].step;
    int mark = !r->opts.dry_run && r->dir.fd >= 0;
    if (mark)
      rc = ft__store_write_file(&r->dir, FT_DISK_MARKER, cfg->persist_dir,
                                strlen(cfg->persist_dir), msg, sizeof(msg));
    /* Every live store marked, or none: a marker left alone would make
     * its node give up memory the others still count on. */
    if ((rc = ft__agree_msg(r->comm, rc, msg, sizeof(msg))) && mark)
      ft__store_unlink(&r->dir, FT_DISK_MARKER, NULL, 0);
  }
  size_t used = strlen(r->msg);
  if (rc)
    snprintf(r->msg + used, sizeof(r->msg) - used,
             "; the disk tier cannot take over (FT_PERSIST_DIR=%s: %s)",
             cfg->persist_dir, msg[0] ? msg : "no version of the job");
  else {
    char lost[128] = "memory holds no committed version to lose";
    if (refused == FT_ETOOMANY && r->step <= v[0].step)
      snprintf(lost, sizeof(lost), "nothing committed is lost");
    else if (refused == FT_ETOOMANY)
      snprintf(lost, sizeof(lost), "steps %llu to %llu, committed in memory, "
               "are lost", (unsigned long long)v[0].step + 1,
               (unsigned long long)r->step);
    snprintf(r->msg + used, sizeof(r->msg) - used,
             "; the disk tier takes over%s: the relaunch resumes from "
             "version %llu (step %llu) of %s/%s, verified; %s",
             r->opts.dry_run ? " (dry run: nothing marked)" : "",
             (unsigned long long)v[0].version, (unsigned long long)v[0].step,
             job.path, v[0].name, lost);
  }
  r->disk = rc == FT_OK;
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
  return rc == FT_OK ? FT_OK : refused;
}

/* A store without room (exit 5): under ft-launch, the host of the lowest
 * rank whose store it was, so that a spare without room can be given up
 * for the next (by name: mpirun's rank order need not be ft-launch's node
 * order).  Collective. */
static void say_full(const ft__restore_t *r) {
  int full = r->full ? r->rank : INT_MAX;
  char host[FT_NAME_MAX];
  snprintf(host, sizeof(host), "%s", r->host);
  if (MPI_Allreduce(MPI_IN_PLACE, &full, 1, MPI_INT, MPI_MIN, r->comm) !=
          MPI_SUCCESS ||
      full == INT_MAX ||
      MPI_Bcast(host, (int)sizeof(host), MPI_CHAR, full, r->comm) !=
          MPI_SUCCESS)
    return;
  host[sizeof(host) - 1] = '\0';
  if (r->rank == 0)
    ft__times_say("full", "full_host=%s", host);
}

static int exit_code(int rc) {
  switch (rc) {
  case FT_OK:
    return 0;
  case FT_ETOOMANY:
    return 3;
  case FT_ENOSPC: /* a store without room: running it again gets the same */
    return 5;
  default:
    return 1;
  }
}

int main(int argc, char **argv) {
  int provided; /* a heartbeat thread runs beside MPI (it calls none) */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  static ft__restore_t r;
  ft__restore_init(&r);
  r.mpi_ms = ft__times_now_ms();
  r.comm = MPI_COMM_WORLD;
  MPI_Comm_rank(r.comm, &r.rank);
  MPI_Comm_size(r.comm, &r.size);
  r.world_rank = r.rank;
  char msg[512];
  ft__config_t cfg;
  /* Every rank learns of a bad variable on any (the lowest rank's message):
   * none is left alone in the collectives below. */
  int lrc = ft__config_load(&cfg, ft__config_env, NULL, msg, sizeof(msg));
  if (ft__agree_msg(r.comm, lrc, msg, sizeof(msg))) {
    if (r.rank == 0)
      fprintf(stderr, "ft-restore: %s\n", msg);
    MPI_Finalize();
    return 2;
  }
  int prc = parse(argc, argv, &cfg, &r);
  if (prc) {
    MPI_Finalize();
    return prc < 0 ? 0 : prc;
  }
  gethostname(r.host, sizeof(r.host) - 1);
  if (ft__config_same(r.comm, &cfg, r.host, msg, sizeof(msg))) {
    if (r.rank == 0)
      fprintf(stderr, "ft-restore: %s (exit 2)\n", msg);
    MPI_Finalize();
    return 2;
  }
  memcpy(r.job, cfg.job, sizeof(r.job));
  memcpy(r.store_root, cfg.store_root, sizeof(r.store_root));
  r.piece_bytes = cfg.piece_bytes;
  ft__fault_parse(&r.fault, cfg.fault);
  ft__store_dir(cfg.store_root, cfg.job, cfg.vnode_ranks ? r.rank : -1,
                r.dir.path, FT_PATH_MAX);
  /* Heartbeats from a thread of their own bound every blocking wait on a
   * peer below: one that falls silent ends this restore (exit 4). */
  static ft__pulse_t pulse;
  int rc = ft__pulse_init(&pulse, r.comm, cfg.timeout_s);
  if (rc == FT_ETIMEDOUT) {
    fprintf(stderr, "ft-restore on %s: not every rank came within %.0f s "
                    "(FT_TIMEOUT): a host may be dead or partitioned "
                    "(exit 4)\n", r.host, cfg.timeout_s);
    _exit(4);
  }
  if (rc == FT_OK)
    ft__pulse_watch(&pulse, restore_silent, &r);
  rc = ft__agree(r.comm, rc);
  if (rc == FT_OK)
    rc = lock_store(&r, cfg.timeout_s);
  if (rc == FT_OK) {
    arm_hold(&r, cfg.hold, cfg.hold_limit_s);
    rc = ft__restore_run(&r);
  }
  /* More losses than the code rebuilds, or no version to rebuild (a launch
   * that was restoring from disk lost a host before its first commit). */
  int on_disk = 1;
  if ((rc == FT_ETOOMANY || rc == FT_ENOSNAPSHOT) && cfg.persist_dir[0] &&
      !r.opts.verify)
    rc = disk_fallback(&r, &cfg, rc, &on_disk);
  /* Nothing ever committed, in memory or (none there) on disk: nothing is
   * lost by starting over, and the stores are cleared for it. */
  if (rc == FT_ENOSNAPSHOT && r.never && !r.opts.verify &&
      (!cfg.persist_dir[0] || !on_disk))
    rc = ft__restore_start_over(&r, "the stores, holding nothing "
                                    "committed, were cleared; the next "
                                    "launch starts the job afresh");
  /* A version found or rebuilt in memory: a marker of an earlier
   * hand-over is stale (the lost hosts came back). */
  if (rc == FT_OK && !r.disk && !r.opts.dry_run && !r.opts.verify &&
      r.dir.fd >= 0)
    ft__store_unlink(&r.dir, FT_DISK_MARKER, NULL, 0);
  if (rc == FT_ENOSPC)
    say_full(&r);
  ft__restore_report(&r, rc);
  ft__restore_hold_done(&r, 0);
  ft__dir_close(&r.dir);
  /* Before MPI_Finalize: a rank that has finished falls silent. */
  if (pulse.heard) /* its thread and all (pulse.h) */
    ft__pulse_free(&pulse);
  MPI_Finalize();
  return exit_code(rc);
}
