/*
 * The lists and lines of launch/words.h.  A list grows by doubling; each
 * word is copied into a block of its own, so that a word stays where it is
 * however the list grows (callers keep pointers to words, not to slots).
 */
#include "launch/words.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "ftrt.h"

/* Room for one more word and the NULL after it. */
static int words_room(ft__words_t *w) {
  if (w->n + 2 <= w->cap)
    return FT_OK;
  int cap = w->cap ? w->cap * 2 : 8;
  char **v = ft__realloc(w->v, (size_t)cap * sizeof(*v));
  if (!v)
    return FT_ENOMEM;
  w->v = v;
  w->cap = cap;
  return FT_OK;
}

static char *copy(const char *s, size_t len) {
  char *c = ft__malloc(len + 1);
  if (c) {
    memcpy(c, s, len);
    c[len] = '\0';
  }
  return c;
}

static int insert_owned(ft__words_t *w, int at, char *c) {
  if (!c || words_room(w) != FT_OK) {
    ft__free(c);
    return FT_ENOMEM;
  }
  memmove(w->v + at + 1, w->v + at, (size_t)(w->n - at) * sizeof(*w->v));
  w->v[at] = c;
  w->v[++w->n] = NULL;
  return FT_OK;
}

int ft__words_addn(ft__words_t *w, const char *s, size_t len) {
  return insert_owned(w, w->n, copy(s, len));
}

int ft__words_add(ft__words_t *w, const char *s) {
  return ft__words_addn(w, s, strlen(s));
}

int ft__words_insert(ft__words_t *w, int at, const char *s) {
  return insert_owned(w, at, copy(s, strlen(s)));
}

int ft__words_insertn(ft__words_t *w, int at, const char *s, size_t len) {
  return insert_owned(w, at, copy(s, len));
}

void ft__words_remove(ft__words_t *w, int at) {
  if (at < 0 || at >= w->n)
    return;
  ft__free(w->v[at]);
  memmove(w->v + at, w->v + at + 1, (size_t)(w->n - at) * sizeof(*w->v));
  w->n--;
}

int ft__words_addv(ft__words_t *w, const char *const *v, int n) {
  for (int i = 0; i < n; i++)
    if (ft__words_add(w, v[i]) != FT_OK) {
      ft__words_truncate(w, w->n - i);
      return FT_ENOMEM;
    }
  return FT_OK;
}

int ft__words_addf(ft__words_t *w, const char *fmt, ...) {
  ft__text_t t = FT__TEXT_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = ft__text_vaddf(&t, fmt, ap);
  va_end(ap);
  if (rc == FT_OK)
    rc = insert_owned(w, w->n, t.s ? t.s : copy("", 0));
  else
    ft__text_free(&t);
  return rc;
}

static int blank(char c) { return c == ' ' || c == '\t'; }

int ft__words_split(ft__words_t *w, const char *s) {
  int had = w->n;
  size_t end = strcspn(s, "\n");
  for (size_t i = 0; i < end;) {
    while (i < end && blank(s[i]))
      i++;
    size_t from = i;
    while (i < end && !blank(s[i]))
      i++;
    if (i > from && ft__words_addn(w, s + from, i - from) != FT_OK) {
      ft__words_truncate(w, had);
      return FT_ENOMEM;
    }
  }
  return FT_OK;
}

int ft__words_find(const ft__words_t *w, const char *s) {
  for (int i = 0; i < w->n; i++)
    if (strcmp(w->v[i], s) == 0)
      return i;
  return -1;
}

void ft__words_truncate(ft__words_t *w, int from) {
  if (from < 0)
    from = 0;
  while (w->n > from)
    ft__free(w->v[--w->n]);
  if (w->v)
    w->v[w->n] = NULL;
}

void ft__words_free(ft__words_t *w) {
  ft__words_truncate(w, 0);
  ft__free(w->v);
  *w = (ft__words_t)FT__WORDS_INIT;
}

/* ---- text ---- */

static int text_room(ft__text_t *t, size_t more) {
  if (t->len + more + 1 <= t->cap)
    return FT_OK;
  size_t cap = t->cap ? t->cap : 64;
  while (cap < t->len + more + 1)
    cap *= 2;
  char *s = ft__realloc(t->s, cap);
  if (!s)
    return FT_ENOMEM;
  t->s = s;
  t->cap = cap;
  return FT_OK;
}

int ft__text_addn(ft__text_t *t, const char *s, size_t len) {
  if (text_room(t, len) != FT_OK)
    return FT_ENOMEM;
  memcpy(t->s + t->len, s, len);
  t->len += len;
  t->s[t->len] = '\0';
  return FT_OK;
}

int ft__text_add(ft__text_t *t, const char *s) {
  return ft__text_addn(t, s, strlen(s));
}

int ft__text_vaddf(ft__text_t *t, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  char small[1];
  int len = vsnprintf(small, sizeof(small), fmt, ap);
  int rc = len < 0 ? FT_EINVAL : text_room(t, (size_t)len);
  if (rc == FT_OK) {
    vsnprintf(t->s + t->len, (size_t)len + 1, fmt, again);
    t->len += (size_t)len;
  }
  va_end(again);
  return rc;
}

int ft__text_addf(ft__text_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = ft__text_vaddf(t, fmt, ap);
  va_end(ap);
  return rc;
}

int ft__text_join(ft__text_t *t, const char *const *v, int n, const char *sep) {
  size_t had = t->len;
  for (int i = 0; i < n; i++)
    if ((i && ft__text_add(t, sep) != FT_OK) ||
        ft__text_add(t, v[i]) != FT_OK) {
      t->len = had;
      if (t->s)
        t->s[had] = '\0';
      return FT_ENOMEM;
    }
  return FT_OK;
}

const char *ft__text_str(const ft__text_t *t) { return t->s ? t->s : ""; }

void ft__text_clear(ft__text_t *t) {
  t->len = 0;
  if (t->s)
    t->s[0] = '\0';
}

void ft__text_free(ft__text_t *t) {
  ft__free(t->s);
  *t = (ft__text_t)FT__TEXT_INIT;
}
