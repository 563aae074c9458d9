/* Internal error helpers; the public list lives in include/ftrt.h. */
#ifndef FT_RUNTIME_ERROR_H
#define FT_RUNTIME_ERROR_H

#include "ftrt.h"

/* Convert an errno value (not -errno) into a status. */
int ft__from_errno(int err);

#endif
