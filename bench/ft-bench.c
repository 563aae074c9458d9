/*
 * ft-bench-mpi: one measured configuration of ftrt, run under mpirun by the
 * ft-bench script (scripts/ft-bench), which sweeps configurations and turns
 * the results into ratios, a table and plots.
 *
 * Every trainer registers --state-mb MiB, takes warm-up snapshots (both store
 * slots are then mapped and their pages touched), and then, for each
 * repetition, times in the same process and alternating their order:
 *   - a memcpy of the same bytes into a buffer whose pages are touched (the
 *     store slot's pages are, after warm-up: a fair baseline is warm too);
 *   - ft_snapshot, then (lazy capture) a compute loop of known length, then
 *     ft_fence, then ft_wait_committed: the stall is the time snapshot and
 *     fence block, the protect time runs until the commit;
 *   - on the first trainer of each node, the node SMP's counters of that
 *     snapshot (read from the control segment, as ft-status does) and a raw
 *     ISA-L ec_encode_data of the node's data bytes with the same k+m, run on
 *     every node at once as the SMPs encode at once;
 *   - raw ISA-L encoding all nodes' data bytes together (same k+m, calls of
 *     one chunk) on as many cores as the SMPs have, C = min(CPUs the SMPs
 *     may run on, SMPs): C first trainers at once, 1/C of the bytes each.
 *     The cluster's protect rate over this one is encode_vs_isal;
 *   - on rank 0, the single-thread CPU cost of memcpy, crc64 and encode;
 *   - on some repetitions, write+fsync of the same bytes to a disk directory.
 * All trainers start each timed part together (a barrier that sleeps instead
 * of spinning, so that waiting ranks leave the cores to the measured ones);
 * a part's time is the slowest trainer's; figures are medians over the
 * repetitions, ratios are medians of per-repetition ratios.
 *
 * Rank 0 prints '# ...' comment lines and one 'result KEY VALUE' line per
 * figure.  With --isal-decode it runs no MPI and prints the raw ISA-L decode
 * rate, on --threads cores at once, that ft-restore's rebuild rate is
 * compared with.
 *
 * The benchmark links libftrt_core (the same objects as libftrt, with the
 * internal names visible) because it reads the SMP's counters from the
 * control segment, as ft-status does.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench/baseline.h"
#include "ftrt.h"
#include "runtime/config.h"
#include "snapshot/ctl.h"
#include "snapshot/hold.h"
#include "snapshot/store.h"

#define MAX_REPS 1000

/* Per-repetition values; each is reduced over the trainers by SUM and MAX. */
enum {
  X_MEMCPY,    /* wall s of the plain memcpy */
  X_STALL,     /* wall s ft_snapshot + ft_fence blocked */
  X_SNAP,      /* wall s ft_snapshot blocked */
  X_FENCE,     /* wall s ft_fence blocked */
  X_COMPUTE,   /* wall s of the compute loop between them (lazy) */
  X_PROTECT,   /* wall s from ft_snapshot to the end of ft_wait_committed */
  X_COPY_CPU,  /* process CPU s of ft_snapshot + ft_fence (sync) */
  X_FSYNC,     /* wall s of write+fsync of the same bytes, or 0 */
  X_ALLREDUCE, /* wall s of one bare MPI_Allreduce of an int */
  X_NODE,      /* 1 on the first trainer of a node: SUM = nodes */
  X_SMP_CRC,   /* the node SMP's counters of this snapshot */
  X_SMP_XFER,
  X_SMP_ENC,
  X_SMP_COMMIT,
  X_SMP_CPU,
  X_SMP_PROT,   /* data bytes protected */
  X_SMP_SENT,   /* bytes sent */
  X_ISAL_ENC,   /* wall s of raw ec_encode_data of the node's data bytes */
  X_ISAL_CL,    /* wall s of this ISA-L worker's share of all nodes' data */
  X_FLOOR_COPY, /* rank 0: thread CPU s per GB of memcpy */
  X_FLOOR_CRC,  /* rank 0: thread CPU s per GB of crc64 */
  X_FLOOR_ENC,  /* rank 0: thread CPU s per GB of data of ec_encode_data */
  X_N
};

typedef struct opts {
  double state_mb;
  int reps, warmup, fsync_reps, verbose;
  const char *capture;   /* NULL: FT_CAPTURE as set, else sync */
  double compute_ms;     /* 0: 4 x the memcpy time */
  const char *fsync_dir; /* NULL: no fsync baseline */
  uint64_t decode_bytes; /* --isal-decode: no MPI */
  int k, m, threads;
} opts_t;

