/*
 * Configuration: every FT_* environment variable is read and validated here
 * and nowhere else.  The reader takes a lookup function so that tests (and
 * tools with their own flags) can feed values without touching the process
 * environment.
 */
#ifndef FT_RUNTIME_CONFIG_H
#define FT_RUNTIME_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "snapshot/store.h"

#define FT_EC_MAX_N 255

typedef enum { FT_CAPTURE_SYNC = 0, FT_CAPTURE_LAZY = 1 } ft__capture_t;
typedef enum { FT_POLICY_BLOCK = 0, FT_POLICY_SKIP = 1 } ft__policy_t;
typedef enum {
  FT_LOG_ERROR = 0,
  FT_LOG_WARN = 1,
  FT_LOG_INFO = 2,
  FT_LOG_DEBUG = 3
} ft__log_level_t;

typedef struct ft__config {
  char job[FT_JOB_MAX];               /* FT_JOB */
  char store_root[FT_PATH_MAX];       /* FT_STORE_ROOT */
  int ec_k;                           /* FT_EC_K, 0 = choose from node count */
  int ec_m;                           /* FT_EC_M, -1 = choose from node count */
  ft__capture_t capture;              /* FT_CAPTURE */
  ft__policy_t policy;                /* FT_SNAPSHOT_POLICY */
  ft__log_level_t log_level;          /* FT_LOG */
  double timeout_s;                   /* FT_TIMEOUT */
  char smp_cpuset[256];               /* FT_SMP_CPUSET, "" = choose */
  char failure_domain[FT_JOB_MAX];    /* FT_FAILURE_DOMAIN, "" = none */
  /* FT_FAILURE_DOMAINS: host=domain,... for every host of the job, so as
   * long as the job is large: the string get() returned (not copied into a
   * fixed array), "" when unset. */
  const char *failure_domains;
  size_t piece_bytes;                 /* FT_PIECE_SIZE */
  int default_memory;                 /* FT_MEMORY: ft_mem_kind_t */
  char fault[FT_JOB_MAX];             /* FT_FAULT: "point" or "point:nth" */
  char hold[FT_JOB_MAX];              /* FT_HOLD: "step=N", "phase=P,step=N" */
  unsigned hold_limit_s; /* FT_HOLD_LIMIT: a hold lets go by itself after
                          * this many seconds (0: never) */
  int vnode_ranks;                    /* FT_VIRTUAL_NODE_RANKS, 0 = real nodes */
  int fresh; /* FT_FRESH=1: start over, discarding what the store holds */
  int allow_rollback; /* FT_ALLOW_ROLLBACK=1: resume from an older version
                       * than a committed one no node set holds whole */
  /* FT_REBUILD=replace|shrink (set by ft-launch --restarts on the relaunch
   * of a recovery): the SMPs run ft-restore's engine in ft_init before they
   * open their stores (runtime/recover.c); 0 none, 1 replace, 2 shrink. */
  int rebuild;
  /* The disk tier (persist/persist.h): FT_PERSIST_DIR, "" = none; flush
   * every FT_PERSIST_EVERY-th committed version; keep FT_PERSIST_KEEP. */
  char persist_dir[FT_PATH_MAX];
  int persist_every, persist_keep;
} ft__config_t;

/* Returns the value of a variable or NULL when unset; the string stays
 * valid while the config is used (the environment's does). */
typedef const char *(*ft__getenv_fn)(const char *name, void *arg);

/* Fill cfg with the defaults. */
void ft__config_defaults(ft__config_t *cfg);

/*
 * Defaults, then every FT_* variable that get() returns.  On a bad value
 * returns FT_ECONFIG and writes one line naming the variable, its value and
 * what is allowed into msg; cfg then holds the defaults for what follows.
 * msg may be NULL.
 */
int ft__config_load(ft__config_t *cfg, ft__getenv_fn get, void *arg, char *msg,
                    size_t msglen);

/* The process environment as an ft__getenv_fn. */
const char *ft__config_env(const char *name, void *arg);

/* Resolve k and m for a job of nnodes nodes (auto values, k+m <= nnodes).
 * FT_ECONFIG with a message saying what would work when impossible.  msg
 * may be NULL. */
int ft__config_ec_for_nodes(const ft__config_t *cfg, int nnodes, int *k,
                            int *m, char *msg, size_t msglen);

/*
 * The settings every process of a job must share (FT_EC_K, FT_EC_M,
 * FT_PIECE_SIZE, FT_CAPTURE, FT_VIRTUAL_NODE_RANKS, FT_FRESH,
 * FT_ALLOW_ROLLBACK, FT_REBUILD, FT_PERSIST_EVERY, FT_PERSIST_KEEP, FT_JOB,
 * FT_PERSIST_DIR): the same on every rank of comm, else FT_ECONFIG on every
 * rank with the same message naming the first that differs, its value on
 * rank 0 and on the lowest rank where it differs, and their hosts (host:
 * this one's).  Collective; after a load that succeeded on every rank.
 * Processes that disagree would read two stores, exchange pieces of two
 * sizes (MPI_ERR_TRUNCATE, the job lost mid-snapshot), or enter the disk
 * tier's collectives on some nodes only.
 */
int ft__config_same(MPI_Comm comm, const ft__config_t *cfg, const char *host,
                    char *msg, size_t msglen);

/* The failure domain of host: FT_FAILURE_DOMAIN, else host's entry in
 * FT_FAILURE_DOMAINS, else "" (none).  out has FT_JOB_MAX bytes. */
void ft__config_domain_of(const ft__config_t *cfg, const char *host,
                          char *out);

/* "64", "4k", "16M", "2G" (powers of 1024) -> bytes; FT_EINVAL if malformed. */
int ft__parse_size(const char *s, size_t *out);

/* A job name: 1..63 characters of [A-Za-z0-9._-], not starting with '.'. */
int ft__valid_job(const char *s);

#endif
