/*
 * The probes of launch/probe.h.  On a hostfile or in Slurm, each host is
 * probed by a bounded process of its own (proc.h: probe_host's tries, each
 * as "timeout -k 2 T" runs it), all of them started before any is waited
 * for, then waited for in the order of the hosts, as unreachable's
 * "probe_host H &" and "wait" did.  Every command line is made before the
 * first fork.  On the cluster, ft-cluster's ping answers for all hosts at
 * once.
 */
#include "launch/probe.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "launch/command.h"
#include "launch/proc.h"

/* ---- this host ---- */

/* What is_this_host compares with: $(hostname), $(hostname -s) (it cut at
 * the first dot) and $(hostname -f) (the canonical name the resolver
 * gives), each "" when unknown. */
typedef struct this_names {
  char name[256], short_name[256], full[256];
} this_names_t;

static void this_names(this_names_t *t) {
  memset(t, 0, sizeof(*t));
  if (gethostname(t->name, sizeof(t->name) - 1) != 0)
    t->name[0] = '\0';
  strcpy(t->short_name, t->name);
  t->short_name[strcspn(t->short_name, ".")] = '\0';
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = AI_CANONNAME;
  if (t->name[0] && getaddrinfo(t->name, NULL, &hints, &res) == 0) {
    if (res && res->ai_canonname)
      snprintf(t->full, sizeof(t->full), "%s", res->ai_canonname);
    freeaddrinfo(res);
  }
}

static int is_this(const this_names_t *t, const char *host) {
  if (strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
      strcmp(host, "::1") == 0)
    return 1;
  return strcmp(host, t->name) == 0 || strcmp(host, t->short_name) == 0 ||
         strcmp(host, t->full) == 0;
}

int ft__probe_is_this_host(const char *host) {
  if (strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
      strcmp(host, "::1") == 0)
    return 1;
  this_names_t t;
  this_names(&t);
  return is_this(&t, host);
}

/* ---- the cluster: ping from the head ---- */

int ft__probe_cluster_ping(const ft__probe_t *p, const char *const *hosts,
                           int n, int wait, ft__words_t *bad) {
  if (n <= 0)
    return FT_OK;
  ft__text_t prog = FT__TEXT_INIT, out = FT__TEXT_INIT;
  ft__words_t argv = FT__WORDS_INIT, lines = FT__WORDS_INIT;
  int found = p->cluster_cmd ? ft__proc_find(p->envp, p->cluster_cmd, &prog) : 0;
  int rc = found < 0 ? FT_ENOMEM : found == 0 ? FT_EIO : FT_OK;
  if (rc == FT_OK &&
      (ft__words_add(&argv, prog.s) != FT_OK ||
       ft__words_add(&argv, "ping") != FT_OK ||
       ft__words_add(&argv, "--name") != FT_OK ||
       ft__words_add(&argv, p->cluster) != FT_OK ||
       (wait > 0 && (ft__words_add(&argv, "--wait") != FT_OK ||
                     ft__words_addf(&argv, "%d", wait) != FT_OK)) ||
       ft__words_addv(&argv, hosts, n) != FT_OK))
    rc = FT_ENOMEM;
  int status = 0;
  if (rc == FT_OK)
    rc = ft__command_output(argv.v, p->envp, 0, &out, &status);
  /* A program that could not be started is ended with 127 by
   * ft__command_output and says nothing. */
  if (rc == FT_OK && status == 127 && out.len == 0)
    rc = FT_EIO;
  for (const char *s = ft__text_str(&out); rc == FT_OK && *s;) {
    size_t len = strcspn(s, "\n");
    rc = ft__words_addn(&lines, s, len);
    s += len + (s[len] == '\n');
  }
  for (int i = 0; rc == FT_OK && i < n; i++)
    if (ft__words_find(&lines, hosts[i]) >= 0)
      rc = ft__words_add(bad, hosts[i]);
  ft__words_free(&lines);
  ft__words_free(&argv);
  ft__text_free(&out);
  ft__text_free(&prog);
  return rc;
}

/* ---- Slurm's view ---- */

/* sinfo's %t: a state word, then flags (not responding '*', powered off
 * '~', powering up '#', pending power down '!', powering down '%',
 * maintenance '$', reboot '@' '^', planned '-', '+'). */
int ft__probe_slurm_state(const char *state) {
  char base[64];
  size_t len = strlen(state);
  int silent = 0, off = 0;
  while (len && strchr("*~#!%$@^-+", state[len - 1])) {
    silent |= state[len - 1] == '*';
    off |= state[len - 1] == '~';
    len--;
  }
  if (off)
    return FT__SLURM_LOST;
  int lost = 0;
  if (len < sizeof(base)) {
    memcpy(base, state, len);
    base[len] = '\0';
    static const char *const gone[] = {"down", "drain", "fail"};
    for (size_t i = 0; i < sizeof(gone) / sizeof(*gone); i++)
      lost |= strcmp(base, gone[i]) == 0;
  }
  return lost ? FT__SLURM_LOST : silent ? FT__SLURM_SILENT : FT__SLURM_UP;
}

