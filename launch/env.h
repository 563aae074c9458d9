/*
 * The environment ft-launch works in and hands to what it starts, kept as a
 * shell keeps its own: the variables it was started with, less those it
 * unsets, with those it exports (FT_JOB, FT_EC_K, ...) set or replaced.
 * Reading it is `${NAME:-}` and `command -v`; listing it is
 * `compgen -e | grep '^PREFIX' | sort`, the names mpirun is told to pass
 * on (-x).  An entry whose name is not a shell identifier (FT_A-B=1) is
 * handed on as it came but is no variable: never read, set or listed, as
 * in bash.
 *
 * The one copy of the process's environment is made by ft__env_load; no
 * function here reads or changes the process's own.  Allocating functions
 * return FT_OK or FT_ENOMEM, leaving the environment as it was on failure.
 */
#ifndef FT_LAUNCH_ENV_H
#define FT_LAUNCH_ENV_H

#include "launch/words.h"

typedef struct ft__env {
  ft__words_t kv; /* "NAME=VALUE", NULL-terminated: an envp for execve */
} ft__env_t;

#define FT__ENV_INIT                                                           \
  { FT__WORDS_INIT }

/* A copy of envp (entries without '=' are dropped; a name given twice keeps
 * its last value). */
int ft__env_load(ft__env_t *e, char *const *envp);
void ft__env_free(ft__env_t *e);

/* The value of NAME, or NULL when unset. */
const char *ft__env_get(const ft__env_t *e, const char *name);
/* ${NAME:-}: the value, "" when unset. */
const char *ft__env_str(const ft__env_t *e, const char *name);
/* export NAME=VALUE.  FT_EINVAL when NAME is not an identifier. */
int ft__env_set(ft__env_t *e, const char *name, const char *value);
void ft__env_unset(ft__env_t *e, const char *name);

/* The names of the variables that begin with prefix, in the order of the
 * locale's collation (sort(1), strcoll), appended to out. */
int ft__env_names(const ft__env_t *e, const char *prefix, ft__words_t *out);

/* `command -v WORD` on the environment's PATH: 1 and what bash prints
 * (WORD for a shell builtin or keyword or a path given with a '/' that is
 * executable; else the first executable file DIR/WORD of PATH, an empty
 * DIR being "."; else the first such file that is not executable), 0 when
 * none; out is replaced.  FT_ENOMEM. */
int ft__env_command(const ft__env_t *e, const char *word, ft__text_t *out);

/* 1 when s is a shell identifier ([A-Za-z_][A-Za-z0-9_]*). */
int ft__env_is_name(const char *s);

#endif
