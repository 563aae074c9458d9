/*
 * The spares' preparation of launch/spares.h.  ft__spares_prepare forks the
 * preparation (bash's "ft-launch --prepare-spares": setsid, a process group
 * and session of its own, no input); it forks one process a host
 * (prepare_one), which records the host in DIR/prepared, then runs the
 * host command with its output captured and its input a pipe it writes one
 * "\n" into and holds open as long as it lives: once the group is ended,
 * ft-spare --until-eof on the host sees its input end, through ssh too,
 * and stops as a removal would.  Every command line is made before the
 * first fork.
 */
#include "launch/spares.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "launch/quote.h"
#include "launch/proc.h"

/* A host's command: argv, and its program (found, else NULL). */
typedef struct cmd {
  ft__words_t argv;
  ft__text_t prog;
  int found;
} cmd_t;

typedef struct host {
  const char *name;
  cmd_t prepare, remove;
} host_t;

static void cmd_free(cmd_t *c) {
  ft__words_free(&c->argv);
  ft__text_free(&c->prog);
}

/* spare_cmd WORDS...: printf '%q ' "$FT_SPARE" --job J [--store R]
 * WORDS..., a space after each word. */
static int spare_line(const ft__spares_t *s, const char *const *words, int n,
                      ft__text_t *line) {
  const char *head[4] = {s->ft_spare, "--job", s->job, NULL};
  int rc = FT_OK;
  for (int i = 0; rc == FT_OK && i < 3; i++)
    if ((rc = ft__quote_word(line, head[i])) == FT_OK)
      rc = ft__text_add(line, " ");
  if (rc == FT_OK && s->store && *s->store) {
    rc = ft__text_add(line, "--store ");
    if (rc == FT_OK && (rc = ft__quote_word(line, s->store)) == FT_OK)
      rc = ft__text_add(line, " ");
  }
  for (int i = 0; rc == FT_OK && i < n; i++)
    if ((rc = ft__quote_word(line, words[i])) == FT_OK)
      rc = ft__text_add(line, " ");
  return rc;
}

/* host_cmd HOST LINE: the backend's command that runs line on host. */
static int host_cmd(const ft__spares_t *s, const char *host,
                    const ft__text_t *line, cmd_t *c) {
  const ft__probe_t *p = s->probe;
  if (p->be->host_cmd(s->launch, p->words, p->nwords, host, ft__text_str(line),
                      &c->argv) != FT_OK)
    return FT_ENOMEM;
  c->found = c->argv.n > 0 ? ft__proc_find(p->envp, c->argv.v[0], &c->prog) : 0;
  return c->found < 0 ? FT_ENOMEM : FT_OK;
}

/* The commands of host: its preparation (prepare: 1) and its removal. */
static int host_cmds(const ft__spares_t *s, const char *name, int prepare,
                     uint64_t bytes, host_t *h) {
  char size[32];
  snprintf(size, sizeof(size), "%" PRIu64, bytes);
  const char *const prep[] = {"--until-eof", "prepare", size};
  const char *const rm[] = {"remove"};
  ft__text_t line = FT__TEXT_INIT;
  h->name = name;
  int rc = FT_OK;
  if (prepare) {
    rc = spare_line(s, prep, 3, &line);
    if (rc == FT_OK)
      rc = host_cmd(s, name, &line, &h->prepare);
    ft__text_clear(&line);
  }
  if (rc == FT_OK)
    rc = spare_line(s, rm, 1, &line);
  if (rc == FT_OK)
    rc = host_cmd(s, name, &line, &h->remove);
  ft__text_free(&line);
  return rc;
}

static void hosts_free(host_t *h, int n) {
  for (int i = 0; h && i < n; i++) {
    cmd_free(&h[i].prepare);
    cmd_free(&h[i].remove);
  }
  ft__free(h);
}

/* remove_on HOST, started: what is prepared there removed, bounded by
 * --timeout, its input and output none. */
static pid_t remove_on(const ft__spares_t *s, const host_t *h) {
  const cmd_t *c = &h->remove;
  return ft__proc_bounded(c->found ? c->prog.s : NULL, c->argv.v, s->probe->envp,
                         s->probe->timeout_s, 1);
}

static int dir_file(const ft__spares_t *s, const char *name, ft__text_t *t) {
  return ft__text_addf(t, "%s/%s", s->dir, name);
}

/* ---- in the preparation's processes ---- */

/* The host command with its input in (the pipe) and its output and errors
 * on out; the child's end.  A program that cannot be run says so there, as
 * bash would, and ends with 127 (126: found, not runnable). */
