/*
 * ft-hold: arm, watch and release a hold point of the job running on this
 * node (snapshot/hold.h), through its control segment.  ft-chaos runs it on
 * every host to deliver a fault at an exact point of the job: arm (or find
 * armed by FT_HOLD), wait until held, strike, release.  No MPI; it never
 * touches snapshot data.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrt.h"
#include "runtime/config.h"
#include "snapshot/ctl.h"
#include "snapshot/hold.h"
#include "scripts/storeopt.h"
#include "snapshot/store.h"

enum {
  EXIT_OK = 0,
  EXIT_ERR = 1,
  EXIT_USAGE = 2,
  EXIT_NOJOB = 3,
  EXIT_NOTMET = 4,
  EXIT_REFUSED = 5
};

typedef struct tool {
  ft__ctl_t *ctl;
  ft__dir_t dir; /* the store, checked (storeopt.h) */
  char host[FT_NAME_MAX];
  double timeout_s;
  unsigned limit_s; /* FT_HOLD_LIMIT: the bound of what it arms */
  int replace;      /* arm --replace: in place of what is armed, at once */
} tool_t;

static void usage(FILE *f) {
  fputs(
      "usage: ft-hold [--job NAME] [--store DIR] [--vnode N] [--timeout SEC]\n"
      "               arm [--replace] WHEN | show | wait | release\n"
      "  arm WHEN       arm step=N or phase=P[,step=N] in the running job\n"
      "  --replace      arm: in place of the point armed, at once (who is\n"
      "                 held goes on unless WHEN holds it where it is)\n"
      "  show           one line: the arming, how many are held\n"
      "  wait           until every process that stops there is held\n"
      "  release        let the held processes go\n"
      "  --job NAME     job name (default: FT_JOB, else ftrt)\n"
      "  --store DIR    store root (default: FT_STORE_ROOT, else "
      "/dev/shm/...)\n"
      "  --vnode N      virtual node N (FT_VIRTUAL_NODE_RANKS layouts)\n"
      "  --timeout SEC  wait: give up after SEC seconds (default 120)\n"
      "  --help         this text\n"
      "See ft-hold(1).\n",
      f);
}

static int running(const ft__ctl_t *c) {
  return c->smp_pid && (kill((pid_t)c->smp_pid, 0) == 0 || errno == EPERM) &&
         ft__load32(&c->phase) != FT_PHASE_DONE &&
         __atomic_load_n(&c->smp_status, __ATOMIC_ACQUIRE) == FT_OK;
}

static uint32_t expected(const ft__ctl_t *c) {
  return ft__hold_is_trainer(c->hold.point) ? c->nlocal : 1;
}

/* The newest step any process of this node gated at. */
static uint64_t gate_of(const ft__ctl_t *c) {
  uint64_t g = __atomic_load_n(&c->smp_gate_step, __ATOMIC_SEQ_CST);
  for (uint32_t i = 0; i < c->nlocal && i < FT_MAX_LOCAL; i++) {
    uint64_t s = __atomic_load_n(&c->rank[i].gate_step, __ATOMIC_SEQ_CST);
    g = s > g ? s : g;
  }
  return g;
}

static void spec_of(const ft__ctl_t *c, char *out, size_t len) {
  ft__hold_spec_t h = {.point = c->hold.point, .step = c->hold.step};
  if (!ft__load32(&c->hold.armed))
    snprintf(out, len, "none");
  else
    ft__hold_format(&h, out, len);
}

static int show(tool_t *t) {
  const ft__ctl_t *c = t->ctl;
  char spec[96];
  spec_of(c, spec, sizeof(spec));
  char bound[40] = "";
  if (ft__load32(&c->hold.armed))
    snprintf(bound, sizeof(bound), c->hold.limit_s ? ", lets go after %u s"
                                                   : ", no bound",
             c->hold.limit_s);
  printf("ft-hold: %s: armed %s, held %u/%u at step %llu, passed %u, gate "
         "step %llu, node %u of %u, job %s%s\n",
         t->host, spec, ft__load32(&c->hold.held), expected(c),
         (unsigned long long)c->hold.held_step, ft__load32(&c->hold.passed),
         (unsigned long long)gate_of(c), c->node, c->nnodes,
         running(c) ? "running" : "not running", bound);
  return EXIT_OK;
}

