/*
 * The filter of launch/filter.h, rule by rule, a line at a time, in the C
 * locale.  Its outputs: HIDE for mpirun's own text, TIMES for the times
 * lines, TELL for ft-launch's lines about a recovery (at once or held: the
 * caller chooses), STAMPS for --times, PREPARE once the spares may be
 * prepared.  A recovery's stamps are an ft__stamps_t, whose keys keep the
 * order they were first set in.
 *
 * The rules of a failing attempt: the crash reports of Open MPI's signal
 * handler (opal/util/stacktrace.c; read before the notices), mpirun's
 * one-liners (ess_hnp's clean_abort, help-orterun.txt; after them), and
 * the program lines of that attempt, which are LATE.
 *
 * A line is bytes and a length: a NUL byte is kept as any other, and so
 * it is in the outputs (the kept texts have a blank in its place, so
 * that they read to their end as strings).  Bytes wait in a line of their
 * own until their "\n"; a whole line already in the buffer fed is read
 * where it is.
 *
 * Outputs are records of a queue whose texts live in one arena, each at an
 * offset; both are emptied at the next feed once everything was read.  On
 * FT_ENOMEM what could not be kept or queued is lost: the line being read
 * (the rest of it is skipped up to its "\n") or the output being queued;
 * the lines after it are read as before.
 */
#include "launch/filter.h"

#include <string.h>

#include "base/alloc.h"
#include "ftrt.h"

/* A banner's lines of dashes (Open MPI's and PRRTE's show_help); PRRTE's
 * plm ssh frames its message on standard output with 60. */
#define DASHES_LEN 74
#define DASHES_SHORT 60

static const char DASHES[DASHES_LEN + 1] =
    "------------------------------------------------------------------"
    "--------";

/* The kinds of ftrt-times lines (base/times.h), with their own keys. */
enum { K_JOB, K_STEP, K_RESTORE, K_FRESH, K_FULL, K_SLOTS, K_N };
static const struct {
  const char *what;
  const char *keys[6];
} KINDS[K_N] = {
    [K_JOB] = {"job", {"mpi_ms", "init_ms", "restored_ms"}},
    [K_STEP] = {"step", {"step_ms"}},
    [K_RESTORE] = {"restore",
                   {"mpi_ms", "survey_ms", "rebuilt_ms", "bytes", "prepared"}},
    [K_FRESH] = {"fresh", {"fresh_ms"}},
    [K_FULL] = {"full", {"full_host"}},
    [K_SLOTS] = {"slots", {"slot_bytes"}},
};

typedef struct {
  int kind;
  size_t off, len;
  uint64_t bytes;
} rec_t;

/* A crash report of Open MPI's signal handler under way: its lines, each
 * after the prefix "[host:pid] " that starts them all. */
typedef struct {
  char *prefix; /* "[host:pid] " */
  size_t plen;
  ft__text_t text; /* the block as one line so far */
  int said;        /* its summary shown, or counted in `more` */
} block_t;

/* Summaries of crash reports shown an attempt; the others are counted. */
#define SIGNALS_MAX 4

struct ft__filter {
  char *tag; /* "ftrt-times: ID " */
  size_t taglen;
  int account, verbose;
  ft__stamps_t t;           /* the awk's T */
  unsigned seen;            /* a bit per kind: its first line came */
  ft__text_t line;          /* the line under way, until its "\n" */
  int skip;                 /* the line under way was lost: up to its "\n" */
  int inside;               /* after a line of dashes */
  ft__text_t held;          /* the lines held since, each after a "\n" */
  ft__text_t times, hidden; /* kept */
  ft__text_t arena;         /* the texts of the queue */
  rec_t *q;
  size_t qhead, qn, qcap;
  ft__text_t tmp;   /* a line of ft-launch's, while it is made */
  ft__text_t say;   /* a summary of ft-launch's, while it is made */
  int failing;      /* the attempt is failing: program lines are held */
  size_t late;      /* program lines held (LATE) since the last end */
  int noticed;      /* a rank's signal told (once an attempt) */
  int after_mpirun; /* the last line was mpirun's abort */
  block_t *blocks;  /* the crash reports open, in the order they came */
  size_t nblocks, capblocks;
  unsigned signals; /* their summaries shown */
  size_t more;      /* past SIGNALS_MAX, not told yet */
  char *log;        /* where the caller keeps LATE, or NULL */
  /* The launcher's standard output (ft__filter_feed_out): its line under
   * way (its first OUT_LINE_MAX bytes), the message being captured and
   * its lines so far (0: none). */
  ft__text_t out_line, out_held;
  int out_lines;
};

/* ---- the queue ---- */

