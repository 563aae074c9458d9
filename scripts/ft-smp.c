/*
 * ft-smp: a node's Snapshot Management Process as a program of its own,
 * started beside the trainers (MPMD: ft-launch --smp ft-smp puts one on
 * each node, before the node's trainers).  Its ft_init makes it its node's
 * SMP; it serves until the node's trainers finalize, then exits.  The
 * trainers then run only the training program, which calls ft_init (or
 * ftrt.init()) where it likes: after importing torch, after reading its
 * data.  Nothing of the training program runs in the SMP.
 */
#include <stdio.h>
#include <string.h>

#include "ftrt.h"
#include "runtime/smp.h"

static const char usage[] =
    "usage: ft-smp\n"
    "A node's SMP, started by the launcher beside the trainers: ft-launch\n"
    "--smp ft-smp runs one on each node.  Takes its settings from the FT_\n"
    "variables, as ft_init does.  Exits 0 when the node's trainers have\n"
    "finalized, 1 when ft_init or the SMP failed (the reason on stderr).\n"
    "  --help  this text\n"
    "See ft-smp(1).\n";

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    fprintf(stderr, "ft-smp: %s: unknown argument (it takes none)\n%s",
            argv[i], usage);
    return 2;
  }
  ft_ctx_t *ctx = NULL;
  MPI_Comm app = MPI_COMM_NULL;
  /* Returns only when ft_init failed: every rank was told why (logged
   * once by the lowest rank that knew it). */
  int rc = ft__init_as(&argc, &argv, &ctx, &app, FT__ROLE_SMP);
  fprintf(stderr, "ft-smp: ft_init: %s\n", ft_strerror(rc));
  return 1;
}
