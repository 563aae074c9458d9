/* The survey of ft-restore (recovery/survey.c). */
#ifndef FT_RECOVERY_SURVEY_H
#define FT_RECOVERY_SURVEY_H

#include "recovery/restore.h"

/* Collective: read, allgather, agree on layout, version and chunk health. */
int ft__survey(ft__restore_t *r);

#endif
