/*
 * The launcher's output filter (launch/filter.h) and the account of a
 * recovery (launch/account.h): the lines sorted, the times lines read, a
 * recovery's stamps and its account (the stamps in the order they were
 * set).
 *
 * A filter's outputs are written as lines "KIND text" (SHOW's and LATE's
 * text ends in its own "\n"; a NUL byte as "^@"), and each input is fed
 * whole, byte by byte and in pieces of 2 and 7 bytes: every split gives the
 * same lines.  The inputs of a failing attempt's rules (crash reports,
 * mpirun's one-liners, LATE lines) are as Open MPI 4.1 writes them
 * (opal/util/stacktrace.c, help-orterun.txt, help-errmgr-base.txt,
 * ess_hnp's clean_abort).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "launch/account.h"
#include "launch/filter.h"
#include "tests/unit/budget.h"
#include "tests/unit/check_main.h"

/* ---- helpers ---- */

#define ID "42-7"
#define T "ftrt-times: 42-7 "
#define DASHES                                                                 \
  "------------------------------------------------------------------"         \
  "--------"
/* PRRTE's plm ssh frames its message with 60. */
#define DASHES60                                                               \
  "------------------------------------------------------------"

static const char *const KIND[] = {"",        "SHOW", "HIDE",   "TIMES",
                                   "PREPARE", "TELL", "STAMPS", "LATE"};

/* The queued outputs of f, as lines, appended to t. */
static void drain(ft__filter_t *f, ft__text_t *t) {
  ft__filter_out_t o;
  while (ft__filter_next(f, &o)) {
    ck_assert_int_ge(o.kind, FT_FILTER_SHOW);
    ck_assert_int_le(o.kind, FT_FILTER_LATE);
    ck_assert_int_eq(ft__text_addf(t, "%s ", KIND[o.kind]), FT_OK);
    if (o.kind == FT_FILTER_PREPARE) {
      ck_assert_int_eq(ft__text_addf(t, "%llu\n", (unsigned long long)o.bytes),
                       FT_OK);
      continue;
    }
    for (size_t i = 0; i < o.len; i++)
      ck_assert_int_eq(o.text[i] ? ft__text_addn(t, o.text + i, 1)
                                 : ft__text_add(t, "^@"),
                       FT_OK);
    if (o.kind == FT_FILTER_SHOW || o.kind == FT_FILTER_LATE)
      ck_assert_msg(o.len > 0 && o.text[o.len - 1] == '\n',
                    "a SHOW or LATE without its newline");
    else
      ck_assert_int_eq(ft__text_add(t, "\n"), FT_OK);
  }
}

/* The outputs of a filter for ID fed in[0..len) in pieces of `piece` bytes
 * (0: at once), then ended; the filter into *keep unless NULL. */
static char *filtered(const char *acct, int verbose, const char *in, size_t len,
                      size_t piece, ft__filter_t **keep) {
  ft__filter_t *f;
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__filter_new(&f, ID, acct, verbose), FT_OK);
  for (size_t i = 0; i < len;) {
    size_t n = piece && piece < len - i ? piece : len - i;
    ck_assert_int_eq(ft__filter_feed(f, in + i, n), FT_OK);
    drain(f, &t);
    i += n;
  }
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  drain(f, &t);
  if (keep)
    *keep = f;
  else
    ft__filter_free(f);
  ck_assert_int_eq(ft__text_add(&t, ""), FT_OK);
  return t.s;
}

/* in[0..len), however split, gives the lines want. */
static void check_n(const char *acct, int verbose, const char *in, size_t len,
                    const char *want) {
  static const size_t pieces[] = {0, 1, 2, 7};
  for (size_t i = 0; i < sizeof(pieces) / sizeof(*pieces); i++) {
    char *got = filtered(acct, verbose, in, len, pieces[i], NULL);
    ck_assert_msg(strcmp(got, want) == 0,
                  "in pieces of %zu:\n--- got\n%s--- want\n%s", pieces[i], got,
                  want);
    ft__free(got);
  }
}

static void check(const char *acct, int verbose, const char *in,
                  const char *want) {
  check_n(acct, verbose, in, strlen(in), want);
}

/* ---- the program's lines, mpirun's text ---- */

/* Lines of the program come out as they came, an empty one and a last
 * one without "\n" among them. */
START_TEST(program_lines_pass) {
  check(NULL, 0, "step 1\n\nloss 0.5\tok\n  indented\r\nlast, no newline",
        "SHOW step 1\n"
        "SHOW \n"
        "SHOW loss 0.5\tok\n"
        "SHOW   indented\r\n"
        "SHOW last, no newline\n");
}
END_TEST

/* A banner between two lines of 74 dashes is one HIDE line, the blanks of
 * its lines squeezed and the lines joined by one; an empty banner is an
 * empty line. */
START_TEST(banner_is_one_line) {
  ft__filter_t *f;
  const char *in =
      "before\n" DASHES "\nA  banner\t\tsaid\n\n   more   here \n" DASHES
      "\nafter\n" DASHES "\n" DASHES "\n";
  const char *want = "SHOW before\n"
                     "HIDE A banner said more here \n"
                     "SHOW after\n"
                     "HIDE \n";
  check(NULL, 0, in, want);
  ft__free(filtered(NULL, 0, in, strlen(in), 0, &f));
  ck_assert_str_eq(ft__filter_hidden(f), "A banner said more here \n\n");
  ck_assert_str_eq(ft__filter_times(f), "");
  ft__filter_free(f);
}
END_TEST

/* A line of dashes never closed was the program's: at the end it is shown,
 * then every line it held as it was (a notice, a times line too). */
START_TEST(unclosed_banner_shown_whole) {
  check(NULL, 0, "x\n" DASHES "\nheld one\n[h:1] held too\n" T "job mpi_ms=1\n",
        "SHOW x\n"
        "SHOW " DASHES "\n"
        "SHOW held one\n"
        "SHOW [h:1] held too\n"
        "SHOW " T "job mpi_ms=1\n");
  /* Not quite dashes: program lines. */
  check(NULL, 0,
        "-------------------------------------------------------------------"
        "------\n" DASHES "-\n" DASHES " \n",
        "SHOW ---------------------------------------------------------------"
        "----------\n"
        "SHOW " DASHES "-\n"
        "SHOW " DASHES " \n");
}
END_TEST

/* "[host:pid] ..." is mpirun's notice, hidden, unless it has "***" (an
 * MPI error's report; a crash report is below); the forms around it are
 * the program's. */
START_TEST(notices_hidden) {
  check(NULL, 0,
        "[node1:123] a notice\n"
        "[node1:123] *** An error occurred in MPI_Send\n"
        "[a:b:12] x\n[:12] x\n[h:] x\n[h:12]x\n[h 1:2] x\n[[h:1] x\n"
        "[h:3a] z\n",
        "HIDE [node1:123] a notice\n"
        "SHOW [node1:123] *** An error occurred in MPI_Send\n"
        "HIDE [a:b:12] x\n"
        "SHOW [:12] x\n"
        "SHOW [h:] x\n"
        "SHOW [h:12]x\n"
        "SHOW [h 1:2] x\n"
        "HIDE [[h:1] x\n"
        "SHOW [h:3a] z\n");
}
END_TEST

/* With --verbose every line is shown as it came, the banner still kept
 * (after its lines, before its closing dashes), a notice kept then shown;
 * a banner never closed adds nothing at the end. */
