/*
 * Flag parsing with getopt_long; every value is checked whole (no trailing
 * characters, no sign where none is allowed, within range).
 */
#include "examples/options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: ft-train-example --steps N --state-mb M [OPTIONS]\n"
    "  --steps N           run until step N\n"
    "  --state-mb M        a model of about M MiB a rank, 0 < M <= 4096\n"
    "  --snapshot-every K  ft_snapshot after every K-th step (default 0)\n"
    "  --seed S            seed of everything random (default 1)\n"
    "  --hidden H          hidden width, instead of --state-mb's\n"
    "  --batch B           samples per rank per step (default 32)\n"
    "  --lr X              Adam learning rate (default 0.001)\n"
    "  --dropout P         dropout rate, 0 <= P <= 0.9 (default 0.1)\n"
    "  --rng-in-place      advance the registered RNG before ft_fence\n"
    "  --timing-skip K     also time the steps after the first K\n"
    "  --no-ftrt           plain MPI: no ftrt call at all\n"
    "  --help              this text\n"
    "See ft-train-example(1).\n";

enum {
  OPT_STEPS = 256,
  OPT_EVERY,
  OPT_MB,
  OPT_SEED,
  OPT_HIDDEN,
  OPT_BATCH,
  OPT_LR,
  OPT_DROPOUT,
  OPT_NOFTRT,
  OPT_RNG_IN_PLACE,
  OPT_TIMING_SKIP,
  OPT_HELP
};

static const struct option longopts[] = {
    {"steps", required_argument, NULL, OPT_STEPS},
    {"snapshot-every", required_argument, NULL, OPT_EVERY},
    {"state-mb", required_argument, NULL, OPT_MB},
    {"seed", required_argument, NULL, OPT_SEED},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"lr", required_argument, NULL, OPT_LR},
    {"dropout", required_argument, NULL, OPT_DROPOUT},
    {"no-ftrt", no_argument, NULL, OPT_NOFTRT},
    {"rng-in-place", no_argument, NULL, OPT_RNG_IN_PLACE},
    {"timing-skip", required_argument, NULL, OPT_TIMING_SKIP},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0}};

static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
  char *end;
  unsigned long long v;
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > max)
    return -1;
  *out = v;
  return 0;
}

static int parse_double(const char *s, double lo, double hi, int lo_open,
                        double *out) {
  char *end;
  double v;
  errno = 0;
  v = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(v))
    return -1;
  if (v < lo || (lo_open && v == lo) || v > hi)
    return -1;
  *out = v;
  return 0;
}

static void defaults(options_t *o) {
  memset(o, 0, sizeof *o);
  o->seed = 1;
  o->batch = 32;
  o->lr = 1e-3;
  o->dropout = 0.1;
  o->use_ftrt = 1;
}

/* One option; 0 when its value is good, -1 (with *what set) when not. */
static int set_option(options_t *o, int opt, const char *arg, const char **what,
                      int *seen) {
  uint64_t u;
  switch (opt) {
  case OPT_STEPS:
    *what = "--steps needs an integer >= 0, not";
    seen[0] = 1;
    return parse_u64(arg, UINT64_MAX / 2, &o->steps);
  case OPT_EVERY:
    *what = "--snapshot-every needs an integer >= 0, not";
    return parse_u64(arg, UINT64_MAX / 2, &o->snapshot_every);
  case OPT_MB:
    *what = "--state-mb needs a number of MiB, 0 < M <= 4096, not";
    seen[1] = 1;
    return parse_double(arg, 0.0, OPTIONS_STATE_MB_MAX, 1, &o->state_mb);
  case OPT_SEED:
    *what = "--seed needs an integer >= 0, not";
    return parse_u64(arg, UINT64_MAX, &o->seed);
  case OPT_HIDDEN:
    *what = "--hidden needs an integer, 8 <= H <= 32768, not";
    if (parse_u64(arg, 32768, &u) != 0 || u < 8)
      return -1;
    o->hidden = (int)u;
    return 0;
  case OPT_BATCH:
    *what = "--batch needs an integer, 1 <= B <= 65536, not";
    if (parse_u64(arg, 65536, &u) != 0 || u < 1)
      return -1;
    o->batch = (int)u;
    return 0;
  case OPT_LR:
    *what = "--lr needs a number, 0 < X <= 1, not";
    return parse_double(arg, 0.0, 1.0, 1, &o->lr);
  case OPT_DROPOUT:
    *what = "--dropout needs a number, 0 <= P <= 0.9, not";
    return parse_double(arg, 0.0, 0.9, 0, &o->dropout);
  case OPT_NOFTRT:
    o->use_ftrt = 0;
    return 0;
  case OPT_RNG_IN_PLACE:
    o->rng_in_place = 1;
    return 0;
  case OPT_TIMING_SKIP:
    *what = "--timing-skip needs an integer >= 1, not";
    if (parse_u64(arg, UINT64_MAX / 2, &o->timing_skip) != 0 ||
        o->timing_skip < 1)
      return -1;
    return 0;
  }
  *what = "unhandled option";
  return -1;
}

/* "ft-train-example: MSG[ 'ARG']" and a hint; returns OPTIONS_USAGE. */
static int usage_error(FILE *err, int quiet, const char *msg, const char *arg) {
  if (quiet)
    return OPTIONS_USAGE;
  fprintf(err, "ft-train-example: %s", msg);
  if (arg)
    fprintf(err, " '%s'", arg);
  fputs("\nTry 'ft-train-example --help'.\n", err);
  return OPTIONS_USAGE;
}

int options_parse(options_t *o, int argc, char **argv, FILE *out, FILE *err,
                  int quiet) {
  int opt, seen[2] = {0, 0};
  const char *what;
  defaults(o);
  opterr = 0;
  optind = 1;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (opt == OPT_HELP) {
      if (!quiet)
        fputs(usage_text, out);
      return OPTIONS_HELP;
    }
    if (opt == ':')
      return usage_error(err, quiet, "missing value of", argv[optind - 1]);
    if (opt == '?')
      return usage_error(err, quiet, "unknown option", argv[optind - 1]);
    if (set_option(o, opt, optarg, &what, seen) != 0)
      return usage_error(err, quiet, what, optarg);
  }
  if (optind < argc)
    return usage_error(err, quiet, "unexpected argument", argv[optind]);
  if (!seen[0])
    return usage_error(err, quiet, "--steps N is required", NULL);
  if (!seen[1])
    return usage_error(err, quiet, "--state-mb M is required", NULL);
  return OPTIONS_RUN;
}
