/*
 * FT_SNAPSHOT_POLICY: a snapshot asked while the previous one is still being
 * protected.  64 MiB per trainer; ft_snapshot twice in a row: with "skip"
 * the second returns FT_EBUSY on every rank (and ft-status counts it), with
 * "block" it waits and succeeds.  Then the newest committed version is whole:
 * the program restores it and checks every byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrt.h"

#define N (64u << 20)

int main(int argc, char **argv) {
  ft_ctx_t *ctx;
  MPI_Comm comm;
  if (ft_init(&argc, &argv, &ctx, &comm) != FT_OK)
    return 1;
  int rank;
  MPI_Comm_rank(comm, &rank);
  unsigned char *buf = malloc(N);
  ft_register(ctx, "state", buf, N, NULL);
  memset(buf, 1, N);
  int first = ft_snapshot(ctx, 1);
  memset(buf, 2, N); /* sync capture: the first copy has ended */
  int second = ft_snapshot(ctx, 2);
  uint64_t v = 0, step = 0;
  int wait = ft_wait_committed(ctx, &v);
  memset(buf, 0, N);
  int rest = ft_restore(ctx, &step);
  int bad = 0;
  for (size_t i = 0; i < N; i++)
    bad += buf[i] != (step == 2 ? 2 : 1);
  printf("policy-check rank %d: first %s second %s wait %s version %llu "
         "restore %s step %llu wrong %d\n",
         rank, ft_err_name(first), ft_err_name(second), ft_err_name(wait),
         (unsigned long long)v, ft_err_name(rest), (unsigned long long)step,
         bad);
  ft_finalize(ctx);
  free(buf);
  return 0;
}
