/*
 * Where a recovery's time went: a table of stamps, "K=V" with V a whole
 * number of wall clock milliseconds (fail, torn, probed, regrouped,
 * restore_start, restore_end, relaunch; the job's mpi_ms, init_ms,
 * restored_ms, step_ms; ft-restore's and the in-job rebuild's r_mpi_ms,
 * r_survey_ms, r_rebuilt_ms; r_bytes, r_prepared, restores) or a word
 * (recovery, mode, r_full_host), and the lines made of it.  Pure: no I/O,
 * no clock.
 *
 * The account line, from the stamps of the recovery N:
 *   ft-launch: recovery N: training resumed S s after the failed job's
 *   end: teardown X s, lost hosts X s, regroup X s, relaunch X s, ft_init
 *   X s (start-up X s, survey X s, rebuild X s, B MiB, K slot(s) prepared
 *   on a spare, try T), until restored X s
 * each part only when both its ends are stamped (X = (b - a) / 1000,
 * "%.2f"); with ft-restore as a job of its own (restore_start stamped):
 * "..., regroup X s, ft-restore X s (...), relaunch X s, ft_init X s,
 * until restored X s", the parts in parentheses from restore_start.
 */
#ifndef FT_LAUNCH_ACCOUNT_H
#define FT_LAUNCH_ACCOUNT_H

#include "launch/words.h"

/* Keys in the order first set (the order stamps are written in). */
typedef struct ft__stamps {
  ft__words_t keys, values;
} ft__stamps_t;

#define FT__STAMPS_INIT                                                        \
  { FT__WORDS_INIT, FT__WORDS_INIT }

/* Functions that allocate return FT_OK or FT_ENOMEM; after FT_ENOMEM a
 * text appended to holds what it held before, a table may hold some of
 * the words of a parse or a read. */
int ft__stamps_set(ft__stamps_t *s, const char *key, const char *value);
int ft__stamps_setu(ft__stamps_t *s, const char *key, unsigned long long v);
/* The value, or NULL. */
const char *ft__stamps_get(const ft__stamps_t *s, const char *key);
void ft__stamps_unset(ft__stamps_t *s, const char *key);
void ft__stamps_clear(ft__stamps_t *s);
void ft__stamps_free(ft__stamps_t *s);
/* "K=V K=V ..." words added (a later K replaces an earlier one), read as
 * the awk read its account: words split at spaces, tabs and newlines, K
 * up to the first "=", V from there up to the next "=" or the word's end
 * (a word without "=": K with an empty V). */
int ft__stamps_parse(ft__stamps_t *s, const char *words);
/* "recovery=R mode=M K=V ..." (recovery and mode first, then the others in
 * order), appended to out; keys: NULL for all, else only those of the
 * blank-separated list (recovery and mode always). */
int ft__stamps_format(const ft__stamps_t *s, const char *keys, ft__text_t *out);
/* read_times: the first "ftrt-times: ID WHAT K=V ..." line of times (lines
 * as ft__filter_times keeps them) for WHAT, its K=V into s as PREFIX K (V
 * all after the first "=", as bash's ${kv#*=}).  1 when there was one, 0
 * when none, FT_ENOMEM. */
int ft__stamps_read_times(ft__stamps_t *s, const char *times, const char *what,
                          const char *prefix);
/* The account line of the recovery whose stamps s holds (above), appended
 * to out. */
int ft__account_line(const ft__stamps_t *s, ft__text_t *out);
/* The account's span(a, b): "%.2f" of (b - a) / 1000 appended to out, or
 * nothing when either is not stamped. */
int ft__stamps_span(const ft__stamps_t *s, const char *a, const char *b,
                    ft__text_t *out);
/* 1 when the account line of s reads the stamp restores (its rebuild
 * part, "ft_init X s (...)" or "ft-restore X s (...)", is there).  The
 * awk's T["restores"] then made the key, empty, where it was not set, and
 * the stamps written after the account show it ("restores="). */
int ft__account_reads_restores(const ft__stamps_t *s);

#endif
