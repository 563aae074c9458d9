/*
 * The supervisor's run (run.h): the machine's actions carried out.
 *
 * A RUN is one launch: its command line from the backend for the node set
 * the action names, its environment (FT_REBUILD for a relaunch that
 * rebuilds, FT_FRESH and FT_HOLD only while the machine keeps them), the
 * launcher started with its standard error on a pipe that only this
 * process reads, and the watchdog beside it.  The loop waits on the pipe,
 * the watchdog's verdict and the signal pipe at once, so that a line, a
 * verdict or a signal is acted on as it comes.  Once the launcher is gone:
 * the watchdog stopped, the launch's leftovers killed, the pipe read to
 * its end (every writer gone; 10 s bound one that outlived the launch),
 * and the machine told, with what the filter kept (the hosts the launcher
 * lost the daemon of, the ftrt-times lines).
 */
#include "launch/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "launch/account.h"
#include "launch/command.h"
#include "launch/filter.h"
#include "launch/leftovers.h"
#include "launch/machine.h"
#include "launch/probe.h"
#include "launch/requeue.h"
#include "launch/resume.h"
#include "launch/proc.h"
#include "launch/quote.h"
#include "launch/spares.h"
#include "launch/watchdog.h"

extern char **environ;

/* The self-pipe the signal handlers write to: a byte a signal. */
static int sig_pipe[2] = {-1, -1};

static void on_signal(int signo) {
  int e = errno;
  unsigned char b = (unsigned char)signo;
  if (write(sig_pipe[1], &b, 1) < 0) {
    /* full: a signal is pending there already */
  }
  errno = e;
}

typedef struct drv {
  const ft__launch_ctx_t *c;
  ft__launch_t *m;
  /* A requeued run's nodes in the order of the job's stores (resume.h):
   * the job's hosts and the spares, when ordered; then ft-restore runs
   * before the first attempt when a node number had no store. */
  ft__words_t r_hosts, r_pool;
  int r_ordered, r_rebuild, r_shrunk;
  ft__probe_t probe;
  int sinfo_failed; /* a failing sinfo was said */
  ft__spares_t spares;
  ft__launch_job_t spare_job; /* what the spares' host commands reach */
  ft__stamps_t ts;            /* TS: the recovery under way */
  ft__text_t account;         /* the stamps the relaunch under way got */
  ft__text_t later;           /* its account, held back for after the job */
  int out_broken;             /* a write to our standard output failed */
  ft__text_t outq;            /* the launcher's output not written yet */
  size_t outq_off;            /* from there */
  int tell_later;             /* hold it back: our stdout and stderr are one
                                 file, where a line of ours could land
                                 inside one of the job's */
  ft__text_t line;            /* a line told at once */
  ft__text_t times;           /* the last launch's ftrt-times lines */
  ft__text_t hidden;          /* the last launch's launcher messages */
  const char *hold;           /* FT_HOLD as ft-launch was given it */
  const char *fresh;          /* FT_FRESH: the user's, or --fresh's 1 */
  char restore[4096];         /* the ft-restore program */
  char cluster_cmd[4096];     /* ft-cluster */
  char spare_cmd[4096];       /* ft-spare */
  /* The launch under way. */
  pid_t mpirun;
  pid_t watchdog;
  int err_fd, out_fd, verdict_fd;
  ft__filter_t *filter;
  FILE *log; /* --log, while a launch runs */
  unsigned run_flags;
  char id[64];    /* FTRT_LAUNCH_ID */
  double end_at;  /* END: when KILL follows TERM (0: not ending) */
  int ended;      /* END done for this launch */
  int signo;      /* a signal seen while a launch or probe ran */
  int status;     /* the launcher's exit status, bash's $? */
  /* The event that answers the last RUN or PROBE, fed by ft__launch_run's
   * loop (never from inside the action: a launch or probe nested in the
   * one before would take stack for every restart). */
  ft__launch_event_t next;
  ft__words_t next_hosts;            /* its hosts */
  char next_host[FT_LAUNCH_NAME_MAX]; /* its host */
} drv_t;

/* What act() and feed() answer besides ft-launch's exit status (>= 0). */
#define GO_ON (-1) /* the next action, or the machine awaits an event */
#define NEXT (-2)  /* the action (a RUN or PROBE, the last) left d->next */

static double wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static unsigned long long wall_ms(void) {
  return (unsigned long long)(wall_now() * 1000.0);
}

static double mono_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One write a line: a line of ours never lands inside another. */
static void say_line(const drv_t *d, unsigned flags, const char *text) {
  ft__text_t t = FT__TEXT_INIT;
  ft__text_add(&t, "ft-launch: ");
  if (flags & FT_LAUNCH_SAY_STAMP) {
    unsigned long long ms =
        (unsigned long long)((wall_now() - d->c->t0) * 1000.0);
    ft__text_addf(&t, "[+%llu.%llus] ", ms / 1000, ms % 1000 / 100);
  }
  ft__text_add(&t, text);
  ft__text_add(&t, "\n");
  if (flags & FT_LAUNCH_SAY_USAGE)
    ft__text_add(&t, "(ft-launch --help for usage)\n");
  ft__proc_write_all(2, ft__text_str(&t), t.len);
  ft__text_free(&t);
}

static void say(const drv_t *d, const char *text) { say_line(d, 0, text); }

/* A signal that came: the first one counts (the machine takes one).  A
 * byte that names none of INT, TERM, HUP is no signal of ours (CHLD only
 * wakes the loop). */
static void take_signals(drv_t *d) {
  unsigned char b[64];
  ssize_t n;
  while ((n = read(sig_pipe[0], b, sizeof(b))) > 0)
    for (ssize_t i = 0; i < n; i++)
      if ((b[i] == SIGINT || b[i] == SIGTERM || b[i] == SIGHUP) && !d->signo)
        d->signo = b[i];
}

/* probe.h's stop: a signal ends the probes under way. */
static int probes_stop(void *arg) {
  drv_t *d = arg;
  take_signals(d);
  return d->signo != 0;
}

/* ---- programs ---- */

/* ${NAME:-$(command -v WORD || echo "$HERE/WORD")} */
static void find_program(drv_t *d, const char *var, const char *word,
                         char *out, size_t len) {
  const char *v = ft__env_str(d->c->env, var);
  if (*v) {
    snprintf(out, len, "%s", v);
    return;
  }
  ft__text_t t = FT__TEXT_INIT;
  if (ft__env_command(d->c->env, word, &t) == 1)
    snprintf(out, len, "%s", ft__text_str(&t));
  else
    snprintf(out, len, "%s/%s", d->c->here, word);
  ft__text_free(&t);
}

/* ---- one launch ---- */

/* The environment of the launch: FT_REBUILD, FT_FRESH, FT_HOLD as the
 * machine keeps them. */