START_TEST(verbose_shows_all) {
  check(NULL, 1,
        "x\n" DASHES "\nA  banner\n" DASHES "\n[h:1] note\n" DASHES "\nopen\n",
        "SHOW x\n"
        "SHOW " DASHES "\n"
        "SHOW A  banner\n"
        "HIDE A banner\n"
        "SHOW " DASHES "\n"
        "HIDE [h:1] note\n"
        "SHOW [h:1] note\n"
        "SHOW " DASHES "\n"
        "SHOW open\n");
}
END_TEST

/* ---- a failing attempt ---- */

#define ABORT_LINE                                                             \
  "mpirun: abort is already in progress...hit ctrl-c again to forcibly "       \
  "terminate"
#define HELD(n)                                                                \
  "SHOW ft-launch: " #n " line(s) of the failing attempt not shown "           \
  "(--verbose shows them)\n"

/* A healthy attempt: the program's lines, Python's and gloo's among them,
 * pass at once and in order, around banners that say nothing failed (a
 * rank's own exit) and lines that only look like mpirun's; no end line. */
START_TEST(healthy_untouched) {
  check(NULL, 0,
        "Traceback (most recent call last):\n"
        "RuntimeError: Connection closed by peer [10.0.0.3]:5000\n" DASHES
        "\nPrimary job  terminated normally, but 1 process returned\n" DASHES
        "\nmpirun\nmpirun:x\nmpirun noticed\n mpirun: x\n\nafter\n",
        "SHOW Traceback (most recent call last):\n"
        "SHOW RuntimeError: Connection closed by peer [10.0.0.3]:5000\n"
        "HIDE Primary job terminated normally, but 1 process returned\n"
        "SHOW mpirun\n"
        "SHOW mpirun:x\n"
        "SHOW mpirun noticed\n"
        "SHOW  mpirun: x\n"
        "SHOW \n"
        "SHOW after\n");
}
END_TEST

/* mpirun's one-liners are hidden and not kept: its abort and the empty
 * line after it (that one only), a signal forwarded.  Its abort means the
 * attempt is failing: the program's lines after it are held, ftrt's own
 * still shown, and the end says how many were held. */
START_TEST(mpirun_one_liners) {
  ft__filter_t *f;
  const char *in = "step 1\n"
                   "mpirun: Forwarding signal 18 to job\n\n" ABORT_LINE "\n\n\n"
                   "Traceback (most recent call last):\n"
                   "ftrt[h2 r3 smp] error: ft_init: no sign of life from rank "
                   "1 (h2) for 5 s (FT_TIMEOUT 5 s)\n"
                   "  File \"train.py\", line 9\n";
  const char *want = "SHOW step 1\n"
                     "HIDE mpirun: Forwarding signal 18 to job\n"
                     "SHOW \n"
                     "HIDE " ABORT_LINE "\n"
                     "HIDE \n"
                     "LATE \n"
                     "LATE Traceback (most recent call last):\n"
                     "SHOW ftrt[h2 r3 smp] error: ft_init: no sign of life "
                     "from rank 1 (h2) for 5 s (FT_TIMEOUT 5 s)\n"
                     "LATE   File \"train.py\", line 9\n" HELD(3);
  check(NULL, 0, in, want);
  ft__free(filtered(NULL, 0, in, strlen(in), 0, &f));
  ck_assert_str_eq(ft__filter_hidden(f), "");
  ft__filter_free(f);
}
END_TEST

/* "mpirun noticed that process rank ... exited on signal ..." outside a
 * banner: hidden, summed up once an attempt (with its signal's name or
 * without), and the attempt is failing; its other forms are hidden with
 * no summary.  Inside a banner it is the banner's (the caller says it):
 * no summary, but the attempt is failing all the same. */
START_TEST(rank_signal_summed_up) {
  check(NULL, 0,
        "mpirun noticed that process rank 3 with PID 123 on node h2 exited "
        "on signal 9 (Killed).\n"
        "mpirun noticed that process rank 4 with PID 124 on node h3 exited "
        "on signal 9 (Killed).\n"
        "gloo\n",
        "HIDE mpirun noticed that process rank 3 with PID 123 on node h2 "
        "exited on signal 9 (Killed).\n"
        "SHOW ft-launch: mpirun: rank 3 (pid 123) on h2 ended on signal 9 "
        "(Killed)\n"
        "HIDE mpirun noticed that process rank 4 with PID 124 on node h3 "
        "exited on signal 9 (Killed).\n"
        "LATE gloo\n" HELD(1));
  check(NULL, 0,
        "mpirun noticed that process rank 0 with PID 7 on node n-1.x exited "
        "on signal 15.\n",
        "HIDE mpirun noticed that process rank 0 with PID 7 on node n-1.x "
        "exited on signal 15.\n"
        "SHOW ft-launch: mpirun: rank 0 (pid 7) on n-1.x ended on signal 15\n");
  /* Not the rank's form: hidden, failing, nothing said; the first that is
   * said the once. */
  check(NULL, 0,
        "mpirun noticed that the job aborted, but has no info as to the "
        "process\n"
        "mpirun noticed that process rank 1 with PID 2 on node h exited on "
        "signal 9 (Killed)!\n"
        "mpirun noticed that process rank x with PID 2 on node h exited on "
        "signal 9.\n"
        "mpirun noticed that process rank 1 with PID 2 on node h exited on "
        "signal 6 (Aborted)\n"
        "x\n",
        "HIDE mpirun noticed that the job aborted, but has no info as to the "
        "process\n"
        "HIDE mpirun noticed that process rank 1 with PID 2 on node h exited "
        "on signal 9 (Killed)!\n"
        "HIDE mpirun noticed that process rank x with PID 2 on node h exited "
        "on signal 9.\n"
        "HIDE mpirun noticed that process rank 1 with PID 2 on node h exited "
        "on signal 6 (Aborted)\n"
        "SHOW ft-launch: mpirun: rank 1 (pid 2) on h ended on signal 6 "
        "(Aborted)\n"
        "LATE x\n" HELD(1));
  ft__filter_t *f;
  const char *in =
      "a\n" DASHES "\nmpirun noticed that process rank 4 with "
      "PID 6226 on node h3 exited on signal 9 (Killed).\n" DASHES "\nb\n";
  check(NULL, 0, in,
        "SHOW a\n"
        "HIDE mpirun noticed that process rank 4 with PID 6226 on node h3 "
        "exited on signal 9 (Killed).\n"
        "LATE b\n" HELD(1));
  ft__free(filtered(NULL, 0, in, strlen(in), 0, &f));
  ck_assert_str_eq(ft__filter_hidden(f),
                   "mpirun noticed that process rank 4 with PID 6226 on node "
                   "h3 exited on signal 9 (Killed).\n");
  ft__filter_free(f);
}
END_TEST

#define RECV(p) p " *** Process received signal ***\n"
#define ENDM(p) p " *** End of error message ***\n"

/* A crash report: one HIDE line when it ends (not kept), one summary at
 * its Signal line; lines between its lines are read as ever (the attempt
 * failing since its first line); a notice of the same process after it is
 * a notice again. */