static int arm(tool_t *t, const char *when) {
  ft__hold_spec_t h;
  if (ft__hold_parse(when, &h) != 0) {
    fprintf(stderr, "ft-hold: arm %s: expected step=N or phase=P[,step=N] "
                    "with P snapshot|crc|encode|commit\n", when);
    return EXIT_USAGE;
  }
  if (h.point == FT_HOLD_RESTORE) {
    fprintf(stderr, "ft-hold: phase=restore is armed with FT_HOLD=phase=restore "
                    "in ft-restore's environment (ft-launch passes it on)\n");
    return EXIT_USAGE;
  }
  ft__ctl_t *c = t->ctl;
  if (!running(c)) {
    fprintf(stderr, "ft-hold: %s: job not running (its SMP, pid %u, is gone "
                    "or stopped)\n", t->host, c->smp_pid);
    return EXIT_NOJOB;
  }
  char old[96] = "";
  if (ft__load32(&c->hold.armed)) {
    char spec[96];
    spec_of(c, spec, sizeof(spec));
    if (c->hold.point == h.point && c->hold.step == h.step)
      return printf("ft-hold: %s: %s already armed\n", t->host, spec), EXIT_OK;
    if (!t->replace) {
      fprintf(stderr, "ft-hold: %s: another hold is armed (%s); release it "
                      "first, or arm --replace\n", t->host, spec);
      return EXIT_ERR;
    }
    snprintf(old, sizeof(old), "%s", spec);
  }
  if (h.point != FT_HOLD_STEP && h.step == 0)
    h.step = gate_of(c) + 1; /* "the next snapshot" on this node */
  h.limit_s = t->limit_s;
  char why[256];
  /* Too late already: refused with the old arming left as it was.  Checked
   * again after arming, for a process that gated in between. */
  if (*old && ft__hold_too_late(c, &h, why, sizeof(why))) {
    fprintf(stderr, "ft-hold: %s: too late: %s; %s left armed\n", t->host,
            why, old);
    return EXIT_NOTMET;
  }
  ft__hold_arm(c, &h);
  if (ft__hold_too_late(c, &h, why, sizeof(why))) {
    ft__hold_release(c);
    fprintf(stderr, "ft-hold: %s: too late: %s; nothing left armed%s\n",
            t->host, why, *old ? " (what was held goes on)" : "");
    return EXIT_NOTMET;
  }
  if (*old) {
    char spec[96];
    ft__hold_format(&h, spec, sizeof(spec));
    printf("ft-hold: %s: armed %s in place of %s\n", t->host, spec, old);
    return EXIT_OK;
  }
  char spec[96];
  ft__hold_format(&h, spec, sizeof(spec));
  printf("ft-hold: %s: armed %s\n", t->host, spec);
  return EXIT_OK;
}

static int wait_held(tool_t *t) {
  ft__ctl_t *c = t->ctl;
  double deadline = ft__now() + t->timeout_s;
  for (;;) {
    uint32_t seq = ft__ctl_seq(c);
    /* The control segment of a launch that ended (an earlier run's, until
     * the next launch's SMP replaces it, or a job that ended before the
     * point): no running job here, and nothing in it counts. */
    if (!running(c)) {
      fprintf(stderr, "ft-hold: %s: no running job (its SMP, pid %u, is gone "
                      "or stopped)\n", t->host, c->smp_pid);
      return EXIT_NOJOB;
    }
    int armed = ft__load32(&c->hold.armed) != 0;
    if (armed && ft__load32(&c->hold.held) >= expected(c))
      return show(t);
    /* FT_HOLD is armed by the SMP right after it makes the segment, before
     * its first layout: until then, not armed yet is not "nothing armed". */
    if (!armed && ft__load32(&c->layout_ready)) {
      fprintf(stderr, "ft-hold: %s: nothing armed (released or withdrawn)\n",
              t->host);
      return EXIT_NOTMET;
    }
    double left = deadline - ft__now();
    if (left <= 0) {
      show(t);
      fprintf(stderr, "ft-hold: %s: not held within %.0f s\n", t->host,
              t->timeout_s);
      return EXIT_NOTMET;
    }
    ft__ctl_wait(c, seq, left < 0.5 ? left : 0.5);
  }
}

