/*
 * ft-launch: the supervisor's main.  The command line and its environment
 * (launch/args.h), the placement and the probe (launch/plan.h), and the
 * launcher's command line from its backend (launch/backend.h); --help,
 * the refusals (exit 1 and 2, the bash script's lines), and --dry-run,
 * which prints the "# hostfile:", "# spares:", "# probe:", "# environment:"
 * and "# launch environment:" lines and the command line quoted as bash's printf %q
 * quotes it.  Any other run is the job, to its end (launch/run.h), and
 * exits with its status.
 *
 * It runs in the order of the bash script it replaces (main there): parse,
 * validate, pick_python, the temporary directory, --fresh, the plan, the
 * command.  ft-cluster, ft-rsh, ft-nodelist and ft-python are looked for
 * next to the program itself (installed), else on PATH, else in the
 * sources' scripts/ that the build names (a build tree).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ftrt.h"
#include "launch/args.h"
#include "launch/backend.h"
#include "launch/env.h"
#include "launch/plan.h"
#include "launch/quote.h"
#include "launch/run.h"
#include "launch/words.h"

extern char **environ;

typedef struct launch {
  ft__env_t env;
  ft__launch_args_t args;
  ft__launch_plan_t plan;
  ft__launch_cmd_t cmd;
  ft__text_t msg;
  char here[PATH_MAX];
  char bin[PATH_MAX]; /* where ft-launch itself is (ft-smp beside it) */
  char cwd[PATH_MAX];
  char tmp[PATH_MAX]; /* the temporary directory, "" before it is made */
  double t0;          /* when it started (wall clock): the steps' stamps */
} launch_t;

static void say(const char *line) { fprintf(stderr, "ft-launch: %s\n", line); }

/* A refusal of args.h or plan.h: die (1) or bad_usage (2). */
static int refused(int code, const ft__text_t *msg) {
  say(ft__text_str(msg));
  if (code == FT_LAUNCH_EXIT_USAGE)
    fputs("(ft-launch --help for usage)\n", stderr);
  return code;
}

/* dirname "$(readlink -f "$0")": where the program is. */
static int find_here(launch_t *l) {
  char self[PATH_MAX];
  if (!realpath("/proc/self/exe", self))
    return -1;
  char *slash = strrchr(self, '/');
  *slash = '\0';
  snprintf(l->here, sizeof(l->here), "%s", slash == self ? "/" : self);
  snprintf(l->bin, sizeof(l->bin), "%s", l->here);
  /* Installed, the scripts are next to the program; in a build tree they
   * are in the sources' scripts/: found on PATH, else where the build
   * says the sources are. */
  char f[PATH_MAX + 16];
  snprintf(f, sizeof(f), "%s/ft-cluster", l->here);
  if (access(f, X_OK) == 0)
    return 0;
  ft__text_t t = FT__TEXT_INIT;
  if (ft__env_command(&l->env, "ft-cluster", &t) == 1 && t.s[0] == '/' &&
      realpath(t.s, self)) {
    slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(l->here, sizeof(l->here), "%s", slash == self ? "/" : self);
  }
#ifdef FT_SOURCE_SCRIPTS
  else {
    snprintf(f, sizeof(f), "%s/ft-cluster", FT_SOURCE_SCRIPTS);
    if (access(f, X_OK) == 0)
      snprintf(l->here, sizeof(l->here), "%s", FT_SOURCE_SCRIPTS);
  }
#endif
  ft__text_free(&t);
  return 0;
}

/* $PWD as bash sets it: the environment's when it names this directory. */
static void find_cwd(launch_t *l) {
  const char *pwd = ft__env_get(&l->env, "PWD");
  struct stat a, b;
  if (pwd && pwd[0] == '/' && strlen(pwd) < sizeof(l->cwd) &&
      stat(pwd, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
      a.st_ino == b.st_ino) {
    snprintf(l->cwd, sizeof(l->cwd), "%s", pwd);
  } else if (!getcwd(l->cwd, sizeof(l->cwd))) {
    l->cwd[0] = '\0';
  }
}

/* mktemp -d "${TMPDIR:-/tmp}/ft-launch.XXXXXX", and mktemp's line when it
 * fails. */
static int make_tmp(launch_t *l) {
  const char *dir = ft__env_str(&l->env, "TMPDIR");
  snprintf(l->tmp, sizeof(l->tmp), "%s/ft-launch.XXXXXX", *dir ? dir : "/tmp");
  if (mkdtemp(l->tmp))
    return 0;
  int err = errno;
  ft__text_t line = FT__TEXT_INIT;
  ft__text_add(&line, "mktemp: failed to create directory via template ");
  ft__quote_coreutils(&line, l->tmp);
  ft__text_addf(&line, ": %s\n", strerror(err));
  fputs(ft__text_str(&line), stderr);
  ft__text_free(&line);
  l->tmp[0] = '\0';
  say("cannot create a temporary directory");
  return FT_LAUNCH_EXIT_FAIL;
}

/* rm -rf "$TMP": it holds files only. */
static void remove_tmp(launch_t *l) {
  if (!l->tmp[0])
    return;
  DIR *d = opendir(l->tmp);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char f[PATH_MAX + 256];
    snprintf(f, sizeof(f), "%s/%s", l->tmp, e->d_name);
    unlink(f);
  }
  if (d)
    closedir(d);
  rmdir(l->tmp);
  l->tmp[0] = '\0';
}

