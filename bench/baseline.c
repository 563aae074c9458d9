/*
 * Raw baselines of ft-bench (see baseline.h).  ISA-L is called directly here,
 * on purpose: the point is to measure what the library itself costs, beside
 * what ftrt's wrappers, pipeline and transfers add.
 */
#include "bench/baseline.h"
#include "snapshot/store.h"

#include <errno.h>
#include <fcntl.h>
#include <isa-l/crc64.h>
#include <isa-l/erasure_code.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double fb_now(void) { return clock_s(CLOCK_MONOTONIC); }
double fb_thread_cpu(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }
double fb_process_cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

uint8_t *fb_alloc_touched(size_t bytes, uint64_t seed) {
  size_t padded = (bytes + 63) / 64 * 64;
  uint8_t *p = aligned_alloc(64, padded ? padded : 64);
  if (!p)
    return NULL;
  uint64_t *w = (uint64_t *)p;
  seed |= 1;
  for (size_t i = 0; i < padded / 8; i++) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    w[i] = seed;
  }
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fb_median(const double *v, int n) {
  double *s = malloc((size_t)n * sizeof(*s));
  if (!s)
    return v[0];
  memcpy(s, v, (size_t)n * sizeof(*s));
  qsort(s, (size_t)n, sizeof(*s), cmp_double);
  double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  free(s);
  return m;
}

double fb_time_memcpy(void *dst, const void *src, size_t n) {
  double t = fb_now();
  memcpy(dst, src, n);
  return fb_now() - t;
}

double fb_cpu_crc64(const void *buf, size_t n, uint64_t *crc) {
  double t = fb_thread_cpu();
  *crc = crc64_ecma_refl(0, buf, n);
  return fb_thread_cpu() - t;
}

/* ---- encode ---- */

int fb_encoder_init(fb_encoder_t *e, int k, int m, size_t len) {
  memset(e, 0, sizeof(*e));
  if (k < 1 || m < 1 || k + m > 255 || len == 0 || len > (size_t)1 << 40)
    return -1;
  e->k = k, e->m = m, e->len = len;
  e->matrix = malloc((size_t)(k + m) * (size_t)k);
  e->tables = malloc(32 * (size_t)k * (size_t)m);
  if (!e->matrix || !e->tables)
    return -1;
  for (int i = 0; i < k; i++)
    if (!(e->data[i] =
              fb_alloc_touched(len, 0x9e3779b97f4a7c15ull + (unsigned)i)))
      return -1;
  for (int j = 0; j < m; j++)
    if (!(e->parity[j] = fb_alloc_touched(len, 7 + (unsigned)j)))
      return -1;
  gf_gen_cauchy1_matrix(e->matrix, k + m, k);
  ec_init_tables(k, m, e->matrix + (size_t)k * (size_t)k, e->tables);
  return 0;
}

void fb_encoder_free(fb_encoder_t *e) {
  for (int i = 0; i < 255; i++) {
    free(e->data[i]);
    free(e->parity[i]);
  }
  free(e->matrix);
  free(e->tables);
  memset(e, 0, sizeof(*e));
}

double fb_encoder_run(fb_encoder_t *e) {
  return fb_encoder_run_pieces(e, (size_t)1 << 30);
}

double fb_encoder_run_pieces(fb_encoder_t *e, size_t piece) {
  uint8_t *data[255], *parity[255];
  double t = fb_now();
  for (size_t off = 0; off < e->len; off += piece) {
    size_t n = e->len - off < piece ? e->len - off : piece;
    for (int i = 0; i < e->k; i++)
      data[i] = e->data[i] + off;
    for (int j = 0; j < e->m; j++)
      parity[j] = e->parity[j] + off;
    ec_encode_data((int)n, e->k, e->m, e->tables, data, parity);
  }
  return fb_now() - t;
}

/* ---- decode: data chunk 0 is lost; sources are data 1..k-1, parity 0 ---- */

/* Rebuild `bytes` bytes into out[0..bytes), piece by piece from the same
 * k source pieces. */
static double decode_once(fb_encoder_t *e, uint8_t *out, uint64_t bytes) {
  int k = e->k;
  unsigned char sub[255 * 255], inv[255 * 255], tbl[32 * 255];
  uint8_t *src[255];
  double t = fb_now();
  for (int s = 0; s < k; s++) {
    int row = s < k - 1 ? s + 1 : k; /* data 1..k-1, then parity row 0 */
    memcpy(sub + (size_t)s * (size_t)k, e->matrix + (size_t)row * (size_t)k,
           (size_t)k);
    src[s] = row < k ? e->data[row] : e->parity[0];
  }
  if (gf_invert_matrix(sub, inv, k))
    return -1;
  ec_init_tables(k, 1, inv, tbl); /* row 0 of the inverse rebuilds data 0 */
  for (uint64_t done = 0; done < bytes; done += e->len) {
    uint64_t n = bytes - done < e->len ? bytes - done : e->len;
    uint8_t *dst = out + done;
    ec_encode_data((int)n, k, 1, tbl, src, &dst);
  }
  return fb_now() - t;
}

/* One decoding thread: sources of its own (an encoder of at most one piece
 * a row), its share of the bytes, its output, its times per repetition. */
typedef struct dec_worker {
  fb_encoder_t e;
  uint64_t bytes;
  uint8_t *out; /* touched: the warm output, and the check's */
  int cold, reps, ok;
  double *start, *end; /* [reps] */
  struct dec_gate *gate;
} dec_worker_t;

/* The threads start decoding only once all of them exist (go 1), and leave
 * at once if one could not be made (go -1). */