typedef struct bench {
  opts_t o;
  ft_ctx_t *ctx;
  MPI_Comm comm;
  int rank, size, world_rank, lazy;
  ft__ctl_t *ctl; /* this node's control segment */
  int local0;     /* first trainer of its node: reads the SMP counters */
  int local_idx;  /* this trainer's place in the node's slots */
  ft__dir_t dir; /* this node's store (store.h) */
  char job[FT_JOB_MAX];
  ft__slot_t slot[FT_NSLOTS]; /* mapped to warm the snapshot's destination */
  size_t bytes;
  uint8_t *state, *dst;
  uint64_t step, compute_iters, sink;
  double compute_alone_s, memcpy_cold_s;
  int k, m, nnodes;
  size_t chunk;
  fb_encoder_t enc;
  int have_enc;
  int cores;              /* C: cores the SMPs have between them */
  int isal_worker;        /* 0..C-1 on the trainers that run ISA-L on all
                           * nodes' bytes, else -1 */
  uint64_t cluster_bytes; /* data bytes of all nodes */
  fb_encoder_t enc_cl;    /* an ISA-L worker's share of them */
  double prev_cpu;
  uint64_t prev_prot;
  double sum[MAX_REPS][X_N], max[MAX_REPS][X_N]; /* rank 0 */
} bench_t;

/* ---- options ---- */

static void usage(FILE *f) {
  fputs("usage: ft-bench-mpi [--state-mb M] [--reps R] [--warmup W]\n"
        "                    [--capture sync|lazy] [--compute-ms C]\n"
        "                    [--fsync-dir DIR] [--fsync-reps F] [--verbose]\n"
        "       ft-bench-mpi --isal-decode BYTES --k K --m M [--reps R]\n"
        "                    [--threads T]\n"
        "  --state-mb M     MiB registered per trainer (default 64)\n"
        "  --reps R         timed repetitions, 3..1000 (default 11)\n"
        "  --warmup W       untimed snapshots first, >= 2 (default 2)\n"
        "  --capture MODE   FT_CAPTURE for this run: sync or lazy\n"
        "  --compute-ms C   lazy: compute between snapshot and fence, ms\n"
        "  --fsync-dir DIR  also time write+fsync of the bytes in DIR\n"
        "  --fsync-reps F   on F of the repetitions (default 3)\n"
        "  --verbose        one line per repetition\n"
        "  --isal-decode B  no MPI: raw ISA-L decode rate of B bytes\n"
        "  --k K, --m M     the code of --isal-decode\n"
        "  --threads T      --isal-decode: T threads at once (default 1)\n"
        "  --help           this text\n"
        "See ft-bench(1).\n",
        f);
}

static int launcher_rank0(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r)
    r = getenv("PMIX_RANK");
  return !r || strcmp(r, "0") == 0;
}

static int bad(const char *flag, const char *v) {
  if (launcher_rank0())
    fprintf(stderr, "ft-bench-mpi: bad value '%s' for --%s (see --help)\n", v,
            flag);
  return 2;
}

static int set_opt(opts_t *o, const char *name, const char *v) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  int num = end != v && !*end && !errno;
  if (!strcmp(name, "capture")) {
    if (strcmp(v, "sync") && strcmp(v, "lazy"))
      return bad(name, v);
    o->capture = v;
  } else if (!strcmp(name, "fsync-dir")) {
    o->fsync_dir = v;
  } else if (!num) {
    return bad(name, v);
  } else if (!strcmp(name, "state-mb")) {
    if (!(d > 0 && d <= 65536))
      return bad(name, v);
    o->state_mb = d;
  } else if (!strcmp(name, "reps")) {
    if (d < 3 || d > MAX_REPS)
      return bad(name, v);
    o->reps = (int)d;
  } else if (!strcmp(name, "warmup")) {
    if (d < 2 || d > 100)
      return bad(name, v);
    o->warmup = (int)d;
  } else if (!strcmp(name, "compute-ms")) {
    if (d < 0 || d > 1e6)
      return bad(name, v);
    o->compute_ms = d;
  } else if (!strcmp(name, "fsync-reps")) {
    if (d < 0 || d > MAX_REPS)
      return bad(name, v);
    o->fsync_reps = (int)d;
  } else if (!strcmp(name, "isal-decode")) {
    if (d < 1 || d > 1e12)
      return bad(name, v);
    o->decode_bytes = (uint64_t)d;
  } else if (!strcmp(name, "threads")) {
    if (d < 1 || d > FB_MAX_THREADS)
      return bad(name, v);
    o->threads = (int)d;
  } else if (!strcmp(name, "k") || !strcmp(name, "m")) {
    if (d < 1 || d > 254)
      return bad(name, v);
    *(name[0] == 'k' ? &o->k : &o->m) = (int)d;
  }
  return 0;
}