/* nproc, without the OpenMP variables it would believe. */
static int64_t cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return 1;
  return CPU_COUNT(&set);
}

/* The command line of the first launch, and its hostfile written. */
static int build(launch_t *l, const ft__launcher_t *be) {
  ft__launch_job_t job;
  char hostfile[PATH_MAX + 16];
  snprintf(hostfile, sizeof(hostfile), "%s/hostfile", l->tmp);
  ft__launch_plan_job(&l->plan, &l->args, hostfile, cpus(), &job);
  char k[32], m[32];
  if (*l->args.ec) {
    size_t plus = strcspn(l->args.ec, "+");
    snprintf(k, sizeof(k), "%.*s", (int)plus, l->args.ec);
    snprintf(m, sizeof(m), "%s", l->args.ec + plus + 1);
    job.ec_k = k;
    job.ec_m = m;
  }
  if (ft__launch_job_env(&job, &l->env) != FT_OK ||
      be->build(&job, &l->env, &l->cmd) != FT_OK)
    return -1;
  if (!l->cmd.hostfile.len)
    return 0;
  FILE *f = fopen(hostfile, "w");
  if (!f)
    return -1;
  fputs(l->cmd.hostfile.s, f);
  return fclose(f) == 0 ? 0 : -1;
}

/* "# launch environment: NAME=VALUE" (the value %q-quoted) for each
 * variable the launch gets that ft-launch's own environment has not, or
 * has with another value: what ft-launch and the backend set (ft-bench
 * starts its floor's launches with them). */
static int dry_env_lines(const launch_t *l, ft__text_t *out) {
  ft__words_t names = FT__WORDS_INIT;
  int rc = ft__env_names(&l->env, "", &names);
  for (int i = 0; rc == FT_OK && i < names.n; i++) {
    const char *v = ft__env_str(&l->env, names.v[i]);
    const char *was = getenv(names.v[i]);
    if (was && strcmp(was, v) == 0)
      continue;
    rc = ft__text_addf(out, "# launch environment: %s=", names.v[i]);
    if (rc == FT_OK)
      rc = ft__quote_word(out, v);
    if (rc == FT_OK)
      rc = ft__text_add(out, "\n");
  }
  ft__words_free(&names);
  return rc;
}

/* --dry-run: the plan's lines, the launch's environment, then the command
 * line, each word %q-quoted and followed by a space. */
static int dry_run(launch_t *l) {
  ft__text_t out = FT__TEXT_INIT;
  int rc = ft__launch_dry_lines(&l->plan, &l->args, &l->env,
                                ft__text_str(&l->cmd.hostfile), &out);
  if (rc == FT_OK)
    rc = dry_env_lines(l, &out);
  const ft__words_t *parts[] = {&l->plan.runner, &l->cmd.argv};
  for (int p = 0; p < 2; p++)
    for (int i = 0; rc == FT_OK && i < parts[p]->n; i++) {
      rc = ft__quote_word(&out, parts[p]->v[i]);
      if (rc == FT_OK)
        rc = ft__text_add(&out, " ");
    }
  if (rc == FT_OK)
    rc = ft__text_add(&out, "\n");
  if (rc == FT_OK)
    fwrite(out.s, 1, out.len, stdout);
  ft__text_free(&out);
  return rc == FT_OK ? 0 : FT_LAUNCH_EXIT_FAIL;
}