static int launch_env(drv_t *d, const ft__launch_action_t *a) {
  ft__env_t *env = d->c->env;
  int rc = FT_OK;
  if (a->flags & FT_LAUNCH_RUN_REBUILD)
    rc = ft__env_set(env, "FT_REBUILD", ft__launch_mode_name(a->mode));
  else
    ft__env_unset(env, "FT_REBUILD");
  if (rc == FT_OK && d->fresh && (a->flags & FT_LAUNCH_RUN_FRESH))
    rc = ft__env_set(env, "FT_FRESH", d->fresh);
  else
    ft__env_unset(env, "FT_FRESH");
  if (rc == FT_OK && d->hold && (a->flags & FT_LAUNCH_RUN_HOLD))
    rc = ft__env_set(env, "FT_HOLD", d->hold);
  else
    ft__env_unset(env, "FT_HOLD");
  return rc;
}

static int write_file(const char *path, const ft__text_t *t) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fwrite(ft__text_str(t), 1, t->len, f);
  return fclose(f) == 0 ? 0 : -1;
}

/* The command line of a (RUN) into cmd, its hostfile written. */
static int build_launch(drv_t *d, const ft__launch_action_t *a,
                        ft__launch_cmd_t *cmd) {
  char hostfile[4200], k[24], m[24];
  snprintf(hostfile, sizeof(hostfile), "%s/hostfile", d->c->tmp);
  ft__launch_job_t job;
  ft__launch_plan_job(d->c->plan, d->c->args, hostfile, 0, &job);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  job.cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                          : (n > 0 ? n : 1);
  job.hosts = a->hosts, job.nhosts = a->nhosts, job.nodes = a->nodes;
  job.ec_k = job.ec_m = NULL;
  if (a->ec_k) {
    snprintf(k, sizeof(k), "%d", a->ec_k);
    snprintf(m, sizeof(m), "%d", a->ec_m);
    job.ec_k = k, job.ec_m = m;
  }
  const char *restore[] = {d->restore, "--job", d->c->args->job, "--mode",
                           ft__launch_mode_name(a->mode)};
  if (a->flags & FT_LAUNCH_RUN_RESTORE) {
    job.ranks_per_node = 1;
    job.program = restore, job.nprogram = 5;
    job.smp = NULL;
  }
  if (launch_env(d, a) != FT_OK ||
      ft__launch_job_env(&job, d->c->env) != FT_OK ||
      d->c->be->build(&job, d->c->env, cmd) != FT_OK)
    return -1;
  if (cmd->hostfile.len && write_file(hostfile, &cmd->hostfile) != 0)
    return -1;
  return 0;
}

static void verbose_line(drv_t *d, const ft__launch_cmd_t *cmd) {
  ft__text_t t = FT__TEXT_INIT;
  ft__text_add(&t, "+ ");
  const ft__words_t *parts[] = {&d->c->plan->runner, &cmd->argv};
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < parts[p]->n; i++) {
      ft__quote_word(&t, parts[p]->v[i]);
      ft__text_add(&t, " ");
    }
  say(d, ft__text_str(&t));
  ft__text_free(&t);
}

/* Start the launcher: stdin ours (the program) or none (ft-restore), its
 * standard error and its standard output each on a pipe of ours (the
 * output is passed on as it comes, and read for the launcher's banners:
 * filter.h's ft__filter_feed_out). */
static int start_launch(drv_t *d, const ft__launch_cmd_t *cmd, int stdin_ours) {
  ft__words_t argv = FT__WORDS_INIT;
  ft__words_addv(&argv, (const char *const *)d->c->plan->runner.v,
                 d->c->plan->runner.n);
  ft__words_addv(&argv, (const char *const *)cmd->argv.v, cmd->argv.n);
  ft__text_t path = FT__TEXT_INIT;
  if (argv.n == 0) {
    ft__words_free(&argv);
    return -1;
  }
  /* Not found: exec fails in the child, which exits 127 as a shell's
   * command would. */
  if (ft__env_command(d->c->env, argv.v[0], &path) != 1)
    ft__text_add(&path, argv.v[0]);
  ft__env_set(d->c->env, "FTRT_LAUNCH_ID", d->id);
  int p[2], o[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    ft__text_free(&path);
    ft__words_free(&argv);
    return -1;
  }
  if (pipe2(o, O_CLOEXEC) != 0) {
    close(p[0]);
    close(p[1]);
    ft__text_free(&path);
    ft__words_free(&argv);
    return -1;
  }
  /* Every signal blocked across the fork and our handlers gone in the
   * child before it unblocks them: a signal then is the launcher's, never
   * a byte of the child's in our signal pipe. */
  pid_t pid = ft__proc_fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    dup2(p[1], 2);
    dup2(o[1], 1);
    if (!stdin_ours) {
      int null = open("/dev/null", O_RDONLY);
      if (null > 0) {
        dup2(null, 0);
        close(null); /* not a descriptor more in the launcher */
      }
    }
    if (strchr(ft__text_str(&path), '/'))
      execve(ft__text_str(&path), argv.v, d->c->env->kv.v);
    else
      errno = ENOENT;
    fprintf(stderr, "ft-launch: %s: %s\n", argv.v[0],
            errno == ENOENT ? "command not found" : strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  ft__env_unset(d->c->env, "FTRT_LAUNCH_ID");
  close(p[1]);
  close(o[1]);
  ft__text_free(&path);
  ft__words_free(&argv);
  if (pid < 0) {
    close(p[0]);
    close(o[0]);
    return -1;
  }
  d->mpirun = pid;
  d->err_fd = p[0];
  d->out_fd = o[0];
  return 0;
}

/* A PREPARE of the filter: the spares a recovery may take next. */
static void prepare_spares(drv_t *d, uint64_t bytes) {
  if (!(d->run_flags & FT_LAUNCH_RUN_PREPARE))
    return;
  const char *h[FT_LAUNCH_HOSTS_MAX];
  int n = ft__launch_candidates(d->m, h, FT_LAUNCH_HOSTS_MAX);
  d->probe.envp = d->c->env->kv.v;
  if (n > 0)
    ft__spares_prepare(&d->spares, h, n, bytes);
}

static void append_times_file(drv_t *d, const char *line, int warn) {
  const char *path = d->c->args->times;
  if (!*path)
    return;
  FILE *f = fopen(path, "a");
  int ok = f && fprintf(f, "%s\n", line) >= 0;
  if (f && fclose(f) != 0)
    ok = 0;
  if (!ok && warn) {
    ft__text_t t = FT__TEXT_INIT;
    ft__text_addf(&t, "warning: cannot append to --times %s", path);
    say(d, ft__text_str(&t));
    ft__text_free(&t);
  }
}

/* --log: opened for the launch under way (not the children's), its first
 * line the launch's ID; the filter names it in its count of held lines.
 * 0, or -1 when the filter cannot hold its name. */
/* The launch's log: --log FILE, else ${TMPDIR:-/tmp}/ft-launch.UID.JOB.log,
 * made private (0600), never through a link, and only when it is this
 * user's: what the filter did not show is kept there. */
static int open_log(drv_t *d) {
  const char *path = d->c->args->log;
  char def[4096];
  if (!*path) {
    const char *tmp = ft__env_str(d->c->env, "TMPDIR");
    snprintf(def, sizeof(def), "%s/ft-launch.%u.%s.log", *tmp ? tmp : "/tmp",
             (unsigned)getuid(), d->c->args->job);
    for (char *c = def + strlen(*tmp ? tmp : "/tmp") + 1; *c; c++)
      if (*c == '/')
        *c = '_'; /* a job name with a '/' stays in that directory */
    path = def;
  }
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                0600);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                  st.st_uid != getuid())) {
    close(fd);
    fd = -1;
  }
  if (fd < 0 || !(d->log = fdopen(fd, "a"))) {
    if (fd >= 0)
      close(fd);
    ft__text_t t = FT__TEXT_INIT;
    ft__text_addf(&t, "warning: cannot append to the log %s: what is not "
                      "shown is not kept",
                  path);
    say(d, ft__text_str(&t));
    ft__text_free(&t);
    return 0;
  }
  setvbuf(d->log, NULL, _IOLBF, 0);
  fprintf(d->log, "ft-launch: launch %s\n", d->id);
  return ft__filter_log(d->filter, path) == FT_OK ? 0 : -1;
}

