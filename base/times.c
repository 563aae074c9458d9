/*
 * Recovery timing (times.h).
 */
#include "base/times.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int64_t ft__times_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ft__times_say(const char *what, const char *fmt, ...) {
  const char *id = getenv("FTRT_LAUNCH_ID");
  if (!id || !*id)
    return;
  char line[512];
  int n = snprintf(line, sizeof(line), "ftrt-times: %.64s %s ", id, what);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(line))
    n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  if (n <= 0 || (size_t)n >= sizeof(line) - 1)
    return; /* cut short: better no line than a wrong one */
  line[n++] = '\n';
  /* One write: the line never interleaves with another thread's output. */
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}
