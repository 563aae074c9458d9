/*
 * Reading and validating FT_* variables.  This file holds the only getenv()
 * of the library.  Each parser writes a one-line message naming the variable,
 * the offending value and what would be accepted, because the user reading it
 * is usually looking at the log of a job that refused to start.
 */
#include "runtime/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/fault.h"
#include "ftrt.h"
#include "snapshot/hold.h"

#define FT__DEFAULT_TIMEOUT_S 60.0
#define FT__DEFAULT_PIECE (1u << 20)

void ft__config_defaults(ft__config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->job, sizeof(cfg->job), "%s", "ftrt");
  /* One default root per user: a root must be its user's own (store.h),
   * so a shared default would serve only whoever made it first. */
  if (geteuid() == 0)
    snprintf(cfg->store_root, sizeof(cfg->store_root), "/dev/shm/ftrt");
  else
    snprintf(cfg->store_root, sizeof(cfg->store_root), "/dev/shm/ftrt-%u",
             (unsigned)geteuid());
  cfg->ec_k = 0;
  cfg->ec_m = -1;
  cfg->failure_domains = "";
  cfg->capture = FT_CAPTURE_SYNC;
  cfg->policy = FT_POLICY_BLOCK;
  cfg->log_level = FT_LOG_WARN;
  cfg->timeout_s = FT__DEFAULT_TIMEOUT_S;
  cfg->hold_limit_s = FT_HOLD_LIMIT_S;
  cfg->piece_bytes = FT__DEFAULT_PIECE;
  cfg->default_memory = FT_MEM_HOST;
  cfg->persist_every = 10;
  cfg->persist_keep = 2;
}

const char *ft__config_env(const char *name, void *arg) {
  (void)arg;
  return getenv(name);
}

int ft__valid_job(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= FT_JOB_MAX || s[0] == '.')
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!isalnum(c) && c != '.' && c != '_' && c != '-')
      return 0;
  }
  return 1;
}

int ft__parse_size(const char *s, size_t *out) {
  char *end;
  if (!s || !isdigit((unsigned char)s[0]))
    return FT_EINVAL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return FT_EINVAL;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
  case '\0':
    break;
  case 'K':
    shift = 10;
    break;
  case 'M':
    shift = 20;
    break;
  case 'G':
    shift = 30;
    break;
  default:
    return FT_EINVAL;
  }
  if (*end && end[1] != '\0' && !(toupper((unsigned char)end[1]) == 'B' && end[2] == '\0'))
    return FT_EINVAL;
  if (shift && v > (~0ull >> shift))
    return FT_EINVAL;
  *out = (size_t)(v << shift);
  return FT_OK;
}

static int parse_int(const char *name, const char *v, long lo, long hi,
                     int *out, char *msg, size_t msglen) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (!*v || *end || errno)
    return ft__msgf(FT_ECONFIG, msg, msglen, "%s=%s: not a whole number", name,
                    v);
  if (x < lo || x > hi)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "%s=%s: must be between %ld and %ld", name, v, lo, hi);
  *out = (int)x;
  return FT_OK;
}

/* Match v against a NULL-terminated list of words; the index is the value. */
static int parse_word(const char *name, const char *v,
                      const char *const *words, int *out, char *msg,
                      size_t msglen) {
  char allowed[128] = "";
  for (int i = 0; words[i]; i++) {
    if (strcmp(v, words[i]) == 0) {
      *out = i;
      return FT_OK;
    }
    snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed),
             "%s%s", i ? "|" : "", words[i]);
  }
  return ft__msgf(FT_ECONFIG, msg, msglen, "%s=%s: unknown value, expected %s",
                  name, v, allowed);
}

/* host=domain pairs separated by commas, no spaces, non-empty parts. */
static int valid_domain_map(const char *v) {
  size_t n = strlen(v);
  if (!n || strchr(v, ' '))
    return 0;
  const char *p = v;
  while (*p) {
    const char *comma = strchr(p, ','), *end = comma ? comma : v + n;
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq || eq == p || eq + 1 == end || (size_t)(end - eq - 1) >= FT_JOB_MAX)
      return 0;
    p = comma ? comma + 1 : end;
    if (comma && !*p)
      return 0;
  }
  return 1;
}

