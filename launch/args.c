/*
 * The command line of launch/args.h.  The parse walks a copy of argv that
 * it may rewrite, as parse_args rewrites "$@": "--opt=value" becomes two
 * words in place and is matched again.  The checks of validate come one
 * function each, in bash's order, so that of two faults the same one is
 * named.  Patterns the bash matches with =~ are spelled out as small
 * scanners over ASCII (what bash's regex accepts in the locales ft-launch
 * runs in).
 */
#include "launch/args.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/backend.h"
#include "launch/quote.h"

const char ft__launch_usage[] =
    "usage: ft-launch [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "  --nodes N         nodes (default: every host of the placement, else "
    "1)\n"
    "  --ppn P           trainers per node, each node gets P+1 ranks (default "
    "1)\n"
    "  --cluster[=C]     run on the hosts of ft-cluster C\n"
    "  --hostfile F      run on the hosts of hostfile F\n"
    "  --spares S        at most S spares may replace lost hosts\n"
    "  --restarts R      after a failure, recover and relaunch, up to R times\n"
    "  --job NAME        job name, FT_JOB (default $FT_JOB, else ftrt)\n"
    "  --ec K+M          erasure code, FT_EC_K and FT_EC_M\n"
    "  --timeout SEC     failure-detection timeout, FT_TIMEOUT (default 60)\n"
    "  --probe CMD       (hostfile, Slurm) \"CMD HOST true\" tells a live "
    "host\n"
    "  --launcher NAME   the MPI's launcher: ompi4, ompi5 or mpich,\n"
    "                    FT_LAUNCHER (default: the MPI ftrt was built with)\n"
    "  --mpirun-arg ARG  one more argument for mpirun (repeatable)\n"
    "  --smp WHERE       ft-smp: each node's SMP is a process of ft-smp\n"
    "                    (default for a Python PROGRAM); first-rank: the\n"
    "                    first rank of each node (default otherwise); FT_SMP\n"
    "  --one-per-node    one rank a node and no SMP (ft-restore, ft-bench)\n"
    "  --restore-job     run ft-restore as a job of its own before a "
    "relaunch\n"
    "  --cold-spares     prepare no spare before a recovery needs it\n"
    "  --fresh           start over: discard what the job's stores hold\n"
    "  --persist DIR     the disk tier: flush committed versions to DIR\n"
    "  --times FILE      append when each part of a recovery ended to FILE\n"
    "  --log FILE        keep what is not shown (mpirun's text, a failing\n"
    "                    attempt's lines) in FILE (default: $TMPDIR or /tmp,\n"
    "                    ft-launch.UID.JOB.log)\n"
    "  --verbose         show mpirun's own messages and command line\n"
    "  --dry-run         print the hostfile, spares, probe and mpirun command\n"
    "  --help            this text\n"
    "See ft-launch(1).\n";

int ft__launch_refuse(ft__text_t *msg, int code, const char *fmt, ...) {
  ft__text_clear(msg);
  va_list ap;
  va_start(ap, fmt);
  int rc = ft__text_vaddf(msg, fmt, ap);
  va_end(ap);
  if (rc != FT_OK) {
    ft__text_clear(msg);
    ft__text_add(msg, "out of memory");
    return FT_LAUNCH_EXIT_FAIL;
  }
  return code;
}

/* ---- parse_args ---- */

/* The string s kept in a->own; NULL when out of memory. */
static const char *keep(ft__launch_args_t *a, ft__text_t *s) {
  if (!s->s || ft__words_add(&a->own, s->s) != FT_OK)
    return NULL;
  return a->own.v[a->own.n - 1];
}

/* ${NAME:-dflt}: a copy of the variable's value (env changes under it: FT_JOB
 * is exported again), or dflt; NULL when out of memory. */
static const char *env_or(ft__launch_args_t *a, const ft__env_t *env,
                          const char *name, const char *dflt) {
  const char *v = ft__env_str(env, name);
  if (!*v)
    return dflt;
  ft__text_t t = FT__TEXT_INIT;
  const char *kept = ft__text_add(&t, v) == FT_OK ? keep(a, &t) : NULL;
  ft__text_free(&t);
  return kept;
}

/* The options that take a value, and where it goes. */
static const char **value_of(ft__launch_args_t *a, const char *o) {
  static const struct {
    const char *name;
    size_t off;
  } opts[] = {{"--nodes", offsetof(ft__launch_args_t, nodes)},
              {"--ppn", offsetof(ft__launch_args_t, ppn)},
              {"--hostfile", offsetof(ft__launch_args_t, hostfile)},
              {"--spares", offsetof(ft__launch_args_t, spares)},
              {"--restarts", offsetof(ft__launch_args_t, restarts)},
              {"--job", offsetof(ft__launch_args_t, job)},
              {"--ec", offsetof(ft__launch_args_t, ec)},
              {"--timeout", offsetof(ft__launch_args_t, timeout)},
              {"--probe", offsetof(ft__launch_args_t, probe)},
              {"--persist", offsetof(ft__launch_args_t, persist)},
              {"--times", offsetof(ft__launch_args_t, times)},
              {"--log", offsetof(ft__launch_args_t, log)},
              {"--launcher", offsetof(ft__launch_args_t, launcher)},
              {"--smp", offsetof(ft__launch_args_t, smp)}};
  for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++)
    if (strcmp(o, opts[i].name) == 0)
      return (const char **)(void *)((char *)a + opts[i].off);
  return NULL;
}