static int queue(ft__filter_t *f, int kind, const char *s, size_t n,
                 int newline, uint64_t bytes) {
  if (f->qn == f->qcap) {
    size_t cap = f->qcap ? f->qcap * 2 : 16;
    rec_t *q = ft__realloc(f->q, cap * sizeof(*q));
    if (!q)
      return FT_ENOMEM;
    f->q = q;
    f->qcap = cap;
  }
  size_t off = f->arena.len;
  if (ft__text_addn(&f->arena, s, n) != FT_OK ||
      (newline && ft__text_add(&f->arena, "\n") != FT_OK)) {
    f->arena.len = off;
    if (f->arena.s)
      f->arena.s[off] = '\0';
    return FT_ENOMEM;
  }
  f->q[f->qn++] = (rec_t){kind, off, f->arena.len - off, bytes};
  return FT_OK;
}

/* out(line): the line for our stderr, with its "\n". */
static int out(ft__filter_t *f, const char *s, size_t n) {
  return queue(f, FT_FILTER_SHOW, s, n, 1, 0);
}

/* Kept: the line and a "\n", a NUL byte of it as a blank. */
static int keep(ft__text_t *t, const char *s, size_t n) {
  size_t had = t->len;
  for (size_t i = 0; i < n;) {
    const char *z = memchr(s + i, '\0', n - i);
    size_t run = z ? (size_t)(z - (s + i)) : n - i;
    if (ft__text_addn(t, s + i, run) != FT_OK ||
        (z && ft__text_add(t, " ") != FT_OK))
      goto fail;
    i += run + (z != NULL);
  }
  if (ft__text_add(t, "\n") == FT_OK)
    return FT_OK;
fail:
  t->len = had;
  if (t->s)
    t->s[had] = '\0';
  return FT_ENOMEM;
}

/* hide(line): mpirun's text, kept and queued. */
static int hide(ft__filter_t *f, const char *s, size_t n) {
  if (keep(&f->hidden, s, n) != FT_OK)
    return FT_ENOMEM;
  return queue(f, FT_FILTER_HIDE, s, n, 0, 0);
}

/* A line of ft-launch's about the recovery (tmp), then the stamps, only
 * those of keys (NULL: all). */
static int tell_and_stamps(ft__filter_t *f, const char *keys) {
  if (queue(f, FT_FILTER_TELL, f->tmp.s, f->tmp.len, 0, 0) != FT_OK)
    return FT_ENOMEM;
  ft__text_clear(&f->tmp);
  if (ft__stamps_format(&f->t, keys, &f->tmp) != FT_OK)
    return FT_ENOMEM;
  return queue(f, FT_FILTER_STAMPS, f->tmp.s, f->tmp.len, 0, 0);
}

/* ---- the lines ---- */

static int is_dashes(const char *s, size_t n) {
  return n == DASHES_LEN && memcmp(s, DASHES, n) == 0;
}

/* The awk's /^\[[^] ]+:[0-9]+\] /: "[host:pid] " at the start, where
 * host:pid is the run of bytes up to the first "]" or blank, that "]"
 * followed by a blank, and pid the digits that end the run after a ":"
 * that is not the run's first byte.  Its length ("[host:pid] "), or 0. */
static size_t notice_prefix(const char *s, size_t n) {
  if (n < 2 || s[0] != '[')
    return 0;
  size_t j = 1;
  while (j < n && s[j] != ']' && s[j] != ' ')
    j++;
  if (j + 1 >= n || s[j] != ']' || s[j + 1] != ' ')
    return 0;
  size_t k = j;
  while (k > 1 && s[k - 1] >= '0' && s[k - 1] <= '9')
    k--;
  if (k == j || k < 3 || s[k - 1] != ':')
    return 0;
  return j + 2;
}

/* A notice: the prefix, in a line without "***". */
static int is_notice(const char *s, size_t n, size_t prefix) {
  return prefix && memmem(s, n, "***", 3) == NULL;
}

static int starts(const char *s, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n >= l && memcmp(s, lit, l) == 0;
}

static int blank(char c) { return c == ' ' || c == '\t'; }

/* The next word of [*p, end) (awk's split(S, W, " ")), 0 at the end. */
static int word(const char **p, const char *end, const char **w, size_t *n) {
  const char *s = *p;
  while (s < end && blank(*s))
    s++;
  if (s == end)
    return 0;
  *w = s;
  while (s < end && !blank(*s))
    s++;
  *n = (size_t)(s - *w);
  *p = s;
  return 1;
}

/* split(w, kv, "="): kv[1] and kv[2] (the bytes between the first "=" and
 * the next; none without an "="). */
static void kv_of(const char *w, size_t n, size_t *klen, const char **v,
                  size_t *vlen) {
  const char *eq = memchr(w, '=', n);
  *klen = eq ? (size_t)(eq - w) : n;
  *v = eq ? eq + 1 : w + n;
  const char *next = memchr(*v, '=', (size_t)(w + n - *v));
  *vlen = (size_t)((next ? next : w + n) - *v);
}

static int kind_of(const char *w, size_t n) {
  for (int k = 0; k < K_N; k++)
    if (strlen(KINDS[k].what) == n && memcmp(KINDS[k].what, w, n) == 0)
      return k;
  return -1;
}

