/*
 * ft-train-example: the example trainer of ftrt, and what a user copies from.
 *
 * Data-parallel training of an MLP (mlp.h) on synthetic data (data.h), Adam
 * with its moments sharded across ranks, ZeRO-1 (adam.h).  One step:
 *
 *   batch of (seed, rank, step) -> forward/backward -> reduce-scatter of the
 *   gradient -> ft_fence -> Adam on the owned slice -> allgather of the
 *   parameters -> every K steps ft_snapshot(step)
 *
 * What a rank registers (backend.h is the one file that calls ftrt):
 *
 *   params       PARAM  the whole replicated parameter vector, private
 *   adam.m       OPTIM  this rank's slice of the global m vector (n floats):
 *   adam.v       OPTIM  global_offset = slice offset * 4, global_bytes = n * 4
 *   rng.dropout  RNG    this rank's dropout generator (xoshiro256**), private
 *   step         OTHER  the last completed step, private
 *   meta         OTHER  the flags a resumed run must share, checked on resume
 *
 * Lazy capture: after ft_snapshot the runtime may still be copying registered
 * buffers until ft_fence.  Forward and backward therefore touch no registered
 * buffer: dropout draws from a copy of the registered RNG state, written back
 * after the fence together with the optimizer update and the step counter.
 *
 * Shrink restore (fewer ranks than the snapshot): the runtime re-slices m and
 * v by their global offsets; params are replicated, so any old rank's copy
 * serves; the dropout RNG is private and per rank: new rank r continues the
 * RNG state of old rank r, and the states of the ranks that are gone are
 * dropped.  Data shards follow the new rank numbers.  The run continues
 * correctly (the loss keeps going down) but is not bitwise comparable with
 * one on the old rank count, whose reduction order differs anyway.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/adam.h"
#include "examples/backend.h"
#include "examples/data.h"
#include "examples/digest.h"
#include "examples/mlp.h"
#include "examples/options.h"
#include "examples/rng.h"

#define META_MAGIC 0x316e696172747466ULL /* "fttrain1" */

/* The flags that decide the trajectory; a resumed run must share them. */
typedef struct train_meta {
  uint64_t magic, seed, hidden, batch, lr_bits, dropout_bits;
} train_meta_t;

typedef struct trainer {
  options_t opt;
  backend_t be;
  mlp_shape_t shape;
  teacher_t teacher;
  mlp_work_t work;
  adam_t adam;
  float *params, *grad, *x;
  int *labels;
  rng_t rng;         /* registered: dropout state after the last step */
  uint64_t step;     /* registered: the last completed step */
  train_meta_t meta; /* registered */
  double loss;       /* global mean loss of the last step, on rank 0 */
} trainer_t;

/* Every rank's status to every rank: the worst (lowest) one. */
static int agree(MPI_Comm comm, int status) {
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MIN, comm);
  return status;
}

/* Before MPI exists: is this process rank 0 of its launcher (or alone)?
 * Only that one prints usage errors and the help. */
static int launcher_rank0(void) {
  const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (v)
      return strcmp(v, "0") == 0;
  }
  return 1;
}

static void fill_meta(const trainer_t *t, train_meta_t *m) {
  memset(m, 0, sizeof *m);
  m->magic = META_MAGIC;
  m->seed = t->opt.seed;
  m->hidden = (uint64_t)t->shape.hidden;
  m->batch = (uint64_t)t->opt.batch;
  memcpy(&m->lr_bits, &t->opt.lr, sizeof m->lr_bits);
  memcpy(&m->dropout_bits, &t->opt.dropout, sizeof m->dropout_bits);
}

static int hidden_width(const options_t *o) {
  /* M MiB at 2 ranks: 4 bytes of parameter + 2 x 4 / 2 bytes of moments
   * per parameter, so M MiB / 8 parameters. */
  return o->hidden ? o->hidden
                   : mlp_hidden_for_params(o->state_mb * 1048576.0 / 8.0);
}