/* The options that are a flag. */
static int *flag_of(ft__launch_args_t *a, const char *o) {
  static const struct {
    const char *name;
    size_t off;
  } opts[] = {{"--verbose", offsetof(ft__launch_args_t, verbose)},
              {"--dry-run", offsetof(ft__launch_args_t, dry_run)},
              {"--one-per-node", offsetof(ft__launch_args_t, one_per_node)},
              {"--restore-job", offsetof(ft__launch_args_t, restore_job)},
              {"--cold-spares", offsetof(ft__launch_args_t, cold_spares)},
              {"--fresh", offsetof(ft__launch_args_t, fresh)}};
  for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++)
    if (strcmp(o, opts[i].name) == 0)
      return (int *)(void *)((char *)a + opts[i].off);
  return NULL;
}

/* dashdash_in: one of the words from `from` on is "--". */
static int dashdash_from(const ft__words_t *w, int from) {
  for (int i = from; i < w->n; i++)
    if (strcmp(w->v[i], "--") == 0)
      return 1;
  return 0;
}

/* ft-launch's options: a word is one of them when " WORD " (the word up
 * to its first '=') occurs in this list.  Single spaces only, so that an
 * empty word is none. */
static const char LAUNCH_OPTS[] =
    " --nodes --ppn --cluster --hostfile --spares --restarts --job --ec "
    "--timeout --probe --launcher --smp --mpirun-arg --one-per-node "
    "--restore-job "
    "--cold-spares --fresh --persist --times --log --verbose --dry-run "
    "--help ";

static int launch_option(const char *w) {
  ft__text_t t = FT__TEXT_INIT;
  int rc = ft__text_addf(&t, " %.*s ", (int)strcspn(w, "="), w) == FT_OK &&
           strstr(LAUNCH_OPTS, t.s) != NULL;
  ft__text_free(&t);
  return rc;
}

static int options_after_program(const ft__launch_args_t *a, ft__text_t *msg) {
  const ft__words_t *p = &a->program;
  if (!dashdash_from(p, 1))
    return 0;
  for (int i = 1; i < p->n && strcmp(p->v[i], "--") != 0; i++)
    if (*p->v[i] && launch_option(p->v[i]))
      return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                    "%s comes after PROGRAM '%s' and before '--': put "
                    "ft-launch's options first and PROGRAM after '--' "
                    "(ft-launch [OPTIONS] -- PROGRAM ARGS...)",
                    p->v[i], p->v[0]);
  return 0;
}

