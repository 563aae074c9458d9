/*
 * ft-persist's exit statuses, its JSON strings, and `export`: a persisted
 * version written as numpy .npy files plus index.json (pexport.c).
 */
#ifndef FT_SCRIPTS_PEXPORT_H
#define FT_SCRIPTS_PEXPORT_H

#include <stdio.h>

enum {
  FT_PX_OK = 0,
  FT_PX_ERROR = 1,     /* anything else: out of memory, an odd I/O error */
  FT_PX_USAGE = 2,     /* bad flags, arguments, no directory given */
  FT_PX_REFUSED = 3,   /* the persist directory is not this user's own */
  FT_PX_NOTFOUND = 4,  /* no such directory, job or version; none complete */
  FT_PX_CORRUPT = 5,   /* a file of the version fails its checks */
  FT_PX_UNCOVERED = 6, /* a global tensor the slices do not give whole */
  FT_PX_OUTDIR = 7     /* OUTDIR not empty, or not made or written */
};

/* The exit status of a status from reading (ft_persisted_*, ft__persist_*). */
int ft__px_exit_of(int status);

/* s as a JSON string: valid UTF-8 passes as it is, other bytes and control
 * characters as \u00XX. */
void ft__px_json_str(FILE *f, const char *s);

/* "12.0 MiB" */
void ft__px_human(char *out, size_t len, double bytes);

/* export VERSION OUTDIR: one line on stdout (a JSON object with json), the
 * reason on stderr; returns the exit status. */
int ft__px_export(const char *dir, const char *job, const char *version,
                  const char *outdir, int json);

#endif
