/*
 * ft-launch's recovery logic (launch/machine.h) driven over event
 * sequences: each test feeds the events a launch would see (mpirun's end,
 * a probe's answer, the watchdog's verdict, a signal) and checks every
 * action the machine returns, in order: the lines said byte for byte, the
 * node sets, the probes, the exit code.
 * feed() refuses to go on while an action of the last event is unchecked,
 * so a test reads as the whole conversation; STAMP actions are skipped but
 * in the test that checks them.  The first comment line of each test names
 * the step it checks.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ftrt.h"
#include "launch/machine.h"
#include "tests/unit/check_main.h"

/* ---- words: "h1 h2 h3" as an array ---- */

typedef struct {
  char buf[FT_LAUNCH_HOSTS_MAX * FT_LAUNCH_NAME_MAX];
  const char *v[FT_LAUNCH_HOSTS_MAX + 8];
  int n;
} words_t;

static void split(words_t *w, const char *s) {
  snprintf(w->buf, sizeof(w->buf), "%s", s ? s : "");
  w->n = 0;
  for (char *save = NULL, *t = strtok_r(w->buf, " ", &save); t;
       t = strtok_r(NULL, " ", &save))
    w->v[w->n++] = t;
}

static void join(char *out, size_t len, const char *const *v, int n) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < n && at < len; i++)
    at += (size_t)snprintf(out + at, len - at, "%s%s", i ? " " : "", v[i]);
}

/* ---- the machine under test ---- */

#define QMAX 256

static ft__launch_t *M;
static words_t HOSTS, POOL, ARG;
/* The actions of the last event, their texts and host lists copied (they
 * last only until the next call). */
static ft__launch_action_t Q[QMAX];
static const char *QHOSTS[QMAX][FT_LAUNCH_HOSTS_MAX];
static char QTEXT[1 << 20];
static size_t QTEXT_USED;
static int QN, QI;

/* A hostfile's placement: probed with ssh, 3 tries, timeout 60 s. */
static ft__launch_config_t placed(const char *hosts, const char *pool,
                                  int spares, int restarts) {
  split(&HOSTS, hosts);
  split(&POOL, pool);
  ft__launch_config_t c = {.hosts = HOSTS.v,
                           .nhosts = HOSTS.n,
                           .nodes = 1,
                           .pool = POOL.v,
                           .npool = POOL.n,
                           .spares = spares,
                           .restarts = restarts,
                           .probe = "ssh",
                           .probe_tries = 3,
                           .timeout = "60"};
  return c;
}

static void make(const ft__launch_config_t *c) {
  ck_assert_int_eq(ft__launch_init(&M, c), FT_OK);
  QN = QI = 0;
}

static void make_placed(const char *hosts, const char *pool, int spares,
                        int restarts) {
  ft__launch_config_t c = placed(hosts, pool, spares, restarts);
  make(&c);
}

static void teardown(void) {
  ft__launch_destroy(M);
  M = NULL;
}

static void feed(ft__launch_event_t ev) {
  while (QI < QN && Q[QI].kind == FT_LAUNCH_ACT_STAMP)
    QI++;
  ck_assert_msg(QI == QN, "action %d (kind %d, \"%s\") not checked", QI,
                Q[QI].kind, Q[QI].text ? Q[QI].text : "");
  ck_assert_int_eq(ft__launch_event(M, &ev), FT_OK);
  QN = QI = 0, QTEXT_USED = 0;
  while (QN < QMAX && ft__launch_action(M, &Q[QN])) {
    ft__launch_action_t *a = &Q[QN];
    if (a->text) {
      size_t n = strlen(a->text) + 1;
      ck_assert_uint_le(QTEXT_USED + n, sizeof(QTEXT));
      memcpy(QTEXT + QTEXT_USED, a->text, n);
      a->text = QTEXT + QTEXT_USED;
      QTEXT_USED += n;
    }
    for (int i = 0; i < a->nhosts; i++)
      QHOSTS[QN][i] = a->hosts[i];
    a->hosts = QHOSTS[QN];
    QN++;
  }
  ck_assert_int_lt(QN, QMAX);
}

static void start(void) {
  feed((ft__launch_event_t){.kind = FT_LAUNCH_EV_START});
}

/* mpirun ended: status, the hosts it lost the daemon of, the filter's flags
 * (FT_LAUNCH_REBUILT ...), and for ft-restore the host of its "full" line. */
static void ended_full(int status, const char *named, unsigned flags,
                       const char *full) {
  split(&ARG, named);
  feed((ft__launch_event_t){.kind = FT_LAUNCH_EV_EXIT,
                            .status = status,
                            .ms = 1234,
                            .hosts = ARG.v,
                            .nhosts = ARG.n,
                            .flags = flags,
                            .host = full});
}

static void ended(int status, const char *named, unsigned flags) {
  ended_full(status, named, flags, NULL);
}

/* The hosts that failed the probe. */
static void probed(const char *down) {
  split(&ARG, down);
  feed((ft__launch_event_t){
      .kind = FT_LAUNCH_EV_PROBED, .hosts = ARG.v, .nhosts = ARG.n});
}

static void sig(int signo) {
  feed((ft__launch_event_t){.kind = FT_LAUNCH_EV_SIGNAL, .signo = signo});
}

static void unreachable(const char *host, uint64_t ms, unsigned flags) {
  feed((ft__launch_event_t){.kind = FT_LAUNCH_EV_UNREACHABLE,
                            .host = host,
                            .ms = ms,
                            .flags = flags});
}

/* ---- what the machine said ---- */

static const ft__launch_action_t *next_raw(void) {
  ck_assert_msg(QI < QN, "no action left (%d taken)", QI);
  return &Q[QI++];
}

static const ft__launch_action_t *next(void) {
  while (QI < QN && Q[QI].kind == FT_LAUNCH_ACT_STAMP)
    QI++;
  return next_raw();
}

static const ft__launch_action_t *expect(int kind) {
  const ft__launch_action_t *a = next();
  ck_assert_msg(a->kind == kind, "action %d: kind %d, not %d (\"%s\")", QI - 1,
                a->kind, kind, a->text ? a->text : "");
  return a;
}

static void say_flags(const char *text, unsigned flags) {
  const ft__launch_action_t *a = expect(FT_LAUNCH_ACT_SAY);
  ck_assert_str_eq(a->text, text);
  ck_assert_uint_eq(a->flags, flags);
}

static void say(const char *text) { say_flags(text, 0); }
static void say_at(const char *text) { say_flags(text, FT_LAUNCH_SAY_STAMP); }

static void hosts_are(const ft__launch_action_t *a, const char *hosts) {
  static char got[FT_LAUNCH_HOSTS_MAX * FT_LAUNCH_NAME_MAX];
  join(got, sizeof(got), a->hosts, a->nhosts);
  ck_assert_str_eq(got, hosts);
}

static const ft__launch_action_t *run(const char *hosts, unsigned flags) {
  const ft__launch_action_t *a = expect(FT_LAUNCH_ACT_RUN);
  hosts_are(a, hosts);
  ck_assert_uint_eq(a->flags, flags);
  return a;
}

static void probe(const char *hosts, int tries) {
  const ft__launch_action_t *a = expect(FT_LAUNCH_ACT_PROBE);
  hosts_are(a, hosts);
  ck_assert_int_eq(a->tries, tries);
}

/* Attempt 1 ends (status 1) with mpirun naming h2's daemon lost; the rest
 * (others) answer the probe; restart 1 of `restarts` begins. */
