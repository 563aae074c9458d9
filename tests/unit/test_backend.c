/*
 * The Open MPI launcher backends (launch/ompi.c through launch/backend.h):
 * 4.1's mpirun command line of each placement (this host, virtual nodes, a
 * hostfile, Slurm, the cluster with its BTL, PML and yield rules, a code
 * lowered after a shrink, ft-restore's one rank a node), the lost-daemon
 * parser on ORTE's banner as mpirun's filter keeps it, the agent, the
 * probe and host commands; Open MPI 5's spellings of the same (PRRTE's
 * parameters, its banners, its agent); then summary()'s lines of
 * launch/plan.h, which no --dry-run prints.  Expected command lines are
 * written as the words joined by single spaces.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "ftrt.h"
#include "launch/backend.h"
#include "launch/plan.h"
#include "tests/unit/check_main.h"

/* ---- helpers ---- */

static const ft__launcher_t *BE = &ft__launcher_ompi4;

static void words_are(const ft__words_t *w, const char *want) {
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__text_join(&t, (const char *const *)w->v, w->n, " "),
                   FT_OK);
  ck_assert_str_eq(ft__text_str(&t), want);
  ft__text_free(&t);
}

/* An environment of "NAME=VALUE" words separated by blanks. */
static void env_of(ft__env_t *e, const char *entries) {
  ft__words_t w = FT__WORDS_INIT;
  ck_assert_int_eq(ft__words_split(&w, entries), FT_OK);
  ck_assert_int_eq(ft__env_load(e, w.v), FT_OK);
  ft__words_free(&w);
}

/* A job of prog on this host, one node, 1 trainer + the SMP. */
static ft__launch_job_t job_here(void) {
  static const char *const prog[] = {"prog", "a"};
  ft__launch_job_t j = {.nodes = 1,
                        .ranks_per_node = 2,
                        .node_ranks = 2,
                        .cpus = 64,
                        .job = "ftrt",
                        .timeout = "60",
                        .program = prog,
                        .nprogram = 2};
  return j;
}

static const char *const HOSTS3[] = {"h1", "h2", "h3"};

/* build job in env: argv and hostfile into cmd. */
static void build(const ft__launch_job_t *j, ft__env_t *env,
                  ft__launch_cmd_t *cmd) {
  ck_assert_int_eq(ft__launch_job_env(j, env), FT_OK);
  ck_assert_int_eq(BE->build(j, env, cmd), FT_OK);
}

static void cmd_free(ft__launch_cmd_t *c) {
  ft__words_free(&c->argv);
  ft__text_free(&c->hostfile);
}

/* The argv ompi4 builds for job j in the environment of envspec is want. */
static void argv_of(const char *envspec, const ft__launch_job_t *j,
                    const char *want) {
  ft__env_t env;
  env_of(&env, envspec);
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(j, &env, &c);
  words_are(&c.argv, want);
  cmd_free(&c);
  ft__env_free(&env);
}

/* ---- the command line ---- */