static int own_key(int kind, const char *k, size_t n) {
  for (int i = 0; KINDS[kind].keys[i]; i++)
    if (strlen(KINDS[kind].keys[i]) == n &&
        memcmp(KINDS[kind].keys[i], k, n) == 0)
      return 1;
  return 0;
}

static int alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9');
}

/* A value of key: ^[0-9]+$, a host name for full_host. */
static int good_value(int host, const char *v, size_t n) {
  if (n == 0 || (host && !alnum(v[0])))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (host ? !(alnum(v[i]) || v[i] == '.' || v[i] == '_' || v[i] == '-')
             : !(v[i] >= '0' && v[i] <= '9'))
      return 0;
  return 1;
}

/* slot_bytes, its digits read to a number (the largest, past it). */
static uint64_t bytes_of(const char *v, size_t n) {
  uint64_t b = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned d = (unsigned)(v[i] - '0');
    if (b > (UINT64_MAX - d) / 10)
      return UINT64_MAX;
    b = b * 10 + d;
  }
  return b;
}

/* The words of the line after the kind into the table (a restore's keys
 * with r_, as ft-restore's). */
static int stamp_words(ft__filter_t *f, int kind, const char *p,
                       const char *end) {
  const char *w, *v;
  size_t n, klen, vlen;
  ft__text_t k = FT__TEXT_INIT, val = FT__TEXT_INIT;
  int rc = FT_OK;
  while (rc == FT_OK && word(&p, end, &w, &n)) {
    kv_of(w, n, &klen, &v, &vlen);
    ft__text_clear(&k);
    ft__text_clear(&val);
    if (ft__text_add(&k, kind == K_RESTORE ? "r_" : "") != FT_OK ||
        ft__text_addn(&k, w, klen) != FT_OK ||
        ft__text_addn(&val, v, vlen) != FT_OK ||
        ft__stamps_set(&f->t, ft__text_str(&k), ft__text_str(&val)) != FT_OK)
      rc = FT_ENOMEM;
  }
  ft__text_free(&k);
  ft__text_free(&val);
  return rc;
}

/* ---- the attempt failing ---- */

/* ftrt's own lines and its tools': "ftrt[h1 r3 smp] error: ...", "ftrt:
 * ...", "ft-restore: ...", "ft-train-example: ...". */
static int own_line(const char *s, size_t n) {
  return starts(s, n, "ftrt[") || starts(s, n, "ftrt:") || starts(s, n, "ft-");
}

/* A line of the program: shown; once the attempt is failing (and not one
 * of ftrt's own), LATE instead, and with --verbose shown as well. */
static int program(ft__filter_t *f, const char *s, size_t n) {
  if (!f->failing || own_line(s, n))
    return out(f, s, n);
  if (queue(f, FT_FILTER_LATE, s, n, 1, 0) != FT_OK)
    return FT_ENOMEM;
  f->late++;
  return f->verbose ? out(f, s, n) : FT_OK;
}

/* A line of ft-launch's own (f->say), shown. */
static int say(ft__filter_t *f) {
  return out(f, f->say.s ? f->say.s : "", f->say.len);
}

/* The awk's stamp_line: 1 when the line was one of ftrt-times (shown
 * before it what came before the tag), 0 when not, or FT_ENOMEM. */
static int stamp_line(ft__filter_t *f, const char *s, size_t n) {
  const char *at = memmem(s, n, f->tag, f->taglen);
  if (!at)
    return 0;
  if (at > s && program(f, s, (size_t)(at - s)) != FT_OK)
    return FT_ENOMEM;
  const char *end = s + n, *p = at + f->taglen, *w, *v;
  size_t wn, klen, vlen;
  if (!word(&p, end, &w, &wn))
    return 1;
  int kind = kind_of(w, wn);
  if (kind < 0 || (f->seen & (1u << kind)))
    return 1;
  f->seen |= 1u << kind;
  const char *words = p;
  uint64_t bytes = 0;
  for (int i = 0; word(&p, end, &w, &wn); i++) {
    kv_of(w, wn, &klen, &v, &vlen);
    if (!own_key(kind, w, klen) || !good_value(kind == K_FULL, v, vlen))
      return 1; /* not all of it ours: none of it */
    if (i == 0)
      bytes = bytes_of(v, vlen);
  }
  if (keep(&f->times, at, (size_t)(end - at)) != FT_OK)
    return FT_ENOMEM;
  if (queue(f, FT_FILTER_TIMES, at, (size_t)(end - at), 0, 0) != FT_OK)
    return FT_ENOMEM;
  /* The job is past its start-up: its free spares may be prepared. */
  if (kind == K_SLOTS && queue(f, FT_FILTER_PREPARE, "", 0, 0, bytes) != FT_OK)
    return FT_ENOMEM;
  if (!f->account)
    return 1;
  if (stamp_words(f, kind, words, end) != FT_OK)
    return FT_ENOMEM;
  const char *r = ft__stamps_get(&f->t, "recovery");
  ft__text_clear(&f->tmp);
  if (kind == K_JOB) {
    if (ft__account_line(&f->t, &f->tmp) != FT_OK)
      return FT_ENOMEM;
    if (!ft__stamps_get(&f->t, "restores") &&
        ft__account_reads_restores(&f->t) &&
        ft__stamps_set(&f->t, "restores", "") != FT_OK)
      return FT_ENOMEM;
    if (tell_and_stamps(f, NULL) != FT_OK)
      return FT_ENOMEM;
  } else if (kind == K_FRESH) {
    if (ft__text_addf(&f->tmp,
                      "ft-launch: recovery %s: nothing had been committed "
                      "before the failure: the job starts afresh",
                      r ? r : "") != FT_OK ||
        tell_and_stamps(f, NULL) != FT_OK)
      return FT_ENOMEM;
  } else if (kind == K_STEP && ft__stamps_get(&f->t, "restored_ms")) {
    if (ft__text_addf(&f->tmp,
                      "ft-launch: recovery %s: its first step after the "
                      "restore took ",
                      r ? r : "") != FT_OK ||
        ft__stamps_span(&f->t, "restored_ms", "step_ms", &f->tmp) != FT_OK ||
        ft__text_add(&f->tmp, " s") != FT_OK ||
        tell_and_stamps(f, "step_ms") != FT_OK)
      return FT_ENOMEM;
  }
  return 1;
}