START_TEST(crash_report_one_line) {
  ft__filter_t *f;
  const char *in = "step 9\n" RECV(
      "[head:07544]") "[head:07544] Signal: "
                      "Segmentation fault (11)\n"
                      "RuntimeError: Connection closed by peer\n"
                      "[head:07544] Signal code: Address not mapped (1)\n"
                      "[h2:1] a notice between\n"
                      "[head:07544] Failing at address: 0x10\n"
                      "[head:07544] [ 0] "
                      "/lib/libc.so.6(+0x3c050)[0x7f00]\n" ENDM(
                          "[head:07544]") "[head:07544] a notice after\n";
  check(NULL, 0, in,
        "SHOW step 9\n"
        "SHOW ft-launch: process 7544 on head received signal 11 "
        "(Segmentation fault) (the rest: --verbose)\n"
        "LATE RuntimeError: Connection closed by peer\n"
        "HIDE [h2:1] a notice between\n"
        "HIDE [head:07544] *** Process received signal *** Signal: "
        "Segmentation fault (11) Signal code: Address not mapped (1) Failing "
        "at address: 0x10 [ 0] /lib/libc.so.6(+0x3c050)[0x7f00] *** End of "
        "error message ***\n"
        "HIDE [head:07544] a notice after\n" HELD(1));
  ft__free(filtered(NULL, 0, in, strlen(in), 0, &f));
  ck_assert_str_eq(ft__filter_hidden(f),
                   "[h2:1] a notice between\n[head:07544] a notice after\n");
  ft__filter_free(f);
}
END_TEST

/* Reports of several processes at once, matched by their prefix: one
 * without a Signal line (said at its end), one never ended (hidden at the
 * end of the input), a host with ":" in it, a pid of zeros; a second
 * report of the same process ends the first; a Signal line's text as it
 * is when it is not "NAME (S)". */
START_TEST(crash_reports_interleaved) {
  check(NULL, 0,
        RECV("[h1:00012]")
            RECV("[a:b:00000]") "[a:b:00000] Signal: Killed\n"
                                "[h1:00012] [ 0] f\n" ENDM(
                                    "[h1:00012]") "[a:b:00000] Signal: again\n",
        "SHOW ft-launch: process 0 on a:b received signal Killed (the rest: "
        "--verbose)\n"
        "HIDE [h1:00012] *** Process received signal *** [ 0] f *** End of "
        "error message ***\n"
        "SHOW ft-launch: process 12 on h1 received a signal (the rest: "
        "--verbose)\n"
        "HIDE [a:b:00000] *** Process received signal *** Signal: Killed "
        "Signal: again\n");
  check(NULL, 0,
        RECV("[h:1]") RECV(
            "[h:1]") "[h:1] Signal: X (3)\n"
                     "[h:1] Signal: (4)\n" RECV(
                         "[h:2]") "[h:2] Signal: (4)\n" RECV("[h:3]") "[h:3] "
                                                                      "Signal: "
                                                                      "5\n",
        "HIDE [h:1] *** Process received signal ***\n"
        "SHOW ft-launch: process 1 on h received a signal (the rest: "
        "--verbose)\n"
        "SHOW ft-launch: process 1 on h received signal 3 (X) (the rest: "
        "--verbose)\n"
        "SHOW ft-launch: process 2 on h received signal (4) (the rest: "
        "--verbose)\n"
        "SHOW ft-launch: process 3 on h received signal 5 (the rest: "
        "--verbose)\n"
        "HIDE [h:1] *** Process received signal *** Signal: X (3) Signal: "
        "(4)\n"
        "HIDE [h:2] *** Process received signal *** Signal: (4)\n"
        "HIDE [h:3] *** Process received signal *** Signal: 5\n");
  /* Not a report's first line: a line with "***", shown. */
  check(NULL, 0,
        "[h:1] *** Process received signal ***x\n"
        "[h:1]  *** Process received signal ***\n"
        "[h:1] Signal: 9\n",
        "SHOW [h:1] *** Process received signal ***x\n"
        "SHOW [h:1]  *** Process received signal ***\n"
        "HIDE [h:1] Signal: 9\n");
}
END_TEST

/* Four reports are said an attempt; the others counted at the end. */
START_TEST(crash_reports_capped) {
  char in[2048], want[4096];
  char *p = in, *w = want;
  for (int i = 1; i <= 6; i++)
    p += sprintf(p,
                 "[h%d:%d] *** Process received signal ***\n"
                 "[h%d:%d] Signal: Aborted (6)\n"
                 "[h%d:%d] *** End of error message ***\n",
                 i, i, i, i, i, i);
  for (int i = 1; i <= 6; i++) {
    if (i <= 4)
      w += sprintf(w,
                   "SHOW ft-launch: process %d on h%d received signal 6 "
                   "(Aborted) (the rest: --verbose)\n",
                   i, i);
    w += sprintf(w,
                 "HIDE [h%d:%d] *** Process received signal *** Signal: "
                 "Aborted (6) *** End of error message ***\n",
                 i, i);
  }
  sprintf(w, "SHOW ft-launch: 2 more process(es) received a signal (the "
             "rest: --verbose)\n");
  check(NULL, 0, in, want);
}
END_TEST

/* A lost daemon's banner: the program's further lines are held, but not
 * ftrt's, ft-restore's or any "ft-" tool's, nor ftrt-times lines (text
 * before one is the program's); notices and banners as ever; an unclosed
 * banner's lines held at the end. */
START_TEST(lost_daemon_holds_program) {
  check("recovery=1 mode=replace", 0,
        "before\n" DASHES "\nORTE has lost communication with a remote "
        "daemon.\n\n  HNP daemon   : [[1,0],0] on node head\n  Remote "
        "daemon: [[1,0],2] on node h2\n" DASHES
        "\nTraceback (most recent call last):\n"
        "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by "
        "peer [10.0.0.3]:5000\n"
        "ftrt[h1 r0 trainer] error: x\n"
        "ftrt: fault point 'p' (FT_FAULT) kills pid 9\n"
        "ft-restore: lost node 1 (h2, group 0 position 1) -> s1\n"
        "ft-train-example: ft_restore: y\n"
        "ftrt-times: 9-9 job mpi_ms=1\n"
        "pre" T "fresh fresh_ms=5\n"
        "[h1:2] notice\n" DASHES "\nlast\n",
        "SHOW before\n"
        "HIDE ORTE has lost communication with a remote daemon. HNP daemon : "
        "[[1,0],0] on node head Remote daemon: [[1,0],2] on node h2\n"
        "LATE Traceback (most recent call last):\n"
        "LATE RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection "
        "closed by peer [10.0.0.3]:5000\n"
        "SHOW ftrt[h1 r0 trainer] error: x\n"
        "SHOW ftrt: fault point 'p' (FT_FAULT) kills pid 9\n"
        "SHOW ft-restore: lost node 1 (h2, group 0 position 1) -> s1\n"
        "SHOW ft-train-example: ft_restore: y\n"
        "LATE ftrt-times: 9-9 job mpi_ms=1\n"
        "LATE pre\n"
        "TIMES " T "fresh fresh_ms=5\n"
        "TELL ft-launch: recovery 1: nothing had been committed before the "
        "failure: the job starts afresh\n"
        "STAMPS recovery=1 mode=replace fresh_ms=5\n"
        "HIDE [h1:2] notice\n"
        "LATE " DASHES "\n"
        "LATE last\n" HELD(6));
}
END_TEST

/* PRRTE's node-died banner on standard error is a banner as ORTE's is;
 * text between two lines of 60 dashes there is the program's. */
START_TEST(prrte_banners) {
  check(NULL, 0,
        DASHES "\nPRTE has lost communication with a remote daemon.\n" DASHES
        "\nsaid\n",
        "HIDE PRTE has lost communication with a remote daemon.\n"
        "LATE said\n" HELD(1));
  check(NULL, 0, "a\n" DASHES60 "\nsummary\n" DASHES60 "\nb\n",
        "SHOW a\nSHOW " DASHES60 "\nSHOW summary\nSHOW " DASHES60
        "\nSHOW b\n");
}
END_TEST

