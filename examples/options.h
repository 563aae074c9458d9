/*
 * Command line of ft-train-example (docs/design.md section 9):
 *   ft-train-example --steps N --snapshot-every K --state-mb M [--seed S]
 *                    [--hidden H] [--batch B] [--lr X] [--dropout P]
 *                    [--rng-in-place] [--timing-skip K] [--no-ftrt]
 *                    [--help]
 */
#ifndef EXAMPLES_OPTIONS_H
#define EXAMPLES_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#define OPTIONS_STATE_MB_MAX 4096.0

typedef struct options {
  uint64_t steps;          /* last step to run (steps count from 1) */
  uint64_t snapshot_every; /* 0: never */
  double state_mb;         /* sizes the model; see usage */
  uint64_t seed;
  int hidden; /* 0: chosen from state_mb */
  int batch;  /* samples per rank per step */
  double lr;
  double dropout;
  int use_ftrt;
  int rng_in_place; /* advance the registered RNG before ft_fence */
  uint64_t timing_skip; /* steps left out of the 'steady' timing line */
} options_t;

enum { OPTIONS_RUN = 0, OPTIONS_HELP = 1, OPTIONS_USAGE = 2 };

/*
 * Parse argv.  OPTIONS_RUN: o is filled.  OPTIONS_HELP: the help was written
 * to out.  OPTIONS_USAGE: one line saying what is wrong, then a hint, was
 * written to err.  Quiet (nothing written) when quiet is set.
 */
int options_parse(options_t *o, int argc, char **argv, FILE *out, FILE *err,
                  int quiet);

#endif