/* The banner held since the first line of dashes, as one line: each held
 * line after a blank, runs of blanks squeezed to one, the first dropped. */
static int banner_of(ft__filter_t *f, const ft__text_t *held) {
  ft__text_t *t = &f->tmp;
  ft__text_clear(t);
  int was_blank = 1; /* the first blank is dropped */
  for (size_t i = 0; i < held->len; i++) {
    char c = held->s[i] == '\n' ? ' ' : held->s[i];
    if (blank(c) && was_blank)
      continue;
    was_blank = blank(c);
    if (ft__text_addn(t, was_blank ? " " : &c, 1) != FT_OK)
      return FT_ENOMEM;
  }
  return hide(f, ft__text_str(t), t->len);
}

static int banner(ft__filter_t *f) { return banner_of(f, &f->held); }

/* ---- mpirun's one-liners ---- */

static const char MPIRUN[] = "mpirun: ", NOTICED[] = "mpirun noticed that ",
                  ABORTING[] = "mpirun: abort is already in progress";

/* The literal lit at *p (before end): 1 and *p past it. */
static int lit(const char **p, const char *end, const char *lit) {
  size_t l = strlen(lit);
  if ((size_t)(end - *p) < l || memcmp(*p, lit, l) != 0)
    return 0;
  *p += l;
  return 1;
}

/* A run at *p of digits (num) or of bytes up to a blank: its start and
 * length, *p past it; 0 when empty. */
static int run_of(const char **p, const char *end, int num, const char **r,
                  size_t *rn) {
  const char *q = *p;
  while (q < end && (num ? *q >= '0' && *q <= '9' : !blank(*q)))
    q++;
  *r = *p;
  *rn = (size_t)(q - *p);
  *p = q;
  return *rn > 0;
}

/* "mpirun noticed that process rank N with PID P on node H exited on
 * signal S (NAME)." (help-orterun.txt, proc-aborted-strsignal; without
 * " (NAME)", proc-aborted): once an attempt, its summary. */
static int rank_signal(ft__filter_t *f, const char *s, size_t n) {
  const char *p = s, *end = s + n, *rank, *pid, *host, *sig, *name = NULL;
  size_t rn, pn, hn, sn, nn = 0;
  if (!lit(&p, end, NOTICED) || !lit(&p, end, "process rank ") ||
      !run_of(&p, end, 1, &rank, &rn) || !lit(&p, end, " with PID ") ||
      !run_of(&p, end, 1, &pid, &pn) || !lit(&p, end, " on node ") ||
      !run_of(&p, end, 0, &host, &hn) || !lit(&p, end, " exited on signal ") ||
      !run_of(&p, end, 1, &sig, &sn))
    return FT_OK;
  if (lit(&p, end, " (")) {
    const char *close = end;
    while (close > p && close[-1] != ')')
      close--;
    if (close == p)
      return FT_OK;
    name = p;
    nn = (size_t)(close - 1 - p);
    p = close;
  }
  lit(&p, end, ".");
  if (p != end || f->noticed)
    return FT_OK;
  f->noticed = 1;
  if (f->verbose)
    return FT_OK;
  ft__text_clear(&f->say);
  if (ft__text_add(&f->say, "ft-launch: mpirun: rank ") != FT_OK ||
      ft__text_addn(&f->say, rank, rn) != FT_OK ||
      ft__text_add(&f->say, " (pid ") != FT_OK ||
      ft__text_addn(&f->say, pid, pn) != FT_OK ||
      ft__text_add(&f->say, ") on ") != FT_OK ||
      ft__text_addn(&f->say, host, hn) != FT_OK ||
      ft__text_add(&f->say, " ended on signal ") != FT_OK ||
      ft__text_addn(&f->say, sig, sn) != FT_OK ||
      (name && (ft__text_add(&f->say, " (") != FT_OK ||
                ft__text_addn(&f->say, name, nn) != FT_OK ||
                ft__text_add(&f->say, ")") != FT_OK)))
    return FT_ENOMEM;
  return say(f);
}