/* build_mpirun on this host, one node: no hostfile, no virtual nodes. */
START_TEST(build_one_node_here) {
  ft__env_t env;
  env_of(&env, "PATH=/bin FT_STORE_ROOT=/x HOME=/root");
  ft__launch_job_t j = job_here();
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(
      &c.argv,
      "mpirun --oversubscribe --bind-to none --mca odls_base_sigkill_timeout 0 "
      "-np 2 -x "
      "FTRT_LAUNCH_ID -x FT_JOB -x FT_STORE_ROOT -x FT_TIMEOUT "
      "prog a");
  ck_assert_uint_eq(c.hostfile.len, 0);
  ck_assert_str_eq(ft__env_str(&env, "OMPI_ALLOW_RUN_AS_ROOT"), "1");
  ck_assert_str_eq(ft__env_str(&env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), "1");
  ck_assert_str_eq(ft__env_str(&env, "OMPI_MCA_rmaps_base_oversubscribe"), "1");
  ck_assert_ptr_null(ft__env_get(&env, "FT_VIRTUAL_NODE_RANKS"));
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* --nodes 3 --ppn 2 here: 3 virtual nodes of 3 ranks; FT_* sorted, an
 * FT_ name that is no identifier not passed. */
START_TEST(build_virtual_nodes) {
  ft__env_t env;
  env_of(&env, "FT_ZED=1 FT_A=2 FTX=3 FT_A-B=4");
  ft__launch_job_t j = job_here();
  j.nodes = 3;
  j.ranks_per_node = j.node_ranks = 3;
  j.job = "lj";
  j.timeout = "9";
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(
      &c.argv,
      "mpirun --oversubscribe --bind-to none --mca odls_base_sigkill_timeout 0 "
      "-np 9 -x "
      "FTRT_LAUNCH_ID -x FT_A -x FT_JOB -x FT_TIMEOUT -x "
      "FT_VIRTUAL_NODE_RANKS -x FT_ZED prog a");
  ck_assert_str_eq(ft__env_str(&env, "FT_VIRTUAL_NODE_RANKS"), "3");
  ck_assert_str_eq(ft__env_str(&env, "FT_JOB"), "lj");
  ck_assert_str_eq(ft__env_str(&env, "FT_TIMEOUT"), "9");
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* A hostfile's hosts: the rsh launcher, the hostfile, ppr:K:node. */
START_TEST(build_hostfile) {
  ft__env_t env;
  env_of(&env, "OMPI_MCA_plm=isolated");
  ft__launch_job_t j = job_here();
  j.hosts = HOSTS3;
  j.nhosts = 2;
  j.nodes = 2;
  j.ranks_per_node = 3;
  j.hostfile = "/tmp/x/hostfile";
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(&c.argv, "mpirun --oversubscribe --bind-to none --mca plm rsh "
                     "--mca odls_base_sigkill_timeout 0 "
                     "--hostfile /tmp/x/hostfile --map-by ppr:3:node -np 6 -x "
                     "FTRT_LAUNCH_ID -x FT_JOB -x FT_TIMEOUT prog a");
  ck_assert_str_eq(ft__text_str(&c.hostfile), "h1 slots=3\nh2 slots=3\n");
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* The daemons' grace before SIGKILL: 0 (no second waited at every job's
 * early end) unless the user set it, by argument or environment. */
START_TEST(build_grace_given) {
  static const char *const extra[] = {"-mca", "odls_base_sigkill_timeout", "3"};
  ft__launch_job_t j = job_here();
  j.nodes = 1;
  j.extra = extra;
  j.nextra = 3;
  argv_of("", &j,
          "mpirun --oversubscribe --bind-to none -np 2 -x FTRT_LAUNCH_ID -x "
          "FT_JOB -x FT_TIMEOUT -mca odls_base_sigkill_timeout 3 prog a");
  j.nextra = 0;
  argv_of("OMPI_MCA_odls_base_sigkill_timeout=2", &j,
          "mpirun --oversubscribe --bind-to none -np 2 -x FTRT_LAUNCH_ID -x "
          "FT_JOB -x FT_TIMEOUT prog a");
}
END_TEST

/* A plm named by --mpirun-arg wins; --mpirun-arg comes before PROGRAM. */
START_TEST(build_plm_given) {
  static const char *const extra[] = {"--mca", "plm", "isolated",
                                      "--nooversubscribe"};
  ft__launch_job_t j = job_here();
  j.hosts = HOSTS3;
  j.nhosts = 1;
  j.hostfile = "F";
  j.extra = extra;
  j.nextra = 4;
  argv_of(
      "", &j,
      "mpirun --oversubscribe --bind-to none --mca odls_base_sigkill_timeout 0 "
      "--hostfile F "
      "--map-by ppr:2:node -np 2 -x FTRT_LAUNCH_ID -x FT_JOB -x "
      "FT_TIMEOUT --mca plm isolated --nooversubscribe prog a");
}
END_TEST

/* Inside a Slurm allocation mpirun uses Slurm's own launcher, its daemons'
 * step overlapping a lost attempt's, and places the ranks in the
 * hostfile's order (the sequential mapper). */
START_TEST(build_slurm) {
  ft__launch_job_t j = job_here();
  j.hosts = HOSTS3;
  j.nhosts = 3;
  j.nodes = 3;
  j.slurm = 1;
  j.hostfile = "F";
  argv_of("SLURM_JOB_NODELIST=n[1-3]", &j,
          "mpirun --oversubscribe --bind-to none --mca plm_slurm_args "
          "--overlap --mca odls_base_sigkill_timeout 0 --hostfile F --mca "
          "rmaps seq -np 6 -x FTRT_LAUNCH_ID -x "
          "FT_JOB -x FT_TIMEOUT prog a");
}
END_TEST

static ft__launch_job_t job_cluster(int64_t nodes, int64_t cpus) {
  ft__launch_job_t j = job_here();
  j.hosts = HOSTS3;
  j.nhosts = (int)nodes;
  j.nodes = nodes;
  j.cluster = "c1";
  j.rsh = "/s/ft-rsh";
  j.iface = "eth0";
  j.hostfile = "F";
  j.cpus = cpus;
  return j;
}

#define CLUSTER_HEAD                                                           \
  "mpirun --oversubscribe --bind-to none --mca plm rsh "                       \
  "--mca odls_base_sigkill_timeout 0 --mca plm_rsh_agent "                     \
  "/s/ft-rsh --mca plm_rsh_no_tree_spawn 1 --mca btl_tcp_if_include eth0 "     \
  "--mca oob_tcp_if_include eth0 "

/* The cluster: ft-rsh, eth0, TCP and ob1; 6 ranks on 2 CPUs yield. */
START_TEST(build_cluster_yields) {
  ft__env_t env;
  env_of(&env, "FT_CLUSTER=c1");
  ft__launch_job_t j = job_cluster(3, 2);
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(&c.argv, CLUSTER_HEAD
            "--mca btl tcp,vader,self --mca pml ob1 --hostfile F --map-by "
            "ppr:2:node -np 6 -x FTRT_LAUNCH_ID --mca mpi_yield_when_idle 1 "
            "-x FT_CLUSTER -x FT_JOB -x FT_TIMEOUT prog a");
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* As many ranks as CPUs: no yield; the user's BTL and PML win. */
START_TEST(build_cluster_user_settings) {
  static const char *const extra[] = {"--gmca", "pml", "ucx"};
  ft__env_t env;
  env_of(&env, "OMPI_MCA_btl=self,tcp");
  ft__launch_job_t j = job_cluster(2, 4);
  j.extra = extra;
  j.nextra = 3;
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(&c.argv, CLUSTER_HEAD "--hostfile F --map-by ppr:2:node -np 4 -x "
                                  "FTRT_LAUNCH_ID -x FT_JOB -x FT_TIMEOUT "
                                  "--gmca pml ucx prog a");
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* The yield rule: a setting of the user's, by argument or environment. */
START_TEST(build_cluster_yield_given) {
  static const char *const extra[] = {"--prtemca", "mpi_yield_when_idle", "0"};
  ft__env_t env;
  env_of(&env, "");
  ft__launch_job_t j = job_cluster(3, 1);
  j.extra = extra;
  j.nextra = 3;
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  /* Only the user's: the one before PROGRAM. */
  ck_assert_int_eq(ft__words_find(&c.argv, "mpi_yield_when_idle"),
                   c.argv.n - 4);
  cmd_free(&c);
  ft__env_free(&env);
  env_of(&env, "OMPI_MCA_mpi_yield_when_idle=0");
  j.nextra = 0;
  build(&j, &env, &c);
  ck_assert_int_lt(ft__words_find(&c.argv, "mpi_yield_when_idle"), 0);
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* The code of a relaunch after a shrink: 3+1 lowered to 2+1 on 3 nodes. */
START_TEST(build_lowered_code) {
  ft__env_t env;
  env_of(&env, "FT_EC_K=3 FT_EC_M=1");
  ft__launch_job_t j = job_here();
  j.hosts = HOSTS3;
  j.nhosts = 3;
  j.nodes = 3;
  j.hostfile = "F";
  j.ec_k = "2";
  j.ec_m = "1";
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(&c.argv, "mpirun --oversubscribe --bind-to none --mca plm rsh "
                     "--mca odls_base_sigkill_timeout 0 "
                     "--hostfile F --map-by ppr:2:node -np 6 -x FTRT_LAUNCH_ID "
                     "-x FT_EC_K -x FT_EC_M -x FT_JOB -x FT_TIMEOUT prog a");
  ck_assert_str_eq(ft__env_str(&env, "FT_EC_K"), "2");
  ck_assert_str_eq(ft__env_str(&env, "FT_EC_M"), "1");
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* ft-restore: one rank a node on the hosts. */
START_TEST(build_one_rank_a_node) {
  static const char *const restore[] = {"ft-restore", "--job", "j", "--mode",
                                        "shrink"};
  ft__env_t env;
  env_of(&env, "");
  ft__launch_job_t j = job_here();
  j.hosts = HOSTS3 + 1;
  j.nhosts = 2;
  j.nodes = 2;
  j.ranks_per_node = 1;
  j.hostfile = "F";
  j.program = restore;
  j.nprogram = 5;
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  build(&j, &env, &c);
  words_are(&c.argv,
            "mpirun --oversubscribe --bind-to none --mca plm rsh "
            "--mca odls_base_sigkill_timeout 0 "
            "--hostfile F --map-by ppr:1:node -np 2 -x FTRT_LAUNCH_ID "
            "-x FT_JOB -x FT_TIMEOUT ft-restore --job j --mode shrink");
  ck_assert_str_eq(ft__text_str(&c.hostfile), "h2 slots=1\nh3 slots=1\n");
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* mca_value: the last of every spelling; a name without a value is none. */
START_TEST(mca_values) {
  static const char *const extra[] = {"--mca",    "btl",   "tcp",  "-gmca",
                                      "btl",      "sm",    "-mca", "plm",
                                      "isolated", "--mca", "pml"};
  const char *v = NULL;
  ck_assert_int_eq(ft__launch_mca_value(extra, 11, "btl", &v), 1);
  ck_assert_str_eq(v, "sm");
  ck_assert_int_eq(ft__launch_mca_given(extra, 11, "plm"), 1);
  ck_assert_int_eq(ft__launch_mca_given(extra, 11, "pml"), 0);
  ck_assert_int_eq(ft__launch_mca_given(extra, 11, "tcp"), 0);
}
END_TEST

/* ---- lost daemons ---- */

/* A banner as mpirun_filter keeps it: its lines joined by spaces, runs of
 * blanks squeezed to one, no leading blank. */
static void kept_banner(ft__text_t *out, const char *banner) {
  int blank = 1;
  for (const char *s = banner; *s; s++) {
    int b = *s == ' ' || *s == '\t' || *s == '\n';
    if (b && !blank)
      ft__text_add(out, " ");
    else if (!b)
      ft__text_addn(out, s, 1);
    blank = b;
  }
  if (out->len && out->s[out->len - 1] == ' ')
    out->s[--out->len] = '\0'; /* the filter ends a banner at a line */
  ft__text_add(out, "\n");
}

/* help-errmgr-base.txt's node-died, as Open MPI 4.1 fills it in. */
static void orte_lost(ft__text_t *out, const char *host, int vpid) {
  char b[1024];
  snprintf(b, sizeof(b),
           "ORTE has lost communication with a remote daemon.\n\n"
           "  HNP daemon   : [[40312,0],0] on node head\n"
           "  Remote daemon: [[40312,0],%d] on node %s\n\n"
           "This is usually due to either a failure of the TCP network\n"
           "connection to the node, or possibly an internal failure of\n"
           "the daemon itself. We cannot recover from this failure, and\n"
           "therefore will terminate the job.\n",
           vpid, host);
  kept_banner(out, b);
}

START_TEST(lost_one_banner) {
  ft__text_t kept = FT__TEXT_INIT;
  ft__words_t hosts = FT__WORDS_INIT;
  orte_lost(&kept, "h2", 2);
  ck_assert_str_eq(kept.s, "ORTE has lost communication with a remote "
                           "daemon. HNP daemon : [[40312,0],0] on node head "
                           "Remote daemon: [[40312,0],2] on node h2 This is "
                           "usually due to either a failure of the TCP "
                           "network connection to the node, or possibly an "
                           "internal failure of the daemon itself. We cannot "
                           "recover from this failure, and therefore will "
                           "terminate the job.\n");
  ck_assert_int_eq(BE->lost(kept.s, &hosts), FT_OK);
  words_are(&hosts, "h2");
  ck_assert_str_eq(BE->daemon, "orted");
  ft__words_free(&hosts);
  ft__text_free(&kept);
}
END_TEST

/* Among the other things kept: two daemons lost, one named twice, a
 * notice line, another banner, PRRTE's banner (not Open MPI 4's). */
START_TEST(lost_among_others) {
  ft__text_t kept = FT__TEXT_INIT;
  ft__words_t hosts = FT__WORDS_INIT;
  ft__text_add(&kept, "[head:07544] *** Process received signal ***\n");
  kept_banner(&kept, "Primary job  terminated normally, but 1 process "
                     "returned\na non-zero exit code.\n");
  orte_lost(&kept, "h3", 3);
  orte_lost(&kept, "s1.rack-2", 1);
  orte_lost(&kept, "h3", 3);
  kept_banner(&kept, "PRTE has lost communication with a remote daemon.\n\n"
                     "  HNP daemon   : [prterun-head-1@0,0] on node head\n"
                     "  Remote daemon: [prterun-head-1@0,4] on node h4\n\n"
                     "This is usually due to either a failure\n");
  ck_assert_int_eq(BE->lost(kept.s, &hosts), FT_OK);
  words_are(&hosts, "h3 s1.rack-2");
  ft__words_free(&hosts);
  ft__text_free(&kept);
}
END_TEST

/* sed's pattern: the sentence first, "Remote daemon: [[J,V],N] on node
 * HOST" then a blank; the last one of a line. */
START_TEST(lost_pattern_edges) {
  ft__words_t hosts = FT__WORDS_INIT;
  ck_assert_int_eq(
      BE->lost("Remote daemon: [[1,0],2] on node h9 ORTE has lost "
               "communication with a remote daemon. rest\n"
               "ORTE has lost communication with a remote daemon. Remote "
               "daemon: [[1,0],2] on node h8\n"
               "ORTE has lost communication with a remote daemon. Remote "
               "daemon: [[1,0],x] on node h7 .\n"
               "x ORTE has lost communication with a remote daemon. Remote "
               "daemon: [[1,0],1] on node h5 and Remote daemon: [[,],] on "
               "node h6 .",
               &hosts),
      FT_OK);
  words_are(&hosts, "h6");
  ft__words_free(&hosts);
}
END_TEST

/* ---- reaching a host ---- */

START_TEST(agent_choice) {
  static const char *const extra[] = {"--mca", "plm_rsh_agent", "nosuch2 -v"};
  ft__env_t env;
  ft__words_t w = FT__WORDS_INIT;
  ft__launch_job_t j = job_here();
  /* Nothing on PATH: the first entry of Open MPI's default. */
  env_of(&env, "PATH=/nonexistent");
  ck_assert_int_eq(BE->agent(&j, &env, &w), FT_OK);
  words_are(&w, "ssh");
  ft__env_free(&env);
  /* OMPI_MCA_plm_rsh_agent: the first entry found on PATH. */
  env_of(&env, "PATH=/nonexistent:/bin:/usr/bin");
  ck_assert_int_eq(
      ft__env_set(&env, "OMPI_MCA_plm_rsh_agent", "nosuch -x : sh  -e : ssh"),
      FT_OK);
  ck_assert_int_eq(BE->agent(&j, &env, &w), FT_OK);
  words_are(&w, "sh -e");
  /* --mca plm_rsh_agent wins, found or not. */
  j.extra = extra;
  j.nextra = 3;
  ck_assert_int_eq(BE->agent(&j, &env, &w), FT_OK);
  words_are(&w, "nosuch2 -v");
  ft__words_free(&w);
  ft__env_free(&env);
}
END_TEST

START_TEST(probe_and_host_commands) {
  static const char *const ssh[] = {"ssh", "-o", "BatchMode=yes"};
  static const char *const srun[] = {"/usr/bin/srun", "-N1", "-n1", "--overlap",
                                     "-w"};
  ft__words_t w = FT__WORDS_INIT;
  ck_assert_int_eq(BE->probe_cmd(ssh, 3, "h2", &w), FT_OK);
  words_are(&w, "ssh -o BatchMode=yes h2 true");
  ft__words_truncate(&w, 0);
  ft__launch_job_t j = job_here();
  ck_assert_int_eq(BE->host_cmd(&j, ssh, 3, "h2", "ft-spare remove", &w),
                   FT_OK);
  words_are(&w, "ssh -o BatchMode=yes h2 ft-spare remove");
  ck_assert_int_eq(w.n, 5);
  ft__words_truncate(&w, 0);
  ck_assert_int_eq(BE->host_cmd(&j, srun, 5, "n3", "ft-spare remove", &w),
                   FT_OK);
  words_are(&w, "/usr/bin/srun -N1 -n1 --overlap -w n3 sh -c ft-spare remove");
  ft__words_truncate(&w, 0);
  j.cluster = "c1";
  j.rsh = "/s/ft-rsh";
  ck_assert_int_eq(BE->host_cmd(&j, NULL, 0, "s1", "ft-spare remove", &w),
                   FT_OK);
  words_are(&w, "/s/ft-rsh s1 ft-spare remove");
  ft__words_free(&w);
  ck_assert_ptr_eq(ft__launcher_find("ompi4"), BE);
  ck_assert_ptr_null(ft__launcher_find("hydra"));
}
END_TEST

/* ---- summary() of launch/plan.h ---- */

static void plan_of(ft__launch_plan_t *p, const char *hosts, const char *pool,
                    const char *nodes) {
  *p = (ft__launch_plan_t)FT__LAUNCH_PLAN_INIT;
  ck_assert_int_eq(ft__words_split(&p->hosts, hosts), FT_OK);
  ck_assert_int_eq(ft__words_split(&p->pool, pool), FT_OK);
  p->nodes = nodes;
  ck_assert_int_eq(ft__launch_arith(nodes, &p->nnodes), 0);
}

static ft__launch_args_t args_of(void) {
  ft__launch_args_t a;
  memset(&a, 0, sizeof(a));
  a.nodes = a.hostfile = a.cluster = a.spares = a.ec = a.probe = "";
  a.persist = a.times = a.slurm = a.probe_tries = a.ec_name = "";
  a.ppn = "1";
  a.restarts = "0";
  a.job = "ftrt";
  a.timeout = "60";
  return a;
}

START_TEST(summary_lines) {
  ft__launch_plan_t p;
  ft__launch_args_t a = args_of();
  ft__words_t l = FT__WORDS_INIT;
  plan_of(&p, "h1 h2", "h3 h2 h4", "2");
  a.hostfile = "hosts";
  a.ppn = "2";
  ck_assert_int_eq(ft__launch_summary(&p, &a, "1", &l), FT_OK);
  ck_assert_int_eq(l.n, 2);
  ck_assert_str_eq(l.v[0], "2 nodes x (2 trainers + 1 SMP) = 6 ranks, job "
                           "ftrt");
  ck_assert_str_eq(l.v[1], "on hosts h1 h2 (hostfile hosts); spares: up to 1 "
                           "of h3 h4");
  ft__words_truncate(&l, 0);
  ck_assert_int_eq(ft__launch_summary(&p, &a, "0", &l), FT_OK);
  ck_assert_str_eq(l.v[1], "on hosts h1 h2 (hostfile hosts)");
  ft__words_truncate(&l, 0);
  a.hostfile = "";
  a.cluster = "c1";
  ck_assert_int_eq(ft__launch_summary(&p, &a, "1", &l), FT_OK);
  ck_assert_str_eq(l.v[1], "on cluster c1: h1 h2; mpirun on its head; "
                           "watchdog timeout 60 s");
  ft__launch_plan_free(&p);
  ft__words_truncate(&l, 0);
  /* This host: virtual nodes, or one node and no second line. */
  plan_of(&p, "", "", "3");
  a.cluster = "";
  a.ppn = "1";
  ck_assert_int_eq(ft__launch_summary(&p, &a, "0", &l), FT_OK);
  ck_assert_str_eq(l.v[0], "3 nodes x (1 trainer + 1 SMP) = 6 ranks, job "
                           "ftrt");
  ck_assert_str_eq(l.v[1], "on this host, 3 virtual nodes "
                           "(FT_VIRTUAL_NODE_RANKS=2)");
  ft__launch_plan_free(&p);
  ft__words_truncate(&l, 0);
  plan_of(&p, "", "", "1");
  a.one_per_node = 1;
  ck_assert_int_eq(ft__launch_summary(&p, &a, "0", &l), FT_OK);
  ck_assert_int_eq(l.n, 1);
  ck_assert_str_eq(l.v[0], "1 node x 1 rank (--one-per-node), job ftrt");
  ft__launch_plan_free(&p);
  ft__words_free(&l);
}
END_TEST

/* ---- Open MPI 5 (PRRTE) ---- */

static const ft__launcher_t *const O5 = &ft__launcher_ompi5;

/* The cluster in PRRTE's words: its parameters through --prtemca, plm ssh,
 * the sm BTL; the MPI layer's (btl, pml, yield) through --mca; no ORTE
 * variable. */
START_TEST(ompi5_cluster) {
  ft__env_t env;
  env_of(&env, "FT_CLUSTER=c1");
  ft__launch_job_t j = job_cluster(3, 2);
  ft__launch_cmd_t c = FT__LAUNCH_CMD_INIT;
  ck_assert_int_eq(ft__launch_job_env(&j, &env), FT_OK);
  ck_assert_int_eq(O5->build(&j, &env, &c), FT_OK);
  words_are(&c.argv,
            "mpirun --oversubscribe --bind-to none --prtemca plm ssh "
            "--prtemca plm_ssh_agent /s/ft-rsh --prtemca plm_ssh_no_tree_spawn "
            "1 --mca btl_tcp_if_include eth0 --prtemca oob_tcp_if_include eth0 "
            "--mca btl tcp,sm,self --mca pml ob1 --hostfile F --map-by "
            "ppr:2:node -np 6 -x FTRT_LAUNCH_ID --mca mpi_yield_when_idle 1 "
            "-x FT_CLUSTER -x FT_JOB -x FT_TIMEOUT prog a");
  ck_assert_str_eq(c.hostfile.s, "h1 slots=2\nh2 slots=2\nh3 slots=2\n");
  ck_assert_str_eq(ft__env_str(&env, "OMPI_ALLOW_RUN_AS_ROOT"), "1");
  ck_assert_ptr_null(ft__env_get(&env, "OMPI_MCA_rmaps_base_oversubscribe"));
  ck_assert_str_eq(O5->daemon, "prted");
  ck_assert_int_eq(O5->slurm, 0);
  ck_assert_int_eq(BE->slurm, 1);
  ck_assert_ptr_eq(ft__launcher_find("ompi5"), O5);
  cmd_free(&c);
  ft__env_free(&env);
}
END_TEST

/* PRRTE's node-died banner ("[NSPACE,R]") and plm ssh's message ("Remote
 * host: HOST"), as the filter keeps them; ORTE's is not PRRTE's. */
START_TEST(ompi5_lost) {
  ft__text_t kept = FT__TEXT_INIT;
  ft__words_t hosts = FT__WORDS_INIT;
  kept_banner(&kept, "PRTE has lost communication with a remote daemon.\n\n"
                     "  HNP daemon   : [prterun-head-1@0,0] on node head\n"
                     "  Remote daemon: [prterun-head-1@0,4] on node h4\n\n"
                     "This is usually due to either a failure\n");
  kept_banner(&kept, "A daemon failed to report back after being spawned. "
                     "This could\nbe due to several factors ... back to "
                     "prterun:\n\n  Local host:    head\n  Remote host:   "
                     "s1.rack-2\n  Daemon exit status: 0\n\nThis may also "
                     "be caused by a firewall\n");
  orte_lost(&kept, "h3", 3);
  kept_banner(&kept, "A daemon failed to report back after being spawned. "
                     "Local host: head Remote host: h4 Daemon exit status: "
                     "255\n");
  ck_assert_int_eq(O5->lost(kept.s, &hosts), FT_OK);
  words_are(&hosts, "h4 s1.rack-2");
  ft__words_free(&hosts);
  ft__text_free(&kept);
  /* The daemon's name: [NSPACE,R] without blanks or brackets in NSPACE,
   * R digits; the host then a blank or the line's end. */
  ck_assert_int_eq(
      O5->lost("PRTE has lost communication with a remote daemon. Remote "
               "daemon: [a b@0,1] on node h5 .\n"
               "PRTE has lost communication with a remote daemon. Remote "
               "daemon: [a@0,x] on node h6 .\n"
               "PRTE has lost communication with a remote daemon. Remote "
               "daemon: [a[0,1] on node h7 .\n"
               "PRTE has lost communication with a remote daemon. Remote "
               "daemon: [,1] on node h8 .\n"
               "PRTE has lost communication with a remote daemon. Remote "
               "daemon: [p@0,12] on node h9\n"
               "Remote host: h10 A daemon failed to report back after being "
               "spawned.\n"
               "A daemon failed to report back after being spawned. Remote "
               "host: h11\n",
               &hosts),
      FT_OK);
  /* PRRTE's host may end the line (plm ssh's message kept up to its last
   * line) */
  words_are(&hosts, "h8 h9 h11");
  ft__words_free(&hosts);
}
END_TEST

/* The agent: PRTE_MCA_plm_ssh_agent (ORTE's variable is not PRRTE's),
 * then --prtemca plm_ssh_agent wins. */
START_TEST(ompi5_agent) {
  static const char *const extra[] = {"--prtemca", "plm_ssh_agent",
                                      "nosuch3 -q"};
  ft__env_t env;
  ft__words_t w = FT__WORDS_INIT;
  ft__launch_job_t j = job_here();
  env_of(&env, "PATH=/nonexistent:/bin:/usr/bin");
  ck_assert_int_eq(ft__env_set(&env, "OMPI_MCA_plm_rsh_agent", "sh -e"), FT_OK);
  ck_assert_int_eq(O5->agent(&j, &env, &w), FT_OK);
  words_are(&w, "ssh");
  ck_assert_int_eq(
      ft__env_set(&env, "PRTE_MCA_plm_ssh_agent", "nosuch : sh  -x"), FT_OK);
  ck_assert_int_eq(O5->agent(&j, &env, &w), FT_OK);
  words_are(&w, "sh -x");
  j.extra = extra;
  j.nextra = 3;
  ck_assert_int_eq(O5->agent(&j, &env, &w), FT_OK);
  words_are(&w, "nosuch3 -q");
  ft__words_free(&w);
  ft__env_free(&env);
}
END_TEST

/* $((N)): a leading 0 is octal, a digit past the base refused. */
START_TEST(bash_arithmetic) {
  int64_t v = -1;
  ck_assert_int_eq(ft__launch_arith("010", &v), 0);
  ck_assert_int_eq(v, 8);
  ck_assert_int_eq(ft__launch_arith("12", &v), 0);
  ck_assert_int_eq(v, 12);
  ck_assert_int_eq(ft__launch_arith("0", &v), 0);
  ck_assert_int_eq(v, 0);
  ck_assert_int_eq(ft__launch_arith("08", &v), -1);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("backend");
  TCase *tc = tcase_create("ompi4 command line");
  tcase_add_test(tc, build_one_node_here);
  tcase_add_test(tc, build_virtual_nodes);
  tcase_add_test(tc, build_hostfile);
  tcase_add_test(tc, build_plm_given);
  tcase_add_test(tc, build_grace_given);
  tcase_add_test(tc, build_slurm);
  tcase_add_test(tc, build_cluster_yields);
  tcase_add_test(tc, build_cluster_user_settings);
  tcase_add_test(tc, build_cluster_yield_given);
  tcase_add_test(tc, build_lowered_code);
  tcase_add_test(tc, build_one_rank_a_node);
  tcase_add_test(tc, mca_values);
  suite_add_tcase(s, tc);
  tc = tcase_create("ompi4 lost daemons");
  tcase_add_test(tc, lost_one_banner);
  tcase_add_test(tc, lost_among_others);
  tcase_add_test(tc, lost_pattern_edges);
  suite_add_tcase(s, tc);
  tc = tcase_create("ompi4 hosts");
  tcase_add_test(tc, agent_choice);
  tcase_add_test(tc, probe_and_host_commands);
  suite_add_tcase(s, tc);
  tc = tcase_create("ompi5");
  tcase_add_test(tc, ompi5_cluster);
  tcase_add_test(tc, ompi5_lost);
  tcase_add_test(tc, ompi5_agent);
  suite_add_tcase(s, tc);
  tc = tcase_create("plan summary");
  tcase_add_test(tc, summary_lines);
  tcase_add_test(tc, bash_arithmetic);
  suite_add_tcase(s, tc);
  return s;
}