void ft__config_domain_of(const ft__config_t *cfg, const char *host,
                          char *out) {
  snprintf(out, FT_JOB_MAX, "%s", cfg->failure_domain);
  if (out[0])
    return;
  size_t hl = strlen(host);
  for (const char *p = cfg->failure_domains; *p;) {
    const char *comma = strchr(p, ','), *eq = strchr(p, '=');
    const char *end = comma ? comma : p + strlen(p);
    if ((size_t)(eq - p) == hl && strncmp(p, host, hl) == 0) {
      snprintf(out, FT_JOB_MAX, "%.*s", (int)(end - eq - 1), eq + 1);
      return;
    }
    p = comma ? comma + 1 : end;
  }
}

static int load_names(ft__config_t *cfg, ft__getenv_fn get, void *arg,
                      char *msg, size_t msglen) {
  const char *v;
  if ((v = get("FT_JOB", arg))) {
    if (!ft__valid_job(v))
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_JOB=%s: a job name is 1-63 characters of "
                      "[A-Za-z0-9._-], not starting with '.'",
                      v);
    snprintf(cfg->job, sizeof(cfg->job), "%s", v);
  }
  if ((v = get("FT_STORE_ROOT", arg))) {
    if (v[0] != '/' || strlen(v) >= sizeof(cfg->store_root) - FT_JOB_MAX)
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_STORE_ROOT=%s: must be an absolute path shorter than "
                      "%zu characters",
                      v, sizeof(cfg->store_root) - FT_JOB_MAX);
    snprintf(cfg->store_root, sizeof(cfg->store_root), "%s", v);
  }
  if ((v = get("FT_FAILURE_DOMAIN", arg))) {
    if (strlen(v) >= sizeof(cfg->failure_domain) || strchr(v, ' '))
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_FAILURE_DOMAIN=%s: at most %zu characters, no spaces",
                      v, sizeof(cfg->failure_domain) - 1);
    snprintf(cfg->failure_domain, sizeof(cfg->failure_domain), "%s", v);
  }
  if ((v = get("FT_FAILURE_DOMAINS", arg))) {
    if (!valid_domain_map(v))
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_FAILURE_DOMAINS=%.200s%s: expected "
                      "host=domain[,host=domain...]",
                      v, strlen(v) > 200 ? "..." : "");
    cfg->failure_domains = v; /* one entry per host: no fixed size */
  }
  if ((v = get("FT_SMP_CPUSET", arg))) {
    if (strlen(v) >= sizeof(cfg->smp_cpuset) ||
        strspn(v, "0123456789,-x") != strlen(v))
      return ft__msgf(
          FT_ECONFIG, msg, msglen,
          "FT_SMP_CPUSET=%s: expected a CPU list such as 3 or 2-3,7", v);
    snprintf(cfg->smp_cpuset, sizeof(cfg->smp_cpuset), "%s", v);
  }
  if ((v = get("FT_FAULT", arg))) {
    ft__fault_t f;
    if (strlen(v) >= sizeof(cfg->fault) || ft__fault_parse(&f, v) != 0)
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_FAULT=%s: expected [stop:|flip:|fail:]POINT[:NTH]"
                      "[@rN|@HOST] with POINT startup|copy|crc|encode|flush|"
                      "commit|restore|rebuilt|source|link (flip: only with "
                      "rebuilt or source; link only with fail:)",
                      v);
    snprintf(cfg->fault, sizeof(cfg->fault), "%s", v);
  }
  if ((v = get("FT_HOLD", arg))) {
    if (strlen(v) >= sizeof(cfg->hold) || ft__hold_parse_list(v) != 0)
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_HOLD=%s: expected step=N or phase=P[,step=N] with P "
                      "snapshot|crc|encode|commit|restore, or several of "
                      "them separated by ';'",
                      v);
    snprintf(cfg->hold, sizeof(cfg->hold), "%s", v);
  }
  return FT_OK;
}

static int load_ec(ft__config_t *cfg, ft__getenv_fn get, void *arg, char *msg,
                   size_t msglen) {
  const char *vk = get("FT_EC_K", arg), *vm = get("FT_EC_M", arg);
  int rc;
  if (vk && (rc = parse_int("FT_EC_K", vk, 1, FT_EC_MAX_N - 1, &cfg->ec_k, msg,
                            msglen)))
    return rc;
  if (vm && (rc = parse_int("FT_EC_M", vm, 0, FT_EC_MAX_N - 1, &cfg->ec_m, msg,
                            msglen)))
    return rc;
  if (vk && vm && cfg->ec_k + cfg->ec_m > FT_EC_MAX_N)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "FT_EC_K=%d FT_EC_M=%d: k+m=%d, must be at most %d "
                    "(a group's chunks are coded in GF(2^8))",
                    cfg->ec_k, cfg->ec_m, cfg->ec_k + cfg->ec_m, FT_EC_MAX_N);
  return FT_OK;
}