/* "--opt=value" at i becomes "--opt" "value". */
static int split_at_equals(ft__words_t *line, int i) {
  const char *o = line->v[i];
  size_t name = strcspn(o, "=");
  if (ft__words_insert(line, i + 1, o + name + 1) != FT_OK)
    return FT_ENOMEM;
  if (ft__words_insertn(line, i + 1, o, name) != FT_OK) {
    ft__words_remove(line, i + 1);
    return FT_ENOMEM;
  }
  ft__words_remove(line, i);
  return FT_OK;
}

static void defaults(ft__launch_args_t *a) {
  memset(a, 0, sizeof(*a));
  a->nodes = a->hostfile = a->cluster = a->spares = a->job = a->ec = "";
  a->timeout = a->probe = a->persist = a->times = a->log = "";
  a->launcher = a->mpirun = a->smp = a->smp_program = "";
  a->slurm = a->probe_tries = a->ec_name = a->cluster_from = "";
  a->ppn = "1";
  a->restarts = "0";
}

static int cluster_name(const char *s);

/* --cluster at i: how many words it took.  The word after it is the
 * cluster when it is a cluster's name and "--" or one of ft-launch's
 * options follows it. */
static int cluster_opt(ft__launch_args_t *a, int i, const ft__env_t *env,
                       ft__text_t *msg) {
  const ft__words_t *l = &a->line;
  if (i + 2 < l->n && cluster_name(l->v[i + 1]) &&
      (strcmp(l->v[i + 2], "--") == 0 || launch_option(l->v[i + 2]))) {
    a->cluster = l->v[i + 1];
    a->cluster_from = "";
    return 2;
  }
  a->cluster = env_or(a, env, "FT_CLUSTER", "ftrt");
  a->cluster_from = *ft__env_str(env, "FT_CLUSTER") ? " (FT_CLUSTER)" : "";
  return a->cluster ? 1 : -ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
}

/* The options that take a value: value_of's, and --mpirun-arg. */
static int takes_value(ft__launch_args_t *a, const char *o) {
  return value_of(a, o) || strcmp(o, "--mpirun-arg") == 0;
}

/* One option at i: how many words it took, 0 at PROGRAM, or -code. */
static int option(ft__launch_args_t *a, int i, const ft__env_t *env,
                  ft__text_t *msg) {
  const char *o = a->line.v[i];
  int left = a->line.n - i;
  if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
    a->help = 1;
    return 1;
  }
  const char **value = value_of(a, o);
  int *flag = flag_of(a, o);
  if (value || strcmp(o, "--mpirun-arg") == 0) {
    if (left < 2)
      return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE, "%s needs a value", o);
    if (value)
      *value = a->line.v[i + 1];
    else if (ft__words_add(&a->extra, a->line.v[i + 1]) != FT_OK)
      return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
    return 2;
  }
  if (flag) {
    *flag = 1;
    return 1;
  }
  if (strcmp(o, "--cluster") == 0)
    return cluster_opt(a, i, env, msg);
  if (strncmp(o, "--cluster=", 10) == 0) {
    a->cluster = o + 10;
    a->cluster_from = "";
    if (!*a->cluster)
      return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                     "--cluster=: no cluster name after '='");
    return 1;
  }
  if (strncmp(o, "--", 2) == 0 && strchr(o, '=')) {
    size_t name = strcspn(o, "=");
    ft__text_t t = FT__TEXT_INIT;
    if (ft__text_addn(&t, o, name) != FT_OK) {
      ft__text_free(&t);
      return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
    }
    int takes = takes_value(a, t.s);
    ft__text_free(&t);
    if (!takes)
      return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE, "%.*s takes no value (%s)",
                     (int)name, o, o);
    if (split_at_equals(&a->line, i) != FT_OK)
      return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
    return option(a, i, env, msg);
  }
  if (o[0] == '-' && strcmp(o, "--") != 0)
    return -ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE, "unknown option %s", o);
  return 0;
}

static int take_program(ft__launch_args_t *a, int from, ft__text_t *msg) {
  if (ft__words_addv(&a->program, (const char *const *)a->line.v + from,
                     a->line.n - from) != FT_OK)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  return 0;
}

