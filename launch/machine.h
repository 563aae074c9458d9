/*
 * ft-launch's recovery logic as a state machine: the restart loop
 * (run_with_restarts and the steps it takes) without its side effects.
 * The driver feeds the machine events (mpirun ended, a host unreachable, a
 * probe's answer, a signal) and carries out the actions it returns: say a
 * line, start mpirun on a node set, probe hosts, end mpirun, exit.  The
 * machine does no I/O, reads no clock, allocates only in ft__launch_init,
 * and keeps no global: what a decision needs of time comes in with its
 * event (how long a run took, how long a host was silent).
 *
 * States: where the machine rests, awaiting one kind of event.
 *   STARTING     made, awaiting START
 *   RUNNING      an attempt's mpirun runs the program
 *   REBUILDING   a relaunch runs the program and its SMPs rebuild what was
 *                lost first, in ft_init (FT_REBUILD): the rebuild in the job
 *   FINDING      the job's hosts that mpirun did not name are probed
 *   REGROUPING   the free spares are probed: replace the lost hosts, or
 *                shrink to the survivors when too few answer
 *   ASKING       the hosts taken as lost on mpirun's word are probed once
 *                before ft-restore runs on its own (named back)
 *   RESTORING    ft-restore runs as a job of its own
 *   DONE         the program succeeded: exit 0
 *   GIVEN_UP     restarts spent, or a recovery that cannot go on: exit code
 *   INTERRUPTED  a signal: exit 128 + its number
 * "Failed" (an attempt or a recovery ended badly, the restart loop
 * decides), "recover" and "relaunching" are steps inside one transition,
 * written [failed] and so on below: the machine never waits there.
 *
 * Events (ft__launch_event_t): START; EXIT (the mpirun the machine asked
 * for ended: its status, and what its output said); UNREACHABLE (the
 * watchdog: a host of the running job silent past --timeout); PROBED (the
 * hosts of the last PROBE that failed it); SIGNAL (INT, TERM, HUP).
 *
 * Actions (ft__launch_action_t): SAY (a line, "ft-launch: " before it, and
 * the "[+1.2s] " time stamp where STAMP is set); SUMMARY (the node set's
 * lines of ft-launch's summary()); RUN (mpirun of the program, or of
 * ft-restore); END (end the running mpirun: TERM, KILL after 2 s); PROBE;
 * MPIRUN_SAID (the first banner mpirun wrote, mpirun_said()); HELD (the
 * recovery's account the output filter held back); STAMPS (the recovery's
 * stamps appended to --times); STAMP (the time of a point of the recovery);
 * EXIT (end what runs, leave with the code).
 *
 *   STARTING   --start-->       RUNNING     : SUMMARY, SAY attempt, RUN
 *   STARTING   --start-->       GIVEN_UP    : SAY (usage), EXIT 2  code > nodes
 *   STARTING   --start-->       RESTORING   : SAY running ft-restore, RUN
 *                                                       (restore_first)
 *   RUNNING    --unreachable--> RUNNING     : SAY the verdict, END (once a run)
 *   RUNNING    --exit 0-->      DONE        : SAY ended, [SAY done], EXIT 0
 *   (an exit 0 that names lost daemons, PRRTE's, is taken as status 125:
 *   RUNNING as below, RESTORING as its exit 125)
 *   RUNNING    --exit-->        [failed 124]: SAY ended         after a verdict
 *   RUNNING    --exit-->        FINDING     : SAY ended, PROBE the hosts
 *                                             mpirun did not name  (status > 0)
 *   RUNNING    --exit-->        [failed]    : SAY ended, SAY job failed,
 *                                             MPIRUN_SAID       (no host list)
 *   FINDING    --probed-->      [failed 125]: SAY the hosts lost
 *   FINDING    --probed-->      [failed]    : SAY job failed, MPIRUN_SAID
 *                                                               (none lost)
 *   REBUILDING --exit-->        [apart]     : SAY ended, ..., SAY the relaunch
 *                                             ended before its rebuild was
 *                                             done          (no restore line)
 *   REBUILDING --exit-->        as RUNNING                     (rebuilt)
 *   the exit of a recovery's relaunch begins with HELD, and with SAY no
 *   account and STAMPS when the job never said it was restored
 *   [failed]                    GIVEN_UP    : SAY giving up, [SAY done], EXIT
 *                                                          (restarts spent)
 *   [failed]                    [recover]   : SAY restart k of R: recovering
 *   [recover]                   [regroup]                 (the job has hosts)
 *   [recover]                   [regrouped]                   (this host's)
 *   [regroup]                   FINDING     : PROBE      (lost hosts not known)
 *   FINDING    --probed-->      [regroup]                (within a recovery)
 *   [regroup]                   [failed 1]  : SAY every host failed the probe
 *   [regroup]                   REGROUPING  : PROBE the free spares
 *   REGROUPING --probed-->      [regrouped] : SAY replacing, or SAY shrinking
 *   [regroup]                   [regrouped] : SAY relaunching on the same hosts
 *   [regrouped]                 REBUILDING  : SAY relaunching, SUMMARY, SAY
 *                                             restart relaunching, SAY attempt,
 *                                             RUN (FT_REBUILD)
 *   [regrouped]                 [apart]                  (--restore-job)
 *   [apart]                     FINDING, [regroup]     (hosts lost since)
 *   [apart]                     ASKING      : PROBE, 1 try (hosts named lost)
 *   [apart]                     RESTORING   : SAY running ft-restore, RUN
 *   ASKING     --probed-->      [regroup]   : SAY putting them back (answered)
 *   ASKING     --probed-->      RESTORING   : SAY running ft-restore, RUN
 *   RESTORING  --exit 0-->      RUNNING     : SAY ended, SUMMARY, SAY restart
 *                                             relaunching, SAY attempt, RUN
 *                                             (restore_first's: no restart)
 *   RESTORING  --exit 3-->      GIVEN_UP    : SAY ended, SAY, [SAY done], EXIT
 *   RESTORING  --exit 5-->      REGROUPING  : SAY ended, PROBE the free spares
 *                                             (a spare's store had no room)
 *   RESTORING  --exit 5-->      GIVEN_UP    : SAY ended, SAY no room, [SAY
 *                                             done], EXIT   (a survivor's)
 *   REGROUPING --probed-->      RESTORING   : SAY given up, SAY running, RUN
 *   REGROUPING --probed-->      GIVEN_UP    : SAY no room, [SAY done], EXIT 5
 *   RESTORING  --exit 4, 124, other--> [failed 4, 124, 1] : SAY ended, SAY why
 *                                   (125 when mpirun named lost daemons)
 *   any but the last three --signal--> INTERRUPTED : HELD, SAY, EXIT 128+N
 * [SAY done]: with --restarts, when the status is 0 or a restart did
 * something (report_end).
 *
 * Invariants:
 *   1. The actions read after an event end with at most one RUN, PROBE or
 *      EXIT, the last of them; the state then names the event that answers
 *      it (EXIT, PROBED; none after EXIT).  An event the state does not
 *      await is refused and changes nothing.
 *   2. The hosts are kept in rank order: a spare takes the place of the host
 *      it replaces, a shrink keeps the survivors' order.
 *   3. A host found lost is given up for the launch: never taken as a spare
 *      again.  Only named back returns one to the job, each host at most
 *      once a launch, and it redoes the restart's regroup from the state the
 *      restart began with (hosts, spares left, what was recorded as done).
 *   4. Spares left only decrease, but when named back undoes a regroup: then
 *      they are what they were when the restart began, less the spares given
 *      up since.
 *   5. Restarts done never exceed --restarts: a restart is counted once,
 *      whatever regroups and ft-restores it takes.
 *   6. The exit code is 0, the program's status, 1, 2, 3, 4, 5, 124, 125, or
 *      128 + the signal's number.
 *   7. An action's text and host list stay valid until the next call of
 *      ft__launch_action or ft__launch_event; the host names the accessors
 *      return, while the machine lives.
 */
