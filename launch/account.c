/*
 * The stamps and lines of launch/account.h.  The table is two lists side
 * by side, searched from the start: a recovery has a few dozen stamps.
 *
 * The account line's arithmetic and comparisons are those of mawk in the
 * C locale: a value used as a number is read by strtod (what it does not
 * read counts as 0), and a value compared with a number is compared as a
 * number only when all of it is one (mawk's "strnum"), else as a string
 * with the number written as a string ("try abc" for restores=abc).
 * strtod and "%.2f" are the C locale's while the program has set no other
 * LC_NUMERIC.
 */
#include "launch/account.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrt.h"

static int find(const ft__stamps_t *s, const char *key) {
  return ft__words_find(&s->keys, key);
}

int ft__stamps_set(ft__stamps_t *s, const char *key, const char *value) {
  int i = find(s, key);
  if (i >= 0) {
    /* The new value first, so that a failure leaves the old one. */
    if (ft__words_insert(&s->values, i, value) != FT_OK)
      return FT_ENOMEM;
    ft__words_remove(&s->values, i + 1);
    return FT_OK;
  }
  if (ft__words_add(&s->keys, key) != FT_OK)
    return FT_ENOMEM;
  if (ft__words_add(&s->values, value) != FT_OK) {
    ft__words_truncate(&s->keys, s->keys.n - 1);
    return FT_ENOMEM;
  }
  return FT_OK;
}

int ft__stamps_setu(ft__stamps_t *s, const char *key, unsigned long long v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%llu", v);
  return ft__stamps_set(s, key, buf);
}

const char *ft__stamps_get(const ft__stamps_t *s, const char *key) {
  int i = find(s, key);
  return i < 0 ? NULL : s->values.v[i];
}

void ft__stamps_unset(ft__stamps_t *s, const char *key) {
  int i = find(s, key);
  if (i >= 0) {
    ft__words_remove(&s->keys, i);
    ft__words_remove(&s->values, i);
  }
}

void ft__stamps_clear(ft__stamps_t *s) {
  ft__words_truncate(&s->keys, 0);
  ft__words_truncate(&s->values, 0);
}

void ft__stamps_free(ft__stamps_t *s) {
  ft__words_free(&s->keys);
  ft__words_free(&s->values);
}

/* key and value, each of its length, set (they need not end in a NUL). */
static int setn(ft__stamps_t *s, const char *prefix, const char *key,
                size_t klen, const char *value, size_t vlen) {
  ft__text_t k = FT__TEXT_INIT, v = FT__TEXT_INIT;
  int rc = FT_ENOMEM;
  if (ft__text_add(&k, prefix) == FT_OK &&
      ft__text_addn(&k, key, klen) == FT_OK &&
      ft__text_addn(&v, value, vlen) == FT_OK)
    rc = ft__stamps_set(s, ft__text_str(&k), ft__text_str(&v));
  ft__text_free(&k);
  ft__text_free(&v);
  return rc;
}

/* awk's split(S, W, " "): words end at spaces, tabs and newlines. */
static int awk_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

/* As the awk seeded its table: split(acct, aw, " "), then for each word
 * split(aw[i], kv, "=") and T[kv[1]] = kv[2], so that V ends at a second
 * "=" and a word without one is a key with an empty value. */
int ft__stamps_parse(ft__stamps_t *s, const char *words) {
  const char *p = words;
  for (;;) {
    while (*p && awk_blank(*p))
      p++;
    if (!*p)
      return FT_OK;
    const char *w = p;
    while (*p && !awk_blank(*p))
      p++;
    size_t n = (size_t)(p - w);
    const char *eq = memchr(w, '=', n);
    size_t klen = eq ? (size_t)(eq - w) : n;
    const char *v = eq ? eq + 1 : w + n;
    const char *vend = memchr(v, '=', (size_t)(w + n - v));
    if (!vend)
      vend = w + n;
    if (setn(s, "", w, klen, v, (size_t)(vend - v)) != FT_OK)
      return FT_ENOMEM;
  }
}

/* key is one of the words of list (blank-separated). */
static int listed(const char *list, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = list; *p;) {
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t");
    if (n && n == klen && memcmp(p, key, n) == 0)
      return 1;
    p += n;
  }
  return 0;
}

/* Back to len after a failure. */
static int cut(ft__text_t *t, size_t len) {
  t->len = len;
  if (t->s)
    t->s[len] = '\0';
  return FT_ENOMEM;
}

int ft__stamps_format(const ft__stamps_t *s, const char *keys,
                      ft__text_t *out) {
  size_t had = out->len;
  const char *r = ft__stamps_get(s, "recovery"), *m = ft__stamps_get(s, "mode");
  if (ft__text_addf(out, "recovery=%s mode=%s", r ? r : "", m ? m : "") !=
      FT_OK)
    return cut(out, had);
  for (int i = 0; i < s->keys.n; i++) {
    const char *k = s->keys.v[i];
    if (strcmp(k, "recovery") == 0 || strcmp(k, "mode") == 0 ||
        (keys && !listed(keys, k)))
      continue;
    if (ft__text_addf(out, " %s=%s", k, s->values.v[i]) != FT_OK)
      return cut(out, had);
  }
  return FT_OK;
}

