/*
 * Status names and messages, generated from FT_ERRNO_MAP in ftrt.h, and the
 * one place where errno values become ftrt statuses (libuv's UV__ERR idea).
 */
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

const char *ft_strerror(int status) {
  switch (status) {
#define FT__MSG(name, val, msg)                                                \
  case FT_##name:                                                              \
    return msg;
    FT_ERRNO_MAP(FT__MSG)
#undef FT__MSG
  }
  return "unknown error";
}

const char *ft_err_name(int status) {
  switch (status) {
#define FT__NAME(name, val, msg)                                               \
  case FT_##name:                                                              \
    return "FT_" #name;
    FT_ERRNO_MAP(FT__NAME)
#undef FT__NAME
  }
  return "FT_UNKNOWN";
}

int ft__from_errno(int err) {
  switch (err) {
  case 0:
    return FT_OK;
  case ENOMEM:
    return FT_ENOMEM;
  case ENOENT:
    return FT_ENOENT;
  case EINVAL:
    return FT_EINVAL;
  case ENOSPC:
  case EDQUOT:
    return FT_ENOSPC;
  case ETIMEDOUT:
    return FT_ETIMEDOUT;
  case EBUSY:
    return FT_EBUSY;
  case ERANGE:
    return FT_ERANGE;
  default:
    return FT_EIO;
  }
}

int ft__vmsgf(int status, char *msg, size_t msglen, const char *fmt,
              va_list ap) {
  if (msg && msglen)
    vsnprintf(msg, msglen, fmt, ap);
  return status;
}

int ft__msgf(int status, char *msg, size_t msglen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ft__vmsgf(status, msg, msglen, fmt, ap);
  va_end(ap);
  return status;
}
