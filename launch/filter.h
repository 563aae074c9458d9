/*
 * The launcher's output filter (scripts/ft-launch's mpirun_filter): what
 * mpirun writes to its standard error, read as it comes, sorted into what
 * the user sees and what ft-launch keeps.  Pure: bytes go in, outputs come
 * out; the caller writes them where they go.  No I/O, no clock.
 *
 *   SHOW     a line for our standard error, "\n" ending it: the program's
 *            lines at once and in order (one write a line, never cut by
 *            the program's own stdout)
 *   HIDE     mpirun's own text, kept (the "hidden" file) and shown with
 *            --verbose only: a banner (Open MPI's show_help text between
 *            two lines of 74 dashes) as one line, blanks squeezed; a
 *            "[host:pid] ..." notice without "***"
 *   TIMES    the first "ftrt-times: ID WHAT K=V..." line of each WHAT of
 *            this launch's ID (base/times.h) whose keys are all WHAT's own
 *            and whose values are whole numbers (full_host: a host name),
 *            from "ftrt-times:" on (text before it in the same line is
 *            SHOWn first: a progress bar's \r, another rank's unfinished
 *            line)
 *   PREPARE  the job's first commit (the slots line): its free spares may
 *            be prepared now, for slots of `bytes` bytes
 *   TELL     with an account (the stamps of the recovery this launch
 *            relaunches): a line of ft-launch's own about that recovery,
 *            "ft-launch: recovery N: ..." (its account once the job line
 *            says the state is back; that it started afresh; its first
 *            step's time)
 *   STAMPS   with an account: the recovery's stamps, a line for --times
 * With --verbose every line of mpirun is SHOWn as it came as well (the
 * dashes too), and what is kept is the same: --verbose changes what is
 * shown, never what is decided.  A line of 74 dashes holds the lines after
 * it until the next such line; at the end, whatever is held is SHOWn (a
 * program's own dashes).  A last line without "\n" is a line at the end.
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
  FT_FILTER_STAMPS
} ft__filter_kind_t;

typedef struct ft__filter_out {
  int kind;
  /* SHOW: the line with its "\n"; HIDE, TIMES, TELL, STAMPS: the line
   * without one.  Valid until the next call on the filter. */
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
/* n bytes as read; any split of the same bytes gives the same outputs.
 * Outputs are queued: read them with ft__filter_next before the next
 * feed.  FT_OK, FT_ENOMEM: then what could not be held is lost, the line
 * under way (the rest of it up to its "\n" skipped) or an output, and the
 * lines after it are read as before. */
int ft__filter_feed(ft__filter_t *f, const char *buf, size_t n);
/* The end of the input: a last line without "\n", what a banner held.
 * The filter then reads on as after a "\n" with no banner open: a second
 * end with nothing fed between adds nothing. */
int ft__filter_end(ft__filter_t *f);
/* The next output: 1 and *out, 0 when none is queued. */
int ft__filter_next(ft__filter_t *f, ft__filter_out_t *out);
/* What the filter kept so far: every TIMES line, "\n" after each (for
 * ft__stamps_read_times), every HIDE line, "\n" after each (for the
 * backend's lost, and mpirun_said); a NUL byte of a line is a blank in
 * them, so that each reads to its end as a string. */
const char *ft__filter_times(const ft__filter_t *f);
const char *ft__filter_hidden(const ft__filter_t *f);

#endif
