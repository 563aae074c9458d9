/*
 * ZeRO-1 Adam; see adam.h.
 */
#include "examples/adam.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void adam_slice(size_t n, int size, int r, size_t *off, size_t *cnt) {
  size_t base = n / (size_t)size, rem = n % (size_t)size, ur = (size_t)r;
  *cnt = base + (ur < rem ? 1 : 0);
  *off = ur * base + (ur < rem ? ur : rem);
}

static int alloc_all(adam_t *a) {
  a->counts = malloc((size_t)a->size * sizeof *a->counts);
  a->displs = malloc((size_t)a->size * sizeof *a->displs);
  a->rcounts = malloc((size_t)a->size * sizeof *a->rcounts);
  a->rdispls = malloc((size_t)a->size * sizeof *a->rdispls);
  a->m = calloc(a->cnt ? a->cnt : 1, sizeof(float));
  a->v = calloc(a->cnt ? a->cnt : 1, sizeof(float));
  a->gsum = malloc((a->cnt ? a->cnt : 1) * sizeof(float));
  a->recv = malloc(((size_t)a->size * a->cnt + 1) * sizeof(float));
  return a->counts && a->displs && a->rcounts && a->rdispls && a->m && a->v &&
                 a->gsum && a->recv
             ? 0
             : -1;
}

int adam_init(adam_t *a, MPI_Comm comm, size_t n, float lr) {
  memset(a, 0, sizeof *a);
  a->comm = comm;
  MPI_Comm_rank(comm, &a->rank);
  MPI_Comm_size(comm, &a->size);
  a->n = n;
  a->lr = lr;
  a->beta1 = 0.9f;
  a->beta2 = 0.999f;
  a->eps = 1e-8f;
  if (n > INT_MAX || (size_t)a->size * (n / (size_t)a->size + 1) > INT_MAX)
    return -1;
  adam_slice(n, a->size, a->rank, &a->off, &a->cnt);
  if (alloc_all(a) != 0) {
    adam_free(a);
    return -1;
  }
  for (int r = 0; r < a->size; r++) {
    size_t off, cnt;
    adam_slice(n, a->size, r, &off, &cnt);
    a->counts[r] = (int)cnt;
    a->displs[r] = (int)off;
    a->rcounts[r] = (int)a->cnt;
    a->rdispls[r] = r * (int)a->cnt;
  }
  return 0;
}

void adam_free(adam_t *a) {
  free(a->counts);
  free(a->displs);
  free(a->rcounts);
  free(a->rdispls);
  free(a->m);
  free(a->v);
  free(a->gsum);
  free(a->recv);
  a->counts = a->displs = a->rcounts = a->rdispls = NULL;
  a->m = a->v = a->gsum = a->recv = NULL;
}

void adam_reduce_grad(adam_t *a, const float *grad) {
  MPI_Alltoallv(grad, a->counts, a->displs, MPI_FLOAT, a->recv, a->rcounts,
                a->rdispls, MPI_FLOAT, a->comm);
  memcpy(a->gsum, a->recv, a->cnt * sizeof(float));
  for (int r = 1; r < a->size; r++) {
    const float *piece = a->recv + (size_t)r * a->cnt;
    for (size_t i = 0; i < a->cnt; i++)
      a->gsum[i] += piece[i];
  }
}

void adam_update(adam_t *a, float *params, uint64_t t) {
  /* Bias corrections in double once per step, the element loop in float. */
  float c1 = (float)(1.0 / (1.0 - pow(a->beta1, (double)t)));
  float c2 = (float)(1.0 / (1.0 - pow(a->beta2, (double)t)));
  float b1 = a->beta1, b2 = a->beta2, lr = a->lr, eps = a->eps;
  float *p = params + a->off;
  for (size_t i = 0; i < a->cnt; i++) {
    float g = a->gsum[i];
    a->m[i] = b1 * a->m[i] + (1.0f - b1) * g;
    a->v[i] = b2 * a->v[i] + (1.0f - b2) * g * g;
    p[i] -= lr * (a->m[i] * c1) / (sqrtf(a->v[i] * c2) + eps);
  }
}

void adam_allgather(adam_t *a, float *params) {
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, params, a->counts,
                 a->displs, MPI_FLOAT, a->comm);
}