typedef struct dec_gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int go;
  pthread_barrier_t bar;
} dec_gate_t;

static int dec_wait_go(dec_gate_t *g) {
  pthread_mutex_lock(&g->mu);
  while (!g->go)
    pthread_cond_wait(&g->cv, &g->mu);
  int go = g->go;
  pthread_mutex_unlock(&g->mu);
  return go > 0;
}

static void dec_set_go(dec_gate_t *g, int go) {
  pthread_mutex_lock(&g->mu);
  g->go = go;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static uint8_t *fresh_pages(uint64_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Cold: the output is fresh memory every time, as on a replacement node.
 * The threads share one address space (ranks would not), so every mmap is
 * made before the start and every munmap after the last thread ended: no
 * timed decode meets another thread's mapping change. */
static void *dec_run(void *arg) {
  dec_worker_t *w = arg;
  if (!dec_wait_go(w->gate))
    return NULL;
  for (int r = 0; r < w->reps; r++) {
    uint8_t *out = w->cold ? fresh_pages(w->bytes) : w->out;
    pthread_barrier_wait(&w->gate->bar);
    w->start[r] = fb_now();
    if (!out || decode_once(&w->e, out, w->bytes) < 0)
      w->ok = 0;
    w->end[r] = fb_now();
    pthread_barrier_wait(&w->gate->bar);
    if (w->cold && out)
      munmap(out, w->bytes);
  }
  return NULL;
}

/* Sources encoded, the decode warmed up and checked: 0, or -1. */
static int dec_setup(dec_worker_t *w, int k, int m, size_t piece) {
  size_t len = w->bytes < piece ? (size_t)w->bytes : piece;
  w->start = calloc((size_t)w->reps, sizeof(double));
  w->end = calloc((size_t)w->reps, sizeof(double));
  if (!w->start || !w->end || fb_encoder_init(&w->e, k, m, len) != 0 ||
      !(w->out = fb_alloc_touched(w->bytes, 3)))
    return -1;
  fb_encoder_run(&w->e);
  decode_once(&w->e, w->out, len);
  w->ok = memcmp(w->out, w->e.data[0], len) == 0;
  return w->ok ? 0 : -1;
}

/* Median over the repetitions of all bytes / (last end - first start). */
static double dec_gbs(const dec_worker_t *w, int n, uint64_t bytes, int reps) {
  double *gbs = calloc((size_t)reps, sizeof(double)), res;
  if (!gbs)
    return -1;
  for (int r = 0; r < reps; r++) {
    double t0 = w[0].start[r], t1 = w[0].end[r];
    for (int i = 1; i < n; i++) {
      t0 = w[i].start[r] < t0 ? w[i].start[r] : t0;
      t1 = w[i].end[r] > t1 ? w[i].end[r] : t1;
    }
    gbs[r] = t1 > t0 ? (double)bytes / (t1 - t0) / 1e9 : 0;
  }
  res = fb_median(gbs, reps);
  free(gbs);
  return res;
}

/* Start n threads, join them: 0 when all ran and decoded well. */
static int dec_threads(dec_worker_t *w, int n) {
  pthread_t tid[FB_MAX_THREADS];
  dec_gate_t g = {.mu = PTHREAD_MUTEX_INITIALIZER,
                  .cv = PTHREAD_COND_INITIALIZER};
  if (pthread_barrier_init(&g.bar, NULL, (unsigned)n) != 0)
    return -1;
  int started = 0, ok = 1;
  for (; started < n; started++) {
    w[started].gate = &g;
    if (pthread_create(&tid[started], NULL, dec_run, &w[started]) != 0)
      break;
  }
  dec_set_go(&g, started == n ? 1 : -1);
  for (int i = 0; i < started; i++) {
    pthread_join(tid[i], NULL);
    ok &= w[i].ok;
  }
  pthread_barrier_destroy(&g.bar);
  return ok && started == n ? 0 : -1;
}

double fb_decode_gbs(int k, int m, uint64_t bytes, size_t piece, int reps,
                     int cold, int threads) {
  if (reps < 1 || bytes == 0 || threads < 1 || threads > FB_MAX_THREADS)
    return -1;
  int n = (uint64_t)threads < bytes ? threads : (int)bytes;
  dec_worker_t *w = calloc((size_t)n, sizeof(*w));
  int rc = w ? 0 : -1;
  for (int i = 0; rc == 0 && i < n; i++) {
    w[i].bytes = bytes / (uint64_t)n + ((uint64_t)i < bytes % (uint64_t)n);
    w[i].cold = cold, w[i].reps = reps;
    rc = dec_setup(&w[i], k, m, piece);
  }
  double res =
      rc == 0 && dec_threads(w, n) == 0 ? dec_gbs(w, n, bytes, reps) : -1;
  for (int i = 0; w && i < n; i++) {
    fb_encoder_free(&w[i].e);
    free(w[i].out);
    free(w[i].start);
    free(w[i].end);
  }
  free(w);
  return res;
}

/* ---- disk ---- */


double fb_time_write_fsync(const char *dir, const char *name, const void *buf,
                           size_t n) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  double t = fb_now();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  int rc = ft__write_all(fd, buf, n);
  if (rc == 0)
    rc = fsync(fd);
  int err = errno;
  if (close(fd) != 0 && rc == 0)
    rc = -1, err = errno;
  t = fb_now() - t;
  unlink(path);
  errno = err;
  return rc == 0 ? t : -1;
}

int fb_on_tmpfs(const char *path) {
  struct statfs s;
  if (statfs(path, &s) != 0)
    return 0;
  return s.f_type == TMPFS_MAGIC || s.f_type == RAMFS_MAGIC;
}