int ft__launch_parse(ft__launch_args_t *a, int argc, char *const *argv,
                     const ft__env_t *env, ft__text_t *msg) {
  defaults(a);
  if (argc > 1 && ft__words_addv(&a->line, (const char *const *)argv + 1,
                                 argc - 1) != FT_OK)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  for (int i = 0; i < a->line.n;) {
    int took = option(a, i, env, msg);
    if (took < 0)
      return -took;
    if (a->help)
      return 0;
    if (took > 0) {
      i += took;
      continue;
    }
    int dashdash = strcmp(a->line.v[i], "--") == 0;
    int rc = take_program(a, dashdash ? i + 1 : i, msg);
    if (!rc && !dashdash)
      rc = options_after_program(a, msg);
    if (rc)
      return rc;
    break;
  }
  if (a->program.n == 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "no PROGRAM given (ft-launch [OPTIONS] -- PROGRAM "
                  "ARGS...)");
  return 0;
}

void ft__launch_args_free(ft__launch_args_t *a) {
  ft__words_free(&a->extra);
  ft__words_free(&a->program);
  ft__words_free(&a->line);
  ft__words_free(&a->own);
}

/* ---- validate ---- */

static int digits(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return 0;
  return 1;
}

/* is_count S MIN: digits whose decimal value is at least min.  A value
 * past what bash's `[` reads (2^63 - 1) is none: `[` fails on it. */
static int is_count(const char *s, int64_t min) {
  if (!digits(s))
    return 0;
  int64_t v = 0;
  for (; *s; s++) {
    if (v > (INT64_MAX - (*s - '0')) / 10)
      return 0;
    v = v * 10 + (*s - '0');
  }
  return v >= min;
}

static int ascii_in(char c, const char *set) { return c && strchr(set, c); }

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/* ^[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}$ */
static int job_name(const char *s) {
  if (!ascii_in(*s, ALNUM "_-"))
    return 0;
  size_t n = 1;
  for (s++; *s; s++, n++)
    if (!ascii_in(*s, ALNUM "._-"))
      return 0;
  return n <= 63;
}

/* ^[a-z0-9]{1,16}$ */
static int cluster_name(const char *s) {
  size_t n = strlen(s);
  return n >= 1 && n <= 16 &&
         strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789") == n;
}

/* ^([0-9]+)\+([0-9]+)$ with K >= 1 */
static int ec_ok(const char *s) {
  size_t k = strspn(s, "0123456789");
  if (!k || s[k] != '+' || !digits(s + k + 1))
    return 0;
  char kk[32];
  if (k >= sizeof(kk))
    return 0;
  memcpy(kk, s, k);
  kk[k] = '\0';
  return is_count(kk, 1);
}

/* ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$, then above 0 and at most
 * 86400 as awk reads it. */
static int timeout_ok(const char *s) {
  const char *p = s;
  size_t d = strspn(p, "0123456789");
  p += d;
  if (d) {
    if (*p == '.')
      p += 1 + strspn(p + 1, "0123456789");
  } else {
    if (*p != '.' || !strspn(p + 1, "0123456789"))
      return 0;
    p += 1 + strspn(p + 1, "0123456789");
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    size_t x = strspn(p, "0123456789");
    if (!x)
      return 0;
    p += x;
  }
  if (*p)
    return 0;
  double t = strtod(s, NULL);
  return t > 0 && t <= 86400;
}

static int check_counts(const ft__launch_args_t *a, ft__text_t *msg) {
  if (*a->nodes && !is_count(a->nodes, 1))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--nodes %s: expected a number >= 1", a->nodes);
  if (!is_count(a->ppn, 1))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE, "--ppn %s: expected a number >= 1",
                  a->ppn);
  if (*a->spares && !is_count(a->spares, 0))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--spares %s: expected a number >= 0", a->spares);
  if (!is_count(a->restarts, 0))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--restarts %s: expected a number >= 0", a->restarts);
  return 0;
}