/* Everything before the plan. */
static int prepare(launch_t *l, int argc, char **argv) {
  int rc = ft__launch_parse(&l->args, argc, argv, &l->env, &l->msg);
  if (rc)
    return refused(rc, &l->msg);
  if (l->args.help) {
    fputs(ft__launch_usage, stdout);
    return -1;
  }
  find_cwd(l);
  rc = ft__launch_validate(&l->args, &l->env, l->cwd, &l->msg);
  if (rc)
    return refused(rc, &l->msg);
  if (find_here(l) != 0) {
    say("cannot find where ft-launch is");
    return FT_LAUNCH_EXIT_FAIL;
  }
  rc = ft__launch_pick_smp(&l->args, &l->env, l->bin, &l->msg);
  if (rc)
    return refused(rc, &l->msg);
  /* The job is told which: a Python trainer that ends before ftrt.init()
   * in a job with ft-smp ends the job (its node's ft-smp would wait for
   * it in ft_init forever); under first-rank no variable of the user's
   * says otherwise. */
  if (!*l->args.smp_program)
    ft__env_unset(&l->env, "FT_SMP");
  else if (ft__env_set(&l->env, "FT_SMP", "ft-smp") != FT_OK) {
    say("out of memory");
    return FT_LAUNCH_EXIT_FAIL;
  }
  if (ft__launch_pick_python(&l->args, &l->env, l->here) != FT_OK) {
    say("out of memory");
    return FT_LAUNCH_EXIT_FAIL;
  }
  rc = make_tmp(l);
  if (rc)
    return rc;
  if (l->args.fresh && ft__env_set(&l->env, "FT_FRESH", "1") != FT_OK)
    return FT_LAUNCH_EXIT_FAIL;
  return 0;
}

static int run(launch_t *l, int argc, char **argv) {
  int rc = prepare(l, argc, argv);
  if (rc)
    return rc < 0 ? 0 : rc;
  const ft__launcher_t *be = ft__launcher_find(l->args.launcher);
  rc = ft__launch_plan(&l->plan, &l->args, &l->env, be, l->here, &l->msg);
  for (int i = 0; i < l->plan.said.n; i++)
    say(l->plan.said.v[i]);
  if (rc)
    return refused(rc, &l->msg);
  if (build(l, be) != 0) {
    say("out of memory, or cannot write the hostfile");
    return FT_LAUNCH_EXIT_FAIL;
  }
  if (l->args.dry_run)
    return dry_run(l);
  ft__launch_ctx_t ctx = {.env = &l->env,
                          .args = &l->args,
                          .plan = &l->plan,
                          .be = be,
                          .here = l->here,
                          .tmp = l->tmp,
                          .t0 = l->t0};
  return ft__launch_run(&ctx);
}

/* SIGPIPE: a write to a pipe whose reader went (ft-launch ... 2>&1 | head
 * -1) fails with EPIPE instead of killing ft-launch with its job still
 * running and its temporary directory left; what it starts gets SIG_DFL
 * back (exec; proc.h's fork). */
static void on_pipe(int signo) { (void)signo; }

/* A standard descriptor closed (2>&-, >&-, <&-) is /dev/null: else the
 * first pipe or file opened would take its number, and our lines would go
 * into it (the signal pipe, a hostfile). */
static void standard_fds(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
}

int main(int argc, char **argv) {
  standard_fds();
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_pipe;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, NULL);
  setlocale(LC_CTYPE, "");
  setlocale(LC_COLLATE, "");
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  launch_t l = {.t0 = (double)now.tv_sec + (double)now.tv_nsec / 1e9,
                .env = FT__ENV_INIT,
                .cmd = FT__LAUNCH_CMD_INIT,
                .msg = FT__TEXT_INIT,
                .plan = FT__LAUNCH_PLAN_INIT};
  if (ft__env_load(&l.env, environ) != FT_OK) {
    say("out of memory");
    return FT_LAUNCH_EXIT_FAIL;
  }
  ft__env_unset(&l.env, "FT_REBUILD"); /* ours: set on relaunches only */
  /* The ftrt package's mark of the process that imported it first: one
   * left by a Python program that runs ft-launch would tell every trainer
   * of this job that it is no trainer (and one ending before ftrt.init()
   * would then leave its node's ft-smp waiting). */
  ft__env_unset(&l.env, "FTRT_TRAINER_PID");
  int rc = run(&l, argc, argv);
  fflush(stdout);
  remove_tmp(&l);
  ft__launch_plan_free(&l.plan);
  ft__words_free(&l.cmd.argv);
  ft__text_free(&l.cmd.hostfile);
  ft__launch_args_free(&l.args);
  ft__text_free(&l.msg);
  ft__env_free(&l.env);
  return rc;
}
