/* The rebuild of a recovery inside the relaunch (runtime/recover.c). */
#ifndef FT_RUNTIME_RECOVER_H
#define FT_RUNTIME_RECOVER_H

#include <mpi.h>
#include <stddef.h>

#include "runtime/config.h"
#include "runtime/log.h"
#include "snapshot/store.h"

typedef struct ft__rebuild_args {
  MPI_Comm comm;            /* the SMPs of the relaunch, one a node */
  const ft__config_t *cfg;  /* cfg->rebuild: 1 replace, 2 shrink */
  const ft__dir_t *dir;     /* this node's store, open and locked */
  const char *host;
  ft__log_t *log;
} ft__rebuild_args_t;

/* ft-restore's engine over a->comm, in a->cfg->rebuild's mode, on the
 * store a->dir (a spare's is empty).  Rank 0 prints ft-restore's lines and
 * summary.  Collective; the same status on every rank: FT_OK rebuilt (or
 * nothing to rebuild), else the engine's (nothing changed where it refused)
 * with one line in msg. */
int ft__rebuild_in_job(const ft__rebuild_args_t *a, char *msg, size_t msglen);

#endif
