/*
 * Checks re-slicing byte for byte.  `reslice-check write STEP` registers a
 * global tensor of G bytes cut unevenly over the W trainers, plus a private
 * buffer per rank, fills them with a pattern of the global offset (and of
 * the rank for the private one), snapshots at STEP and waits for the commit.
 * `reslice-check read STEP` registers the same tensor cut over the new W,
 * calls ft_restore and checks every byte against the pattern; exit 0 only
 * if the step and every byte match.  While it restores, a receive of the
 * application's own (any source, any tag on the trainers' communicator) is
 * pending: no message of the library may complete it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrt.h"

#define G (3u * 1000u * 1000u + 17u) /* bytes of the global tensor */

static unsigned char pattern(uint64_t off) {
  uint64_t x = off * 0x9E3779B97F4A7C15ull;
  return (unsigned char)(x >> 56);
}

/* Uneven cut: rank r of w gets a share proportional to r + 1. */
static void slice(int r, int w, uint64_t *off, uint64_t *len) {
  uint64_t total = (uint64_t)w * (uint64_t)(w + 1) / 2, before = 0;
  for (int i = 0; i < r; i++)
    before += (uint64_t)(i + 1);
  *off = G * before / total;
  uint64_t end = r == w - 1 ? G : G * (before + (uint64_t)r + 1) / total;
  *len = end - *off;
}

int main(int argc, char **argv) {
  ft_ctx_t *ctx;
  MPI_Comm comm;
  if (argc != 3 || ft_init(&argc, &argv, &ctx, &comm) != FT_OK)
    return 2;
  int rank, w;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &w);
  uint64_t off, len, step = strtoull(argv[2], NULL, 10), got_step = 0;
  slice(rank, w, &off, &len);
  unsigned char *g = malloc(len), priv[4096];
  ft_buf_opts_t o = {
      .kind = FT_KIND_OPTIM, .global_offset = off, .global_bytes = G};
  ft_register(ctx, "tensor", g, len, &o);
  ft_register(ctx, "private", priv, sizeof(priv), NULL);
  int bad = 0, rc;
  if (strcmp(argv[1], "write") == 0) {
    for (uint64_t i = 0; i < len; i++)
      g[i] = pattern(off + i);
    memset(priv, rank + 1, sizeof(priv));
    rc = ft_snapshot(ctx, step);
    if (rc == FT_OK)
      rc = ft_wait_committed(ctx, NULL);
  } else {
    memset(g, 0, len);
    unsigned char mine;
    MPI_Request pending;
    MPI_Irecv(&mine, 1, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &pending);
    rc = ft_restore(ctx, &got_step);
    int cancelled = 0;
    MPI_Cancel(&pending);
    MPI_Status st;
    MPI_Wait(&pending, &st);
    MPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) {
      fprintf(stderr,
              "reslice-check: rank %d: the application's pending receive "
              "took a message of the restore\n",
              rank);
      bad++;
    }
    for (uint64_t i = 0; rc == FT_OK && i < len; i++)
      bad += g[i] != pattern(off + i);
    for (size_t i = 0; rc == FT_OK && i < sizeof(priv); i++)
      bad += priv[i] != (unsigned char)(rank + 1);
    if (rc == FT_OK && got_step != step)
      bad++;
  }
  int all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0)
    printf("reslice-check %s: %d ranks, status %s, %d wrong bytes, step %llu\n",
           argv[1], w, ft_err_name(rc), all_bad, (unsigned long long)got_step);
  ft_finalize(ctx);
  free(g);
  return rc != FT_OK || all_bad ? 1 : 0;
}
