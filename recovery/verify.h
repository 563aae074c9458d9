/* The offline checker of ft-restore --verify (recovery/verify.c). */
#ifndef FT_RECOVERY_VERIFY_H
#define FT_RECOVERY_VERIFY_H

#include "recovery/restore.h"

/* Collective: FT_OK when every stripe checks, FT_ECORRUPT otherwise; the
 * summary is in r->msg on rank 0. */
int ft__verify(ft__restore_t *r);

#endif
