/*
 * ft-persist: the versions a job persisted to disk (FT_PERSIST_DIR/<job>/,
 * persist/persist.h), read straight from the files, without MPI, while the
 * job runs or after it ended: list them, verify every CRC of one or all,
 * export one as numpy files (pexport.c).  The job's directory is opened as
 * every reader opens it (ft__persist_open: this user's private directory,
 * nothing followed through a symbolic link), and a directory refused is
 * not read at all.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrt.h"
#include "persist/persist.h"
#include "runtime/config.h"
#include "scripts/pexport.h"

typedef struct opts {
  const char *dir;
  const char *job;
  int json;
} opts_t;

static void usage(FILE *f) {
  fputs("usage: ft-persist [--dir DIR] [--job NAME] [--json] list\n"
        "       ft-persist [--dir DIR] [--job NAME] [--json] verify [VERSION]\n"
        "       ft-persist [--dir DIR] [--job NAME] [--json] export VERSION "
        "OUTDIR\n"
        "  list           the complete versions, newest first\n"
        "  verify         check every CRC of VERSION (default: of each one)\n"
        "  export         write VERSION as .npy files and OUTDIR/index.json\n"
        "  VERSION        a number, a directory name v<V>.e<E>, or latest\n"
        "  --dir DIR      the persist directory (default: FT_PERSIST_DIR)\n"
        "  --job NAME     job name (default: FT_JOB, else ftrt)\n"
        "  --json         one JSON object instead of text\n"
        "  --help         this text\n"
        "See ft-persist(1).\n",
        f);
}

/* The job's directory, or the exit status and a line on stderr. */
static int open_job(const opts_t *o, const char *cmd, ft__dir_t *jobdir) {
  char msg[1024];
  int rc = ft__persist_open(o->dir, o->job, 0, jobdir, msg, sizeof(msg));
  if (rc == FT_ECONFIG) /* the check is the store's: its hint names
                         * FT_STORE_ROOT where it means this directory */
    fprintf(stderr,
            "ft-persist %s: refused: %s (here: the persist directory, --dir "
            "or FT_PERSIST_DIR); nothing was read\n",
            cmd, msg);
  else if (rc == FT_ENOENT)
    fprintf(stderr,
            "ft-persist %s: nothing persisted for job '%s' under %s (%s); is "
            "that the FT_PERSIST_DIR the job flushed to (--dir), and '%s' its "
            "name (--job, FT_JOB)?\n",
            cmd, o->job, o->dir, msg, o->job);
  else if (rc)
    fprintf(stderr, "ft-persist %s: %s\n", cmd, msg);
  return ft__px_exit_of(rc);
}

static int list_versions(const ft__dir_t *jobdir, const char *cmd,
                         ft__pversion_t **v, int *n) {
  char msg[1024];
  int rc = ft__persist_list(jobdir, v, n, NULL, msg, sizeof(msg));
  if (rc)
    fprintf(stderr, "ft-persist %s: %s\n", cmd, msg);
  return ft__px_exit_of(rc);
}

/* ---- list ---- */

static void list_json(const opts_t *o, const ft__pversion_t *v, int n,
                      int incomplete, int damaged, const char *why) {
  printf("{\"persist_dir\":");
  ft__px_json_str(stdout, o->dir);
  printf(",\"job\":");
  ft__px_json_str(stdout, o->job);
  printf(",\"versions\":[");
  for (int i = 0; i < n; i++)
    printf("%s{\"dir\":\"%s\",\"version\":%" PRIu64 ",\"step\":%" PRIu64
           ",\"epoch\":%" PRIu64 ",\"run\":%" PRIu64
           ",\"nodes\":%u,\"ranks\":%u,\"bytes\":%" PRIu64 "}",
           i ? "," : "", v[i].name, v[i].version, v[i].step, v[i].epoch,
           v[i].run, v[i].nnodes, v[i].ntrainers, v[i].bytes);
  printf("],\"incomplete\":%d,\"damaged\":%d,\"damaged_error\":", incomplete,
         damaged);
  ft__px_json_str(stdout, why);
  printf("}\n");
}

