/*
 * The command of launch/command.h: posix_spawn with its output on a pipe,
 * read to its end, then waited for.  A command that cannot be started
 * ends with 127, as in bash.
 */
#include "launch/command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/proc.h"

static int read_all(int fd, ft__text_t *out) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0)
      return FT_OK;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return FT_EIO;
    if (ft__text_addn(out, buf, (size_t)n) != FT_OK)
      return FT_ENOMEM;
  }
}

int ft__command_output(char *const *argv, char *const *envp, int with_stderr,
                       ft__text_t *out, int *status) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return FT_EIO;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  if (with_stderr)
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int err = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    *status = 127;
    return FT_OK;
  }
  int rc = read_all(fds[0], out);
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  *status = ft__proc_status(st);
  return rc;
}

int ft__command_start(char *const *argv, char *const *envp, int with_stderr,
                      double timeout_s, ft__command_t *c) {
  int fds[2];
  c->pid = 0, c->fd = -1;
  if (pipe2(fds, O_CLOEXEC) != 0)
    return FT_EIO;
  pid_t pid = ft__proc_bounded_to(argv[0], argv, envp, timeout_s, 1, fds[1],
                                  with_stderr);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return FT_EIO;
  }
  c->pid = pid, c->fd = fds[0];
  return FT_OK;
}

int ft__command_finish(ft__command_t *c, ft__text_t *out, int *status) {
  *status = 127;
  if (c->pid <= 0)
    return FT_EIO;
  int rc = FT_OK, st = -1, done = 0;
  char buf[4096];
  /* To the pipe's end, or until the bounded process has ended and the pipe
   * holds nothing more: a process the command left behind (a daemon, a
   * background job) may hold the pipe open for good. */
  while (!done) {
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};
    int ready = poll(&pf, 1, st < 0 ? 200 : 0);
    if (ready < 0 && errno != EINTR)
      break;
    if (ready > 0) {
      ssize_t n = read(c->fd, buf, sizeof(buf));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        break;
      if (n > 0 && rc == FT_OK && ft__text_addn(out, buf, (size_t)n) != FT_OK)
        rc = FT_ENOMEM; /* read on: the command is not left blocked */
      continue;
    }
    if (st >= 0) {
      done = 1; /* ended, and nothing more to read now */
    } else {
      int ws;
      pid_t r = waitpid(c->pid, &ws, WNOHANG);
      if (r == c->pid)
        st = ft__proc_status(ws);
      else if (r < 0 && errno != EINTR)
        st = 127;
    }
  }
  close(c->fd);
  if (st < 0)
    st = ft__proc_wait(c->pid);
  *status = st < 0 ? 127 : st;
  c->pid = 0, c->fd = -1;
  return rc;
}

int ft__command_bounded(char *const *argv, char *const *envp, int with_stderr,
                        double timeout_s, ft__text_t *out, int *status) {
  ft__command_t c = FT__COMMAND_INIT;
  int rc = ft__command_start(argv, envp, with_stderr, timeout_s, &c);
  if (rc != FT_OK) {
    *status = 127;
    return rc;
  }
  return ft__command_finish(&c, out, status);
}

void ft__command_chomp(ft__text_t *t) {
  while (t->len && t->s[t->len - 1] == '\n')
    t->s[--t->len] = '\0';
}