int ft__probe_slurm_parse(const char *text, const char *const *hosts, int n,
                          ft__words_t *bad, ft__words_t *silent) {
  ft__words_t lost = FT__WORDS_INIT, quiet = FT__WORDS_INIT;
  int rc = FT_OK;
  for (const char *s = text; rc == FT_OK && *s;) {
    size_t len = strcspn(s, "\n");
    char node[256], state[64];
    int got = 0;
    if (len < sizeof(node)) {
      char line[256];
      memcpy(line, s, len);
      line[len] = '\0';
      got = sscanf(line, "%255s %63s", node, state);
    }
    int st = got == 2 ? ft__probe_slurm_state(state) : FT__SLURM_UP;
    if (st == FT__SLURM_LOST || (st == FT__SLURM_SILENT && !silent))
      rc = ft__words_add(&lost, node);
    else if (st == FT__SLURM_SILENT)
      rc = ft__words_add(&quiet, node);
    s += len + (s[len] == '\n');
  }
  /* A node listed twice (two partitions) is lost when either line says
   * so. */
  for (int i = 0; rc == FT_OK && i < n; i++)
    if (ft__words_find(&lost, hosts[i]) >= 0)
      rc = ft__words_add(bad, hosts[i]);
    else if (ft__words_find(&quiet, hosts[i]) >= 0)
      rc = ft__words_add(silent, hosts[i]);
  ft__words_free(&lost);
  ft__words_free(&quiet);
  return rc;
}

/* sinfo, bounded by --timeout (a controller that does not answer fails it
 * after Slurm's MessageTimeout, 10 s by default, each of its retries
 * too).  -a: the hidden partitions' nodes as well. */
int ft__probe_slurm_down(const ft__probe_t *p, const char *const *hosts, int n,
                         ft__words_t *bad, ft__words_t *silent) {
  if (!p->sinfo || n <= 0)
    return p->sinfo ? FT_OK : FT_EIO;
  ft__text_t prog = FT__TEXT_INIT, out = FT__TEXT_INIT, list = FT__TEXT_INIT;
  ft__words_t argv = FT__WORDS_INIT;
  int found = ft__proc_find(p->envp, p->sinfo, &prog);
  int rc = found < 0 ? FT_ENOMEM : found == 0 ? FT_EIO : FT_OK;
  if (rc == FT_OK)
    rc = ft__text_join(&list, hosts, n, ",");
  if (rc == FT_OK &&
      (ft__words_add(&argv, prog.s) != FT_OK ||
       ft__words_add(&argv, "-h") != FT_OK ||
       ft__words_add(&argv, "-a") != FT_OK ||
       ft__words_add(&argv, "-N") != FT_OK ||
       ft__words_add(&argv, "-n") != FT_OK ||
       ft__words_add(&argv, list.s) != FT_OK ||
       ft__words_add(&argv, "-o") != FT_OK ||
       ft__words_add(&argv, "%N %t") != FT_OK))
    rc = FT_ENOMEM;
  int status = 127;
  if (rc == FT_OK)
    rc = ft__command_bounded(argv.v, p->envp, 1, p->timeout_s, &out, &status);
  if (rc == FT_OK && status != 0)
    rc = FT_EIO;
  if (rc == FT_OK)
    rc = ft__probe_slurm_parse(ft__text_str(&out), hosts, n, bad, silent);
  if (rc == FT_EIO && p->sinfo_failed && !*p->sinfo_failed) {
    /* Once: without a view every host is probed (the watchdog: none is
     * judged) until sinfo answers again. */
    *p->sinfo_failed = 1;
    ft__command_chomp(&out);
    const char *said = ft__text_str(&out);
    size_t len = strcspn(said, "\n");
    ft__proc_say("warning: cannot ask Slurm for its view of the job's nodes "
                 "(sinfo %s%d%s%.*s): %s",
                 status == 124 || status == 137 ? "timed out, status "
                                                : "exit ",
                 status, len ? ": " : "", (int)(len > 200 ? 200 : len), said,
                 p->view_only ? "no host is judged lost by it until it "
                                "answers"
                              : "the hosts are probed instead");
  }
  ft__words_free(&argv);
  ft__text_free(&list);
  ft__text_free(&out);
  ft__text_free(&prog);
  return rc;
}

/* ---- a hostfile's or Slurm's hosts: the probe ---- */

typedef struct one {
  ft__words_t argv;
  ft__text_t prog;
  int here;  /* this host: not probed */
  int found; /* prog names the program */
  pid_t pid; /* its process until waited for, then 0 */
  int status; /* its exit status, once waited for */
} one_t;

static int prepare(const ft__probe_t *p, const this_names_t *t,
                   const char *host, one_t *o) {
  if ((o->here = is_this(t, host)))
    return FT_OK;
  if (p->be->probe_cmd(p->words, p->nwords, host, &o->argv) != FT_OK)
    return FT_ENOMEM;
  o->found = o->argv.n > 0 ? ft__proc_find(p->envp, o->argv.v[0], &o->prog) : 0;
  return o->found < 0 ? FT_ENOMEM : FT_OK;
}