static int check_placement(ft__launch_args_t *a, const ft__env_t *env,
                           ft__text_t *msg) {
  if (*a->hostfile && *a->cluster)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--hostfile and --cluster exclude each other");
  if (!*a->hostfile && !*a->cluster)
    a->slurm = env_or(a, env, "SLURM_JOB_NODELIST", "");
  a->probe_tries = env_or(a, env, "FT_PROBE_TRIES", "3");
  if (!*a->launcher)
    a->launcher = env_or(a, env, "FT_LAUNCHER", FT_MPI_BACKEND);
  /* The configured program is the configured backend's. */
  a->mpirun = env_or(a, env, "FT_MPIRUN",
                     strcmp(a->launcher, FT_MPI_BACKEND) == 0
                         ? FT_MPI_LAUNCHER
                         : "");
  if (!a->slurm || !a->probe_tries || !a->launcher || !a->mpirun)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  const ft__launcher_t *be = ft__launcher_find(a->launcher);
  if (!be)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                             "--launcher %s: not a launcher ft-launch knows "
                             "(%s)",
                             a->launcher, ft__launcher_names);
  if (!is_count(a->probe_tries, 1))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "FT_PROBE_TRIES=%s: expected a number >= 1", a->probe_tries);
  if (*a->slurm && !be->slurm)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--launcher %s in a Slurm allocation: not supported yet "
                  "(its launch through Slurm has not been tested with ftrt's "
                  "recovery); give a --hostfile of the allocation's nodes, or "
                  "use a build of ftrt with Open MPI 4.1",
                  a->launcher);
  if (*a->probe && *a->cluster)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--probe is for --hostfile and Slurm; --cluster pings its "
                  "hosts");
  if (*a->cluster && !cluster_name(a->cluster))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--cluster=%s%s: a cluster name is 1-16 characters of "
                  "[a-z0-9]",
                  a->cluster, a->cluster_from);
  return 0;
}

/* --times FILE, --log FILE: a regular file (not a link) we can append
 * to, made when missing. */
static int check_append(const ft__launch_args_t *a, const char *opt,
                        const char *f, ft__text_t *msg) {
  struct stat st;
  if (!*f)
    return 0;
  if (lstat(f, &st) == 0 && S_ISLNK(st.st_mode))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                             "%s %s: a symbolic link; give the file itself",
                             opt, f);
  if (stat(f, &st) == 0 && !S_ISREG(st.st_mode))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                             "%s %s: not a regular file", opt, f);
  if (a->dry_run)
    return 0;
  int fd = open(f, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                             "%s %s: cannot append to it", opt, f);
  close(fd);
  return 0;
}

static int check_times(const ft__launch_args_t *a, ft__text_t *msg) {
  int rc = check_append(a, "--times", a->times, msg);
  return rc ? rc : check_append(a, "--log", a->log, msg);
}

/* mkdir -p -m 700 DIR, and mkdir's line when it fails. */
static int make_dirs(const char *dir) {
  ft__text_t p = FT__TEXT_INIT;
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/')
    len--;
  int rc = 0;
  for (size_t i = 1; i <= len && rc == 0; i++) {
    if (i < len && dir[i] != '/')
      continue;
    if (i < len && dir[i - 1] == '/')
      continue; /* "//": the same ancestor again */
    ft__text_clear(&p);
    if (ft__text_addn(&p, dir, i) != FT_OK) {
      rc = ENOMEM;
      break;
    }
    int last = i == len;
    struct stat st;
    if (mkdir(p.s, last ? 0700 : 0777) == 0) {
      if (last)
        chmod(p.s, 0700);
      continue;
    }
    int err = errno;
    if (stat(p.s, &st) == 0 && S_ISDIR(st.st_mode))
      continue;
    rc = err == EEXIST && !last ? ENOTDIR : err;
    ft__text_t line = FT__TEXT_INIT;
    ft__text_add(&line, "mkdir: cannot create directory ");
    ft__quote_coreutils(&line, p.s);
    ft__text_addf(&line, ": %s\n", strerror(rc));
    fputs(ft__text_str(&line), stderr);
    ft__text_free(&line);
  }
  ft__text_free(&p);
  return rc;
}

