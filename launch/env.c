/*
 * The environment of launch/env.h: a list of "NAME=VALUE" words, searched
 * linearly (a few hundred entries at most, read a few dozen times a
 * launch).  `command -v` follows bash 5's order: builtins and keywords by
 * name, a word with a '/' as a path, then PATH, where a file that exists
 * but is not executable is what bash falls back to.
 */
#include "launch/env.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"

int ft__env_is_name(const char *s) {
  if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return 0;
  for (s++; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

/* The index of NAME's entry, or -1. */
static int find(const ft__env_t *e, const char *name, size_t len) {
  for (int i = 0; i < e->kv.n; i++)
    if (strncmp(e->kv.v[i], name, len) == 0 && e->kv.v[i][len] == '=')
      return i;
  return -1;
}

static int put(ft__env_t *e, const char *entry, size_t namelen) {
  int at = find(e, entry, namelen);
  if (at < 0)
    return ft__words_add(&e->kv, entry);
  ft__words_t one = FT__WORDS_INIT;
  if (ft__words_add(&one, entry) != FT_OK)
    return FT_ENOMEM;
  ft__free(e->kv.v[at]);
  e->kv.v[at] = one.v[0];
  ft__free(one.v);
  return FT_OK;
}

int ft__env_load(ft__env_t *e, char *const *envp) {
  *e = (ft__env_t)FT__ENV_INIT;
  for (; envp && *envp; envp++) {
    const char *eq = strchr(*envp, '=');
    if (eq && put(e, *envp, (size_t)(eq - *envp)) != FT_OK) {
      ft__env_free(e);
      return FT_ENOMEM;
    }
  }
  return FT_OK;
}

void ft__env_free(ft__env_t *e) { ft__words_free(&e->kv); }

const char *ft__env_get(const ft__env_t *e, const char *name) {
  if (!ft__env_is_name(name))
    return NULL;
  size_t len = strlen(name);
  int at = find(e, name, len);
  return at < 0 ? NULL : e->kv.v[at] + len + 1;
}

const char *ft__env_str(const ft__env_t *e, const char *name) {
  const char *v = ft__env_get(e, name);
  return v ? v : "";
}

int ft__env_set(ft__env_t *e, const char *name, const char *value) {
  if (!ft__env_is_name(name))
    return FT_EINVAL;
  ft__text_t t = FT__TEXT_INIT;
  int rc = ft__text_addf(&t, "%s=%s", name, value);
  if (rc == FT_OK)
    rc = put(e, t.s, strlen(name));
  ft__text_free(&t);
  return rc;
}

void ft__env_unset(ft__env_t *e, const char *name) {
  if (!ft__env_is_name(name))
    return;
  int at = find(e, name, strlen(name));
  if (at < 0)
    return;
  ft__free(e->kv.v[at]);
  memmove(e->kv.v + at, e->kv.v + at + 1,
          (size_t)(e->kv.n - at) * sizeof(*e->kv.v)); /* the NULL too */
  e->kv.n--;
}

static int by_collation(const void *a, const void *b) {
  return strcoll(*(char *const *)a, *(char *const *)b);
}

int ft__env_names(const ft__env_t *e, const char *prefix, ft__words_t *out) {
  int had = out->n;
  size_t plen = strlen(prefix);
  for (int i = 0; i < e->kv.n; i++) {
    const char *kv = e->kv.v[i];
    size_t len = strcspn(kv, "=");
    if (strncmp(kv, prefix, plen) != 0 || len < plen)
      continue;
    if (ft__words_addn(out, kv, len) != FT_OK) {
      ft__words_truncate(out, had);
      return FT_ENOMEM;
    }
    if (!ft__env_is_name(out->v[out->n - 1]))
      ft__words_truncate(out, out->n - 1);
  }
  qsort(out->v + had, (size_t)(out->n - had), sizeof(*out->v), by_collation);
  return FT_OK;
}

/* bash 5.2's builtins and reserved words (compgen -b, compgen -k). */
static const char *const SHELL_WORDS[] = {
    ".",         ":",        "[",        "alias",    "bg",      "bind",
    "break",     "builtin",  "caller",   "cd",       "command", "compgen",
    "complete",  "compopt",  "continue", "declare",  "dirs",    "disown",
    "echo",      "enable",   "eval",     "exec",     "exit",    "export",
    "false",     "fc",       "fg",       "getopts",  "hash",    "help",
    "history",   "jobs",     "kill",     "let",      "local",   "logout",
    "mapfile",   "popd",     "printf",   "pushd",    "pwd",     "read",
    "readarray", "readonly", "return",   "set",      "shift",   "shopt",
    "source",    "suspend",  "test",     "times",    "trap",    "true",
    "type",      "typeset",  "ulimit",   "umask",    "unalias", "unset",
    "wait",      "if",       "then",     "else",     "elif",    "fi",
    "case",      "esac",     "for",      "select",   "while",   "until",
    "do",        "done",     "in",       "function", "time",    "{",
    "}",         "!",        "[[",       "]]",       "coproc"};

static int shell_word(const char *w) {
  for (size_t i = 0; i < sizeof(SHELL_WORDS) / sizeof(*SHELL_WORDS); i++)
    if (strcmp(w, SHELL_WORDS[i]) == 0)
      return 1;
  return 0;
}

/* 2: an executable file, 1: a file that is not, 0: none (or a directory). */
static int file_kind(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || S_ISDIR(st.st_mode))
    return 0;
  return access(path, X_OK) == 0 ? 2 : 1;
}

static int set_text(ft__text_t *out, const char *s, size_t len) {
  ft__text_clear(out);
  return ft__text_addn(out, s, len) == FT_OK ? 1 : FT_ENOMEM;
}

/* PATH's DIR/WORD: 1 and out, or 0. */
static int search_path(const char *path, const char *word, ft__text_t *out) {
  ft__text_t cand = FT__TEXT_INIT, fallback = FT__TEXT_INIT;
  int rc = 0;
  for (const char *p = path;; p++) {
    size_t len = strcspn(p, ":");
    ft__text_clear(&cand);
    if (ft__text_addf(&cand, "%.*s/%s", len ? (int)len : 1, len ? p : ".",
                      word) != FT_OK) {
      rc = FT_ENOMEM;
      break;
    }
    int kind = file_kind(cand.s);
    if (kind == 2) {
      rc = set_text(out, cand.s, cand.len);
      break;
    }
    if (kind == 1 && !fallback.len &&
        ft__text_add(&fallback, cand.s) != FT_OK) {
      rc = FT_ENOMEM;
      break;
    }
    p += len;
    if (!*p)
      break;
  }
  if (rc == 0 && fallback.len)
    rc = set_text(out, fallback.s, fallback.len);
  ft__text_free(&cand);
  ft__text_free(&fallback);
  return rc;
}

int ft__env_command(const ft__env_t *e, const char *word, ft__text_t *out) {
  if (!*word)
    return 0;
  if (shell_word(word))
    return set_text(out, word, strlen(word));
  if (strchr(word, '/'))
    return file_kind(word) == 2 ? set_text(out, word, strlen(word)) : 0;
  const char *path = ft__env_get(e, "PATH");
  return path ? search_path(path, word, out) : 0;
}
