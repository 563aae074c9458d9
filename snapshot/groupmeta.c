/* group.meta exchange: lengths first, then whether every member could
 * allocate room for the table, then the bytes (all non-blocking, completed
 * by the caller's wait function).  A member out of memory still takes part
 * in every collective it has room for, so that nobody waits for it. */
#include "snapshot/groupmeta.h"

#include <limits.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ftrt.h"

static int gather_lens(MPI_Comm gc, int mine, int *lens, ft__wait_fn wait,
                       void *arg) {
  MPI_Request req;
  if (MPI_Iallgather(&mine, 1, MPI_INT, lens, 1, MPI_INT, gc, &req) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return wait(arg, &req);
}

/* Collective: FT_OK when every member says ok, else FT_ENOMEM here and
 * FT_EPEER on the others. */
static int all_ok(MPI_Comm gc, int ok, ft__wait_fn wait, void *arg) {
  int all = 0, rc;
  MPI_Request req;
  if (MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, gc, &req) != MPI_SUCCESS)
    return FT_EMPI;
  if ((rc = wait(arg, &req)))
    return rc;
  return all ? FT_OK : ok ? FT_EPEER : FT_ENOMEM;
}

static int write_table(const ft__dir_t *dir, const char *name,
                       const uint8_t *all, const int *lens, const int *displs,
                       int n, char *msg, size_t msglen) {
  const uint8_t *parts[FT_MAX_CHUNKS];
  size_t plens[FT_MAX_CHUNKS];
  for (int i = 0; i < n; i++) {
    if (lens[i] <= 0)
      return FT_OK; /* a member had nothing: no incomplete table */
    parts[i] = all + displs[i];
    plens[i] = (size_t)lens[i];
  }
  return ft__group_meta_write(dir, name, parts, plens, n, msg, msglen);
}

int ft__group_meta_share(MPI_Comm gc, const ft__meta_t *m,
                         const ft__dir_t *dir, const char *name,
                         ft__wait_fn wait, void *arg, char *msg,
                         size_t msglen) {
  uint8_t *mine = NULL, *all = NULL;
  size_t len = 0;
  int n, lens[FT_MAX_CHUNKS], displs[FT_MAX_CHUNKS];
  MPI_Comm_size(gc, &n);
  if (n > FT_MAX_CHUNKS) /* the same on every member: nobody goes on */
    return FT_EINVAL;
  int rc = m ? ft__meta_encode(m, &mine, &len) : FT_OK;
  int arc = gather_lens(gc, rc == FT_OK ? (int)len : 0, lens, wait, arg);
  size_t total = 0;
  for (int i = 0; arc == FT_OK && i < n; i++) {
    displs[i] = (int)total;
    total += (size_t)lens[i];
  }
  /* Every member sees the same lengths: all refuse a table MPI's int
   * displacements cannot address, before anyone allocates or sends. */
  if (arc == FT_OK && total > INT_MAX)
    arc = ft__msgf(FT_ERANGE, msg, msglen,
                   "%s/%s: the group's metadata comes to %zu bytes, more "
                   "than one table can hold (2 GiB): fewer buffers a rank "
                   "or smaller groups (FT_EC_K, FT_EC_M)",
                   dir->path, name, total);
  if (arc == FT_OK) {
    all = ft__malloc(total);
    arc = all_ok(gc, all != NULL, wait, arg);
    if (arc == FT_ENOMEM || arc == FT_EPEER)
      ft__msgf(arc, msg, msglen,
               "%s/%s: %s of the group is out of memory for the "
               "%zu-byte table",
               dir->path, name,
               arc == FT_ENOMEM ? "this member" : "another member", total);
  }
  MPI_Request req;
  if (arc == FT_OK)
    arc = MPI_Iallgatherv(mine, rc == FT_OK ? (int)len : 0, MPI_BYTE, all, lens,
                          displs, MPI_BYTE, gc, &req) == MPI_SUCCESS
              ? wait(arg, &req)
              : FT_EMPI;
  if (rc == FT_OK && arc == FT_OK)
    rc = write_table(dir, name, all, lens, displs, n, msg, msglen);
  ft__free(mine), ft__free(all);
  return rc ? rc : arc;
}