static int check_persist(ft__launch_args_t *a, ft__env_t *env, const char *cwd,
                         ft__text_t *msg) {
  if (!*a->persist)
    return 0;
  if (a->persist[0] != '/') {
    ft__text_t abs = FT__TEXT_INIT;
    ft__text_addf(&abs, "%s/%s", cwd, a->persist);
    a->persist = keep(a, &abs);
    ft__text_free(&abs);
    if (!a->persist)
      return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  }
  struct stat st;
  int dir = stat(a->persist, &st) == 0 && S_ISDIR(st.st_mode);
  if (!dir && !a->dry_run && make_dirs(a->persist) != 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--persist %s: cannot make the directory", a->persist);
  if (ft__env_set(env, "FT_PERSIST_DIR", a->persist) != FT_OK)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  return 0;
}

/* FT_EC_K and FT_EC_M of the environment stand for --ec, then --ec. */
static int check_code(ft__launch_args_t *a, const ft__env_t *env,
                      ft__text_t *msg) {
  const char *k = ft__env_str(env, "FT_EC_K"), *m = ft__env_str(env, "FT_EC_M");
  if (!*a->ec && *k && *m) {
    ft__text_t t = FT__TEXT_INIT, name = FT__TEXT_INIT;
    ft__text_addf(&t, "%s+%s", k, m);
    ft__text_addf(&name, "FT_EC_K=%s FT_EC_M=%s", k, m);
    a->ec = keep(a, &t);
    a->ec_name = keep(a, &name);
    ft__text_free(&t);
    ft__text_free(&name);
    if (!a->ec || !a->ec_name)
      return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
    if (!ec_ok(a->ec))
      return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                    "FT_EC_K=%s FT_EC_M=%s: expected K >= 1 and M >= 0, such "
                    "as 3 and 1",
                    k, m);
  }
  if (*a->ec && !ec_ok(a->ec))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--ec %s: expected K+M with K >= 1 and M >= 0, such as 3+1",
                  a->ec);
  return 0;
}

int ft__launch_validate(ft__launch_args_t *a, ft__env_t *env, const char *cwd,
                        ft__text_t *msg) {
  int rc = check_counts(a, msg);
  if (!rc)
    rc = check_placement(a, env, msg);
  if (!rc)
    rc = check_times(a, msg);
  if (rc)
    return rc;
  if (!*a->job && !(a->job = env_or(a, env, "FT_JOB", "ftrt")))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  if (!job_name(a->job))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--job %s: a job name is 1-63 characters of [A-Za-z0-9._-], "
                  "not starting with '.'",
                  a->job);
  rc = check_persist(a, env, cwd, msg);
  if (rc)
    return rc;
  if (!*a->timeout && !(a->timeout = env_or(a, env, "FT_TIMEOUT", "60")))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  if (!timeout_ok(a->timeout))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                  "--timeout %s: expected seconds, a number above 0 and at "
                  "most 86400",
                  a->timeout);
  return check_code(a, env, msg);
}

/* ---- pick_smp ---- */

/* A word names Python: python, python3, python3.11, ft-python. */
static int python_word(const char *w) {
  const char *base = strrchr(w, '/');
  base = base ? base + 1 : w;
  return strncmp(base, "python", 6) == 0 || strcmp(base, "ft-python") == 0;
}

static int env_word(const char *w) {
  const char *base = strrchr(w, '/');
  return strcmp(base ? base + 1 : w, "env") == 0;
}

/* Past env's options and NAME=VALUE words in v[i..n) (-u NAME, -C DIR
 * take the next word; NAME=VALUE words go on after "--"): the index of
 * the command, n when none.  A -S STRING (-SSTRING, --split-string[=]
 * STRING) ends the search: *split is then STRING, which holds env's next
 * words (and, most often, the command), and the index is the word after
 * it. */
