/*
 * The line is formatted into one buffer and written with a single write(2),
 * so lines from the ranks of a node sharing one terminal do not interleave.
 */
#include "runtime/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
