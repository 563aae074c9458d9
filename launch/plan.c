/*
 * The placement of launch/plan.h, one function a placement, and what
 * comes after it.  Text is read by hand: a hostfile line loses what
 * follows its first '#', and its words are split at spaces and tabs;
 * ft-cluster's lines are their first word; a list of names said is joined
 * by single spaces.  NODES and SPARES are compared in decimal, and NODES
 * counts as in a shell's arithmetic ($((...)), "${HOSTS[@]:0:$NODES}"),
 * where a leading 0 is octal.
 */
#include "launch/plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/command.h"


#define OOM(msg) ft__launch_refuse((msg), FT_LAUNCH_EXIT_FAIL, "out of memory")

int ft__launch_arith(const char *digits, int64_t *value) {
  uint64_t base = digits[0] == '0' ? 8 : 10, v = 0;
  for (const char *s = digits; *s; s++) {
    if ((uint64_t)(*s - '0') >= base)
      return -1;
    v = v * base + (uint64_t)(*s - '0');
  }
  *value = (int64_t)v;
  return 0;
}

/* `[ "$N" -le M ]` on a count validate accepted. */
static int64_t decimal(const char *s) { return strtoll(s, NULL, 10); }

/* NODES in arithmetic, or the refusal bash would die of. */
static int arith_nodes(ft__launch_plan_t *p, ft__text_t *msg) {
  if (ft__launch_arith(p->nodes, &p->nnodes) == 0)
    return 0;
  return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                "%s: value too great for base (error token is \"%s\")",
                p->nodes, p->nodes);
}

static const char *keep(ft__launch_plan_t *p, const char *s) {
  return ft__words_add(&p->own, s) == FT_OK ? p->own.v[p->own.n - 1] : NULL;
}

