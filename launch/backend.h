/*
 * Launcher backends: what ft-launch needs of the program that starts a
 * job's processes on its hosts (mpirun and its kin), behind one table of
 * functions, so that placement, probes and the state machine never spell
 * a launcher's option or message themselves.  A backend answers:
 *
 *   build      the command line of one launch of a node set, with the
 *              environment it needs and the hostfile it reads: the
 *              launcher's words, then the program's;
 *   daemon     the per-host daemon the launcher starts, by process name
 *              (what a teardown looks for among a launch's leftovers);
 *   lost       the hosts the launcher said it lost the daemon of, read
 *              from its messages as the output filter keeps them (a banner
 *              as one line, blanks squeezed: mpirun_filter's HIDDEN file);
 *   agent      how the launcher itself reaches a host (its remote shell):
 *              the default probe, "AGENT HOST true" telling a live host;
 *   probe_cmd  the command that probes one host with the probe's words;
 *   host_cmd   the command that runs a shell line on a host the way the
 *              probe reaches it (a spare's preparation, its removal).
 * All of them are pure: they read what they are given (the job, the
 * environment) and write what they return; the caller writes the
 * hostfile, starts and probes.
 *
 * ompi4 and ompi5 (ompi.c) are Open MPI 4.1's and 5's mpirun, the same
 * command line with each runtime's spellings: orted (ORTE) or prted
 * (PRRTE) started over the rsh/ssh launcher (ft-rsh on an ft-cluster, the
 * configured agent on a hostfile's hosts, Slurm's own plm in an allocation
 * for ompi4), the banners of a lost daemon ("ORTE has lost communication
 * with a remote daemon. ... Remote daemon: [[J,0],N] on node HOST ...";
 * PRRTE's "PRTE has lost ..." and plm ssh's "A daemon failed to report
 * back ... Remote host: HOST"), and the agent of plm_rsh_agent
 * (plm_ssh_agent) or "ssh : rsh".  mpich (mpich.c) is MPICH's hydra.
 *
 * The backend still to come, from its documentation:
 *   Slurm (srun as the launcher): build: srun -N N -n N*K
 *     --ntasks-per-node K -w h1,h2,... (no hostfile; --export=ALL passes
 *     the environment whole); daemon slurmstepd; lost: "srun: error: Node
 *     failure on LIST" (a Slurm node list, expanded as ft-nodelist does);
 *     agent: "srun -N1 -n1 --overlap -w", and host_cmd names a shell
 *     (srun runs words, not a line).
 * Each fits the same table: only the words differ.
 */
#ifndef FT_LAUNCH_BACKEND_H
#define FT_LAUNCH_BACKEND_H

#include <stdint.h>

#include "launch/env.h"
#include "launch/words.h"

/* One launch: where, what, how.  Counts are the values bash's arithmetic
 * gives (a leading 0 read as octal). */
typedef struct ft__launch_job {
  /* The node set in rank order; none: this host, `nodes` virtual nodes. */
  const char *const *hosts;
  int nhosts;
  int64_t nodes;
  int64_t ranks_per_node; /* P+1, or 1 (--one-per-node, ft-restore) */
  int64_t node_ranks;     /* P+1: FT_VIRTUAL_NODE_RANKS on this host */
  int slurm;              /* the hosts are a Slurm allocation's */
  const char *cluster;    /* the ft-cluster's name, or NULL */
  const char *rsh;        /* the cluster: the agent its hosts take (ft-rsh) */
  const char *iface;      /* the cluster: its hosts' interface */
  const char *hostfile;   /* with hosts: where the hostfile is written */
  const char *mpirun;     /* the launcher's program ("": the backend's) */
  int64_t cpus;           /* CPUs this process may run on (nproc) */
  /* ftrt's variables of the launch. */
  const char *job, *timeout;
  const char *ec_k, *ec_m;  /* the code of this launch (lowered after a
                               shrink); NULL: no code given */
  const char *const *extra; /* --mpirun-arg */
  int nextra;
  const char *const *program; /* PROGRAM and its arguments */
  int nprogram;
  /* ft-smp's path: each node runs one process of it, its SMP, then
   * ranks_per_node - 1 of PROGRAM (MPMD, one app context each, in the
   * ranks' order: node 0's SMP, node 0's trainers, node 1's SMP, ...).
   * NULL: ranks_per_node of PROGRAM a node. */
  const char *smp;
} ft__launch_job_t;

/* What build returns: argv to start (PROGRAM last) and the hostfile's text
 * for job->hostfile (empty: none). */
typedef struct ft__launch_cmd {
  ft__words_t argv;
  ft__text_t hostfile;
} ft__launch_cmd_t;

#define FT__LAUNCH_CMD_INIT                                                    \
  { FT__WORDS_INIT, FT__TEXT_INIT }

