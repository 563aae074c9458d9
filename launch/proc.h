/*
 * How the probes, the watchdog and the spares' preparation run programs
 * (probe.c, watchdog.c, spares.c):
 *   - a program is found on the PATH of the environment it runs in, as
 *     execvp finds it (ft__proc_find);
 *   - "timeout -k 2 T COMMAND </dev/null >/dev/null 2>&1" is a forked
 *     process of its own that runs COMMAND in a process group of its own,
 *     TERMs that group at T, KILLs it 2 s later, and passes a TERM, INT,
 *     HUP or QUIT it gets on to it, as coreutils' timeout does
 *     (ft__proc_bounded; with tries, probe_host's retries as well);
 *   - a process forked to run beside the caller (the watchdog, a
 *     preparation, a bounded command) starts with none of the caller's
 *     signal handlers or blocked signals, and none of its descriptors but
 *     the standard ones: a copy of a pipe's end the caller holds would keep
 *     that pipe open as long as the copy lives (ft__proc_child_init).
 * The caller is one thread; it must not reap (wait(-1)) the processes
 * these modules start: each module waits for its own by pid.
 * Durations are read on CLOCK_MONOTONIC.
 */
#ifndef FT_LAUNCH_PROC_H
#define FT_LAUNCH_PROC_H

#include <stdint.h>
#include <sys/types.h>

#include "launch/words.h"

/* The program word names in envp: word itself when it holds a '/', else
 * the first executable regular file DIR/word of envp's PATH (an empty DIR
 * is "."; no PATH: /bin:/usr/bin).  1 and path replaced, 0 when none,
 * FT_ENOMEM. */
int ft__proc_find(char *const *envp, const char *word, ft__text_t *path);

/* The value of name in envp (its first entry), or NULL. */
const char *ft__proc_getenv(char *const *envp, const char *name);

/* fork, every signal blocked around it: in the child every signal the
 * caller handles is back to SIG_DFL (an ignored one stays ignored, as
 * across execve; SIGCHLD is SIG_DFL) and every signal is still blocked, so
 * that no handler of the caller's runs there; it unblocks them
 * (ft__proc_child_init, or a mask of its own).  The parent's mask is as it
 * was.  The pid, 0 in the child, -1. */
pid_t ft__proc_fork(void);
/* In the child of ft__proc_fork: no signal blocked, every descriptor from 3
 * on closed but keep (-1: none). */
void ft__proc_child_init(int keep);

/* Fork the process of "timeout -k 2 T argv": it runs argv (path: its
 * program; NULL when there is none, which ends a try with 127) with envp,
 * its standard input, output and error /dev/null, each try in a process
 * group of its own bounded by timeout_s (0: none), up to tries tries 1,
 * 2, 4... s apart until one exits 0.  It exits 0 after a try that did,
 * else with the last try's status as timeout has it (124: ended at the
 * bound, 137: killed 2 s later, 127: not started, else the command's).  A
 * TERM, INT, HUP or QUIT it gets goes on to the try under way (KILL 2 s
 * later) and ends the tries.  It stays in the caller's process group, so
 * that the group's end is its end.  Its pid, or -1 when fork failed. */
pid_t ft__proc_bounded(const char *path, char *const *argv, char *const *envp,
                      double timeout_s, int tries);
/* As ft__proc_bounded, its standard output out_fd instead (-1: /dev/null),
 * and its standard error too with with_stderr; out_fd is the only
 * descriptor from 3 on it keeps, closed once it is the output. */
pid_t ft__proc_bounded_to(const char *path, char *const *argv,
                         char *const *envp, double timeout_s, int tries,
                         int out_fd, int with_stderr);

/* A wait status as bash's $? has it: the exit code, 128 + the signal that
 * ended it (1 for anything else). */
int ft__proc_status(int st);

/* Wait for the child pid (EINTR retried): its status as bash's $? has it
 * (the exit code, 128 + the signal that ended it), -1 when pid is none of
 * ours. */
int ft__proc_wait(pid_t pid);

/* 1 while pid runs: kill(pid, 0) succeeds and, for a child of ours, it has
 * not ended (its zombie is gone for this). */
int ft__proc_alive(pid_t pid);
/* 1 while process group pgid has a member that is not a zombie (a zombie
 * does nothing; where no process reaps orphans, one stays for good). */
int ft__proc_group_alive(pid_t pgid);

/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t ft__proc_now_ms(void);
/* Sleep ms milliseconds (a signal's interruption resumed). */
void ft__proc_sleep_ms(uint64_t ms);

/* "ft-launch: LINE\n" on standard error, in one write (say). */
void ft__proc_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* write(fd) of all n bytes: 0, or -1. */
int ft__proc_write_all(int fd, const char *s, size_t n);

#endif