static const char *keepf(ft__launch_plan_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static const char *keepf(ft__launch_plan_t *p, const char *fmt, ...) {
  ft__text_t t = FT__TEXT_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = ft__text_vaddf(&t, fmt, ap);
  va_end(ap);
  const char *s = rc == FT_OK ? keep(p, t.s) : NULL;
  ft__text_free(&t);
  return s;
}

static int say(ft__launch_plan_t *p, ft__text_t *line) {
  return ft__words_add(&p->said, ft__text_str(line));
}

/* words[from..) moved to the end of to; words keeps [0, from). */
static int move_tail(ft__words_t *words, int64_t from, ft__words_t *to) {
  if (from >= words->n)
    return FT_OK;
  int f = (int)from;
  if (ft__words_addv(to, (const char *const *)words->v + f, words->n - f) !=
      FT_OK)
    return FT_ENOMEM;
  ft__words_truncate(words, f);
  return FT_OK;
}

/* NODES when not given: the placement's count. */
static int default_nodes(ft__launch_plan_t *p, const ft__launch_args_t *a,
                         int count) {
  p->nodes = *a->nodes ? a->nodes : keepf(p, "%d", count);
  return p->nodes ? FT_OK : FT_ENOMEM;
}

/* ---- the cluster ---- */

/* Each line's first word (awk '{ print $1 }'), trailing empty ones
 * dropped as $(...) drops the newlines. */
static int first_words(const char *text, ft__words_t *out) {
  for (const char *l = text; *l;) {
    size_t end = strcspn(l, "\n"), at = strspn(l, " \t");
    size_t len = strcspn(l + at, " \t\n");
    if (ft__words_addn(out, l + at, len) != FT_OK)
      return FT_ENOMEM;
    l += end + (l[end] == '\n');
  }
  while (out->n && !*out->v[out->n - 1])
    ft__words_truncate(out, out->n - 1);
  return FT_OK;
}

static int spare_name(const char *h) {
  return h[0] == 's' && h[1] >= '0' && h[1] <= '9';
}

/* ft-cluster hosts --all: the live hosts and the spares. */
static int cluster_hosts(ft__launch_plan_t *p, const ft__launch_args_t *a,
                         ft__env_t *env, ft__text_t *msg) {
  const char *cmd = keepf(p, "%s/ft-cluster", p->here);
  const char *argv[] = {cmd, "hosts", "--all", "--name", a->cluster, NULL};
  ft__text_t out = FT__TEXT_INIT;
  ft__words_t live = FT__WORDS_INIT;
  int st = 0, rc = cmd ? ft__command_output((char *const *)argv, env->kv.v, 0,
                                            &out, &st)
                       : FT_ENOMEM;
  if (rc == FT_OK)
    rc = first_words(ft__text_str(&out), &live);
  for (int i = 0; rc == FT_OK && i < live.n; i++)
    rc = ft__words_add(spare_name(live.v[i]) ? &p->cluster_spares : &p->hosts,
                       live.v[i]);
  ft__text_free(&out);
  ft__words_free(&live);
  if (rc != FT_OK)
    return OOM(msg);
  if (st != 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                  "no cluster '%s' (ft-cluster up N --cluster=%s first)",
                  a->cluster, a->cluster);
  if (p->hosts.n == 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "cluster %s has no live host",
                  a->cluster);
  return 0;
}

/* ft-cluster ping: the hosts the head cannot reach, " h1 h2 " as the bash
 * makes it of the lines (tr '\n' ' ', its last space dropped). */
static int cluster_ping(ft__launch_plan_t *p, const ft__launch_args_t *a,
                        ft__env_t *env, ft__text_t *bad) {
  ft__words_t argv = FT__WORDS_INIT;
  ft__text_t out = FT__TEXT_INIT;
  int st = 0, rc = ft__words_addf(&argv, "%s/ft-cluster", p->here);
  const char *words[] = {"ping", "--name", a->cluster};
  if (rc == FT_OK)
    rc = ft__words_addv(&argv, words, 3);
  if (rc == FT_OK)
    rc = ft__words_addv(&argv, (const char *const *)p->hosts.v, p->hosts.n);
  if (rc == FT_OK)
    rc = ft__command_output(argv.v, env->kv.v, 0, &out, &st);
  for (size_t i = 0; i < out.len; i++)
    if (out.s[i] == '\n')
      out.s[i] = ' ';
  if (out.len && out.s[out.len - 1] == ' ')
    out.s[--out.len] = '\0';
  if (rc == FT_OK)
    rc = ft__text_addf(bad, " %s ", ft__text_str(&out));
  ft__text_free(&out);
  ft__words_free(&argv);
  return rc;
}

static int leave_out_unreachable(ft__launch_plan_t *p,
                                 const ft__launch_args_t *a, ft__env_t *env,
                                 ft__text_t *msg) {
  ft__text_t bad = FT__TEXT_INIT, line = FT__TEXT_INIT;
  int rc = cluster_ping(p, a, env, &bad);
  if (rc == FT_OK && strspn(bad.s, " ") < bad.len) {
    rc = ft__text_addf(&line, "leaving out unreachable host(s):%.*s",
                       (int)bad.len - 1, bad.s);
    if (rc == FT_OK)
      rc = say(p, &line);
    for (int i = p->hosts.n - 1; rc == FT_OK && i >= 0; i--) {
      ft__text_t pat = FT__TEXT_INIT;
      rc = ft__text_addf(&pat, " %s ", p->hosts.v[i]);
      if (rc == FT_OK && strstr(bad.s, pat.s))
        ft__words_remove(&p->hosts, i);
      ft__text_free(&pat);
    }
  }
  ft__text_free(&bad);
  ft__text_free(&line);
  if (rc != FT_OK)
    return OOM(msg);
  if (p->hosts.n == 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "cluster %s has no reachable host",
                  a->cluster);
  return 0;
}

static int plan_cluster(ft__launch_plan_t *p, const ft__launch_args_t *a,
                        ft__env_t *env, ft__text_t *msg) {
  int rc = cluster_hosts(p, a, env, msg);
  if (rc)
    return rc;
  p->spares = *a->spares ? a->spares : keepf(p, "%d", p->cluster_spares.n);
  if (!p->spares)
    return OOM(msg);
  rc = leave_out_unreachable(p, a, env, msg);
  if (rc)
    return rc;
  if (default_nodes(p, a, p->hosts.n) != FT_OK)
    return OOM(msg);
  if (decimal(p->nodes) > p->hosts.n) {
    ft__text_t all = FT__TEXT_INIT;
    ft__text_join(&all, (const char *const *)p->hosts.v, p->hosts.n, " ");
    rc = ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                "--nodes %s: cluster %s has %d live, reachable hosts (%s)",
                p->nodes, a->cluster, p->hosts.n, ft__text_str(&all));
    ft__text_free(&all);
    return rc;
  }
  if ((rc = arith_nodes(p, msg)) != 0)
    return rc;
  if (p->nnodes < p->hosts.n)
    ft__words_truncate(&p->hosts, (int)p->nnodes);
  const char *runner[] = {keepf(p, "%s/ft-cluster", p->here), "exec", "--name",
                          a->cluster, "head"};
  if (!runner[0] || ft__env_set(env, "FT_CLUSTER", a->cluster) != FT_OK ||
      ft__words_addv(&p->runner, runner, 5) != FT_OK)
    return OOM(msg);
  return 0;
}