/* What the filter made of the last bytes. */
static void filter_outputs(drv_t *d) {
  ft__filter_out_t o;
  while (ft__filter_next(d->filter, &o)) {
    switch (o.kind) {
    case FT_FILTER_SHOW:
      ft__proc_write_all(2, o.text, o.len);
      break;
    case FT_FILTER_PREPARE:
      prepare_spares(d, o.bytes);
      break;
    case FT_FILTER_TELL: {
      ft__text_t *t = d->tell_later ? &d->later : &d->line;
      ft__text_clear(&d->line);
      ft__text_addn(t, o.text, o.len);
      ft__text_add(t, "\n");
      if (!d->tell_later) /* one write a line */
        ft__proc_write_all(2, ft__text_str(t), t->len);
      break;
    }
    case FT_FILTER_STAMPS: {
      ft__text_t t = FT__TEXT_INIT;
      ft__text_addn(&t, o.text, o.len);
      append_times_file(d, ft__text_str(&t), 0);
      ft__text_free(&t);
      break;
    }
    case FT_FILTER_HIDE: /* kept by the filter too */
      if (d->log) {
        fwrite(o.text, 1, o.len, d->log);
        fputc('\n', d->log);
      }
      break;
    case FT_FILTER_LATE: /* a failing attempt's line, with its "\n" */
      if (d->log)
        fwrite(o.text, 1, o.len, d->log);
      break;
    default: /* TIMES: kept by the filter */
      break;
    }
  }
}

static void read_err(drv_t *d) {
  char buf[65536];
  ssize_t n = read(d->err_fd, buf, sizeof(buf));
  if (n > 0) {
    ft__filter_feed(d->filter, buf, (size_t)n);
    filter_outputs(d);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(d->err_fd);
    d->err_fd = -1;
  }
}

/* The launcher's standard output goes to ours through outq, written as
 * our standard output takes it (poll's POLLOUT, PIPE_BUF at a time, which
 * a pipe with room takes without blocking): a reader that stalls never
 * stops ft-launch from hearing signals, verdicts and mpirun's standard
 * error.  Past OUTQ_MAX bytes waiting, mpirun's output is not read (it
 * waits, as it would writing to ours).  A write that fails (the reader
 * gone, EPIPE) drops the output from then on: the job goes on. */
#define OUTQ_MAX (1 << 20)
#define OUT_CHUNK 4096

static size_t outq_len(const drv_t *d) { return d->outq.len - d->outq_off; }

static void write_out(drv_t *d) {
  size_t n = outq_len(d);
  if (n > OUT_CHUNK)
    n = OUT_CHUNK;
  ssize_t w = n ? write(1, d->outq.s + d->outq_off, n) : 0;
  if (w > 0)
    d->outq_off += (size_t)w;
  else if (w < 0 && errno != EINTR && errno != EAGAIN)
    d->out_broken = 1;
  if (d->out_broken || d->outq_off == d->outq.len) {
    ft__text_clear(&d->outq);
    d->outq_off = 0;
  }
}

static void read_out(drv_t *d) {
  char buf[65536];
  ssize_t n = read(d->out_fd, buf, sizeof(buf));
  if (n > 0) {
    if (!d->out_broken && ft__text_addn(&d->outq, buf, (size_t)n) != FT_OK)
      d->out_broken = 1; /* out of memory: dropped, as a gone reader's */
    if (d->filter) {
      ft__filter_feed_out(d->filter, buf, (size_t)n);
      filter_outputs(d);
    }
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(d->out_fd);
    d->out_fd = -1;
  }
}

/* The launcher's two pipes and our standard output, for up to ms
 * milliseconds (-1: until one is ready), after fds[0..nfds) of the
 * caller's, whose revents it leaves set.  poll's result. */
static int pump(drv_t *d, struct pollfd *fds, int nfds, int ms) {
  struct pollfd p[8];
  for (int i = 0; i < nfds; i++)
    p[i] = fds[i];
  p[nfds] = (struct pollfd){d->err_fd, POLLIN, 0};
  p[nfds + 1] = (struct pollfd){
      outq_len(d) < OUTQ_MAX ? d->out_fd : -1, POLLIN, 0};
  p[nfds + 2] = (struct pollfd){outq_len(d) ? 1 : -1, POLLOUT, 0};
  int n = poll(p, (nfds_t)nfds + 3, ms);
  if (n <= 0)
    return n;
  for (int i = 0; i < nfds; i++)
    fds[i].revents = p[i].revents;
  if (p[nfds].revents)
    read_err(d);
  if (p[nfds + 1].revents)
    read_out(d);
  if (p[nfds + 2].revents)
    write_out(d);
  return n;
}

/* END: TERM now, KILL 2 s later (the loop sends it). */
static void end_launch(drv_t *d) {
  if (d->mpirun <= 0 || d->end_at)
    return;
  if (d->filter) /* what the program says from now on is its dying */
    ft__filter_failing(d->filter);
  if (kill(d->mpirun, SIGTERM) == 0)
    d->end_at = mono_now() + 2.0;
}

static void reap(drv_t *d) {
  int st;
  pid_t r;
  /* Only the launcher: the other children are their modules' to wait
   * for (the watchdog's, the spares'). */
  if (d->mpirun > 0 && (r = waitpid(d->mpirun, &st, WNOHANG)) == d->mpirun) {
    d->status = ft__proc_status(st);
    d->mpirun = 0;
  }
}