static int load_modes(ft__config_t *cfg, ft__getenv_fn get, void *arg,
                      char *msg, size_t msglen) {
  static const char *const capture[] = {"sync", "lazy", NULL};
  static const char *const policy[] = {"block", "skip", NULL};
  static const char *const level[] = {"error", "warn", "info", "debug", NULL};
  static const char *const memory[] = {"host", "cuda", NULL};
  const char *v;
  int x, rc;
  if ((v = get("FT_CAPTURE", arg))) {
    if ((rc = parse_word("FT_CAPTURE", v, capture, &x, msg, msglen)))
      return rc;
    cfg->capture = (ft__capture_t)x;
  }
  if ((v = get("FT_SNAPSHOT_POLICY", arg))) {
    if ((rc = parse_word("FT_SNAPSHOT_POLICY", v, policy, &x, msg, msglen)))
      return rc;
    cfg->policy = (ft__policy_t)x;
  }
  if ((v = get("FT_LOG", arg))) {
    if ((rc = parse_word("FT_LOG", v, level, &x, msg, msglen)))
      return rc;
    cfg->log_level = (ft__log_level_t)x;
  }
  if ((v = get("FT_MEMORY", arg))) {
    if ((rc = parse_word("FT_MEMORY", v, memory, &x, msg, msglen)))
      return rc;
    cfg->default_memory = x;
  }
  return FT_OK;
}

static int load_numbers(ft__config_t *cfg, ft__getenv_fn get, void *arg,
                        char *msg, size_t msglen) {
  const char *v;
  if ((v = get("FT_TIMEOUT", arg))) {
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    if (!*v || *end || errno || !(t > 0) || t > 86400)
      return ft__msgf(
          FT_ECONFIG, msg, msglen,
          "FT_TIMEOUT=%s: expected seconds, a number above 0 and at "
          "most 86400",
          v);
    cfg->timeout_s = t;
  }
  if ((v = get("FT_HOLD_LIMIT", arg))) {
    char *end;
    errno = 0;
    unsigned long t = strtoul(v, &end, 10);
    if (!*v || *end || errno || *v == '-' || t > 86400)
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_HOLD_LIMIT=%s: expected whole seconds from 0 (no "
                      "bound) to 86400",
                      v);
    cfg->hold_limit_s = (unsigned)t;
  }
  if ((v = get("FT_PIECE_SIZE", arg))) {
    size_t s;
    if (ft__parse_size(v, &s) || s < 4096 || s > (1u << 30))
      return ft__msgf(
          FT_ECONFIG, msg, msglen,
          "FT_PIECE_SIZE=%s: expected a size between 4K and 1G, such "
          "as 1M",
          v);
    cfg->piece_bytes = s;
  }
  return FT_OK;
}

/* FT_REBUILD: read first, and kept when a later variable is bad (under it
 * a failed ft_init ends the job: runtime/init.c). */
static int load_rebuild(ft__config_t *cfg, ft__getenv_fn get, void *arg,
                        char *msg, size_t msglen) {
  const char *v = get("FT_REBUILD", arg);
  if (!v)
    return FT_OK;
  if (strcmp(v, "replace") && strcmp(v, "shrink") && strcmp(v, "")) {
    cfg->rebuild = 1; /* set, if not to a mode */
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "FT_REBUILD=%s: expected replace or shrink (ft-launch "
                    "sets it on the relaunch of a recovery)",
                    v);
  }
  cfg->rebuild = !*v ? 0 : !strcmp(v, "replace") ? 1 : 2;
  return FT_OK;
}

static int load_launch(ft__config_t *cfg, ft__getenv_fn get, void *arg,
                       char *msg, size_t msglen) {
  int rc;
  const char *v = get("FT_VIRTUAL_NODE_RANKS", arg);
  if (v && (rc = parse_int("FT_VIRTUAL_NODE_RANKS", v, 2, 4096,
                           &cfg->vnode_ranks, msg, msglen)))
    return rc;
  /* Starting over is never implied: only FT_FRESH=1 (ft-launch --fresh). */
  if ((v = get("FT_FRESH", arg)) &&
      (rc = parse_int("FT_FRESH", v, 0, 1, &cfg->fresh, msg, msglen)))
    return rc;
  if ((v = get("FT_ALLOW_ROLLBACK", arg)))
    return parse_int("FT_ALLOW_ROLLBACK", v, 0, 1, &cfg->allow_rollback, msg,
                     msglen);
  return FT_OK;
}