/* ---- a hostfile ---- */

/* The words of one hostfile line, what follows '#' dropped. */
static int line_words(const char *l, size_t end, ft__words_t *w) {
  size_t hash = strcspn(l, "#\n");
  if (hash < end)
    end = hash;
  for (size_t i = 0; i < end;) {
    i += strspn(l + i, " \t");
    if (i >= end)
      break;
    size_t len = strcspn(l + i, " \t#\n");
    if (ft__words_addn(w, l + i, len) != FT_OK)
      return FT_ENOMEM;
    i += len;
  }
  return FT_OK;
}

typedef struct {
  ft__words_t hosts, marked; /* plain and "spare" lines' hosts */
  ft__text_t domains;        /* host=D,... */
} hostfile_t;

/* One line's host, its "spare" mark and its domain= words. */
static int hostfile_line(hostfile_t *hf, const ft__words_t *w) {
  int spare = 0, rc = FT_OK;
  for (int i = 1; i < w->n && rc == FT_OK; i++) {
    if (strcmp(w->v[i], "spare") == 0)
      spare = 1;
    if (strncmp(w->v[i], "domain=", 7) == 0 && w->v[i][7])
      rc = ft__text_addf(&hf->domains, "%s%s=%s", hf->domains.len ? "," : "",
                         w->v[0], w->v[i] + 7);
  }
  return rc == FT_OK ? ft__words_add(spare ? &hf->marked : &hf->hosts, w->v[0])
                     : rc;
}

static int read_hostfile(const char *path, hostfile_t *hf) {
  FILE *f = fopen(path, "r");
  if (!f)
    return FT_EIO;
  ft__text_t all = FT__TEXT_INIT;
  char buf[4096];
  size_t n;
  int rc = FT_OK;
  while (rc == FT_OK && (n = fread(buf, 1, sizeof(buf), f)) > 0)
    rc = ft__text_addn(&all, buf, n);
  fclose(f);
  for (const char *l = ft__text_str(&all); rc == FT_OK && *l;) {
    size_t end = strcspn(l, "\n");
    ft__words_t w = FT__WORDS_INIT;
    rc = line_words(l, end, &w);
    if (rc == FT_OK && w.n)
      rc = hostfile_line(hf, &w);
    ft__words_free(&w);
    l += end + (l[end] == '\n');
  }
  ft__text_free(&all);
  return rc;
}

static int hostfile_counts(ft__launch_plan_t *p, const ft__launch_args_t *a,
                           hostfile_t *hf, ft__text_t *msg) {
  if (hf->hosts.n == 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                  "hostfile %s names no host (but spares)", a->hostfile);
  if (default_nodes(p, a, hf->hosts.n) != FT_OK)
    return OOM(msg);
  if (decimal(p->nodes) > hf->hosts.n)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                  "--nodes %s: hostfile %s names %d hosts", p->nodes,
                  a->hostfile, hf->hosts.n);
  int rc = arith_nodes(p, msg);
  if (rc)
    return rc;
  if (move_tail(&hf->hosts, p->nnodes, &p->pool) != FT_OK ||
      ft__words_addv(&p->pool, (const char *const *)hf->marked.v,
                     hf->marked.n) != FT_OK ||
      ft__words_addv(&p->hosts, (const char *const *)hf->hosts.v,
                     hf->hosts.n) != FT_OK)
    return OOM(msg);
  p->spares = *a->spares ? a->spares : keepf(p, "%d", hf->marked.n);
  if (!p->spares)
    return OOM(msg);
  if (decimal(p->spares) > p->pool.n)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--spares %s: hostfile %s has %d host(s) to spare (marked "
                  "spare, or beyond --nodes %s)",
                  p->spares, a->hostfile, p->pool.n, p->nodes);
  return 0;
}

