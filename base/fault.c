/* Fault points: parsing of FT_FAULT and the self-kill. */
#include "base/fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ft__fault_parse(ft__fault_t *f, const char *spec) {
  memset(f, 0, sizeof(*f));
  f->rank = -1;
  f->nth = 1;
  if (!spec || !*spec)
    return 0;
  char buf[128];
  if (strncmp(spec, "stop:", 5) == 0) { /* SIGSTOP: alive but silent */
    f->stop = 1;
    spec += 5;
  } else if (strncmp(spec, "flip:", 5) == 0) { /* a byte corrupted */
    f->flip = 1;
    spec += 5;
  } else if (strncmp(spec, "fail:", 5) == 0) { /* an error, not a crash */
    f->fail = 1;
    spec += 5;
  }
  snprintf(buf, sizeof(buf), "%s", spec);
  char *who = strchr(buf, '@');
  if (who) {
    *who++ = '\0';
    if (who[0] == 'r' && who[1] && strspn(who + 1, "0123456789") == strlen(who + 1))
      f->rank = atoi(who + 1);
    else
      snprintf(f->host, sizeof(f->host), "%s", who);
  }
  char *nth = strchr(buf, ':');
  if (nth) {
    *nth++ = '\0';
    f->nth = atoi(nth);
    if (f->nth < 1)
      return -1;
  }
  /* Only "rebuilt" and "source" have a byte to flip, only "link" an error
   * to return instead (recovery/chain.c); "link" only fails. */
  enum { KILLS = 1, FLIPS = 2, FAILS = 4 };
  static const struct {
    const char *name;
    int modes;
  } points[] = {{"startup", KILLS}, {"copy", KILLS},    {"crc", KILLS},
                {"encode", KILLS},  {"flush", KILLS},   {"commit", KILLS},
                {"restore", KILLS}, {"rebuilt", KILLS | FLIPS},
                {"source", KILLS | FLIPS}, {"link", FAILS}, {NULL, 0}};
  int mode = f->flip ? FLIPS : f->fail ? FAILS : KILLS;
  for (int i = 0; points[i].name; i++)
    if (strcmp(buf, points[i].name) == 0) {
      if (!(points[i].modes & mode))
        return -1;
      snprintf(f->point, sizeof(f->point), "%s", buf);
      return 0;
    }
  return -1;
}

int ft__fault_point(ft__fault_t *f, const char *point, int rank,
                    const char *host) {
  if (!f->point[0] || strcmp(f->point, point) != 0)
    return 0;
  if ((f->rank >= 0 && f->rank != rank) ||
      (f->host[0] && (!host || strcmp(f->host, host) != 0)))
    return 0;
  if (++f->passes != f->nth)
    return 0;
  if (f->flip || f->fail)
    return 1; /* the caller says what it flipped, or fails */
  fprintf(stderr, "ftrt: fault point '%s' (FT_FAULT) %s pid %d\n", point,
          f->stop ? "stops" : "kills", (int)getpid());
  fflush(stderr);
  kill(getpid(), f->stop ? SIGSTOP : SIGKILL);
  return 0;
}
