/*
 * The line is formatted into one buffer and written with a single write(2),
 * so lines from the ranks of a node sharing one terminal do not interleave.
 * Also the hold points of the runtime's processes, whose end by their bound
 * is a line of the log.
 */
#include "runtime/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/hold.h"

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void ft__log_init(ft__log_t *log, ft__log_level_t level, const char *host,
                  int rank, const char *role) {
  log->level = level;
  snprintf(log->prefix, sizeof(log->prefix), "ftrt[%s r%d %s]",
           host ? host : "?", rank, role ? role : "?");
}

void ft__log(const ft__log_t *log, ft__log_level_t level, const char *fmt,
             ...) {
  if (!log || level > log->level)
    return;
  char line[1024];
  int n = snprintf(line, sizeof(line), "%s %s: ", log->prefix,
                   level_names[level]);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(line))
    n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof(line) - 1)
    n = (int)sizeof(line) - 2;
  line[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}

void ft__log_hold_at(const ft__log_t *log, struct ft__ctl *ctl, uint32_t gen,
                     uint32_t point, uint64_t step) {
  if (ft__hold_at(ctl, gen, point, step) == FT_HOLD_EXPIRED) {
    char m[160];
    ft__hold_expired_msg(ctl, point, step, m, sizeof(m));
    FT_LOGW(log, "%s", m);
  }
}