static int past_env(char *const *v, int i, int n, const char **split) {
  int opts = 1;
  *split = NULL;
  for (; i < n; i++) {
    const char *w = v[i];
    if (!opts || w[0] != '-') {
      if (!strchr(w, '='))
        return i;
    } else if (strcmp(w, "-u") == 0 || strcmp(w, "-C") == 0 ||
               strcmp(w, "--unset") == 0 || strcmp(w, "--chdir") == 0) {
      i++;
    } else if (strcmp(w, "-S") == 0 || strcmp(w, "--split-string") == 0) {
      *split = i + 1 < n ? v[i + 1] : "";
      return i + 2 < n ? i + 2 : n;
    } else if (strncmp(w, "-S", 2) == 0 ||
               strncmp(w, "--split-string=", 15) == 0) {
      *split = w[1] == 'S' ? w + 2 : w + 15;
      return i + 1;
    } else if (strcmp(w, "--") == 0) {
      opts = 0;
    }
  }
  return n;
}

#define MAX_SPLIT 128 /* words of a -S string or a "#!" line (256 bytes) */

/* Splits s (changed in place) at blanks into w[0..*n), each word's quotes
 * (' and ") dropped: env -S's own quoting, enough to find its command. */
static void split_words(char *s, char **w, int *n) {
  char *save = NULL;
  *n = 0;
  for (char *t = strtok_r(s, " \t\r\n", &save); t && *n < MAX_SPLIT;
       t = strtok_r(NULL, " \t\r\n", &save)) {
    char *o = t;
    for (char *c = t; *c; c++)
      if (*c != '\'' && *c != '"')
        *o++ = *c;
    *o = '\0';
    w[(*n)++] = t;
  }
}

static int names_python(const ft__env_t *env, const char *word);

/* v[i..n) are env's arguments: whether the command it runs is Python
 * (names_python; env only looks into scripts). */
static int env_runs_python(const ft__env_t *env, char *const *v, int i,
                           int n) {
  const char *split;
  int at = past_env(v, i, n, &split);
  if (split) {
    char copy[1024], *w[MAX_SPLIT];
    int nw;
    snprintf(copy, sizeof(copy), "%s", split);
    split_words(copy, w, &nw);
    const char *inner;
    int k = past_env(w, 0, nw, &inner);
    if (k < nw)
      return names_python(env, w[k]);
  }
  return at < n && names_python(env, v[at]);
}

/* The first line of the regular file PATH, "" when none (a FIFO, a
 * directory, a device is never opened for reading: it could block). */
static void first_line(const char *path, char *line, size_t sz) {
  line[0] = '\0';
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r")
                                                        : NULL;
  if (!f) {
    close(fd);
    return;
  }
  if (!fgets(line, (int)sz, f))
    line[0] = '\0';
  fclose(f);
}

/* The script WORD (a path, else found on PATH, else in the current
 * directory, where mpirun finds it too) has a "#!" line that runs Python:
 * "#!/usr/bin/python3 ...", "#!/usr/bin/env [-S] python3 ...". */
static int python_script(const ft__env_t *env, const char *word) {
  ft__text_t path = FT__TEXT_INIT;
  int found = strchr(word, '/') ? ft__text_add(&path, word) == FT_OK
                                : ft__env_command(env, word, &path) == 1;
  if (!found && !strchr(word, '/')) {
    ft__text_free(&path);
    found = ft__text_addf(&path, "./%s", word) == FT_OK;
  }
  char line[256];
  if (found && path.s)
    first_line(path.s, line, sizeof(line));
  else
    line[0] = '\0';
  ft__text_free(&path);
  if (strncmp(line, "#!", 2) != 0)
    return 0;
  char *w[MAX_SPLIT];
  int n;
  split_words(line + 2, w, &n);
  if (n == 0)
    return 0;
  return env_word(w[0]) ? env_runs_python(NULL, w, 1, n) : python_word(w[0]);
}

/* WORD is Python: its name (python_word), or, with env given, a script
 * whose "#!" line runs Python. */
static int names_python(const ft__env_t *env, const char *word) {
  return python_word(word) || (env && python_script(env, word));
}

/* PROGRAM is Python: python3 ARGS, env [NAME=VALUE...] python3 ARGS
 * (-S's string included), or a script whose "#!" line runs Python
 * (./train.py). */
static int python_program(const ft__launch_args_t *a, const ft__env_t *env) {
  char *const *v = a->program.v;
  int n = (int)a->program.n;
  if (n == 0)
    return 0;
  return env_word(v[0]) ? env_runs_python(env, v, 1, n)
                        : names_python(env, v[0]);
}

