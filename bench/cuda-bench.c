/*
 * ft-bench-cuda: the snapshot stall of GPU-resident state against a plain
 * cudaMemcpyAsync of the same bytes into pinned host memory (issue 18,
 * item 4a).  Run under mpirun as 1 trainer + its SMP (or more trainers, one
 * GPU each, round robin), normally by scripts/ft-bench.
 *
 * Each trainer allocates --state-mb MiB on its GPU in --bufs device buffers
 * (random bytes), registers them as FT_MEM_CUDA on a stream of its own, and
 * takes --warmup untimed snapshots (both store slots are then mapped and
 * pinned).  Then, for each repetition, the first and last 8 bytes of every
 * buffer get the repetition's stamp (untimed), and, alternating which goes
 * first:
 *   - plain: one cudaMemcpyAsync per buffer into a cudaHostAlloc'ed buffer
 *     of the same bytes (warm), on the same stream, then
 *     cudaStreamSynchronize: the same bytes in the same number of copies;
 *   - ftrt: ft_snapshot, then (lazy capture) a host compute loop of known
 *     length, then ft_fence: the stall is the time snapshot and fence block;
 *     then ft_wait_committed, untimed (the next snapshot does not wait for
 *     this one's protection inside its own time).
 * Each part's time is the slowest trainer's.  After the last repetition
 * every device buffer is zeroed, ft_restore loads the last snapshot, and
 * every byte is compared with what was snapshotted (the last stamps too: a
 * snapshot that skipped a buffer shows): a figure from a run that restores
 * wrong bytes is not printed.
 *
 * Rank 0 prints '# ...' comments and 'result KEY VALUE' lines; the ratio
 * cuda_stall_ratio is the median over repetitions of plain / stall (1.0:
 * the snapshot blocks exactly as long as the copy alone).
 * Exit status: 0 done, 1 a run failed or restored wrong bytes, 2 usage,
 * 77 no CUDA device.
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/baseline.h"
#include "ftrt.h"

#define MAX_REPS 1000
#define MAX_BUFS 4096

typedef struct opts {
  double state_mb, compute_ms;
  int bufs, reps, warmup;
} opts_t;

static void usage(FILE *f) {
  fputs(
      "usage: ft-bench-cuda [--state-mb M] [--bufs B] [--reps R] [--warmup W]\n"
      "                     [--compute-ms C]\n"
      "       ft-bench-cuda --devices\n"
      "  --state-mb M    MiB of device memory per trainer (default 256)\n"
      "  --bufs B        device buffers it is split into (default 16)\n"
      "  --reps R        timed repetitions, 3..1000 (default 21)\n"
      "  --warmup W      untimed snapshots first, >= 2 (default 3)\n"
      "  --compute-ms C  lazy: host compute between snapshot and fence, ms\n"
      "  --devices       no MPI: list the CUDA devices\n"
      "  --help          this text\n"
      "See ft-bench(1).\n",
      f);
}

/* 0: run, 1: --help printed, 2: bad usage, 3: --devices. */
static int parse(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.state_mb = 256, .bufs = 16, .reps = 21, .warmup = 3};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 1;
    }
    if (!strcmp(a, "--devices"))
      return 3;
    if (i + 1 >= argc) {
      fprintf(stderr,
              "ft-bench-cuda: unknown or incomplete option '%s' (see --help)\n",
              a);
      return 2;
    }
    char *end;
    errno = 0;
    double d = strtod(argv[++i], &end);
    if (end == argv[i] || *end || errno) {
      fprintf(stderr, "ft-bench-cuda: bad value '%s' for %s (see --help)\n",
              argv[i], a);
      return 2;
    }
    int whole = d >= 0 && d <= 1e6 && d == (double)(long)d;
    if (!strcmp(a, "--state-mb") && d > 0 && d <= 1 << 20)
      o->state_mb = d;
    else if (!strcmp(a, "--bufs") && whole && d >= 1 && d <= MAX_BUFS)
      o->bufs = (int)d;
    else if (!strcmp(a, "--reps") && whole && d >= 3 && d <= MAX_REPS)
      o->reps = (int)d;
    else if (!strcmp(a, "--warmup") && whole && d >= 2 && d <= 100)
      o->warmup = (int)d;
    else if (!strcmp(a, "--compute-ms") && d >= 0 && d <= 1e6)
      o->compute_ms = d;
    else {
      fprintf(stderr,
              "ft-bench-cuda: bad option or value: %s %s (see --help)\n", a,
              argv[i]);
      return 2;
    }
  }
  if (o->state_mb * 1048576.0 / o->bufs < 4096) {
    fprintf(stderr,
            "ft-bench-cuda: --state-mb %g in %d buffers is under a page a "
            "buffer (see --help)\n",
            o->state_mb, o->bufs);
    return 2;
  }
  return 0;
}

static int cuda_ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return 1;
  fprintf(stderr, "ft-bench-cuda: %s: %s: %s\n", what, cudaGetErrorName(e),
          cudaGetErrorString(e));
  return 0;
}