/* 0: run, 1: --help printed, 2: usage error. */
static int parse(int argc, char **argv, opts_t *o) {
  static const struct option lo[] = {{"state-mb", required_argument, 0, 0},
                                     {"reps", required_argument, 0, 0},
                                     {"warmup", required_argument, 0, 0},
                                     {"capture", required_argument, 0, 0},
                                     {"compute-ms", required_argument, 0, 0},
                                     {"fsync-dir", required_argument, 0, 0},
                                     {"fsync-reps", required_argument, 0, 0},
                                     {"isal-decode", required_argument, 0, 0},
                                     {"threads", required_argument, 0, 0},
                                     {"k", required_argument, 0, 0},
                                     {"m", required_argument, 0, 0},
                                     {"verbose", no_argument, 0, 'v'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  *o = (opts_t){
      .state_mb = 64, .reps = 11, .warmup = 2, .fsync_reps = 3, .threads = 1};
  int c, idx, rc;
  opterr = launcher_rank0();
  while ((c = getopt_long(argc, argv, "hv", lo, &idx)) != -1) {
    if (c == 'h') {
      if (launcher_rank0())
        usage(stdout);
      return 1;
    }
    if (c == 'v')
      o->verbose = 1;
    else if (c == '?')
      return 2;
    else if ((rc = set_opt(o, lo[idx].name, optarg)))
      return rc;
  }
  if (optind < argc)
    return bad("(argument)", argv[optind]);
  if (o->decode_bytes && (!o->k || !o->m))
    return bad("isal-decode", "(needs --k and --m)");
  return 0;
}

/* ---- helpers ---- */

/* A barrier whose waiters sleep, so that they leave the cores of this
 * oversubscribed machine to the ranks still working. */
static void calm_barrier(MPI_Comm comm) {
  MPI_Request req;
  int done = 0;
  MPI_Ibarrier(comm, &req);
  for (;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

static uint64_t compute(uint64_t iters) {
  uint64_t x = 88172645463325252ull;
  for (uint64_t i = 0; i < iters; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static double max_all(bench_t *b, double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, b->comm);
  return v;
}

static int agree(bench_t *b, int rc) {
  MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MIN, b->comm);
  return rc;
}

static int fail(bench_t *b, int rc, const char *what) {
  if (b->rank == 0)
    fprintf(stderr, "ft-bench-mpi: %s: %s\n", what, ft_strerror(rc));
  return rc;
}

/* ---- set-up ---- */

/* The control segment of this rank's node, found as ft_init found it. */
static int attach_ctl(bench_t *b) {
  ft__config_t cfg;
  char msg[512], dir[FT_PATH_MAX];
  int rc = ft__config_load(&cfg, ft__config_env, NULL, msg, sizeof(msg));
  int vnode = cfg.vnode_ranks > 0 ? b->world_rank / cfg.vnode_ranks : -1;
  if (rc == FT_OK)
    rc = ft__store_dir(cfg.store_root, cfg.job, vnode, dir, sizeof(dir));
  if (rc == FT_OK)
    rc = ft__store_open_dir(cfg.store_root, dir, 0, &b->dir, msg, sizeof(msg));
  if (rc == FT_OK)
    rc = ft__ctl_attach(&b->dir, &b->ctl, msg, sizeof(msg));
  if (rc != FT_OK) {
    fprintf(stderr, "ft-bench-mpi: rank %d: control segment: %s\n",
            b->world_rank, msg);
    return rc;
  }
  snprintf(b->job, sizeof(b->job), "%s", cfg.job);
  b->local_idx = -1;
  for (uint32_t i = 0; i < b->ctl->nlocal && i < FT_MAX_LOCAL; i++)
    if (b->ctl->rank[i].pid == (uint32_t)getpid())
      b->local_idx = (int)i;
  b->local0 = b->local_idx == 0;
  return b->local_idx >= 0 ? FT_OK : FT_ESTATE;
}

/* Both slots exist once the warm-up snapshots are committed. */
static int open_slots(bench_t *b) {
  char msg[512];
  for (int i = 0; i < FT_NSLOTS; i++) {
    int rc = ft__slot_open(&b->slot[i], &b->dir, i, b->job, msg, sizeof(msg));
    if (rc != FT_OK) {
      fprintf(stderr, "ft-bench-mpi: rank %d: %s\n", b->world_rank, msg);
      return rc;
    }
  }
  return FT_OK;
}

/*
 * The L3 of the machines this runs on can hold the whole state (480 MiB on
 * the one of RESULTS.md), so which bytes happen to be cached would decide a
 * copy's speed.  Both copies compared are therefore timed with their source
 * and destination just read: the memcpy's buffer, or the region of the slot
 * that the next snapshot writes.
 */
static void warm(bench_t *b, const uint8_t *p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i += 64)
    s += p[i];
  b->sink += s;
}

static void warm_snapshot(bench_t *b) {
  const ft__slot_t *sl =
      &b->slot[(ft__load64(&b->ctl->committed_version) + 1) % FT_NSLOTS];
  uint64_t off = sl->hdr->rank_off[b->local_idx];
  warm(b, b->state, b->bytes);
  if (off + b->bytes <= sl->map_bytes)
    warm(b, sl->map + off, b->bytes);
}

static void warm_memcpy(bench_t *b) {
  warm(b, b->state, b->bytes);
  warm(b, b->dst, b->bytes);
}

static int alloc_state(bench_t *b) {
  b->bytes = (size_t)(b->o.state_mb * 1048576.0) / 64 * 64;
  if (b->bytes < 64)
    b->bytes = 64;
  b->state = fb_alloc_touched(b->bytes, 0x1234567ull + (uint64_t)b->rank);
  b->dst = fb_alloc_touched(b->bytes, 99);
  if (!b->state || !b->dst)
    return FT_ENOMEM;
  return ft_register(b->ctx, "state", b->state, b->bytes, NULL);
}

static int one_snapshot(bench_t *b) {
  int rc = ft_snapshot(b->ctx, ++b->step);
  if (rc == FT_OK)
    rc = ft_wait_committed(b->ctx, NULL);
  return rc;
}

/* What this node's SMP did for the snapshot just committed. */
static void smp_sample(bench_t *b, double *x) {
  if (!b->local0)
    return;
  const ft__ctl_stats_t *st = &b->ctl->stats;
  x[X_NODE] = 1;
  x[X_SMP_CRC] = st->last_crc;
  x[X_SMP_XFER] = st->last_transfer;
  x[X_SMP_ENC] = st->last_encode;
  x[X_SMP_COMMIT] = st->last_commit;
  x[X_SMP_CPU] = st->cpu_s - b->prev_cpu;
  x[X_SMP_PROT] = (double)(st->bytes_protected - b->prev_prot);
  x[X_SMP_SENT] = (double)st->last_bytes_sent;
  b->prev_cpu = st->cpu_s;
  b->prev_prot = st->bytes_protected;
}

/* k, m, node count and chunk size, agreed from the first trainers. */
static void learn_code(bench_t *b) {
  double x[X_N] = {0}, v[4];
  smp_sample(b, x);
  v[0] = b->local0 ? b->ctl->k : 0;
  v[1] = b->local0 ? b->ctl->m : 0;
  v[2] = x[X_NODE];
  v[3] = (double)b->slot[0].hdr->chunk_bytes;
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, b->comm);
  MPI_Allreduce(MPI_IN_PLACE, v + 2, 1, MPI_DOUBLE, MPI_SUM, b->comm);
  MPI_Allreduce(MPI_IN_PLACE, v + 3, 1, MPI_DOUBLE, MPI_MAX, b->comm);
  b->k = (int)v[0], b->m = (int)v[1], b->nnodes = (int)v[2];
  b->chunk = (size_t)v[3];
}

/* The CPUs this node's SMP may run on, tagged with the machine: its
 * machine id and the kernel's boot time (/proc/stat's btime), which the
 * virtual nodes of one host and ft-cluster's namespaces share (each of
 * ft-cluster's hosts has a boot id of its own, as MPI libraries need), so
 * they count its CPUs once; separate hosts count theirs apart. */
typedef struct smp_cpus {
  char boot[64];
  cpu_set_t set;
} smp_cpus_t;

static void my_smp_cpus(const bench_t *b, smp_cpus_t *c) {
  memset(c, 0, sizeof(*c));
  if (!b->local0)
    return;
  char id[40] = "", line[128];
  unsigned long long btime = 0;
  FILE *f = fopen("/etc/machine-id", "r");
  if (f) {
    if (!fgets(id, sizeof(id), f))
      id[0] = '\0';
    fclose(f);
  }
  id[strcspn(id, "\n")] = '\0';
  if ((f = fopen("/proc/stat", "r"))) {
    while (fgets(line, sizeof(line), f))
      if (sscanf(line, "btime %llu", &btime) == 1)
        break;
    fclose(f);
  }
  if (id[0] || btime)
    snprintf(c->boot, sizeof(c->boot), "%s:%llu", id, btime);
  else
    gethostname(c->boot, sizeof(c->boot) - 1);
  if (!c->boot[0])
    c->boot[0] = '?';
  if (sched_getaffinity((pid_t)b->ctl->smp_pid, sizeof(c->set), &c->set))
    sched_getaffinity(0, sizeof(c->set), &c->set);
}

/* Distinct (boot id, CPU) pairs over the nodes' entries. */
static int count_cpus(const smp_cpus_t *all, int n) {
  int count = 0;
  for (int i = 0; i < n; i++)
    for (int cpu = 0; all[i].boot[0] && cpu < CPU_SETSIZE; cpu++) {
      int seen = !CPU_ISSET(cpu, &all[i].set);
      for (int j = 0; j < i && !seen; j++)
        seen = !strcmp(all[j].boot, all[i].boot) && CPU_ISSET(cpu, &all[j].set);
      count += !seen;
    }
  return count;
}

/*
 * C, the cores the SMPs have between them: min(CPUs they may run on, SMPs).
 * The first trainers of the first C nodes run the ISA-L baseline of the
 * cluster's encode.  They may sit on other CPUs than the SMPs (bound
 * trainers do): any C idle cores of the machine serve as well.
 */
static int learn_cores(bench_t *b) {
  smp_cpus_t mine, *all = malloc((size_t)b->size * sizeof(*all));
  int ok = all != NULL, first = 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, b->comm);
  if (!ok) {
    free(all);
    return FT_ENOMEM;
  }
  my_smp_cpus(b, &mine);
  MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine),
                MPI_BYTE, b->comm);
  int cpus = count_cpus(all, b->size);
  free(all);
  b->cores = cpus < b->nnodes ? cpus : b->nnodes;
  double data = b->local0 ? (double)b->slot[0].hdr->data_bytes : 0;
  MPI_Allreduce(MPI_IN_PLACE, &data, 1, MPI_DOUBLE, MPI_SUM, b->comm);
  b->cluster_bytes = (uint64_t)data;
  MPI_Exscan(&b->local0, &first, 1, MPI_INT, MPI_SUM, b->comm);
  if (b->rank == 0) /* Exscan leaves rank 0's result undefined */
    first = 0;
  b->isal_worker = b->local0 && first < b->cores ? first : -1;
  return FT_OK;
}

