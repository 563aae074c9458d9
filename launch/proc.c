/*
 * The process helpers of launch/proc.h.  The bounded process waits for its
 * try and for the signals it passes on with sigtimedwait: SIGCHLD and those
 * signals stay blocked in it (from before the fork, so that none is lost
 * in between), and the try gets an empty mask before it runs the program.
 * Every fork of the caller's blocks every signal around it, so that no
 * handler of the caller's ever runs in the child.
 */
#include "launch/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ftrt.h"

/* ---- finding programs ---- */

const char *ft__proc_getenv(char *const *envp, const char *name) {
  size_t n = strlen(name);
  for (; envp && *envp; envp++)
    if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
      return *envp + n + 1;
  return NULL;
}

static int executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
         faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

int ft__proc_find(char *const *envp, const char *word, ft__text_t *path) {
  if (!*word)
    return 0;
  ft__text_clear(path);
  if (strchr(word, '/'))
    return ft__text_add(path, word) == FT_OK ? 1 : FT_ENOMEM;
  const char *dirs = ft__proc_getenv(envp, "PATH");
  if (!dirs)
    dirs = "/bin:/usr/bin";
  for (;;) {
    size_t len = strcspn(dirs, ":");
    ft__text_clear(path);
    if ((len ? ft__text_addn(path, dirs, len) : ft__text_add(path, ".")) !=
            FT_OK ||
        ft__text_addf(path, "/%s", word) != FT_OK)
      return FT_ENOMEM;
    if (executable(path->s))
      return 1;
    if (!dirs[len])
      break;
    dirs += len + 1;
  }
  ft__text_clear(path);
  return 0;
}

/* ---- forked children ---- */

static void close_from(unsigned from, unsigned to) {
  if (from > to)
    return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, from, to, 0) == 0)
    return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536)
    max = 65536;
  for (long fd = from; fd < max && (unsigned long)fd <= to; fd++)
    close((int)fd);
}

/* Handlers back to SIG_DFL (an ignored signal stays so), SIGCHLD too. */
static void default_handlers(void) {
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction sa;
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &sa) != 0)
      continue;
    if (sig != SIGCHLD && !(sa.sa_flags & SA_SIGINFO) &&
        (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
      continue;
    signal(sig, SIG_DFL);
  }
}

static void close_all_but(int keep) {
  if (keep < 3) {
    close_from(3, ~0U);
  } else {
    close_from(3, (unsigned)keep - 1);
    close_from((unsigned)keep + 1, ~0U);
  }
}

pid_t ft__proc_fork(void) {
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0)
    default_handlers();
  else
    sigprocmask(SIG_SETMASK, &old, NULL);
  return pid;
}

void ft__proc_child_init(int keep) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  close_all_but(keep);
}

/* ---- clocks ---- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ft__proc_now_ms(void) { return now_ns() / 1000000u; }

void ft__proc_sleep_ms(uint64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* ---- the bounded process (timeout -k 2 T) ---- */

#define KILL_AFTER_NS 2000000000ull

static const int PASSED_ON[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

static void bounded_set(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGCHLD);
  for (size_t i = 0; i < sizeof(PASSED_ON) / sizeof(PASSED_ON[0]); i++)
    sigaddset(set, PASSED_ON[i]);
}

/* The next signal of set before deadline (ns), or 0 once it is reached. */
static int signal_until(const sigset_t *set, uint64_t deadline) {
  for (;;) {
    uint64_t now = now_ns();
    if (now >= deadline)
      return 0;
    uint64_t left = deadline - now;
    struct timespec ts = {(time_t)(left / 1000000000u),
                          (long)(left % 1000000000u)};
    int sig = sigtimedwait(set, NULL, &ts);
    if (sig > 0)
      return sig;
  }
}

/* As timeout's send_sig: the command and its group, then SIGCONT so that a
 * stopped one gets it. */
static void send_to_try(pid_t pid, int sig) {
  kill(pid, sig);
  kill(-pid, sig);
  if (sig != SIGKILL) {
    kill(pid, SIGCONT);
    kill(-pid, SIGCONT);
  }
}

int ft__proc_status(int st) {
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  if (WIFSIGNALED(st))
    return 128 + WTERMSIG(st);
  return 1;
}

static void null_stdio(void) {
  int fd = open("/dev/null", O_RDWR);
  if (fd < 0)
    return;
  dup2(fd, 0);
  dup2(fd, 1);
  dup2(fd, 2);
  if (fd > 2)
    close(fd);
}

/* One try: its status as timeout reports it; *passed the signal passed on
 * to it (then no more tries), else unchanged. */
