/*
 * Words and lines for ft-launch: a growable list of strings (an argv, a
 * host list, the words of a probe) and a growable line of text (a message,
 * a hostfile).  Every string of a list is its own copy, and the list is
 * kept NULL-terminated, so that v can be handed to execve as it is.
 * ft__words_split reads a string into words as bash's `read -ra W <<<"$S"`
 * does: only the first line, split at runs of blanks (space, tab).
 *
 * A function that allocates returns FT_OK or FT_ENOMEM; after FT_ENOMEM the
 * list or text holds what it held before the call.  A list or text is
 * zeroed to be empty (FT__WORDS_INIT, FT__TEXT_INIT) and freed with its
 * _free, which leaves it empty again.
 */
#ifndef FT_LAUNCH_WORDS_H
#define FT_LAUNCH_WORDS_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ft__words {
  char **v; /* n strings, then NULL (v itself NULL while n is 0) */
  int n;
  int cap;
} ft__words_t;

#define FT__WORDS_INIT                                                         \
  { NULL, 0, 0 }

int ft__words_add(ft__words_t *w, const char *s);
/* The first len bytes of s, as one word. */
int ft__words_addn(ft__words_t *w, const char *s, size_t len);
int ft__words_addv(ft__words_t *w, const char *const *v, int n);
int ft__words_addf(ft__words_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Insert s (its first len bytes) before word at (0..n). */
int ft__words_insert(ft__words_t *w, int at, const char *s);
int ft__words_insertn(ft__words_t *w, int at, const char *s, size_t len);
/* Drop word at. */
void ft__words_remove(ft__words_t *w, int at);
/* The words of s's first line, split at blanks, appended. */
int ft__words_split(ft__words_t *w, const char *s);
/* The index of the first word equal to s, or -1. */
int ft__words_find(const ft__words_t *w, const char *s);
/* Drop the words from `from` on. */
void ft__words_truncate(ft__words_t *w, int from);
void ft__words_free(ft__words_t *w);

typedef struct ft__text {
  char *s; /* NUL-terminated; NULL while empty and never grown */
  size_t len;
  size_t cap;
} ft__text_t;

#define FT__TEXT_INIT                                                          \
  { NULL, 0, 0 }

int ft__text_add(ft__text_t *t, const char *s);
int ft__text_addn(ft__text_t *t, const char *s, size_t len);
int ft__text_addf(ft__text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ft__text_vaddf(ft__text_t *t, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* v[0..n) joined by sep ("${V[*]}": one space). */
int ft__text_join(ft__text_t *t, const char *const *v, int n, const char *sep);
/* The text, "" while empty. */
const char *ft__text_str(const ft__text_t *t);
void ft__text_clear(ft__text_t *t);
void ft__text_free(ft__text_t *t);

#endif
