/* The survey of ft-restore (recovery/survey.c). */
#ifndef FT_RECOVERY_SURVEY_H
#define FT_RECOVERY_SURVEY_H

#include "recovery/restore.h"

/* Collective: read, allgather, agree on layout, version and chunk health. */
int ft__survey(ft__restore_t *r);

/* Is the chunk with this role (0..k-1 data, k.. parity) of node unusable:
 * the node is lost or the chunk failed its CRC? */
int ft__chunk_bad(const ft__restore_t *r, int node, int role);

/* Write r->msg; returns rc. */
int ft__rsay(ft__restore_t *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Agreement over r->comm: the most negative status; everyone gets r->msg
 * from the lowest rank that failed with a message. */
int ft__ragree(ft__restore_t *r, int rc);

/* k of group g. */
int ft__group_k(const ft__restore_t *r, int g);

/* Node holding role `role` (0..k-1 data, k.. parity) of stripe s of g. */
int ft__node_at(const ft__restore_t *r, int g, int s, int role);

#endif
