/*
 * Where a launch runs and how its hosts are reached, decided before
 * anything starts (ft__launch_plan):
 *
 *   --cluster C   the live hosts of ft-cluster C (less the ones its head
 *                 cannot reach, said), its spares sN; the launcher runs on
 *                 its head (ft-cluster exec --name C head); FT_CLUSTER=C
 *   --hostfile F  the first N hosts of F; the others, and lines marked
 *                 "spare", are spares; "domain=D" words become
 *                 FT_FAILURE_DOMAINS=host=D,...
 *   Slurm         SLURM_JOB_NODELIST expanded by ft-nodelist: the first N
 *                 nodes, the others spares
 *   none          this host; --nodes N > 1 makes N virtual nodes
 * then the probe (hostfile, Slurm: --probe, FT_PROBE, srun in an
 * allocation, else the launcher's agent; ssh gets BatchMode and a connect
 * timeout), the warning of a cluster whose BTLs leave out tcp, and the
 * check of the erasure code against the nodes.  The summary lines a launch
 * starts with are made here too.
 *
 * ft__launch_plan returns 0 or an exit code (FT_LAUNCH_EXIT_FAIL for die,
 * FT_LAUNCH_EXIT_USAGE for bad_usage) with its line in msg; either way the
 * lines it said before (warnings) are in p->said, to be printed first.
 * What a plan holds stays valid until ft__launch_plan_free.
 */
#ifndef FT_LAUNCH_PLAN_H
#define FT_LAUNCH_PLAN_H

#include <stdint.h>

#include "launch/args.h"
#include "launch/backend.h"
#include "launch/env.h"
#include "launch/words.h"

/* ft-cluster's hosts' interface, which MPI is told to use. */
#define FT_LAUNCH_IFACE "eth0"

typedef struct ft__launch_plan {
  const char *here;  /* the directory of ft-cluster, ft-rsh, ft-nodelist */
  ft__words_t hosts; /* the job's hosts in rank order; none: this host */
  ft__words_t pool;  /* hostfile, Slurm: hosts that may replace lost ones */
  ft__words_t cluster_spares; /* the cluster's sN */
  ft__words_t runner; /* what starts the launcher (the cluster's head) */
  ft__words_t probe;  /* hostfile, Slurm: "PROBE HOST true" */
  const char *nodes;  /* NODES: as given, or the count the placement has */
  int64_t nnodes;     /* its value in bash's arithmetic */
  const char *spares; /* SPARES: as given, or the placement's default */
  const char *rsh;    /* the cluster's agent: HERE/ft-rsh */
  ft__words_t said;   /* lines said while planning, in order */
  ft__words_t own;    /* strings of the fields above */
} ft__launch_plan_t;

#define FT__LAUNCH_PLAN_INIT                                                   \
  {                                                                            \
    NULL, FT__WORDS_INIT, FT__WORDS_INIT, FT__WORDS_INIT, FT__WORDS_INIT,      \
        FT__WORDS_INIT, "", 0, "", "", FT__WORDS_INIT, FT__WORDS_INIT          \
  }

/* The placement of a (validated), its probe through be, the BTL warning
 * and the code's check.  Runs here/ft-cluster (hosts, ping) or
 * here/ft-nodelist with env as their environment; exports FT_CLUSTER or
 * FT_FAILURE_DOMAINS into env. */
int ft__launch_plan(ft__launch_plan_t *p, const ft__launch_args_t *a,
                    ft__env_t *env, const ft__launcher_t *be, const char *here,
                    ft__text_t *msg);
void ft__launch_plan_free(ft__launch_plan_t *p);

/* P+1 ranks a node (P trainers and the SMP), or 1 with --one-per-node. */
int64_t ft__launch_ranks_per_node(const ft__launch_args_t *a);

/* The launch of a's program on p's placement: job (its strings are p's and
 * a's), with the code of --ec, hostfile the file's path, cpus nproc. */
void ft__launch_plan_job(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                         const char *hostfile, int64_t cpus,
                         ft__launch_job_t *job);

/* The "# ..." lines of --dry-run before the command line: the hostfile
 * lines of hosts_text, the spares, the probe, an OMPI_MCA_btl that stands
 * for the cluster's BTLs. */
int ft__launch_dry_lines(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                         const ft__env_t *env, const char *hosts_text,
                         ft__text_t *out);

/* summary(): the lines a launch starts with, without "ft-launch: ", for
 * spares_left spares left (SPARES_LEFT as bash has it). */
int ft__launch_summary(const ft__launch_plan_t *p, const ft__launch_args_t *a,
                       const char *spares_left, ft__words_t *lines);

/* spares_left(): "spares: up to S of A B" (the pool's hosts not in the
 * job), or "" with no spare left or none free. */
int ft__launch_spares_text(const ft__launch_plan_t *p, const char *spares_left,
                           ft__text_t *out);

/* A count as bash's arithmetic reads it ($((N))): decimal, or octal after a
 * leading 0, wrapping at 64 bits.  -1 when a digit is not of its base
 * ("08"), which bash refuses ("value too great for base"). */
int ft__launch_arith(const char *digits, int64_t *value);

#endif
