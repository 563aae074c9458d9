/*
 * The machine of launch/machine.h.  Each function here is a step of the
 * restart loop; a step that needs an answer from the world (a probe, an
 * mpirun's end) queues the action that asks for it, notes in a
 * continuation where to go on (fl_then, rg_then, fs_then), and returns:
 * the answering event resumes there.  The nesting of the steps
 * (regroup inside recover, recover_apart or named_back; find_lost inside
 * an attempt's end, regroup or recover_apart; free_spares inside regroup or
 * next_spare) is these three continuations, each one deep.
 *
 * Hosts are indexes into a table of names made at init (the job's hosts,
 * then the spares), so that a set is a flag per name and a list an array
 * of indexes.  What each restart did (RECOVERED) is kept as
 * records of indexes, not text: a spare given up for another is rewritten
 * in place, and the last line is formatted once, at the end.
 *
 * Texts go into an arena reset whenever the queue is filled again; an
 * action's text points into it.  A text that would not fit ends in "..." (the
 * arena holds a launch's longest lines many times over; see ftl_text_cap).
 */
#include "launch/machine.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "ftrt.h"

#define FTL_QUEUE_MAX 64
#define FTL_PROBE_MAX 1024 /* the probe's words, with the NUL */
#define FTL_TIMEOUT_MAX 32
#define FTL_EC_NAME_MAX 128

typedef uint16_t ftl_id_t;

typedef struct {
  ftl_id_t id[FT_LAUNCH_HOSTS_MAX];
  int n;
} ftl_list_t;

/* What one restart's regroup did, an entry of the last line. */
enum { FTL_REPLACE = 1, FTL_SHRUNK, FTL_SAME, FTL_PUT_BACK };
typedef struct {
  uint8_t kind;
  uint32_t n;   /* REPLACE: pairs (lost, spare); SHRUNK, PUT_BACK: hosts;
                   SAME: entries (consecutive ones are one record) */
  uint32_t off; /* the first of its slots */
  int nodes;    /* SHRUNK: the nodes left */
} ftl_rec_t;

/* Continuations: where the answer of a probe resumes. */
enum { FTL_FL_REPORT = 1, FTL_FL_REGROUP, FTL_FL_APART };
enum { FTL_RG_RECOVER = 1, FTL_RG_APART, FTL_RG_NAMED };
enum { FTL_FS_REGROUP = 1, FTL_FS_NEXT };

struct ft__launch {
  /* The configuration. */
  int restarts, cluster, slurm, probe_tries, restore_job, one_per_node, cold;
  int restore_first;
  int ec_k, ec_m;
  char probe[FTL_PROBE_MAX], timeout[FTL_TIMEOUT_MAX];
  char ec_name[FTL_EC_NAME_MAX];
  char names[FT_LAUNCH_HOSTS_MAX][FT_LAUNCH_NAME_MAX];
  int nnames;
  ftl_list_t pool;

  /* The job as it stands. */
  ftl_list_t hosts;
  int nodes, mode, shrunk;
  int now_k, now_m;   /* the code of the next mpirun */
  int said_k, said_m; /* the lowered code last said (EC_SAID) */
  int spares_left;
  uint32_t given[FT_LAUNCH_HOSTS_MAX]; /* given up: its order, from 1 */
  uint32_t given_next;
  uint8_t put_back[FT_LAUNCH_HOSTS_MAX]; /* named back once this launch */

  /* The restart under way. */
  ftl_list_t pre_hosts;
  int pre_spares_left;
  uint32_t pre_given, pre_entries;
  ftl_list_t lost, named_lost, unprobed, put_back_now, asked, spares;
  uint8_t named[FT_LAUNCH_HOSTS_MAX]; /* the last mpirun lost its daemon */
  int named_slurm; /* ... or Slurm reported them lost as it ended */
  uint8_t by_slurm[FT_LAUNCH_HOSTS_MAX]; /* named last by Slurm, not mpirun */
  uint8_t down[FT_LAUNCH_HOSTS_MAX];  /* failed the last probe */
  int lost_fresh, full_host, job_rc;
  int attempt, restarts_done, recoveries;
  int in_job, in_job_failed, recovered_now, fresh, hold, restore_fresh;
  int verdict; /* the watchdog ended the run under way */
  int lost_end; /* the last failure was a loss (125, 124, ft-restore's 4),
                   not the program's own status */
  int resume;  /* a restart's recovery, once the queue is read */
  int fl_then, rg_then, fs_then;
  int state, code;

  /* What the restarts did (RECOVERED). */
  ftl_rec_t *rec;
  ftl_id_t *slot;
  uint32_t nrec, caprec, nslot, capslot, entries;
  int cut; /* a record did not fit: the last line ends in "; ..." */

  /* The actions queued, and their texts. */
  ft__launch_action_t q[FTL_QUEUE_MAX];
  int qhead, qn, overflow;
  char *text;
  size_t text_cap, text_used;
  const char *view[FT_LAUNCH_HOSTS_MAX];
};

/* ---- lists and names ---- */

static void ftl_add(ftl_list_t *l, int id) {
  if (l->n < FT_LAUNCH_HOSTS_MAX)
    l->id[l->n++] = (ftl_id_t)id;
}

static int ftl_has(const ftl_list_t *l, int id) {
  for (int i = 0; i < l->n; i++)
    if (l->id[i] == id)
      return 1;
  return 0;
}

static int ftl_find(const ft__launch_t *m, const char *name) {
  if (!name)
    return -1;
  for (int i = 0; i < m->nnames; i++)
    if (strcmp(m->names[i], name) == 0)
      return i;
  return -1;
}

static void ftl_mark(const ft__launch_t *m, uint8_t *flag,
                     const char *const *names, int n) {
  memset(flag, 0, FT_LAUNCH_HOSTS_MAX);
  for (int i = 0; names && i < n; i++) {
    int id = ftl_find(m, names[i]);
    if (id >= 0)
      flag[id] = 1;
  }
}

static const char *ftl_name(const ft__launch_t *m, int id) {
  return m->names[id];
}

/* ---- texts ---- */

typedef struct {
  char *s;
  size_t n, cap;
  int cut;
} ftl_text_t;

static void ftl_open(ft__launch_t *m, ftl_text_t *t) {
  t->cap = m->text_cap - m->text_used;
  t->s = t->cap >= 4 ? m->text + m->text_used : NULL;
  t->n = 0, t->cut = 0;
  if (t->s)
    t->s[0] = '\0';
}

static void ftl_vput(ftl_text_t *t, const char *fmt, va_list ap) {
  if (!t->s || t->cut)
    return;
  size_t room = t->cap - t->n;
  int w = vsnprintf(t->s + t->n, room, fmt, ap);
  if (w < 0 || (size_t)w >= room)
    t->n = t->cap - 1, t->cut = 1;
  else
    t->n += (size_t)w;
}

__attribute__((format(printf, 2, 3))) static void
ftl_put(ftl_text_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ftl_vput(t, fmt, ap);
  va_end(ap);
}

static void ftl_put_list(const ft__launch_t *m, ftl_text_t *t,
                         const ftl_list_t *l, const char *sep) {
  for (int i = 0; i < l->n; i++)
    ftl_put(t, "%s%s", i ? sep : "", ftl_name(m, l->id[i]));
}