/* This worker's part of the cluster's encode: all nodes' data bytes as k
 * rows, split evenly over the C workers, in buffers of its own (the nodes'
 * data is in as many bytes of memory, not in one node's worth, reused). */
static int init_cluster_share(bench_t *b) {
  uint64_t row = (b->cluster_bytes + (uint64_t)b->k - 1) / (uint64_t)b->k;
  uint64_t c = (uint64_t)b->cores, w = (uint64_t)b->isal_worker;
  return fb_encoder_init(&b->enc_cl, b->k, b->m, row / c + (w < row % c));
}

static int warm_up(bench_t *b) {
  int rc = FT_OK;
  for (int i = 0; i < b->o.warmup && rc == FT_OK; i++)
    rc = one_snapshot(b);
  if (rc != FT_OK)
    return fail(b, rc, "warm-up snapshot");
  if ((rc = agree(b, open_slots(b))))
    return fail(b, rc, "opening the store slots");
  learn_code(b);
  if ((rc = learn_cores(b)))
    return fail(b, rc, "the SMPs' CPUs");
  int ok = 1;
  if (b->m > 0 && b->chunk && (b->local0 || b->rank == 0)) {
    ok = fb_encoder_init(&b->enc, b->k, b->m, b->chunk) == 0;
    b->have_enc = ok;
  }
  if (ok && b->have_enc && b->isal_worker >= 0)
    ok = init_cluster_share(b) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, b->comm);
  return ok ? FT_OK : fail(b, FT_ENOMEM, "ISA-L baseline buffers");
}