/* Allocate and initialise the fresh state; 0 or -1 (out of memory). */
static int trainer_alloc(trainer_t *t) {
  size_t n;
  mlp_shape(&t->shape, hidden_width(&t->opt));
  n = t->shape.n_params;
  if (n < (size_t)t->be.size ||
      teacher_init(&t->teacher, MLP_IN, MLP_OUT, t->opt.seed) != 0)
    return -1;
  if (mlp_work_init(&t->work, &t->shape, t->opt.batch) != 0 ||
      adam_init(&t->adam, t->be.comm, n, (float)t->opt.lr) != 0)
    return -1;
  t->params = malloc(n * sizeof(float));
  t->grad = malloc(n * sizeof(float));
  t->x = malloc((size_t)t->opt.batch * MLP_IN * sizeof(float));
  t->labels = malloc((size_t)t->opt.batch * sizeof(int));
  if (!t->params || !t->grad || !t->x || !t->labels)
    return -1;
  /* The parameters' initial values are made in trainer_start, only on a
   * fresh start: a resume overwrites every registered byte, and making
   * them (a third of a second for 32 MiB here) would only delay it. */
  rng_seed(&t->rng, t->opt.seed, RNG_DROPOUT, (uint64_t)t->be.rank, 0);
  t->step = 0;
  fill_meta(t, &t->meta);
  return 0;
}

static void trainer_free(trainer_t *t) {
  teacher_free(&t->teacher);
  mlp_work_free(&t->work);
  adam_free(&t->adam);
  free(t->params);
  free(t->grad);
  free(t->x);
  free(t->labels);
}

static int trainer_register(trainer_t *t) {
  backend_t *b = &t->be;
  uint64_t goff = t->adam.off * sizeof(float);
  uint64_t gbytes = t->adam.n * sizeof(float);
  size_t slice = t->adam.cnt * sizeof(float);
  int rc;
  rc = backend_register(b, "params", t->params, t->adam.n * sizeof(float),
                        FT_KIND_PARAM, 0, 0);
  if (rc == FT_OK)
    rc = backend_register(b, "adam.m", t->adam.m, slice, FT_KIND_OPTIM, goff,
                          gbytes);
  if (rc == FT_OK)
    rc = backend_register(b, "adam.v", t->adam.v, slice, FT_KIND_OPTIM, goff,
                          gbytes);
  if (rc == FT_OK)
    rc = backend_register(b, "rng.dropout", &t->rng, sizeof t->rng, FT_KIND_RNG,
                          0, 0);
  if (rc == FT_OK)
    rc = backend_register(b, "step", &t->step, sizeof t->step, FT_KIND_OTHER, 0,
                          0);
  if (rc == FT_OK)
    rc = backend_register(b, "meta", &t->meta, sizeof t->meta, FT_KIND_OTHER, 0,
                          0);
  return rc;
}

static void print_model(const trainer_t *t) {
  size_t bytes = (t->adam.n + 2 * t->adam.cnt) * sizeof(float) + sizeof t->rng +
                 sizeof t->step + sizeof t->meta;
  if (t->be.rank != 0)
    return;
  printf("model 32-%d-%d-10 params %zu ranks %d registered %.2f MiB per rank "
         "(rank 0)%s\n",
         t->shape.hidden, t->shape.hidden, t->shape.n_params, t->be.size,
         (double)bytes / 1048576.0, t->opt.use_ftrt ? "" : ", no ftrt");
}

/* Allocate, initialise and register; every rank returns the same status. */
static int trainer_setup(trainer_t *t) {
  int rc = agree(t->be.comm, trainer_alloc(t) == 0 ? FT_OK : FT_ENOMEM);
  if (rc != FT_OK) {
    if (t->be.rank == 0)
      fprintf(stderr, "ft-train-example: cannot allocate the model: %s\n",
              backend_strerror(rc));
    return rc;
  }
  print_model(t);
  rc = agree(t->be.comm, trainer_register(t));
  if (rc != FT_OK && t->be.rank == 0)
    fprintf(stderr, "ft-train-example: ft_register: %s\n",
            backend_strerror(rc));
  return rc;
}

/* Which flag of this run differs from the snapshot's (all ranks hold the
 * same meta); written by rank 0.  0 when none. */