static int plan_hostfile(ft__launch_plan_t *p, const ft__launch_args_t *a,
                         ft__env_t *env, ft__text_t *msg) {
  if (access(a->hostfile, R_OK) != 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "cannot read hostfile %s",
                  a->hostfile);
  hostfile_t hf = {FT__WORDS_INIT, FT__WORDS_INIT, FT__TEXT_INIT};
  int rc = read_hostfile(a->hostfile, &hf);
  if (rc == FT_EIO)
    rc = ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "cannot read hostfile %s",
                a->hostfile);
  else if (rc != FT_OK ||
           (hf.domains.len &&
            ft__env_set(env, "FT_FAILURE_DOMAINS", hf.domains.s) != FT_OK))
    rc = OOM(msg);
  else
    rc = hostfile_counts(p, a, &hf, msg);
  ft__words_free(&hf.hosts);
  ft__words_free(&hf.marked);
  ft__text_free(&hf.domains);
  return rc;
}

/* ---- a Slurm allocation ---- */

/* ft-nodelist SLURM_JOB_NODELIST, its messages with its output (2>&1). */
static int nodelist(ft__launch_plan_t *p, const ft__launch_args_t *a,
                    ft__env_t *env, ft__text_t *list, int *st) {
  const char *cmd = keepf(p, "%s/ft-nodelist", p->here);
  const char *argv[] = {cmd, a->slurm, NULL};
  if (!cmd)
    return FT_ENOMEM;
  int rc = ft__command_output((char *const *)argv, env->kv.v, 1, list, st);
  ft__command_chomp(list);
  return rc;
}

/* mapfile -t HOSTS <<<"$list": one name a line, one empty name at least. */
static int lines_of(const char *l, ft__words_t *out) {
  for (;;) {
    size_t end = strcspn(l, "\n");
    if (ft__words_addn(out, l, end) != FT_OK)
      return FT_ENOMEM;
    if (!l[end])
      return FT_OK;
    l += end + 1;
  }
}

static int slurm_counts(ft__launch_plan_t *p, const ft__launch_args_t *a,
                        ft__text_t *msg) {
  if (default_nodes(p, a, p->hosts.n) != FT_OK)
    return OOM(msg);
  if (decimal(p->nodes) > p->hosts.n)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                  "--nodes %s: the Slurm allocation has %d node(s) (%s)",
                  p->nodes, p->hosts.n, a->slurm);
  int rc = arith_nodes(p, msg);
  if (rc)
    return rc;
  if (move_tail(&p->hosts, p->nnodes, &p->pool) != FT_OK)
    return OOM(msg);
  p->spares = *a->spares ? a->spares : "0";
  if (decimal(p->spares) > p->pool.n)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--spares %s: the Slurm allocation has %d node(s) beyond "
                  "--nodes %s",
                  p->spares, p->pool.n, p->nodes);
  return 0;
}

static int plan_slurm(ft__launch_plan_t *p, const ft__launch_args_t *a,
                      ft__env_t *env, ft__text_t *msg) {
  ft__text_t list = FT__TEXT_INIT;
  int st = 0, code = 0;
  if (nodelist(p, a, env, &list, &st) != FT_OK) {
    code = OOM(msg);
  } else if (st != 0) {
    const char *l = ft__text_str(&list);
    code = ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE, "SLURM_JOB_NODELIST: %s",
                  l + (strncmp(l, "ft-nodelist: ", 13) == 0 ? 13 : 0));
  } else if (lines_of(ft__text_str(&list), &p->hosts) != FT_OK) {
    code = OOM(msg);
  }
  ft__text_free(&list);
  return code ? code : slurm_counts(p, a, msg);
}