int ft__launch_pick_smp(ft__launch_args_t *a, const ft__env_t *env,
                        const char *bin, ft__text_t *msg) {
  const char *from = *a->smp ? "" : " (FT_SMP)";
  if (!*a->smp && !(a->smp = env_or(a, env, "FT_SMP", "")))
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  if (*a->smp && strcmp(a->smp, "ft-smp") != 0 &&
      strcmp(a->smp, "first-rank") != 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                             "--smp %s%s: expected ft-smp (each node's SMP a "
                             "process of ft-smp) or first-rank (the first "
                             "rank of each node)",
                             a->smp, from);
  /* FT_SMP is a default for the jobs that have SMPs: --one-per-node's
   * have none */
  if (a->one_per_node && !*from && strcmp(a->smp, "ft-smp") == 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_USAGE,
                             "--smp ft-smp and --one-per-node exclude each "
                             "other (one rank a node runs no SMP)");
  int own = *a->smp ? strcmp(a->smp, "ft-smp") == 0
                    : python_program(a, env);
  if (!own || a->one_per_node)
    return 0;
  ft__text_t p = FT__TEXT_INIT;
  int rc = ft__text_addf(&p, "%s/ft-smp", bin);
  if (rc == FT_OK && access(p.s, X_OK) != 0) {
    rc = ft__env_command(env, "ft-smp", &p);
    rc = rc < 0 ? rc : rc == 1 ? FT_OK : 1;
  }
  const char *kept = rc == FT_OK ? keep(a, &p) : NULL;
  ft__text_free(&p);
  if (rc > 0)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL,
                             "ft-smp, the SMP's program, is neither in %s "
                             "nor on PATH (install ftrt whole, or give "
                             "--smp first-rank)",
                             bin);
  if (!kept)
    return ft__launch_refuse(msg, FT_LAUNCH_EXIT_FAIL, "out of memory");
  a->smp_program = kept;
  return 0;
}

/* ---- pick_python ---- */

int ft__launch_pick_python(ft__launch_args_t *a, const ft__env_t *env,
                           const char *here) {
  /* python3 ARGS, or env [OPTIONS] [NAME=VALUE...] python3 ARGS (not in a
   * -S string: that one word is the user's own) */
  int at = 0, n = (int)a->program.n;
  const char *split = NULL;
  if (n > 0 && env_word(a->program.v[0]))
    at = past_env(a->program.v, 1, n, &split);
  if (at >= n || split)
    return FT_OK;
  /* env's words that choose the interpreter themselves: PATH=..., -i,
   * -u PATH */
  for (int i = 1; i < at; i++) {
    const char *w = a->program.v[i];
    if (strncmp(w, "PATH=", 5) == 0 || strcmp(w, "-i") == 0 ||
        strcmp(w, "-") == 0 || strcmp(w, "--ignore-environment") == 0 ||
        ((strcmp(w, "-u") == 0 || strcmp(w, "--unset") == 0) && i + 1 < at &&
         strcmp(a->program.v[i + 1], "PATH") == 0))
      return FT_OK;
  }
  const char *p0 = a->program.v[at];
  if (strcmp(p0, "python3") != 0 && strcmp(p0, "python") != 0)
    return FT_OK;
  ft__text_t py = FT__TEXT_INIT;
  int rc = ft__text_add(&py, ft__env_str(env, "FT_PYTHON"));
  if (rc == FT_OK && !py.len) {
    ft__text_addf(&py, "%s/ft-python", here);
    if (access(py.s, X_OK) != 0) {
      rc = ft__env_command(env, "ft-python", &py);
      rc = rc < 0 ? rc : rc == 1 ? FT_OK : 1;
    }
  }
  if (rc == FT_OK) {
    rc = ft__words_insert(&a->program, at, py.s);
    if (rc == FT_OK)
      ft__words_remove(&a->program, at + 1);
  }
  ft__text_free(&py);
  return rc < 0 ? rc : FT_OK;
}
