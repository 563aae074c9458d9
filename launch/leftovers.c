/*
 * The leftovers of launch/leftovers.h, found as kill_leftovers' grep -lzx
 * found them: an entry of /proc/PID/environ (entries end with a NUL; the
 * last one may not) that is FTRT_LAUNCH_ID=ID exactly.  A process that
 * ends, or is not ours to read, between the listing and the read is
 * skipped.
 */
#include "launch/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/proc.h"
#include "launch/words.h"

/* 1 when the environment of process pid holds entry. */
static int holds(const char *pid, const char *entry, ft__text_t *buf) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%s/environ", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ft__text_clear(buf);
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || ft__text_addn(buf, chunk, (size_t)n) != FT_OK)
      break;
  }
  close(fd);
  size_t len = strlen(entry);
  for (size_t at = 0; at < buf->len;) {
    const char *s = buf->s + at;
    size_t n = strnlen(s, buf->len - at);
    if (n == len && memcmp(s, entry, len) == 0)
      return 1;
    at += n + 1;
  }
  return 0;
}

/* The pids of the processes that hold entry, this one aside. */
static int find(const char *entry, ft__words_t *pids) {
  DIR *d = opendir("/proc");
  if (!d)
    return FT_EIO;
  ft__text_t buf = FT__TEXT_INIT;
  char self[32];
  snprintf(self, sizeof(self), "%ld", (long)getpid());
  int rc = FT_OK;
  struct dirent *e;
  while (rc == FT_OK && (e = readdir(d))) {
    const char *name = e->d_name;
    if (name[0] < '1' || name[0] > '9' ||
        name[strspn(name, "0123456789")] != '\0' || strcmp(name, self) == 0)
      continue;
    if (holds(name, entry, &buf))
      rc = ft__words_add(pids, name);
  }
  closedir(d);
  ft__text_free(&buf);
  return rc;
}

/* 1 when pid is an srun (its /proc/PID/comm). */
static int is_srun(const char *pid) {
  char path[64], comm[32] = "";
  snprintf(path, sizeof(path), "/proc/%s/comm", pid);
  FILE *f = fopen(path, "r");
  if (f) {
    if (!fgets(comm, sizeof(comm), f))
      comm[0] = '\0';
    fclose(f);
  }
  comm[strcspn(comm, "\n")] = '\0';
  return strcmp(comm, "srun") == 0;
}

int ft__leftovers_kill(const char *id) {
  ft__text_t entry = FT__TEXT_INIT;
  ft__words_t pids = FT__WORDS_INIT;
  int first = 0;
  if (ft__text_addf(&entry, "FTRT_LAUNCH_ID=%s", id) != FT_OK)
    return 0;
  for (int round = 1; round <= 3; round++) {
    ft__words_free(&pids);
    find(entry.s, &pids);
    if (pids.n == 0)
      break;
    if (round == 1) {
      /* In a Slurm allocation the srun of mpirun's daemon step outlives
       * mpirun a moment on every run; ending it is no news. */
      int sruns = 0;
      for (int i = 0; i < pids.n; i++)
        sruns += is_srun(pids.v[i]);
      first = pids.n;
      if (pids.n > sruns)
        ft__proc_say("killing %d leftover processes of the job",
                     pids.n - sruns);
    }
    for (int i = 0; i < pids.n; i++)
      kill((pid_t)strtol(pids.v[i], NULL, 10), SIGKILL);
    /* Gone once none is found (a zombie's environment reads empty): up to
     * 0.2 s for that, looked at every 10 ms. */
    for (int t = 0; t < 20 && pids.n; t++) {
      ft__proc_sleep_ms(10);
      ft__words_free(&pids);
      find(entry.s, &pids);
    }
    if (pids.n == 0)
      break;
  }
  ft__words_free(&pids);
  ft__text_free(&entry);
  return first;
}