/* The watchdog's verdict: "HOST MS FLAGS". */
static void read_verdict(drv_t *d, ft__launch_event_t *ev, char *host,
                         size_t len) {
  char buf[256];
  ssize_t n = read(d->verdict_fd, buf, sizeof(buf) - 1);
  close(d->verdict_fd);
  d->verdict_fd = -1;
  if (n <= 0)
    return;
  buf[n] = '\0';
  unsigned long long ms = 0;
  unsigned flags = 0;
  char h[128];
  if (sscanf(buf, "%127s %llu %u", h, &ms, &flags) < 1)
    return;
  snprintf(host, len, "%s", h);
  *ev = (ft__launch_event_t){.kind = FT_LAUNCH_EV_UNREACHABLE,
                             .ms = ms,
                             .host = host,
                             .flags = flags ? FT_LAUNCH_PING_WAIT : 0};
}

static int act(drv_t *d, const ft__launch_action_t *a);

/* Feed ev, and carry out what it decides up to the RUN or PROBE that
 * asks for the next event (NEXT: it is in d->next) or the EXIT (its
 * status).  GO_ON: nothing more to do (a refused event; the machine
 * awaits the next one). */
static int feed(drv_t *d, const ft__launch_event_t *ev) {
  if (ft__launch_event(d->m, ev) != FT_OK)
    return GO_ON;
  ft__launch_action_t a;
  while (ft__launch_action(d->m, &a)) {
    int rc = act(d, &a);
    if (rc != GO_ON)
      return rc;
  }
  return GO_ON;
}

/* An event fed while a launch runs (a verdict, a signal): it asks no RUN
 * nor PROBE (the machine asks none then); one that did would be a defect,
 * and ends ft-launch rather than lose the launch under way. */
static int feed_during(drv_t *d, const ft__launch_event_t *ev) {
  int rc = feed(d, ev);
  return rc == NEXT ? FT_LAUNCH_EXIT_FAIL : rc;
}

/* A SIGNAL for d->next: the signal seen, taken. */
static int next_signal(drv_t *d) {
  d->next = (ft__launch_event_t){.kind = FT_LAUNCH_EV_SIGNAL,
                                 .signo = d->signo};
  d->signo = 0;
  return NEXT;
}

/* The launch under way until its launcher ends; a signal or a verdict is
 * fed to the machine as it comes.  >= 0: ft-launch's exit status (the
 * machine said EXIT on a signal). */
static int wait_launch(drv_t *d) {
  while (d->mpirun > 0) {
    struct pollfd p[2] = {{sig_pipe[0], POLLIN, 0},
                          {d->verdict_fd, POLLIN, 0}};
    int timeout = -1;
    if (d->end_at) {
      double left = d->end_at - mono_now();
      timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
    }
    int n = pump(d, p, 2, timeout);
    if (n < 0 && errno != EINTR)
      return FT_LAUNCH_EXIT_FAIL;
    if (p[0].revents) {
      take_signals(d);
      reap(d);
    }
    if (p[1].revents) {
      ft__launch_event_t ev = {0};
      char host[128];
      read_verdict(d, &ev, host, sizeof(host));
      if (ev.kind && d->filter)
        ft__filter_failing(d->filter);
      if (ev.kind) {
        int rc = feed_during(d, &ev);
        if (rc >= 0)
          return rc;
      }
    }
    if (d->end_at && mono_now() >= d->end_at && d->mpirun > 0) {
      kill(d->mpirun, SIGKILL);
      d->end_at = 0;
    }
    if (d->signo) {
      ft__launch_event_t ev = {.kind = FT_LAUNCH_EV_SIGNAL, .signo = d->signo};
      d->signo = 0;
      int rc = feed_during(d, &ev);
      if (rc >= 0)
        return rc;
    }
  }
  return GO_ON;
}

/* After the launcher: the watchdog, the leftovers, the rest of the pipe
 * (10 s bound a writer that outlived the launch). */
static void teardown(drv_t *d) {
  if (d->watchdog > 0) {
    ft__watchdog_stop(d->watchdog);
    d->watchdog = 0;
  }
  if (d->verdict_fd >= 0) {
    close(d->verdict_fd);
    d->verdict_fd = -1;
  }
  if (d->id[0])
    ft__leftovers_kill(d->id);
  double until = mono_now() + 10.0;
  while (d->err_fd >= 0 || d->out_fd >= 0 || outq_len(d)) {
    double left = until - mono_now();
    if (left <= 0)
      break;
    pump(d, NULL, 0, (int)(left * 1000) + 1);
  }
  ft__text_clear(&d->outq); /* a reader stalled past the bound: dropped */
  d->outq_off = 0;
  if (d->err_fd >= 0) {
    close(d->err_fd);
    d->err_fd = -1;
  }
  if (d->out_fd >= 0) {
    close(d->out_fd);
    d->out_fd = -1;
  }
  if (d->filter) {
    ft__filter_end(d->filter);
    filter_outputs(d);
  }
}

static void close_log(drv_t *d) {
  if (d->log)
    fclose(d->log);
  d->log = NULL;
}

static void kept_of_filter(drv_t *d) {
  close_log(d);
  ft__text_clear(&d->times);
  ft__text_clear(&d->hidden);
  if (!d->filter)
    return;
  ft__text_add(&d->times, ft__filter_times(d->filter));
  ft__text_add(&d->hidden, ft__filter_hidden(d->filter));
  ft__filter_free(d->filter);
  d->filter = NULL;
}

/* A kept ftrt-times line of WHAT? */
static int times_has(const drv_t *d, const char *what) {
  ft__stamps_t s = FT__STAMPS_INIT;
  int r = ft__stamps_read_times(&s, ft__text_str(&d->times), what, "");
  ft__stamps_free(&s);
  return r == 1;
}

static void new_id(drv_t *d) {
  unsigned r = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
      r = (unsigned)(wall_now() * 1e6);
    close(fd);
  }
  snprintf(d->id, sizeof(d->id), "%d-%u", (int)getpid(), r);
}

static const char *const r_keys[] = {"r_mpi_ms",     "r_survey_ms",
                                     "r_rebuilt_ms", "r_bytes",
                                     "r_prepared",   "r_fresh_ms",
                                     "r_full_host"};

