/*
 * A command run to its end for what it prints, as bash's $(...) runs it:
 * its standard output captured whole (its standard error too, when asked:
 * 2>&1), its standard error otherwise left on ours, its standard input
 * ours.  ft-launch asks ft-cluster for its hosts and ft-nodelist for an
 * allocation's nodes this way, before anything of the job starts.
 */
#ifndef FT_LAUNCH_COMMAND_H
#define FT_LAUNCH_COMMAND_H

#include <sys/types.h>

#include "launch/words.h"

/* Run argv (argv[0] a path) with the environment envp; its output
 * appended to out, its status into *status as bash's $? has it (the exit
 * code, 128 + the signal that ended it, 127 when it could not start).
 * FT_OK, or FT_ENOMEM / FT_EIO when it could not be run or read. */
int ft__command_output(char *const *argv, char *const *envp, int with_stderr,
                       ft__text_t *out, int *status);

/* A command bounded by a timeout, as "timeout -k 2 T" runs it
 * (ft__proc_bounded: a process group of its own, TERMed at T, KILLed 2 s
 * later), its standard input /dev/null, its output on a pipe: started, then
 * read to its end and waited for, so that several run at once.  argv[0] a
 * path. */
typedef struct ft__command {
  pid_t pid; /* 0: not started */
  int fd;
} ft__command_t;
#define FT__COMMAND_INIT {0, -1}
/* Start it (timeout_s 0: no bound).  FT_OK, FT_EIO (no pipe, no fork). */
int ft__command_start(char *const *argv, char *const *envp, int with_stderr,
                      double timeout_s, ft__command_t *c);
/* Its output appended to out (FT_ENOMEM: the rest of it dropped) and its
 * status into *status (124: ended at the bound, 137: killed 2 s later, 127:
 * not started, else its own), the command waited for.  A command never
 * started ends with 127 and FT_EIO. */
int ft__command_finish(ft__command_t *c, ft__text_t *out, int *status);
/* Start, then finish. */
int ft__command_bounded(char *const *argv, char *const *envp, int with_stderr,
                        double timeout_s, ft__text_t *out, int *status);

/* $(...)'s trailing newlines dropped from t. */
void ft__command_chomp(ft__text_t *t);

#endif
