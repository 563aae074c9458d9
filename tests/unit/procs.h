/* Helpers of the unit tests of ft-launch's processes (test_probe,
 * test_watchdog, test_spares, test_leftovers): scripts written into the
 * test's directory, a probe run by sh, the lines of a file, our standard
 * error into a file, and whether a process is gone.  Waiting is for an
 * event (a line in a file), never for a time: Check's timeout bounds a
 * hang. */
#ifndef FT_TESTS_PROCS_H
#define FT_TESTS_PROCS_H

#include <sys/types.h>

#include "launch/probe.h"
#include "launch/words.h"

/* dir/name, a "#!/bin/sh" script of body, executable; its path in out. */
void procs_script(char *out, size_t len, const char *name, const char *body);
/* The file's text, "" when there is none (static, until the next call). */
const char *procs_slurp(const char *path);
/* How many lines of the file are line exactly (0: no file). */
int procs_count(const char *path, const char *line);
/* Until the file has at least n lines equal to line. */
void procs_wait_count(const char *path, const char *line, int n);
/* Our standard error into path (truncated) until procs_err_back. */
void procs_err_to(const char *path);
void procs_err_back(void);
/* Process pid has ended (no such process, or a zombie). */
int procs_gone(pid_t pid);
/* Fork a process running argv with envp, once it has started it (its
 * exec done); its pid. */
pid_t procs_spawn(char *const *argv, char *const *envp);
/* A probe for the Open MPI 4.1 backend that runs "/bin/sh -c CODE HOST
 * true" ($0 is the host) with PATH=/usr/bin:/bin: tries tries, each
 * bounded by timeout (seconds, as text).  code is kept, not copied; the
 * probe's words are static, the same for every call. */
ft__probe_t procs_probe(const char *code, int tries, const char *timeout);
/* w's words joined by spaces are want. */
void procs_words_are(const ft__words_t *w, const char *want);

#endif