/* The stamps before a launch: a relaunch's account, ft-restore's start. */
static void stamps_before(drv_t *d, const ft__launch_action_t *a,
                          unsigned long long t0) {
  ft__text_clear(&d->account);
  if (a->flags & FT_LAUNCH_RUN_RESTORE) {
    ft__stamps_setu(&d->ts, "restore_start", t0);
    const char *r = ft__stamps_get(&d->ts, "restores");
    ft__stamps_setu(&d->ts, "restores", (r ? strtoull(r, NULL, 10) : 0) + 1);
    for (size_t i = 0; i < sizeof(r_keys) / sizeof(*r_keys); i++)
      ft__stamps_unset(&d->ts, r_keys[i]);
    return;
  }
  if (a->flags & FT_LAUNCH_RUN_REBUILD) {
    /* the account is the rebuild's in the relaunch: no ft-restore's */
    ft__stamps_unset(&d->ts, "restore_start");
    ft__stamps_unset(&d->ts, "restore_end");
    for (size_t i = 0; i < 6; i++)
      ft__stamps_unset(&d->ts, r_keys[i]);
    ft__stamps_set(&d->ts, "restores", "0");
  }
  if (a->recovery) {
    ft__stamps_setu(&d->ts, "relaunch", t0);
    ft__stamps_setu(&d->ts, "recovery", (unsigned long long)a->recovery);
    ft__stamps_set(&d->ts, "mode", ft__launch_mode_name(a->mode));
    ft__stamps_format(&d->ts, NULL, &d->account);
  }
}

/* In a Slurm allocation, once a run failed: should Slurm report hosts of
 * the run down or not responding, those are the lost ones named (1), not
 * mpirun's.  Slurm ends a job step on every node when one of its nodes
 * fails, so the daemon mpirun lost first can be on any host then, or
 * mpirun names none; until Slurm has noticed a loss (SlurmdTimeout),
 * mpirun's word stands (0). */
static int slurm_named(drv_t *d, const ft__launch_action_t *a,
                       ft__words_t *lost) {
  if (!d->probe.sinfo || d->status == 0 || a->nhosts <= 0)
    return 0;
  /* Only what Slurm has set down: one it merely has not heard from for a
   * ping or so may be a healthy host (the probe asks it). */
  ft__words_t down = FT__WORDS_INIT, silent = FT__WORDS_INIT;
  d->probe.envp = d->c->env->kv.v;
  int named = ft__probe_slurm_down(&d->probe, a->hosts, a->nhosts, &down,
                                   &silent) == FT_OK &&
              down.n > 0;
  ft__words_free(&silent);
  if (named) {
    ft__words_free(lost);
    *lost = down;
  } else {
    ft__words_free(&down);
  }
  return named;
}

/* RUN: one launch, to its end.  >= 0: ft-launch's exit status (a signal
 * ended it); NEXT: the machine awaits its EXIT, in d->next (or the signal
 * that came before it started or during its teardown). */
static int run_launch(drv_t *d, const ft__launch_action_t *a) {
  ft__launch_cmd_t cmd = FT__LAUNCH_CMD_INIT;
  int restore = (a->flags & FT_LAUNCH_RUN_RESTORE) != 0;
  take_signals(d);
  if (d->signo)
    return next_signal(d); /* no launch started only to be ended */
  d->run_flags = a->flags;
  new_id(d);
  if (build_launch(d, a, &cmd) != 0) {
    say(d, "cannot build the launch's command line, or write its hostfile");
    ft__words_free(&cmd.argv);
    ft__text_free(&cmd.hostfile);
    return FT_LAUNCH_EXIT_FAIL;
  }
  unsigned long long t0 = wall_ms();
  double m0 = mono_now();
  stamps_before(d, a, t0);
  if (d->c->args->verbose)
    verbose_line(d, &cmd);
  ft__text_clear(&d->later);
  struct stat o1, o2;
  d->tell_later = d->account.len && fstat(1, &o1) == 0 &&
                  fstat(2, &o2) == 0 && o1.st_dev == o2.st_dev &&
                  o1.st_ino == o2.st_ino;
  if (ft__filter_new(&d->filter, d->id,
                     d->account.len ? ft__text_str(&d->account) : NULL,
                     d->c->args->verbose) != FT_OK ||
      open_log(d) != 0 || start_launch(d, &cmd, !restore) != 0) {
    say(d, "cannot start the launcher");
    close_log(d);
    ft__words_free(&cmd.argv);
    ft__text_free(&cmd.hostfile);
    return FT_LAUNCH_EXIT_FAIL;
  }
  ft__words_free(&cmd.argv);
  ft__text_free(&cmd.hostfile);
  d->end_at = 0;
  /* The watchdog: in a Slurm allocation it asks Slurm's view alone (a job
   * step a round would be one more job step); with srun as the probe and
   * no view, there is none. */
  if (a->nhosts > 0 &&
      (d->probe.cluster || d->probe.sinfo ||
       !ft__launcher_is_srun(d->probe.words, d->probe.nwords))) {
    int v[2];
    d->probe.envp = d->c->env->kv.v;
    if (pipe2(v, O_CLOEXEC) == 0) {
      ft__watchdog_t w = {.mpirun = d->mpirun,
                          .hosts = a->hosts,
                          .nhosts = a->nhosts,
                          .probe = &d->probe,
                          .verdict_fd = v[1]};
      if (ft__watchdog_start(&w, &d->watchdog) != FT_OK)
        d->watchdog = 0;
      close(v[1]);
      d->verdict_fd = v[0];
    }
  }
  int rc = wait_launch(d);
  unsigned long long end = wall_ms();
  teardown(d);
  kept_of_filter(d);
  if (rc >= 0)
    return rc;
  if (restore) {
    ft__stamps_setu(&d->ts, "restore_end", wall_ms());
    ft__stamps_read_times(&d->ts, ft__text_str(&d->times), "restore", "r_");
    ft__stamps_read_times(&d->ts, ft__text_str(&d->times), "fresh", "r_");
    ft__stamps_read_times(&d->ts, ft__text_str(&d->times), "full", "r_");
  }
  ft__words_t *lost = &d->next_hosts;
  ft__words_free(lost);
  d->c->be->lost(ft__text_str(&d->hidden), lost);
  unsigned flags = 0;
  if (slurm_named(d, a, lost))
    flags |= FT_LAUNCH_SLURM_NAMED;
  if (times_has(d, "restore") || times_has(d, "fresh"))
    flags |= FT_LAUNCH_REBUILT;
  if (times_has(d, "job") || times_has(d, "fresh"))
    flags |= FT_LAUNCH_ACCOUNTED;
  if (restore && ft__stamps_get(&d->ts, "r_fresh_ms"))
    flags |= FT_LAUNCH_FRESH;
  const char *full = restore ? ft__stamps_get(&d->ts, "r_full_host") : NULL;
  if (full)
    snprintf(d->next_host, sizeof(d->next_host), "%s", full);
  d->next = (ft__launch_event_t){
      .kind = FT_LAUNCH_EV_EXIT,
      .status = d->status,
      .ms = (uint64_t)((mono_now() - m0) * 1000.0),
      .hosts = (const char *const *)lost->v,
      .nhosts = lost->n,
      .host = full ? d->next_host : NULL,
      .flags = flags};
  if (!restore) {
    /* TS anew: the failed launch's end, its teardown's */
    ft__stamps_clear(&d->ts);
    ft__stamps_setu(&d->ts, "fail", end);
    ft__stamps_setu(&d->ts, "torn", wall_ms());
    ft__stamps_set(&d->ts, "restores", "0");
  }
  /* A signal during the teardown (its wait for the pipe's writers takes
   * up to 10 s): the machine takes it first, before any restart. */
  take_signals(d);
  if (d->signo)
    return next_signal(d);
  return NEXT;
}