/* The launcher's standard output, passed on by the caller, is read for
 * plm ssh's message only: found by its sentence, kept and HIDden (for the
 * log) up to a line of dashes, the attempt failing; no line of it is
 * SHOWn or held. */
static char *out_filtered(const char *in, size_t len, size_t piece,
                          ft__filter_t **keep) {
  ft__filter_t *f;
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__filter_new(&f, ID, NULL, 0), FT_OK);
  for (size_t i = 0; i < len;) {
    size_t n = piece && piece < len - i ? piece : len - i;
    ck_assert_int_eq(ft__filter_feed_out(f, in + i, n), FT_OK);
    i += n;
  }
  ck_assert_int_eq(ft__filter_feed(f, "then\n", 5), FT_OK);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  drain(f, &t);
  ck_assert_int_eq(ft__text_add(&t, ""), FT_OK);
  *keep = f;
  return t.s;
}

/* in on standard output, in any pieces, keeps want (a message, or "") and
 * leaves the attempt failing or not; a message never closed is kept at the
 * end only (open). */
static void out_check_at(const char *in, size_t len, const char *want,
                         int open) {
  static const size_t pieces[] = {0, 1, 3};
  for (size_t i = 0; i < sizeof(pieces) / sizeof(*pieces); i++) {
    ft__filter_t *f;
    char *got = out_filtered(in, len, pieces[i], &f);
    ft__text_t w = FT__TEXT_INIT;
    if (*want && open)
      ck_assert_int_eq(ft__text_addf(&w, "SHOW then\nHIDE %s\n", want), FT_OK);
    else if (*want)
      ck_assert_int_eq(ft__text_addf(&w, "HIDE %s\nLATE then\n" HELD(1), want),
                       FT_OK);
    else
      ck_assert_int_eq(ft__text_add(&w, "SHOW then\n"), FT_OK);
    ck_assert_msg(strcmp(got, w.s) == 0, "in pieces of %zu:\n--- got\n%s--- want\n%s",
                  pieces[i], got, w.s);
    ft__text_clear(&w);
    if (*want)
      ck_assert_int_eq(ft__text_addf(&w, "%s\n", want), FT_OK);
    ck_assert_str_eq(ft__filter_hidden(f), ft__text_str(&w));
    ft__text_free(&w);
    ft__free(got);
    ft__filter_free(f);
  }
}

static void out_check(const char *in, size_t len, const char *want) {
  out_check_at(in, len, want, 0);
}

#define SPAWNED "A daemon failed to report back after being spawned."
#define PLM(host)                                                              \
  DASHES60 "\n" SPAWNED " This could\nbe due to ...\n\n  Local host:    "     \
           "head\n  Remote host:   " host "\n  Daemon exit status: 0\n" DASHES60 \
           "\n"
#define PLM_KEPT(host)                                                         \
  SPAWNED " This could be due to ... Local host: head Remote host: " host      \
          " Daemon exit status: 0"

START_TEST(output_banners) {
  const char *m = "step 1\n" PLM("h2") "step 2\n";
  out_check(m, strlen(m), PLM_KEPT("h2"));
  /* The program's own dashes first, unmatched: no matter. */
  m = "x\n" DASHES60 "\n" DASHES "\n" PLM("h3");
  out_check(m, strlen(m), PLM_KEPT("h3"));
  /* Glued to the program's unfinished line: from the sentence on. */
  m = "progress 50%" SPAWNED " Remote host: h4\n" DASHES60 "\n";
  out_check(m, strlen(m), SPAWNED " Remote host: h4");
  /* Never closed: kept at the end; more than 24 lines: the first 25. */
  m = SPAWNED "\n Remote host: h5\n";
  out_check_at(m, strlen(m), SPAWNED " Remote host: h5", 1);
  ft__text_t in = FT__TEXT_INIT, want = FT__TEXT_INIT;
  ck_assert_int_eq(ft__text_add(&in, SPAWNED "\n"), FT_OK);
  ck_assert_int_eq(ft__text_add(&want, SPAWNED), FT_OK);
  for (int i = 1; i <= 30; i++) {
    ck_assert_int_eq(ft__text_addf(&in, "l%d\n", i), FT_OK);
    if (i <= 24)
      ck_assert_int_eq(ft__text_addf(&want, " l%d", i), FT_OK);
  }
  out_check(in.s, in.len, want.s);
  /* A program's table of dashes: nothing kept, nothing failing. */
  m = DASHES "\nname value\n" DASHES60 "\nx\n";
  out_check(m, strlen(m), "");
  /* A line past 4 KiB, still open when the message comes after it. */
  ft__text_clear(&in);
  for (int i = 0; i < 800; i++)
    ck_assert_int_eq(ft__text_add(&in, "0123456789"), FT_OK);
  ck_assert_int_eq(ft__text_add(&in, "\n" PLM("h6")), FT_OK);
  out_check(in.s, in.len, PLM_KEPT("h6"));
  ft__text_free(&in);
  ft__text_free(&want);
}
END_TEST

/* The caller says the attempt is failing, and names its log; the end's
 * line says so once. */
START_TEST(caller_says_failing) {
  ft__filter_t *f;
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__filter_new(&f, ID, NULL, 0), FT_OK);
  ck_assert_int_eq(ft__filter_feed(f, "a\n", 2), FT_OK);
  drain(f, &t);
  ft__filter_failing(f);
  ck_assert_int_eq(ft__filter_log(f, "/tmp/x.log"), FT_OK);
  ck_assert_int_eq(ft__filter_feed(f, "b\nft-x\nc", 8), FT_OK);
  drain(f, &t);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  drain(f, &t);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  drain(f, &t);
  ck_assert_str_eq(ft__text_str(&t),
                   "SHOW a\n"
                   "LATE b\n"
                   "SHOW ft-x\n"
                   "LATE c\n"
                   "SHOW ft-launch: 2 line(s) of the failing attempt not "
                   "shown (--verbose shows them; kept in /tmp/x.log)\n");
  /* Still failing after the end; the log unnamed again. */
  ft__text_clear(&t);
  ck_assert_int_eq(ft__filter_log(f, ""), FT_OK);
  ck_assert_int_eq(ft__filter_feed(f, "d\n", 2), FT_OK);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  drain(f, &t);
  ck_assert_str_eq(ft__text_str(&t), "LATE d\n" HELD(1));
  ft__text_free(&t);
  ft__filter_free(f);
}
END_TEST

/* With --verbose: every line shown as it came, a crash report's too (its
 * HIDE before its last line), a held line LATE then shown; no summary and
 * no end line; an unclosed banner's lines, shown as they came, LATE at the
 * end. */
START_TEST(verbose_failing) {
  check(NULL, 1,
        "x\n" RECV("[h:5]") "[h:5] Signal: Aborted (6)\ny\n" ENDM("[h:5]")
            ABORT_LINE
        "\n\n"
        "mpirun noticed that process rank 1 with PID 2 on node h "
        "exited on signal 6 (Aborted).\n"
        "ftrt[h r1 smp] error: e\n" DASHES "\nopen\n",
        "SHOW x\n"
        "SHOW [h:5] *** Process received signal ***\n"
        "SHOW [h:5] Signal: Aborted (6)\n"
        "LATE y\n"
        "SHOW y\n"
        "HIDE [h:5] *** Process received signal *** Signal: Aborted (6) *** "
        "End of error message ***\n"
        "SHOW [h:5] *** End of error message ***\n"
        "HIDE " ABORT_LINE "\n"
        "SHOW " ABORT_LINE "\n"
        "HIDE \n"
        "SHOW \n"
        "HIDE mpirun noticed that process rank 1 with PID 2 on node h exited "
        "on signal 6 (Aborted).\n"
        "SHOW mpirun noticed that process rank 1 with PID 2 on node h exited "
        "on signal 6 (Aborted).\n"
        "SHOW ftrt[h r1 smp] error: e\n"
        "SHOW " DASHES "\n"
        "SHOW open\n"
        "LATE " DASHES "\n"
        "LATE open\n");
}
END_TEST