/* ---- the probe, the BTLs, the code ---- */

static const char *const *extra_of(const ft__launch_args_t *a) {
  return (const char *const *)a->extra.v;
}

/* plan_probe: --probe, FT_PROBE, srun inside Slurm, else the launcher's
 * agent (ssh with BatchMode, so that a password prompt is a failure, not a
 * hang). */
static int plan_probe(ft__launch_plan_t *p, const ft__launch_args_t *a,
                      const ft__env_t *env, const ft__launcher_t *be,
                      ft__text_t *msg) {
  ft__text_t cmd = FT__TEXT_INIT;
  const char *given = *a->probe ? a->probe : ft__env_str(env, "FT_PROBE");
  int rc = ft__text_add(&cmd, given);
  if (rc == FT_OK && !cmd.len && *a->slurm)
    rc = ft__text_add(&cmd, "srun -N1 -n1 --overlap -w");
  if (rc == FT_OK && !cmd.len) {
    ft__launch_job_t job = {.extra = extra_of(a), .nextra = a->extra.n};
    ft__words_t agent = FT__WORDS_INIT;
    rc = be->agent(&job, env, &agent);
    if (rc == FT_OK)
      rc = ft__text_join(&cmd, (const char *const *)agent.v, agent.n, " ");
    if (rc == FT_OK && agent.n && strcmp(agent.v[0], "ssh") == 0)
      rc = ft__text_add(&cmd, " -o BatchMode=yes -o ConnectTimeout=10");
    ft__words_free(&agent);
  }
  if (rc == FT_OK)
    rc = ft__words_split(&p->probe, ft__text_str(&cmd));
  int code = rc != FT_OK ? OOM(msg)
             : p->probe.n == 0
                 ? ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE, "--probe '%s': no command",
                          ft__text_str(&cmd))
                 : 0;
  ft__text_free(&cmd);
  return code;
}

/* The cluster's hosts reach each other over TCP alone: BTLs of the user's
 * without it fail every job that crosses hosts.  Said once, before the
 * first launch. */
static int warn_btl(ft__launch_plan_t *p, const ft__launch_args_t *a,
                    const ft__env_t *env) {
  const char *btl, *src = "--mpirun-arg";
  if (!*a->cluster)
    return FT_OK;
  if (!ft__launch_mca_value(extra_of(a), a->extra.n, "btl", &btl)) {
    btl = ft__env_str(env, "OMPI_MCA_btl");
    src = "OMPI_MCA_btl";
  }
  if (!*btl)
    return FT_OK;
  const char *list = btl + strspn(btl, "^"); /* Open MPI takes ^^x as ^x */
  ft__text_t l = FT__TEXT_INIT, line = FT__TEXT_INIT;
  int rc = ft__text_addf(&l, ",%s,", list);
  int tcp = rc == FT_OK && strstr(l.s, ",tcp,") != NULL;
  if (rc == FT_OK && (btl[0] == '^') == tcp) {
    rc = ft__text_addf(&line,
                       "warning: the BTLs '%s' of %s leave out tcp, the only "
                       "way between the cluster's hosts: a job across them "
                       "will fail",
                       btl, src);
    if (rc == FT_OK)
      rc = say(p, &line);
  }
  ft__text_free(&l);
  ft__text_free(&line);
  return rc;
}

/* An app context's own option of the launcher (Open MPI's -x, hydra's
 * -env...) as the last --mpirun-arg words, short of its value: on the
 * command line it would take ft-smp's path or PROGRAM for it, and the
 * launcher would then say that no program was given. */
static int check_ctx_values(const ft__launch_args_t *a,
                            const ft__launcher_t *be, ft__text_t *msg) {
  int nargs = 0;
  int at = ft__launch_ctx_opt_short(extra_of(a), (int)a->extra.n,
                                    be ? be->ctx_opts : NULL, &nargs);
  if (at < 0)
    return 0;
  return ft__launch_refuse(
      msg, FT_LAUNCH_EXIT_USAGE,
      "--mpirun-arg %s: this option of %s takes %d word%s after it, and the "
      "--mpirun-arg words end first (%s would take the program for %s); "
      "give %s with more --mpirun-arg",
      extra_of(a)[at], be->program, nargs, nargs > 1 ? "s" : "", be->program,
      nargs > 1 ? "them" : "it", nargs > 1 ? "them" : "it");
}

