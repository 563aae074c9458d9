/*
 * bash's printf %q (lib/sh/shquote.c and strtrans.c of bash 5): a word that
 * the locale prints whole is backslash-quoted; one with a character it
 * cannot print, or bytes that are no character, is written $'...', where a
 * character it cannot print becomes \NNN, one octal escape a byte.
 */
#include "launch/quote.h"

#include <langinfo.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "ftrt.h"

/* The ASCII characters bash backslash-quotes anywhere in a word. */
static int special(unsigned char c) {
  return c && c < 128 && strchr(" \t\n!\"$&'()*,;<>?[\\]^`{|}", c) != NULL;
}

/* 1 when the word needs $'...': a character that is not printable, or a
 * byte sequence that is no character of the locale. */
static int needs_ansi(const char *w) {
  mbstate_t st;
  memset(&st, 0, sizeof(st));
  size_t left = strlen(w);
  while (left) {
    unsigned char c = (unsigned char)*w;
    if (c < 128) {
      if (c < 0x20 || c == 0x7f)
        return 1;
      w++, left--;
      continue;
    }
    wchar_t wc;
    size_t len = mbrtowc(&wc, w, left, &st);
    if (len == (size_t)-1 || len == (size_t)-2 || !iswprint((wint_t)wc))
      return 1;
    w += len, left -= len;
  }
  return 0;
}

static int octal(ft__text_t *out, unsigned char c) {
  return ft__text_addf(out, "\\%o%o%o", (c >> 6) & 7, (c >> 3) & 7, c & 7);
}

/* The escape letter of c in $'...', or 0. */
static char escape_of(unsigned char c) {
  switch (c) {
  case 033:
    return 'E';
  case '\a':
    return 'a';
  case '\v':
    return 'v';
  case '\b':
    return 'b';
  case '\f':
    return 'f';
  case '\n':
    return 'n';
  case '\r':
    return 'r';
  case '\t':
    return 't';
  case '\\':
    return '\\';
  case '\'':
    return '\'';
  }
  return 0;
}

/* One character of $'...' at w (left bytes): how many bytes it took. */
static size_t ansi_char(ft__text_t *out, const char *w, size_t left,
                        mbstate_t *st, int *rc) {
  unsigned char c = (unsigned char)*w;
  char e = escape_of(c);
  if (e) {
    char pair[2] = {'\\', e};
    *rc = ft__text_addn(out, pair, 2);
    return 1;
  }
  if (c < 128) {
    *rc = (c >= 0x20 && c != 0x7f) ? ft__text_addn(out, w, 1) : octal(out, c);
    return 1;
  }
  wchar_t wc;
  size_t len = mbrtowc(&wc, w, left, st);
  if (len == (size_t)-1 || len == (size_t)-2) {
    memset(st, 0, sizeof(*st));
  } else if (len > 0 && iswprint((wint_t)wc)) {
    *rc = ft__text_addn(out, w, len);
    return len;
  }
  *rc = octal(out, c);
  return 1;
}

static int ansi_quote(ft__text_t *out, const char *w) {
  mbstate_t st;
  memset(&st, 0, sizeof(st));
  int rc = ft__text_add(out, "$'");
  size_t left = strlen(w);
  while (rc == FT_OK && left) {
    size_t took = ansi_char(out, w, left, &st, &rc);
    w += took, left -= took;
  }
  return rc == FT_OK ? ft__text_add(out, "'") : rc;
}

static int backslash_quote(ft__text_t *out, const char *w) {
  int rc = FT_OK;
  for (const char *s = w; *s && rc == FT_OK; s++) {
    unsigned char c = (unsigned char)*s;
    int bs = special(c) || (c == '#' && s == w) ||
             (c == '~' && (s == w || s[-1] == ':' || s[-1] == '='));
    if (bs)
      rc = ft__text_add(out, "\\");
    if (rc == FT_OK)
      rc = ft__text_addn(out, s, 1);
  }
  return rc;
}

int ft__quote_word(ft__text_t *out, const char *word) {
  if (!*word)
    return ft__text_add(out, "''");
  return needs_ansi(word) ? ansi_quote(out, word) : backslash_quote(out, word);
}

int ft__quote_coreutils(ft__text_t *out, const char *name) {
  int utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  return ft__text_addf(out, utf8 ? "\xe2\x80\x98%s\xe2\x80\x99" : "'%s'", name);
}
