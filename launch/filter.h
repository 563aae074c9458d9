/*
 * The launcher's output filter: what mpirun writes to its standard error,
 * read as it comes, sorted into what the user sees and what ft-launch
 * keeps.  Pure: bytes go in, outputs come out; the caller writes them where
 * they go.  No I/O, no clock.
 *
 *   SHOW     a line for our standard error, "\n" ending it: the program's
 *            lines at once and in order (one write a line, never cut by
 *            the program's own stdout), and ft-launch's summaries below
 *   HIDE     mpirun's own text, shown with --verbose only: a banner (Open
 *            MPI's show_help text between two lines of 74 dashes) as one
 *            line, blanks squeezed; a "[host:pid] ..." notice without
 *            "***"; a crash report (below) as one line; a line of mpirun's
 *            own that is no notice, "mpirun: ..." (its "abort is already
 *            in progress...", and the empty line after that one) or "mpirun
 *            noticed that ..." outside a banner
 *   TIMES    the first "ftrt-times: ID WHAT K=V..." line of each WHAT of
 *            this launch's ID (base/times.h) whose keys are all WHAT's own
 *            and whose values are whole numbers (full_host: a host name),
 *            from "ftrt-times:" on (text before it in the same line is the
 *            program's, first: a progress bar's \r, another rank's
 *            unfinished line)
 *   PREPARE  the job's first commit (the slots line): its free spares may
 *            be prepared now, for slots of `bytes` bytes
 *   TELL     with an account (the stamps of the recovery this launch
 *            relaunches): a line of ft-launch's own about that recovery,
 *            "ft-launch: recovery N: ..." (its account once the job line
 *            says the state is back; that it started afresh; its first
 *            step's time)
 *   STAMPS   with an account: the recovery's stamps, a line for --times
 *   LATE     a line of the program after the attempt began to fail, "\n"
 *            ending it, not shown: the caller keeps it (a log file)
 *
 * A crash report is the block Open MPI's signal handler writes: "[host:pid]
 * *** Process received signal ***", lines of the same "[host:pid] " (the
 * "Signal: NAME (S)", "Signal code: ...", "[ N] frame" lines), and last
 * "[host:pid] *** End of error message ***"; other lines may come between
 * them, and several reports may be open at once.  Its HIDE line is its
 * first line and then each other line without its prefix, after a blank,
 * when it ends (its last line, the end of the input, a new report of the
 * same process).  Each report is summed up in one SHOW line, at its
 * "Signal:" line (at its end if none came): "ft-launch: process PID on
 * HOST received signal S (NAME) (the rest: --verbose)", the PID without
 * the zeros Open MPI pads it with, S and NAME from "Signal: NAME (S)"
 * (another Signal line's text as it is; "received a signal" without one);
 * the first 4 of an attempt, and at the end "ft-launch: N more
 * process(es) received a signal (the rest: --verbose)" for the others.
 * "mpirun noticed that process rank N with PID P on node H exited on
 * signal S (NAME)." outside a banner, the first of an attempt, is summed
 * up as "ft-launch: mpirun: rank N (pid P) on H ended on signal S (NAME)"
 * (without " (NAME)" where the line has none).  A banner is not summed up
 * here: the caller says the first that matters (mpirun_said).
 *
 * The attempt is failing once the filter has read a banner that says so
 * ("ORTE has lost communication with a remote daemon.", PRRTE's "PRTE has
 * lost ...", "... noticed that process rank ...", "... noticed that the job aborted
 * ..."), "mpirun
 * noticed that ..." or "mpirun: abort is already in progress" outside a
 * banner, or the first line of a crash report; or once the caller says so
 * (ft__filter_failing).  From then on a line of the program is LATE instead
 * of SHOWn, unless it is ftrt's own: one that starts with "ftrt[" (the
 * runtime's "ftrt[h1 r3 smp] error: ..."), "ftrt:" or "ft-" (ft-restore's,
 * ft-train-example's, ft-launch's) is shown as before.  TIMES lines and
 * the rules above are as before.  At the end, where lines were held, one
 * SHOW line: "ft-launch: N line(s) of the failing attempt not shown
 * (--verbose shows them; kept in LOG)" (without "; kept in LOG" unless the
 * caller named its log, ft__filter_log).  A relaunch is a new attempt with
 * a new filter.
 *
 * With --verbose every line of mpirun is SHOWn as it came as well (the
 * dashes too, each line of a crash report), a LATE line is SHOWn after it,
 * and there is no summary (neither a report's, the rank's, nor the count
 * of LATE lines): what is kept and what goes to LATE is the same: --verbose
 * changes what is shown, never what is decided.  A line of 74 dashes holds
 * the lines after it until the next such line; at the end, whatever is
 * held is the program's (a program's own dashes): SHOWn (with --verbose
 * it was, as it came), or LATE where the attempt is failing.  A last line
 * without "\n" is a line at the end.
 */
