/*
 * The watchdog of launch/watchdog.h: a forked process, leader of its own
 * process group, that runs the watchdog loop and ends with it.  Its probes
 * (proc.h's bounded processes) and its pings are in that group; the
 * cluster's watch is in a session of its own (setsid), so that the
 * watchdog can end the watch alone (stop_watch) and go on pinging: a TERM
 * to the watchdog ends the watch's group as well before the watchdog goes.
 */
#include "launch/watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "launch/proc.h"

int ft__watchdog_judge(const uint64_t *silent_ms, int n, uint64_t limit_ms) {
  for (int i = 0; i < n; i++)
    if (silent_ms[i] > limit_ms)
      return i;
  return -1;
}

void ft__watchdog_end_mpirun(pid_t pid) {
  if (pid <= 0 || kill(pid, SIGTERM) != 0)
    return;
  for (int i = 0; i < 20; i++) {
    if (!ft__proc_alive(pid))
      return;
    ft__proc_sleep_ms(100);
  }
  kill(pid, SIGKILL);
}

void ft__watchdog_stop(pid_t pid) {
  if (pid <= 0)
    return;
  kill(-pid, SIGTERM);
  kill(pid, SIGTERM);
  /* It goes at once (its TERM handler ends the watch's group first); its
   * bounded probes pass the TERM on and go within 2 s.  The KILL only
   * bounds a watchdog that would not go. */
  for (int i = 0; i < 200; i++) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD))
      return;
    ft__proc_sleep_ms(10);
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  ft__proc_wait(pid);
}

/* ---- in the watchdog process ---- */

/* The watch's pid (its process group and session), 0 while none runs. */
static volatile sig_atomic_t watch_pid;

/* A closed output fails a write (EPIPE) instead of ending the watchdog
 * before its verdict has ended mpirun; what it starts gets SIG_DFL. */
static void on_pipe(int sig) { (void)sig; }