static void list_text(const opts_t *o, const ft__dir_t *jobdir,
                      const ft__pversion_t *v, int n, int incomplete,
                      int damaged, const char *why) {
  printf("job %s in %s: %d complete version%s%s\n", o->job, jobdir->path, n,
         n == 1 ? "" : "s", n > 1 ? ", newest first" : "");
  if (n)
    printf("%-20s %8s %10s %6s %20s %5s %6s %11s\n", "directory", "version",
           "step", "epoch", "run", "nodes", "ranks", "bytes");
  for (int i = 0; i < n; i++) {
    char h[32];
    ft__px_human(h, sizeof(h), (double)v[i].bytes);
    printf("%-20s %8" PRIu64 " %10" PRIu64 " %6" PRIu64 " %20" PRIu64
           " %5u %6u %11s\n",
           v[i].name, v[i].version, v[i].step, v[i].epoch, v[i].run,
           v[i].nnodes, v[i].ntrainers, h);
  }
  printf("%d incomplete version director%s (no MANIFEST: a flush "
         "interrupted, or still running)\n",
         incomplete, incomplete == 1 ? "y" : "ies");
  if (damaged)
    printf("%d damaged version director%s (its MANIFEST unreadable), the "
           "newest: %s\n",
           damaged, damaged == 1 ? "y" : "ies", why);
}

static int cmd_list(const opts_t *o, const ft__dir_t *jobdir) {
  ft__pversion_t *v = NULL;
  int n = 0, incomplete = 0, damaged = 0;
  char why[1024] = "";
  int rc = list_versions(jobdir, "list", &v, &n);
  if (rc)
    return rc;
  ft__persist_unlisted(jobdir, &incomplete, &damaged, why, sizeof(why));
  if (o->json)
    list_json(o, v, n, incomplete, damaged, why);
  else
    list_text(o, jobdir, v, n, incomplete, damaged, why);
  if (!n)
    fprintf(stderr, "ft-persist list: no complete version of job '%s' in %s\n",
            o->job, jobdir->path);
  ft__persist_list_free(v, n);
  return n ? FT_PX_OK : FT_PX_NOTFOUND;
}

/* ---- verify ---- */

/* Version v, every file: 0 good, else its status with msg. */
static int verify_one(const opts_t *o, const ft__dir_t *jobdir,
                      const ft__pversion_t *v, int first) {
  char msg[1024];
  uint64_t bytes = 0;
  int rc = ft__persist_verify(jobdir, v, 0, 1, &bytes, msg, sizeof(msg));
  if (o->json) {
    printf("%s{\"dir\":\"%s\",\"version\":%" PRIu64 ",\"epoch\":%" PRIu64
           ",\"ok\":%s,\"bytes\":%" PRIu64 ",\"error\":",
           first ? "" : ",", v->name, v->version, v->epoch,
           rc ? "false" : "true", bytes);
    ft__px_json_str(stdout, rc ? msg : "");
    printf("}");
  } else if (rc == FT_OK) {
    char h[32];
    ft__px_human(h, sizeof(h), (double)bytes);
    printf("%s: OK (%u rank files, %s, every block and file CRC checked)\n",
           v->name, v->ntrainers, h);
  } else {
    printf("%s: BAD: %s\n", v->name, msg);
  }
  return rc;
}

/* The versions verify checks: all, or the one arg names. */
static int pick(const ft__dir_t *jobdir, ft__pversion_t *v, int n,
                const char *arg, int *from, int *to) {
  *from = 0, *to = n;
  if (!arg)
    return FT_PX_OK;
  int i = 0, rc = strcmp(arg, "latest") == 0 ? (n ? FT_OK : FT_ENOENT)
                                             : ft__persist_find(v, n, arg, &i);
  if (rc == FT_EINVAL)
    fprintf(stderr,
            "ft-persist verify: version '%s': expected a version number, a "
            "directory name v<V>.e<E> or 'latest'\n",
            arg);
  else if (rc == FT_ENOENT)
    fprintf(stderr,
            "ft-persist verify: no complete version '%s' in %s ('ft-persist "
            "list' shows them)\n",
            arg, jobdir->path);
  *from = i, *to = i + 1;
  return ft__px_exit_of(rc);
}

/* Not found among the complete versions: where a version directory's
 * MANIFEST is damaged, that is what verify reports (exit 5), not "none". */
static int damaged_instead(const ft__dir_t *jobdir, int rc) {
  int incomplete = 0, damaged = 0;
  char why[512] = "";
  if (rc != FT_PX_NOTFOUND ||
      ft__persist_unlisted(jobdir, &incomplete, &damaged, why, sizeof(why)) !=
          FT_OK ||
      !damaged)
    return rc;
  fprintf(stderr, "ft-persist verify: %d version director%s of %s %s a "
          "damaged MANIFEST; the newest: %s\n",
          damaged, damaged == 1 ? "y" : "ies", jobdir->path,
          damaged == 1 ? "has" : "have", why);
  return FT_PX_CORRUPT;
}