/* A NUL byte in a report and a held line; a report's line of a megabyte. */
START_TEST(failing_bytes) {
  static const char in[] = "[h:1] *** Process received signal ***\n"
                           "[h:1] Signal: a\0b (7)\nz\0z\n";
  check_n(
      NULL, 0, in, sizeof(in) - 1,
      "SHOW ft-launch: process 1 on h received signal 7 (a^@b) (the rest: "
      "--verbose)\n"
      "LATE z^@z\n"
      "HIDE [h:1] *** Process received signal *** Signal: a^@b (7)\n" HELD(1));
  size_t big = 1 << 20;
  char *s = malloc(big + 128);
  ck_assert_ptr_nonnull(s);
  char *p = s + sprintf(s, RECV("[h:1]") "[h:1] [ 0] ");
  memset(p, 'f', big);
  p += big;
  p += sprintf(p, "\n" ENDM("[h:1]"));
  char *got = filtered(NULL, 0, s, (size_t)(p - s), 4096, NULL);
  static const char head[] = "HIDE [h:1] *** Process received signal *** "
                             "[ 0] fff",
                    tail[] = "f *** End of error message ***\n"
                             "SHOW ft-launch: process 1 on h received a "
                             "signal (the rest: --verbose)\n";
  ck_assert_uint_eq(strlen(got), sizeof(head) - 4 + big + sizeof(tail) - 2);
  ck_assert(strncmp(got, head, sizeof(head) - 1) == 0);
  ck_assert_str_eq(got + strlen(got) - (sizeof(tail) - 1), tail);
  ft__free(got);
  free(s);
}
END_TEST

/* ---- ftrt-times lines ---- */

/* Only this launch's lines; of each kind the first only; one with a key
 * not its kind's or a value not a whole number is swallowed and not kept,
 * and its kind is done; an unknown kind, or none, is swallowed too.  What
 * comes before the tag in the line is shown first. */
START_TEST(times_lines_sorted) {
  ft__filter_t *f;
  /* Another launch's; kept; not the first job line; text before one; a
   * bad key; restore was done; not a host name; not a whole number; no
   * number; not a kind; no kind; not this ID. */
  const char *in =
      "ftrt-times: 9-9 job mpi_ms=1\n" T
      "job mpi_ms=10 init_ms=20 restored_ms=30\n" T "job mpi_ms=11\n"
      "\rstep 3 " T "step step_ms=40\n" T "restore mpi_ms=1 bogus=2\n" T
      "restore mpi_ms=1\n" T "full full_host=-x\n" T "fresh fresh_ms=1.5\n" T
      "slots slot_bytes=\n" T "other k=1\n" T "\n"
      "ftrt-times: 42-7x job mpi_ms=1\n";
  check(NULL, 0, in,
        "SHOW ftrt-times: 9-9 job mpi_ms=1\n"
        "TIMES " T "job mpi_ms=10 init_ms=20 restored_ms=30\n"
        "SHOW \rstep 3 \n"
        "TIMES " T "step step_ms=40\n"
        "SHOW ftrt-times: 42-7x job mpi_ms=1\n");
  ft__free(filtered(NULL, 0, in, strlen(in), 0, &f));
  ck_assert_str_eq(ft__filter_times(f),
                   T "job mpi_ms=10 init_ms=20 restored_ms=30\n" T
                     "step step_ms=40\n");
  ck_assert_str_eq(ft__filter_hidden(f), "");
  ft__filter_free(f);
  /* A host name for full_host; the kind alone is a line of it. */
  check(NULL, 0, T "full full_host=node-1.example_2\n" T "fresh\n",
        "TIMES " T "full full_host=node-1.example_2\n"
        "TIMES " T "fresh\n");
}
END_TEST

/* The slots line: its spares may be prepared, for slots of its bytes (0
 * with none; past 2^64-1, the largest); once. */
START_TEST(slots_prepare) {
  check(NULL, 0, T "slots slot_bytes=1048576\n" T "slots slot_bytes=2\n",
        "TIMES " T "slots slot_bytes=1048576\n"
        "PREPARE 1048576\n");
  check(NULL, 0, T "slots\n", "TIMES " T "slots\nPREPARE 0\n");
  check(NULL, 0, T "slots slot_bytes=99999999999999999999 slot_bytes=1\n",
        "TIMES " T "slots slot_bytes=99999999999999999999 slot_bytes=1\n"
        "PREPARE 18446744073709551615\n");
}
END_TEST

/* ---- the account of a recovery ---- */

#define ACCT                                                                   \
  "recovery=1 mode=replace fail=1700000000000 torn=1700000000500 "             \
  "probed=1700000001250 regrouped=1700000001300 restores=0 "                   \
  "relaunch=1700000001310"

/* The rebuild inside the relaunch: the restore line's keys as r_, the
 * account when the job line comes (the parts in parentheses from mpi_ms),
 * then the stamps; the first step after the restore, its stamp alone. */
START_TEST(account_in_job) {
  check(ACCT, 0,
        T "slots slot_bytes=4096\n" T
          "restore mpi_ms=1700000002000 survey_ms=1700000002100 "
          "rebuilt_ms=1700000002600 bytes=104857600 prepared=1\n" T
          "job mpi_ms=1700000002000 init_ms=1700000002700 "
          "restored_ms=1700000002900\nstep 1\n" T
          "step step_ms=1700000003400\n",
        "TIMES " T "slots slot_bytes=4096\n"
        "PREPARE 4096\n"
        "TIMES " T "restore mpi_ms=1700000002000 survey_ms=1700000002100 "
        "rebuilt_ms=1700000002600 bytes=104857600 prepared=1\n"
        "TIMES " T "job mpi_ms=1700000002000 init_ms=1700000002700 "
        "restored_ms=1700000002900\n"
        "TELL ft-launch: recovery 1: training resumed 2.90 s after the failed "
        "job's end: teardown 0.50 s, lost hosts 0.75 s, regroup 0.05 s, "
        "relaunch 0.70 s, ft_init 0.70 s (start-up 0.00 s, survey 0.10 s, "
        "rebuild 0.50 s, 100.0 MiB, 1 slot(s) prepared on a spare), until "
        "restored 0.20 s\n"
        "STAMPS recovery=1 mode=replace fail=1700000000000 "
        "torn=1700000000500 probed=1700000001250 regrouped=1700000001300 "
        "restores=0 relaunch=1700000001310 slot_bytes=4096 "
        "r_mpi_ms=1700000002000 r_survey_ms=1700000002100 "
        "r_rebuilt_ms=1700000002600 r_bytes=104857600 r_prepared=1 "
        "mpi_ms=1700000002000 init_ms=1700000002700 "
        "restored_ms=1700000002900\n"
        "SHOW step 1\n"
        "TIMES " T "step step_ms=1700000003400\n"
        "TELL ft-launch: recovery 1: its first step after the restore took "
        "0.50 s\n"
        "STAMPS recovery=1 mode=replace step_ms=1700000003400\n");
}
END_TEST

#define APART                                                                  \
  "recovery=2 mode=shrink fail=1700000000000 torn=1700000000400 "              \
  "regrouped=1700000000450 restores=2 restore_start=1700000000460 "            \
  "r_mpi_ms=1700000001460 r_survey_ms=1700000001500 "                          \
  "r_rebuilt_ms=1700000002500 r_bytes=5242880 r_prepared=0 "                   \
  "restore_end=1700000002600 relaunch=1700000002610"