static void on_term(int sig) {
  pid_t w = (pid_t)watch_pid;
  if (w > 0) {
    kill(-w, SIGTERM);
    kill(w, SIGTERM);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

typedef struct wd {
  const ft__watchdog_t *w;
  const ft__probe_t *p;
  const char *const *hosts;
  int n;
  uint64_t limit_ms;
  uint64_t *silent; /* n: the judge's input */
  uint64_t *since;  /* n: the first round a host failed (by its first
                       index: a host named twice is one host) */
  int *key;         /* n: that index */
  int cluster;
} wd_t;

/* The verdict, for the launch to act on (machine.h's UNREACHABLE: the
 * machine says it and ends mpirun): "HOST SILENT_MS PING_WAIT\n". */
static void verdict(const wd_t *d, int j, int ping_wait) {
  ft__text_t line = FT__TEXT_INIT;
  if (ft__text_addf(&line, "%s %llu %d\n", d->hosts[j],
                    (unsigned long long)d->silent[j], ping_wait) == FT_OK)
    ft__proc_write_all(d->w->verdict_fd, line.s, line.len);
  ft__text_free(&line);
}

static int alive(const wd_t *d) { return ft__proc_alive(d->w->mpirun); }

/* The watch's group ended, and it gone (1 s at most; its zombie reaped).
 * The TERM goes to the watch itself too, should it not lead its group
 * yet. */
static void stop_watch(pid_t pid) {
  int reaped = 0, st;
  watch_pid = 0;
  int sent = kill(-pid, SIGTERM) == 0;
  kill(pid, SIGTERM);
  for (int i = 0; sent && i < 10; i++) {
    reaped = reaped || waitpid(pid, &st, WNOHANG) == pid;
    if (!ft__proc_group_alive(pid))
      break;
    ft__proc_sleep_ms(100);
  }
  if (!reaped)
    waitpid(pid, &st, WNOHANG);
}

/* Lines of cut's complete lines, as read -r has them (blanks around
 * dropped), moved to lines; the unfinished rest stays in cut. */
static int take_lines(ft__text_t *cut, ft__words_t *lines) {
  size_t at = 0;
  for (;;) {
    const char *s = cut->s + at, *nl = memchr(s, '\n', cut->len - at);
    if (!nl)
      break;
    size_t len = (size_t)(nl - s);
    while (len && (*s == ' ' || *s == '\t'))
      s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
      len--;
    if (ft__words_addn(lines, s, len) != FT_OK)
      return FT_ENOMEM;
    at = (size_t)(nl - cut->s) + 1;
  }
  memmove(cut->s, cut->s + at, cut->len - at + 1);
  cut->len -= at;
  return FT_OK;
}

/* Start "CLUSTER_CMD watch --name C HOST..." in a session of its own, its
 * output on *fd, its errors nowhere: its pid, or -1. */
static pid_t start_watch(const wd_t *d, int *fd) {
  ft__text_t prog = FT__TEXT_INIT;
  ft__words_t argv = FT__WORDS_INIT;
  pid_t pid = -1;
  int fds[2];
  if (d->p->cluster_cmd &&
      ft__proc_find(d->p->envp, d->p->cluster_cmd, &prog) == 1 &&
      ft__words_add(&argv, prog.s) == FT_OK &&
      ft__words_add(&argv, "watch") == FT_OK &&
      ft__words_add(&argv, "--name") == FT_OK &&
      ft__words_add(&argv, d->p->cluster) == FT_OK &&
      ft__words_addv(&argv, d->hosts, d->n) == FT_OK &&
      pipe2(fds, O_CLOEXEC) == 0) {
    pid = ft__proc_fork();
    if (pid == 0) {
      setsid();
      dup2(fds[1], 1);
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0)
        dup2(null, 2);
      ft__proc_child_init(-1);
      execve(argv.v[0], argv.v, d->p->envp);
      _exit(127);
    }
    close(fds[1]);
    if (pid > 0) {
      watch_pid = pid;
      *fd = fds[0];
    } else {
      close(fds[0]);
    }
  }
  ft__words_free(&argv);
  ft__text_free(&prog);
  return pid;
}

/* Read what the watch has written: wait up to 1 s for the first bytes,
 * then take all that is there.  1 once the watch has ended (its output
 * closed). */
static int read_watch(int fd, ft__text_t *cut, ft__words_t *lines) {
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  int wait_ms = 1000;
  for (;;) {
    int r = poll(&pf, 1, wait_ms);
    if (r < 0 && errno != EINTR)
      return 1;
    if (r <= 0)
      return 0;
    char buf[4096];
    ssize_t k = read(fd, buf, sizeof(buf));
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (k <= 0)
      return 1;
    if (ft__text_addn(cut, buf, (size_t)k) != FT_OK ||
        take_lines(cut, lines) != FT_OK)
      return 1;
    wait_ms = 0;
  }
}

/* watch_cluster: 0 once the job ended or was judged, 1 should the watch
 * end (or not start) before mpirun. */
static int watch_cluster(wd_t *d) {
  uint64_t limit_ms = d->limit_ms;
  int ping_wait = 0;
  /* A host is judged only once a ping has waited 3 s for it. */
  if (limit_ms < 3000) {
    limit_ms = 3000;
    ping_wait = 1;
  }
  int fd = -1, rc = 0, started = 0;
  pid_t pid = start_watch(d, &fd);
  if (pid < 0)
    return 1;
  uint64_t *last = d->since, now = ft__proc_now_ms();
  for (int i = 0; i < d->n; i++)
    last[i] = now;
  ft__text_t cut = FT__TEXT_INIT;
  ft__words_t lines = FT__WORDS_INIT;
  while (alive(d)) {
    ft__words_free(&lines);
    int ended = read_watch(fd, &cut, &lines);
    /* Every line already there counts before anything is judged.  The
     * clocks start again at the watch's first line: its pings are running
     * then, however long it took to start them. */
    now = ft__proc_now_ms();
    if (lines.n > 0 && !started) {
      started = 1;
      for (int i = 0; i < d->n; i++)
        last[i] = now;
    }
    for (int l = 0; l < lines.n; l++)
      for (int i = 0; i < d->n; i++)
        if (strcmp(d->hosts[i], lines.v[l]) == 0)
          last[i] = now;
    if (ended) {
      rc = 1;
      break;
    }
    for (int i = 0; i < d->n; i++)
      d->silent[i] = now - last[i];
    int j = ft__watchdog_judge(d->silent, d->n, limit_ms);
    if (j < 0)
      continue;
    if (!alive(d))
      break;
    verdict(d, j, ping_wait);
    break;
  }
  ft__words_free(&lines);
  ft__text_free(&cut);
  close(fd);
  stop_watch(pid);
  return rc;
}

/* The cluster's ping every second, or the probe every quarter of the
 * timeout (at least 1 s), until mpirun is gone or a host is judged. */
static void rounds(wd_t *d) {
  uint64_t every_ms = 1000;
  if (!d->cluster && d->limit_ms / 4 > 1000)
    every_ms = d->limit_ms / 4;
  int warned = 0;
  ft__words_t bad = FT__WORDS_INIT;
  int *failing = ft__calloc((size_t)d->n + 1, sizeof(*failing));
  if (!failing)
    return;
  while (alive(d)) {
    uint64_t t0 = ft__proc_now_ms();
    ft__words_free(&bad);
    if (d->cluster) {
      ft__probe_cluster_ping(d->p, d->hosts, d->n, 0, &bad);
    } else {
      ft__probe_unreachable(d->p, d->hosts, d->n, 0, &bad);
      /* Every host failing at once says more of the probe (no ssh to the
       * nodes, a login service down) than of the hosts: no verdict then. */
      if (d->n > 1 && bad.n >= d->n) {
        if (!warned) {
          ft__text_t words = FT__TEXT_INIT;
          ft__probe_words(d->p, 0, &words);
          ft__proc_say("watchdog: %s for every host at once: it cannot tell "
                      "a lost host, and judges none while that lasts",
                      ft__text_str(&words));
          ft__text_free(&words);
        }
        warned = 1;
        ft__words_free(&bad);
      }
    }
    if (!alive(d))
      break;
    uint64_t now = ft__proc_now_ms();
    for (int i = 0; i < d->n; i++) {
      int k = d->key[i];
      d->silent[i] = 0;
      if (ft__words_find(&bad, d->hosts[i]) < 0) {
        failing[k] = 0;
        continue;
      }
      if (!failing[k]) {
        failing[k] = 1;
        d->since[k] = t0;
      }
      d->silent[i] = now - d->since[k];
    }
    int j = ft__watchdog_judge(d->silent, d->n, d->limit_ms);
    if (j >= 0) {
      verdict(d, j, 0);
      break;
    }
    now = ft__proc_now_ms();
    if (now - t0 < every_ms)
      ft__proc_sleep_ms(every_ms - (now - t0));
  }
  ft__words_free(&bad);
  ft__free(failing);
}

/* "${FT_CLUSTER_PROBE:-ping}" = ping && command -v ping */
static int pings(const ft__probe_t *p) {
  const char *how = ft__proc_getenv(p->envp, "FT_CLUSTER_PROBE");
  if (how && *how && strcmp(how, "ping") != 0)
    return 0;
  ft__text_t path = FT__TEXT_INIT;
  int found = ft__proc_find(p->envp, "ping", &path);
  ft__text_free(&path);
  return found == 1;
}

static void watchdog(const ft__watchdog_t *w) {
  /* The caller's stop is of its process (its signal pipe): here the
   * probes are waited for, and a TERM ends the watchdog's group. */
  ft__probe_t own = *w->probe;
  own.stop = NULL;
  own.wake_fd = -1;
  /* With Slurm's srun as the probe, Slurm's view alone: no job steps; a
   * user's probe (ssh) still runs. */
  own.view_only =
      own.sinfo != NULL && ft__launcher_is_srun(own.words, own.nwords);
  const ft__probe_t *p = &own;
  size_t n = w->nhosts > 0 ? (size_t)w->nhosts : 0;
  wd_t d = {.w = w,
            .p = p,
            .hosts = w->hosts,
            .n = (int)n,
            .limit_ms = (uint64_t)(p->timeout_s * 1000),
            .silent = ft__calloc(n + 1, sizeof(uint64_t)),
            .since = ft__calloc(n + 1, sizeof(uint64_t)),
            .key = ft__calloc(n + 1, sizeof(int)),
            .cluster = p->cluster && *p->cluster};
  if (d.silent && d.since && d.key) {
    for (int i = 0; i < d.n; i++) {
      d.key[i] = i;
      for (int k = 0; k < i && d.key[i] == i; k++)
        if (strcmp(d.hosts[k], d.hosts[i]) == 0)
          d.key[i] = k;
    }
    if (!(d.cluster && pings(p) && watch_cluster(&d) == 0)) {
      memset(d.since, 0, (n + 1) * sizeof(uint64_t));
      rounds(&d);
    }
  }
  ft__free(d.silent);
  ft__free(d.since);
  ft__free(d.key);
}

int ft__watchdog_start(const ft__watchdog_t *w, pid_t *pid) {
  if (!w || !w->probe || w->mpirun <= 0)
    return FT_EIO;
  pid_t c = ft__proc_fork();
  if (c < 0)
    return FT_EIO;
  if (c == 0) {
    setpgid(0, 0);
    /* Its input is none, as a background job's is in bash. */
    if (w->verdict_fd != 0) {
      int null = open("/dev/null", O_RDONLY);
      if (null > 0) {
        dup2(null, 0);
        close(null);
      }
    }
    struct sigaction sa, was;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    /* INT and HUP as ft-launch has them: one it ignores (nohup) does not
     * end its watchdog either.  TERM is how ft__watchdog_stop ends it. */
    if (sigaction(SIGINT, NULL, &was) != 0 || was.sa_handler != SIG_IGN)
      sigaction(SIGINT, &sa, NULL);
    if (sigaction(SIGHUP, NULL, &was) != 0 || was.sa_handler != SIG_IGN)
      sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_pipe;
    sigaction(SIGPIPE, &sa, NULL);
    /* A process group of its own is a background one on a terminal: with
     * "stty tostop" its lines to the terminal would stop it. */
    signal(SIGTTOU, SIG_IGN);
    ft__proc_child_init(w->verdict_fd);
    watchdog(w);
    _exit(0);
  }
  setpgid(c, c);
  *pid = c;
  return FT_OK;
}
