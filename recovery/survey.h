/* The survey of ft-restore (recovery/survey.c). */
#ifndef FT_RECOVERY_SURVEY_H
#define FT_RECOVERY_SURVEY_H

#include "recovery/restore.h"

/* Collective: read, allgather, agree on layout, version and chunk health. */
int ft__survey(ft__restore_t *r);

/* Is the chunk with this role (0..k-1 data, k.. parity) of node unusable:
 * the node is lost or the chunk failed its CRC? */
int ft__chunk_bad(const ft__restore_t *r, int node, int role);

#endif