static void run_host_cmd(const ft__spares_t *s, const cmd_t *c, int in,
                         int out) {
  dup2(in, 0);
  dup2(out, 1);
  dup2(out, 2);
  ft__proc_child_init(-1);
  if (c->found)
    execve(c->prog.s, c->argv.v, s->probe->envp);
  int err = errno;
  char msg[512];
  const char *word = c->argv.n > 0 ? c->argv.v[0] : "";
  int n = snprintf(msg, sizeof(msg), "ft-launch: %s: %s\n", word,
                   c->found ? strerror(err) : "command not found");
  if (n > 0)
    ft__proc_write_all(2, msg,
                      (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
  _exit(!c->found || err == ENOENT ? 127 : 126);
}

static void read_all(int fd, ft__text_t *out) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || ft__text_addn(out, buf, (size_t)n) != FT_OK)
      return;
  }
}

/* prepare_one: in a process of its own in the preparation's group. */
static void prepare_one(const ft__spares_t *s, const host_t *h,
                        const char *prepared) {
  /* The host is recorded before it is asked: ft-launch then removes what
   * it may have made, whatever happens to this process. */
  int fd = open(prepared, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return; /* ft-launch has ended */
  ft__text_t out = FT__TEXT_INIT;
  int ok = ft__text_addf(&out, "%s\n", h->name) == FT_OK &&
           ft__proc_write_all(fd, out.s, out.len) == 0;
  close(fd);
  ft__text_clear(&out);
  if (!ok)
    return;
  /* The input: one "\n" that tells ft-spare its input does reach it, then
   * open as long as this process lives. */
  int in[2], cap[2];
  if (pipe2(in, O_CLOEXEC) != 0)
    return;
  if (pipe2(cap, O_CLOEXEC) != 0)
    return;
  ft__proc_write_all(in[1], "\n", 1);
  pid_t pid = fork();
  if (pid == 0)
    run_host_cmd(s, &h->prepare, in[0], cap[1]);
  close(in[0]);
  close(cap[1]);
  read_all(cap[0], &out);
  close(cap[0]);
  int rc = pid < 0 ? 126 : ft__proc_wait(pid);
  close(in[1]);
  /* $(...): the trailing newlines dropped. */
  while (out.len && out.s[out.len - 1] == '\n')
    out.s[--out.len] = '\0';
  const char *text = ft__text_str(&out), *bare = text;
  if (strncmp(bare, "ft-spare: ", 10) == 0)
    bare += 10;
  switch (rc) {
  case 0:
    ft__text_free(&out);
    return;
  case 3:
    ft__proc_say("warning: spare %s not prepared: %s", h->name, bare);
    break;
  case 4:
    ft__proc_say("warning: spare %s has no room: %s", h->name, bare);
    break;
  case 255: /* unreachable: the probe of free spares will find out */
    break;
  default:
    ft__proc_say("warning: spare %s cannot be prepared (ft-spare exit %d): %s",
                h->name, rc, *text ? text : "no message");
  }
  ft__text_free(&out);
  pid_t r = remove_on(s, h);
  if (r > 0)
    ft__proc_wait(r);
}

/* prepare_spares: the leader of the preparation's group. */
static void preparation(const ft__spares_t *s, const host_t *h, int n,
                        const char *closing, const char *prepared) {
  /* ft-launch is ending (ft__spares_clear marks it first). */
  if (access(closing, F_OK) == 0)
    return;
  pid_t *pids = ft__calloc((size_t)n, sizeof(*pids));
  if (!pids)
    return;
  for (int i = 0; i < n; i++) {
    pids[i] = ft__proc_fork();
    if (pids[i] == 0) {
      ft__proc_child_init(-1);
      prepare_one(s, &h[i], prepared);
      _exit(0);
    }
  }
  for (int i = 0; i < n; i++)
    if (pids[i] > 0)
      ft__proc_wait(pids[i]);
  ft__free(pids);
}

int ft__spares_prepare(ft__spares_t *s, const char *const *hosts, int n,
                       uint64_t bytes) {
  if (n <= 0)
    return FT_OK;
  host_t *h = ft__calloc((size_t)n, sizeof(*h));
  ft__text_t closing = FT__TEXT_INIT, prepared = FT__TEXT_INIT;
  int rc = h ? FT_OK : FT_ENOMEM;
  for (int i = 0; rc == FT_OK && i < n; i++)
    rc = host_cmds(s, hosts[i], 1, bytes, &h[i]);
  if (rc == FT_OK && (dir_file(s, "closing", &closing) != FT_OK ||
                      dir_file(s, "prepared", &prepared) != FT_OK))
    rc = FT_ENOMEM;
  /* Its pid's room first: once it runs, it is in the list. */
  int at = s->groups.n;
  if (rc == FT_OK)
    rc = ft__words_addf(&s->groups, "%*s", 20, "");
  if (rc == FT_OK) {
    pid_t pid = ft__proc_fork();
    if (pid == 0) {
      setsid();
      signal(SIGTERM, SIG_DFL);
      int null = open("/dev/null", O_RDONLY);
      if (null > 0) {
        dup2(null, 0);
        close(null);
      }
      ft__proc_child_init(-1);
      preparation(s, h, n, closing.s, prepared.s);
      _exit(0);
    }
    if (pid < 0) {
      ft__words_truncate(&s->groups, at);
      rc = FT_EIO;
    } else {
      snprintf(s->groups.v[at], 21, "%ld", (long)pid);
    }
  }
  hosts_free(h, n);
  ft__text_free(&closing);
  ft__text_free(&prepared);
  return rc;
}

/* ---- the end ---- */

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The hosts of DIR/prepared, sorted, each once (sort -u). */
static int prepared_hosts(const char *path, ft__words_t *hosts) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return FT_OK;
  ft__text_t t = FT__TEXT_INIT;
  read_all(fd, &t);
  close(fd);
  int rc = FT_OK;
  for (const char *p = ft__text_str(&t); rc == FT_OK && *p;) {
    size_t len = strcspn(p, " \t\n");
    if (len)
      rc = ft__words_addn(hosts, p, len);
    p += len;
    p += strspn(p, " \t\n");
  }
  ft__text_free(&t);
  if (hosts->n > 1)
    qsort(hosts->v, (size_t)hosts->n, sizeof(*hosts->v), by_name);
  for (int i = hosts->n - 1; i > 0; i--)
    if (strcmp(hosts->v[i], hosts->v[i - 1]) == 0)
      ft__words_remove(hosts, i);
  return rc;
}

