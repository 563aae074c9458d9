/*
 * Many registered buffers (issue 14.7): a model registers one buffer per
 * parameter tensor and two per tensor for Adam's state, which passed the
 * 256 buffers a rank that ftrt allowed before.  `many-bufs write STEP N`
 * registers N private buffers of different sizes, fills each with a
 * pattern of (rank, buffer, byte), snapshots at STEP and waits for the
 * commit.  `many-bufs read STEP N` registers the same N buffers, calls
 * ft_restore and checks every byte (new rank r holds old rank r's private
 * buffers, also after a shrink); exit 0 only if every registration, the
 * restore, the step and every byte are right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrt.h"

static size_t size_of(int i) { return 1 + (size_t)(i * 37 % 509); }

static unsigned char pattern(int rank, int buf, size_t off) {
  uint64_t x = ((uint64_t)rank << 40 | (uint64_t)buf << 20 | off) *
               0x9E3779B97F4A7C15ull;
  return (unsigned char)(x >> 56);
}

int main(int argc, char **argv) {
  ft_ctx_t *ctx;
  MPI_Comm comm;
  if (argc != 4 || ft_init(&argc, &argv, &ctx, &comm) != FT_OK)
    return 2;
  int rank, w, n = atoi(argv[3]), write = strcmp(argv[1], "write") == 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &w);
  uint64_t step = strtoull(argv[2], NULL, 10), got_step = 0;
  unsigned char **b = calloc((size_t)n, sizeof(*b));
  int rc = b ? FT_OK : FT_ENOMEM, bad = 0;
  for (int i = 0; rc == FT_OK && i < n; i++) {
    char name[32];
    snprintf(name, sizeof(name), "layer%04d.%s", i / 3,
             i % 3 == 0 ? "weight" : i % 3 == 1 ? "exp_avg" : "exp_avg_sq");
    if (!(b[i] = malloc(size_of(i)))) {
      rc = FT_ENOMEM;
      break;
    }
    for (size_t j = 0; j < size_of(i); j++)
      b[i][j] = write ? pattern(rank, i, j) : 0;
    rc = ft_register(ctx, name, b[i], size_of(i), NULL);
    if (rc)
      fprintf(stderr, "many-bufs: rank %d: ft_register of buffer %d: %s\n",
              rank, i, ft_err_name(rc));
  }
  if (rc == FT_OK && write) {
    rc = ft_snapshot(ctx, step);
    if (rc == FT_OK)
      rc = ft_wait_committed(ctx, NULL);
  } else if (rc == FT_OK) {
    rc = ft_restore(ctx, &got_step);
    for (int i = 0; rc == FT_OK && i < n; i++)
      for (size_t j = 0; j < size_of(i); j++)
        bad += b[i][j] != pattern(rank, i, j);
    if (rc == FT_OK && got_step != step)
      bad++;
  }
  int all_bad = 0, worst = rc;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, comm);
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0)
    printf("many-bufs %s: %d ranks of %d buffers, status %s, %d wrong bytes, "
           "step %llu\n",
           argv[1], w, n, ft_err_name(worst), all_bad,
           (unsigned long long)got_step);
  ft_finalize(ctx);
  for (int i = 0; b && i < n; i++)
    free(b[i]);
  free(b);
  return worst != FT_OK || all_bad ? 1 : 0;
}