/* The text, kept in the arena until the next event. */
static const char *ftl_close(ft__launch_t *m, ftl_text_t *t) {
  if (!t->s)
    return "...";
  if (t->cut) {
    t->n = t->cap - 4;
    memcpy(t->s + t->n, "...", 4);
    t->n += 3;
  }
  m->text_used += t->n + 1;
  return t->s;
}

/* ---- actions ---- */

static ft__launch_action_t *ftl_push(ft__launch_t *m, int kind) {
  if (m->qhead + m->qn >= FTL_QUEUE_MAX) {
    m->overflow = 1;
    return NULL;
  }
  ft__launch_action_t *a = &m->q[m->qhead + m->qn++];
  memset(a, 0, sizeof(*a));
  a->kind = kind;
  return a;
}

static void ftl_say_text(ft__launch_t *m, unsigned flags, ftl_text_t *t) {
  const char *text = ftl_close(m, t);
  ft__launch_action_t *a = ftl_push(m, FT_LAUNCH_ACT_SAY);
  if (a)
    a->flags = flags, a->text = text;
}

__attribute__((format(printf, 3, 4))) static void
ftl_say(ft__launch_t *m, unsigned flags, const char *fmt, ...) {
  ftl_text_t t;
  va_list ap;
  ftl_open(m, &t);
  va_start(ap, fmt);
  ftl_vput(&t, fmt, ap);
  va_end(ap);
  ftl_say_text(m, flags, &t);
}

static void ftl_act(ft__launch_t *m, int kind) { ftl_push(m, kind); }

static void ftl_stamp(ft__launch_t *m, int point) {
  ft__launch_action_t *a = ftl_push(m, FT_LAUNCH_ACT_STAMP);
  if (a)
    a->point = point;
}

/* The list an action carries (invariant 1: one such action an event). */
static void ftl_view(ft__launch_t *m, ft__launch_action_t *a,
                     const ftl_list_t *l) {
  for (int i = 0; i < l->n; i++)
    m->view[i] = ftl_name(m, l->id[i]);
  a->hosts = l->n ? m->view : NULL;
  a->nhosts = l->n;
}

static void ftl_exit(ft__launch_t *m, int code, int state) {
  ft__launch_action_t *a = ftl_push(m, FT_LAUNCH_ACT_EXIT);
  if (a)
    a->code = code;
  m->code = code, m->state = state;
}

static void ftl_probe(ft__launch_t *m, int tries, int state) {
  ft__launch_action_t *a = ftl_push(m, FT_LAUNCH_ACT_PROBE);
  if (a) {
    a->tries = tries;
    ftl_view(m, a, &m->asked);
  }
  m->state = state;
}

/* ---- messages ---- */

/* secs: "12.3" of a length in ms. */
static void ftl_put_secs(ftl_text_t *t, uint64_t ms) {
  ftl_put(t, "%llu.%llu", (unsigned long long)(ms / 1000),
          (unsigned long long)(ms % 1000 / 100));
}

/* Who named the hosts lost without a probe: "mpirun lost its daemon on",
 * or Slurm. */
static void ftl_put_named_by(ftl_text_t *t, int slurm, int past) {
  if (slurm)
    ftl_put(t, past ? "Slurm reported " : "Slurm reports ");
  else
    ftl_put(t, "mpirun lost its daemon on ");
}

/* probe_words: how the hosts were asked. */
static void ftl_put_probe_words(const ft__launch_t *m, ftl_text_t *t) {
  if (m->slurm && !m->cluster)
    ftl_put(t, "Slurm reports them down or not responding, or ");
  if (m->cluster)
    ftl_put(t, "ping from the head");
  else if (m->probe_tries == 1)
    ftl_put(t, "'%s HOST true' failed once", m->probe);
  else
    ftl_put(t, "'%s HOST true' failed %d times", m->probe, m->probe_tries);
}

/* "--ec 3+1", or how the environment gave it. */
static void ftl_put_ec_name(const ft__launch_t *m, ftl_text_t *t) {
  if (m->ec_name[0])
    ftl_put(t, "%s", m->ec_name);
  else
    ftl_put(t, "--ec %d+%d", m->ec_k, m->ec_m);
}

/* ---- what the restarts did ---- */

static int ftl_rec_room(ft__launch_t *m, uint32_t slots) {
  if (m->nrec < m->caprec && m->capslot - m->nslot >= slots)
    return 1;
  m->cut = 1;
  return 0;
}

static void ftl_record(ft__launch_t *m, int kind, const ftl_id_t *ids,
                       uint32_t nslots, uint32_t n, int nodes) {
  ftl_rec_t *last = m->nrec ? &m->rec[m->nrec - 1] : NULL;
  if (kind == FTL_SAME && last && last->kind == FTL_SAME) {
    last->n++, m->entries++;
    return;
  }
  if (!ftl_rec_room(m, nslots))
    return;
  ftl_rec_t *r = &m->rec[m->nrec++];
  r->kind = (uint8_t)kind, r->n = n, r->off = m->nslot, r->nodes = nodes;
  if (nslots) /* ids may be NULL then, which memcpy may not be given */
    memcpy(m->slot + m->nslot, ids, nslots * sizeof(*ids));
  m->nslot += nslots, m->entries++;
}

static uint32_t ftl_rec_entries(const ftl_rec_t *r) {
  return r->kind == FTL_SAME ? r->n : 1;
}

/* RECOVERED cut back to its first n entries. */
static void ftl_rec_truncate(ft__launch_t *m, uint32_t n) {
  while (m->entries > n && m->nrec) {
    ftl_rec_t *r = &m->rec[m->nrec - 1];
    uint32_t drop = m->entries - n, e = ftl_rec_entries(r);
    if (r->kind == FTL_SAME && e > drop) {
      r->n -= drop, m->entries -= drop;
      break;
    }
    m->nslot = r->off, m->entries -= e, m->nrec--;
  }
}

/* "h2 -> s1" becomes "h2 -> s2" in what this restart did. */
static void ftl_rec_rewrite(ft__launch_t *m, int from, int to) {
  uint32_t e = 0;
  for (uint32_t i = 0; i < m->nrec; i++) {
    ftl_rec_t *r = &m->rec[i];
    if (r->kind == FTL_REPLACE && e >= m->pre_entries)
      for (uint32_t p = 0; p < r->n; p++)
        if (m->slot[r->off + 2 * p + 1] == from)
          m->slot[r->off + 2 * p + 1] = (ftl_id_t)to;
    e += ftl_rec_entries(r);
  }
}

static void ftl_put_ids(const ft__launch_t *m, ftl_text_t *t,
                        const ftl_id_t *ids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    ftl_put(t, "%s%s", i ? " " : "", ftl_name(m, ids[i]));
}

static void ftl_put_record(const ft__launch_t *m, ftl_text_t *t,
                           const ftl_rec_t *r) {
  const ftl_id_t *s = m->slot + r->off;
  switch (r->kind) {
  case FTL_REPLACE:
    for (uint32_t p = 0; p < r->n; p++)
      ftl_put(t, "%s%s -> %s", p ? ", " : "", ftl_name(m, s[2 * p]),
              ftl_name(m, s[2 * p + 1]));
    break;
  case FTL_SHRUNK:
    ftl_put_ids(m, t, s, r->n);
    ftl_put(t, " lost, shrunk to %d nodes", r->nodes);
    break;
  case FTL_PUT_BACK:
    ftl_put(t, "relaunched on the same hosts (");
    ftl_put_ids(m, t, s, r->n);
    ftl_put(t, " put back)");
    break;
  default:
    for (uint32_t i = 0; i < r->n; i++)
      ftl_put(t, "%srelaunched on the same hosts", i ? "; " : "");
  }
}