#ifndef FT_LAUNCH_MACHINE_H
#define FT_LAUNCH_MACHINE_H

#include <stddef.h>
#include <stdint.h>

/* Names the machine knows, the job's hosts and the spares together (its
 * sets are flags and lists of 16-bit indexes, its searches linear). */
#define FT_LAUNCH_HOSTS_MAX 1024
/* A host name's bytes with its NUL (FT_NAME_MAX). */
#define FT_LAUNCH_NAME_MAX 64

typedef enum {
  FT_LAUNCH_STARTING = 0,
  FT_LAUNCH_RUNNING,
  FT_LAUNCH_REBUILDING,
  FT_LAUNCH_FINDING,
  FT_LAUNCH_REGROUPING,
  FT_LAUNCH_ASKING,
  FT_LAUNCH_RESTORING,
  FT_LAUNCH_DONE,
  FT_LAUNCH_GIVEN_UP,
  FT_LAUNCH_INTERRUPTED
} ft__launch_state_t;

typedef enum {
  FT_LAUNCH_EV_START = 1,
  FT_LAUNCH_EV_EXIT,
  FT_LAUNCH_EV_UNREACHABLE,
  FT_LAUNCH_EV_PROBED,
  FT_LAUNCH_EV_SIGNAL
} ft__launch_event_kind_t;