/* Wait for the hosts' processes until they have all ended or p->stop
 * says to end them (then a TERM each; the caller waits for what is
 * left).  SIGCHLD is not ours to catch here: the caller's wake_fd may say
 * that a child ended, else the second's timeout does. */
static void wait_or_stop(const ft__probe_t *p, one_t *o, int n) {
  for (;;) {
    int left = 0;
    for (int i = 0; i < n; i++) {
      if (o[i].here || o[i].pid <= 0)
        continue;
      int st;
      pid_t r = waitpid(o[i].pid, &st, WNOHANG);
      if (r == o[i].pid) {
        o[i].status = ft__proc_status(st);
        o[i].pid = 0;
      } else if (r < 0 && errno != EINTR) {
        o[i].status = -1; /* not ours to wait for: lost */
        o[i].pid = 0;
      } else {
        left++;
      }
    }
    if (!left)
      return;
    struct pollfd pf = {.fd = p->wake_fd, .events = POLLIN};
    if (poll(&pf, p->wake_fd >= 0 ? 1 : 0, 1000) < 0 && errno != EINTR)
      ft__proc_sleep_ms(100);
    if (p->stop(p->stop_arg)) {
      for (int i = 0; i < n; i++)
        if (!o[i].here && o[i].pid > 0)
          kill(o[i].pid, SIGTERM);
      return;
    }
  }
}

int ft__probe_unreachable(const ft__probe_t *p, const char *const *hosts, int n,
                          int tries, ft__words_t *bad) {
  if (n <= 0)
    return FT_OK;
  if (p->cluster && *p->cluster)
    return ft__probe_cluster_ping(p, hosts, n, 1, bad);
  if (tries <= 0)
    tries = p->tries > 0 ? p->tries : 1;
  one_t *o = ft__calloc((size_t)n, sizeof(*o));
  if (!o)
    return FT_ENOMEM;
  this_names_t t;
  this_names(&t);
  /* Slurm's view first: its lost hosts get no job step (here, as probed
   * and failed); one it has not heard from for a ping or so (not
   * responding, not down yet) is probed to be sure, but with view_only,
   * where none is.  Without a view (no sinfo, a controller that did not
   * answer) every host is probed; with view_only, none is. */
  ft__words_t view = FT__WORDS_INIT, silent = FT__WORDS_INIT;
  int rc = FT_OK;
  if (p->sinfo && ft__probe_slurm_down(p, hosts, n, &view,
                                       p->view_only ? NULL : &silent) ==
                      FT_ENOMEM)
    rc = FT_ENOMEM;
  ft__words_free(&silent); /* probed as the others */
  for (int i = 0; i < n; i++)
    o[i].pid = -1;
  for (int i = 0; rc == FT_OK && i < n; i++) {
    int lost = ft__words_find(&view, hosts[i]) >= 0;
    if (lost || (p->sinfo && p->view_only))
      o[i].here = 1, o[i].status = lost;
    else
      rc = prepare(p, &t, hosts[i], &o[i]);
  }
  for (int i = 0; rc == FT_OK && i < n; i++)
    if (!o[i].here)
      o[i].pid = ft__proc_bounded(o[i].found ? o[i].prog.s : NULL, o[i].argv.v,
                                 p->envp, p->timeout_s, tries);
  /* Every process started is waited for, whatever else failed. */
  if (p->stop)
    wait_or_stop(p, o, n);
  for (int i = 0; i < n; i++) {
    if (!o[i].here && o[i].pid > 0)
      o[i].status = ft__proc_wait(o[i].pid);
    int lost = o[i].here ? o[i].status != 0
                         : (o[i].pid < 0 || o[i].status != 0);
    if (rc == FT_OK && lost)
      rc = ft__words_add(bad, hosts[i]);
    ft__words_free(&o[i].argv);
    ft__text_free(&o[i].prog);
  }
  ft__free(o);
  ft__words_free(&view);
  return rc;
}

int ft__probe_words(const ft__probe_t *p, int tries, ft__text_t *out) {
  if (p->cluster && *p->cluster)
    return ft__text_add(out, "ping from the head");
  if (p->sinfo && p->view_only)
    return ft__text_add(out, "Slurm reports it down or not responding");
  if (tries <= 0)
    tries = p->tries;
  size_t had = out->len;
  int rc = ft__text_add(out, p->sinfo ? "Slurm reports it down or not "
                                        "responding, or '"
                                      : "'");
  if (rc == FT_OK)
    rc = ft__text_join(out, p->words, p->nwords, " ");
  if (rc == FT_OK)
    rc = tries == 1 ? ft__text_add(out, " HOST true' failed once")
                    : ft__text_addf(out, " HOST true' failed %d times", tries);
  if (rc != FT_OK && out->s) {
    out->len = had;
    out->s[had] = '\0';
  }
  return rc;
}