static int load_persist(ft__config_t *cfg, ft__getenv_fn get, void *arg,
                        char *msg, size_t msglen) {
  int rc;
  const char *v = get("FT_PERSIST_DIR", arg);
  if (v && *v) {
    if (v[0] != '/' || strlen(v) >= sizeof(cfg->persist_dir) - FT_JOB_MAX)
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "FT_PERSIST_DIR=%s: must be an absolute path shorter "
                      "than %zu characters, on a file system every host of "
                      "the job sees",
                      v, sizeof(cfg->persist_dir) - FT_JOB_MAX);
    snprintf(cfg->persist_dir, sizeof(cfg->persist_dir), "%s", v);
  }
  if ((v = get("FT_PERSIST_EVERY", arg)) &&
      (rc = parse_int("FT_PERSIST_EVERY", v, 1, 1000000, &cfg->persist_every,
                      msg, msglen)))
    return rc;
  if ((v = get("FT_PERSIST_KEEP", arg)))
    return parse_int("FT_PERSIST_KEEP", v, 1, 1000000, &cfg->persist_keep,
                     msg, msglen);
  return FT_OK;
}

int ft__config_load(ft__config_t *cfg, ft__getenv_fn get, void *arg, char *msg,
                    size_t msglen) {
  int rc;
  ft__config_defaults(cfg);
  if (msg && msglen)
    msg[0] = '\0';
  if ((rc = load_rebuild(cfg, get, arg, msg, msglen)) ||
      (rc = load_names(cfg, get, arg, msg, msglen)) ||
      (rc = load_ec(cfg, get, arg, msg, msglen)) ||
      (rc = load_modes(cfg, get, arg, msg, msglen)) ||
      (rc = load_numbers(cfg, get, arg, msg, msglen)) ||
      (rc = load_launch(cfg, get, arg, msg, msglen)) ||
      (rc = load_persist(cfg, get, arg, msg, msglen))) {
    int rebuild = cfg->rebuild;
    ft__config_defaults(cfg);
    cfg->rebuild = rebuild;
    return rc;
  }
  return FT_OK;
}

/* Defaults of docs/design.md section 6: 3+1 from four nodes, smaller codes
 * below. */
static void auto_ec(int nnodes, int *k, int *m) {
  if (nnodes <= 1) {
    *k = 1;
    *m = 0;
  } else if (nnodes < 4) {
    *k = nnodes - 1;
    *m = 1;
  } else {
    *k = 3;
    *m = 1;
  }
}

int ft__config_ec_for_nodes(const ft__config_t *cfg, int nnodes, int *k,
                            int *m, char *msg, size_t msglen) {
  int ak, am;
  auto_ec(nnodes, &ak, &am);
  int kk = cfg->ec_k > 0 ? cfg->ec_k : ak;
  int mm = cfg->ec_m >= 0 ? cfg->ec_m : am;
  if (cfg->ec_k > 0 && cfg->ec_m < 0 && kk + mm > nnodes)
    mm = nnodes - kk > 0 ? nnodes - kk : 0;
  /* One of FT_EC_K, FT_EC_M set alone: the other one chosen may take the
   * code past what GF(2^8) allows (load_ec checked the pair when both are
   * set). */
  if (kk + mm > FT_EC_MAX_N)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "FT_EC_K=%d FT_EC_M=%d%s: k+m=%d, must be at most %d (a "
                    "group's chunks are coded in GF(2^8)): set both",
                    kk, mm, cfg->ec_k > 0 ? " (FT_EC_M chosen)"
                                          : " (FT_EC_K chosen)",
                    kk + mm, FT_EC_MAX_N);
  if (kk + mm > nnodes) {
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "k=%d m=%d needs at least %d nodes but the job has %d: use "
                    "k+m <= %d, for example FT_EC_K=%d FT_EC_M=%d",
                    kk, mm, kk + mm, nnodes, nnodes, ak, am);
  }
  *k = kk;
  *m = mm;
  return FT_OK;
}

/* The numeric settings ft__config_same compares, in its order. */
enum {
  SAME_EC_K,
  SAME_EC_M,
  SAME_PIECE,
  SAME_CAPTURE,
  SAME_VNODE,
  SAME_FRESH,
  SAME_ROLLBACK,
  SAME_REBUILD,
  SAME_PERSIST_EVERY,
  SAME_PERSIST_KEEP,
  SAME_N
};

/* A setting as a message shows it: names for the modes, "unset" for a
 * value chosen by the runtime. */