/* EXIT's flags, from the lines the output filter kept of that mpirun. */
#define FT_LAUNCH_REBUILT 1u   /* an ftrt-times restore or fresh line came */
#define FT_LAUNCH_ACCOUNTED 2u /* a job or fresh line came */
#define FT_LAUNCH_FRESH 4u     /* ft-restore's fresh line: nothing committed */
/* UNREACHABLE's flag: the cluster's watch judged after 3 s, more than
 * --timeout (a ping waits 3 s). */
#define FT_LAUNCH_PING_WAIT 8u
/* EXIT's flag, in a Slurm allocation: its hosts are those Slurm reports
 * down or not responding as the run ended, not mpirun's lost daemons. */
#define FT_LAUNCH_SLURM_NAMED 16u

typedef struct ft__launch_event {
  int kind;
  int status;  /* EXIT: mpirun's exit status */
  uint64_t ms; /* EXIT: the run's length, from its start to its teardown's
                  end; UNREACHABLE: how long the host was silent */
  /* EXIT: the hosts mpirun said it lost the daemon of (with
   * FT_LAUNCH_SLURM_NAMED, those Slurm reports lost); PROBED: the hosts
   * that failed the probe.  Names the machine does not know are ignored. */
  const char *const *hosts;
  int nhosts;
  const char *host; /* UNREACHABLE: the host; EXIT of ft-restore: the host
                       its "full" line named (a store without room), or NULL */
  unsigned flags;   /* FT_LAUNCH_REBUILT ... FT_LAUNCH_PING_WAIT */
  int signo;        /* SIGNAL: SIGINT, SIGTERM or SIGHUP */
} ft__launch_event_t;

typedef enum {
  FT_LAUNCH_ACT_SAY = 1,
  FT_LAUNCH_ACT_SUMMARY,
  FT_LAUNCH_ACT_RUN,
  FT_LAUNCH_ACT_END,
  FT_LAUNCH_ACT_PROBE,
  FT_LAUNCH_ACT_MPIRUN_SAID,
  FT_LAUNCH_ACT_HELD,
  FT_LAUNCH_ACT_STAMPS,
  FT_LAUNCH_ACT_STAMP,
  FT_LAUNCH_ACT_EXIT
} ft__launch_action_kind_t;

/* SAY's flags. */
#define FT_LAUNCH_SAY_STAMP 1u /* say_at: "[+S.ds] " after "ft-launch: " */
#define FT_LAUNCH_SAY_USAGE 2u /* "(ft-launch --help for usage)" follows */
/* RUN's flags. */
#define FT_LAUNCH_RUN_RESTORE 1u /* ft-restore --mode MODE, one rank a node */
#define FT_LAUNCH_RUN_REBUILD 2u /* FT_REBUILD=MODE: rebuild in ft_init */
#define FT_LAUNCH_RUN_FRESH 4u   /* FT_FRESH=1 (--fresh, until a rebuild) */
#define FT_LAUNCH_RUN_HOLD 8u    /* FT_HOLD of the environment kept */
/* Prepare the spares of ft__launch_candidates once the job commits. */
#define FT_LAUNCH_RUN_PREPARE 16u

typedef enum {
  FT_LAUNCH_REPLACE = 0, /* spares in the lost hosts' places, or none lost */
  FT_LAUNCH_SHRINK       /* the survivors only */
} ft__launch_mode_t;

/* STAMP's points (TS[probed], TS[regrouped] of ft-launch's account). */
typedef enum { FT_LAUNCH_PROBED = 1, FT_LAUNCH_REGROUPED } ft__launch_point_t;

typedef struct ft__launch_action {
  int kind;
  unsigned flags;   /* SAY: FT_LAUNCH_SAY_*; RUN: FT_LAUNCH_RUN_* */
  const char *text; /* SAY: the line, without "ft-launch: " nor a stamp */
  /* RUN: the node set in rank order (none: this host, nodes virtual
   * nodes); PROBE: the hosts to probe. */
  const char *const *hosts;
  int nhosts;
  int nodes;      /* RUN: NODES */
  int mode;       /* RUN: ft__launch_mode_t, for --mode, FT_REBUILD and the
                     account */
  int ec_k, ec_m; /* RUN: FT_EC_K, FT_EC_M (ec_k 0: no code given) */
  int attempt;    /* RUN of the program: its number, 1 first */
  int recovery;   /* RUN of the program: the recovery it relaunches, whose
                     account its filter says (0: none); HELD, STAMPS: the
                     recovery */
  int tries;      /* PROBE: tries a host gets (1, or the configured) */
  int point;      /* STAMP: ft__launch_point_t */
  int code;       /* EXIT: ft-launch's exit status */
} ft__launch_action_t;