static int one_try(const char *path, char *const *argv, char *const *envp,
                   uint64_t bound_ns, const sigset_t *set, int *passed) {
  pid_t pid = fork();
  if (pid < 0)
    return 125;
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (path)
      execve(path, argv, envp);
    _exit(path && errno != ENOENT ? 126 : 127);
  }
  setpgid(pid, pid);
  /* 0: no bound, as timeout has a duration of 0. */
  uint64_t deadline = bound_ns ? now_ns() + bound_ns : UINT64_MAX;
  int stage = 0; /* 0 running, 1 signalled (KILL at deadline), 2 killed */
  int timed_out = 0, st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, stage == 2 ? 0 : WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR)
      return 125; /* lost: not ours to wait for */
    if (r != 0 || stage == 2)
      continue;
    int sig = signal_until(set, deadline);
    if (sig == SIGCHLD)
      continue;
    if (sig == 0 && stage == 1) {
      send_to_try(pid, SIGKILL);
      stage = 2;
      continue;
    }
    if (sig == 0) {
      timed_out = 1;
      sig = SIGTERM;
    } else {
      *passed = sig;
    }
    send_to_try(pid, sig);
    if (stage == 0) {
      stage = 1;
      deadline = now_ns() + KILL_AFTER_NS;
    }
  }
  if (timed_out)
    return stage == 2 ? 128 + SIGKILL : 124;
  return ft__proc_status(st);
}

pid_t ft__proc_bounded_to(const char *path, char *const *argv,
                         char *const *envp, double timeout_s, int tries,
                         int out_fd, int with_stderr) {
  sigset_t set;
  bounded_set(&set);
  pid_t pid = ft__proc_fork();
  if (pid != 0)
    return pid < 0 ? -1 : pid;
  sigprocmask(SIG_SETMASK, &set, NULL);
  close_all_but(out_fd);
  null_stdio(); /* the tries' too: they inherit it */
  if (out_fd >= 0) {
    dup2(out_fd, 1);
    if (with_stderr)
      dup2(out_fd, 2);
    if (out_fd > 2)
      close(out_fd);
  }
  uint64_t bound_ns = timeout_s > 0 ? (uint64_t)(timeout_s * 1e9) : 0;
  int rc = 1, passed = 0;
  uint64_t pause_ns = 1000000000u;
  for (int t = 1; t <= tries; t++) {
    rc = one_try(path, argv, envp, bound_ns, &set, &passed);
    if (rc == 0 || passed)
      break;
    if (t < tries) {
      int sig;
      uint64_t until = now_ns() + pause_ns;
      while ((sig = signal_until(&set, until)) == SIGCHLD)
        ;
      if (sig) {
        rc = 128 + sig;
        break;
      }
    }
    pause_ns *= 2;
  }
  _exit(rc);
}

pid_t ft__proc_bounded(const char *path, char *const *argv, char *const *envp,
                      double timeout_s, int tries) {
  return ft__proc_bounded_to(path, argv, envp, timeout_s, tries, -1, 0);
}

int ft__proc_wait(pid_t pid) {
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, 0);
    if (r == pid)
      return ft__proc_status(st);
    if (r < 0 && errno != EINTR)
      return -1;
  }
}

/* ---- who is there ---- */

int ft__proc_alive(pid_t pid) {
  if (pid <= 0)
    return 0;
  siginfo_t si;
  memset(&si, 0, sizeof(si));
  if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      si.si_pid == pid)
    return 0;
  return kill(pid, 0) == 0;
}

/* The state and process group of /proc/PID/stat: 1, or 0 when it is gone
 * or unreadable. */
static int stat_of(const char *pid, char *state, long *pgrp) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the name may hold anything */
  long ppid;
  return p && sscanf(p + 1, " %c %ld %ld", state, &ppid, pgrp) == 3;
}

int ft__proc_group_alive(pid_t pgid) {
  if (pgid <= 0 || kill(-pgid, 0) != 0)
    return 0;
  DIR *d = opendir("/proc");
  if (!d)
    return 1;
  int alive = 0;
  struct dirent *e;
  while (!alive && (e = readdir(d))) {
    char state;
    long pgrp;
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
        stat_of(e->d_name, &state, &pgrp) && pgrp == (long)pgid)
      alive = state != 'Z' && state != 'X';
  }
  closedir(d);
  return alive;
}

/* ---- output ---- */

int ft__proc_write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

void ft__proc_say(const char *fmt, ...) {
  ft__text_t t = FT__TEXT_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = ft__text_add(&t, "ft-launch: ");
  if (rc == FT_OK)
    rc = ft__text_vaddf(&t, fmt, ap);
  va_end(ap);
  if (rc == FT_OK)
    rc = ft__text_add(&t, "\n");
  if (rc == FT_OK)
    ft__proc_write_all(2, t.s, t.len);
  ft__text_free(&t);
}