/* One of mpirun's own lines that is no notice: "mpirun: ..." (its abort,
 * a signal forwarded) or "mpirun noticed that ..." outside a banner.
 * Hidden, not kept; the attempt is failing when it aborts or noticed a
 * process gone. */
static int mpirun_line(ft__filter_t *f, const char *s, size_t n) {
  int rc = queue(f, FT_FILTER_HIDE, s, n, 0, 0);
  if (f->verbose && out(f, s, n) != FT_OK)
    rc = FT_ENOMEM;
  if (starts(s, n, ABORTING) || starts(s, n, NOTICED))
    f->failing = 1;
  if (starts(s, n, NOTICED) && rank_signal(f, s, n) != FT_OK)
    rc = FT_ENOMEM;
  /* Its abort is followed by an empty line: that line is mpirun's too. */
  f->after_mpirun = starts(s, n, ABORTING);
  return rc;
}

/* A banner that says the attempt is failing: a daemon lost
 * (help-errmgr-base.txt, node-died: ORTE's, PRRTE's), a process gone
 * (help-orterun.txt, proc-aborted*; PRRTE's the same). */
static int failing_banner(const char *s, size_t n) {
  static const char *const says[] = {
      "ORTE has lost communication with a remote daemon.",
      "PRTE has lost communication with a remote daemon.",
      "noticed that process rank ", "noticed that the job aborted"};
  for (size_t i = 0; i < sizeof(says) / sizeof(*says); i++)
    if (memmem(s, n, says[i], strlen(says[i])))
      return 1;
  return 0;
}

/* ---- crash reports ---- */

static const char RECEIVED[] = "*** Process received signal ***",
                  ENDED[] = "*** End of error message ***",
                  SIGNAL[] = "Signal: ";

static block_t *block_of(ft__filter_t *f, const char *s, size_t prefix) {
  for (size_t i = 0; i < f->nblocks; i++)
    if (f->blocks[i].plen == prefix &&
        memcmp(f->blocks[i].prefix, s, prefix) == 0)
      return &f->blocks[i];
  return NULL;
}

/* The summary of block b: "ft-launch: process PID on HOST received signal
 * S (NAME) (the rest: --verbose)", from its "Signal: NAME (S)" line (sig,
 * NULL: none came); past SIGNALS_MAX, counted. */
static int block_say(ft__filter_t *f, block_t *b, const char *sig, size_t sn) {
  if (b->said)
    return FT_OK;
  b->said = 1;
  if (f->verbose)
    return FT_OK;
  if (f->signals >= SIGNALS_MAX) {
    f->more++;
    return FT_OK;
  }
  f->signals++;
  /* "[host:pid] ": the host up to the last ":", the pid without the
   * zeros Open MPI pads it with (%05d). */
  const char *host = b->prefix + 1, *colon = b->prefix + b->plen - 2;
  while (colon[-1] != ':')
    colon--;
  const char *pid = colon, *pend = b->prefix + b->plen - 2;
  while (pid + 1 < pend && *pid == '0')
    pid++;
  ft__text_t *t = &f->say;
  ft__text_clear(t);
  if (ft__text_add(t, "ft-launch: process ") != FT_OK ||
      ft__text_addn(t, pid, (size_t)(pend - pid)) != FT_OK ||
      ft__text_add(t, " on ") != FT_OK ||
      ft__text_addn(t, host, (size_t)(colon - 1 - host)) != FT_OK ||
      ft__text_add(t, " received ") != FT_OK)
    return FT_ENOMEM;
  int rc = FT_OK;
  if (!sig) {
    rc = ft__text_add(t, "a signal");
  } else {
    /* "NAME (S)" as "signal S (NAME)"; else as it is. */
    const char *open = NULL, *num = NULL;
    if (sn > 3 && sig[sn - 1] == ')') {
      const char *q = sig + sn - 1;
      while (q > sig && q[-1] >= '0' && q[-1] <= '9')
        q--;
      if (q < sig + sn - 1 && q - sig >= 2 && q[-1] == '(' && q[-2] == ' ')
        open = q - 2, num = q;
    }
    rc = ft__text_add(t, "signal ");
    if (rc == FT_OK && open)
      rc = ft__text_addn(t, num, (size_t)(sig + sn - 1 - num)) == FT_OK &&
                   ft__text_add(t, " (") == FT_OK &&
                   ft__text_addn(t, sig, (size_t)(open - sig)) == FT_OK &&
                   ft__text_add(t, ")") == FT_OK
               ? FT_OK
               : FT_ENOMEM;
    else if (rc == FT_OK)
      rc = ft__text_addn(t, sig, sn);
  }
  if (rc != FT_OK || ft__text_add(t, " (the rest: --verbose)") != FT_OK)
    return FT_ENOMEM;
  return say(f);
}