/* In a Slurm allocation ft-launch maps the ranks itself (--mca rmaps seq)
 * and lets each attempt's daemon step overlap the failed one's (srun
 * --overlap): a user's rmaps on the command line (mpirun refuses it twice)
 * or plm_slurm_args without --overlap would undo either.  (OMPI_MCA_rmaps
 * of the environment is overridden by the command line: no harm.) */
static int check_slurm_mca(const ft__launch_args_t *a, const ft__env_t *env,
                           ft__text_t *msg) {
  if (!*a->slurm)
    return 0;
  const char *v, *src = "--mpirun-arg --mca plm_slurm_args";
  if (ft__launch_mca_value(extra_of(a), a->extra.n, "rmaps", &v))
    return ft__launch_refuse(
        msg, FT_LAUNCH_EXIT_USAGE,
        "--mpirun-arg --mca rmaps %s: in a Slurm allocation ft-launch maps "
        "the ranks itself with the sequential mapper (--mca rmaps seq, a "
        "hostfile line a rank), so that a spare keeps a lost node's place; "
        "leave rmaps out",
        v);
  if (!ft__launch_mca_value(extra_of(a), a->extra.n, "plm_slurm_args", &v)) {
    v = ft__env_str(env, "OMPI_MCA_plm_slurm_args");
    src = "OMPI_MCA_plm_slurm_args";
  }
  if (!*v)
    return 0;
  ft__words_t w = FT__WORDS_INIT;
  int rc = ft__words_split(&w, v);
  int overlap = rc == FT_OK && ft__words_find(&w, "--overlap") >= 0;
  ft__words_free(&w);
  if (rc != FT_OK)
    return OOM(msg);
  if (overlap)
    return 0;
  return ft__launch_refuse(
      msg, FT_LAUNCH_EXIT_USAGE,
      "%s '%s': in a Slurm allocation the daemons of a relaunch need srun "
      "--overlap (the step of the failed attempt holds the survivors' CPUs "
      "until Slurm marks the lost node DOWN); add --overlap to it",
      src, v);
}

/* K and M of a validated "K+M". */
static void code_parts(const char *ec, char *k, char *m, size_t len) {
  size_t plus = strcspn(ec, "+");
  snprintf(k, len, "%.*s", (int)plus, ec);
  snprintf(m, len, "%s", ec + plus + 1);
}

/* A run of the program (not of a tool) needs at least K+M nodes. */
static int check_code(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                      ft__text_t *msg) {
  if (!*a->ec || a->one_per_node)
    return 0;
  char k[32], m[32];
  int64_t kv, mv;
  code_parts(a->ec, k, m, sizeof(k));
  if (ft__launch_arith(k, &kv) != 0 || ft__launch_arith(m, &mv) != 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                  "%s: value too great for base (error token is \"%s\")", a->ec,
                  a->ec);
  int64_t need = (int64_t)((uint64_t)kv + (uint64_t)mv);
  if (need <= decimal(p->nodes))
    return 0;
  ft__text_t name = FT__TEXT_INIT;
  if (*a->ec_name)
    ft__text_add(&name, a->ec_name);
  else
    ft__text_addf(&name, "--ec %s", a->ec);
  int rc = ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "%s needs at least %" PRId64 " nodes, the job has %s",
                  ft__text_str(&name), need, p->nodes);
  ft__text_free(&name);
  return rc;
}