/* report_end: "done: success after 1 restart(s): h2 -> s1". */
static void ftl_say_done(ft__launch_t *m, int rc) {
  ftl_text_t t;
  ftl_open(m, &t);
  if (rc == 0)
    ftl_put(&t, "done: success");
  else
    ftl_put(&t, "done: exit status %d", rc);
  if (m->entries || m->cut)
    ftl_put(&t, " after %d restart(s): ", m->restarts_done);
  for (uint32_t i = 0; i < m->nrec; i++) {
    ftl_put(&t, "%s", i ? "; " : "");
    ftl_put_record(m, &t, &m->rec[i]);
  }
  if (m->cut)
    ftl_put(&t, "%s...", m->nrec ? "; " : "");
  ftl_say_text(m, FT_LAUNCH_SAY_STAMP, &t);
}

/* ---- the code of the next mpirun (build_mpirun) ---- */

/* A shrink left fewer nodes than the code needs: keep m, take k from what
 * is left (else 1 + (n - 1)), said once for each code. */
static void ftl_lower(ft__launch_t *m) {
  int n = m->nodes;
  if (m->now_m < n)
    m->now_k = n - m->now_m;
  else
    m->now_k = 1, m->now_m = n - 1;
  if (m->said_k == m->now_k && m->said_m == m->now_m)
    return;
  ftl_text_t t;
  ftl_open(m, &t);
  ftl_put_ec_name(m, &t);
  ftl_put(&t, " needs %d nodes, %d are left: the relaunch encodes with %d+%d",
          m->ec_k + m->ec_m, n, m->now_k, m->now_m);
  ftl_say_text(m, 0, &t);
  m->said_k = m->now_k, m->said_m = m->now_m;
}

/* 1, or 0 when the code is larger than the job (exit 2, as bad_usage). */
static int ftl_build(ft__launch_t *m) {
  m->now_k = m->ec_k, m->now_m = m->ec_m;
  if (m->ec_k == 0 || m->one_per_node)
    return 1;
  if (m->shrunk && m->now_k + m->now_m > m->nodes)
    ftl_lower(m);
  if (m->now_k + m->now_m <= m->nodes)
    return 1;
  ftl_text_t t;
  ftl_open(m, &t);
  ftl_put_ec_name(m, &t);
  ftl_put(&t, " needs at least %d nodes, the job has %d", m->now_k + m->now_m,
          m->nodes);
  ftl_say_text(m, FT_LAUNCH_SAY_USAGE, &t);
  ftl_exit(m, 2, FT_LAUNCH_GIVEN_UP);
  return 0;
}

static void ftl_summary(ft__launch_t *m) { ftl_act(m, FT_LAUNCH_ACT_SUMMARY); }

/* ---- the mpiruns ---- */

static unsigned ftl_run_flags(const ft__launch_t *m) {
  unsigned f = 0;
  if (m->fresh)
    f |= FT_LAUNCH_RUN_FRESH;
  if (m->hold)
    f |= FT_LAUNCH_RUN_HOLD;
  if (!m->cold && !m->one_per_node && m->restarts_done < m->restarts)
    f |= FT_LAUNCH_RUN_PREPARE;
  return f;
}

static ft__launch_action_t *ftl_run(ft__launch_t *m, unsigned flags) {
  ft__launch_action_t *a = ftl_push(m, FT_LAUNCH_ACT_RUN);
  m->verdict = 0;
  if (!a)
    return NULL;
  a->flags = flags | ftl_run_flags(m);
  ftl_view(m, a, &m->hosts);
  a->nodes = m->nodes, a->mode = m->mode;
  a->ec_k = m->now_k, a->ec_m = m->now_m;
  return a;
}

/* run_attempt's start: the program on the node set. */
static void ftl_attempt(ft__launch_t *m) {
  m->attempt++;
  ftl_say(m, FT_LAUNCH_SAY_STAMP, "attempt %d: mpirun started", m->attempt);
  ft__launch_action_t *a = ftl_run(m, m->in_job ? FT_LAUNCH_RUN_REBUILD : 0);
  if (a) {
    a->attempt = m->attempt;
    a->recovery = m->recovered_now ? m->recoveries + 1 : 0;
  }
  m->state = m->in_job ? FT_LAUNCH_REBUILDING : FT_LAUNCH_RUNNING;
}

/* run_restore's start: ft-restore, one rank a node of the node set. */
static void ftl_run_restore(ft__launch_t *m) {
  if (!ftl_build(m))
    return;
  ftl_text_t t;
  ftl_open(m, &t);
  ftl_put(&t, "running ft-restore --mode %s on %d node(s)",
          ft__launch_mode_name(m->mode), m->nodes);
  if (m->hosts.n) {
    ftl_put(&t, ": ");
    ftl_put_list(m, &t, &m->hosts, " ");
  }
  ftl_say_text(m, FT_LAUNCH_SAY_STAMP, &t);
  m->restore_fresh = 0, m->full_host = -1;
  ft__launch_action_t *a = ftl_run(m, FT_LAUNCH_RUN_RESTORE);
  /* Before the first attempt (restore_first): FT_HOLD, --fresh and the
   * spares' preparation stay the first attempt's. */
  if (a && !m->attempt && !m->restarts_done)
    a->flags = FT_LAUNCH_RUN_RESTORE;
  m->state = FT_LAUNCH_RESTORING;
}

/* ---- the restart loop (run_with_restarts) ---- */

static void ftl_find_lost(ft__launch_t *m, int then);
static void ftl_regroup(ft__launch_t *m, int then);
static void ftl_restore_apart(ft__launch_t *m);
static void ftl_recover_apart(ft__launch_t *m);

static void ftl_finish(ft__launch_t *m, int rc) {
  if (m->restarts && (rc == 0 || m->entries))
    ftl_say_done(m, rc);
  ftl_exit(m, rc, rc ? FT_LAUNCH_GIVEN_UP : FT_LAUNCH_DONE);
}

static void ftl_recover(ft__launch_t *m);

/* An attempt or a recovery ended with rc: the next restart, if any. */
static void ftl_failed(ft__launch_t *m, int rc) {
  if (m->restarts_done >= m->restarts) {
    if (m->restarts)
      ftl_say(m, FT_LAUNCH_SAY_STAMP, "giving up after %d restart(s)",
              m->restarts);
    ftl_finish(m, rc);
    return;
  }
  m->restarts_done++;
  ftl_say(m, 0, "restart %d of %d: %s failed with status %d; recovering",
          m->restarts_done, m->restarts, m->attempt ? "attempt" : "ft-restore",
          rc);
  m->unprobed.n = 0;
  m->pre_hosts = m->hosts, m->pre_spares_left = m->spares_left;
  m->pre_entries = m->entries, m->pre_given = m->given_next;
  /* Recovered once the driver has read this far: a regroup refused
   * without a probe (every host named lost) comes back here at once, up
   * to --restarts times, each a queue of its own. */
  m->resume = 1;
}

/* recover's or recover_apart's status: relaunch, stop, or the next restart
 * (a pending one looks for lost hosts again). */
static void ftl_recovered(ft__launch_t *m, int rc) {
  if (rc == 0) {
    m->recovered_now = 1;
    ftl_say(m, 0, "restart %d of %d: relaunching", m->restarts_done,
            m->restarts);
    ftl_attempt(m);
  } else if (rc == 3 || rc == 5) {
    ftl_finish(m, rc);
  } else {
    ftl_failed(m, rc);
  }
}

