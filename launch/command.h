/*
 * A command run to its end for what it prints, as bash's $(...) runs it:
 * its standard output captured whole (its standard error too, when asked:
 * 2>&1), its standard error otherwise left on ours, its standard input
 * ours.  ft-launch asks ft-cluster for its hosts and ft-nodelist for an
 * allocation's nodes this way, before anything of the job starts.
 */
#ifndef FT_LAUNCH_COMMAND_H
#define FT_LAUNCH_COMMAND_H

#include "launch/words.h"

/* Run argv (argv[0] a path) with the environment envp; its output
 * appended to out, its status into *status as bash's $? has it (the exit
 * code, 128 + the signal that ended it, 127 when it could not start).
 * FT_OK, or FT_ENOMEM / FT_EIO when it could not be run or read. */
int ft__command_output(char *const *argv, char *const *envp, int with_stderr,
                       ft__text_t *out, int *status);

/* $(...)'s trailing newlines dropped from t. */
void ft__command_chomp(ft__text_t *t);

#endif