typedef struct ft__launch_config {
  /* The job's hosts in rank order (none: this host, nodes virtual nodes),
   * and the spares in the order they are taken (a hostfile's, Slurm's, the
   * cluster's sN).  Copied: up to FT_LAUNCH_HOSTS_MAX names in all, each
   * 1-63 bytes without blanks. */
  const char *const *hosts;
  int nhosts;
  int nodes; /* with no hosts: --nodes */
  const char *const *pool;
  int npool;
  int spares;          /* --spares: at most this many may replace lost hosts */
  int restarts;        /* --restarts */
  int cluster;         /* an ft-cluster: its messages (a ping from the head) */
  int slurm;           /* a Slurm allocation whose view is asked first (sinfo):
                          its messages */
  const char *probe;   /* hostfile, Slurm: the probe's words, for messages */
  int probe_tries;     /* FT_PROBE_TRIES, >= 1 with a probe */
  const char *timeout; /* --timeout as ft-launch took it, for messages */
  int restore_job;     /* --restore-job */
  int one_per_node;    /* --one-per-node (no SMP: ft-restore apart) */
  int cold_spares;     /* --cold-spares */
  int fresh;           /* --fresh: FT_FRESH for the first attempt */
  /* A requeued Slurm run with node numbers no store holds (resume.h):
   * ft-restore --mode replace on the hosts before the first attempt, a
   * restart's ft-restore but for the restart (its failure is one). */
  int restore_first;
  /* The job's hosts are fewer than it was started on (a requeued job that
   * shrank before): the code lowered as a shrink lowers it. */
  int shrunk;
  int ec_k, ec_m;      /* --ec K+M (or FT_EC_K, FT_EC_M); ec_k 0: none */
  const char *ec_name; /* how the code was given, "FT_EC_K=3 FT_EC_M=1";
                          NULL: "--ec K+M" */
} ft__launch_config_t;

typedef struct ft__launch ft__launch_t;

/* A machine in STARTING for cfg (copied).  FT_EINVAL for a bad config (a
 * name empty, too long or with a blank; a negative count), FT_ERANGE past
 * FT_LAUNCH_HOSTS_MAX names or a text too long, FT_ENOMEM; *out is NULL
 * then. */
int ft__launch_init(ft__launch_t **out, const ft__launch_config_t *cfg);
void ft__launch_destroy(ft__launch_t *m);

/* Feed one event: the actions it decides are queued for ft__launch_action.
 * FT_ESTATE when the state does not await it, or actions of the last event
 * are unread (a SIGNAL drops them instead); FT_EINVAL for an unknown kind
 * or signal; FT_ERANGE should a queue ever overflow (a defect: no sequence
 * of events is known to).  A refused event changes nothing. */
int ft__launch_event(ft__launch_t *m, const ft__launch_event_t *ev);
/* The next action: 1 and *out, 0 when none is left (the machine awaits an
 * event, or has ended).  A restart's recovery is decided as the actions
 * before it have been read, so that a run of restarts refused without a
 * probe takes no event and no unbounded queue.  The state and the
 * accessors are the machine's once this returned 0. */
int ft__launch_action(ft__launch_t *m, ft__launch_action_t *out);

int ft__launch_state(const ft__launch_t *m);
/* In DONE, GIVEN_UP, INTERRUPTED: the exit status; -1 before. */
int ft__launch_exit_code(const ft__launch_t *m);
/* 1 when the last failure was a loss the machine judged (a lost host, the
 * watchdog's verdict, ft-restore's 4 or 124), 0 when it was the program's
 * own status or none: what a requeue may mend. */
int ft__launch_lost_end(const ft__launch_t *m);
int ft__launch_restarts_done(const ft__launch_t *m);
int ft__launch_spares_left(const ft__launch_t *m);
/* The job's hosts now, in rank order: up to max into out; their count. */
int ft__launch_hosts(const ft__launch_t *m, const char **out, int max);
/* The spares a recovery may take next, without asking them (not in the job,
 * not given up, at most spares left): the ones to prepare. */
int ft__launch_candidates(const ft__launch_t *m, const char **out, int max);
/* summary()'s "spares: up to S of A B" (spares not in the job; none on a
 * cluster, or with no spare left): "" else.  snprintf's return. */
int ft__launch_machine_spares(const ft__launch_t *m, char *buf, size_t len);

const char *ft__launch_state_name(int state);
const char *ft__launch_mode_name(int mode); /* "replace", "shrink" */

#endif
