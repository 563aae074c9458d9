/*
 * ft-launch's command line and the environment that stands in for it,
 * read in three steps (parse_args, validate, pick_python): every option,
 * its default (FT_JOB, FT_TIMEOUT, FT_EC_K and FT_EC_M, FT_PROBE_TRIES,
 * FT_CLUSTER, SLURM_JOB_NODELIST, FT_PYTHON), and its refusals, word for
 * word.
 *
 * The grammar: options, then PROGRAM and its arguments, the two parted by
 * "--" or by the first word that is no option.  "--opt=value" is
 * "--opt value" for the options that take a value; for another
 * ("--dry-run=x") it is refused, and "--cluster=" (no name) too.
 * "--cluster C" names the cluster only when C is a cluster's name
 * ([a-z0-9]{1,16}) and "--" or one of ft-launch's options follows it (a
 * program's first argument is not one); else the cluster is $FT_CLUSTER or
 * ftrt and the word after --cluster starts PROGRAM.  A PROGRAM not introduced
 * by "--" that is followed by one of ft-launch's options and then "--" is
 * refused: the options were meant for ft-launch (options_after_program).
 *
 * Numbers are kept as the text given: bash compares them in decimal with
 * `[`, computes with them in its arithmetic (where a leading 0 is octal),
 * and prints them as they were written ("--spares 01" is said "01").
 *
 * A step returns 0 to go on, or the exit code of its refusal with the line
 * in msg (without "ft-launch: "): FT_LAUNCH_EXIT_USAGE for bad_usage (the
 * caller adds "(ft-launch --help for usage)"), FT_LAUNCH_EXIT_FAIL for die.
 * Strings in the struct stay valid until ft__launch_args_free.
 */
#ifndef FT_LAUNCH_ARGS_H
#define FT_LAUNCH_ARGS_H

#include "launch/env.h"
#include "launch/words.h"

#define FT_LAUNCH_EXIT_FAIL 1

/* A refusal: its line (fmt) into msg, code back; when the line cannot be
 * made, "out of memory" and FT_LAUNCH_EXIT_FAIL. */
int ft__launch_refuse(ft__text_t *msg, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define FT_LAUNCH_EXIT_USAGE 2

typedef struct ft__launch_args {
  /* The options, "" where not given (ppn "1" and restarts "0" then). */
  const char *nodes, *ppn, *hostfile, *cluster, *spares, *restarts, *job;
  const char *ec, *timeout, *probe, *persist, *times, *log, *launcher;
  const char *smp; /* --smp: "ft-smp", "first-rank", or "" (the default) */
  int help, verbose, dry_run, one_per_node, restore_job, cold_spares, fresh;
  ft__words_t extra;        /* --mpirun-arg, in order */
  ft__words_t program;      /* PROGRAM and its arguments */
  const char *cluster_from; /* " (FT_CLUSTER)" when the cluster is
                               FT_CLUSTER's, else "" */

  /* What validate took from the environment and made of the options. */
  const char *slurm;       /* SLURM_JOB_NODELIST when it is the placement */
  const char *probe_tries; /* FT_PROBE_TRIES, else "3" */
  const char *mpirun;      /* FT_MPIRUN: the launcher's program, else the one
                              configure found for its MPI when the backend is
                              that MPI's, else "" (the backend's default) */
  const char *ec_name;     /* "FT_EC_K=3 FT_EC_M=1" when the code came from
                              the environment, else "" ("--ec K+M") */
  const char *smp_program; /* ft-smp's path when the SMPs are its processes
                              (pick_smp), else "" */
  ft__words_t line;        /* the command line as the parse rewrote it */
  ft__words_t own; /* the strings above that are neither argv's nor env's */
} ft__launch_args_t;

/* The text of ft-launch --help. */
extern const char ft__launch_usage[];

/* argv[1..argc) into a (zeroed here first).  A --help or -h stops the
 * parse with a->help set (what follows it is not read).  Reads FT_CLUSTER
 * for a --cluster without a name. */
int ft__launch_parse(ft__launch_args_t *a, int argc, char *const *argv,
                     const ft__env_t *env, ft__text_t *msg);

/* The checks and defaults of validate, in its order.  cwd is $PWD (a
 * relative --persist is taken from there).  Without --dry-run it makes the
 * --persist directory (mkdir -p, mode 0700; mkdir's own line on stderr
 * when that fails, as coreutils words it) and opens --times for appending;
 * a dry run changes nothing.  Exports FT_PERSIST_DIR into env. */
int ft__launch_validate(ft__launch_args_t *a, ft__env_t *env, const char *cwd,
                        ft__text_t *msg);

/* Where the SMPs come from: with --smp ft-smp, or by default for a Python
 * PROGRAM (python*, ft-python), ft-smp's processes beside the trainers
 * (smp_program: bin's ft-smp when executable, else ft-smp on PATH;
 * FT_LAUNCH_EXIT_FAIL when neither is there); with --smp first-rank, for
 * another PROGRAM, and with --one-per-node (no SMP), the first rank of each
 * node.  Before pick_python, which renames PROGRAM. */
int ft__launch_pick_smp(ft__launch_args_t *a, const ft__env_t *env,
                        const char *bin, ft__text_t *msg);

/* A PROGRAM of "python3" or "python" becomes FT_PYTHON, else here's
 * ft-python when executable, else ft-python found on PATH; else it stays. */
int ft__launch_pick_python(ft__launch_args_t *a, const ft__env_t *env,
                           const char *here);

void ft__launch_args_free(ft__launch_args_t *a);

#endif