/* The block i ended (its last line, the end of the input, a new report of
 * the same process): hidden as one line, its summary if not yet said. */
static int block_close(ft__filter_t *f, size_t i) {
  block_t *b = &f->blocks[i];
  int rc = queue(f, FT_FILTER_HIDE, ft__text_str(&b->text), b->text.len, 0, 0);
  if (block_say(f, b, NULL, 0) != FT_OK)
    rc = FT_ENOMEM;
  ft__free(b->prefix);
  ft__text_free(&b->text);
  memmove(b, b + 1, (f->nblocks - i - 1) * sizeof(*b));
  f->nblocks--;
  return rc;
}

/* "[host:pid] *** Process received signal ***": a crash report starts,
 * and the attempt is failing. */
static int block_open(ft__filter_t *f, const char *s, size_t n, size_t prefix) {
  f->failing = 1;
  if (f->nblocks == f->capblocks) {
    size_t cap = f->capblocks ? f->capblocks * 2 : 4;
    block_t *b = ft__realloc(f->blocks, cap * sizeof(*b));
    if (!b)
      return FT_ENOMEM;
    f->blocks = b;
    f->capblocks = cap;
  }
  block_t b = {.plen = prefix};
  b.prefix = ft__malloc(prefix);
  if (!b.prefix || ft__text_addn(&b.text, s, n) != FT_OK) {
    ft__free(b.prefix);
    ft__text_free(&b.text);
    return FT_ENOMEM;
  }
  memcpy(b.prefix, s, prefix);
  f->blocks[f->nblocks++] = b;
  return f->verbose ? out(f, s, n) : FT_OK;
}

/* A line of the open block b ("[host:pid] " and the rest): joined to it
 * after a blank, without its prefix. */
static int block_line(ft__filter_t *f, block_t *b, const char *s, size_t n) {
  const char *r = s + b->plen;
  size_t rn = n - b->plen;
  int rc = FT_OK;
  size_t had = b->text.len;
  if (ft__text_add(&b->text, " ") != FT_OK ||
      ft__text_addn(&b->text, r, rn) != FT_OK) {
    b->text.len = had;
    if (b->text.s)
      b->text.s[had] = '\0';
    rc = FT_ENOMEM;
  }
  if (rn == sizeof(ENDED) - 1 && memcmp(r, ENDED, rn) == 0) {
    if (block_close(f, (size_t)(b - f->blocks)) != FT_OK)
      rc = FT_ENOMEM;
  } else if (starts(r, rn, SIGNAL) &&
             block_say(f, b, r + sizeof(SIGNAL) - 1,
                       rn - (sizeof(SIGNAL) - 1)) != FT_OK) {
    rc = FT_ENOMEM;
  }
  if (f->verbose && out(f, s, n) != FT_OK)
    rc = FT_ENOMEM;
  return rc;
}

/* One record of the awk: its rules in their order, and after them the
 * rules of the failing attempt. */
static int record(ft__filter_t *f, const char *s, size_t n) {
  int rc;
  int after_mpirun = f->after_mpirun;
  f->after_mpirun = 0;
  if (f->inside && is_dashes(s, n)) {
    rc = banner(f);
    if (failing_banner(ft__text_str(&f->tmp), f->tmp.len))
      f->failing = 1;
    if (f->verbose && out(f, DASHES, DASHES_LEN) != FT_OK)
      rc = FT_ENOMEM;
    f->inside = 0;
    ft__text_clear(&f->held);
    return rc;
  }
  if (f->inside) {
    /* Held with a "\n" before it: banner() makes it the blank the awk
     * put before each held line. */
    if (ft__text_add(&f->held, "\n") != FT_OK ||
        ft__text_addn(&f->held, s, n) != FT_OK)
      return FT_ENOMEM;
    return f->verbose ? out(f, s, n) : FT_OK;
  }
  if (is_dashes(s, n)) {
    f->inside = 1;
    ft__text_clear(&f->held);
    return f->verbose ? out(f, DASHES, DASHES_LEN) : FT_OK;
  }
  size_t prefix = notice_prefix(s, n);
  if (prefix) {
    block_t *b = block_of(f, s, prefix);
    if (n - prefix == sizeof(RECEIVED) - 1 &&
        memcmp(s + prefix, RECEIVED, n - prefix) == 0) {
      rc = b ? block_close(f, (size_t)(b - f->blocks)) : FT_OK;
      return block_open(f, s, n, prefix) != FT_OK ? FT_ENOMEM : rc;
    }
    if (b)
      return block_line(f, b, s, n);
  }
  if (is_notice(s, n, prefix)) {
    rc = hide(f, s, n);
    if (f->verbose && out(f, s, n) != FT_OK)
      rc = FT_ENOMEM;
    return rc;
  }
  if (after_mpirun && n == 0) {
    rc = queue(f, FT_FILTER_HIDE, s, n, 0, 0);
    if (f->verbose && out(f, s, n) != FT_OK)
      rc = FT_ENOMEM;
    return rc;
  }
  if (starts(s, n, MPIRUN) || starts(s, n, NOTICED))
    return mpirun_line(f, s, n);
  rc = stamp_line(f, s, n);
  if (rc != 0)
    return rc < 0 ? rc : FT_OK;
  return program(f, s, n);
}

