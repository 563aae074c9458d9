/*
 * The Open MPI backends (launch/backend.h): mpirun's command line, its
 * per-host daemon, the hosts named in its banner of a lost daemon, and its
 * agent's choice of the remote shell.  Open MPI 4.1 (ORTE: orted) and
 * Open MPI 5 (PRRTE: prted) take the same command line but for the
 * runtime's parameters, which each spells its own way (the table SPELL):
 *
 *                     ompi4 (ORTE)              ompi5 (PRRTE)
 *   runtime option    --mca NAME V              --prtemca NAME V
 *   remote launcher   plm rsh                   plm ssh
 *   its agent         plm_rsh_agent             plm_ssh_agent
 *   one hop           plm_rsh_no_tree_spawn     plm_ssh_no_tree_spawn
 *   shared memory     btl vader                 btl sm
 *   agent variable    OMPI_MCA_plm_rsh_agent    PRTE_MCA_plm_ssh_agent
 *   lost daemon       "ORTE has lost ..."       "PRTE has lost ...", and
 *                                               plm ssh's "A daemon failed
 *                                               to report back ..."
 *
 * The command line, in order (RTE: the runtime option; P: plm's prefix):
 *   mpirun --oversubscribe --bind-to none
 *     [RTE plm rsh|ssh]               hosts outside Slurm, unless
 *                                     --mpirun-arg names plm
 *     [--mca plm_slurm_args --overlap]  ompi4 in Slurm, unless the user
 *                                     set it (ompi5 is refused there)
 *     [--mca odls_base_sigkill_timeout 0]  ompi4, unless the user set it
 *                                     (its daemons' SIGTERM grace, 1 s)
 *     [cluster: RTE P_agent FT-RSH RTE P_no_tree_spawn 1
 *      --mca btl_tcp_if_include IF RTE oob_tcp_if_include IF
 *      [--mca btl tcp,vader|sm,self] [--mca pml ob1]]
 *                                     btl and pml unless the user set them
 *     [--hostfile F --map-by ppr:K:node]               with hosts
 *     [--hostfile F --mca rmaps seq]  in Slurm: F names each host K times
 *     -np N*K -x FTRT_LAUNCH_ID
 *     [--mca mpi_yield_when_idle 1]   cluster, more ranks than CPUs, unless
 *                                     the user set it
 *     -x FT_... (every FT_ variable, sorted)  --mpirun-arg...  PROGRAM...
 * with OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM (both
 * runtimes read them) and, for ORTE, OMPI_MCA_rmaps_base_oversubscribe
 * set to 1 in the environment.
 * With ft-smp (job->smp) the hostfile says "HOST slots=K" with no --map-by
 * (or rmaps seq), the --mpirun-arg words come before the first app context
 * but for an app context's own options (-x, --wdir, --path, ...: ctx_opts),
 * and each node gets two contexts, its SMP's and its trainers':
 *     -np 1 [--host H] -x ... FT-SMP : -np K-1 [--host H] -x ... PROGRAM : ...
 * the -x words and those options repeated in each (Open MPI 4 gives the
 * first context alone what comes before it), --host only with hosts.
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

/* How one Open MPI spells what differs (the table above). */
typedef struct spell {
  const char *rte;       /* the runtime's option: "--mca", "--prtemca" */
  const char *plm;       /* its remote launcher: "rsh", "ssh" */
  const char *agent;     /* "plm_rsh_agent" */
  const char *no_tree;   /* "plm_rsh_no_tree_spawn" */
  const char *btl;       /* "tcp,vader,self" */
  const char *agent_env; /* "OMPI_MCA_plm_rsh_agent" */
  int orte;              /* ORTE: plm_slurm_args, the oversubscribe variable */
} spell_t;

#define ORTE_BTL "tcp,vader,self"
#define PRRTE_BTL "tcp,sm,self"

static const spell_t ORTE = {"--mca",         "rsh",
                             "plm_rsh_agent", "plm_rsh_no_tree_spawn",
                             ORTE_BTL,        "OMPI_MCA_plm_rsh_agent",
                             1};
static const spell_t PRRTE = {"--prtemca",    "ssh",
                              "plm_ssh_agent", "plm_ssh_no_tree_spawn",
                              PRRTE_BTL,       "PRTE_MCA_plm_ssh_agent",
                              0};

static int given(const ft__launch_job_t *j, const char *name) {
  return ft__launch_mca_given(j->extra, j->nextra, name);
}