static void h2_named_lost(const char *others, int restarts) {
  char line[96];
  ended(1, "h2", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe(others, 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h2");
  snprintf(line, sizeof(line),
           "restart 1 of %d: attempt failed with status 125; recovering",
           restarts);
  say(line);
}

static void leaves(int code) {
  const ft__launch_action_t *a = expect(FT_LAUNCH_ACT_EXIT);
  ck_assert_int_eq(a->code, code);
  ck_assert_int_eq(ft__launch_exit_code(M), code);
  while (QI < QN && Q[QI].kind == FT_LAUNCH_ACT_STAMP)
    QI++;
  ck_assert_int_eq(QI, QN);
}

static void in_state(int state) {
  ck_assert_str_eq(ft__launch_state_name(ft__launch_state(M)),
                   ft__launch_state_name(state));
}

#define HOLD FT_LAUNCH_RUN_HOLD
#define PREP FT_LAUNCH_RUN_PREPARE
#define REBUILD FT_LAUNCH_RUN_REBUILD
#define RESTORE FT_LAUNCH_RUN_RESTORE
#define FRESH FT_LAUNCH_RUN_FRESH
#define OK_JOB (FT_LAUNCH_REBUILT | FT_LAUNCH_ACCOUNTED)
#define PW "'ssh HOST true' failed 3 times"

/* The first attempt, started. */
static void first_attempt(const char *hosts, unsigned flags) {
  start();
  expect(FT_LAUNCH_ACT_SUMMARY);
  say_at("attempt 1: mpirun started");
  const ft__launch_action_t *a = run(hosts, flags);
  ck_assert_int_eq(a->attempt, 1);
  ck_assert_int_eq(a->recovery, 0);
  in_state(FT_LAUNCH_RUNNING);
}

/* A relaunch that rebuilds in the job, from "relaunching on" to its RUN. */
static const ft__launch_action_t *
relaunch_in_job(int restart, int of, int attempt, const char *hosts,
                const char *mode, unsigned flags) {
  char line[512];
  int nodes = 1;
  for (const char *p = hosts; *p; p++)
    nodes += *p == ' ';
  snprintf(line, sizeof(line),
           "relaunching on %d node(s): %s; its SMPs rebuild first (ft-restore "
           "--mode %s's engine, in ft_init)",
           nodes, hosts, mode);
  say_at(line);
  expect(FT_LAUNCH_ACT_SUMMARY);
  snprintf(line, sizeof(line), "restart %d of %d: relaunching", restart, of);
  say(line);
  snprintf(line, sizeof(line), "attempt %d: mpirun started", attempt);
  say_at(line);
  const ft__launch_action_t *a = run(hosts, flags | REBUILD);
  ck_assert_int_eq(a->attempt, attempt);
  in_state(FT_LAUNCH_REBUILDING);
  return a;
}

/* ---- the tests ---- */

START_TEST(clean_run) {
  /* run_with_restarts: attempt 1 succeeds; report_end says "done: success" */
  ft__launch_config_t c = placed("h1 h2 h3 h4", "s1 s2", 2, 2);
  c.ec_k = 3, c.ec_m = 1;
  make(&c);
  in_state(FT_LAUNCH_STARTING);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ck_assert_int_eq(Q[QN - 1].ec_k, 3);
  ck_assert_int_eq(Q[QN - 1].ec_m, 1);
  ck_assert_int_eq(Q[QN - 1].nodes, 4);
  ended(0, NULL, FT_LAUNCH_ACCOUNTED);
  say_at("attempt 1 ended after 1.2 s: success");
  say_at("done: success");
  leaves(0);
  in_state(FT_LAUNCH_DONE);
  ck_assert_int_eq(ft__launch_restarts_done(M), 0);
}
END_TEST

START_TEST(clean_run_without_restarts) {
  /* main: no last line without --restarts; the program's status is ours */
  make(&(ft__launch_config_t){.nodes = 2, .restarts = 0});
  first_attempt("", HOLD);
  ck_assert_int_eq(Q[QN - 1].nodes, 2);
  ended(7, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 7");
  say("job failed: mpirun exit status 7");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  leaves(7);
  ck_assert_int_eq(ft__launch_lost_end(M), 0); /* the program's: no requeue */
  in_state(FT_LAUNCH_GIVEN_UP);
}
END_TEST

START_TEST(rank_failure_no_host_lost) {
  /* regroup: no host lost, "relaunching on the same hosts"; rebuild in job */
  make_placed("h1 h2 h3 h4", "s1 s2", 2, 2);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3 h4", 3);
  in_state(FT_LAUNCH_FINDING);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("restart 1 of 2: attempt failed with status 1; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  const ft__launch_action_t *a =
      relaunch_in_job(1, 2, 2, "h1 h2 h3 h4", "replace", HOLD | PREP);
  ck_assert_int_eq(a->recovery, 1);
  ck_assert_int_eq(a->mode, FT_LAUNCH_REPLACE);
  ended(0, NULL, OK_JOB);
  ck_assert_int_eq(expect(FT_LAUNCH_ACT_HELD)->recovery, 1);
  say_at("attempt 2 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): relaunched on the same hosts");
  leaves(0);
}
END_TEST

START_TEST(one_lost_with_spare) {
  /* regroup: a spare takes the lost host's place, rank order kept */
  make_placed("h1 h2 h3 h4", "s1 s2", 2, 2);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3 h4", 3);
  probed("h2");
  say_at("job failed; host(s) of the job cannot run a command (" PW "): h2");
  say("restart 1 of 2: attempt failed with status 125; recovering");
  probe("s1 s2", 3);
  in_state(FT_LAUNCH_REGROUPING);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  relaunch_in_job(1, 2, 2, "h1 s1 h3 h4", "replace", HOLD | PREP);
  ck_assert_int_eq(ft__launch_spares_left(M), 1);
  const char *h[8];
  ck_assert_int_eq(ft__launch_hosts(M, h, 8), 4);
  ck_assert_str_eq(h[1], "s1");
  ended(0, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): h2 -> s1");
  leaves(0);
}
END_TEST

/* PRRTE's mpirun ends with 0 when it lost a daemon (its remote shell to a
 * host that died ended): not a success; the host it named is lost and a
 * spare takes its place, as after a failed status. */
START_TEST(lost_daemon_status_0_is_a_failure) {
  make_placed("h1 h2 h3 h4", "s1 s2", 2, 2);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(0, "h2", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 0, but mpirun lost a "
         "daemon: not a success");
  probe("h1 h3 h4", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h2");
  say("restart 1 of 2: attempt failed with status 125; recovering");
  probe("s1 s2", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  relaunch_in_job(1, 2, 2, "h1 s1 h3 h4", "replace", HOLD | PREP);
  ended(0, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): h2 -> s1");
  leaves(0);
}
END_TEST

/* Without restarts the same 0 leaves with 125, the host named. */
START_TEST(lost_daemon_status_0_no_restart) {
  make_placed("h1 h2", NULL, 0, 0);
  first_attempt("h1 h2", HOLD);
  ended(0, "h2", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 0, but mpirun lost a "
         "daemon: not a success");
  probe("h1", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h2");
  leaves(125);
  ck_assert_int_eq(ft__launch_lost_end(M), 1);
}
END_TEST

START_TEST(one_lost_no_spare_shrinks) {
  /* regroup: no spare, shrink to the survivors; build_mpirun lowers the code */
  ft__launch_config_t c = placed("h1 h2 h3 h4", NULL, 0, 1);
  c.ec_k = 3, c.ec_m = 1;
  make(&c);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, "h3", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h4", 3); /* the host mpirun named is not probed */
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h3");
  say("restart 1 of 1: attempt failed with status 125; recovering");
  say("lost host(s): h3; no spare left: shrinking to 3 nodes");
  say_at("relaunching on 3 node(s): h1 h2 h4; its SMPs rebuild first "
         "(ft-restore --mode shrink's engine, in ft_init)");
  say("--ec 3+1 needs 4 nodes, 3 are left: the relaunch encodes with 2+1");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 2: mpirun started");
  const ft__launch_action_t *a = run("h1 h2 h4", REBUILD | HOLD);
  ck_assert_int_eq(a->mode, FT_LAUNCH_SHRINK);
  ck_assert_int_eq(a->ec_k, 2);
  ck_assert_int_eq(a->ec_m, 1);
  ck_assert_int_eq(a->nodes, 3);
  ended(0, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): h3 lost, shrunk to 3 nodes");
  leaves(0);
}
END_TEST

START_TEST(shrink_keeps_m_else_one_plus) {
  /* build_mpirun: m kept when m < n, else 1+(n-1); said under EC_NAME */
  ft__launch_config_t c = placed("h1 h2 h3", NULL, 0, 1);
  c.ec_k = 1, c.ec_m = 2, c.ec_name = "FT_EC_K=1 FT_EC_M=2", c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3", HOLD | PREP);
  ended(1, "h1", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h2 h3", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h1");
  say("restart 1 of 1: attempt failed with status 125; recovering");
  say("lost host(s): h1; no spare left: shrinking to 2 nodes");
  probe("h1", 1); /* named back: asked once before ft-restore */
  in_state(FT_LAUNCH_ASKING);
  probed("h1");
  say("FT_EC_K=1 FT_EC_M=2 needs 3 nodes, 2 are left: the relaunch encodes "
      "with 1+1");
  say_at("running ft-restore --mode shrink on 2 node(s): h2 h3");
  const ft__launch_action_t *a = run("h2 h3", RESTORE | HOLD);
  ck_assert_int_eq(a->ec_k, 1);
  ck_assert_int_eq(a->ec_m, 1);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY); /* 1+1 again: not said twice */
  say("restart 1 of 1: relaunching");
  say_at("attempt 2: mpirun started");
  run("h2 h3", 0);
}
END_TEST

START_TEST(restarts_exhausted) {
  /* run_with_restarts: "giving up after R restart(s)", the last status */
  make_placed("h1 h2", NULL, 0, 1);
  first_attempt("h1 h2", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("restart 1 of 1: attempt failed with status 1; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  relaunch_in_job(1, 1, 2, "h1 h2", "replace", HOLD);
  ended(1, NULL, OK_JOB); /* rebuilt, then the program failed again */
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: exit status 1");
  probe("h1 h2", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say_at("giving up after 1 restart(s)");
  say_at("done: exit status 1 after 1 restart(s): relaunched on the same "
         "hosts");
  leaves(1);
  ck_assert_int_eq(ft__launch_restarts_done(M), 1);
}
END_TEST

START_TEST(restarts_exhausted_on_this_host) {
  /* recover without hosts: no regroup, nothing recorded, no last line */
  make(&(ft__launch_config_t){.nodes = 2, .restarts = 2});
  first_attempt("", HOLD | PREP);
  for (int r = 1; r <= 2; r++) {
    char line[128];
    ended(7, NULL, r > 1 ? OK_JOB : 0);
    if (r > 1)
      expect(FT_LAUNCH_ACT_HELD);
    snprintf(line, sizeof(line), "attempt %d ended after 1.2 s: exit status 7",
             r);
    say_at(line);
    say("job failed: mpirun exit status 7");
    expect(FT_LAUNCH_ACT_MPIRUN_SAID);
    snprintf(line, sizeof(line),
             "restart %d of 2: attempt failed with status 7; recovering", r);
    say(line);
    say_at("relaunching on 2 node(s); its SMPs rebuild first (ft-restore "
           "--mode replace's engine, in ft_init)");
    expect(FT_LAUNCH_ACT_SUMMARY);
    snprintf(line, sizeof(line), "restart %d of 2: relaunching", r);
    say(line);
    snprintf(line, sizeof(line), "attempt %d: mpirun started", r + 1);
    say_at(line);
    /* FT_HOLD only until a relaunch that rebuilt has ended */
    run("", REBUILD | (r == 1 ? HOLD | PREP : 0));
  }
  ended(7, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 3 ended after 1.2 s: exit status 7");
  say("job failed: mpirun exit status 7");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say_at("giving up after 2 restart(s)");
  leaves(7);
}
END_TEST

START_TEST(second_loss_during_rebuild) {
  /* IN_JOB_FAILED: recover_apart finds the new loss, the next spare, then
   * named_back asks h2 once and ft-restore runs on its own */
  make_placed("h1 h2 h3 h4", "s1 s2", 2, 2);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  h2_named_lost("h1 h3 h4", 2);
  probe("s1 s2", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  relaunch_in_job(1, 2, 2, "h1 s1 h3 h4", "replace", HOLD | PREP);
  ended(1, NULL, 0); /* no restore line: the rebuild was not done */
  say_at("attempt 2 ended after 1.2 s: exit status 1");
  probe("h1 s1 h3 h4", 3);
  probed("h3");
  say_at("job failed; host(s) of the job cannot run a command (" PW "): h3");
  say("restart 1 of 2: the relaunch ended (status 125) before its rebuild "
      "was done: running ft-restore on its own");
  probe("s2", 3);
  probed(NULL);
  say("lost host(s): h3; replacing them with spare(s) s2");
  probe("h2", 1);
  probed("h2");
  say_at("running ft-restore --mode replace on 4 node(s): h1 s1 s2 h4");
  run("h1 s1 s2 h4", RESTORE | PREP); /* FT_HOLD spent by the relaunch */
  in_state(FT_LAUNCH_RESTORING);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 2: relaunching");
  say_at("attempt 3: mpirun started");
  const ft__launch_action_t *a = run("h1 s1 s2 h4", PREP);
  ck_assert_int_eq(a->recovery, 1);
  ended(0, NULL, FT_LAUNCH_ACCOUNTED);
  ck_assert_int_eq(expect(FT_LAUNCH_ACT_HELD)->recovery, 1);
  say_at("attempt 3 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): h2 -> s1; h3 -> s2");
  leaves(0);
  ck_assert_int_eq(ft__launch_spares_left(M), 0);
  ck_assert_int_eq(ft__launch_restarts_done(M), 1);
}
END_TEST

START_TEST(named_back_once) {
  /* named_back: a host that answers again is put back, the regroup redone;
   * each host once a launch */
  ft__launch_config_t c = placed("h1 h2 h3", "s1", 1, 3);
  c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3", HOLD | PREP);
  h2_named_lost("h1 h3", 3);
  probe("s1", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  ck_assert_int_eq(ft__launch_spares_left(M), 0);
  probe("h2", 1);
  probed(NULL); /* h2 answers */
  say_at("mpirun lost its daemon on h2, but 1 host(s) answer 'ssh HOST true' "
         "now: putting them back in the job");
  say("every host taken as lost answers: relaunching on the same hosts");
  say_at("running ft-restore --mode replace on 3 node(s): h1 h2 h3");
  run("h1 h2 h3", RESTORE | HOLD | PREP);
  ck_assert_int_eq(ft__launch_spares_left(M), 1); /* s1 not spent */
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 3: relaunching");
  say_at("attempt 2: mpirun started");
  run("h1 h2 h3", PREP);
  ended(1, "h2", FT_LAUNCH_ACCOUNTED); /* h2 goes again */
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: exit status 1");
  probe("h1 h3", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h2");
  say("restart 2 of 3: attempt failed with status 125; recovering");
  probe("s1", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  /* h2 was put back once: not asked again */
  say_at("running ft-restore --mode replace on 3 node(s): h1 s1 h3");
  run("h1 s1 h3", RESTORE | PREP);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 2 of 3: relaunching");
  say_at("attempt 3: mpirun started");
  ck_assert_int_eq(run("h1 s1 h3", PREP)->recovery, 2);
  ended(0, NULL, FT_LAUNCH_ACCOUNTED);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 3 ended after 1.2 s: success");
  say_at("done: success after 2 restart(s): relaunched on the same hosts (h2 "
         "put back); h2 -> s1");
  leaves(0);
}
END_TEST

START_TEST(named_back_partly) {
  /* named_back: those that answer are put back, the others stay lost, and
   * the regroup is redone with the spares as the restart found them */
  ft__launch_config_t c = placed("h1 h2 h3 h4", "s1 s2 s3", 3, 1);
  c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, "h2 h3", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h4", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h2 h3");
  say("restart 1 of 1: attempt failed with status 125; recovering");
  probe("s1 s2 s3", 3);
  probed(NULL);
  say("lost host(s): h2 h3; replacing them with spare(s) s1 s2");
  probe("h2 h3", 1);
  probed("h2"); /* h3 answers, h2 does not */
  say_at("mpirun lost its daemon on h3, but 1 host(s) answer 'ssh HOST true' "
         "now: putting them back in the job");
  probe("s1 s2 s3", 3);
  probed("s1");
  say("lost host(s): h2; replacing them with spare(s) s2");
  say_at("running ft-restore --mode replace on 4 node(s): h1 s2 h3 h4");
  run("h1 s2 h3 h4", RESTORE | HOLD);
  ck_assert_int_eq(ft__launch_spares_left(M), 2);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 2: mpirun started");
  run("h1 s2 h3 h4", 0);
  ended(0, NULL, FT_LAUNCH_ACCOUNTED);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): h2 -> s2");
  leaves(0);
}
END_TEST

START_TEST(named_back_spares_spent_stay_spent) {
  /* named_back: a spare given up since the restart began stays spent and
   * given up; the spare it replaced is free again */
  make_placed("h1 h2 h3 h4", "s1 s2 s3", 3, 1);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  h2_named_lost("h1 h3 h4", 1);
  probe("s1 s2 s3", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  relaunch_in_job(1, 1, 2, "h1 s1 h3 h4", "replace", HOLD);
  ended(1, NULL, 0); /* before its rebuild: s1 lost */
  say_at("attempt 2 ended after 1.2 s: exit status 1");
  probe("h1 s1 h3 h4", 3);
  probed("s1");
  say_at("job failed; host(s) of the job cannot run a command (" PW "): s1");
  say("restart 1 of 1: the relaunch ended (status 125) before its rebuild "
      "was done: running ft-restore on its own");
  probe("s2 s3", 3);
  probed(NULL);
  say("lost host(s): s1; replacing them with spare(s) s2");
  ck_assert_int_eq(ft__launch_spares_left(M), 1);
  probe("h2", 1);
  probed(NULL);
  say_at("mpirun lost its daemon on h2, but 1 host(s) answer 'ssh HOST true' "
         "now: putting them back in the job");
  say("every host taken as lost answers: relaunching on the same hosts");
  say_at("running ft-restore --mode replace on 4 node(s): h1 h2 h3 h4");
  run("h1 h2 h3 h4", RESTORE);
  ck_assert_int_eq(ft__launch_spares_left(M), 2);
  const char *cand[4];
  ck_assert_int_eq(ft__launch_candidates(M, cand, 4), 2);
  ck_assert_str_eq(cand[0], "s2");
  ck_assert_str_eq(cand[1], "s3");
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 3: mpirun started");
  run("h1 h2 h3 h4", 0);
  ended(0, NULL, FT_LAUNCH_ACCOUNTED);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 3 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): relaunched on the same hosts (h2 "
         "put back)");
  leaves(0);
}
END_TEST

START_TEST(broken_probe) {
  /* regroup: every host failing the probe is refused (>1 host); the pending
   * restart probes again, then gives up with status 1 */
  make_placed("h1 h2 h3", "s1", 1, 2);
  first_attempt("h1 h2 h3", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3", 3);
  probed("h1 h2 h3");
  say_at("job failed; host(s) of the job cannot run a command (" PW
         "): h1 h2 h3");
  say("restart 1 of 2: attempt failed with status 125; recovering");
  say("every host of the job failed the probe (" PW
      "): none is left to recover on; is the probe right (--probe)?");
  say("restart 2 of 2: attempt failed with status 1; recovering");
  probe("h1 h2 h3", 3);
  probed("h1 h2 h3");
  say("every host of the job failed the probe (" PW
      "): none is left to recover on; is the probe right (--probe)?");
  say_at("giving up after 2 restart(s)");
  leaves(1); /* nothing recovered: no last line */
  const char *h[4];
  ck_assert_int_eq(ft__launch_hosts(M, h, 4), 3);
}
END_TEST

START_TEST(every_host_named_lost) {
  /* regroup refused with no probe (mpirun named every host): each restart
   * at once, --restarts of them, with no event between */
  make_placed("h1 h2", NULL, 0, 40);
  first_attempt("h1 h2", HOLD | PREP);
  ended(1, "h1 h2", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h1 h2");
  for (int r = 1; r <= 40; r++) {
    char line[128];
    snprintf(line, sizeof(line),
             "restart %d of 40: attempt failed with status %d; recovering", r,
             r == 1 ? 125 : 1);
    say(line);
    say("every host of the job failed the probe ('ssh HOST true' failed 3 "
        "times): none is left to recover on; is the probe right (--probe)?");
  }
  say_at("giving up after 40 restart(s)");
  leaves(1);
  ck_assert_int_eq(ft__launch_restarts_done(M), 40);
}
END_TEST

START_TEST(signal_during_recovery) {
  /* on_signal: the held account, "interrupted: ending the job", 130/143/129 */
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  static const int codes[] = {130, 143, 129};
  for (int i = 0; i < 3; i++) {
    make_placed("h1 h2 h3", "s1", 1, 2);
    first_attempt("h1 h2 h3", HOLD | PREP);
    if (i == 2) {
      sig(sigs[i]); /* while the job runs */
    } else {
      ended(1, "h2", 0);
      say_at("attempt 1 ended after 1.2 s: exit status 1");
      probe("h1 h3", 3);
      if (i == 1) { /* while the free spares are probed */
        probed(NULL);
        QI = QN;
        in_state(FT_LAUNCH_REGROUPING);
      }
      sig(sigs[i]); /* INT: while the lost hosts are probed */
    }
    expect(FT_LAUNCH_ACT_HELD);
    say("interrupted: ending the job");
    leaves(codes[i]);
    in_state(FT_LAUNCH_INTERRUPTED);
    ft__launch_event_t ev = {.kind = FT_LAUNCH_EV_SIGNAL, .signo = SIGTERM};
    ck_assert_int_eq(ft__launch_event(M, &ev), FT_ESTATE);
    teardown();
  }
}
END_TEST

START_TEST(signal_drops_unread_actions) {
  /* on_signal interrupts whatever ft-launch was doing */
  make_placed("h1 h2", NULL, 0, 1);
  ck_assert_int_eq(
      ft__launch_event(M, &(ft__launch_event_t){.kind = FT_LAUNCH_EV_START}),
      FT_OK);
  ft__launch_event_t ev = {.kind = FT_LAUNCH_EV_SIGNAL, .signo = SIGINT};
  ck_assert_int_eq(ft__launch_event(M, &ev), FT_OK);
  ft__launch_action_t a;
  ck_assert_int_eq(ft__launch_action(M, &a), 1);
  ck_assert_int_eq(a.kind, FT_LAUNCH_ACT_HELD);
  ck_assert_int_eq(ft__launch_action(M, &a), 1);
  ck_assert_str_eq(a.text, "interrupted: ending the job");
  ck_assert_int_eq(ft__launch_action(M, &a), 1);
  ck_assert_int_eq(a.code, 130);
  ck_assert_int_eq(ft__launch_action(M, &a), 0);
}
END_TEST

START_TEST(spares_exhausted_midway) {
  /* free_spares: at most --spares of them; none left: shrink */
  ft__launch_config_t c = placed("h1 h2 h3 h4", "s1 s2", 1, 2);
  c.ec_k = 3, c.ec_m = 1;
  make(&c);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  h2_named_lost("h1 h3 h4", 2);
  probe("s1 s2", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  relaunch_in_job(1, 2, 2, "h1 s1 h3 h4", "replace", HOLD | PREP);
  const char *cand[4];
  ck_assert_int_eq(ft__launch_candidates(M, cand, 4), 0);
  ended(1, "h4", OK_JOB); /* rebuilt, then h4 lost */
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: exit status 1");
  probe("h1 s1 h3", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h4");
  say("restart 2 of 2: attempt failed with status 125; recovering");
  /* s2 is free, but --spares 1 is spent: no probe */
  say("lost host(s): h4; no spare left: shrinking to 3 nodes");
  say_at("relaunching on 3 node(s): h1 s1 h3; its SMPs rebuild first "
         "(ft-restore --mode shrink's engine, in ft_init)");
  say("--ec 3+1 needs 4 nodes, 3 are left: the relaunch encodes with 2+1");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 2 of 2: relaunching");
  say_at("attempt 3: mpirun started");
  run("h1 s1 h3", REBUILD);
  ended(0, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 3 ended after 1.2 s: success");
  say_at("done: success after 2 restart(s): h2 -> s1; h4 lost, shrunk to 3 "
         "nodes");
  leaves(0);
  ck_assert_int_eq(ft__launch_spares_left(M), 0);
}
END_TEST

/* A requeued Slurm run with a node number no store holds (restore_first):
 * ft-restore on the stores' order before attempt 1, without FT_HOLD
 * (attempt 1's). */
static void restore_first_with(const char *pool, int spares, int restarts,
                               int restore_job) {
  ft__launch_config_t c = placed("h1 h2 s1 h4", pool, spares, restarts);
  c.slurm = 1, c.probe = "srun -N1 -n1 --overlap -w", c.restore_first = 1;
  c.ec_k = 3, c.ec_m = 1, c.restore_job = restore_job;
  make(&c);
  start();
  say_at("running ft-restore --mode replace on 4 node(s): h1 h2 s1 h4");
  const ft__launch_action_t *a = run("h1 h2 s1 h4", RESTORE);
  ck_assert_int_eq(a->mode, FT_LAUNCH_REPLACE);
  ck_assert_int_eq(a->ec_k, 3);
  ck_assert_int_eq(a->ec_m, 1);
  ck_assert_int_eq(a->attempt, 0);
  in_state(FT_LAUNCH_RESTORING);
}

static void restore_first(const char *pool, int spares, int restarts) {
  restore_first_with(pool, spares, restarts, 0);
}

START_TEST(restore_first_then_attempt) {
  /* ft-restore ended well: attempt 1 as a first attempt (FT_HOLD, the
   * spares prepared, no recovery's account), no restart counted */
  restore_first("s2", 1, 1);
  ended(0, NULL, OK_JOB);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say_at("attempt 1: mpirun started");
  const ft__launch_action_t *a = run("h1 h2 s1 h4", HOLD | PREP);
  ck_assert_int_eq(a->attempt, 1);
  ck_assert_int_eq(a->recovery, 0);
  in_state(FT_LAUNCH_RUNNING);
  ck_assert_int_eq(ft__launch_restarts_done(M), 0);
  ck_assert_int_eq(ft__launch_lost_end(M), 0);
}
END_TEST

START_TEST(restore_first_signal) {
  /* a signal while it runs ends ft-launch with 128 + N */
  restore_first("s2", 1, 1);
  sig(SIGTERM);
  expect(FT_LAUNCH_ACT_HELD);
  say("interrupted: ending the job");
  leaves(128 + SIGTERM);
  ck_assert_int_eq(ft__launch_lost_end(M), 0);
}
END_TEST

START_TEST(restore_first_verdict_recovers) {
  /* the watchdog's verdict ends it (124), and the restart loop mends the
   * loss: s2 replaces the silent host, rebuilt in the relaunch */
  restore_first("s2", 1, 1);
  unreachable("s1", 31000, 0);
  say("Slurm has reported host s1 down or not responding for 31 s (timeout "
      "60 s): ending the job");
  expect(FT_LAUNCH_ACT_END);
  ended(137, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 124");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore ended by the watchdog: a host of it became unreachable");
  say("restart 1 of 1: ft-restore failed with status 124; recovering");
  probe("h1 h2 s1 h4", 3);
  probed("s1");
  probe("s2", 3);
  probed(NULL);
  say("lost host(s): s1; replacing them with spare(s) s2");
  /* the program's first run: FT_HOLD is its */
  relaunch_in_job(1, 1, 1, "h1 h2 s2 h4", "replace", HOLD);
}
END_TEST

START_TEST(restore_first_lost_no_restart) {
  /* without a restart, ft-restore's 4 is ft-launch's, a loss (requeued) */
  restore_first(NULL, 0, 0);
  ended(4, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 4");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore stopped: a host of it fell silent (exit 4)");
  leaves(4);
  ck_assert_int_eq(ft__launch_lost_end(M), 1);
}
END_TEST

START_TEST(restore_first_restore_job_restart) {
  /* a failed ft-restore before attempt 1 is a restart's failure: with
   * --restore-job the restart's own ft-restore follows, then its relaunch
   * ("restart 1 of 1: relaunching", a recovery's account) */
  restore_first_with("s2", 1, 1, 1);
  ended(4, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 4");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore stopped: a host of it fell silent (exit 4)");
  say("restart 1 of 1: ft-restore failed with status 4; recovering");
  probe("h1 h2 s1 h4", 3);
  probed("s1");
  probe("s2", 3);
  probed(NULL);
  say("lost host(s): s1; replacing them with spare(s) s2");
  say_at("running ft-restore --mode replace on 4 node(s): h1 h2 s2 h4");
  run("h1 h2 s2 h4", RESTORE | HOLD);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 1: mpirun started");
  /* FT_HOLD was the restart's ft-restore's, the program's first run */
  const ft__launch_action_t *a = run("h1 h2 s2 h4", 0);
  ck_assert_int_eq(a->recovery, 1);
  ck_assert_int_eq(ft__launch_restarts_done(M), 1);
}
END_TEST

START_TEST(shrunk_requeue_lowers_code) {
  /* a job that shrank from 4 nodes under --ec 3+1 and was requeued onto
   * its 3 stores' nodes encodes with 2+1, as its shrink did */
  ft__launch_config_t c = placed("h1 h2 h4", "s1", 1, 1);
  c.slurm = 1, c.probe = "srun -N1 -n1 --overlap -w";
  c.ec_k = 3, c.ec_m = 1, c.shrunk = 1;
  make(&c);
  start();
  say("--ec 3+1 needs 4 nodes, 3 are left: the relaunch encodes with 2+1");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say_at("attempt 1: mpirun started");
  const ft__launch_action_t *a = run("h1 h2 h4", HOLD | PREP);
  ck_assert_int_eq(a->ec_k, 2);
  ck_assert_int_eq(a->ec_m, 1);
}
END_TEST

START_TEST(restore_daemon_lost_is_a_loss) {
  /* mpirun loses its daemon on s1 during ft-restore, no restart left:
   * a loss (125, requeued), as in an attempt */
  restore_first(NULL, 0, 0);
  ended(1, "s1", 0);
  say_at("ft-restore ended after 1.2 s: exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore failed (exit 1): mpirun lost its daemon on s1");
  leaves(125);
  ck_assert_int_eq(ft__launch_lost_end(M), 1);
}
END_TEST

/* ft-restore's mpirun ends with 0 but lost its daemon on s1: no restore
 * (its ranks may not have ended), a loss as with a failed status. */
START_TEST(restore_daemon_lost_status_0) {
  restore_first(NULL, 0, 0);
  ended(0, "s1", 0);
  say_at("ft-restore ended after 1.2 s: exit status 0, but mpirun lost a "
         "daemon: not a success");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore failed (exit 0): mpirun lost its daemon on s1");
  leaves(125);
  ck_assert_int_eq(ft__launch_lost_end(M), 1);
}
END_TEST

START_TEST(restore_says_3) {
  /* restore_apart: exit 3 ends the launch at once, restarts left or not */
  ft__launch_config_t c = placed("h1 h2 h3 h4", "s1", 1, 2);
  c.ec_k = 3, c.ec_m = 1, c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3 h4", 3);
  probed("h2 h3");
  say_at("job failed; host(s) of the job cannot run a command (" PW "): h2 h3");
  say("restart 1 of 2: attempt failed with status 125; recovering");
  probe("s1", 3);
  probed(NULL);
  say("lost host(s): h2 h3; no spare left: shrinking to 2 nodes");
  say("--ec 3+1 needs 4 nodes, 2 are left: the relaunch encodes with 1+1");
  say_at("running ft-restore --mode shrink on 2 node(s): h1 h4");
  ck_assert_int_eq(run("h1 h4", RESTORE | HOLD | PREP)->mode, FT_LAUNCH_SHRINK);
  ended(3, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 3");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore: too many losses, the job cannot be recovered (exit 3)");
  say_at("done: exit status 3 after 1 restart(s): h2 h3 lost, shrunk to 2 "
         "nodes");
  leaves(3);
  ck_assert_int_eq(ft__launch_restarts_done(M), 1);
}
END_TEST

/* Up to ft-restore on h1 s1 h3, h2 lost and replaced by s1. */
static void lose_h2_restore_apart(const char *pool, int spares) {
  ft__launch_config_t c = placed("h1 h2 h3", pool, spares, 1);
  c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3", HOLD | PREP);
  h2_named_lost("h1 h3", 1);
  probe(pool, 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  probe("h2", 1);
  probed("h2");
  say_at("running ft-restore --mode replace on 3 node(s): h1 s1 h3");
  run("h1 s1 h3", RESTORE | HOLD);
}

START_TEST(restore_says_5_next_spare) {
  /* next_spare: the spare without room given up, the next takes its place,
   * RECOVERED rewritten */
  lose_h2_restore_apart("s1 s2", 2);
  ended_full(5, NULL, 0, "s1");
  say_at("ft-restore ended after 1.2 s: exit status 5");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  probe("s2", 3);
  probed(NULL);
  say("spare s1 has no room for the store of the node it replaces "
      "(ft-restore exit 5): given up; s2 takes its place");
  say_at("running ft-restore --mode replace on 3 node(s): h1 s2 h3");
  run("h1 s2 h3", RESTORE);
  ck_assert_int_eq(ft__launch_spares_left(M), 0);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 2: mpirun started");
  run("h1 s2 h3", 0);
  ended(0, NULL, FT_LAUNCH_ACCOUNTED);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: success");
  say_at("done: success after 1 restart(s): h2 -> s2");
  leaves(0);
}
END_TEST

START_TEST(restore_says_5_no_spare) {
  /* restore_apart: exit 5 without a free spare ends the launch with 5 */
  lose_h2_restore_apart("s1", 1);
  ended_full(5, NULL, 0, "s1");
  say_at("ft-restore ended after 1.2 s: exit status 5");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore: a store of the job has no room (exit 5): not restarting; "
      "make room on the host it names (or leave that host out) and run again");
  say_at("done: exit status 5 after 1 restart(s): h2 -> s1");
  leaves(5);
}
END_TEST

START_TEST(restore_says_5_survivor) {
  /* next_spare: a survivor's store without room gives nothing up */
  lose_h2_restore_apart("s1 s2", 2);
  ended_full(5, NULL, 0, "h3");
  say_at("ft-restore ended after 1.2 s: exit status 5");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore: a store of the job has no room (exit 5): not restarting; "
      "make room on the host it names (or leave that host out) and run again");
  say_at("done: exit status 5 after 1 restart(s): h2 -> s1");
  leaves(5);
  ck_assert_int_eq(ft__launch_spares_left(M), 1);
}
END_TEST

/* A relaunch that fails at once, before its rebuild: ft-restore apart,
 * then the relaunch after it fails at once too. */
static void refused_round(int r, int attempt, unsigned prep) {
  char line[256];
  ended(1, NULL, 0);
  snprintf(line, sizeof(line), "attempt %d ended after 1.2 s: exit status 1",
           attempt);
  say_at(line);
  probe("h1 h2 h3", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  snprintf(line, sizeof(line),
           "restart %d of 2: the relaunch ended (status 1) before its "
           "rebuild was done: running ft-restore on its own",
           r);
  say(line);
  say_at("running ft-restore --mode replace on 3 node(s): h1 h2 h3");
  run("h1 h2 h3", RESTORE | prep);
  ended(0, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  expect(FT_LAUNCH_ACT_SUMMARY);
  snprintf(line, sizeof(line), "restart %d of 2: relaunching", r);
  say(line);
  snprintf(line, sizeof(line), "attempt %d: mpirun started", attempt + 1);
  say_at(line);
  ck_assert_int_eq(run("h1 h2 h3", prep)->recovery, r);
  ended(1, NULL, 0); /* at once again: no account */
  ck_assert_int_eq(expect(FT_LAUNCH_ACT_HELD)->recovery, r);
  snprintf(line, sizeof(line),
           "recovery %d: the relaunch ended before every trainer's state was "
           "restored: no account",
           r);
  say(line);
  ck_assert_int_eq(expect(FT_LAUNCH_ACT_STAMPS)->recovery, r);
  snprintf(line, sizeof(line), "attempt %d ended after 1.2 s: exit status 1",
           attempt + 1);
  say_at(line);
  probe("h1 h2 h3", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
}

START_TEST(relaunch_refused) {
  /* run_with_restarts: IN_JOB_FAILED, recover_apart, end_of_recovery's "no
   * account", until the restarts are spent */
  make_placed("h1 h2 h3", NULL, 0, 2);
  first_attempt("h1 h2 h3", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("restart 1 of 2: attempt failed with status 1; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  relaunch_in_job(1, 2, 2, "h1 h2 h3", "replace", HOLD | PREP);
  refused_round(1, 2, PREP);
  say("restart 2 of 2: attempt failed with status 1; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  relaunch_in_job(2, 2, 4, "h1 h2 h3", "replace", 0);
  refused_round(2, 4, 0);
  say_at("giving up after 2 restart(s)");
  say_at("done: exit status 1 after 2 restart(s): relaunched on the same "
         "hosts; relaunched on the same hosts");
  leaves(1);
}
END_TEST

START_TEST(restore_fails_pending) {
  /* restore_apart: exit 4 leaves a pending restart that probes again, the
   * hosts that ft-restore's mpirun named taken as lost */
  ft__launch_config_t c = placed("h1 h2 h3", "s1 s2", 2, 2);
  c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3", HOLD | PREP);
  ended(1, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("restart 1 of 2: attempt failed with status 1; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  say_at("running ft-restore --mode replace on 3 node(s): h1 h2 h3");
  run("h1 h2 h3", RESTORE | HOLD | PREP);
  ended(4, "h3", 0);
  say_at("ft-restore ended after 1.2 s: exit status 4");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore stopped: a host of it fell silent (exit 4)");
  say("restart 2 of 2: attempt failed with status 4; recovering");
  probe("h1 h2", 3);
  probed(NULL);
  probe("s1 s2", 3);
  probed("s1");
  say("lost host(s): h3; replacing them with spare(s) s2");
  probe("h3", 1);
  probed("h3");
  say_at("running ft-restore --mode replace on 3 node(s): h1 h2 s2");
  run("h1 h2 s2", RESTORE);
  ended(1, NULL, 0); /* another failure: exit 1 */
  say_at("ft-restore ended after 1.2 s: exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore failed (exit 1)");
  say_at("giving up after 2 restart(s)");
  say_at("done: exit status 1 after 2 restart(s): relaunched on the same "
         "hosts; h3 -> s2");
  leaves(1);
}
END_TEST

START_TEST(watchdog_verdict) {
  /* watchdog_ends: its line, mpirun ended, the attempt's status 124; the
   * next restart looks for the lost hosts */
  make_placed("h1 h2 h3", NULL, 0, 1);
  first_attempt("h1 h2 h3", HOLD | PREP);
  unreachable("h3", 61500, 0);
  say("host h3 cannot run a command for 62 s (" PW
      "; timeout 60 s): ending the job");
  expect(FT_LAUNCH_ACT_END);
  unreachable("h2", 70000, 0); /* judged once */
  in_state(FT_LAUNCH_RUNNING);
  ended(0, NULL, 0); /* a verdict stands even over a status 0 */
  say_at("attempt 1 ended after 1.2 s: success");
  say("restart 1 of 1: attempt failed with status 124; recovering");
  probe("h1 h2 h3", 3);
  probed("h3");
  say("lost host(s): h3; no spare left: shrinking to 2 nodes");
  relaunch_in_job(1, 1, 2, "h1 h2", "shrink", HOLD);
}
END_TEST

START_TEST(watchdog_on_cluster_and_restore) {
  /* watch_cluster's line; run_restore: a failed ft-restore under a verdict
   * is 124, "ft-restore ended by the watchdog" */
  ft__launch_config_t c = placed("h1 h2 h3", "s1", 1, 1);
  c.cluster = 1, c.probe = NULL, c.timeout = "2", c.restore_job = 1;
  make(&c);
  first_attempt("h1 h2 h3", HOLD | PREP);
  unreachable("h2", 3100, FT_LAUNCH_PING_WAIT);
  say("host h2 unreachable for 4 s (timeout 2 s, a ping waits 3 s): ending "
      "the job");
  expect(FT_LAUNCH_ACT_END);
  ended(137, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 137");
  say("restart 1 of 1: attempt failed with status 124; recovering");
  probe("h1 h2 h3", 3);
  probed("h2");
  probe("s1", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  say_at("running ft-restore --mode replace on 3 node(s): h1 s1 h3");
  run("h1 s1 h3", RESTORE | HOLD);
  unreachable("h3", 2500, 0);
  say("host h3 unreachable for 3 s (timeout 2 s): ending the job");
  expect(FT_LAUNCH_ACT_END);
  ended(1, NULL, 0);
  say_at("ft-restore ended after 1.2 s: exit status 124");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("ft-restore ended by the watchdog: a host of it became unreachable");
  say_at("giving up after 1 restart(s)");
  say_at("done: exit status 124 after 1 restart(s): h2 -> s1");
  leaves(124);
}
END_TEST

START_TEST(cluster_lost_hosts) {
  /* report_lost_hosts on a cluster: said without a time stamp */
  ft__launch_config_t c = placed("h1 h2 h3", NULL, 0, 1);
  c.cluster = 1, c.probe = NULL;
  make(&c);
  first_attempt("h1 h2 h3", HOLD | PREP);
  ended(1, "h1", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h2 h3", 3);
  probed("h3");
  say("job failed; host(s) of the job unreachable (killed or partitioned): "
      "h1 h3");
}
END_TEST

START_TEST(named_and_probed_mixed) {
  /* report_lost_hosts: some named by mpirun, the others failing the probe */
  ft__launch_config_t c = placed("h1 h2 h3 h4", NULL, 0, 1);
  c.probe = "ssh -o BatchMode=yes", c.probe_tries = 1;
  make(&c);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, "h4 nowhere", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2 h3", 1);
  probed("h2");
  say_at("job failed; mpirun lost its daemon on h4, the others cannot run a "
         "command ('ssh -o BatchMode=yes HOST true' failed once): h2 h4");
}
END_TEST

/* A Slurm allocation: srun as the probe, Slurm's view asked first. */
#define SW                                                                  \
  "Slurm reports them down or not responding, or 'srun -N1 -n1 --overlap " \
  "-w HOST true' failed 3 times"

static void make_slurm(const char *hosts, const char *pool, int spares) {
  ft__launch_config_t c = placed(hosts, pool, spares, 1);
  c.slurm = 1, c.probe = "srun -N1 -n1 --overlap -w";
  make(&c);
}

START_TEST(slurm_names_the_lost) {
  /* the hosts Slurm reports lost as the run ended are the named ones
   * (mpirun's lost daemon was on any host: Slurm ended the step on all),
   * the others probed; then the spare takes the place of Slurm's host */
  make_slurm("h1 h2 h3 h4", "s1", 1);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(205, "h2", FT_LAUNCH_SLURM_NAMED);
  say_at("attempt 1 ended after 1.2 s: exit status 205");
  probe("h1 h3 h4", 3);
  probed(NULL);
  say_at("job failed; Slurm reports host(s) of the job down or not "
         "responding: h2");
  say("restart 1 of 1: attempt failed with status 125; recovering");
  probe("s1", 3);
  probed(NULL);
  say("lost host(s): h2; replacing them with spare(s) s1");
  relaunch_in_job(1, 1, 2, "h1 s1 h3 h4", "replace", HOLD);
}
END_TEST

START_TEST(slurm_named_and_probed) {
  /* some named by Slurm, another failing the probe; mpirun's naming, in the
   * same allocation, is said as mpirun's */
  make_slurm("h1 h2 h3 h4", NULL, 0);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(205, "h2", FT_LAUNCH_SLURM_NAMED);
  say_at("attempt 1 ended after 1.2 s: exit status 205");
  probe("h1 h3 h4", 3);
  probed("h3");
  say_at("job failed; Slurm reports h2 down or not responding, the others "
         "cannot run a command (" SW "): h2 h3");
  ck_assert_int_eq(ft__launch_lost_end(M), 1); /* a loss: a requeue may mend */
  teardown();
  make_slurm("h1 h2 h3", NULL, 0);
  first_attempt("h1 h2 h3", HOLD | PREP);
  ended(1, "h3", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h1 h2", 3);
  probed("h2");
  say_at("job failed; mpirun lost its daemon on h3, the others cannot run a "
         "command (" SW "): h2 h3");
}
END_TEST

START_TEST(slurm_watchdog_verdict) {
  /* in an allocation the watchdog judges on Slurm's view alone */
  make_slurm("h1 h2 h3", NULL, 0);
  first_attempt("h1 h2 h3", HOLD | PREP);
  unreachable("h3", 61500, 0);
  say("Slurm has reported host h3 down or not responding for 62 s (timeout "
      "60 s): ending the job");
  expect(FT_LAUNCH_ACT_END);
}
END_TEST

START_TEST(fresh_restore_and_flags) {
  /* FT_FRESH and FT_HOLD: the first attempt and the first ft-restore; the
   * fresh line of ft-restore: "the job starts afresh", then no account */
  ft__launch_config_t c = placed("h1 h2", NULL, 0, 1);
  c.restore_job = 1, c.fresh = 1;
  make(&c);
  first_attempt("h1 h2", FRESH | HOLD | PREP);
  ended(2, NULL, 0);
  say_at("attempt 1 ended after 1.2 s: exit status 2");
  probe("h1 h2", 3);
  probed(NULL);
  say("job failed: mpirun exit status 2");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("restart 1 of 1: attempt failed with status 2; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  say_at("running ft-restore --mode replace on 2 node(s): h1 h2");
  run("h1 h2", RESTORE | FRESH | HOLD);
  ended(0, NULL, FT_LAUNCH_FRESH);
  say_at("ft-restore ended after 1.2 s: exit status 0");
  say("recovery 1: nothing had been committed before the failure: the job "
      "starts afresh");
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 2: mpirun started");
  run("h1 h2", 0);
  ended(1, NULL, 0); /* no job line, but the fresh start said it all */
  expect(FT_LAUNCH_ACT_HELD);
  expect(FT_LAUNCH_ACT_STAMPS);
  say_at("attempt 2 ended after 1.2 s: exit status 1");
}
END_TEST

START_TEST(stamps) {
  /* TS[probed] after find_lost, TS[regrouped] after regroup */
  make_placed("h1 h2", "s1", 1, 1);
  first_attempt("h1 h2", HOLD | PREP);
  ended(1, NULL, 0);
  next_raw(); /* attempt 1 ended */
  ck_assert_int_eq(next_raw()->kind, FT_LAUNCH_ACT_PROBE);
  probed("h2");
  ck_assert_int_eq(next_raw()->point, FT_LAUNCH_PROBED);
  ck_assert_str_eq(next_raw()->text, "job failed; host(s) of the job cannot "
                                     "run a command (" PW "): h2");
  next_raw(); /* restart 1 of 1 */
  ck_assert_int_eq(next_raw()->kind, FT_LAUNCH_ACT_PROBE);
  probed(NULL);
  next_raw(); /* lost host(s) */
  ck_assert_int_eq(next_raw()->point, FT_LAUNCH_REGROUPED);
  ck_assert_uint_eq(next_raw()->flags, FT_LAUNCH_SAY_STAMP);
  QI = QN;
}
END_TEST

START_TEST(code_larger_than_job) {
  /* build_mpirun at plan time: bad_usage, exit 2; a tool run is not checked */
  ft__launch_config_t c = placed("h1 h2", NULL, 0, 1);
  c.ec_k = 3, c.ec_m = 1;
  make(&c);
  start();
  say_flags("--ec 3+1 needs at least 4 nodes, the job has 2",
            FT_LAUNCH_SAY_USAGE);
  leaves(2);
  teardown();
  c.one_per_node = 1;
  make(&c);
  first_attempt("h1 h2", HOLD);
  ck_assert_int_eq(Q[QN - 1].ec_k, 3);
}
END_TEST

START_TEST(last_line_mixes_restarts) {
  /* report_end: every restart's entry, joined by "; ", in order */
  make_placed("h1 h2 h3 h4", "s1 s2", 2, 3);
  first_attempt("h1 h2 h3 h4", HOLD | PREP);
  ended(1, "h1 h3", 0);
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe("h2 h4", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h1 h3");
  say("restart 1 of 3: attempt failed with status 125; recovering");
  probe("s1 s2", 3);
  probed(NULL);
  say("lost host(s): h1 h3; replacing them with spare(s) s1 s2");
  relaunch_in_job(1, 3, 2, "s1 h2 s2 h4", "replace", HOLD | PREP);
  ended(1, "h4", OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: exit status 1");
  probe("s1 h2 s2", 3);
  probed(NULL);
  say_at("job failed; mpirun lost its daemon on host(s) of the job (killed "
         "or partitioned): h4");
  say("restart 2 of 3: attempt failed with status 125; recovering");
  say("lost host(s): h4; no spare left: shrinking to 3 nodes");
  relaunch_in_job(2, 3, 3, "s1 h2 s2", "shrink", PREP);
  ended(1, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 3 ended after 1.2 s: exit status 1");
  probe("s1 h2 s2", 3);
  probed(NULL);
  say("job failed: mpirun exit status 1");
  expect(FT_LAUNCH_ACT_MPIRUN_SAID);
  say("restart 3 of 3: attempt failed with status 1; recovering");
  say("no host was lost (a process failed): relaunching on the same hosts");
  relaunch_in_job(3, 3, 4, "s1 h2 s2", "replace", 0);
  ended(0, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 4 ended after 1.2 s: success");
  say_at("done: success after 3 restart(s): h1 -> s1, h3 -> s2; h4 lost, "
         "shrunk to 3 nodes; relaunched on the same hosts");
  leaves(0);
}
END_TEST

/* NAMES[i]: a name of 63 bytes, h... for the job's hosts, s... for spares. */
static char NAMES[FT_LAUNCH_HOSTS_MAX][FT_LAUNCH_NAME_MAX];
static const char *NAMEV[FT_LAUNCH_HOSTS_MAX];

static void long_names(void) {
  for (int i = 0; i < FT_LAUNCH_HOSTS_MAX; i++) {
    snprintf(NAMES[i], sizeof(NAMES[i]), "%c%062d",
             i < FT_LAUNCH_HOSTS_MAX / 2 ? 'h' : 's', i);
    NAMEV[i] = NAMES[i];
  }
}

/* NAMEV[from..to) joined by sep. */
static void joined(char *out, size_t len, int from, int to, const char *sep) {
  size_t at = 0;
  for (int i = from; i < to; i++)
    at += (size_t)snprintf(out + at, len - at, "%s%s", i > from ? sep : "",
                           NAMEV[i]);
}

START_TEST(longest_lines) {
  /* no fixed table overflows: FT_LAUNCH_HOSTS_MAX names of 63 bytes, every
   * host but one lost at once and replaced by a spare, every line whole */
  enum { H = FT_LAUNCH_HOSTS_MAX / 2 };
  static char want[256 * 1024], list[128 * 1024], sp[128 * 1024];
  long_names();
  ft__launch_config_t c = placed(NULL, NULL, H, 1);
  c.hosts = NAMEV, c.nhosts = H, c.pool = NAMEV + H, c.npool = H;
  make(&c);
  joined(list, sizeof(list), 0, H, " ");
  first_attempt(list, HOLD | PREP);
  feed((ft__launch_event_t){.kind = FT_LAUNCH_EV_EXIT,
                            .status = 1,
                            .ms = 1234,
                            .hosts = NAMEV + 1,
                            .nhosts = H - 1});
  say_at("attempt 1 ended after 1.2 s: exit status 1");
  probe(NAMES[0], 3);
  probed(NULL);
  joined(list, sizeof(list), 1, H, " ");
  snprintf(want, sizeof(want),
           "job failed; mpirun lost its daemon on host(s) of the job (killed "
           "or partitioned): %s",
           list);
  say_at(want);
  say("restart 1 of 1: attempt failed with status 125; recovering");
  joined(sp, sizeof(sp), H, 2 * H, " ");
  probe(sp, 3);
  probed(NULL);
  joined(sp, sizeof(sp), H, 2 * H - 1, " ");
  snprintf(want, sizeof(want),
           "lost host(s): %s; replacing them with spare(s) %s", list, sp);
  say(want);
  snprintf(list, sizeof(list), "%s %s", NAMES[0], sp);
  snprintf(want, sizeof(want),
           "relaunching on %d node(s): %s; its SMPs rebuild first "
           "(ft-restore --mode replace's engine, in ft_init)",
           H, list);
  say_at(want);
  expect(FT_LAUNCH_ACT_SUMMARY);
  say("restart 1 of 1: relaunching");
  say_at("attempt 2: mpirun started");
  run(list, REBUILD | HOLD);
  ended(0, NULL, OK_JOB);
  expect(FT_LAUNCH_ACT_HELD);
  say_at("attempt 2 ended after 1.2 s: success");
  size_t at = (size_t)snprintf(want, sizeof(want),
                               "done: success after 1 restart(s): ");
  for (int i = 1; i < H; i++)
    at += (size_t)snprintf(want + at, sizeof(want) - at, "%s%s -> %s",
                           i > 1 ? ", " : "", NAMES[i], NAMES[H - 1 + i]);
  ck_assert_uint_gt(at, 64 * 1024);
  say_at(want);
  leaves(0);
  ck_assert_int_eq(ft__launch_spares_left(M), 1);
}
END_TEST

START_TEST(refusals) {
  /* events a state does not await, and configurations refused at init */
  make_placed("h1 h2", NULL, 0, 1);
  ft__launch_event_t exit_ev = {.kind = FT_LAUNCH_EV_EXIT};
  ft__launch_event_t probed_ev = {.kind = FT_LAUNCH_EV_PROBED};
  ft__launch_event_t start_ev = {.kind = FT_LAUNCH_EV_START};
  ck_assert_int_eq(ft__launch_event(M, &exit_ev), FT_ESTATE);
  ck_assert_int_eq(ft__launch_event(M, &(ft__launch_event_t){.kind = 99}),
                   FT_EINVAL);
  ck_assert_int_eq(
      ft__launch_event(M, &(ft__launch_event_t){.kind = FT_LAUNCH_EV_SIGNAL,
                                                .signo = SIGKILL}),
      FT_EINVAL);
  in_state(FT_LAUNCH_STARTING);
  ck_assert_int_eq(ft__launch_event(M, &start_ev), FT_OK);
  ck_assert_int_eq(ft__launch_event(M, &exit_ev), FT_ESTATE); /* unread */
  ft__launch_action_t a;
  while (ft__launch_action(M, &a))
    ;
  ck_assert_int_eq(ft__launch_event(M, &probed_ev), FT_ESTATE);
  ck_assert_int_eq(ft__launch_event(M, &start_ev), FT_ESTATE);
  in_state(FT_LAUNCH_RUNNING);
  teardown();

  ft__launch_t *m = NULL;
  ft__launch_config_t c = placed("h1 h2 h1", NULL, 0, 1);
  ck_assert_int_eq(ft__launch_init(&m, &c), FT_EINVAL); /* h1 twice */
  ck_assert_ptr_null(m);
  c = placed("h1 h2", NULL, 0, 1);
  c.probe = NULL;
  ck_assert_int_eq(ft__launch_init(&m, &c), FT_EINVAL); /* no probe */
  c = placed("h1 h2", NULL, 0, -1);
  ck_assert_int_eq(ft__launch_init(&m, &c), FT_EINVAL);
  char longname[80];
  memset(longname, 'x', 64);
  longname[64] = '\0';
  const char *bad[] = {longname};
  c = placed(NULL, NULL, 0, 1);
  c.hosts = bad, c.nhosts = 1;
  ck_assert_int_eq(ft__launch_init(&m, &c), FT_EINVAL);
  static char many[FT_LAUNCH_HOSTS_MAX + 8][8];
  static const char *names[FT_LAUNCH_HOSTS_MAX + 8];
  for (int i = 0; i < FT_LAUNCH_HOSTS_MAX + 8; i++) {
    snprintf(many[i], sizeof(many[i]), "n%d", i);
    names[i] = many[i];
  }
  c.hosts = names, c.nhosts = 600;
  c.pool = names + 600, c.npool = FT_LAUNCH_HOSTS_MAX - 600 + 1;
  ck_assert_int_eq(ft__launch_init(&m, &c), FT_ERANGE);
  c.npool--; /* FT_LAUNCH_HOSTS_MAX names: the most */
  ck_assert_int_eq(ft__launch_init(&m, &c), FT_OK);
  ft__launch_destroy(m);
}
END_TEST

START_TEST(spares_text_and_candidates) {
  /* summary's spares_left and spare_candidates for plan_prepare */
  make_placed("h1 h2", "s1 s2 s3", 2, 1);
  char buf[128];
  ft__launch_machine_spares(M, buf, sizeof(buf));
  ck_assert_str_eq(buf, "spares: up to 2 of s1 s2 s3");
  const char *cand[4];
  ck_assert_int_eq(ft__launch_candidates(M, cand, 4), 2);
  ck_assert_str_eq(cand[0], "s1");
  ck_assert_str_eq(cand[1], "s2");
  ck_assert_int_eq(ft__launch_machine_spares(M, buf, 8), 27);
  ck_assert_str_eq(buf, "spares:");
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("machine");
  TCase *tc = tcase_create("machine");
  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, clean_run);
  tcase_add_test(tc, restore_first_then_attempt);
  tcase_add_test(tc, restore_first_signal);
  tcase_add_test(tc, restore_first_verdict_recovers);
  tcase_add_test(tc, restore_first_lost_no_restart);
  tcase_add_test(tc, restore_first_restore_job_restart);
  tcase_add_test(tc, shrunk_requeue_lowers_code);
  tcase_add_test(tc, restore_daemon_lost_is_a_loss);
  tcase_add_test(tc, restore_daemon_lost_status_0);
  tcase_add_test(tc, clean_run_without_restarts);
  tcase_add_test(tc, rank_failure_no_host_lost);
  tcase_add_test(tc, one_lost_with_spare);
  tcase_add_test(tc, lost_daemon_status_0_is_a_failure);
  tcase_add_test(tc, lost_daemon_status_0_no_restart);
  tcase_add_test(tc, one_lost_no_spare_shrinks);
  tcase_add_test(tc, shrink_keeps_m_else_one_plus);
  tcase_add_test(tc, restarts_exhausted);
  tcase_add_test(tc, restarts_exhausted_on_this_host);
  tcase_add_test(tc, second_loss_during_rebuild);
  tcase_add_test(tc, named_back_once);
  tcase_add_test(tc, named_back_partly);
  tcase_add_test(tc, named_back_spares_spent_stay_spent);
  tcase_add_test(tc, broken_probe);
  tcase_add_test(tc, every_host_named_lost);
  tcase_add_test(tc, signal_during_recovery);
  tcase_add_test(tc, signal_drops_unread_actions);
  tcase_add_test(tc, spares_exhausted_midway);
  tcase_add_test(tc, restore_says_3);
  tcase_add_test(tc, restore_says_5_next_spare);
  tcase_add_test(tc, restore_says_5_no_spare);
  tcase_add_test(tc, restore_says_5_survivor);
  tcase_add_test(tc, relaunch_refused);
  tcase_add_test(tc, restore_fails_pending);
  tcase_add_test(tc, watchdog_verdict);
  tcase_add_test(tc, watchdog_on_cluster_and_restore);
  tcase_add_test(tc, cluster_lost_hosts);
  tcase_add_test(tc, named_and_probed_mixed);
  tcase_add_test(tc, fresh_restore_and_flags);
  tcase_add_test(tc, stamps);
  tcase_add_test(tc, code_larger_than_job);
  tcase_add_test(tc, last_line_mixes_restarts);
  tcase_add_test(tc, longest_lines);
  tcase_add_test(tc, refusals);
  tcase_add_test(tc, spares_text_and_candidates);
  tcase_add_test(tc, slurm_names_the_lost);
  tcase_add_test(tc, slurm_named_and_probed);
  tcase_add_test(tc, slurm_watchdog_verdict);
  suite_add_tcase(s, tc);
  return s;
}
