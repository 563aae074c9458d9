/* ft-restore's driver (recovery/engine.c): the one entry of the tool. */
#ifndef FT_RECOVERY_ENGINE_H
#define FT_RECOVERY_ENGINE_H

#include "recovery/restore.h"

/* Survey, agree, plan, then restore or verify.  Collective over comm.
 * Returns FT_OK, FT_ETOOMANY (exit 3) or another error, the same on every
 * rank; r->msg holds the reason on rank 0. */
int ft__restore_run(ft__restore_t *r);

/* Print the summary (rank 0). */
void ft__restore_report(const ft__restore_t *r, int status);

#endif