static int meta_mismatch(const trainer_t *t) {
  const train_meta_t *got = &t->meta;
  train_meta_t want;
  double lr, dropout;
  fill_meta(t, &want);
  if (memcmp(&want, got, sizeof want) == 0)
    return 0;
  if (t->be.rank != 0)
    return 1;
  memcpy(&lr, &got->lr_bits, sizeof lr);
  memcpy(&dropout, &got->dropout_bits, sizeof dropout);
  fputs("ft-train-example: cannot resume: ", stderr);
  if (got->magic != META_MAGIC)
    fputs("the snapshot holds no ft-train-example state\n", stderr);
  else
    fprintf(stderr,
            "the snapshot was taken with --seed %" PRIu64 " --hidden %" PRIu64
            " --batch %" PRIu64 " --lr %g --dropout %g, "
            "this run has --seed %" PRIu64 " --hidden %d --batch %d --lr %g "
            "--dropout %g\n",
            got->seed, got->hidden, got->batch, lr, dropout, t->opt.seed,
            t->shape.hidden, t->opt.batch, t->opt.lr, t->opt.dropout);
  return 1;
}

/* After a restore: the state must be the one these flags would produce. */
static int check_resumed(const trainer_t *t, uint64_t step) {
  if (meta_mismatch(t))
    return FT_EMISMATCH;
  if (t->step != step) {
    if (t->be.rank == 0)
      fprintf(stderr,
              "ft-train-example: restored step counter %" PRIu64
              " is not the snapshot's step %" PRIu64 "\n",
              t->step, step);
    return FT_ECORRUPT;
  }
  return FT_OK;
}

/* ft_restore: a fresh start or a resume; anything else is an error. */
static int trainer_start(trainer_t *t) {
  uint64_t step = 0;
  int rc = backend_restore(&t->be, &step);
  if (rc == FT_ENOSNAPSHOT) {
    mlp_init_params(&t->shape, t->params, t->opt.seed);
    if (t->be.rank == 0)
      printf("fresh start\n");
    return FT_OK;
  }
  if (rc != FT_OK) {
    if (t->be.rank == 0)
      fprintf(stderr, "ft-train-example: ft_restore: %s\n",
              backend_strerror(rc));
    return rc;
  }
  rc = agree(t->be.comm, check_resumed(t, step));
  if (rc == FT_OK && t->be.rank == 0)
    printf("resumed from step %" PRIu64 "\n", step);
  return rc;
}

/* Global mean loss on rank 0: per-rank sums added in rank order. */
static double global_loss(const trainer_t *t, double local) {
  double sum = 0.0, *all = NULL;
  if (t->be.rank == 0 && !(all = malloc((size_t)t->be.size * sizeof *all)))
    abort(); /* W doubles: nothing to recover from */
  MPI_Gather(&local, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, t->be.comm);
  for (int r = 0; t->be.rank == 0 && r < t->be.size; r++)
    sum += all[r];
  free(all);
  return sum / ((double)t->opt.batch * t->be.size);
}

/* One training step s; the state becomes "after step s". */
static int train_step(trainer_t *t, uint64_t s) {
  /* The registered generator stays as captured until ft_fence, unless
   * --rng-in-place: RNG buffers are captured inside ft_snapshot. */
  rng_t dropout = t->rng, *gen = t->opt.rng_in_place ? &t->rng : &dropout;
  float scale = 1.0f / ((float)t->opt.batch * (float)t->be.size);
  double local;
  int rc;
  data_batch(&t->teacher, t->opt.seed, t->be.rank, s, t->opt.batch, t->x,
             t->labels);
  memset(t->grad, 0, t->shape.n_params * sizeof(float));
  local = mlp_train_batch(&t->shape, t->params, t->grad, &t->work, t->x,
                          t->labels, gen, (float)t->opt.dropout, scale);
  adam_reduce_grad(&t->adam, t->grad);
  t->loss = global_loss(t, local);
  rc = agree(t->be.comm, backend_fence(&t->be));
  if (rc != FT_OK)
    return rc;
  t->rng = *gen;
  adam_update(&t->adam, t->params, s);
  adam_allgather(&t->adam, t->params);
  t->step = s;
  return FT_OK;
}

