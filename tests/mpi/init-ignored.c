/*
 * A program that goes on when ft_init fails, as some do (training without
 * fault tolerance rather than not at all): it says so and exits 0.  Used by
 * rebuild-refused.sh: under FT_REBUILD (a relaunch of ft-launch --restarts)
 * the job must still end with a failure when the rebuild was refused, or
 * ft-launch would take the relaunch for a success and never run ft-restore.
 */
#include <stdio.h>

#include "ftrt.h"

int main(int argc, char **argv) {
  ft_ctx_t *ctx;
  MPI_Comm comm;
  int rc = ft_init(&argc, &argv, &ctx, &comm);
  printf("ft_init: %s; going on\n", ft_err_name(rc));
  if (rc == FT_OK)
    ft_finalize(ctx);
  return 0;
}