/* ft-restore as a job of its own: its part with the rebuild's from
 * restore_start, no spare prepared, its second try; the regroup from torn
 * (no probe). */
START_TEST(account_restore_apart) {
  check(APART, 0,
        T "job mpi_ms=1700000003000 init_ms=1700000003250 "
          "restored_ms=1700000003300\n",
        "TIMES " T "job mpi_ms=1700000003000 init_ms=1700000003250 "
        "restored_ms=1700000003300\n"
        "TELL ft-launch: recovery 2: training resumed 3.30 s after the failed "
        "job's end: teardown 0.40 s, regroup 0.05 s, ft-restore 2.15 s "
        "(start-up 1.00 s, survey 0.04 s, rebuild 1.00 s, 5.0 MiB, try 2), "
        "relaunch 0.40 s, ft_init 0.25 s, until restored 0.05 s\n"
        "STAMPS " APART " mpi_ms=1700000003000 init_ms=1700000003250 "
        "restored_ms=1700000003300\n");
}
END_TEST

/* Started afresh: said, with the stamps; a step after it is not told (no
 * restore); without an account, nothing told at all. */
START_TEST(fresh_told) {
  const char *in =
      T "fresh fresh_ms=1700000001000\n" T "step step_ms=1700000002000\n";
  check("recovery=3 mode=replace fail=1700000000000 torn=1700000000500 "
        "restores=0",
        0, in,
        "TIMES " T "fresh fresh_ms=1700000001000\n"
        "TELL ft-launch: recovery 3: nothing had been committed before the "
        "failure: the job starts afresh\n"
        "STAMPS recovery=3 mode=replace fail=1700000000000 "
        "torn=1700000000500 restores=0 fresh_ms=1700000001000\n"
        "TIMES " T "step step_ms=1700000002000\n");
  check(NULL, 0, in,
        "TIMES " T "fresh fresh_ms=1700000001000\n"
        "TIMES " T "step step_ms=1700000002000\n");
  /* An account of blanks is one: no recovery, no mode. */
  check(" ", 0, T "fresh fresh_ms=5\n",
        "TIMES " T "fresh fresh_ms=5\n"
        "TELL ft-launch: recovery : nothing had been committed before the "
        "failure: the job starts afresh\n"
        "STAMPS recovery= mode= fresh_ms=5\n");
}
END_TEST

/* A step before the job line is kept but not told; the account then
 * stamps it.  Where the account reads restores and it was not set, the
 * awk made it, empty: the stamps end in "restores=". */
START_TEST(account_edges) {
  check("recovery=1 mode=replace fail=100", 0,
        T "step step_ms=900\n" T "job mpi_ms=300 init_ms=400 "
          "restored_ms=500\n" T "step step_ms=1\n",
        "TIMES " T "step step_ms=900\n"
        "TIMES " T "job mpi_ms=300 init_ms=400 restored_ms=500\n"
        "TELL ft-launch: recovery 1: training resumed 0.40 s after the failed "
        "job's end: ft_init 0.10 s, until restored 0.10 s\n"
        "STAMPS recovery=1 mode=replace fail=100 step_ms=900 mpi_ms=300 "
        "init_ms=400 restored_ms=500 restores=\n");
  /* Values as mawk reads them: a hex number in arithmetic, strings
   * compared as strings ("try abc"), words without "=" or with two. */
  check("recovery=4 mode=replace restores=abc r_prepared=2x regrouped=0 "
        "mpi_ms=1 init_ms=2 r_bytes=0x100000 bare =v k=v=w",
        0, T "job\n",
        "TIMES " T "job\n"
        "TELL ft-launch: recovery 4: training resumed  s after the failed "
        "job's end: relaunch 0.00 s, ft_init 0.00 s (1.0 MiB, 2x slot(s) "
        "prepared on a spare, try abc)\n"
        "STAMPS recovery=4 mode=replace restores=abc r_prepared=2x "
        "regrouped=0 mpi_ms=1 init_ms=2 r_bytes=0x100000 bare= =v k=v\n");
  /* Numbers compared as numbers (1e1 > 1, -1 not > 0); a key given twice
   * in a line, the last; a negative span. */
  check("recovery=4\tmode=replace restores=1e1 r_prepared=-1 regrouped=5 "
        "restored_ms=3",
        0, T "job mpi_ms=7 init_ms=9 mpi_ms=8\n",
        "TIMES " T "job mpi_ms=7 init_ms=9 mpi_ms=8\n"
        "TELL ft-launch: recovery 4: training resumed  s after the failed "
        "job's end: relaunch 0.00 s, ft_init 0.00 s (try 1e1), until "
        "restored -0.01 s\n"
        "STAMPS recovery=4 mode=replace restores=1e1 r_prepared=-1 "
        "regrouped=5 restored_ms=3 mpi_ms=8 init_ms=9\n");
  /* A hex number is a number to mawk's comparisons too. */
  check("recovery=5 mode=replace restores=0x10 r_prepared=0x0 regrouped=1 "
        "mpi_ms=2 init_ms=3",
        0, T "job\n",
        "TIMES " T "job\n"
        "TELL ft-launch: recovery 5: training resumed  s after the failed "
        "job's end: relaunch 0.00 s, ft_init 0.00 s (try 0x10)\n"
        "STAMPS recovery=5 mode=replace restores=0x10 r_prepared=0x0 "
        "regrouped=1 mpi_ms=2 init_ms=3\n");
}
END_TEST

/* ---- bytes as they come ---- */

/* A mix of all the above: every split the same. */
START_TEST(any_split_same) {
  check(ACCT, 0,
        "a\n" DASHES "\nban\tner\n" DASHES "\n[h:9] n\npre" T
        "job mpi_ms=1700000001400 init_ms=1700000001500 "
        "restored_ms=1700000001600\n" DASHES "\nopen",
        "SHOW a\n"
        "HIDE ban ner\n"
        "HIDE [h:9] n\n"
        "SHOW pre\n"
        "TIMES " T "job mpi_ms=1700000001400 init_ms=1700000001500 "
        "restored_ms=1700000001600\n"
        "TELL ft-launch: recovery 1: training resumed 1.60 s after the failed "
        "job's end: teardown 0.50 s, lost hosts 0.75 s, regroup 0.05 s, "
        "relaunch 0.10 s, ft_init 0.10 s, until restored 0.10 s\n"
        "STAMPS " ACCT " mpi_ms=1700000001400 init_ms=1700000001500 "
        "restored_ms=1700000001600\n"
        "SHOW " DASHES "\n"
        "SHOW open\n");
}
END_TEST

/* NUL bytes are bytes (a blank in the kept texts); a line of a megabyte
 * and a banner of 100000 words are lines. */
