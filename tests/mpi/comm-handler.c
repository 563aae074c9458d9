/*
 * An application's error handler on MPI_COMM_WORLD is kept by ft_init, on
 * MPI_COMM_WORLD and on app_comm (mpi4py sets MPI_ERRORS_RETURN: a failed
 * call raises instead of ending the job).  ft_init makes its own splits
 * with errors fatal, and app_comm was split while they were:
 * each rank checks both handlers and that a send to a rank app_comm lacks
 * returns MPI_ERR_RANK.  Prints "comm-handler: ok" on every trainer, or
 * what it found; exits 1 when a check failed.
 */
#include <stdio.h>

#include "ftrt.h"

static int is_return(MPI_Comm comm) {
  MPI_Errhandler h;
  MPI_Comm_get_errhandler(comm, &h);
  int same = h == MPI_ERRORS_RETURN;
  MPI_Errhandler_free(&h);
  return same;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ft_ctx_t *ctx;
  MPI_Comm comm;
  int rc = ft_init(&argc, &argv, &ctx, &comm);
  if (rc != FT_OK) {
    printf("comm-handler: ft_init: %s\n", ft_err_name(rc));
    MPI_Finalize();
    return 1;
  }
  int size, bad = 0;
  MPI_Comm_size(comm, &size);
  int world = is_return(MPI_COMM_WORLD), app = is_return(comm);
  int x = 0, err = MPI_Send(&x, 1, MPI_INT, size, 0, comm), cls = -1;
  MPI_Error_class(err, &cls);
  if (!world || !app || cls != MPI_ERR_RANK) {
    printf("comm-handler: MPI_COMM_WORLD's handler %s, app_comm's %s, a "
           "send to rank %d: error class %d\n",
           world ? "kept" : "changed", app ? "kept" : "changed", size, cls);
    bad = 1;
  } else
    printf("comm-handler: ok\n");
  ft_finalize(ctx);
  MPI_Finalize();
  return bad;
}