static int release(tool_t *t) {
  uint32_t held = ft__load32(&t->ctl->hold.held);
  ft__hold_release(t->ctl);
  printf("ft-hold: %s: released (%u held)\n", t->host, held);
  return EXIT_OK;
}

static int run(tool_t *t, int argc, char **argv) {
  const char *cmd = argv[0];
  if (strcmp(cmd, "arm") == 0 && argc == 2)
    return arm(t, argv[1]);

  if (argc != 1)
    return usage(stderr), EXIT_USAGE;
  if (strcmp(cmd, "show") == 0)
    return show(t);
  if (strcmp(cmd, "wait") == 0)
    return wait_held(t);
  if (strcmp(cmd, "release") == 0)
    return release(t);
  return usage(stderr), EXIT_USAGE;
}

static int parse(int argc, char **argv, ft__config_t *cfg, int *vnode,
                 tool_t *t) {
  static const struct option opts[] = {FT_STOREOPT_OPTIONS,
                                       {"timeout", required_argument, 0, 't'},
                                       {"replace", no_argument, 0, 'r'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int o, src;
  char *end;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if ((src = ft__storeopt(o, optarg, "ft-hold", cfg, vnode)) != 1) {
      if (src)
        return src;
      continue;
    }
    switch (o) {
    case 't':
      t->timeout_s = strtod(optarg, &end);
      if (*end || !(t->timeout_s > 0))
        return fprintf(stderr, "ft-hold: --timeout %s: expected seconds > 0\n",
                       optarg), 2;
      break;
    case 'r':
      t->replace = 1;
      break;
    case 'h':
      usage(stdout);
      return -1;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind >= argc)
    return usage(stderr), 2;
  if (t->replace && strcmp(argv[optind], "arm") != 0)
    return fprintf(stderr, "ft-hold: --replace: only with arm WHEN\n"), 2;
  return 0;
}

int main(int argc, char **argv) {
  ft__config_t cfg;
  char msg[512];
  if (ft__config_load(&cfg, ft__config_env, NULL, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "ft-hold: %s\n", msg);
    return EXIT_USAGE;
  }
  tool_t t = {.timeout_s = 120, .limit_s = cfg.hold_limit_s};
  int vnode = -1, prc = parse(argc, argv, &cfg, &vnode, &t);
  if (prc)
    return prc < 0 ? EXIT_OK : prc;
  gethostname(t.host, sizeof(t.host) - 1);
  int orc = ft__storeopt_open(&cfg, vnode, &t.dir, msg, sizeof(msg));
  if (orc == FT_ECONFIG) {
    fprintf(stderr, "ft-hold: %s: refused: %s\n", t.host, msg);
    return EXIT_REFUSED;
  }
  if (orc != FT_OK ||
      ft__ctl_attach(&t.dir, &t.ctl, msg, sizeof(msg)) != FT_OK) {
    fprintf(stderr, "ft-hold: %s: no running job '%s' (%s)\n", t.host,
            cfg.job, msg);
    return EXIT_NOJOB;
  }
  int rc = run(&t, argc - optind, argv + optind);
  ft__ctl_detach(t.ctl);
  ft__dir_close(&t.dir);
  return rc;
}
