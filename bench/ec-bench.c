/*
 * ec-bench: encode and decode throughput of ft__codec against raw ISA-L
 * calls on the same buffers in the same run.  Each repetition times both,
 * alternating which goes first, and the ratio is the median of the paired
 * per-repetition ratios: two noisy cores move both sides of a pair together,
 * so pairing cancels most of the noise.  Raw decode is what an ISA-L user
 * writes per decode: gf_invert_matrix, ec_init_tables, ec_encode_data.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/erasure_code.h>

#include "ec/codec.h"
#include "ftrt.h"

#define MAXK 32 /* limits of --codes */
#define MAXM 16
#define MAXCODES 16

typedef struct {
  size_t chunk;
  int reps;
  size_t piece;
  int ncodes, codes[MAXCODES][2];
} opts_t;

typedef struct {
  int k, m;
  size_t len;
  uint8_t *data[MAXK], *par[MAXM], *raw_par[MAXM];
  uint8_t *out[MAXM], *raw_out[MAXM]; /* rebuilt data chunks */
  unsigned char *matrix, *tbls;       /* raw ISA-L encode state */
  ft__codec_t *codec;
} bench_t;

typedef struct {
  double codec_gbs, isal_gbs, ratio;
} result_t;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: ec-bench [--chunk-mb N] [--reps R] [--piece-kb P] "
      "[--codes LIST]\n"
      "Encode and decode throughput of the ftrt codec (ec/codec.c) and of\n"
      "raw ISA-L on the same buffers; decode rebuilds m lost data chunks.\n"
      "  --chunk-mb N  bytes per chunk in MiB, 1..1023 (default 64)\n"
      "  --reps R      timed repetitions of each side, 3..1000 (default 15)\n"
      "  --piece-kb P  codec piece size in KiB (default: the codec's own)\n"
      "  --codes LIST  k+m codes, comma-separated, k <= 32, 1 <= m <= 16,\n"
      "                m <= k (default 3+1,4+2,8+2)\n"
      "  --help        this text\n"
      "Prints a table and the lines 'ratio codec_vs_isal_encode X' and\n"
      "'ratio codec_vs_isal_decode X' (X: minimum over the codes of the\n"
      "median paired ratio codec speed / ISA-L speed; 1.0 = equal).\n"
      "Exit status: 0 ok, 1 a result differed or out of memory, 2 usage.\n");
}

/* "3+1,4+2": m <= k because decode erases m data chunks. */
static int parse_codes(const char *arg, opts_t *o) {
  const char *p = arg;
  int k, m, used;
  o->ncodes = 0;
  while (o->ncodes < MAXCODES && sscanf(p, "%d+%d%n", &k, &m, &used) == 2 &&
         k >= 1 && k <= MAXK && m >= 1 && m <= MAXM && m <= k) {
    o->codes[o->ncodes][0] = k;
    o->codes[o->ncodes++][1] = m;
    p += used;
    if (*p == '\0')
      return 0;
    if (*p++ != ',')
      break;
  }
  fprintf(stderr, "ec-bench: bad --codes '%s' (see --help)\n", arg);
  return 2;
}

static int parse(int argc, char **argv, opts_t *o) {
  static const struct option lo[] = {{"chunk-mb", required_argument, 0, 'c'},
                                     {"reps", required_argument, 0, 'r'},
                                     {"piece-kb", required_argument, 0, 'p'},
                                     {"codes", required_argument, 0, 'C'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  int c;
  long v;
  char *end;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      exit(0);
    }
    if (c == '?')
      return 2;
    if (c == 'C') {
      if (parse_codes(optarg, o))
        return 2;
      continue;
    }
    v = strtol(optarg, &end, 10);
    if (*end || (c == 'c' && (v < 1 || v > 1023)) ||
        (c == 'r' && (v < 3 || v > 1000)) ||
        (c == 'p' && (v < 1 || v > (1 << 20)))) {
      fprintf(stderr, "ec-bench: bad value '%s' for --%s (see --help)\n",
              optarg,
              c == 'c'   ? "chunk-mb"
              : c == 'r' ? "reps"
                         : "piece-kb");
      return 2;
    }
    if (c == 'c')
      o->chunk = (size_t)v << 20;
    else if (c == 'r')
      o->reps = (int)v;
    else
      o->piece = (size_t)v << 10;
  }
  if (optind < argc) {
    fprintf(stderr, "ec-bench: unexpected argument '%s' (see --help)\n",
            argv[optind]);
    return 2;
  }
  return 0;
}