typedef struct ft__launcher {
  const char *name;    /* "ompi4" */
  const char *program; /* its program when none is named ("mpirun") */
  const char *daemon; /* the per-host daemon's process name ("orted") */
  int slurm; /* 1: tested in a Slurm allocation (others are refused there) */
  const char *btl; /* the BTLs it picks on the cluster (Open MPI), or NULL */
  /* its app contexts' own options (ft__launch_mpmd), NULL-name ended */
  const struct ft__launch_ctx_opt *ctx_opts;
  /* argv and hostfile of job into cmd (appended), and the launcher's own
   * variables into env (it also names there what the ranks get).  env holds
   * ftrt's already (ft__launch_job_env).  FT_OK, FT_ENOMEM. */
  int (*build)(const ft__launch_job_t *job, ft__env_t *env,
               ft__launch_cmd_t *cmd);
  /* The hosts the launcher lost the daemon of, in the order kept names
   * them (once each as named), appended to hosts.  kept: the messages,
   * one a line. */
  int (*lost)(const char *kept, ft__words_t *hosts);
  /* The launcher's remote shell, as words, replacing words: the default
   * probe.  Reads the job's --mpirun-arg and env. */
  int (*agent)(const ft__launch_job_t *job, const ft__env_t *env,
               ft__words_t *words);
  /* The command that probes host with the probe's words, appended. */
  int (*probe_cmd)(const char *const *probe, int nprobe, const char *host,
                   ft__words_t *argv);
  /* The command that runs the shell line `line` on host, appended: on the
   * cluster through its agent, else through the probe. */
  int (*host_cmd)(const ft__launch_job_t *job, const char *const *probe,
                  int nprobe, const char *host, const char *line,
                  ft__words_t *argv);
} ft__launcher_t;

/* Open MPI 4.1 and 5 (ompi.c), MPICH's hydra (mpich.c). */
extern const ft__launcher_t ft__launcher_ompi4;
extern const ft__launcher_t ft__launcher_ompi5;
extern const ft__launcher_t ft__launcher_mpich;

/* The backends' names, "ompi4, ompi5, mpich", for messages. */
extern const char ft__launcher_names[];

/* The backend named name, or NULL. */
const ft__launcher_t *ft__launcher_find(const char *name);

/* ftrt's variables of a launch, the same for every launcher, into env:
 * FT_EC_K and FT_EC_M (with a code), FT_JOB, FT_TIMEOUT, and
 * FT_VIRTUAL_NODE_RANKS for virtual nodes (no hosts, more than one node).
 * FT_OK, FT_ENOMEM. */
int ft__launch_job_env(const ft__launch_job_t *job, ft__env_t *env);

/* mca_value: the last value the --mpirun-arg words give MCA parameter name
 * (--mca NAME V, or mpirun's other spellings: --gmca for every app
 * context, --prtemca for Open MPI 5's runtime, one dash or two): 1 and
 * *value (a word of extra), 0 when none does. */
int ft__launch_mca_value(const char *const *extra, int nextra, const char *name,
                         const char **value);
int ft__launch_mca_given(const char *const *extra, int nextra,
                         const char *name);

/* Of an agent list "A : B" (Open MPI's and PRRTE's form), the first entry
 * whose command is found on env's PATH, else the first entry, as words
 * replacing words ("ssh" when the list is empty). */
int ft__launcher_pick_agent(const char *list, const ft__env_t *env,
                            ft__words_t *words);

/* An app context's own option of an MPI launcher and how many words
 * follow it ("-x", 1).  A table of them ends with a NULL name. */
typedef struct ft__launch_ctx_opt {
  const char *name; /* one dash ("-wdir"); "--wdir" is taken too */
  int nargs;
} ft__launch_ctx_opt_t;

/* The index in extra of an app context's own option of opts that lacks
 * the words it takes (the last --mpirun-arg words), or -1 when none does;
 * *nargs set to how many it takes. */
int ft__launch_ctx_opt_short(const char *const *extra, int nextra,
                             const ft__launch_ctx_opt_t *opts, int *nargs);

/* The MPMD launch (job->smp) appended to w: the --mpirun-arg words that
 * are no app context's own option of the table opts, then one ft-smp and
 * PROGRAM on each node, in the ranks' order, parted by ":":
 *   COUNT 1 [HOST_OPT HOST] LOCAL... SMP : COUNT K-1 [HOST_OPT HOST]
 *   LOCAL... PROGRAM... : ...   (K: ranks_per_node)
 * HOST_OPT HOST with hosts; none on virtual nodes (their ranks are
 * consecutive).  LOCAL: the backend's words for each app context (Open
 * MPI's -x), then the app context's own --mpirun-arg options (an option
 * with its nargs words, or written NAME=VALUE), in the order given: before
 * the first context they would apply to that context alone (Open MPI 4's
 * -x and --wdir, hydra's -env and -wdir), so each context is given them.
 * local is freed.  FT_OK, FT_ENOMEM. */
int ft__launch_mpmd(const ft__launch_job_t *job,
                    const ft__launch_ctx_opt_t *opts, const char *count,
                    const char *host_opt, ft__words_t *local,
                    ft__words_t *w);

/* 1 when the probe's words run Slurm's srun (each try a job step). */
int ft__launcher_is_srun(const char *const *words, int n);

/* probe_cmd and host_cmd as every backend has them: "PROBE... HOST true";
 * the cluster's agent (ft-rsh) or the probe's words, HOST, then the line
 * (srun, which runs words, gets "sh -c" before it). */
int ft__launcher_probe_cmd(const char *const *probe, int nprobe,
                           const char *host, ft__words_t *argv);
int ft__launcher_host_cmd(const ft__launch_job_t *job,
                          const char *const *probe, int nprobe,
                          const char *host, const char *line,
                          ft__words_t *argv);

#endif