static void say_setting(int i, long long v, char *out, size_t len) {
  static const char *const rebuild[] = {"unset", "replace", "shrink"};
  static const char *const capture[] = {"sync", "lazy"};
  if (i == SAME_REBUILD && v >= 0 && v <= 2)
    snprintf(out, len, "%s", rebuild[v]);
  else if (i == SAME_CAPTURE && v >= 0 && v <= 1)
    snprintf(out, len, "%s", capture[v]);
  else if ((i == SAME_EC_K && v == 0) || (i == SAME_EC_M && v < 0))
    snprintf(out, len, "unset");
  else
    snprintf(out, len, "%lld", v);
}

int ft__config_same(MPI_Comm comm, const ft__config_t *cfg, const char *host,
                    char *msg, size_t msglen) {
  /* The numbers, then the two strings (JOB, PERSIST below). */
  static const char *const name[] = {
      "FT_EC_K",         "FT_EC_M",          "FT_PIECE_SIZE",
      "FT_CAPTURE",      "FT_VIRTUAL_NODE_RANKS", "FT_FRESH",
      "FT_ALLOW_ROLLBACK", "FT_REBUILD",     "FT_PERSIST_EVERY",
      "FT_PERSIST_KEEP", "FT_JOB",           "FT_PERSIST_DIR"};
  struct {
    long long v[SAME_N];
    char job[FT_JOB_MAX];
    char persist[FT_PATH_MAX];
    char host[64];
  } mine = {{cfg->ec_k, cfg->ec_m, (long long)cfg->piece_bytes, cfg->capture,
             cfg->vnode_ranks, cfg->fresh, cfg->allow_rollback, cfg->rebuild,
             cfg->persist_every, cfg->persist_keep},
            "",
            "",
            ""},
    ref, other;
  snprintf(mine.job, sizeof(mine.job), "%s", cfg->job);
  snprintf(mine.persist, sizeof(mine.persist), "%s", cfg->persist_dir);
  snprintf(mine.host, sizeof(mine.host), "%s", host);
  /* Each rank against rank 0: for each setting (FT_JOB and FT_PERSIST_DIR
   * after the numbers) the lowest rank that differs, then its values. */
  enum { JOB = SAME_N, PERSIST, ALL };
  _Static_assert(sizeof(name) / sizeof(name[0]) == ALL, "a name a setting");
  int rank, first[ALL];
  MPI_Comm_rank(comm, &rank);
  ref = mine;
  if (MPI_Bcast(&ref, sizeof(ref), MPI_BYTE, 0, comm) != MPI_SUCCESS)
    return ft__msgf(FT_EMPI, msg, msglen, "MPI failed comparing FT_* settings");
  for (int i = 0; i < SAME_N; i++)
    first[i] = mine.v[i] != ref.v[i] ? rank : INT_MAX;
  first[JOB] = strcmp(mine.job, ref.job) ? rank : INT_MAX;
  first[PERSIST] = strcmp(mine.persist, ref.persist) ? rank : INT_MAX;
  if (MPI_Allreduce(MPI_IN_PLACE, first, ALL, MPI_INT, MPI_MIN, comm) !=
      MPI_SUCCESS)
    return ft__msgf(FT_EMPI, msg, msglen, "MPI failed comparing FT_* settings");
  int i = 0;
  while (i < ALL && first[i] == INT_MAX)
    i++;
  if (i == ALL)
    return FT_OK;
  other = mine;
  if (MPI_Bcast(&other, sizeof(other), MPI_BYTE, first[i], comm) !=
      MPI_SUCCESS)
    return ft__msgf(FT_EMPI, msg, msglen, "MPI failed comparing FT_* settings");
  char a[256], b[256];
  if (i == JOB || i == PERSIST) {
    snprintf(a, sizeof(a), "'%s'", i == JOB ? ref.job : ref.persist);
    snprintf(b, sizeof(b), "'%s'", i == JOB ? other.job : other.persist);
  } else {
    say_setting(i, ref.v[i], a, sizeof(a));
    say_setting(i, other.v[i], b, sizeof(b));
  }
  return ft__msgf(FT_ECONFIG, msg, msglen,
                  "%s is not the same on every process of the job (%s on rank "
                  "0, %s; %s on rank %d, %s): nothing was changed. Every "
                  "process needs the same value: ft-launch passes every FT_* "
                  "variable to every host, and a setting made on some hosts "
                  "only (a shell profile, mpirun -x on one part) differs",
                  name[i], a, ref.host, b, first[i], other.host);
}