/* A memcpy into pages never touched, once: what a cold destination costs. */
static void time_cold_memcpy(bench_t *b) {
  uint8_t *p = mmap(NULL, b->bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  double t = 0;
  calm_barrier(b->comm);
  if (p != MAP_FAILED) {
    t = fb_time_memcpy(p, b->state, b->bytes);
    munmap(p, b->bytes);
  }
  b->memcpy_cold_s = max_all(b, t);
}

static double concurrent_memcpy(bench_t *b) {
  warm_memcpy(b);
  calm_barrier(b->comm);
  return max_all(b, fb_time_memcpy(b->dst, b->state, b->bytes));
}

/* Lazy capture: a compute loop that takes target_s when every trainer runs
 * it at once without a snapshot (the "known duration"). */
static void calibrate(bench_t *b, double target_s) {
  uint64_t it = 1u << 16;
  double t;
  for (;;) {
    calm_barrier(b->comm);
    t = fb_now();
    b->sink += compute(it);
    t = max_all(b, fb_now() - t);
    if (t >= 0.02 || it > (1ull << 40))
      break;
    it *= 4;
  }
  b->compute_iters = (uint64_t)((double)it * target_s / t) + 1;
  double s[3];
  for (int i = 0; i < 3; i++) {
    calm_barrier(b->comm);
    t = fb_now();
    b->sink += compute(b->compute_iters);
    s[i] = max_all(b, fb_now() - t);
  }
  b->compute_alone_s = fb_median(s, 3);
}

static void prepare_compute(bench_t *b) {
  if (!b->lazy)
    return;
  double target = b->o.compute_ms * 1e-3;
  if (target <= 0) {
    double s[3];
    for (int i = 0; i < 3; i++)
      s[i] = concurrent_memcpy(b);
    target = 4 * fb_median(s, 3);
    if (target < 0.005)
      target = 0.005;
  }
  calibrate(b, target);
}

/* ---- one repetition ---- */

static int time_snapshot(bench_t *b, double *x) {
  memcpy(b->state, &b->step, sizeof(b->step)); /* each version differs */
  warm_snapshot(b);
  calm_barrier(b->comm);
  double cpu0 = fb_process_cpu(), t0 = fb_now();
  int rc = ft_snapshot(b->ctx, ++b->step);
  double t1 = fb_now(), t2 = t1;
  if (rc == FT_OK && b->lazy) {
    b->sink += compute(b->compute_iters);
    t2 = fb_now();
  }
  if (rc == FT_OK)
    rc = ft_fence(b->ctx);
  double t3 = fb_now(), cpu1 = fb_process_cpu();
  if (rc == FT_OK)
    rc = ft_wait_committed(b->ctx, NULL);
  x[X_SNAP] = t1 - t0;
  x[X_COMPUTE] = t2 - t1;
  x[X_FENCE] = t3 - t2;
  x[X_STALL] = (t1 - t0) + (t3 - t2);
  x[X_PROTECT] = fb_now() - t0;
  x[X_COPY_CPU] = b->lazy ? 0 : cpu1 - cpu0;
  smp_sample(b, x);
  return rc;
}

static void time_memcpy(bench_t *b, double *x) {
  warm_memcpy(b);
  calm_barrier(b->comm);
  x[X_MEMCPY] = fb_time_memcpy(b->dst, b->state, b->bytes);
}

/* What one agreement costs here: ft_snapshot makes two (ft__agree). */
static void time_allreduce(bench_t *b, double *x) {
  int v = b->rank;
  calm_barrier(b->comm);
  double t = fb_now();
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, b->comm);
  x[X_ALLREDUCE] = fb_now() - t;
}