int ft__launch_plan(ft__launch_plan_t *p, const ft__launch_args_t *a,
                    ft__env_t *env, const ft__launcher_t *be, const char *here,
                    ft__text_t *msg) {
  *p = (ft__launch_plan_t)FT__LAUNCH_PLAN_INIT;
  p->here = here;
  p->rsh = keepf(p, "%s/ft-rsh", here);
  if (!p->rsh)
    return OOM(msg);
  int rc = 0;
  if (*a->cluster)
    rc = plan_cluster(p, a, env, msg);
  else if (*a->hostfile)
    rc = plan_hostfile(p, a, env, msg);
  else if (*a->slurm)
    rc = plan_slurm(p, a, env, msg);
  else
    p->nodes = *a->nodes ? a->nodes : "1";
  if (!rc && !*a->cluster && !*a->hostfile && !*a->slurm)
    rc = arith_nodes(p, msg);
  if (rc)
    return rc;
  if (!*p->spares)
    p->spares = "0";
  if (!*a->cluster && p->hosts.n > 0 && (rc = plan_probe(p, a, env, be, msg)))
    return rc;
  if ((rc = check_slurm_mca(a, env, msg)) ||
      (rc = check_ctx_values(a, be, msg)))
    return rc;
  if (warn_btl(p, a, env) != FT_OK)
    return OOM(msg);
  return check_code(p, a, msg);
}

void ft__launch_plan_free(ft__launch_plan_t *p) {
  ft__words_free(&p->hosts);
  ft__words_free(&p->pool);
  ft__words_free(&p->cluster_spares);
  ft__words_free(&p->runner);
  ft__words_free(&p->probe);
  ft__words_free(&p->said);
  ft__words_free(&p->own);
}

int64_t ft__launch_ranks_per_node(const ft__launch_args_t *a) {
  int64_t ppn = 0;
  if (a->one_per_node)
    return 1;
  ft__launch_arith(a->ppn, &ppn);
  return (int64_t)((uint64_t)ppn + 1);
}

void ft__launch_plan_job(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                         const char *hostfile, int64_t cpus,
                         ft__launch_job_t *job) {
  int64_t ppn = 0;
  ft__launch_arith(a->ppn, &ppn);
  *job = (ft__launch_job_t){.hosts = (const char *const *)p->hosts.v,
                            .nhosts = p->hosts.n,
                            .nodes = p->nnodes,
                            .ranks_per_node = ft__launch_ranks_per_node(a),
                            .node_ranks = (int64_t)((uint64_t)ppn + 1),
                            .slurm = *a->slurm != '\0',
                            .cluster = *a->cluster ? a->cluster : NULL,
                            .rsh = p->rsh,
                            .iface = FT_LAUNCH_IFACE,
                            .hostfile = hostfile,
                            .mpirun = a->mpirun,
                            .cpus = cpus,
                            .job = a->job,
                            .timeout = a->timeout,
                            .extra = extra_of(a),
                            .nextra = a->extra.n,
                            .program = (const char *const *)a->program.v,
                            .nprogram = a->program.n,
                            .smp = *a->smp_program && !a->one_per_node
                                       ? a->smp_program
                                       : NULL};
}

/* ---- what is printed ---- */

static int names_line(ft__text_t *out, const char *fmt_head,
                      const ft__words_t *w, const char *tail) {
  int rc = ft__text_add(out, fmt_head);
  if (rc == FT_OK)
    rc = ft__text_join(out, (const char *const *)w->v, w->n, " ");
  return rc == FT_OK ? ft__text_add(out, tail) : rc;
}

int ft__launch_dry_lines(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                         const ft__env_t *env, const char *hosts_text,
                         ft__text_t *out) {
  int rc = FT_OK;
  for (const char *l = hosts_text; rc == FT_OK && *l;) {
    size_t end = strcspn(l, "\n");
    rc = ft__text_addf(out, "# hostfile: %.*s\n", (int)end, l);
    l += end + (l[end] == '\n');
  }
  if (rc == FT_OK && p->pool.n)
    rc = ft__text_addf(out, "# spares: up to %s of ", p->spares) == FT_OK
             ? names_line(out, "", &p->pool, "\n")
             : FT_ENOMEM;
  if (rc == FT_OK && p->cluster_spares.n)
    rc = ft__text_addf(out, "# spares: up to %s of ", p->spares) == FT_OK
             ? names_line(out, "", &p->cluster_spares, "\n")
             : FT_ENOMEM;
  if (rc == FT_OK && p->probe.n) {
    rc = names_line(out, "# probe: ", &p->probe, " HOST true");
    if (rc == FT_OK)
      rc = ft__text_addf(out, " (%s tries)\n", a->probe_tries);
  }
  const char *btl = ft__env_str(env, "OMPI_MCA_btl");
  const ft__launcher_t *be = ft__launcher_find(a->launcher);
  if (rc == FT_OK && *a->cluster && *btl && be && be->btl &&
      !ft__launch_mca_given(extra_of(a), a->extra.n, "btl"))
    rc = ft__text_addf(out,
                       "# environment: OMPI_MCA_btl=%s (the BTLs, instead of "
                       "%s)\n",
                       btl, be->btl);
  return rc;
}

