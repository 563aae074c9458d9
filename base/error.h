/* Internal error helpers; the public list lives in include/ftrt.h. */
#ifndef FT_BASE_ERROR_H
#define FT_BASE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "ftrt.h"

/* Convert an errno value (not -errno) into a status. */
int ft__from_errno(int err);

/*
 * The one way every module reports "what is wrong": format one line into
 * msg and return status, so that a failure reads
 *
 *   return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: bad magic", path);
 *
 * msg may be NULL and msglen 0: then nothing is written.  Otherwise msg
 * gets at most msglen bytes, always NUL-terminated (vsnprintf).  A function
 * that takes (msg, msglen) says in its header whether msg may be NULL.
 */
int ft__msgf(int status, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* ft__msgf with a va_list, for modules that keep their own message buffer
 * (recovery's ft__rsay). */
int ft__vmsgf(int status, char *msg, size_t msglen, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#endif