/* As bash's read_times: grep -m1 "^ftrt-times: [^ ]* WHAT " (the ID any
 * run of bytes but spaces, maybe none), the line from past " WHAT " split
 * at blanks (IFS), and TS[PREFIX${kv%%=*}]=${kv#*=} for each word: K
 * before the first "=", V all after it, a word without "=" both K and V.
 * A word whose key would be empty ends the line there (bash refuses the
 * subscript and leaves the loop).  Bash would also have expanded a word
 * with * ? or [ as a file name pattern; here every word is taken as it
 * is. */
int ft__stamps_read_times(ft__stamps_t *s, const char *times, const char *what,
                          const char *prefix) {
  static const char head[] = "ftrt-times: ";
  size_t hlen = sizeof(head) - 1, wlen = strlen(what);
  for (const char *line = times; *line;) {
    size_t n = strcspn(line, "\n");
    const char *next = line + n + (line[n] == '\n');
    if (n < hlen || memcmp(line, head, hlen) != 0) {
      line = next;
      continue;
    }
    const char *p = line + hlen, *end = line + n;
    p += strcspn(p, " \n");
    if (end - p < (ptrdiff_t)wlen + 2 || p[0] != ' ' ||
        memcmp(p + 1, what, wlen) != 0 || p[1 + wlen] != ' ') {
      line = next;
      continue;
    }
    for (p += wlen + 2; p < end;) {
      while (p < end && (*p == ' ' || *p == '\t'))
        p++;
      const char *w = p;
      while (p < end && *p != ' ' && *p != '\t')
        p++;
      if (p == w)
        break;
      size_t wn = (size_t)(p - w);
      const char *eq = memchr(w, '=', wn);
      size_t klen = eq ? (size_t)(eq - w) : wn;
      const char *v = eq ? eq + 1 : w;
      if (klen == 0 && !*prefix)
        break;
      if (setn(s, prefix, w, klen, v, (size_t)(p - v)) != FT_OK)
        return FT_ENOMEM;
    }
    return 1;
  }
  return 0;
}

/* ---- the account ---- */

/* mawk's number of a string used in arithmetic; NULL (unset) is 0. */
static double awk_num(const char *v) { return v ? strtod(v, NULL) : 0; }

/* v > c as mawk compares a value with the whole number c: as numbers when
 * all of v is one (mawk's check_strnum: it starts with a digit, sign or
 * ".", ends with a digit or ".", and strtod reads all of it, a hex number
 * too, without ERANGE), else as strings, c written "%d".  An unset stamp
 * is 0 (awk's uninitialized value). */
static int awk_gt(const char *v, int c) {
  if (!v)
    return 0 > c;
  size_t n = strlen(v);
  const char *s = v, *q = v + n;
  while (s < q && (*s == ' ' || *s == '\t'))
    s++;
  while (q > s && (q[-1] == ' ' || q[-1] == '\t'))
    q--;
  int num = 0;
  double d = 0;
  if (s < q && ((q[-1] >= '0' && q[-1] <= '9') || q[-1] == '.') &&
      ((*s >= '0' && *s <= '9') || *s == '+' || *s == '-' || *s == '.')) {
    char *e;
    errno = 0;
    d = strtod(s, &e);
    num = errno != ERANGE && e >= q;
  }
  if (num)
    return d > c;
  char cs[16];
  snprintf(cs, sizeof(cs), "%d", c);
  return strcmp(v, cs) > 0;
}

int ft__stamps_span(const ft__stamps_t *s, const char *a, const char *b,
                    ft__text_t *out) {
  const char *va = ft__stamps_get(s, a), *vb = ft__stamps_get(s, b);
  if (!va || !vb)
    return FT_OK;
  return ft__text_addf(out, "%.2f", (awk_num(vb) - awk_num(va)) / 1000);
}

/* join(list, item) of the awk: item after ", " unless either is empty. */
static int join(ft__text_t *list, const ft__text_t *item) {
  if (item->len == 0)
    return FT_OK;
  if (list->len && ft__text_add(list, ", ") != FT_OK)
    return FT_ENOMEM;
  return ft__text_addn(list, item->s, item->len);
}

/* part(name, a, b) of the awk into item: "NAME X s", or nothing. */
static int part(const ft__stamps_t *s, const char *name, const char *a,
                const char *b, ft__text_t *item) {
  ft__text_clear(item);
  if (!ft__stamps_get(s, a) || !ft__stamps_get(s, b))
    return FT_OK;
  if (ft__text_addf(item, "%s ", name) != FT_OK ||
      ft__stamps_span(s, a, b, item) != FT_OK)
    return FT_ENOMEM;
  return ft__text_add(item, " s");
}