/* ---- setup ------------------------------------------------------------ */

static uint8_t *chunk(size_t len, uint64_t seed) {
  uint8_t *p = aligned_alloc(64, len);
  if (!p)
    return NULL;
  uint64_t *w = (uint64_t *)p; /* touch every page before timing */
  for (size_t i = 0; i < len / 8; i++) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    w[i] = seed;
  }
  return p;
}

static void bench_free(bench_t *b) {
  for (int i = 0; i < MAXK; i++)
    free(b->data[i]);
  for (int i = 0; i < MAXM; i++) {
    free(b->par[i]);
    free(b->raw_par[i]);
    free(b->out[i]);
    free(b->raw_out[i]);
  }
  free(b->matrix);
  free(b->tbls);
  ft__codec_destroy(b->codec);
}

static int bench_init(bench_t *b, int k, int m, const opts_t *o) {
  memset(b, 0, sizeof(*b));
  b->k = k;
  b->m = m;
  b->len = o->chunk;
  int ok = ft__codec_create(k, m, &b->codec) == FT_OK &&
           ft__codec_set_piece_bytes(b->codec, o->piece) == FT_OK;
  for (int i = 0; ok && i < k; i++)
    ok = (b->data[i] = chunk(b->len, 0x9e3779b97f4a7c15ull + (uint64_t)i)) != 0;
  for (int j = 0; ok && j < m; j++)
    ok = (b->par[j] = chunk(b->len, 1 + (uint64_t)j)) &&
         (b->raw_par[j] = chunk(b->len, 2 + (uint64_t)j)) &&
         (b->out[j] = chunk(b->len, 3 + (uint64_t)j)) &&
         (b->raw_out[j] = chunk(b->len, 4 + (uint64_t)j));
  b->matrix = malloc((size_t)(k + m) * (size_t)k);
  b->tbls = malloc(32 * (size_t)k * (size_t)m);
  if (!ok || !b->matrix || !b->tbls)
    return -1;
  gf_gen_cauchy1_matrix(b->matrix, k + m, k);
  ec_init_tables(k, m, b->matrix + k * k, b->tbls);
  return 0;
}

/* ---- the four timed operations ---------------------------------------- */

static double time_codec_encode(bench_t *b) {
  double t = now();
  ft__codec_encode(b->codec, b->len, (const uint8_t *const *)b->data, b->par);
  return now() - t;
}

static double time_isal_encode(bench_t *b) {
  double t = now();
  ec_encode_data((int)b->len, b->k, b->m, b->tbls, b->data, b->raw_par);
  return now() - t;
}

/* Data chunks 0..m-1 are lost; the codec rebuilds them into out[]. */
static double time_codec_decode(bench_t *b) {
  uint8_t *chunks[MAXK + MAXM];
  int erased[MAXM];
  for (int i = 0; i < b->k; i++)
    chunks[i] = i < b->m ? b->out[i] : b->data[i];
  for (int j = 0; j < b->m; j++) {
    chunks[b->k + j] = b->par[j];
    erased[j] = j;
  }
  double t = now();
  int rc = ft__codec_decode(b->codec, b->len, chunks, erased, b->m);
  t = now() - t;
  return rc == FT_OK ? t : -1;
}

/* The same with ISA-L alone: sources are data m..k-1 then parity 0..m-1. */
static double time_isal_decode(bench_t *b) {
  int k = b->k, m = b->m;
  unsigned char sub[MAXK * MAXK], inv[MAXK * MAXK], rows[MAXK * MAXK];
  unsigned char tbls[32 * MAXK * MAXM], *src[MAXK];
  double t = now();
  for (int s = 0; s < k; s++) {
    int row = s < k - m ? m + s : k + (s - (k - m));
    memcpy(sub + s * k, b->matrix + row * k, (size_t)k);
    src[s] = row < k ? b->data[row] : b->raw_par[row - k];
  }
  if (gf_invert_matrix(sub, inv, k))
    return -1;
  for (int r = 0; r < m; r++)
    memcpy(rows + r * k, inv + r * k, (size_t)k);
  ec_init_tables(k, m, rows, tbls);
  ec_encode_data((int)b->len, k, m, tbls, src, b->raw_out);
  return now() - t;
}