/* run_attempt's status, as the restart loop takes it. */
static void ftl_attempt_done(ft__launch_t *m, int rc) {
  if (rc == 0) {
    ftl_finish(m, 0);
    return;
  }
  if (!m->in_job_failed) {
    ftl_failed(m, rc);
    return;
  }
  ftl_say(m, 0,
          "restart %d of %d: the relaunch ended (status %d) before its "
          "rebuild was done: running ft-restore on its own",
          m->restarts_done, m->restarts, rc);
  ftl_recover_apart(m);
}

/* ---- an attempt's end ---- */

/* end_of_recovery: the relaunch of a recovery ended. */
static void ftl_end_of_recovery(ft__launch_t *m, unsigned flags) {
  m->recovered_now = 0, m->recoveries++;
  ft__launch_action_t *a = ftl_push(m, FT_LAUNCH_ACT_HELD);
  if (a)
    a->recovery = m->recoveries;
  if (flags & FT_LAUNCH_ACCOUNTED)
    return;
  if (!m->restore_fresh)
    ftl_say(m, 0,
            "recovery %d: the relaunch ended before every trainer's state "
            "was restored: no account",
            m->recoveries);
  a = ftl_push(m, FT_LAUNCH_ACT_STAMPS);
  if (a)
    a->recovery = m->recoveries;
}

static void ftl_job_failed(ft__launch_t *m, int rc) {
  m->lost_end = 0;
  ftl_say(m, 0, "job failed: mpirun exit status %d", rc);
  ftl_act(m, FT_LAUNCH_ACT_MPIRUN_SAID);
  ftl_attempt_done(m, rc);
}

/* report_lost_hosts, once find_lost has answered. */
static void ftl_reported(ft__launch_t *m) {
  if (!m->lost.n) {
    ftl_job_failed(m, m->job_rc);
    return;
  }
  ftl_text_t t;
  unsigned f = FT_LAUNCH_SAY_STAMP;
  ftl_open(m, &t);
  if (m->cluster) {
    ftl_put(&t, "job failed; host(s) of the job unreachable (killed or "
                "partitioned): ");
    f = 0;
  } else if (!m->named_lost.n || m->named_lost.n != m->lost.n) {
    ftl_put(&t, "job failed; ");
    if (m->named_lost.n) {
      ftl_put_named_by(&t, m->named_slurm, 0);
      ftl_put_list(m, &t, &m->named_lost, " ");
      if (m->named_slurm)
        ftl_put(&t, " down or not responding");
      ftl_put(&t, ", the others cannot run a command (");
    } else {
      ftl_put(&t, "host(s) of the job cannot run a command (");
    }
    ftl_put_probe_words(m, &t);
    ftl_put(&t, "): ");
  } else if (m->named_slurm) {
    ftl_put(&t, "job failed; Slurm reports host(s) of the job down or not "
                "responding: ");
  } else {
    ftl_put(&t, "job failed; mpirun lost its daemon on host(s) of the job "
                "(killed or partitioned): ");
  }
  ftl_put_list(m, &t, &m->lost, " ");
  ftl_say_text(m, f, &t);
  m->lost_end = 1;
  ftl_attempt_done(m, 125);
}

/* A launcher that said it lost the daemon on a host of the run did not run
 * it to its end, whatever its status: PRRTE's mpirun ends with 0 when plm
 * ssh's remote shell to a host that died ends, the ranks elsewhere still
 * running.  Its 0 is a failure, the hosts named lost. */
static int ftl_lost_but_0(const ft__launch_event_t *ev) {
  return ev->status == 0 && ev->nhosts > 0;
}

static void ftl_job_exit(ft__launch_t *m, const ft__launch_event_t *ev) {
  int rc = ftl_lost_but_0(ev) ? 125 : ev->status;
  m->in_job_failed = 0;
  if (m->in_job) {
    m->in_job = 0, m->hold = 0;
    if (!(ev->flags & FT_LAUNCH_REBUILT) && rc != 0)
      m->in_job_failed = 1, m->recovered_now = 0;
  }
  if (m->recovered_now)
    ftl_end_of_recovery(m, ev->flags);
  m->restore_fresh = 0;
  ftl_text_t t;
  ftl_open(m, &t);
  ftl_put(&t, "attempt %d ended after ", m->attempt);
  ftl_put_secs(&t, ev->ms);
  if (ftl_lost_but_0(ev))
    ftl_put(&t, " s: exit status 0, but mpirun lost a daemon: not a success");
  else if (rc == 0)
    ftl_put(&t, " s: success");
  else
    ftl_put(&t, " s: exit status %d", rc);
  ftl_say_text(m, FT_LAUNCH_SAY_STAMP, &t);
  if (m->verdict)
    m->lost_end = 1, ftl_attempt_done(m, 124);
  else if (rc != 0 && m->hosts.n)
    m->job_rc = rc, ftl_find_lost(m, FTL_FL_REPORT);
  else if (rc != 0)
    ftl_job_failed(m, rc);
  else
    ftl_attempt_done(m, 0);
}

/* ---- lost hosts (find_lost) ---- */

static void ftl_regroup_lost(ft__launch_t *m);
static void ftl_apart_lost(ft__launch_t *m);

static void ftl_found_lost(ft__launch_t *m) {
  m->lost.n = m->named_lost.n = 0;
  for (int i = 0; i < m->hosts.n; i++) {
    int h = m->hosts.id[i];
    if (!m->down[h] && !m->named[h])
      continue;
    ftl_add(&m->lost, h);
    if (m->named[h])
      ftl_add(&m->named_lost, h);
  }
  m->lost_fresh = 1;
  ftl_stamp(m, FT_LAUNCH_PROBED);
  if (m->fl_then == FTL_FL_REPORT)
    ftl_reported(m);
  else if (m->fl_then == FTL_FL_REGROUP)
    ftl_regroup_lost(m);
  else
    ftl_apart_lost(m);
}

/* The hosts mpirun named are lost without a probe; the others are probed. */
static void ftl_find_lost(ft__launch_t *m, int then) {
  m->fl_then = then;
  memset(m->down, 0, sizeof(m->down));
  m->asked.n = 0;
  for (int i = 0; i < m->hosts.n; i++)
    if (!m->named[m->hosts.id[i]])
      ftl_add(&m->asked, m->hosts.id[i]);
  if (m->asked.n)
    ftl_probe(m, m->probe_tries, FT_LAUNCH_FINDING);
  else
    ftl_found_lost(m);
}

/* ---- spares (free_spares) ---- */

static void ftl_regroup_spares(ft__launch_t *m);
static void ftl_next_spare_found(ft__launch_t *m);

static int ftl_candidate(const ft__launch_t *m, int id) {
  return !ftl_has(&m->hosts, id) && !m->given[id];
}

static void ftl_found_spares(ft__launch_t *m) {
  m->spares.n = 0;
  for (int i = 0; i < m->asked.n && m->spares.n < m->spares_left; i++)
    if (!m->down[m->asked.id[i]])
      ftl_add(&m->spares, m->asked.id[i]);
  if (m->fs_then == FTL_FS_REGROUP)
    ftl_regroup_spares(m);
  else
    ftl_next_spare_found(m);
}