static int maybe_snapshot(trainer_t *t, uint64_t s) {
  int rc;
  if (t->opt.snapshot_every == 0 || s % t->opt.snapshot_every != 0)
    return FT_OK;
  rc = backend_snapshot(&t->be, s);
  if (rc == FT_EBUSY) { /* policy "skip": every rank skipped, nothing lost */
    if (t->be.rank == 0)
      fprintf(stderr,
              "ft-train-example: step %" PRIu64 ": snapshot skipped, "
              "the previous one is still being protected\n",
              s);
    return FT_OK;
  }
  if (rc != FT_OK && t->be.rank == 0)
    fprintf(stderr, "ft-train-example: ft_snapshot at step %" PRIu64 ": %s\n",
            s, backend_strerror(rc));
  return rc;
}

static void print_timing(const trainer_t *t, const char *what, uint64_t steps,
                         double secs) {
  if (t->be.rank == 0 && steps > 0)
    printf("%s %" PRIu64 " steps %.3f s %.3f ms/step\n", what, steps, secs,
           1e3 * secs / (double)steps);
}

static int trainer_loop(trainer_t *t) {
  double t0 = MPI_Wtime(), steady = t0;
  uint64_t first = t->step + 1, skip = t->opt.timing_skip;
  int rc = FT_OK;
  for (uint64_t s = first; s <= t->opt.steps && rc == FT_OK; s++) {
    if (s - first == skip)
      steady = MPI_Wtime();
    rc = train_step(t, s);
    if (rc != FT_OK) {
      if (t->be.rank == 0)
        fprintf(stderr, "ft-train-example: ft_fence: %s\n",
                backend_strerror(rc));
      return rc;
    }
    if (t->be.rank == 0)
      printf("step %" PRIu64 " loss %.6f\n", s, t->loss);
    rc = maybe_snapshot(t, s);
  }
  if (rc == FT_OK && t->opt.steps >= first) {
    double end = MPI_Wtime();
    uint64_t n = t->opt.steps - first + 1;
    print_timing(t, "time", n, end - t0);
    if (skip && n > skip)
      print_timing(t, "steady", n - skip, end - steady);
  }
  return rc;
}

static int trainer_report(trainer_t *t) {
  digest_part_t p = {t->params,   t->adam.n, t->adam.m,     t->adam.v,
                     t->adam.cnt, &t->rng,   sizeof t->rng, t->step};
  uint64_t digest = 0;
  int rc = digest_state(t->be.comm, &p, &digest);
  if (t->be.rank != 0)
    return rc == 0 ? FT_OK : FT_ECORRUPT;
  if (rc == 0)
    printf("digest %016" PRIx64 "\n", digest);
  else if (rc > 0)
    fprintf(stderr, "ft-train-example: the ranks do not hold the same "
                    "parameters and step: no digest\n");
  else
    fprintf(stderr, "ft-train-example: out of memory for the digest\n");
  return rc == 0 ? FT_OK : rc > 0 ? FT_ECORRUPT : FT_ENOMEM;
}

int main(int argc, char **argv) {
  trainer_t t;
  int rc, fin;
  memset(&t, 0, sizeof t);
  setvbuf(stdout, NULL, _IOLBF, 0);
  rc = options_parse(&t.opt, argc, argv, stdout, stderr, !launcher_rank0());
  if (rc != OPTIONS_RUN)
    return rc == OPTIONS_HELP ? 0 : 2;
  rc = backend_init(&t.be, t.opt.use_ftrt, &argc, &argv);
  if (rc != FT_OK) {
    if (launcher_rank0())
      fprintf(stderr, "ft-train-example: %s: %s\n",
              t.opt.use_ftrt ? "ft_init" : "MPI_Init", backend_strerror(rc));
    return 1;
  }
  rc = trainer_setup(&t);
  if (rc == FT_OK)
    rc = trainer_start(&t);
  if (rc == FT_OK)
    rc = trainer_loop(&t);
  if (rc == FT_OK)
    rc = trainer_report(&t);
  /* Registered memory must outlive ft_finalize: a lazy capture may still be
   * reading it. */
  fin = backend_finalize(&t.be);
  trainer_free(&t);
  if (fin != FT_OK && rc == FT_OK)
    fprintf(stderr, "ft-train-example: finalize: %s\n", backend_strerror(fin));
  return rc == FT_OK && fin == FT_OK ? 0 : 1;
}