/* PROBE: the hosts asked, then PROBED, in d->next (or the signal that
 * came: a signal ends the probes under way, probe.h's stop). */
static int run_probe(drv_t *d, const ft__launch_action_t *a) {
  ft__words_t *bad = &d->next_hosts;
  ft__words_free(bad);
  take_signals(d);
  if (d->signo)
    return next_signal(d);
  unsigned long long t0 = wall_ms();
  d->probe.envp = d->c->env->kv.v;
  ft__probe_unreachable(&d->probe, a->hosts, a->nhosts, a->tries, bad);
  /* The recovery's time in probes: what the supervisor's own part of it
   * leaves out (ft-bench's downtime table). */
  const char *was = ft__stamps_get(&d->ts, "probes_ms");
  ft__stamps_setu(&d->ts, "probes_ms",
                  (was ? strtoull(was, NULL, 10) : 0) + wall_ms() - t0);
  take_signals(d);
  if (d->signo)
    return next_signal(d);
  d->next = (ft__launch_event_t){.kind = FT_LAUNCH_EV_PROBED,
                                 .hosts = (const char *const *)bad->v,
                                 .nhosts = bad->n};
  return NEXT;
}

/* SUMMARY: summary() for the node set as it is now. */
static void summary(drv_t *d) {
  ft__launch_plan_t p = *d->c->plan;
  const char *h[FT_LAUNCH_HOSTS_MAX];
  int n = ft__launch_hosts(d->m, h, FT_LAUNCH_HOSTS_MAX);
  ft__words_t hosts = FT__WORDS_INIT, lines = FT__WORDS_INIT;
  ft__words_addv(&hosts, h, n);
  char nodes[24], left[24];
  if (n > 0) {
    snprintf(nodes, sizeof(nodes), "%d", n);
    p.nodes = nodes, p.nnodes = n;
  }
  p.hosts = hosts;
  snprintf(left, sizeof(left), "%d", ft__launch_spares_left(d->m));
  if (ft__launch_summary(&p, d->c->args, left, &lines) == FT_OK)
    for (int i = 0; i < lines.n; i++)
      say(d, lines.v[i]);
  ft__words_free(&lines);
  ft__words_free(&hosts);
}

/* mpirun_said: the first sentence of the first banner that says more than
 * that the job failed. */
static void mpirun_said(drv_t *d) {
  if (d->c->args->verbose)
    return;
  const char *s = ft__text_str(&d->hidden);
  while (*s) {
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    static const char primary[] = "Primary job",
                      exited[] = "mpirun detected that one or more "
                                 "processes exited";
    if (n && s[0] != '[' && strncmp(s, primary, sizeof(primary) - 1) != 0 &&
        strncmp(s, exited, sizeof(exited) - 1) != 0) {
      /* up to the first '.' or ':' that ends the text or a blank follows */
      size_t end = n;
      for (size_t i = 0; i < n; i++)
        if ((s[i] == '.' || s[i] == ':') && (i + 1 == n || s[i + 1] == ' ')) {
          end = s[i] == ':' ? i : i + 1;
          break;
        }
      ft__text_t t = FT__TEXT_INIT;
      ft__text_add(&t, "mpirun said: ");
      ft__text_addn(&t, s, end > 200 ? 200 : end);
      ft__text_add(&t, " (--verbose shows its messages)");
      say(d, ft__text_str(&t));
      ft__text_free(&t);
      return;
    }
    s += n + (e != NULL);
  }
}

/* One action; >= 0: ft-launch's exit status (EXIT, or a run a signal
 * ended); NEXT after a RUN or PROBE: the event that answers it is in
 * d->next; GO_ON else. */
static int act(drv_t *d, const ft__launch_action_t *a) {
  switch (a->kind) {
  case FT_LAUNCH_ACT_SAY:
    say_line(d, a->flags, a->text);
    return GO_ON;
  case FT_LAUNCH_ACT_SUMMARY:
    summary(d);
    return GO_ON;
  case FT_LAUNCH_ACT_RUN:
    return run_launch(d, a);
  case FT_LAUNCH_ACT_END:
    end_launch(d);
    return GO_ON;
  case FT_LAUNCH_ACT_PROBE:
    return run_probe(d, a);
  case FT_LAUNCH_ACT_MPIRUN_SAID:
    mpirun_said(d);
    return GO_ON;
  case FT_LAUNCH_ACT_HELD:
    if (d->later.len)
      ft__proc_write_all(2, d->later.s, d->later.len);
    ft__text_clear(&d->later);
    return GO_ON;
  case FT_LAUNCH_ACT_STAMPS:
    if (d->account.len)
      append_times_file(d, ft__text_str(&d->account), 1);
    return GO_ON;
  case FT_LAUNCH_ACT_STAMP:
    ft__stamps_setu(&d->ts,
                    a->point == FT_LAUNCH_PROBED ? "probed" : "regrouped",
                    wall_ms());
    return GO_ON;
  case FT_LAUNCH_ACT_EXIT:
    if (d->mpirun > 0) {
      end_launch(d);
      while (d->mpirun > 0) {
        int st;
        pid_t r = waitpid(d->mpirun, &st, WNOHANG);
        if (r == d->mpirun || (r < 0 && errno != EINTR)) {
          d->mpirun = 0;
          break;
        }
        if (d->end_at && mono_now() >= d->end_at) {
          kill(d->mpirun, SIGKILL);
          d->end_at = 0;
        }
        /* its output read meanwhile: a full pipe would hold mpirun's end */
        pump(d, NULL, 0, 10);
      }
      teardown(d);
      kept_of_filter(d);
    }
    return a->code;
  default:
    return GO_ON;
  }
}

/* ---- the machine's configuration ---- */

/* A count of the command line (validated: digits, >= 0) as the machine
 * takes it: one past INT_MAX (--restarts 4294967296) is INT_MAX, as good
 * as unbounded, not the int it would wrap to (0, or a negative the
 * machine refuses). */
static int count_of(const char *s) {
  int64_t v = 0;
  if (!s || !*s || ft__launch_arith(s, &v) != 0 || v < 0)
    return 0;
  return v > INT_MAX ? INT_MAX : (int)v;
}

