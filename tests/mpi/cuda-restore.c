/*
 * The CUDA path through the whole API, on one node (1 SMP + 2 trainers):
 * each trainer registers a device buffer, a second device buffer captured
 * after work on its own stream, and a host buffer (mixed memory in one
 * rank); snapshots in the mode of FT_CAPTURE while a kernel-free stream
 * keeps rewriting OTHER device memory; then zeroes everything, restores and
 * checks every byte.  Exit 77 (skip) without a CUDA device.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrt.h"

#define N (8u << 20)

static unsigned char pat(int rank, int which, size_t i) {
  return (unsigned char)((i * 131u + (size_t)which * 7u + (size_t)rank * 29u) >>
                         3);
}

static int check(const unsigned char *h, int rank, int which, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (h[i] != pat(rank, which, i))
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "cuda-restore: no CUDA device: skipping\n");
    return 77;
  }
  ft_ctx_t *ctx;
  MPI_Comm comm;
  if (ft_init(&argc, &argv, &ctx, &comm) != FT_OK)
    return 1;
  int rank;
  MPI_Comm_rank(comm, &rank);
  unsigned char *host = malloc(N), *tmp = malloc(N), *d0, *d1, *other;
  cudaStream_t user, busy;
  cudaStreamCreate(&user);
  cudaStreamCreate(&busy);
  cudaMalloc((void **)&d0, N);
  cudaMalloc((void **)&d1, N);
  cudaMalloc((void **)&other, N);
  for (size_t i = 0; i < N; i++)
    tmp[i] = pat(rank, 0, i), host[i] = pat(rank, 2, i);
  cudaMemcpy(d0, tmp, N, cudaMemcpyHostToDevice);
  for (size_t i = 0; i < N; i++)
    tmp[i] = pat(rank, 1, i);
  /* d1 gets its bytes on the user stream: the capture must be ordered after. */
  cudaMemcpyAsync(d1, tmp, N, cudaMemcpyHostToDevice, user);
  ft_buf_opts_t dev = {.kind = FT_KIND_PARAM, .memory = FT_MEM_CUDA};
  ft_buf_opts_t dev_user = dev;
  dev_user.cuda_stream = user;
  const char *at = "ft_register dev0";
  int rc = ft_register(ctx, "dev0", d0, N, &dev);
  if (rc == FT_OK && (at = "ft_register dev1"))
    rc = ft_register(ctx, "dev1", d1, N, &dev_user);
  if (rc == FT_OK && (at = "ft_register host"))
    rc = ft_register(ctx, "host", host, N, NULL);
  if (rc == FT_OK && (at = "ft_snapshot"))
    rc = ft_snapshot(ctx, 5);
  for (int i = 0; i < 8 && rc == FT_OK; i++) /* other memory keeps changing */
    cudaMemsetAsync(other, i, N, busy);
  if (rc == FT_OK && (at = "ft_fence"))
    rc = ft_fence(ctx);
  if (rc == FT_OK && (at = "ft_wait_committed"))
    rc = ft_wait_committed(ctx, NULL);
  cudaMemset(d0, 0, N);
  cudaMemset(d1, 0, N);
  cudaDeviceSynchronize(); /* ftrt's restore copies on a stream of its own */
  memset(host, 0, N);
  uint64_t step = 0;
  if (rc == FT_OK && (at = "ft_restore"))
    rc = ft_restore(ctx, &step);
  if (rc != FT_OK)
    fprintf(stderr, "cuda-restore rank %d: %s failed: %s\n", rank, at,
            ft_err_name(rc));
  int bad = rc != FT_OK || step != 5;
  cudaMemcpy(tmp, d0, N, cudaMemcpyDeviceToHost);
  bad |= check(tmp, rank, 0, N);
  cudaMemcpy(tmp, d1, N, cudaMemcpyDeviceToHost);
  bad |= check(tmp, rank, 1, N) << 1;
  bad |= check(host, rank, 2, N) << 2;
  printf(
      "cuda-restore rank %d: %s, step %llu, device0 %s, device1 %s, host %s\n",
      rank, ft_err_name(rc), (unsigned long long)step,
      bad & 1 ? "WRONG" : "exact", bad & 2 ? "WRONG" : "exact",
      bad & 4 ? "WRONG" : "exact");
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_BOR, comm);
  ft_finalize(ctx);
  return any ? 1 : 0;
}