#ifndef FT_LAUNCH_FILTER_H
#define FT_LAUNCH_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "launch/account.h"

typedef enum {
  FT_FILTER_SHOW = 1,
  FT_FILTER_HIDE,
  FT_FILTER_TIMES,
  FT_FILTER_PREPARE,
  FT_FILTER_TELL,
  FT_FILTER_STAMPS,
  FT_FILTER_LATE
} ft__filter_kind_t;

typedef struct ft__filter_out {
  int kind;
  /* SHOW, LATE: the line with its "\n"; HIDE, TIMES, TELL, STAMPS: the
   * line without one.  Valid until the next call on the filter. */
  const char *text;
  size_t len;
  uint64_t bytes; /* PREPARE: slot_bytes (0 where the line has none, the
                     largest where it is past 2^64-1) */
} ft__filter_out_t;

typedef struct ft__filter ft__filter_t;

/* A filter for the launch whose FTRT_LAUNCH_ID is id.  account: NULL, or
 * the stamps of the recovery it relaunches ("recovery=N mode=M K=V ...",
 * ft__stamps_format), copied.  FT_OK, FT_ENOMEM. */
int ft__filter_new(ft__filter_t **out, const char *id, const char *account,
                   int verbose);
void ft__filter_free(ft__filter_t *f);
/* The caller knows the attempt is failing (a host found unreachable, the
 * launch being ended): the program's lines from now on are LATE. */
void ft__filter_failing(ft__filter_t *f);
/* Where the caller keeps the LATE lines, named in the end's line (NULL or
 * "": nowhere named); copied.  FT_OK, FT_ENOMEM (the name as it was). */
int ft__filter_log(ft__filter_t *f, const char *path);
/* n bytes as read; any split of the same bytes gives the same outputs.
 * Outputs are queued: read them with ft__filter_next before the next
 * feed.  FT_OK, FT_ENOMEM: then what could not be held is lost, the line
 * under way (the rest of it up to its "\n" skipped) or an output, and the
 * lines after it are read as before. */
int ft__filter_feed(ft__filter_t *f, const char *buf, size_t n);
/* The launcher's standard output, which the caller passes on unchanged as
 * it comes: read only for the launcher's messages of a lost daemon that
 * come there (PRRTE's plm ssh: "A daemon failed to report back after being
 * spawned."), found by that sentence anywhere in a line (another writer's
 * unfinished line may come before it): the message from it on, up to a line
 * of 60 or 74 dashes (at most 24 more lines; the end of the input), is kept
 * and HIDden as a banner of standard error is, and makes the attempt
 * failing.  Only a line's first 4 KiB are looked at.  FT_OK, FT_ENOMEM. */
int ft__filter_feed_out(ft__filter_t *f, const char *buf, size_t n);
/* The end of the input: a last line without "\n", what a banner held,
 * the crash reports still open, the counts said.  The filter then reads
 * on as after a "\n" with no banner or report open (the attempt still
 * failing, if it was): a second end with nothing fed between adds
 * nothing. */
int ft__filter_end(ft__filter_t *f);
/* The next output: 1 and *out, 0 when none is queued. */
int ft__filter_next(ft__filter_t *f, ft__filter_out_t *out);
/* What the filter kept so far: every TIMES line, "\n" after each (for
 * ft__stamps_read_times), every HIDE line of a banner or a notice, "\n"
 * after each (for the backend's lost, and mpirun_said: not the crash
 * reports and mpirun's one-liners, which the filter sums up itself); a NUL
 * byte of a line is a blank in them, so that each reads to its end as a
 * string. */
const char *ft__filter_times(const ft__filter_t *f);
const char *ft__filter_hidden(const ft__filter_t *f);

#endif