static int cmd_verify(const opts_t *o, const ft__dir_t *jobdir,
                      const char *arg) {
  ft__pversion_t *v = NULL;
  int n = 0, from, to, bad = 0;
  int rc = list_versions(jobdir, "verify", &v, &n);
  if (rc == FT_PX_OK && n == 0 && !arg) {
    fprintf(stderr,
            "ft-persist verify: no complete version of job '%s' in "
            "%s\n",
            o->job, jobdir->path);
    rc = FT_PX_NOTFOUND;
  }
  if (rc == FT_PX_OK)
    rc = pick(jobdir, v, n, arg, &from, &to);
  if (rc) {
    ft__persist_list_free(v, n);
    return damaged_instead(jobdir, rc);
  }
  if (o->json) {
    printf("{\"job\":");
    ft__px_json_str(stdout, o->job);
    printf(",\"versions\":[");
  }
  for (int i = from; i < to; i++)
    bad += verify_one(o, jobdir, &v[i], i == from) != FT_OK;
  if (o->json)
    printf("],\"bad\":%d}\n", bad);
  if (bad)
    fprintf(stderr,
            "ft-persist verify: %d of %d version%s of job '%s' damaged "
            "(above); a restore or 'ft-persist export latest' takes the "
            "newest that verifies\n",
            bad, to - from, to - from == 1 ? "" : "s", o->job);
  ft__persist_list_free(v, n);
  return bad ? FT_PX_CORRUPT : FT_PX_OK;
}

/* ---- main ---- */

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ft-persist: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs(" (ft-persist --help)\n", stderr);
  va_end(ap);
  return FT_PX_USAGE;
}

/* COMMAND and its arguments, checked before anything is read. */
static int check_args(const char *cmd, int nargs) {
  static const char *const cmds = "list, verify [VERSION] or export VERSION "
                                  "OUTDIR";
  if (!cmd)
    return usage_error("no command: %s", cmds);
  if (strcmp(cmd, "list") == 0 && nargs > 0)
    return usage_error("list takes no argument");
  if (strcmp(cmd, "verify") == 0 && nargs > 1)
    return usage_error("verify takes at most one VERSION");
  if (strcmp(cmd, "export") == 0 && nargs != 2)
    return usage_error("export takes VERSION OUTDIR");
  if (strcmp(cmd, "list") && strcmp(cmd, "verify") && strcmp(cmd, "export"))
    return usage_error("unknown command '%s': %s", cmd, cmds);
  return FT_PX_OK;
}

static int parse(int argc, char **argv, opts_t *o, ft__config_t *cfg) {
  static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                       {"job", required_argument, 0, 'j'},
                                       {"json", no_argument, 0, 'J'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'd':
      o->dir = optarg;
      break;
    case 'j':
      if (!ft__valid_job(optarg))
        return usage_error("bad job name '%s': 1 to 63 of [A-Za-z0-9._-], "
                           "not starting with '.'",
                           optarg);
      snprintf(cfg->job, sizeof(cfg->job), "%s", optarg);
      break;
    case 'J':
      o->json = 1;
      break;
    case 'h':
      usage(stdout);
      return -1;
    default:
      usage(stderr);
      return FT_PX_USAGE;
    }
  }
  return FT_PX_OK;
}

int main(int argc, char **argv) {
  ft__config_t cfg;
  char msg[512];
  if (ft__config_load(&cfg, ft__config_env, NULL, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "ft-persist: %s\n", msg);
    return FT_PX_USAGE;
  }
  /* The flush's side adds FT_PERSIST_DIR to the configuration; until then
   * it is read through the configuration's lookup, the one getenv. */
  opts_t o = {.dir = ft__config_env("FT_PERSIST_DIR", NULL), .job = cfg.job};
  int rc = parse(argc, argv, &o, &cfg);
  if (rc)
    return rc < 0 ? FT_PX_OK : rc;
  const char *cmd = optind < argc ? argv[optind] : NULL;
  char **args = argv + optind + (cmd != NULL);
  if ((rc = check_args(cmd, argc - optind - (cmd != NULL))))
    return rc;
  if (!o.dir || !*o.dir)
    return usage_error("no persist directory: give --dir DIR or set "
                       "FT_PERSIST_DIR");
  ft__dir_t jobdir;
  if ((rc = open_job(&o, cmd, &jobdir)))
    return rc;
  if (strcmp(cmd, "export") == 0) { /* which opens it again, as a reader */
    ft__dir_close(&jobdir);
    return ft__px_export(o.dir, o.job, args[0], args[1], o.json);
  }
  rc = strcmp(cmd, "list") == 0 ? cmd_list(&o, &jobdir)
                                : cmd_verify(&o, &jobdir, args[0]);
  ft__dir_close(&jobdir);
  return rc;
}