/* ---- the interface ---- */

int ft__filter_new(ft__filter_t **out_f, const char *id, const char *account,
                   int verbose) {
  *out_f = NULL;
  ft__filter_t *f = ft__calloc(1, sizeof(*f));
  if (!f)
    return FT_ENOMEM;
  ft__text_t tag = FT__TEXT_INIT;
  if (ft__text_addf(&tag, "ftrt-times: %s ", id) != FT_OK)
    goto fail;
  f->tag = tag.s;
  f->taglen = tag.len;
  f->verbose = verbose;
  /* awk's acct == "": no account. */
  f->account = account && *account;
  if (f->account && ft__stamps_parse(&f->t, account) != FT_OK)
    goto fail;
  *out_f = f;
  return FT_OK;
fail:
  ft__filter_free(f);
  return FT_ENOMEM;
}

void ft__filter_free(ft__filter_t *f) {
  if (!f)
    return;
  ft__free(f->tag);
  ft__stamps_free(&f->t);
  ft__text_free(&f->line);
  ft__text_free(&f->held);
  ft__text_free(&f->times);
  ft__text_free(&f->hidden);
  ft__text_free(&f->arena);
  ft__text_free(&f->tmp);
  ft__text_free(&f->say);
  ft__text_free(&f->out_line);
  ft__text_free(&f->out_held);
  for (size_t i = 0; i < f->nblocks; i++) {
    ft__free(f->blocks[i].prefix);
    ft__text_free(&f->blocks[i].text);
  }
  ft__free(f->blocks);
  ft__free(f->log);
  ft__free(f->q);
  ft__free(f);
}

void ft__filter_failing(ft__filter_t *f) { f->failing = 1; }

int ft__filter_log(ft__filter_t *f, const char *path) {
  char *p = NULL;
  if (path && *path) {
    size_t n = strlen(path) + 1;
    if (!(p = ft__malloc(n)))
      return FT_ENOMEM;
    memcpy(p, path, n);
  }
  ft__free(f->log);
  f->log = p;
  return FT_OK;
}

/* Everything queued was read: the arena starts again. */
static void drained(ft__filter_t *f) {
  if (f->qhead < f->qn)
    return;
  f->qhead = f->qn = 0;
  ft__text_clear(&f->arena);
}

int ft__filter_feed(ft__filter_t *f, const char *buf, size_t n) {
  int rc = FT_OK;
  drained(f);
  while (n > 0) {
    const char *nl = memchr(buf, '\n', n);
    size_t len = nl ? (size_t)(nl - buf) : n;
    if (f->skip) {
      f->skip = !nl;
    } else if (!nl) {
      if (ft__text_addn(&f->line, buf, len) != FT_OK) {
        ft__text_clear(&f->line);
        f->skip = 1;
        rc = FT_ENOMEM;
      }
    } else if (f->line.len == 0) {
      if (record(f, buf, len) != FT_OK)
        rc = FT_ENOMEM;
    } else {
      int r = ft__text_addn(&f->line, buf, len);
      if (r == FT_OK)
        r = record(f, f->line.s, f->line.len);
      if (r != FT_OK)
        rc = FT_ENOMEM;
      ft__text_clear(&f->line);
    }
    len += nl != NULL;
    buf += len;
    n -= len;
  }
  return rc;
}

/* At the end, a line of an unclosed banner: the program's (with --verbose
 * it was shown as it came: only held, where the attempt is failing). */
static int program_at_end(ft__filter_t *f, const char *s, size_t n) {
  if (!f->verbose)
    return program(f, s, n);
  if (!f->failing || own_line(s, n))
    return FT_OK;
  if (queue(f, FT_FILTER_LATE, s, n, 1, 0) != FT_OK)
    return FT_ENOMEM;
  f->late++;
  return FT_OK;
}

/* ---- the launcher's standard output ---- */

/* The launcher's messages of a lost daemon that come on standard output,
 * by their first sentence (PRRTE's plm ssh), wherever it is in a line:
 * what comes before it is another writer's unfinished line. */
static const char *const OUT_SAYS[] = {
    "A daemon failed to report back after being spawned."};

/* Bounds: a line is looked at up to OUT_LINE_MAX bytes (the rest of it
 * skipped); a message is its first line and at most OUT_MSG_LINES more,
 * up to a line of 60 or 74 dashes. */
#define OUT_LINE_MAX 4096
#define OUT_MSG_LINES 24

static int dash_line(const char *s, size_t n) {
  return (n == DASHES_LEN || n == DASHES_SHORT) && memcmp(s, DASHES, n) == 0;
}

