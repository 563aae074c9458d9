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
  if (k < 1 || m < 1 || k + m > 255 || len == 0 || len > (size_t)1 << 30)
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
  double t = fb_now();
  ec_encode_data((int)e->len, e->k, e->m, e->tables, e->data, e->parity);
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

/* Cold: the output is fresh memory every time, as on a replacement node. */
static double decode_rep(fb_encoder_t *e, uint8_t *warm_out, uint64_t bytes,
                         int cold) {
  if (!cold)
    return decode_once(e, warm_out, bytes);
  uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  double t = decode_once(e, p, bytes);
  munmap(p, bytes);
  return t;
}

double fb_decode_gbs(int k, int m, uint64_t bytes, size_t piece, int reps,
                     int cold) {
  fb_encoder_t e = {0};
  size_t len = bytes < piece ? (size_t)bytes : piece;
  double *gbs = calloc((size_t)(reps > 0 ? reps : 1), sizeof(double));
  uint8_t *out = NULL;
  double res = -1;
  if (gbs && reps > 0 && bytes > 0 && fb_encoder_init(&e, k, m, len) == 0 &&
      (out = fb_alloc_touched(bytes, 3))) {
    fb_encoder_run(&e);
    decode_once(&e, out, len); /* warm-up, and the check below */
    int ok = memcmp(out, e.data[0], len) == 0, r = 0;
    for (; ok && r < reps; r++) {
      double t = decode_rep(&e, out, bytes, cold);
      ok = t > 0;
      gbs[r] = ok ? (double)bytes / t / 1e9 : 0;
    }
    if (ok)
      res = fb_median(gbs, reps);
  }
  fb_encoder_free(&e);
  free(out);
  free(gbs);
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