static double max_all(MPI_Comm comm, double v) {
  double m;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

static volatile uint64_t sink;

/* Host compute of about `seconds`: the trainer's own work while a lazy
 * capture copies. */
static void compute(double seconds) {
  double end = fb_now() + seconds;
  uint64_t x = sink;
  while (fb_now() < end)
    for (int i = 0; i < 1000; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x;
}

typedef struct run {
  opts_t o;
  ft_ctx_t *ctx;
  MPI_Comm comm;
  int rank, lazy;
  cudaStream_t stream;
  size_t each, bytes;
  uint8_t *dev[MAX_BUFS], *pinned, *expect;
  uint64_t step;
} run_t;

/* 1 where any trainer has bad != 0. */
static int any_of(MPI_Comm comm, int bad) {
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
  return any;
}

/* The plain copy; its time (the slowest trainer's) into *t, or 1 where it
 * failed on any trainer. */
static int plain(run_t *r, double *t) {
  MPI_Barrier(r->comm);
  double t0 = fb_now();
  int ok = 1;
  for (int i = 0; i < r->o.bufs && ok; i++)
    ok = cuda_ok(cudaMemcpyAsync(r->pinned + (size_t)i * r->each, r->dev[i],
                                 r->each, cudaMemcpyDeviceToHost, r->stream),
                 "cudaMemcpyAsync");
  ok = ok && cuda_ok(cudaStreamSynchronize(r->stream), "cudaStreamSynchronize");
  *t = max_all(r->comm, fb_now() - t0);
  return any_of(r->comm, !ok);
}

/* A stamp of repetition rep in the first and last 8 bytes of every buffer
 * (on the device and in the expected bytes). */
static int stamp(run_t *r, uint64_t rep) {
  for (int i = 0; i < r->o.bufs; i++) {
    uint64_t v = rep * 0x100000001b3ull + (uint64_t)i;
    size_t ends[2] = {0, r->each - 8};
    for (int e = 0; e < 2; e++) {
      memcpy(r->expect + (size_t)i * r->each + ends[e], &v, 8);
      if (!cuda_ok(
              cudaMemcpy(r->dev[i] + ends[e], &v, 8, cudaMemcpyHostToDevice),
              "cudaMemcpy"))
        return 1;
    }
  }
  /* from pageable memory a cudaMemcpy may return before the bytes land, and
   * the snapshot's copy is not ordered after the legacy stream */
  return !cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* One snapshot; the stall into *stall; 1 where it failed on any trainer. */
static int snap(run_t *r, double compute_s, double *stall) {
  MPI_Barrier(r->comm);
  double t0 = fb_now();
  int rc = ft_snapshot(r->ctx, ++r->step);
  double t1 = fb_now();
  if (rc == FT_OK && compute_s > 0)
    compute(compute_s);
  double t2 = fb_now();
  if (rc == FT_OK)
    rc = ft_fence(r->ctx);
  double t3 = fb_now();
  if (rc == FT_OK)
    rc = ft_wait_committed(r->ctx, NULL);
  *stall = max_all(r->comm, (t1 - t0) + (t3 - t2));
  return any_of(r->comm, rc != FT_OK);
}

static int setup(run_t *r) {
  /* The trainers of this machine take its GPUs in turn: local is the
   * rank among the trainers with this host name (a split by its FNV-1a
   * hash: two hosts of one hash only share a count).  Not
   * MPI_COMM_TYPE_SHARED, which Open MPI 4.1 with an external PMIx gets
   * wrong across hosts (runtime/init.c). */
  int ndev = 0, local = 0, me;
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  uint32_t h = 2166136261u;
  for (const char *p = host; *p; p++)
    h = (h ^ (uint8_t)*p) * 16777619u;
  MPI_Comm node;
  MPI_Comm_rank(r->comm, &me);
  MPI_Comm_split(r->comm, (int)(h & 0x7fffffffu), me, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  if (!cuda_ok(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount") || ndev < 1 ||
      !cuda_ok(cudaSetDevice(local % ndev), "cudaSetDevice") ||
      !cuda_ok(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking),
               "cudaStreamCreate"))
    return 1;
  r->each = ((size_t)(r->o.state_mb * 1048576.0) / (size_t)r->o.bufs + 4095) &
            ~(size_t)4095;
  r->bytes = r->each * (size_t)r->o.bufs;
  if (!cuda_ok(
          cudaHostAlloc((void **)&r->pinned, r->bytes, cudaHostAllocDefault),
          "cudaHostAlloc") ||
      !(r->expect = malloc(r->bytes)))
    return 1;
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(r->rank + 1);
  for (size_t i = 0; i < r->bytes; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    memcpy(r->expect + i, &x, 8);
  }
  ft_buf_opts_t bo = {
      .kind = FT_KIND_PARAM, .memory = FT_MEM_CUDA, .cuda_stream = r->stream};
  for (int i = 0; i < r->o.bufs; i++) {
    char name[32];
    snprintf(name, sizeof name, "dev%d", i);
    if (!cuda_ok(cudaMalloc((void **)&r->dev[i], r->each), "cudaMalloc") ||
        !cuda_ok(cudaMemcpy(r->dev[i], r->expect + (size_t)i * r->each, r->each,
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy"))
      return 1;
    int rc = ft_register(r->ctx, name, r->dev[i], r->each, &bo);
    if (rc != FT_OK) {
      fprintf(stderr, "ft-bench-cuda: ft_register %s: %s\n", name,
              ft_err_name(rc));
      return 1;
    }
  }
  return !cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* Zero the device, restore, compare every byte; 1 where anything failed on
 * any trainer.  Collective. */
static int verify(run_t *r) {
  int bad = 0;
  for (int i = 0; i < r->o.bufs && !bad; i++)
    bad = !cuda_ok(cudaMemset(r->dev[i], 0, r->each), "cudaMemset");
  /* ftrt's restore copies on a stream of its own, not ordered after these */
  if (!bad)
    bad = !cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (any_of(r->comm, bad))
    return 1;
  uint64_t step = 0;
  int rc = ft_restore(r->ctx, &step);
  if (rc != FT_OK || step != r->step)
    fprintf(
        stderr, "ft-bench-cuda: ft_restore: %s, step %llu (expected %llu)\n",
        ft_err_name(rc), (unsigned long long)step, (unsigned long long)r->step);
  if (any_of(r->comm, rc != FT_OK || step != r->step))
    return 1;
  memset(r->pinned, 0xa5, r->bytes);
  double t;
  if (plain(r, &t))
    return 1;
  return any_of(r->comm, memcmp(r->pinned, r->expect, r->bytes) != 0);
}

int main(int argc, char **argv) {
  run_t r = {0};
  int p = parse(argc, argv, &r.o);
  if (p == 1 || p == 2)
    return p == 1 ? 0 : 2;
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    fprintf(stderr, "ft-bench-cuda: no CUDA device (%s): skipping\n",
            e == cudaSuccess ? "none found" : cudaGetErrorName(e));
    return 77;
  }
  if (p == 3) {
    for (int i = 0; i < ndev; i++) {
      struct cudaDeviceProp prop;
      if (cuda_ok(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties"))
        printf("%d %s\n", i, prop.name);
    }
    return 0;
  }
  int rc = ft_init(&argc, &argv, &r.ctx, &r.comm);
  if (rc != FT_OK) {
    fprintf(stderr, "ft-bench-cuda: ft_init: %s\n", ft_err_name(rc));
    return 1;
  }
  MPI_Comm_rank(r.comm, &r.rank);
  const char *cap = getenv("FT_CAPTURE");
  r.lazy = cap && !strcmp(cap, "lazy");
  int any = any_of(r.comm, setup(&r));
  double tp[MAX_REPS], ts[MAX_REPS], ratio[MAX_REPS], st, base = 0;
  /* The baseline's destination is warm too: its pages are mapped and
   * pinned, as the store slots are after the warm-up snapshots. */
  if (!any)
    any = plain(&r, &base);
  for (int i = 0; i < r.o.warmup && !any; i++)
    any = snap(&r, 0, &st);
  double compute_s = 0;
  if (!any && r.lazy && !(any = plain(&r, &base)))
    compute_s = r.o.compute_ms > 0 ? r.o.compute_ms / 1e3 : 4 * base;
  for (int i = 0; i < r.o.reps && !any; i++) {
    int first = i % 2;
    if ((any = any_of(r.comm, stamp(&r, (uint64_t)i + 1))))
      break;
    if (first)
      any = plain(&r, &tp[i]);
    any = any || snap(&r, compute_s, &ts[i]);
    if (!first && !any)
      any = plain(&r, &tp[i]);
    if (!any)
      ratio[i] = tp[i] / ts[i];
  }
  if (!any)
    any = verify(&r);
  if (r.rank == 0 && !any) {
    struct cudaDeviceProp prop;
    int dev = 0;
    cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
      for (char *c = prop.name; *c; c++)
        *c = *c == ' ' ? '_' : *c;
      printf("result cuda_device %s\n", prop.name);
    }
    double mp = fb_median(tp, r.o.reps), ms = fb_median(ts, r.o.reps);
    printf("# %s capture, %.1f MiB in %d device buffers, %d reps, every byte "
           "restored exactly\n",
           r.lazy ? "lazy" : "sync", (double)r.bytes / 1048576.0, r.o.bufs,
           r.o.reps);
    printf("result cuda_bytes %zu\n", r.bytes);
    printf("result cuda_memcpy_s %.6f\nresult cuda_memcpy_gbs %.3f\n", mp,
           (double)r.bytes / mp / 1e9);
    printf("result cuda_stall_s %.6f\nresult cuda_stall_gbs %.3f\n", ms,
           (double)r.bytes / ms / 1e9);
    printf("result cuda_compute_s %.6f\n", compute_s);
    printf("result cuda_stall_ratio %.3f\n", fb_median(ratio, r.o.reps));
  } else if (r.rank == 0) {
    fprintf(stderr,
            "ft-bench-cuda: run failed or restored wrong bytes: no figures\n");
  }
  ft_finalize(r.ctx);
  return any ? 1 : 0;
}