static int make_machine(drv_t *d, ft__text_t *probe_text) {
  const ft__launch_args_t *a = d->c->args;
  const ft__launch_plan_t *p = d->c->plan;
  ft__text_join(probe_text, (const char *const *)p->probe.v, p->probe.n, " ");
  int ec_k = 0, ec_m = 0;
  if (*a->ec)
    sscanf(a->ec, "%d+%d", &ec_k, &ec_m);
  const ft__words_t *pool = *a->cluster ? &p->cluster_spares : &p->pool;
  const ft__words_t *hosts = &p->hosts;
  if (d->r_ordered)
    hosts = &d->r_hosts, pool = &d->r_pool;
  ft__launch_config_t cfg = {
      .hosts = (const char *const *)hosts->v,
      .nhosts = hosts->n,
      .nodes = (int)p->nnodes,
      .pool = (const char *const *)pool->v,
      .npool = pool->n,
      .spares = count_of(p->spares),
      .restarts = count_of(a->restarts),
      .cluster = *a->cluster != '\0',
      .slurm = d->probe.sinfo != NULL,
      .probe = ft__text_str(probe_text),
      .probe_tries = count_of(a->probe_tries),
      .timeout = a->timeout,
      .restore_job = a->restore_job,
      .one_per_node = a->one_per_node,
      .cold_spares = a->cold_spares,
      .fresh = d->fresh != NULL,
      .restore_first = d->r_rebuild,
      .shrunk = d->r_shrunk,
      .ec_k = ec_k,
      .ec_m = ec_m,
      .ec_name = *a->ec_name ? a->ec_name : NULL};
  if (cfg.probe_tries < 1)
    cfg.probe_tries = 1;
  return ft__launch_init(&d->m, &cfg);
}

/* Ask host for its store of the job: ft-status through the backend's host
 * command, bounded by --timeout, started into *c (not started: c->pid 0,
 * no store). */
static void store_ask(drv_t *d, const char *status_cmd, const char *host,
                      ft__command_t *c) {
  const ft__launch_args_t *a = d->c->args;
  ft__text_t line = FT__TEXT_INIT, prog = FT__TEXT_INIT;
  ft__words_t argv = FT__WORDS_INIT;
  const char *store = ft__env_str(d->c->env, "FT_STORE_ROOT");
  if (ft__quote_word(&line, status_cmd) == FT_OK &&
      ft__text_add(&line, " --job ") == FT_OK &&
      ft__quote_word(&line, a->job) == FT_OK &&
      (!*store || (ft__text_add(&line, " --store ") == FT_OK &&
                   ft__quote_word(&line, store) == FT_OK)) &&
      d->c->be->host_cmd(&d->spare_job, d->probe.words, d->probe.nwords, host,
                         ft__text_str(&line), &argv) == FT_OK &&
      argv.n > 0 && ft__proc_find(d->c->env->kv.v, argv.v[0], &prog) == 1) {
    char *was = argv.v[0];
    argv.v[0] = prog.s;
    /* its stderr too: a node without a store says so, and that is no
     * news to the user */
    ft__command_start(argv.v, d->c->env->kv.v, 1, d->probe.timeout_s, c);
    argv.v[0] = was;
  }
  ft__words_free(&argv);
  ft__text_free(&prog);
  ft__text_free(&line);
}

/* The store store_ask asked for into *st (node -1 when there is none):
 * ft-status's exit status (0 a store, 1 none; else the node could not be
 * asked, or said nothing clear). */
static int store_number(ft__command_t *c, ft__resume_store_t *st) {
  ft__text_t out = FT__TEXT_INIT;
  int status = 127;
  *st = (ft__resume_store_t){.node = -1};
  if (ft__command_finish(c, &out, &status) == FT_OK && status == 0 &&
      !ft__resume_parse(ft__text_str(&out), st))
    status = 127; /* a store without a layout line: not understood */
  ft__text_free(&out);
  return status;
}

/* A requeued run of a Slurm batch job (SLURM_RESTART_COUNT above 0): the
 * allocation's nodes in the order of the job's stores (resume.h). */
static void requeued_order(drv_t *d) {
  const ft__launch_args_t *a = d->c->args;
  const ft__launch_plan_t *p = d->c->plan;
  const char *count = ft__env_str(d->c->env, "SLURM_RESTART_COUNT");
  if (!*a->slurm || *a->cluster || a->one_per_node || d->fresh ||
      !*count || strcmp(count, "0") == 0 || p->hosts.n <= 0)
    return;
  int n = p->hosts.n + p->pool.n;
  const char **nodes = ft__calloc((size_t)n, sizeof(*nodes));
  ft__resume_store_t *store = ft__calloc((size_t)n, sizeof(*store));
  int *order = ft__calloc((size_t)n, sizeof(int));
  ft__command_t *ask = ft__calloc((size_t)n, sizeof(*ask));
  char status_cmd[4096];
  find_program(d, "FT_STATUS", "ft-status", status_cmd, sizeof(status_cmd));
  int ok = nodes && store && order && ask;
  /* The nodes asked 64 at once, each bounded by --timeout.  One that
   * could not be asked (ft-status neither found a store nor said there is
   * none) leaves the order as it is: its number would be given away. */
  d->probe.envp = d->c->env->kv.v;
  int unasked = -1, why = 0;
  for (int from = 0; ok && from < n; from += 64) {
    int to = from + 64 < n ? from + 64 : n;
    for (int i = from; i < to; i++) {
      nodes[i] = i < p->hosts.n ? p->hosts.v[i] : p->pool.v[i - p->hosts.n];
      ask[i] = (ft__command_t)FT__COMMAND_INIT;
      store_ask(d, status_cmd, nodes[i], &ask[i]);
    }
    for (int i = from; i < to; i++) {
      int st = store_number(&ask[i], &store[i]);
      if (st != 0 && st != 1 && unasked < 0)
        unasked = i, why = st;
    }
  }
  if (ok && unasked >= 0) {
    ft__text_t t = FT__TEXT_INIT;
    if (ft__text_addf(&t, "run %s of Slurm job %s (requeued): cannot ask %s "
                          "for its store of the job (ft-status exit %d): the "
                          "nodes keep the allocation's order",
                      count, ft__env_str(d->c->env, "SLURM_JOB_ID"),
                      nodes[unasked], why) == FT_OK)
      say(d, ft__text_str(&t));
    ft__text_free(&t);
    ok = 0;
  }
  int rebuild = 0, job = ok ? ft__resume_order(store, n, p->hosts.n, order,
                                               &rebuild)
                            : 0;
  if (job > 0) {
    ft__text_t t = FT__TEXT_INIT;
    int rc = ft__text_addf(&t, "run %s of Slurm job %s (requeued): the job's "
                               "stores put its nodes in order:",
                           count, ft__env_str(d->c->env, "SLURM_JOB_ID"));
    for (int k = 0; rc == FT_OK && k < n; k++) {
      rc = ft__words_add(k < job ? &d->r_hosts : &d->r_pool, nodes[order[k]]);
      if (rc == FT_OK && k < job)
        rc = ft__text_addf(&t, " %s", nodes[order[k]]);
    }
    if (rc == FT_OK && job < p->hosts.n)
      rc = ft__text_addf(&t, "; the job had shrunk to %d node(s) before it "
                             "was requeued: it resumes on them, the rest "
                             "stay spares",
                         job);
    for (int i = 0; rc == FT_OK && i < n; i++)
      if (store[i].stale)
        rc = ft__text_addf(&t, "; %s's store is of an older layout (stale): "
                               "not used",
                           nodes[i]);
    if (rc == FT_OK && rebuild)
      rc = ft__text_add(&t, "; ft-restore rebuilds the node(s) without a "
                            "store first, or hands over to the disk tier");
    if (rc == FT_OK) {
      d->r_ordered = 1, d->r_rebuild = rebuild;
      d->r_shrunk = job < p->hosts.n;
      say(d, ft__text_str(&t));
    }
    ft__text_free(&t);
  }
  ft__free(ask);
  ft__free(nodes);
  ft__free(store);
  ft__free(order);
}