/* The message captured so far: kept, HIDden, the attempt failing. */
static int out_message(ft__filter_t *f) {
  f->out_lines = 0;
  int rc = banner_of(f, &f->out_held);
  f->failing = 1;
  ft__text_clear(&f->out_held);
  return rc;
}

static int out_record(ft__filter_t *f, const char *s, size_t n) {
  if (f->out_lines) {
    if (dash_line(s, n))
      return out_message(f);
    if (ft__text_add(&f->out_held, "\n") != FT_OK ||
        ft__text_addn(&f->out_held, s, n) != FT_OK)
      return FT_ENOMEM;
    return ++f->out_lines > OUT_MSG_LINES ? out_message(f) : FT_OK;
  }
  for (size_t i = 0; i < sizeof(OUT_SAYS) / sizeof(*OUT_SAYS); i++) {
    const char *at = memmem(s, n, OUT_SAYS[i], strlen(OUT_SAYS[i]));
    if (at) {
      ft__text_clear(&f->out_held);
      f->out_lines = 1;
      return ft__text_add(&f->out_held, "\n") == FT_OK &&
                     ft__text_addn(&f->out_held, at, n - (size_t)(at - s)) ==
                         FT_OK
                 ? FT_OK
                 : FT_ENOMEM;
    }
  }
  return FT_OK;
}

int ft__filter_feed_out(ft__filter_t *f, const char *buf, size_t n) {
  int rc = FT_OK;
  drained(f);
  while (n > 0) {
    const char *nl = memchr(buf, '\n', n);
    size_t len = nl ? (size_t)(nl - buf) : n;
    size_t room = OUT_LINE_MAX - f->out_line.len;
    if (ft__text_addn(&f->out_line, buf, len < room ? len : room) != FT_OK)
      rc = FT_ENOMEM;
    if (!nl)
      break;
    if (out_record(f, f->out_line.s ? f->out_line.s : "", f->out_line.len) !=
        FT_OK)
      rc = FT_ENOMEM;
    ft__text_clear(&f->out_line);
    buf = nl + 1;
    n -= len + 1;
  }
  return rc;
}

int ft__filter_end(ft__filter_t *f) {
  int rc = FT_OK;
  drained(f);
  /* standard output's message still being captured: the launcher's */
  if (f->out_lines && out_message(f) != FT_OK)
    rc = FT_ENOMEM;
  if (f->line.len && !f->skip)
    rc = record(f, f->line.s, f->line.len);
  ft__text_clear(&f->line);
  f->skip = 0;
  f->after_mpirun = 0;
  /* END: a line of dashes never closed was the program's: shown, with
   * what it held (with --verbose it was shown as it came). */
  if (f->inside) {
    if (program_at_end(f, DASHES, DASHES_LEN) != FT_OK)
      rc = FT_ENOMEM;
    for (size_t i = 0; i < f->held.len;) {
      const char *s = f->held.s + i + 1; /* past the "\n" before it */
      const char *nl = memchr(s, '\n', (size_t)(f->held.s + f->held.len - s));
      size_t len =
          nl ? (size_t)(nl - s) : (size_t)(f->held.s + f->held.len - s);
      if (program_at_end(f, s, len) != FT_OK)
        rc = FT_ENOMEM;
      i += len + 1;
    }
  }
  f->inside = 0;
  ft__text_clear(&f->held);
  /* The crash reports never ended. */
  while (f->nblocks)
    if (block_close(f, 0) != FT_OK)
      rc = FT_ENOMEM;
  if (f->more) {
    ft__text_clear(&f->say);
    if (ft__text_addf(&f->say,
                      "ft-launch: %zu more process(es) received a signal "
                      "(the rest: --verbose)",
                      f->more) != FT_OK ||
        say(f) != FT_OK)
      rc = FT_ENOMEM;
    f->more = 0;
  }
  if (f->late && !f->verbose) {
    ft__text_clear(&f->say);
    if (ft__text_addf(&f->say,
                      "ft-launch: %zu line(s) of the failing attempt not "
                      "shown (--verbose shows them",
                      f->late) != FT_OK ||
        (f->log && (ft__text_add(&f->say, "; kept in ") != FT_OK ||
                    ft__text_add(&f->say, f->log) != FT_OK)) ||
        ft__text_add(&f->say, ")") != FT_OK || say(f) != FT_OK)
      rc = FT_ENOMEM;
  }
  f->late = 0;
  return rc;
}

int ft__filter_next(ft__filter_t *f, ft__filter_out_t *o) {
  if (f->qhead == f->qn)
    return 0;
  const rec_t *r = &f->q[f->qhead++];
  *o = (ft__filter_out_t){.kind = r->kind,
                          .text = f->arena.s + r->off,
                          .len = r->len,
                          .bytes = r->bytes};
  return 1;
}

const char *ft__filter_times(const ft__filter_t *f) {
  return ft__text_str(&f->times);
}

const char *ft__filter_hidden(const ft__filter_t *f) {
  return ft__text_str(&f->hidden);
}