START_TEST(nul_and_long_lines) {
  static const char in[] = "a\0b\n[h\0:1] x\n" DASHES "\nz\0 \0z\n" DASHES
                           "\n" T "fresh fresh_ms=5=\0\n";
  check_n(NULL, 0, in, sizeof(in) - 1,
          "SHOW a^@b\n"
          "HIDE [h^@:1] x\n"
          "HIDE z^@ ^@z\n"
          "TIMES " T "fresh fresh_ms=5=^@\n");
  ft__filter_t *f;
  ft__free(filtered(NULL, 0, in, sizeof(in) - 1, 0, &f));
  ck_assert_str_eq(ft__filter_hidden(f), "[h :1] x\nz   z\n");
  ck_assert_str_eq(ft__filter_times(f), T "fresh fresh_ms=5= \n");
  ft__filter_free(f);

  size_t big = 1 << 20, words = 100000;
  size_t len = big + 1 + sizeof(DASHES) + 2 * words + 1 + sizeof(DASHES);
  char *s = malloc(len + 1), *p = s;
  ck_assert_ptr_nonnull(s);
  memset(p, 'x', big);
  p += big;
  *p++ = '\n';
  p += sprintf(p, "%s\n", DASHES);
  for (size_t i = 0; i < words; i++, p += 2)
    memcpy(p, "y ", 2);
  *p++ = '\n';
  p += sprintf(p, "%s\n", DASHES);
  ck_assert_uint_eq((size_t)(p - s), len);
  char *got = filtered(NULL, 0, s, len, 4096, NULL);
  ck_assert_uint_eq(strlen(got), 5 + big + 1 + 5 + 2 * words + 1);
  ck_assert(strncmp(got, "SHOW xxx", 8) == 0);
  ck_assert(strncmp(got + 5 + big, "\nHIDE y y ", 10) == 0);
  ck_assert_str_eq(got + strlen(got) - 4, " y \n");
  ft__free(got);
  free(s);
}
END_TEST

/* The end once: a second one adds nothing; no input, nothing. */
START_TEST(end_once) {
  ft__filter_t *f;
  ft__filter_out_t o;
  ck_assert_int_eq(ft__filter_new(&f, ID, NULL, 0), FT_OK);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  ck_assert_int_eq(ft__filter_next(f, &o), 0);
  ck_assert_int_eq(ft__filter_feed(f, DASHES "\nheld", 79), FT_OK);
  ck_assert_int_eq(ft__filter_next(f, &o), 0);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  ck_assert_int_eq(ft__filter_next(f, &o), 1);
  ck_assert_int_eq(o.kind, FT_FILTER_SHOW);
  ck_assert_int_eq(ft__filter_next(f, &o), 1);
  ck_assert_int_eq(o.len, 5);
  ck_assert(memcmp(o.text, "held\n", 5) == 0);
  ck_assert_int_eq(ft__filter_next(f, &o), 0);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  ck_assert_int_eq(ft__filter_next(f, &o), 0);
  ft__filter_free(f);
  ft__filter_free(NULL);
}
END_TEST

/* ---- out of memory ---- */

/* With CK_FORK=no a failed test does not end a process. */
static void teardown(void) { oom_use_default(); }

/* A line that could not be held is lost up to its "\n"; the filter goes
 * on with the next. */
START_TEST(oom_loses_a_line) {
  ft__filter_t *f;
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__filter_new(&f, ID, NULL, 0), FT_OK);
  oom_use_budget(0);
  ck_assert_int_eq(ft__filter_feed(f, "abc", 3), FT_ENOMEM);
  oom_use_default();
  ck_assert_int_eq(ft__filter_feed(f, "def\nghi\n", 8), FT_OK);
  ck_assert_int_eq(ft__filter_end(f), FT_OK);
  drain(f, &t);
  ck_assert_str_eq(ft__text_str(&t), "SHOW ghi\n");
  ft__text_free(&t);
  ft__filter_free(f);
}
END_TEST

/* Every allocation of a launch's filtering refused in turn: each call
 * says FT_OK or FT_ENOMEM, nothing leaks, and once nothing is refused the
 * outputs are those with plenty of memory. */
START_TEST(oom_every_allocation) {
  const char *in =
      "a\n" DASHES "\nban\tner\n" DASHES "\n[h:9] n\n" T "slots "
      "slot_bytes=8\n" T "restore mpi_ms=1700000001400 bytes=1\npre" T
      "job mpi_ms=1700000001400 init_ms=1700000001500 "
      "restored_ms=1700000001600\n" T "step step_ms=1700000001700\n"
      "mpirun noticed that process rank 1 with PID 2 on node h exited on "
      "signal 9 (Killed).\n" RECV(
          "[h:1]") "[h:1] Signal: Killed (9)\n"
                   "held\n" ENDM("[h:1]") RECV("[h:2]") RECV(
                       "[h:3]") "[h:3] Signal: 6\n"
                                "[h:2] Signal: Aborted (6)\n" RECV("[h:4]")
                                    RECV("[h:5]") "[h:5] [ 0] x\n" ABORT_LINE
                                                  "\n\nlast";
  size_t len = strlen(in);
  char *want = filtered(ACCT, 0, in, len, 5, NULL);
  int failures = 0;
  for (long n = 0;; n++) {
    ck_assert_msg(n < 5000, "still failing with %ld allocations", n);
    ft__filter_t *f = NULL;
    oom_live = 0;
    oom_use_budget(n);
    int rc = ft__filter_new(&f, ID, ACCT, 0), bad = 0;
    if (rc == FT_OK) {
      for (size_t i = 0; i < len; i += 5) {
        rc = ft__filter_feed(f, in + i, len - i < 5 ? len - i : 5);
        bad |= rc != FT_OK && rc != FT_ENOMEM;
        ft__filter_out_t o;
        while (ft__filter_next(f, &o))
          ck_assert_int_ge(o.kind, FT_FILTER_SHOW);
      }
      rc = ft__filter_end(f);
      bad |= rc != FT_OK && rc != FT_ENOMEM;
      ft__filter_free(f);
    } else {
      ck_assert_int_eq(rc, FT_ENOMEM);
      ck_assert_ptr_null(f);
    }
    long got_refused = oom_refused;
    oom_use_default();
    ck_assert_msg(!bad, "budget %ld: a status neither FT_OK nor FT_ENOMEM", n);
    ck_assert_msg(oom_live == 0, "budget %ld: %ld block(s) leaked", n,
                  oom_live);
    if (got_refused == 0)
      break;
    failures++;
  }
  ck_assert_int_gt(failures, 10);
  /* And with plenty of memory under the budget allocator, the same. */
  oom_use_budget(-1);
  char *got = filtered(ACCT, 0, in, len, 5, NULL);
  ck_assert_str_eq(got, want);
  ft__free(got);
  oom_use_default();
  ft__free(want);
}
END_TEST

/* ---- the stamps ---- */

static char *formatted(const ft__stamps_t *s, const char *keys) {
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__stamps_format(s, keys, &t), FT_OK);
  ck_assert_int_eq(ft__text_add(&t, ""), FT_OK);
  return t.s;
}

#define ck_format(s, keys, want)                                               \
  do {                                                                         \
    char *got_ = formatted((s), (keys));                                       \
    ck_assert_str_eq(got_, (want));                                            \
    ft__free(got_);                                                            \
  } while (0)

/* Set, replaced in place, unset; recovery and mode first, the others in
 * the order first set; a key list picks some (recovery and mode always). */
