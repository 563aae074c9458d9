/*
 * The Open MPI 4.1 backend (launch/backend.h): the mpirun command line,
 * orted as the daemon, the hosts named in the ORTE banner of a lost daemon
 * (help-errmgr-base.txt, node-died), and rsh_agent's choice of the remote
 * shell.
 *
 * The command line, in order:
 *   mpirun --oversubscribe --bind-to none
 *     [--mca plm rsh]                 hosts outside Slurm, unless
 *                                     --mpirun-arg names plm
 *     [--mca plm_slurm_args --overlap]  in Slurm, unless the user set it
 *     [cluster: --mca plm_rsh_agent FT-RSH --mca plm_rsh_no_tree_spawn 1
 *      --mca btl_tcp_if_include IF --mca oob_tcp_if_include IF
 *      [--mca btl tcp,vader,self] [--mca pml ob1]]
 *                                     btl and pml unless the user set them
 *     [--hostfile F --map-by ppr:K:node]               with hosts
 *     [--hostfile F --mca rmaps seq]  in Slurm: F names each host K times
 *     -np N*K -x FTRT_LAUNCH_ID
 *     [--mca mpi_yield_when_idle 1]   cluster, more ranks than CPUs, unless
 *                                     the user set it
 *     -x FT_... (every FT_ variable, sorted)  --mpirun-arg...  PROGRAM...
 * with OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM and
 * OMPI_MCA_rmaps_base_oversubscribe set to 1 in the environment.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ftrt.h"
#include "launch/backend.h"

#define ADD(w, s)                                                              \
  do {                                                                         \
    if (ft__words_add((w), (s)) != FT_OK)                                      \
      return FT_ENOMEM;                                                        \
  } while (0)

static int given(const ft__launch_job_t *j, const char *name) {
  return ft__launch_mca_given(j->extra, j->nextra, name);
}

static int mca(ft__words_t *w, const char *name, const char *value) {
  ADD(w, "--mca");
  ADD(w, name);
  ADD(w, value);
  return FT_OK;
}

/* The launcher and the cluster's transport: the words before the hosts. */
static int head_words(const ft__launch_job_t *j, const ft__env_t *env,
                      ft__words_t *w) {
  ADD(w, j->mpirun && *j->mpirun ? j->mpirun : "mpirun");
  ADD(w, "--oversubscribe");
  ADD(w, "--bind-to");
  ADD(w, "none");
  int rc = FT_OK;
  if (j->nhosts > 0 && !j->slurm && !given(j, "plm"))
    rc = mca(w, "plm", "rsh");
  /* In an allocation mpirun starts its daemons as a job step (srun).  The
   * step of an attempt that lost a host holds its CPUs on the survivors
   * until Slurm has marked that host DOWN, so the next attempt's step would
   * wait ("Requested nodes are busy") for as long: --overlap lets it share
   * them at once. */
  if (rc == FT_OK && j->slurm && !given(j, "plm_slurm_args") &&
      !*ft__env_str(env, "OMPI_MCA_plm_slurm_args"))
    rc = mca(w, "plm_slurm_args", "--overlap");
  if (!j->cluster || rc != FT_OK)
    return rc;
  if (mca(w, "plm_rsh_agent", j->rsh) != FT_OK ||
      mca(w, "plm_rsh_no_tree_spawn", "1") != FT_OK ||
      mca(w, "btl_tcp_if_include", j->iface) != FT_OK ||
      mca(w, "oob_tcp_if_include", j->iface) != FT_OK)
    return FT_ENOMEM;
  if (!given(j, "btl") && !*ft__env_str(env, "OMPI_MCA_btl"))
    rc = mca(w, "btl", "tcp,vader,self");
  if (rc == FT_OK && !given(j, "pml") && !*ft__env_str(env, "OMPI_MCA_pml"))
    rc = mca(w, "pml", "ob1");
  return rc;
}

static int64_t ranks(const ft__launch_job_t *j) {
  return (int64_t)((uint64_t)j->nodes * (uint64_t)j->ranks_per_node);
}

/* In an allocation mpirun orders the nodes as Slurm lists them, whatever
 * the hostfile's order, and a relaunch with a spare in a lost node's place
 * must keep the node order of the snapshot: there the sequential mapper
 * places rank r on the hostfile's line r, one line a rank. */
static int slurm_hosts_words(const ft__launch_job_t *j, ft__launch_cmd_t *c) {
  for (int i = 0; i < j->nhosts; i++)
    for (int64_t r = 0; r < j->ranks_per_node; r++)
      if (ft__text_addf(&c->hostfile, "%s\n", j->hosts[i]) != FT_OK)
        return FT_ENOMEM;
  ADD(&c->argv, "--hostfile");
  ADD(&c->argv, j->hostfile);
  return mca(&c->argv, "rmaps", "seq");
}

static int hosts_words(const ft__launch_job_t *j, ft__launch_cmd_t *c) {
  if (j->slurm)
    return slurm_hosts_words(j, c);
  for (int i = 0; i < j->nhosts; i++)
    if (ft__text_addf(&c->hostfile, "%s slots=%" PRId64 "\n", j->hosts[i],
                      j->ranks_per_node) != FT_OK)
      return FT_ENOMEM;
  ADD(&c->argv, "--hostfile");
  ADD(&c->argv, j->hostfile);
  ADD(&c->argv, "--map-by");
  return ft__words_addf(&c->argv, "ppr:%" PRId64 ":node", j->ranks_per_node);
}

/* Every host of ft-cluster runs on this machine's CPUs, but each tells
 * mpirun it has all of them: with more ranks than CPUs every rank would
 * spin while it waits in MPI unless told to yield. */