int ft__launch_spares_text(const ft__launch_plan_t *p, const char *spares_left,
                           ft__text_t *out) {
  if (decimal(spares_left) <= 0)
    return FT_OK;
  ft__words_t free_ = FT__WORDS_INIT;
  int rc = FT_OK;
  for (int i = 0; rc == FT_OK && i < p->pool.n; i++)
    if (ft__words_find(&p->hosts, p->pool.v[i]) < 0)
      rc = ft__words_add(&free_, p->pool.v[i]);
  if (rc == FT_OK && free_.n) {
    rc = ft__text_addf(out, "spares: up to %s of ", spares_left);
    if (rc == FT_OK)
      rc = ft__text_join(out, (const char *const *)free_.v, free_.n, " ");
  }
  ft__words_free(&free_);
  return rc;
}

/* The first line: the node set's shape and the job. */
static int shape_line(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                      ft__text_t *t) {
  const char *n = decimal(p->nodes) == 1 ? "node" : "nodes";
  if (a->one_per_node)
    return ft__text_addf(t, "%s %s x 1 rank (--one-per-node), job %s", p->nodes,
                         n, a->job);
  int64_t ppn = 0;
  ft__launch_arith(a->ppn, &ppn);
  int64_t ranks = (int64_t)((uint64_t)p->nnodes * ((uint64_t)ppn + 1));
  return ft__text_addf(
      t, "%s %s x (%s %s + 1 SMP) = %" PRId64 " ranks, job %s", p->nodes, n,
      a->ppn, decimal(a->ppn) == 1 ? "trainer" : "trainers", ranks, a->job);
}

/* The second line: where, or nothing for one node of this host. */
static int where_line(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                      const char *spares, ft__text_t *t) {
  const char *sep = *spares ? "; " : "";
  int rc = FT_OK;
  if (*a->cluster) {
    rc = ft__text_addf(t, "on cluster %s: ", a->cluster);
    if (rc == FT_OK)
      rc = names_line(t, "", &p->hosts, "");
    if (rc == FT_OK)
      rc = ft__text_addf(t, "; mpirun on its head; watchdog timeout %s s",
                         a->timeout);
  } else if (*a->hostfile || *a->slurm) {
    rc = names_line(t, "on hosts ", &p->hosts, "");
    if (rc == FT_OK && *a->hostfile)
      rc = ft__text_addf(t, " (hostfile %s)%s%s", a->hostfile, sep, spares);
    else if (rc == FT_OK)
      rc =
          ft__text_addf(t, " (Slurm allocation %s)%s%s", a->slurm, sep, spares);
  } else if (decimal(p->nodes) > 1) {
    int64_t ppn = 0;
    ft__launch_arith(a->ppn, &ppn);
    rc = ft__text_addf(t,
                       "on this host, %s virtual nodes "
                       "(FT_VIRTUAL_NODE_RANKS=%" PRId64 ")",
                       p->nodes, (int64_t)((uint64_t)ppn + 1));
  }
  return rc;
}

int ft__launch_summary(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                       const char *spares_left, ft__words_t *lines) {
  ft__text_t t = FT__TEXT_INIT, spares = FT__TEXT_INIT;
  int rc = shape_line(p, a, &t);
  if (rc == FT_OK)
    rc = ft__words_add(lines, ft__text_str(&t));
  ft__text_clear(&t);
  if (rc == FT_OK)
    rc = ft__launch_spares_text(p, spares_left, &spares);
  if (rc == FT_OK)
    rc = where_line(p, a, ft__text_str(&spares), &t);
  if (rc == FT_OK && t.len)
    rc = ft__words_add(lines, t.s);
  ft__text_free(&t);
  ft__text_free(&spares);
  return rc;
}
