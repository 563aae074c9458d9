/* Internal error helpers; the public list lives in include/ftrt.h. */
#ifndef FT_BASE_ERROR_H
#define FT_BASE_ERROR_H

#include "ftrt.h"

/* Convert an errno value (not -errno) into a status. */
int ft__from_errno(int err);

#include <stddef.h>

/* Format one line into msg (when msg and msglen are set) and return status:
 * every module reports "what is wrong" this way. */
int ft__msgf(int status, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