static void time_isal(bench_t *b, double *x) {
  calm_barrier(b->comm);
  if (b->have_enc && b->local0)
    x[X_ISAL_ENC] = fb_encoder_run(&b->enc);
  calm_barrier(b->comm);
  if (b->have_enc && b->isal_worker >= 0)
    x[X_ISAL_CL] = fb_encoder_run_pieces(&b->enc_cl, b->chunk);
}

/* Rank 0, alone: single-thread CPU cost of each step, per GB. */
static void time_floor(bench_t *b, double *x) {
  calm_barrier(b->comm);
  if (b->rank != 0)
    return;
  uint64_t crc;
  double t = fb_thread_cpu();
  memcpy(b->dst, b->state, b->bytes);
  x[X_FLOOR_COPY] = (fb_thread_cpu() - t) / (double)b->bytes * 1e9;
  x[X_FLOOR_CRC] =
      fb_cpu_crc64(b->state, b->bytes, &crc) / (double)b->bytes * 1e9;
  b->sink += crc;
  if (b->have_enc) {
    t = fb_thread_cpu();
    fb_encoder_run(&b->enc);
    x[X_FLOOR_ENC] =
        (fb_thread_cpu() - t) / (double)(b->chunk * (size_t)b->k) * 1e9;
  }
}

static void time_fsync(bench_t *b, int rep, double *x) {
  int every = b->o.fsync_reps ? b->o.reps / b->o.fsync_reps : 0;
  if (!b->o.fsync_dir || !every || rep % every ||
      rep / every >= b->o.fsync_reps)
    return;
  char name[64];
  snprintf(name, sizeof(name), "ft-bench.%d.%d", b->world_rank, (int)getpid());
  calm_barrier(b->comm);
  x[X_FSYNC] = fb_time_write_fsync(b->o.fsync_dir, name, b->state, b->bytes);
  if (x[X_FSYNC] < 0)
    fprintf(stderr, "ft-bench-mpi: rank %d: write+fsync in %s: %s\n",
            b->world_rank, b->o.fsync_dir, strerror(errno));
}

static int repetition(bench_t *b, int rep) {
  double x[X_N] = {0};
  int rc;
  if (rep % 2 == 0) { /* alternate the order: drift hits both sides */
    time_memcpy(b, x);
    rc = time_snapshot(b, x);
  } else {
    rc = time_snapshot(b, x);
    time_memcpy(b, x);
  }
  if (rc != FT_OK)
    return fail(b, rc, "snapshot");
  time_allreduce(b, x);
  time_isal(b, x);
  time_floor(b, x);
  time_fsync(b, rep, x);
  MPI_Reduce(x, b->sum[rep], X_N, MPI_DOUBLE, MPI_SUM, 0, b->comm);
  MPI_Reduce(x, b->max[rep], X_N, MPI_DOUBLE, MPI_MAX, 0, b->comm);
  return FT_OK;
}

/* ---- report (rank 0) ---- */

typedef double (*rep_fn)(const bench_t *, int);

static double med(const bench_t *b, rep_fn f) {
  double v[MAX_REPS];
  int n = 0;
  for (int r = 0; r < b->o.reps; r++) {
    double x = f(b, r);
    if (x == x) /* NaN: not measured in this repetition */
      v[n++] = x;
  }
  return n ? fb_median(v, n) : 0.0 / 0.0;
}

#define MAXOF(NAME, IDX)                                                       \
  static double NAME(const bench_t *b, int r) { return b->max[r][IDX]; }
MAXOF(r_memcpy, X_MEMCPY)
MAXOF(r_stall, X_STALL)
MAXOF(r_snap, X_SNAP)
MAXOF(r_fence, X_FENCE)
MAXOF(r_compute, X_COMPUTE)
MAXOF(r_protect, X_PROTECT)
MAXOF(r_allreduce, X_ALLREDUCE)
MAXOF(r_crc, X_SMP_CRC)
MAXOF(r_xfer, X_SMP_XFER)
MAXOF(r_enc, X_SMP_ENC)
MAXOF(r_commit, X_SMP_COMMIT)
MAXOF(r_isal, X_ISAL_ENC)
MAXOF(r_isal_cluster, X_ISAL_CL)
MAXOF(r_sent_max, X_SMP_SENT)
MAXOF(r_floor_copy, X_FLOOR_COPY)
MAXOF(r_floor_crc, X_FLOOR_CRC)
MAXOF(r_floor_enc, X_FLOOR_ENC)

static double nan_if_zero(double x) { return x > 0 ? x : 0.0 / 0.0; }

static double r_fsync(const bench_t *b, int r) {
  return nan_if_zero(b->max[r][X_FSYNC]);
}
static double r_stall_vs_memcpy(const bench_t *b, int r) {
  return b->max[r][X_STALL] / b->max[r][X_MEMCPY];
}
static double r_sent_mean(const bench_t *b, int r) {
  return b->sum[r][X_SMP_SENT] / b->sum[r][X_NODE];
}
/* Per SMP: bytes per second of SMP transfer+encode over raw ISA-L's encode
 * of a node's bytes, run on every node at once (as many encodes as SMPs
 * sharing the cores); summed over the nodes, that is sum(ISA-L time) /
 * sum(transfer + encode time). */