/* Spares up, not in the job, not given up, at most spares left. */
static void ftl_free_spares(ft__launch_t *m, int then) {
  m->fs_then = then;
  memset(m->down, 0, sizeof(m->down));
  m->asked.n = 0;
  for (int i = 0; i < m->pool.n; i++)
    if (ftl_candidate(m, m->pool.id[i]))
      ftl_add(&m->asked, m->pool.id[i]);
  if (m->asked.n && m->spares_left > 0)
    ftl_probe(m, m->probe_tries, FT_LAUNCH_REGROUPING);
  else
    m->asked.n = 0, ftl_found_spares(m);
}

/* ---- the new node set (regroup) ---- */

static void ftl_give_up(ft__launch_t *m, int id) {
  if (!m->given[id])
    m->given[id] = ++m->given_next;
}

static void ftl_recover_regrouped(ft__launch_t *m);
static void ftl_apart_regrouped(ft__launch_t *m);

static void ftl_regroup_done(ft__launch_t *m, int ok) {
  if (m->rg_then == FTL_RG_NAMED)
    m->put_back_now.n = 0;
  if (!ok) {
    ftl_recovered(m, 1);
  } else if (m->rg_then == FTL_RG_RECOVER) {
    ftl_recover_regrouped(m);
  } else if (m->rg_then == FTL_RG_APART) {
    ftl_apart_regrouped(m);
  } else {
    ftl_stamp(m, FT_LAUNCH_REGROUPED);
    ftl_run_restore(m);
  }
}

static void ftl_say_lost(ft__launch_t *m, ftl_text_t *t) {
  ftl_open(m, t);
  ftl_put(t, "lost host(s): ");
  ftl_put_list(m, t, &m->lost, " ");
}

/* Spares in the lost hosts' places, each keeping its rank numbers. */
static void ftl_replace(ft__launch_t *m, int nlost) {
  ftl_id_t pairs[2 * FT_LAUNCH_HOSTS_MAX];
  ftl_text_t t;
  int k = 0;
  m->spares_left -= nlost;
  ftl_say_lost(m, &t);
  ftl_put(&t, "; replacing them with spare(s) ");
  for (int i = 0; i < nlost; i++)
    ftl_put(&t, "%s%s", i ? " " : "", ftl_name(m, m->spares.id[i]));
  ftl_say_text(m, 0, &t);
  for (int i = 0; i < m->hosts.n; i++) {
    if (!ftl_has(&m->lost, m->hosts.id[i]))
      continue;
    pairs[2 * k] = m->hosts.id[i];
    pairs[2 * k + 1] = m->spares.id[k];
    m->hosts.id[i] = m->spares.id[k++];
  }
  ftl_record(m, FTL_REPLACE, pairs, 2 * (uint32_t)k, (uint32_t)k, 0);
}

static void ftl_shrink(ft__launch_t *m) {
  ftl_list_t survivors = {.n = 0};
  ftl_text_t t;
  for (int i = 0; i < m->hosts.n; i++)
    if (!ftl_has(&m->lost, m->hosts.id[i]))
      ftl_add(&survivors, m->hosts.id[i]);
  m->mode = FT_LAUNCH_SHRINK, m->shrunk = 1;
  ftl_say_lost(m, &t);
  ftl_put(&t, "; no spare left: shrinking to %d nodes", survivors.n);
  ftl_say_text(m, 0, &t);
  m->hosts = survivors;
  ftl_record(m, FTL_SHRUNK, m->lost.id, (uint32_t)m->lost.n,
             (uint32_t)m->lost.n, survivors.n);
}

static int ftl_nlost(const ft__launch_t *m) {
  int n = 0;
  for (int i = 0; i < m->hosts.n; i++)
    n += ftl_has(&m->lost, m->hosts.id[i]);
  return n;
}

static void ftl_regroup_spares(ft__launch_t *m) {
  int nlost = ftl_nlost(m);
  if (m->spares.n >= nlost)
    ftl_replace(m, nlost);
  else
    ftl_shrink(m);
  m->nodes = m->hosts.n;
  ftl_regroup_done(m, 1);
}

static void ftl_regroup_same(ft__launch_t *m) {
  if (m->put_back_now.n) {
    ftl_say(m, 0,
            "every host taken as lost answers: relaunching on the "
            "same hosts");
    ftl_record(m, FTL_PUT_BACK, m->put_back_now.id, (uint32_t)m->put_back_now.n,
               (uint32_t)m->put_back_now.n, 0);
  } else {
    ftl_say(m, 0,
            "no host was lost (a process failed): relaunching on the "
            "same hosts");
    ftl_record(m, FTL_SAME, NULL, 0, 1, 0);
  }
  m->nodes = m->hosts.n;
  ftl_regroup_done(m, 1);
}

/* With the lost hosts known: given up, and the survivors counted. */
static void ftl_regroup_lost(ft__launch_t *m) {
  m->lost_fresh = 0;
  for (int i = 0; i < m->named_lost.n; i++)
    if (!ftl_has(&m->unprobed, m->named_lost.id[i]))
      ftl_add(&m->unprobed, m->named_lost.id[i]);
  int nlost = ftl_nlost(m);
  for (int i = 0; i < m->hosts.n; i++)
    if (ftl_has(&m->lost, m->hosts.id[i]))
      ftl_give_up(m, m->hosts.id[i]);
  if (nlost == m->hosts.n && m->hosts.n > 1) {
    ftl_text_t t;
    ftl_open(m, &t);
    ftl_put(&t, "every host of the job failed the probe (");
    ftl_put_probe_words(m, &t);
    ftl_put(&t, "): none is left to recover on; is the probe right "
                "(--probe)?");
    ftl_say_text(m, 0, &t);
    ftl_regroup_done(m, 0);
    return;
  }
  m->mode = FT_LAUNCH_REPLACE;
  if (nlost)
    ftl_free_spares(m, FTL_FS_REGROUP);
  else
    ftl_regroup_same(m);
}

static void ftl_regroup(ft__launch_t *m, int then) {
  m->rg_then = then;
  if (m->lost_fresh)
    ftl_regroup_lost(m);
  else
    ftl_find_lost(m, FTL_FL_REGROUP);
}

/* ---- recover, recover_apart ---- */

static void ftl_recover(ft__launch_t *m) {
  if (m->hosts.n) {
    ftl_regroup(m, FTL_RG_RECOVER);
    return;
  }
  m->mode = FT_LAUNCH_REPLACE;
  ftl_recover_regrouped(m);
}

/* The rebuild inside the relaunch, or ft-restore on its own. */
static void ftl_recover_regrouped(ft__launch_t *m) {
  ftl_stamp(m, FT_LAUNCH_REGROUPED);
  if (m->restore_job || m->one_per_node) {
    ftl_restore_apart(m);
    return;
  }
  ftl_text_t t;
  ftl_open(m, &t);
  ftl_put(&t, "relaunching on %d node(s)", m->nodes);
  if (m->hosts.n) {
    ftl_put(&t, ": ");
    ftl_put_list(m, &t, &m->hosts, " ");
  }
  ftl_put(&t,
          "; its SMPs rebuild first (ft-restore --mode %s's engine, in "
          "ft_init)",
          ft__launch_mode_name(m->mode));
  ftl_say_text(m, FT_LAUNCH_SAY_STAMP, &t);
  m->fresh = 0, m->restore_fresh = 0, m->in_job = 1;
  if (!ftl_build(m))
    return;
  ftl_summary(m);
  ftl_recovered(m, 0);
}

