/*
 * FNV-1a 64 (Fowler, Noll, Vo) and the gather of the training state; see
 * digest.h.  Rank 0 receives one rank's slice at a time and hashes it
 * before the next, so it needs one slice of scratch memory, never the
 * whole job's state.
 */
#include "examples/digest.h"

#include <stdlib.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

void fnv1a_init(fnv1a_t *f) { f->h = FNV_OFFSET; }

void fnv1a_update(fnv1a_t *f, const void *data, size_t len) {
  const unsigned char *p = data;
  uint64_t h = f->h;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= FNV_PRIME;
  }
  f->h = h;
}

/* Hash every rank's slice in rank order on rank 0 (collective). */
static void hash_slices(MPI_Comm comm, const float *mine, size_t cnt,
                        const unsigned long long *counts, float *scratch,
                        fnv1a_t *f) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank != 0) {
    MPI_Send(mine, (int)cnt, MPI_FLOAT, 0, 0, comm);
    return;
  }
  fnv1a_update(f, mine, cnt * sizeof(float));
  for (int r = 1; r < size; r++) {
    MPI_Recv(scratch, (int)counts[r], MPI_FLOAT, r, 0, comm, MPI_STATUS_IGNORE);
    fnv1a_update(f, scratch, counts[r] * sizeof(float));
  }
}

/* Every rank's (params hash, step, ok) to every rank, in all (3 x size):
 * 0 when all agree, 1 when they differ, -1 when a rank was not ok. */
static int check_replicas(MPI_Comm comm, const digest_part_t *p, int ok,
                          uint64_t *all) {
  int size, status = 0;
  fnv1a_t f;
  uint64_t mine[3];
  MPI_Comm_size(comm, &size);
  fnv1a_init(&f);
  fnv1a_update(&f, p->params, p->n_params * sizeof(float));
  mine[0] = f.h;
  mine[1] = p->step;
  mine[2] = (uint64_t)ok;
  MPI_Allgather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, comm);
  for (int r = 0; r < size; r++)
    if (!all[3 * r + 2])
      return -1;
  for (int r = 0; r < size && status == 0; r++)
    if (all[3 * r] != all[0] || all[3 * r + 1] != all[1])
      status = 1;
  return status;
}

static void hash_state(MPI_Comm comm, const digest_part_t *p,
                       const unsigned long long *counts, float *scratch,
                       unsigned char *rngs, uint64_t *digest) {
  int size;
  fnv1a_t f;
  MPI_Comm_size(comm, &size);
  fnv1a_init(&f);
  fnv1a_update(&f, p->params, p->n_params * sizeof(float));
  hash_slices(comm, p->m, p->slice, counts, scratch, &f);
  hash_slices(comm, p->v, p->slice, counts, scratch, &f);
  MPI_Gather(p->rng, (int)p->rng_bytes, MPI_BYTE, rngs, (int)p->rng_bytes,
             MPI_BYTE, 0, comm);
  fnv1a_update(&f, rngs, (size_t)size * p->rng_bytes);
  fnv1a_update(&f, &p->step, sizeof p->step);
  *digest = f.h;
}

int digest_state(MPI_Comm comm, const digest_part_t *p, uint64_t *digest) {
  int rank, size, ok, status;
  unsigned long long cnt = p->slice, *counts, max = 0;
  float *scratch = NULL;
  unsigned char *rngs;
  uint64_t *all;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  counts = malloc((size_t)size * sizeof *counts);
  rngs = malloc((size_t)size * p->rng_bytes);
  all = malloc((size_t)size * 3 * sizeof *all);
  ok = counts && rngs && all;
  /* Agree before the first collective that needs these buffers. */
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  status = -1;
  if (ok) {
    MPI_Allgather(&cnt, 1, MPI_UNSIGNED_LONG_LONG, counts, 1,
                  MPI_UNSIGNED_LONG_LONG, comm);
    for (int r = 0; r < size; r++)
      max = counts[r] > max ? counts[r] : max;
    scratch = rank == 0 ? malloc(max * sizeof(float) + 1) : NULL;
    status = check_replicas(comm, p, rank != 0 || scratch != NULL, all);
  }
  if (status == 0)
    hash_state(comm, p, counts, scratch, rngs, digest);
  free(counts);
  free(rngs);
  free(all);
  free(scratch);
  return status;
}