static double r_encode_per_smp_vs_isal(const bench_t *b, int r) {
  const double *s = b->sum[r];
  return nan_if_zero(s[X_ISAL_ENC]) / (s[X_SMP_XFER] + s[X_SMP_ENC]);
}
static double r_encode_only_vs_isal(const bench_t *b, int r) {
  const double *s = b->sum[r];
  return nan_if_zero(s[X_ISAL_ENC]) / s[X_SMP_ENC];
}
static double r_smp_cpu_gb(const bench_t *b, int r) {
  const double *s = b->sum[r];
  return s[X_SMP_CPU] / (s[X_SMP_PROT] / 1e9);
}
static double r_protect_cpu_gb(const bench_t *b, int r) {
  const double *s = b->sum[r];
  return (s[X_SMP_CPU] + s[X_COPY_CPU]) / (s[X_SMP_PROT] / 1e9);
}
static double r_protect_gbs(const bench_t *b, int r) {
  return b->sum[r][X_SMP_PROT] / b->max[r][X_PROTECT] / 1e9;
}
static double r_isal_cluster_gbs(const bench_t *b, int r) {
  return (double)b->cluster_bytes / nan_if_zero(b->max[r][X_ISAL_CL]) / 1e9;
}
/* The cluster's protect rate (all nodes' data bytes over the time from
 * ft_snapshot until the last trainer saw the commit: copy, CRC, transfer,
 * encode and commit) over raw ISA-L's encode of the same bytes on the same
 * number of cores, C (learn_cores), in the same repetition. */
static double r_encode_vs_isal(const bench_t *b, int r) {
  return r_protect_gbs(b, r) / r_isal_cluster_gbs(b, r);
}

static void result(const char *key, double v) {
  if (v == v)
    printf("result %s %.6g\n", key, v);
  else
    printf("result %s n/a\n", key);
}

static void print_reps(const bench_t *b) {
  printf("# %3s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "rep", "memcpy_ms",
         "stall_ms", "snap_ms", "fence_ms", "comp_ms", "protect", "smp_xfer",
         "smp_enc", "isal_enc");
  for (int r = 0; r < b->o.reps; r++) {
    const double *x = b->max[r];
    printf("# %3d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", r,
           1e3 * x[X_MEMCPY], 1e3 * x[X_STALL], 1e3 * x[X_SNAP],
           1e3 * x[X_FENCE], 1e3 * x[X_COMPUTE], 1e3 * x[X_PROTECT],
           1e3 * x[X_SMP_XFER], 1e3 * x[X_SMP_ENC], 1e3 * x[X_ISAL_ENC]);
  }
}

static void report_config(const bench_t *b) {
  printf("# ft-bench-mpi: %d node(s) x %d trainer(s), k=%d m=%d, %.2f MiB per "
         "trainer, capture %s, %d reps\n",
         b->nnodes, b->size / (b->nnodes ? b->nnodes : 1), b->k, b->m,
         (double)b->bytes / 1048576.0, b->lazy ? "lazy" : "sync", b->o.reps);
  printf("result nodes %d\nresult trainers %d\nresult k %d\nresult m %d\n",
         b->nnodes, b->size, b->k, b->m);
  printf("result capture %s\nresult reps %d\n", b->lazy ? "lazy" : "sync",
         b->o.reps);
  result("bytes_per_trainer", (double)b->bytes);
  result("node_data_bytes", (double)b->chunk * b->k);
}

/* What a hold point costs a snapshot when nothing is armed (snapshot/hold.h):
 * the trainer's gate, timed over many calls on a control segment. */
static double hold_gate_s(void) {
  ft__ctl_t *ctl = calloc(1, sizeof(*ctl));
  if (!ctl)
    return 0.0 / 0.0;
  enum { N = 20000000 };
  uint32_t held = 0;
  double t = MPI_Wtime();
  for (uint64_t i = 1; i <= N; i++)
    held |= ft__hold_gate(ctl, &ctl->rank[0].gate_step, i,
                          1u << FT_HOLD_STEP);
  t = MPI_Wtime() - t;
  free(ctl);
  return held ? 0.0 / 0.0 : t / N;
}

static void report_times(const bench_t *b) {
  result("memcpy_s", med(b, r_memcpy));
  result("memcpy_cold_s", b->memcpy_cold_s);
  result("stall_s", med(b, r_stall));
  result("snapshot_block_s", med(b, r_snap));
  result("fence_block_s", med(b, r_fence));
  result("stall_vs_memcpy", med(b, r_stall_vs_memcpy));
  if (b->lazy) {
    result("compute_alone_s", b->compute_alone_s);
    result("compute_s", med(b, r_compute));
  }
  result("allreduce_s", med(b, r_allreduce));
  result("protect_s", med(b, r_protect));
  result("protect_gbs", med(b, r_protect_gbs));
  result("fsync_s", med(b, r_fsync));
  result("fsync_vs_stall", med(b, r_fsync) / med(b, r_stall));
  double gate = hold_gate_s();
  result("hold_gate_s", gate);
  result("hold_gate_vs_stall", gate / med(b, r_stall));
}

