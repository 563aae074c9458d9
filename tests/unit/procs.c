/* The helpers of tests/unit/procs.h. */
#include "tests/unit/procs.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "tests/unit/tmpdir.h"

void procs_script(char *out, size_t len, const char *name, const char *body) {
  path_of(out, len, name);
  FILE *f = fopen(out, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(out, 0755), 0);
}

const char *procs_slurp(const char *path) {
  static char buf[65536];
  buf[0] = '\0';
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return buf;
  size_t got = 0;
  ssize_t n;
  while (got < sizeof(buf) - 1 &&
         (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
    got += (size_t)n;
  buf[got] = '\0';
  close(fd);
  return buf;
}

int procs_count(const char *path, const char *line) {
  const char *s = procs_slurp(path);
  size_t len = strlen(line);
  int n = 0;
  while (*s) {
    size_t l = strcspn(s, "\n");
    n += l == len && strncmp(s, line, len) == 0;
    s += l + (s[l] == '\n');
  }
  return n;
}

void procs_wait_count(const char *path, const char *line, int n) {
  while (procs_count(path, line) < n)
    usleep(10000);
}

static int saved_err = -1;

void procs_err_to(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ck_assert_int_ge(fd, 0);
  saved_err = dup(2);
  ck_assert_int_ge(saved_err, 0);
  ck_assert_int_eq(dup2(fd, 2), 2);
  close(fd);
}

void procs_err_back(void) {
  if (saved_err < 0)
    return;
  dup2(saved_err, 2);
  close(saved_err);
  saved_err = -1;
}

int procs_gone(pid_t pid) {
  if (kill(pid, 0) != 0)
    return errno == ESRCH;
  char path[64], buf[256] = "";
  snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return !p || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X';
}

pid_t procs_spawn(char *const *argv, char *const *envp) {
  int fds[2];
  ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(fds[1]);
  char c;
  while (read(fds[0], &c, 1) < 0 && errno == EINTR)
    ; /* the end of the pipe: its exec (close-on-exec) */
  close(fds[0]);
  return pid;
}

void procs_words_are(const ft__words_t *w, const char *want) {
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__text_join(&t, (const char *const *)w->v, w->n, " "),
                   FT_OK);
  ck_assert_str_eq(ft__text_str(&t), want);
  ft__text_free(&t);
}

ft__probe_t procs_probe(const char *code, int tries, const char *timeout) {
  static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
  static const char *words[3];
  words[0] = "/bin/sh";
  words[1] = "-c";
  words[2] = code;
  ft__probe_t p = {.words = words,
                   .nwords = 3,
                   .tries = tries,
                   .timeout_s = atof(timeout),
                   .timeout = timeout,
                   .be = &ft__launcher_ompi4,
                   .envp = envp};
  return p;
}