/* After a relaunch whose rebuild did not end well: ft-restore on its own,
 * on the same node set less the hosts lost since. */
static void ftl_recover_apart(ft__launch_t *m) {
  if (m->hosts.n && !m->lost_fresh)
    ftl_find_lost(m, FTL_FL_APART);
  else
    ftl_apart_lost(m);
}

/* recover_apart, the lost hosts known: regroup when there are some. */
static void ftl_apart_lost(ft__launch_t *m) {
  if (m->hosts.n && m->lost.n) {
    ftl_regroup(m, FTL_RG_APART);
    return;
  }
  m->lost_fresh = 0;
  ftl_apart_regrouped(m);
}

static void ftl_apart_regrouped(ft__launch_t *m) {
  m->lost_fresh = 0;
  ftl_stamp(m, FT_LAUNCH_REGROUPED);
  ftl_restore_apart(m);
}

/* ---- named back ---- */

/* Spares given up since the restart began stay spent. */
static int ftl_spent(const ft__launch_t *m) {
  int n = 0;
  for (int i = 0; i < m->nnames; i++)
    n += m->given[i] > m->pre_given && !ftl_has(&m->pre_hosts, i);
  return n;
}

/* Those that answered are put back, and the restart's node set chosen
 * again from the state it began with. */
static void ftl_put_back(ft__launch_t *m, const ftl_list_t *back) {
  ftl_text_t t;
  ftl_open(m, &t);
  int slurm = m->by_slurm[back->id[0]];
  ftl_put_named_by(&t, slurm, 1);
  ftl_put_list(m, &t, back, " ");
  if (slurm)
    ftl_put(&t, " down or not responding");
  ftl_put(&t, ", but %d host(s) answer ", back->n);
  if (m->cluster)
    ftl_put(&t, "a ping from the head");
  else if (m->slurm)
    ftl_put(&t, "Slurm and '%s HOST true'", m->probe);
  else
    ftl_put(&t, "'%s HOST true'", m->probe);
  ftl_put(&t, " now: putting them back in the job");
  ftl_say_text(m, FT_LAUNCH_SAY_STAMP, &t);
  int spent = ftl_spent(m);
  for (int i = 0; i < back->n; i++)
    m->put_back[back->id[i]] = 1, m->given[back->id[i]] = 0;
  m->hosts = m->pre_hosts;
  m->spares_left = m->pre_spares_left - spent;
  ftl_rec_truncate(m, m->pre_entries);
  m->lost.n = m->named_lost.n = 0;
  for (int i = 0; i < m->hosts.n; i++)
    if (m->given[m->hosts.id[i]])
      ftl_add(&m->lost, m->hosts.id[i]);
  m->lost_fresh = 1;
  m->put_back_now = *back;
  ftl_regroup(m, FTL_RG_NAMED);
}

static void ftl_asked(ft__launch_t *m) {
  ftl_list_t back = {.n = 0};
  ftl_stamp(m, FT_LAUNCH_REGROUPED);
  for (int i = 0; i < m->asked.n; i++)
    if (!m->down[m->asked.id[i]])
      ftl_add(&back, m->asked.id[i]);
  if (back.n)
    ftl_put_back(m, &back);
  else
    ftl_run_restore(m);
}

/* restore_apart: the hosts taken as lost on mpirun's word alone asked once
 * (one try each), then ft-restore. */
static void ftl_restore_apart(ft__launch_t *m) {
  memset(m->down, 0, sizeof(m->down));
  m->asked.n = 0;
  for (int i = 0; i < m->unprobed.n; i++) {
    int h = m->unprobed.id[i];
    if (ftl_has(&m->pre_hosts, h) && !m->put_back[h])
      ftl_add(&m->asked, h);
  }
  m->unprobed.n = 0;
  if (m->asked.n)
    ftl_probe(m, 1, FT_LAUNCH_ASKING);
  else
    ftl_run_restore(m);
}

/* ---- ft-restore's end ---- */

static void ftl_no_room(ft__launch_t *m) {
  ftl_say(m, 0,
          "ft-restore: a store of the job has no room (exit 5): not "
          "restarting; make room on the host it names (or leave that host "
          "out) and run again");
  ftl_recovered(m, 5);
}

static int ftl_full_rank(const ft__launch_t *m) {
  int r = -1;
  for (int i = 0; i < m->hosts.n; i++)
    if (m->hosts.id[i] == m->full_host)
      r = i;
  return r;
}

/* next_spare: the spare without room is given up for the next free one,
 * unless the store was a survivor's. */
static void ftl_next_spare(ft__launch_t *m) {
  if (m->full_host < 0 || ftl_full_rank(m) < 0 ||
      ftl_has(&m->pre_hosts, m->full_host)) {
    ftl_no_room(m);
    return;
  }
  ftl_free_spares(m, FTL_FS_NEXT);
}

static void ftl_next_spare_found(ft__launch_t *m) {
  if (!m->spares.n) {
    ftl_no_room(m);
    return;
  }
  int h = m->full_host, next = m->spares.id[0];
  ftl_give_up(m, h);
  m->spares_left--;
  m->hosts.id[ftl_full_rank(m)] = (ftl_id_t)next;
  ftl_rec_rewrite(m, h, next);
  ftl_say(m, 0,
          "spare %s has no room for the store of the node it replaces "
          "(ft-restore exit 5): given up; %s takes its place",
          ftl_name(m, h), ftl_name(m, next));
  ftl_restore_apart(m);
}

static void ftl_restored(ft__launch_t *m) {
  if (m->restore_fresh)
    ftl_say(m, 0,
            "recovery %d: nothing had been committed before the failure: the "
            "job starts afresh",
            m->recoveries + 1);
  if (!ftl_build(m))
    return;
  ftl_summary(m);
  if (!m->attempt && !m->restarts_done) {
    ftl_attempt(m); /* restore_first: the job's first attempt */
    return;
  }
  ftl_recovered(m, 0);
}

static void ftl_restore_exit(ft__launch_t *m, const ft__launch_event_t *ev) {
  int lost0 = ftl_lost_but_0(ev);
  int rc = lost0 ? 125 : ev->status;
  if (rc != 0 && m->verdict)
    rc = 124;
  ftl_text_t t;
  ftl_open(m, &t);
  ftl_put(&t, "ft-restore ended after ");
  ftl_put_secs(&t, ev->ms);
  ftl_put(&t, " s: exit status %d", lost0 ? 0 : rc);
  if (lost0)
    ftl_put(&t, ", but mpirun lost a daemon: not a success");
  ftl_say_text(m, FT_LAUNCH_SAY_STAMP, &t);
  if (rc != 0)
    ftl_act(m, FT_LAUNCH_ACT_MPIRUN_SAID);
  if (m->attempt || m->restarts_done)
    m->hold = 0, m->fresh = 0;
  m->restore_fresh = (ev->flags & FT_LAUNCH_FRESH) != 0;
  m->full_host = ftl_find(m, ev->host);
  m->lost_end = rc == 4 || rc == 124;
  switch (rc) {
  case 0:
    ftl_restored(m);
    break;
  case 3:
    ftl_say(m, 0,
            "ft-restore: too many losses, the job cannot be recovered "
            "(exit 3)");
    ftl_recovered(m, 3);
    break;
  case 124:
    ftl_say(m, 0,
            "ft-restore ended by the watchdog: a host of it became "
            "unreachable");
    ftl_recovered(m, 124);
    break;
  case 4:
    ftl_say(m, 0, "ft-restore stopped: a host of it fell silent (exit 4)");
    ftl_recovered(m, 4);
    break;
  case 5:
    ftl_next_spare(m);
    break;
  default:
    if (ev->nhosts > 0) {
      /* mpirun lost its daemon on a host of it: a loss, as an attempt's
       * (125) */
      ftl_text_t t;
      ftl_open(m, &t);
      ftl_put(&t, "ft-restore failed (exit %d): ", ev->status);
      ftl_put_named_by(&t, (ev->flags & FT_LAUNCH_SLURM_NAMED) != 0, 0);
      for (int i = 0; i < ev->nhosts; i++)
        ftl_put(&t, "%s%s", i ? " " : "", ev->hosts[i]);
      ftl_say_text(m, 0, &t);
      m->lost_end = 1;
      ftl_recovered(m, 125);
      break;
    }
    ftl_say(m, 0, "ft-restore failed (exit %d)", rc);
    ftl_recovered(m, 1);
  }
}