static int param(ft__words_t *w, const char *opt, const char *name,
                 const char *value) {
  ADD(w, opt);
  ADD(w, name);
  ADD(w, value);
  return FT_OK;
}

static int mca(ft__words_t *w, const char *name, const char *value) {
  return param(w, "--mca", name, value);
}

#define SIGKILL_TIMEOUT "odls_base_sigkill_timeout"

/* The user set the daemons' grace before SIGKILL: on the command line or
 * in the environment (not in a parameter file: the command line's 0 wins
 * over one). */
static int grace_given(const ft__launch_job_t *j, const ft__env_t *env) {
  return given(j, SIGKILL_TIMEOUT) ||
         *ft__env_str(env, "OMPI_MCA_" SIGKILL_TIMEOUT);
}

/* The launcher and the cluster's transport: the words before the hosts. */
static int head_words(const spell_t *sp, const ft__launch_job_t *j,
                      const ft__env_t *env, ft__words_t *w) {
  ADD(w, j->mpirun && *j->mpirun ? j->mpirun : "mpirun");
  ADD(w, "--oversubscribe");
  ADD(w, "--bind-to");
  ADD(w, "none");
  int rc = FT_OK;
  if (j->nhosts > 0 && !j->slurm && !given(j, "plm"))
    rc = param(w, sp->rte, "plm", sp->plm);
  /* In an allocation mpirun starts its daemons as a job step (srun).  The
   * step of an attempt that lost a host holds its CPUs on the survivors
   * until Slurm has marked that host DOWN, so the next attempt's step would
   * wait ("Requested nodes are busy") for as long: --overlap lets it share
   * them at once. */
  if (rc == FT_OK && sp->orte && j->slurm && !given(j, "plm_slurm_args") &&
      !*ft__env_str(env, "OMPI_MCA_plm_slurm_args"))
    rc = mca(w, "plm_slurm_args", "--overlap");
  /* A job that ends early (a host lost, a rank failed, a signal) is ended
   * by each ORTE daemon: SIGCONT, then odls_base_sigkill_timeout seconds
   * later (1 by default) SIGTERM, as long again SIGKILL; mpirun ends once
   * the ranks are gone, a second after the loss, every recovery.  No
   * process of ftrt keeps anything a SIGTERM would save (the state is in
   * the SMPs' stores), so the three signals go at once, unless the user
   * asks for that grace (a program of theirs that saves something on
   * SIGTERM).  PRRTE (Open MPI 5) has no such parameter: it waits 0.25 s
   * between its signals. */
  if (rc == FT_OK && sp->orte && !grace_given(j, env))
    rc = mca(w, SIGKILL_TIMEOUT, "0");
  if (!j->cluster || rc != FT_OK)
    return rc;
  if (param(w, sp->rte, sp->agent, j->rsh) != FT_OK ||
      param(w, sp->rte, sp->no_tree, "1") != FT_OK ||
      mca(w, "btl_tcp_if_include", j->iface) != FT_OK ||
      param(w, sp->rte, "oob_tcp_if_include", j->iface) != FT_OK)
    return FT_ENOMEM;
  if (!given(j, "btl") && !*ft__env_str(env, "OMPI_MCA_btl"))
    rc = mca(w, "btl", sp->btl);
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

/* With ft-smp (MPMD) each app context names its host (--host): the
 * hostfile gives the slots, and the order is the app contexts', in Slurm
 * too. */
static int hosts_words(const ft__launch_job_t *j, ft__launch_cmd_t *c) {
  if (j->slurm && !j->smp)
    return slurm_hosts_words(j, c);
  for (int i = 0; i < j->nhosts; i++)
    if (ft__text_addf(&c->hostfile, "%s slots=%" PRId64 "\n", j->hosts[i],
                      j->ranks_per_node) != FT_OK)
      return FT_ENOMEM;
  ADD(&c->argv, "--hostfile");
  ADD(&c->argv, j->hostfile);
  if (j->smp)
    return FT_OK;
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

/* -x FTRT_LAUNCH_ID [--mca mpi_yield_when_idle 1] -x FT_... (sorted);
 * the MCA parameter only with_yield. */
static int exports(const ft__launch_job_t *j, const ft__env_t *env,
                   int with_yield, ft__words_t *w) {
  ADD(w, "-x");
  ADD(w, "FTRT_LAUNCH_ID");
  if (with_yield && yield(j, env) &&
      mca(w, "mpi_yield_when_idle", "1") != FT_OK)
    return FT_ENOMEM;
  ft__words_t names = FT__WORDS_INIT;
  int rc = ft__env_names(env, "FT_", &names);
  for (int i = 0; rc == FT_OK && i < names.n; i++)
    if (ft__words_add(w, "-x") != FT_OK ||
        ft__words_add(w, names.v[i]) != FT_OK)
      rc = FT_ENOMEM;
  ft__words_free(&names);
  return rc;
}

/* An app context's own options of mpirun: before the first context, Open
 * MPI 4 gives them to that context alone. */
static const ft__launch_ctx_opt_t ctx_opts[] = {
    {"-x", 1},          {"-wdir", 1},           {"-wd", 1},
    {"-path", 1},       {"-preload-files", 1},  {"-preload-binary", 0},
    {"-set-cwd-to-session-dir", 0}, {NULL, 0}};

/* ft-smp beside PROGRAM: [--mca mpi_yield_when_idle 1], the --mpirun-arg
 * words but an app context's own options, then the app contexts, each
 * with the -x words and those options. */
static int mpmd(const ft__launch_job_t *j, const ft__env_t *env,
                ft__words_t *w) {
  if (yield(j, env) && mca(w, "mpi_yield_when_idle", "1") != FT_OK)
    return FT_ENOMEM;
  ft__words_t local = FT__WORDS_INIT;
  int rc = exports(j, env, 0, &local);
  if (rc != FT_OK) {
    ft__words_free(&local);
    return rc;
  }
  return ft__launch_mpmd(j, ctx_opts, "-np", "--host", &local, w);
}

static int build(const spell_t *sp, const ft__launch_job_t *j, ft__env_t *env,
                 ft__launch_cmd_t *c) {
  ft__words_t *w = &c->argv;
  if (head_words(sp, j, env, w) != FT_OK ||
      ft__env_set(env, "OMPI_ALLOW_RUN_AS_ROOT", "1") != FT_OK ||
      ft__env_set(env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1") != FT_OK ||
      (sp->orte &&
       ft__env_set(env, "OMPI_MCA_rmaps_base_oversubscribe", "1") != FT_OK))
    return FT_ENOMEM;
  if (j->nhosts > 0 && hosts_words(j, c) != FT_OK)
    return FT_ENOMEM;
  if (j->smp)
    return mpmd(j, env, w);
  ADD(w, "-np");
  if (ft__words_addf(w, "%" PRId64, ranks(j)) != FT_OK)
    return FT_ENOMEM;
  int rc = exports(j, env, 1, w);
  if (rc == FT_OK)
    rc = ft__words_addv(w, j->extra, j->nextra);
  if (rc == FT_OK)
    rc = ft__words_addv(w, j->program, j->nprogram);
  return rc;
}

/* ---- lost daemons ---- */

/* A message of a lost daemon, as the filter keeps it (one line): its first
 * sentence, then the words that come before the host's name. */
typedef struct lost_msg {
  const char *says;  /* the first sentence */
  const char *field; /* " Remote daemon: " (NAME on node HOST) or
                        " Remote host: " (HOST) */
  int prrte;         /* NAME is PRRTE's [NSPACE,R], else ORTE's [[J,V],N] */
} lost_msg_t;

/* help-errmgr-base.txt's node-died: ORTE's, PRRTE's; PRRTE's plm ssh when
 * the remote shell to a daemon ends (the host gone), after it reported. */
static const lost_msg_t ORTE_LOST[] = {
    {"ORTE has lost communication with a remote daemon.", " Remote daemon: [[",
     0},
    {NULL, NULL, 0}};
static const lost_msg_t PRRTE_LOST[] = {
    {"PRTE has lost communication with a remote daemon.", " Remote daemon: [",
     1},
    {"A daemon failed to report back after being spawned.", " Remote host: ",
     1},
    {NULL, NULL, 0}};

/* [0-9]* then the literal lit at *p: 1 and *p past them. */
static int digits_then(const char **p, const char *lit) {
  const char *s = *p + strspn(*p, "0123456789");
  size_t n = strlen(lit);
  if (strncmp(s, lit, n) != 0)
    return 0;
  *p = s + n;
  return 1;
}

/* At p, past the field: the daemon's name and " on node ", or (" Remote
 * host: ") nothing; 1 and *p at the host. */
static int daemon_name(const lost_msg_t *m, const char **p) {
  if (m->field[strlen(m->field) - 1] != '[')
    return 1;
  if (!m->prrte) /* J,V],N] */
    return digits_then(p, ",") && digits_then(p, "],") &&
           digits_then(p, "] on node ");
  /* NSPACE,R]: no blank, no bracket in NSPACE */
  const char *s = *p + strcspn(*p, " []\n");
  const char *comma = memchr(*p, ',', (size_t)(s - *p));
  if (!comma || s == *p)
    return 0;
  const char *r = comma + 1 + strspn(comma + 1, "0123456789");
  while ((comma = memchr(r, ',', (size_t)(s - r))) != NULL)
    r = comma + 1 + strspn(comma + 1, "0123456789");
  if (r != s)
    return 0;
  *p = s;
  return digits_then(p, "] on node ");
}

/* At s: the field, the daemon, HOST then a blank -- HOST's start and
 * length, or NULL. */
static const char *field_host(const lost_msg_t *m, const char *s, size_t *len) {
  size_t n = strlen(m->field);
  if (strncmp(s, m->field, n) != 0)
    return NULL;
  const char *p = s + n;
  if (!daemon_name(m, &p))
    return NULL;
  *len = strcspn(p, " \n");
  /* ORTE's host has a blank after it (sed's pattern); PRRTE's may end the
   * message (one never closed is kept up to its last line) */
  return p[*len] == ' ' || (m->prrte && *len) ? p : NULL;
}

/* The host of one line: the last field after the message's first sentence
 * (sed's greedy .* take the last), or NULL. */
static const char *line_host(const lost_msg_t *msgs, const char *line,
                             size_t end, size_t *len) {
  for (const lost_msg_t *m = msgs; m->says; m++) {
    const char *b = memmem(line, end, m->says, strlen(m->says));
    if (!b)
      continue;
    const char *from = b + strlen(m->says), *host = NULL;
    for (const char *p = from; p < line + end; p++) {
      size_t l;
      const char *h = field_host(m, p, &l);
      if (h && h + l <= line + end) {
        host = h;
        *len = l;
      }
    }
    if (host)
      return host;
  }
  return NULL;
}

static int lost(const lost_msg_t *msgs, const char *kept, ft__words_t *hosts) {
  while (*kept) {
    size_t end = strcspn(kept, "\n"), len = 0;
    const char *h = line_host(msgs, kept, end, &len);
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

/* The agent: --RTE P_agent among --mpirun-arg (the last, by any of
 * mpirun's MCA spellings), else its variable, else the runtimes' default
 * "ssh : rsh"; of its list, the first found on PATH, as Open MPI does. */
static int agent(const spell_t *sp, const ft__launch_job_t *j,
                 const ft__env_t *env, ft__words_t *words) {
  const char *list = ft__env_str(env, sp->agent_env);
  if (!*list)
    list = "ssh : rsh";
  ft__launch_mca_value(j->extra, j->nextra, sp->agent, &list);
  return ft__launcher_pick_agent(list, env, words);
}

static int ompi4_build(const ft__launch_job_t *j, ft__env_t *env,
                       ft__launch_cmd_t *c) {
  return build(&ORTE, j, env, c);
}
static int ompi4_lost(const char *kept, ft__words_t *hosts) {
  return lost(ORTE_LOST, kept, hosts);
}
static int ompi4_agent(const ft__launch_job_t *j, const ft__env_t *env,
                       ft__words_t *words) {
  return agent(&ORTE, j, env, words);
}
static int ompi5_build(const ft__launch_job_t *j, ft__env_t *env,
                       ft__launch_cmd_t *c) {
  return build(&PRRTE, j, env, c);
}
static int ompi5_lost(const char *kept, ft__words_t *hosts) {
  return lost(PRRTE_LOST, kept, hosts);
}
static int ompi5_agent(const ft__launch_job_t *j, const ft__env_t *env,
                       ft__words_t *words) {
  return agent(&PRRTE, j, env, words);
}

const ft__launcher_t ft__launcher_ompi4 = {
    .name = "ompi4",
    .program = "mpirun",
    .daemon = "orted",
    .slurm = 1,
    .btl = ORTE_BTL,
    .ctx_opts = ctx_opts,
    .build = ompi4_build,
    .lost = ompi4_lost,
    .agent = ompi4_agent,
    .probe_cmd = ft__launcher_probe_cmd,
    .host_cmd = ft__launcher_host_cmd,
};

const ft__launcher_t ft__launcher_ompi5 = {
    .name = "ompi5",
    .program = "mpirun",
    .daemon = "prted",
    .btl = PRRTE_BTL,
    .ctx_opts = ctx_opts,
    .build = ompi5_build,
    .lost = ompi5_lost,
    .agent = ompi5_agent,
    .probe_cmd = ft__launcher_probe_cmd,
    .host_cmd = ft__launcher_host_cmd,
};