/* ---- runs ------------------------------------------------------------- */

typedef double (*timed_fn)(bench_t *);

/* Interleave the two sides, alternating the order; medians of times and of
 * paired ratios.  One untimed warm-up round first. */
static int pair(bench_t *b, int reps, timed_fn codec, timed_fn isal,
                result_t *res) {
  double tc[1000], ti[1000], ratio[1000];
  if (codec(b) < 0 || isal(b) < 0)
    return -1;
  for (int r = 0; r < reps; r++) {
    if (r % 2) {
      ti[r] = isal(b);
      tc[r] = codec(b);
    } else {
      tc[r] = codec(b);
      ti[r] = isal(b);
    }
    if (tc[r] <= 0 || ti[r] <= 0)
      return -1;
    ratio[r] = ti[r] / tc[r];
  }
  double bytes = (double)b->k * (double)b->len;
  res->codec_gbs = bytes / median(tc, reps) / 1e9;
  res->isal_gbs = bytes / median(ti, reps) / 1e9;
  res->ratio = median(ratio, reps);
  return 0;
}

static int verify(const bench_t *b) {
  for (int j = 0; j < b->m; j++)
    if (memcmp(b->par[j], b->raw_par[j], b->len) ||
        memcmp(b->out[j], b->data[j], b->len) ||
        memcmp(b->raw_out[j], b->data[j], b->len))
      return -1;
  return 0;
}

static void row(int k, int m, const char *op, const result_t *r) {
  printf("%d+%-4d %-7s %10.2f %10.2f %8.3f\n", k, m, op, r->codec_gbs,
         r->isal_gbs, r->ratio);
}

static int run_code(int k, int m, const opts_t *o, double *enc, double *dec) {
  bench_t b;
  result_t re, rd;
  int rc = bench_init(&b, k, m, o);
  if (rc)
    fprintf(stderr, "ec-bench: out of memory for %d+%d\n", k, m);
  else if ((rc = pair(&b, o->reps, time_codec_encode, time_isal_encode, &re)) ||
           (rc = pair(&b, o->reps, time_codec_decode, time_isal_decode, &rd)) ||
           (rc = verify(&b)))
    fprintf(stderr, "ec-bench: %d+%d: codec and ISA-L results differ\n", k, m);
  if (!rc) {
    row(k, m, "encode", &re);
    row(k, m, "decode", &rd);
    *enc = re.ratio < *enc ? re.ratio : *enc;
    *dec = rd.ratio < *dec ? rd.ratio : *dec;
  }
  bench_free(&b);
  return rc;
}

int main(int argc, char **argv) {
  opts_t o = {(size_t)64 << 20, 15, 0, 3, {{3, 1}, {4, 2}, {8, 2}}};
  int rc = parse(argc, argv, &o);
  if (rc)
    return rc;
  double enc = 1e9, dec = 1e9;
  printf("# chunk %zu MiB, %d reps, piece %s; GB/s = k*chunk bytes / median "
         "time (1 GB = 1e9 B)\n",
         o.chunk >> 20, o.reps, o.piece ? "set" : "default");
  printf("# ratio = median over reps of paired ISA-L time / codec time; the "
         "ratio lines give the MINIMUM over codes\n");
  printf("%-6s %-7s %10s %10s %8s\n", "code", "op", "codec", "isa-l", "ratio");
  for (int i = 0; i < o.ncodes; i++)
    if (run_code(o.codes[i][0], o.codes[i][1], &o, &enc, &dec))
      return 1;
  printf("ratio codec_vs_isal_encode %.3f\n", enc);
  printf("ratio codec_vs_isal_decode %.3f\n", dec);
  return 0;
}