/* part() joined to list. */
static int join_part(const ft__stamps_t *s, const char *name, const char *a,
                     const char *b, ft__text_t *list, ft__text_t *tmp) {
  if (part(s, name, a, b, tmp) != FT_OK)
    return FT_ENOMEM;
  return join(list, tmp);
}

/* rebuilt(a) of the awk, appended to out: " (...)" or nothing. */
static int rebuilt(const ft__stamps_t *s, const char *a, ft__text_t *out) {
  ft__text_t r = FT__TEXT_INIT, x = FT__TEXT_INIT;
  const char *v;
  int rc = FT_ENOMEM;
  if (join_part(s, "start-up", a, "r_mpi_ms", &r, &x) != FT_OK ||
      join_part(s, "survey", "r_mpi_ms", "r_survey_ms", &r, &x) != FT_OK ||
      join_part(s, "rebuild", "r_survey_ms", "r_rebuilt_ms", &r, &x) != FT_OK)
    goto done;
  if ((v = ft__stamps_get(s, "r_bytes"))) {
    ft__text_clear(&x);
    if (ft__text_addf(&x, "%.1f MiB", awk_num(v) / 1048576) != FT_OK ||
        join(&r, &x) != FT_OK)
      goto done;
  }
  if ((v = ft__stamps_get(s, "r_prepared")) && awk_gt(v, 0)) {
    ft__text_clear(&x);
    if (ft__text_addf(&x, "%s slot(s) prepared on a spare", v) != FT_OK ||
        join(&r, &x) != FT_OK)
      goto done;
  }
  if (awk_gt(v = ft__stamps_get(s, "restores"), 1)) {
    ft__text_clear(&x);
    if (ft__text_addf(&x, "try %s", v) != FT_OK || join(&r, &x) != FT_OK)
      goto done;
  }
  rc = FT_OK;
  if (r.len)
    rc = ft__text_addf(out, " (%s)", r.s);
done:
  ft__text_free(&r);
  ft__text_free(&x);
  return rc;
}

/* "X rebuilt(a)" joined to list when X, the part name a..b, is there. */
static int join_rebuilt(const ft__stamps_t *s, const char *name, const char *a,
                        const char *b, const char *from, ft__text_t *list,
                        ft__text_t *tmp) {
  if (part(s, name, a, b, tmp) != FT_OK)
    return FT_ENOMEM;
  if (tmp->len && rebuilt(s, from, tmp) != FT_OK)
    return FT_ENOMEM;
  return join(list, tmp);
}

int ft__account_line(const ft__stamps_t *s, ft__text_t *out) {
  ft__text_t p = FT__TEXT_INIT, x = FT__TEXT_INIT;
  size_t had = out->len;
  int rc = FT_ENOMEM;
  const char *from = ft__stamps_get(s, "probed") ? "probed" : "torn";
  if (join_part(s, "teardown", "fail", "torn", &p, &x) != FT_OK ||
      join_part(s, "lost hosts", "torn", "probed", &p, &x) != FT_OK ||
      join_part(s, "regroup", from, "regrouped", &p, &x) != FT_OK)
    goto done;
  if (ft__stamps_get(s, "restore_start")) { /* ft-restore, a job of its own */
    if (join_rebuilt(s, "ft-restore", "regrouped", "restore_end",
                     "restore_start", &p, &x) != FT_OK ||
        join_part(s, "relaunch", "restore_end", "mpi_ms", &p, &x) != FT_OK ||
        join_part(s, "ft_init", "mpi_ms", "init_ms", &p, &x) != FT_OK)
      goto done;
  } else { /* the rebuild inside the relaunch */
    if (join_part(s, "relaunch", "regrouped", "mpi_ms", &p, &x) != FT_OK ||
        join_rebuilt(s, "ft_init", "mpi_ms", "init_ms", "mpi_ms", &p, &x) !=
            FT_OK)
      goto done;
  }
  if (join_part(s, "until restored", "init_ms", "restored_ms", &p, &x) != FT_OK)
    goto done;
  const char *r = ft__stamps_get(s, "recovery");
  if (ft__text_addf(out, "ft-launch: recovery %s: training resumed ",
                    r ? r : "") != FT_OK ||
      ft__stamps_span(s, "fail", "restored_ms", out) != FT_OK ||
      ft__text_addf(out, " s after the failed job's end: %s",
                    ft__text_str(&p)) != FT_OK)
    goto done;
  rc = FT_OK;
done:
  ft__text_free(&p);
  ft__text_free(&x);
  return rc == FT_OK ? FT_OK : cut(out, had);
}

int ft__account_reads_restores(const ft__stamps_t *s) {
  if (ft__stamps_get(s, "restore_start"))
    return ft__stamps_get(s, "regrouped") && ft__stamps_get(s, "restore_end");
  return ft__stamps_get(s, "mpi_ms") && ft__stamps_get(s, "init_ms");
}