START_TEST(stamps_table) {
  ft__stamps_t s = FT__STAMPS_INIT;
  ck_format(&s, NULL, "recovery= mode=");
  ck_assert_int_eq(ft__stamps_setu(&s, "fail", 1700000000000ULL), FT_OK);
  ck_assert_int_eq(ft__stamps_set(&s, "mode", "replace"), FT_OK);
  ck_assert_int_eq(ft__stamps_set(&s, "torn", "5"), FT_OK);
  ck_assert_int_eq(ft__stamps_setu(&s, "recovery", 2), FT_OK);
  ck_assert_int_eq(ft__stamps_set(&s, "fail", "7"), FT_OK);
  ck_assert_int_eq(ft__stamps_set(&s, "r_full_host", "h1"), FT_OK);
  ck_assert_str_eq(ft__stamps_get(&s, "fail"), "7");
  ck_assert_ptr_null(ft__stamps_get(&s, "probed"));
  ck_format(&s, NULL, "recovery=2 mode=replace fail=7 torn=5 r_full_host=h1");
  ck_format(&s, "r_full_host fail",
            "recovery=2 mode=replace fail=7 r_full_host=h1");
  ck_format(&s, " \tfail\t", "recovery=2 mode=replace fail=7");
  ck_format(&s, "", "recovery=2 mode=replace");
  ck_format(&s, "fai torn_", "recovery=2 mode=replace");
  ft__stamps_unset(&s, "torn");
  ft__stamps_unset(&s, "nothing");
  ck_format(&s, NULL, "recovery=2 mode=replace fail=7 r_full_host=h1");
  /* Parsed as the awk read its account: blanks and newlines between
   * words, V up to a second "=", a bare word an empty value. */
  ck_assert_int_eq(
      ft__stamps_parse(&s, "  torn=9\tfail=8\nbare k=v=w =x r_full_host=h2 "),
      FT_OK);
  ck_format(&s, NULL,
            "recovery=2 mode=replace fail=8 r_full_host=h2 torn=9 bare= k=v "
            "=x");
  ft__stamps_clear(&s);
  ck_format(&s, NULL, "recovery= mode=");
  ck_assert_int_eq(ft__stamps_parse(&s, ""), FT_OK);
  ck_assert_int_eq(s.keys.n, 0);
  ft__stamps_free(&s);
  ft__stamps_free(&s);
}
END_TEST

/* read_times: the first line of WHAT (the ID any word), its K=V into the
 * table with the prefix, V all after the first "=". */
START_TEST(stamps_read_times) {
  const char *times =
      T "job mpi_ms=5\n"
        "ftrt-times: 1-2 restore mpi_ms=1 survey_ms=2\tbytes=7=8 x\n" T
        "restore mpi_ms=9\n"
        "ftrt-times: 1-2 fresh\n"
        "ftrt-times: 1-2 full \n";
  ft__stamps_t s = FT__STAMPS_INIT;
  ck_assert_int_eq(ft__stamps_read_times(&s, times, "restore", "r_"), 1);
  ck_format(&s, NULL,
            "recovery= mode= r_mpi_ms=1 r_survey_ms=2 r_bytes=7=8 r_x=x");
  /* No line of that kind with a blank after it: none. */
  ck_assert_int_eq(ft__stamps_read_times(&s, times, "fresh", "r_"), 0);
  ck_assert_int_eq(ft__stamps_read_times(&s, times, "step", "r_"), 0);
  ck_assert_int_eq(ft__stamps_read_times(&s, "", "job", "r_"), 0);
  /* A line of it without words. */
  ck_assert_int_eq(ft__stamps_read_times(&s, times, "full", "r_"), 1);
  ck_assert_int_eq(ft__stamps_read_times(&s, times, "job", ""), 1);
  ck_format(&s, NULL,
            "recovery= mode= r_mpi_ms=1 r_survey_ms=2 r_bytes=7=8 r_x=x "
            "mpi_ms=5");
  /* Not at the start of a line, or the ID not one word: not a line of it;
   * an empty ID is one; without a prefix an empty key ends the line. */
  ft__stamps_clear(&s);
  ck_assert_int_eq(ft__stamps_read_times(&s,
                                         "x" T "full full_host=a\n"
                                         "ftrt-times: a b full full_host=b\n"
                                         "ftrt-times:  full full_host=c =d "
                                         "e=f\n",
                                         "full", ""),
                   1);
  ck_format(&s, NULL, "recovery= mode= full_host=c");
  ck_assert_int_eq(
      ft__stamps_read_times(&s, "ftrt-times: i full =d e=f\n", "full", "r_"),
      1);
  ck_format(&s, NULL, "recovery= mode= full_host=c r_=d r_e=f");
  ft__stamps_free(&s);
}
END_TEST

/* The account line straight from the table: nothing stamped, every part
 * empty; both ends of a part needed. */
START_TEST(account_line_direct) {
  ft__stamps_t s = FT__STAMPS_INIT;
  ft__text_t t = FT__TEXT_INIT;
  ck_assert_int_eq(ft__account_line(&s, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t), "ft-launch: recovery : training resumed "
                                     " s after the failed job's end: ");
  ck_assert_int_eq(ft__account_reads_restores(&s), 0);
  ck_assert_int_eq(ft__stamps_parse(&s, ACCT " mpi_ms=1700000001400 "
                                             "init_ms=1700000001500"),
                   FT_OK);
  ft__text_clear(&t);
  ck_assert_int_eq(ft__account_line(&s, &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t),
                   "ft-launch: recovery 1: training resumed  s after the "
                   "failed job's end: teardown 0.50 s, lost hosts 0.75 s, "
                   "regroup 0.05 s, relaunch 0.10 s, ft_init 0.10 s");
  ck_assert_int_eq(ft__account_reads_restores(&s), 1);
  ft__text_clear(&t);
  ck_assert_int_eq(ft__stamps_span(&s, "fail", "torn", &t), FT_OK);
  ck_assert_int_eq(ft__stamps_span(&s, "fail", "restored_ms", &t), FT_OK);
  ck_assert_str_eq(ft__text_str(&t), "0.50");
  ft__text_free(&t);
  ft__stamps_free(&s);
}
END_TEST

/* A case of s, bounded at limit seconds: a hang, under sanitizers and a
 * loaded machine too, never an expected duration. */
static TCase *new_case(Suite *s, const char *name, double limit) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, limit);
  suite_add_tcase(s, tc);
  return tc;
}

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("filter");
  TCase *tc = new_case(s, "lines", 120);
  tcase_add_test(tc, program_lines_pass);
  tcase_add_test(tc, banner_is_one_line);
  tcase_add_test(tc, unclosed_banner_shown_whole);
  tcase_add_test(tc, notices_hidden);
  tcase_add_test(tc, verbose_shows_all);
  tc = new_case(s, "failing attempt", 120);
  tcase_add_test(tc, healthy_untouched);
  tcase_add_test(tc, mpirun_one_liners);
  tcase_add_test(tc, rank_signal_summed_up);
  tcase_add_test(tc, crash_report_one_line);
  tcase_add_test(tc, crash_reports_interleaved);
  tcase_add_test(tc, crash_reports_capped);
  tcase_add_test(tc, lost_daemon_holds_program);
  tcase_add_test(tc, prrte_banners);
  tcase_add_test(tc, output_banners);
  tcase_add_test(tc, caller_says_failing);
  tcase_add_test(tc, verbose_failing);
  tcase_add_test(tc, failing_bytes);
  tc = new_case(s, "times lines", 120);
  tcase_add_test(tc, times_lines_sorted);
  tcase_add_test(tc, slots_prepare);
  tc = new_case(s, "account", 120);
  tcase_add_test(tc, account_in_job);
  tcase_add_test(tc, account_restore_apart);
  tcase_add_test(tc, fresh_told);
  tcase_add_test(tc, account_edges);
  tc = new_case(s, "bytes", 120);
  tcase_add_test(tc, any_split_same);
  tcase_add_test(tc, nul_and_long_lines);
  tcase_add_test(tc, end_once);
  tc = new_case(s, "out of memory", 60);
  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, oom_loses_a_line);
  tcase_add_test(tc, oom_every_allocation);
  tc = new_case(s, "stamps", 120);
  tcase_add_test(tc, stamps_table);
  tcase_add_test(tc, stamps_read_times);
  tcase_add_test(tc, account_line_direct);
  return s;
}
