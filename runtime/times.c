/*
 * Recovery timing (times.h).  The process's start comes from its
 * /proc/self/stat start time (clock ticks after boot) and the boot time in
 * /proc/stat; where either cannot be read, start_ms is 0 and ft-launch
 * counts the start-up from MPI's instead.
 */
#include "runtime/times.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t ft__times_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Seconds since the epoch at boot (/proc/stat "btime"), or 0. */
static int64_t boot_time_s(void) {
  FILE *f = fopen("/proc/stat", "r");
  char line[256];
  long long bt = 0;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "btime %lld", &bt) == 1)
      break;
  if (f)
    fclose(f);
  return bt;
}

/* Clock ticks after boot at which this process started, or 0.  Field 22 of
 * /proc/self/stat; the command name (field 2) may hold spaces, so the scan
 * starts after its closing parenthesis. */
static unsigned long long start_ticks(void) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  unsigned long long ticks = 0;
  for (int field = 2; p && field < 22; field++)
    p = strchr(p + 1, ' ');
  if (p)
    ticks = strtoull(p + 1, NULL, 10);
  return ticks;
}

void ft__times_begin(ft__times_t *t) {
  memset(t, 0, sizeof(*t));
  t->mpi_ms = ft__times_now_ms();
  long hz = sysconf(_SC_CLK_TCK);
  int64_t boot = boot_time_s();
  unsigned long long ticks = start_ticks();
  if (hz > 0 && boot > 0 && ticks > 0)
    t->start_ms = boot * 1000 + (int64_t)(ticks * 1000 / (unsigned long long)hz);
}

void ft__times_first_step(ft__times_t *t, int app_rank) {
  if (t->said || t->restored_ms == 0)
    return;
  t->said = 1;
  const char *id = getenv("FTRT_LAUNCH_ID");
  if (app_rank != 0 || !id || !*id)
    return;
  fprintf(stderr,
          "ftrt-times: job start_ms=%" PRId64 " mpi_ms=%" PRId64
          " init_ms=%" PRId64 " restored_ms=%" PRId64 " step_ms=%" PRId64 "\n",
          t->start_ms, t->mpi_ms, t->init_ms, t->restored_ms,
          ft__times_now_ms());
  fflush(stderr);
}