/* ---- the watchdog's verdict, signals ---- */

static void ftl_unreachable(ft__launch_t *m, const ft__launch_event_t *ev) {
  if (m->verdict)
    return; /* the watchdog judges once a run */
  m->verdict = 1;
  unsigned long long s = (unsigned long long)((ev->ms + 999) / 1000);
  const char *h = ev->host ? ev->host : "";
  ftl_text_t t;
  ftl_open(m, &t);
  if (m->cluster)
    ftl_put(&t,
            "host %s unreachable for %llu s (timeout %s s%s): ending the "
            "job",
            h, s, m->timeout,
            (ev->flags & FT_LAUNCH_PING_WAIT) ? ", a ping waits 3 s" : "");
  else if (m->slurm)
    ftl_put(&t,
            "Slurm has reported host %s down or not responding for %llu s "
            "(timeout %s s): ending the job",
            h, s, m->timeout);
  else {
    ftl_put(&t, "host %s cannot run a command for %llu s (", h, s);
    ftl_put_probe_words(m, &t);
    ftl_put(&t, "; timeout %s s): ending the job", m->timeout);
  }
  ftl_say_text(m, 0, &t);
  ftl_act(m, FT_LAUNCH_ACT_END);
}

static void ftl_signal(ft__launch_t *m, int signo) {
  ftl_act(m, FT_LAUNCH_ACT_HELD);
  ftl_say(m, 0, "interrupted: ending the job");
  ftl_exit(m, 128 + signo, FT_LAUNCH_INTERRUPTED);
}

static void ftl_start(ft__launch_t *m) {
  if (m->restore_first) {
    /* As a restart's ft-restore: what its failure regroups from. */
    m->pre_hosts = m->hosts, m->pre_spares_left = m->spares_left;
    ftl_run_restore(m);
    return;
  }
  if (!ftl_build(m))
    return;
  ftl_summary(m);
  ftl_attempt(m);
}

/* ---- the interface ---- */

static int ftl_ended(int state) {
  return state == FT_LAUNCH_DONE || state == FT_LAUNCH_GIVEN_UP ||
         state == FT_LAUNCH_INTERRUPTED;
}

static int ftl_running(int state) {
  return state == FT_LAUNCH_RUNNING || state == FT_LAUNCH_REBUILDING ||
         state == FT_LAUNCH_RESTORING;
}

static int ftl_probing(int state) {
  return state == FT_LAUNCH_FINDING || state == FT_LAUNCH_REGROUPING ||
         state == FT_LAUNCH_ASKING;
}

/* FT_OK when the state awaits ev, else why not. */
static int ftl_check(const ft__launch_t *m, const ft__launch_event_t *ev) {
  switch (ev->kind) {
  case FT_LAUNCH_EV_START:
    return m->state == FT_LAUNCH_STARTING ? FT_OK : FT_ESTATE;
  case FT_LAUNCH_EV_EXIT:
  case FT_LAUNCH_EV_UNREACHABLE:
    return ftl_running(m->state) ? FT_OK : FT_ESTATE;
  case FT_LAUNCH_EV_PROBED:
    return ftl_probing(m->state) ? FT_OK : FT_ESTATE;
  case FT_LAUNCH_EV_SIGNAL:
    if (ev->signo != SIGINT && ev->signo != SIGTERM && ev->signo != SIGHUP)
      return FT_EINVAL;
    return ftl_ended(m->state) ? FT_ESTATE : FT_OK;
  default:
    return FT_EINVAL;
  }
}

static void ftl_probed(ft__launch_t *m, const ft__launch_event_t *ev) {
  uint8_t failed[FT_LAUNCH_HOSTS_MAX];
  ftl_mark(m, failed, ev->hosts, ev->nhosts);
  for (int i = 0; i < m->asked.n; i++)
    m->down[m->asked.id[i]] = failed[m->asked.id[i]];
  if (m->state == FT_LAUNCH_FINDING)
    ftl_found_lost(m);
  else if (m->state == FT_LAUNCH_REGROUPING)
    ftl_found_spares(m);
  else
    ftl_asked(m);
}

static void ftl_dispatch(ft__launch_t *m, const ft__launch_event_t *ev) {
  switch (ev->kind) {
  case FT_LAUNCH_EV_START:
    ftl_start(m);
    break;
  case FT_LAUNCH_EV_EXIT:
    ftl_mark(m, m->named, ev->hosts, ev->nhosts);
    m->named_slurm = (ev->flags & FT_LAUNCH_SLURM_NAMED) != 0;
    for (int i = 0; i < m->nnames; i++)
      if (m->named[i])
        m->by_slurm[i] = (uint8_t)m->named_slurm;
    if (m->state == FT_LAUNCH_RESTORING)
      ftl_restore_exit(m, ev);
    else
      ftl_job_exit(m, ev);
    break;
  case FT_LAUNCH_EV_UNREACHABLE:
    ftl_unreachable(m, ev);
    break;
  case FT_LAUNCH_EV_PROBED:
    ftl_probed(m, ev);
    break;
  default:
    ftl_signal(m, ev->signo);
  }
}

int ft__launch_event(ft__launch_t *m, const ft__launch_event_t *ev) {
  if (!m || !ev)
    return FT_EINVAL;
  int rc = ftl_check(m, ev);
  if (rc != FT_OK)
    return rc;
  if ((m->qn || m->resume) && ev->kind != FT_LAUNCH_EV_SIGNAL)
    return FT_ESTATE;
  m->qhead = m->qn = 0, m->text_used = 0, m->resume = 0;
  ftl_dispatch(m, ev);
  return m->overflow ? FT_ERANGE : FT_OK;
}

int ft__launch_action(ft__launch_t *m, ft__launch_action_t *out) {
  if (!m)
    return 0;
  if (!m->qn && m->resume) {
    m->resume = 0, m->qhead = 0, m->text_used = 0;
    ftl_recover(m);
  }
  if (!m->qn)
    return 0;
  *out = m->q[m->qhead++];
  m->qn--;
  return 1;
}

/* ---- init ---- */

static int ftl_copy(char *dst, size_t cap, const char *src) {
  if (!src)
    src = "";
  size_t n = strlen(src);
  if (n >= cap)
    return FT_ERANGE;
  memcpy(dst, src, n + 1);
  return FT_OK;
}

