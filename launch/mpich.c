/*
 * The MPICH backend (launch/backend.h): hydra's mpiexec, its proxy
 * hydra_pmi_proxy as the daemon, the hosts its messages say it lost, and
 * its launcher's remote shell.
 *
 * The command line, in order:
 *   mpiexec
 *     [-launcher rsh -launcher-exec FT-RSH -iface IF]   on the cluster
 *     [-launcher ssh]                   a hostfile's hosts, unless the user
 *                                       named a launcher
 *     [-f F]                            with hosts: F's lines "HOST:K", each
 *                                       host once, in rank order
 *     -n N*K  --mpirun-arg...  PROGRAM...
 * or, with ft-smp (job->smp), after the --mpirun-arg words, two contexts a
 * node, its SMP's then its trainers':
 *     -n 1 [-hosts H] LOCAL... FT-SMP : -n K-1 [-hosts H] LOCAL... PROGRAM : ...
 * where LOCAL are the --mpirun-arg words that are an executable's own
 * options (-env, -envlist, -envall, -envnone, -wdir: ctx_opts), taken out
 * of the words before the contexts.
 * Hydra passes the whole environment to the ranks (its -genvall, the
 * default): FTRT_LAUNCH_ID and the FT_ variables with it.  On the cluster
 * the ranks talk TCP through libfabric (MPIR_CVAR_CH4_NETMOD=ofi,
 * FI_PROVIDER=tcp, FI_TCP_IFACE=IF) unless the environment chose: MPICH's
 * UCX netmod over UCX's tcp transport leaves ftrt's heartbeats unmatched
 * and hangs in MPI_Finalize (UCX 1.13; openucx/ucx issue 8738), so an
 * MPICH built with UCX only (Debian 12's 4.0) cannot run the cluster's
 * tests; PyPI's mpich 5.0 has both netmods.  A block of K slots a host puts
 * ranks r*K .. r*K+K-1 on the r-th host: rank order is the hostfile's.
 *
 * What hydra says of a lost host: its proxy there goes with the host, and
 * its remote shell ends; hydra then writes "[mpiexec@HEAD] ... " lines that
 * name no host, so lost names none and the probe finds the lost hosts
 * (ft-launch asks every host then).  A rank that dies is reported as
 * "BAD TERMINATION ... RUNNING AT HOST ...", which is a process, not a
 * host: not taken as a loss either.
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

/* The last value --mpirun-arg gives hydra's option opt ("-launcher"), or
 * NULL. */
static const char *option(const ft__launch_job_t *j, const char *opt) {
  const char *v = NULL;
  for (int i = 0; i + 1 < j->nextra; i++)
    if (strcmp(j->extra[i], opt) == 0 ||
        (opt[0] == '-' && j->extra[i][0] == '-' && j->extra[i][1] == '-' &&
         strcmp(j->extra[i] + 1, opt) == 0))
      v = j->extra[i + 1];
  return v;
}

/* An executable's own options of hydra: before the first, hydra gives
 * them to the first alone (its -genv, -gwdir... are for every one). */
static const ft__launch_ctx_opt_t ctx_opts[] = {
    {"-env", 2},     {"-envlist", 1}, {"-envall", 0},
    {"-envnone", 0}, {"-wdir", 1},    {NULL, 0}};

static int mpich_build(const ft__launch_job_t *j, ft__env_t *env,
                       ft__launch_cmd_t *c) {
  ft__words_t *w = &c->argv;
  ADD(w, j->mpirun && *j->mpirun ? j->mpirun : "mpiexec");
  if (j->cluster) {
    ADD(w, "-launcher");
    ADD(w, "rsh");
    ADD(w, "-launcher-exec");
    ADD(w, j->rsh);
    ADD(w, "-iface");
    ADD(w, j->iface);
    /* TCP through libfabric: the ch4 netmod ofi, its tcp provider on the
     * cluster's interface, unless the environment chose */
    static const char *const net[][2] = {{"MPIR_CVAR_CH4_NETMOD", "ofi"},
                                         {"FI_PROVIDER", "tcp"}};
    for (size_t i = 0; i < sizeof(net) / sizeof(*net); i++)
      if (!*ft__env_str(env, net[i][0]) &&
          ft__env_set(env, net[i][0], net[i][1]) != FT_OK)
        return FT_ENOMEM;
    if (!*ft__env_str(env, "FI_TCP_IFACE") &&
        ft__env_set(env, "FI_TCP_IFACE", j->iface) != FT_OK)
      return FT_ENOMEM;
  } else if (j->nhosts > 0 && !option(j, "-launcher") &&
             !*ft__env_str(env, "HYDRA_LAUNCHER")) {
    ADD(w, "-launcher");
    ADD(w, "ssh");
  }
  if (j->nhosts > 0) {
    for (int i = 0; i < j->nhosts; i++)
      if (ft__text_addf(&c->hostfile, "%s:%" PRId64 "\n", j->hosts[i],
                        j->ranks_per_node) != FT_OK)
        return FT_ENOMEM;
    ADD(w, "-f");
    ADD(w, j->hostfile);
  }
  if (j->smp) { /* -n 1 [-hosts H] SMP : -n K-1 [-hosts H] PROGRAM : ... */
    ft__words_t local = FT__WORDS_INIT;
    return ft__launch_mpmd(j, ctx_opts, "-n", "-hosts", &local, w);
  }
  ADD(w, "-n");
  if (ft__words_addf(w, "%" PRId64,
                     (int64_t)((uint64_t)j->nodes *
                               (uint64_t)j->ranks_per_node)) != FT_OK)
    return FT_ENOMEM;
  if (ft__words_addv(w, j->extra, j->nextra) != FT_OK ||
      ft__words_addv(w, j->program, j->nprogram) != FT_OK)
    return FT_ENOMEM;
  return FT_OK;
}

static int mpich_lost(const char *kept, ft__words_t *hosts) {
  (void)kept;
  (void)hosts;
  return FT_OK;
}

/* The remote shell: -launcher-exec among --mpirun-arg, else
 * HYDRA_LAUNCHER_EXEC, each one program as hydra runs it (no words, no
 * list), else the launcher's own command (-launcher or HYDRA_LAUNCHER: ssh
 * or rsh), else ssh, hydra's default. */
static int mpich_agent(const ft__launch_job_t *j, const ft__env_t *env,
                       ft__words_t *words) {
  const char *agent = option(j, "-launcher-exec");
  if (!agent || !*agent)
    agent = ft__env_str(env, "HYDRA_LAUNCHER_EXEC");
  if (*agent) {
    ft__words_free(words);
    return ft__words_add(words, agent);
  }
  const char *l = option(j, "-launcher");
  if (!l)
    l = ft__env_str(env, "HYDRA_LAUNCHER");
  return ft__launcher_pick_agent(l && strcmp(l, "rsh") == 0 ? "rsh" : "ssh",
                                 env, words);
}

const ft__launcher_t ft__launcher_mpich = {
    .name = "mpich",
    .program = "mpiexec",
    .daemon = "hydra_pmi_proxy",
    .ctx_opts = ctx_opts,
    .build = mpich_build,
    .lost = mpich_lost,
    .agent = mpich_agent,
    .probe_cmd = ft__launcher_probe_cmd,
    .host_cmd = ft__launcher_host_cmd,
};
