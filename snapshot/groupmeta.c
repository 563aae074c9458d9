/* group.meta exchange: lengths first, then the bytes (both non-blocking,
 * completed by the caller's wait function). */
#include "snapshot/groupmeta.h"

#include <stdlib.h>

#include "ftrt.h"

static int gather_lens(MPI_Comm gc, int mine, int *lens, ft__wait_fn wait,
                       void *arg) {
  MPI_Request req;
  if (MPI_Iallgather(&mine, 1, MPI_INT, lens, 1, MPI_INT, gc, &req) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return wait(arg, &req);
}

static int write_table(const char *dir, const uint8_t *all, const int *lens,
                       const int *displs, int n, char *msg, size_t msglen) {
  const uint8_t *parts[FT_MAX_CHUNKS];
  size_t plens[FT_MAX_CHUNKS];
  for (int i = 0; i < n; i++) {
    if (lens[i] <= 0)
      return FT_OK; /* a member had nothing: no incomplete table */
    parts[i] = all + displs[i];
    plens[i] = (size_t)lens[i];
  }
  return ft__group_meta_write(dir, parts, plens, n, msg, msglen);
}

int ft__group_meta_share(MPI_Comm gc, const ft__meta_t *m, const char *dir,
                         ft__wait_fn wait, void *arg, char *msg,
                         size_t msglen) {
  uint8_t *mine = NULL, *all = NULL;
  size_t len = 0;
  int n, rc = m ? ft__meta_encode(m, &mine, &len) : FT_OK;
  MPI_Comm_size(gc, &n);
  int *lens = calloc((size_t)n, sizeof(int)), *displs = calloc((size_t)n, sizeof(int));
  int arc = lens && displs && n <= FT_MAX_CHUNKS ? FT_OK : FT_ENOMEM;
  if (arc == FT_OK)
    arc = gather_lens(gc, rc == FT_OK ? (int)len : 0, lens, wait, arg);
  size_t total = 0;
  for (int i = 0; arc == FT_OK && i < n; i++) {
    displs[i] = (int)total;
    total += (size_t)lens[i];
  }
  if (arc == FT_OK && !(all = malloc(total + 1)))
    arc = FT_ENOMEM;
  MPI_Request req;
  if (arc == FT_OK &&
      MPI_Iallgatherv(mine, rc == FT_OK ? (int)len : 0, MPI_BYTE, all, lens,
                      displs, MPI_BYTE, gc, &req) == MPI_SUCCESS)
    arc = wait(arg, &req);
  if (rc == FT_OK && arc == FT_OK)
    rc = write_table(dir, all, lens, displs, n, msg, msglen);
  free(mine), free(all), free(lens), free(displs);
  return rc ? rc : arc;
}
