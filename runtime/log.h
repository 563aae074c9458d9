/*
 * Logging: one line per message on stderr, prefixed with the host, the MPI
 * rank and the role ("ftrt[h1 r3 smp] warn: ..."), filtered by FT_LOG.
 * A logger is a small value kept in the context; there is no global logger.
 */
#ifndef FT_RUNTIME_LOG_H
#define FT_RUNTIME_LOG_H

#include <stdint.h>

#include "runtime/config.h"

typedef struct ft__log {
  ft__log_level_t level;
  char prefix[96];
} ft__log_t;

void ft__log_init(ft__log_t *log, ft__log_level_t level, const char *host,
                  int rank, const char *role);

void ft__log(const ft__log_t *log, ft__log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

struct ft__ctl;
/* A hold point of this process (snapshot/hold.h ft__hold_at with gen, point
 * and step), and a warning in log when its bound let it go
 * (FT_HOLD_LIMIT).  The trainers' and the SMP's points. */
void ft__log_hold_at(const ft__log_t *log, struct ft__ctl *ctl, uint32_t gen,
                     uint32_t point, uint64_t step);

#define FT_LOGE(l, ...) ft__log((l), FT_LOG_ERROR, __VA_ARGS__)
#define FT_LOGW(l, ...) ft__log((l), FT_LOG_WARN, __VA_ARGS__)
#define FT_LOGI(l, ...) ft__log((l), FT_LOG_INFO, __VA_ARGS__)
#define FT_LOGD(l, ...) ft__log((l), FT_LOG_DEBUG, __VA_ARGS__)

#endif