static int yield(const ft__launch_job_t *j, const ft__env_t *env) {
  return j->cluster && ranks(j) > j->cpus && !given(j, "mpi_yield_when_idle") &&
         !*ft__env_str(env, "OMPI_MCA_mpi_yield_when_idle");
}

static int ompi4_build(const ft__launch_job_t *j, ft__env_t *env,
                       ft__launch_cmd_t *c) {
  ft__words_t *w = &c->argv;
  if (head_words(j, env, w) != FT_OK ||
      ft__env_set(env, "OMPI_ALLOW_RUN_AS_ROOT", "1") != FT_OK ||
      ft__env_set(env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1") != FT_OK ||
      ft__env_set(env, "OMPI_MCA_rmaps_base_oversubscribe", "1") != FT_OK)
    return FT_ENOMEM;
  if (j->nhosts > 0 && hosts_words(j, c) != FT_OK)
    return FT_ENOMEM;
  ADD(w, "-np");
  if (ft__words_addf(w, "%" PRId64, ranks(j)) != FT_OK)
    return FT_ENOMEM;
  ADD(w, "-x");
  ADD(w, "FTRT_LAUNCH_ID");
  if (yield(j, env) && mca(w, "mpi_yield_when_idle", "1") != FT_OK)
    return FT_ENOMEM;
  ft__words_t names = FT__WORDS_INIT;
  int rc = ft__env_names(env, "FT_", &names);
  for (int i = 0; rc == FT_OK && i < names.n; i++)
    if (ft__words_add(w, "-x") != FT_OK ||
        ft__words_add(w, names.v[i]) != FT_OK)
      rc = FT_ENOMEM;
  ft__words_free(&names);
  if (rc == FT_OK)
    rc = ft__words_addv(w, j->extra, j->nextra);
  if (rc == FT_OK)
    rc = ft__words_addv(w, j->program, j->nprogram);
  return rc;
}

/* ---- lost daemons ---- */

static const char BANNER[] = "ORTE has lost communication with a remote "
                             "daemon.";
static const char REMOTE[] = " Remote daemon: [[";

/* [0-9]* then the literal lit at *p: 1 and *p past them. */
static int digits_then(const char **p, const char *lit) {
  const char *s = *p + strspn(*p, "0123456789");
  size_t n = strlen(lit);
  if (strncmp(s, lit, n) != 0)
    return 0;
  *p = s + n;
  return 1;
}

/* At s: " Remote daemon: [[J,V],N] on node HOST " -- HOST's start and
 * length, or NULL. */
static const char *remote_daemon(const char *s, size_t *len) {
  if (strncmp(s, REMOTE, sizeof(REMOTE) - 1) != 0)
    return NULL;
  const char *p = s + sizeof(REMOTE) - 1;
  if (!digits_then(&p, ",") || !digits_then(&p, "],") ||
      !digits_then(&p, "] on node "))
    return NULL;
  *len = strcspn(p, " \n");
  return p[*len] == ' ' ? p : NULL;
}

/* The host of one line: the last " Remote daemon: ..." after the banner's
 * first sentence (sed's greedy .* take the last), or NULL. */
static const char *line_host(const char *line, size_t end, size_t *len) {
  const char *b = strstr(line, BANNER);
  if (!b || (size_t)(b - line) >= end)
    return NULL;
  const char *from = b + sizeof(BANNER) - 1, *host = NULL;
  for (const char *p = from; p < line + end; p++) {
    size_t l;
    const char *h = remote_daemon(p, &l);
    if (h && h + l < line + end) {
      host = h;
      *len = l;
    }
  }
  return host;
}

static int ompi4_lost(const char *kept, ft__words_t *hosts) {
  while (*kept) {
    size_t end = strcspn(kept, "\n"), len = 0;
    const char *h = line_host(kept, end, &len);
    if (h && len) {
      ft__words_t one = FT__WORDS_INIT;
      if (ft__words_addn(&one, h, len) != FT_OK)
        return FT_ENOMEM;
      int rc = ft__words_find(hosts, one.v[0]) < 0
                   ? ft__words_add(hosts, one.v[0])
                   : FT_OK;
      ft__words_free(&one);
      if (rc != FT_OK)
        return rc;
    }
    kept += end + (kept[end] == '\n');
  }
  return FT_OK;
}

/* ---- reaching a host ---- */

/* rsh_agent: --mca plm_rsh_agent among --mpirun-arg (the last), else
 * OMPI_MCA_plm_rsh_agent, else Open MPI's default "ssh : rsh"; of its
 * list, the first found on PATH, as Open MPI does. */
static int ompi4_agent(const ft__launch_job_t *j, const ft__env_t *env,
                       ft__words_t *words) {
  const char *agent = ft__env_str(env, "OMPI_MCA_plm_rsh_agent");
  if (!*agent)
    agent = "ssh : rsh";
  for (int i = 0; i + 2 < j->nextra; i++)
    if ((strcmp(j->extra[i], "--mca") == 0 ||
         strcmp(j->extra[i], "-mca") == 0) &&
        strcmp(j->extra[i + 1], "plm_rsh_agent") == 0)
      agent = j->extra[i + 2];
  return ft__launcher_pick_agent(agent, env, words);
}

const ft__launcher_t ft__launcher_ompi4 = {
    .name = "ompi4",
    .program = "mpirun",
    .daemon = "orted",
    .build = ompi4_build,
    .lost = ompi4_lost,
    .agent = ompi4_agent,
    .probe_cmd = ft__launcher_probe_cmd,
    .host_cmd = ft__launcher_host_cmd,
};