static int ftl_name_ok(const char *s) {
  size_t n = s ? strnlen(s, FT_LAUNCH_NAME_MAX) : 0;
  if (n == 0 || n >= FT_LAUNCH_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')
      return 0;
  return 1;
}

/* The name's index, added when new; -1 for a bad name or a full table. */
static int ftl_intern(ft__launch_t *m, const char *name, int *rc) {
  if (!ftl_name_ok(name)) {
    *rc = FT_EINVAL;
    return -1;
  }
  int id = ftl_find(m, name);
  if (id >= 0)
    return id;
  if (m->nnames == FT_LAUNCH_HOSTS_MAX) {
    *rc = FT_ERANGE;
    return -1;
  }
  memcpy(m->names[m->nnames], name, strlen(name) + 1);
  return m->nnames++;
}

static int ftl_init_hosts(ft__launch_t *m, const ft__launch_config_t *c) {
  int rc = FT_OK;
  if (c->nhosts > FT_LAUNCH_HOSTS_MAX || c->npool > FT_LAUNCH_HOSTS_MAX)
    return FT_ERANGE;
  for (int i = 0; i < c->nhosts; i++) {
    int id = ftl_intern(m, c->hosts[i], &rc);
    if (id < 0)
      return rc;
    if (ftl_has(&m->hosts, id))
      return FT_EINVAL; /* a host twice in the job */
    ftl_add(&m->hosts, id);
  }
  for (int i = 0; i < c->npool; i++) {
    int id = ftl_intern(m, c->pool[i], &rc);
    if (id < 0)
      return rc;
    if (!ftl_has(&m->pool, id))
      ftl_add(&m->pool, id);
  }
  return FT_OK;
}

static int ftl_config_ok(const ft__launch_config_t *c) {
  if (c->nhosts < 0 || c->npool < 0 || c->spares < 0 || c->restarts < 0 ||
      c->ec_k < 0 || c->ec_m < 0)
    return 0;
  if ((c->nhosts && !c->hosts) || (c->npool && !c->pool))
    return 0;
  if (c->nhosts == 0 && c->nodes < 1)
    return 0;
  return c->cluster || c->nhosts == 0 || (c->probe && c->probe_tries >= 1);
}

static int ftl_init_config(ft__launch_t *m, const ft__launch_config_t *c) {
  if (!ftl_config_ok(c))
    return FT_EINVAL;
  m->restarts = c->restarts, m->cluster = c->cluster != 0;
  m->slurm = c->slurm != 0;
  m->probe_tries = c->probe_tries, m->restore_job = c->restore_job != 0;
  m->one_per_node = c->one_per_node != 0, m->cold = c->cold_spares != 0;
  m->restore_first = c->restore_first != 0;
  m->shrunk = c->shrunk != 0;
  m->ec_k = c->ec_k, m->ec_m = c->ec_k ? c->ec_m : 0;
  if (ftl_copy(m->probe, sizeof(m->probe), c->probe) ||
      ftl_copy(m->timeout, sizeof(m->timeout), c->timeout) ||
      ftl_copy(m->ec_name, sizeof(m->ec_name), c->ec_name))
    return FT_ERANGE;
  int rc = ftl_init_hosts(m, c);
  if (rc != FT_OK)
    return rc;
  m->nodes = c->nhosts ? c->nhosts : c->nodes;
  m->spares_left = c->spares, m->fresh = c->fresh != 0, m->hold = 1;
  m->mode = FT_LAUNCH_REPLACE, m->said_k = m->said_m = -1;
  m->full_host = -1, m->code = -1, m->state = FT_LAUNCH_STARTING;
  return FT_OK;
}

/* Each name is at most once the target of a replacement, once lost and once
 * put back in what stands of RECOVERED (a loss that is undone is undone
 * with its record), and a run of "same hosts" is one record: 3 slots and
 * 6 records a name bound it; twice that is allocated.  The arena holds the
 * last line with every name in it several times over. */
static size_t ftl_text_cap(int nnames) { return 65536 + (size_t)nnames * 1024; }

static int ftl_init_store(ft__launch_t *m) {
  m->capslot = 6 * (uint32_t)m->nnames + 16;
  m->caprec = 12 * (uint32_t)m->nnames + 16;
  m->text_cap = ftl_text_cap(m->nnames);
  m->slot = ft__calloc(m->capslot, sizeof(*m->slot));
  m->rec = ft__calloc(m->caprec, sizeof(*m->rec));
  m->text = ft__malloc(m->text_cap);
  return m->slot && m->rec && m->text ? FT_OK : FT_ENOMEM;
}

int ft__launch_init(ft__launch_t **out, const ft__launch_config_t *cfg) {
  if (!out || !cfg)
    return FT_EINVAL;
  *out = NULL;
  ft__launch_t *m = ft__calloc(1, sizeof(*m));
  if (!m)
    return FT_ENOMEM;
  int rc = ftl_init_config(m, cfg);
  if (rc == FT_OK)
    rc = ftl_init_store(m);
  if (rc != FT_OK) {
    ft__launch_destroy(m);
    return rc;
  }
  *out = m;
  return FT_OK;
}

void ft__launch_destroy(ft__launch_t *m) {
  if (!m)
    return;
  ft__free(m->slot);
  ft__free(m->rec);
  ft__free(m->text);
  ft__free(m);
}

/* ---- accessors ---- */

int ft__launch_state(const ft__launch_t *m) { return m->state; }

int ft__launch_lost_end(const ft__launch_t *m) { return m && m->lost_end; }

int ft__launch_exit_code(const ft__launch_t *m) {
  return ftl_ended(m->state) ? m->code : -1;
}

int ft__launch_restarts_done(const ft__launch_t *m) { return m->restarts_done; }

int ft__launch_spares_left(const ft__launch_t *m) { return m->spares_left; }

int ft__launch_hosts(const ft__launch_t *m, const char **out, int max) {
  for (int i = 0; i < m->hosts.n && i < max; i++)
    out[i] = ftl_name(m, m->hosts.id[i]);
  return m->hosts.n;
}

int ft__launch_candidates(const ft__launch_t *m, const char **out, int max) {
  int n = 0;
  for (int i = 0; i < m->pool.n && n < m->spares_left; i++) {
    if (!ftl_candidate(m, m->pool.id[i]))
      continue;
    if (n < max)
      out[n] = ftl_name(m, m->pool.id[i]);
    n++;
  }
  return n;
}

int ft__launch_machine_spares(const ft__launch_t *m, char *buf, size_t len) {
  size_t n = 0;
  if (len)
    buf[0] = '\0';
  if (m->cluster || m->spares_left <= 0)
    return 0;
  for (int i = 0; i < m->pool.n; i++) {
    if (ftl_has(&m->hosts, m->pool.id[i]))
      continue;
    const char *h = ftl_name(m, m->pool.id[i]);
    char *at = n < len ? buf + n : NULL;
    size_t room = n < len ? len - n : 0;
    int w = n ? snprintf(at, room, " %s", h)
              : snprintf(at, room, "spares: up to %d of %s", m->spares_left, h);
    n += w > 0 ? (size_t)w : 0;
  }
  return (int)n;
}

const char *ft__launch_state_name(int state) {
  static const char *const names[] = {
      "starting",   "running",    "rebuilding", "finding lost hosts",
      "regrouping", "asking",     "restoring",  "done",
      "given up",   "interrupted"};
  if (state < 0 || state > FT_LAUNCH_INTERRUPTED)
    return "unknown";
  return names[state];
}

const char *ft__launch_mode_name(int mode) {
  return mode == FT_LAUNCH_SHRINK ? "shrink" : "replace";
}