/* INT, TERM and HUP end the job, but one ignored when ft-launch started
 * stays ignored, as bash left it (a signal ignored on entry to a shell
 * cannot be trapped): under nohup a hangup does not end the job, nor an
 * INT one started in the background of a script; what ft-launch starts
 * inherits it ignored, as under bash. */
static void signals_on(void) {
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return;
  struct sigaction sa, was;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  static const int ends[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof(ends) / sizeof(*ends); i++)
    if (sigaction(ends[i], NULL, &was) != 0 || was.sa_handler != SIG_IGN)
      sigaction(ends[i], &sa, NULL);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
}

int ft__launch_run(const ft__launch_ctx_t *ctx) {
  drv_t d = {.c = ctx, .err_fd = -1, .out_fd = -1, .verdict_fd = -1};
  ft__text_t probe_text = FT__TEXT_INIT;
  signals_on();
  find_program(&d, "FT_RESTORE", "ft-restore", d.restore, sizeof(d.restore));
  find_program(&d, "FT_SPARE", "ft-spare", d.spare_cmd, sizeof(d.spare_cmd));
  snprintf(d.cluster_cmd, sizeof(d.cluster_cmd), "%s/ft-cluster", ctx->here);
  d.hold = ft__env_get(ctx->env, "FT_HOLD");
  char *hold = d.hold ? strdup(d.hold) : NULL;
  d.hold = hold;
  d.fresh = ft__env_get(ctx->env, "FT_FRESH");
  char *fresh = d.fresh && *d.fresh ? strdup(d.fresh) : NULL;
  d.fresh = fresh;
  const ft__launch_args_t *a = ctx->args;
  double timeout_s = strtod(a->timeout, NULL);
  d.probe = (ft__probe_t){.cluster = *a->cluster ? a->cluster : NULL,
                          .cluster_cmd = d.cluster_cmd,
                          .words = (const char *const *)ctx->plan->probe.v,
                          .nwords = ctx->plan->probe.n,
                          .tries = count_of(a->probe_tries),
                          .timeout_s = timeout_s,
                          .timeout = a->timeout,
                          .be = ctx->be,
                          /* the environment's array moves as it grows:
                           * taken anew before each use */
                          .envp = ctx->env->kv.v,
                          .wake_fd = sig_pipe[0],
                          .stop = probes_stop,
                          .stop_arg = &d};
  if (d.probe.tries < 1)
    d.probe.tries = 1;
  d.probe.sinfo_failed = &d.sinfo_failed;
  /* In a Slurm allocation, Slurm's view where it has one (sinfo). */
  ft__text_t sinfo_path = FT__TEXT_INIT;
  if (*a->slurm && !*a->cluster &&
      ft__proc_find(ctx->env->kv.v, "sinfo", &sinfo_path) == 1)
    d.probe.sinfo = "sinfo";
  ft__text_free(&sinfo_path);
  ft__launch_plan_job(ctx->plan, a, "", 0, &d.spare_job);
  const char *store = ft__env_get(ctx->env, "FT_STORE_ROOT");
  d.spares = (ft__spares_t){.dir = ctx->tmp,
                            .job = a->job,
                            .store = store && *store ? store : NULL,
                            .ft_spare = d.spare_cmd,
                            .launch = &d.spare_job,
                            .probe = &d.probe};
  requeued_order(&d);
  int rc;
  if (make_machine(&d, &probe_text) != FT_OK) {
    rc = FT_LAUNCH_EXIT_FAIL;
    say(&d, "out of memory, or a placement the supervisor cannot hold");
  } else {
    /* One event at a time: each RUN or PROBE leaves the event that
     * answers it, fed here, so that the stack stays as deep whatever the
     * number of restarts. */
    ft__launch_event_t ev = {.kind = FT_LAUNCH_EV_START};
    rc = feed(&d, &ev);
    while (rc == NEXT) {
      ev = d.next;
      rc = feed(&d, &ev);
    }
    if (rc < 0)
      rc = ft__launch_exit_code(d.m) >= 0 ? ft__launch_exit_code(d.m)
                                          : FT_LAUNCH_EXIT_FAIL;
  }
  /* Whether a requeue may mend it: a loss, not the program's own status. */
  int lost = ft__launch_lost_end(d.m);
  d.probe.envp = ctx->env->kv.v;
  ft__spares_clear(&d.spares);
  ft__launch_destroy(d.m);
  /* A batch job ended unrecoverable in its allocation: requeued by Slurm
   * when it may be (requeue.h), as the very last step (Slurm ends the job
   * at once). */
  if (*a->slurm && !*a->cluster && lost) {
    ft__text_t line = FT__TEXT_INIT;
    ft__requeue(rc, ft__env_get(ctx->env, "SLURM_JOB_ID"),
                ft__env_str(ctx->env, "FT_PERSIST_DIR"),
                ft__env_str(ctx->env, "SLURM_RESTART_COUNT"),
                ft__env_str(ctx->env, "FT_REQUEUE_MAX"), ctx->env->kv.v,
                &line);
    if (line.len)
      say(&d, ft__text_str(&line));
    ft__text_free(&line);
  }
  ft__stamps_free(&d.ts);
  ft__text_free(&d.account);
  ft__text_free(&d.later);
  ft__text_free(&d.outq);
  ft__text_free(&d.line);
  ft__text_free(&d.times);
  ft__text_free(&d.hidden);
  ft__words_free(&d.next_hosts);
  ft__words_free(&d.r_hosts);
  ft__words_free(&d.r_pool);
  ft__text_free(&probe_text);
  free(hold);
  free(fresh);
  return rc;
}