/* End every preparation's group; wait for them (10 s bound a hang). */
static void end_groups(ft__spares_t *s) {
  int n = s->groups.n;
  pid_t *g = n ? ft__calloc((size_t)n, sizeof(*g)) : NULL;
  int *reaped = n ? ft__calloc((size_t)n, sizeof(*reaped)) : NULL;
  if (n && (!g || !reaped)) {
    ft__free(g);
    ft__free(reaped);
    return;
  }
  for (int i = 0; i < n; i++) {
    g[i] = (pid_t)strtol(s->groups.v[i], NULL, 10);
    if (g[i] <= 0 || kill(-g[i], SIGTERM) != 0)
      reaped[i] = 1; /* gone, or none: nothing to wait for */
  }
  for (int round = 0; round < 100; round++) {
    int any = 0;
    for (int i = 0; i < n; i++) {
      int st;
      if (!reaped[i])
        reaped[i] = waitpid(g[i], &st, WNOHANG) == g[i];
      any = any || (g[i] > 0 && ft__proc_group_alive(g[i]));
    }
    if (!any)
      break;
    ft__proc_sleep_ms(100);
  }
  /* No zombie stays behind: a leader still there now is killed. */
  for (int i = 0; i < n; i++) {
    int st;
    if (g[i] > 0 && waitpid(g[i], &st, WNOHANG) == 0) {
      kill(g[i], SIGKILL);
      ft__proc_wait(g[i]);
    }
  }
  ft__free(g);
  ft__free(reaped);
}

void ft__spares_clear(ft__spares_t *s) {
  ft__text_t closing = FT__TEXT_INIT, prepared = FT__TEXT_INIT;
  ft__words_t names = FT__WORDS_INIT;
  if (dir_file(s, "closing", &closing) == FT_OK) {
    int fd = open(closing.s, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd >= 0)
      close(fd);
  }
  end_groups(s);
  ft__words_free(&s->groups);
  /* Only now is the list read: every preparation has stopped adding. */
  host_t *h = NULL;
  int n = 0;
  if (dir_file(s, "prepared", &prepared) == FT_OK &&
      prepared_hosts(prepared.s, &names) == FT_OK && names.n > 0 &&
      (h = ft__calloc((size_t)names.n, sizeof(*h)))) {
    for (n = 0; n < names.n; n++)
      if (host_cmds(s, names.v[n], 0, 0, &h[n]) != FT_OK)
        break;
    pid_t *pids = ft__calloc((size_t)n + 1, sizeof(*pids));
    for (int i = 0; pids && i < n; i++)
      pids[i] = remove_on(s, &h[i]);
    for (int i = 0; pids && i < n; i++)
      if (pids[i] > 0)
        ft__proc_wait(pids[i]);
    ft__free(pids);
  }
  hosts_free(h, names.n);
  ft__words_free(&names);
  ft__text_free(&closing);
  ft__text_free(&prepared);
}