static void report_smp(const bench_t *b) {
  result("smp_crc_s", med(b, r_crc));
  result("smp_transfer_s", med(b, r_xfer));
  result("smp_encode_s", med(b, r_enc));
  result("smp_commit_s", med(b, r_commit));
  result("isal_encode_s", med(b, r_isal));
  result("encode_per_smp_vs_isal", med(b, r_encode_per_smp_vs_isal));
  result("encode_only_vs_isal", med(b, r_encode_only_vs_isal));
  result("isal_cores", b->cores);
  result("isal_cluster_bytes", (double)b->cluster_bytes);
  result("isal_cluster_s", med(b, r_isal_cluster));
  result("isal_cluster_gbs", med(b, r_isal_cluster_gbs));
  /* Lazy capture: the protect time holds the trainers' compute loop, which
   * the ISA-L run does not share the cores with. */
  result("encode_vs_isal", b->lazy ? 0.0 / 0.0 : med(b, r_encode_vs_isal));
  result("smp_cpu_s_per_gb", med(b, r_smp_cpu_gb));
  result("protect_cpu_s_per_gb",
         b->lazy ? 0.0 / 0.0 : med(b, r_protect_cpu_gb));
  double copy = med(b, r_floor_copy), crc = med(b, r_floor_crc);
  double enc = b->m ? med(b, r_floor_enc) : 0;
  /* Every held chunk has a CRC: parity too, m/k more bytes per data byte. */
  double crc_all = b->k ? crc * (b->k + b->m) / b->k : crc;
  result("floor_memcpy_s_per_gb", copy);
  result("floor_crc64_s_per_gb", crc_all);
  result("floor_encode_s_per_gb", enc);
  result("floor_s_per_gb", copy + crc_all + enc);
  result("bytes_sent_per_smp_max", med(b, r_sent_max));
  result("bytes_sent_per_smp_mean", med(b, r_sent_mean));
}

static void report(const bench_t *b) {
  if (b->rank != 0)
    return;
  report_config(b);
  if (b->o.verbose)
    print_reps(b);
  report_times(b);
  report_smp(b);
  printf("# sink %llu\n", (unsigned long long)(b->sink & 1));
}

/* ---- main ---- */

static int run(bench_t *b) {
  int rc = agree(b, attach_ctl(b));
  if (rc == FT_OK && (rc = agree(b, alloc_state(b))))
    fail(b, rc, "state buffers");
  if (rc == FT_OK)
    rc = warm_up(b);
  if (rc != FT_OK)
    return rc;
  time_cold_memcpy(b);
  prepare_compute(b);
  for (int r = 0; r < b->o.reps && rc == FT_OK; r++)
    rc = repetition(b, r);
  if (rc == FT_OK)
    report(b);
  return rc;
}

static int decode_only(const opts_t *o) {
  size_t piece = (size_t)64 << 20;
  int t = o->threads;
  double warm =
      fb_decode_gbs(o->k, o->m, o->decode_bytes, piece, o->reps, 0, t);
  double cold =
      fb_decode_gbs(o->k, o->m, o->decode_bytes, piece, o->reps, 1, t);
  if (warm < 0 || cold < 0) {
    fprintf(stderr, "ft-bench-mpi: raw ISA-L decode failed (memory?)\n");
    return 1;
  }
  printf("result isal_decode_bytes %llu\nresult isal_decode_threads %d\n"
         "result isal_decode_gbs %.6g\nresult isal_decode_cold_gbs %.6g\n",
         (unsigned long long)o->decode_bytes, t, warm, cold);
  return 0;
}

int main(int argc, char **argv) {
  static bench_t b; /* the per-repetition tables are large */
  setvbuf(stdout, NULL, _IOLBF, 0);
  int rc = parse(argc, argv, &b.o);
  if (rc)
    return rc == 1 ? 0 : 2;
  if (b.o.decode_bytes)
    return decode_only(&b.o);
  if (b.o.capture && setenv("FT_CAPTURE", b.o.capture, 1) != 0)
    return 1;
  b.lazy = b.o.capture
               ? !strcmp(b.o.capture, "lazy")
               : getenv("FT_CAPTURE") && !strcmp(getenv("FT_CAPTURE"), "lazy");
  rc = ft_init(&argc, &argv, &b.ctx, &b.comm); /* SMPs never return */
  if (rc != FT_OK) {
    if (launcher_rank0())
      fprintf(stderr, "ft-bench-mpi: ft_init: %s\n", ft_strerror(rc));
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &b.world_rank);
  MPI_Comm_rank(b.comm, &b.rank);
  MPI_Comm_size(b.comm, &b.size);
  rc = run(&b);
  int fin = ft_finalize(b.ctx);
  if (fin != FT_OK && b.rank == 0)
    fprintf(stderr, "ft-bench-mpi: ft_finalize: %s\n", ft_strerror(fin));
  fb_encoder_free(&b.enc);
  fb_encoder_free(&b.enc_cl);
  free(b.state);
  free(b.dst);
  for (int i = 0; i < FT_NSLOTS; i++)
    if (b.slot[i].map)
      ft__slot_close(&b.slot[i]);
  if (b.ctl)
    ft__ctl_detach(b.ctl);
  return rc == FT_OK && fin == FT_OK ? 0 : 1;
}
