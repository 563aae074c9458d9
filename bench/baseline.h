/*
 * Raw baselines of ft-bench: what the same bytes cost without ftrt.
 *
 * Every figure of ft-bench is a ratio against one of these, measured in the
 * same process and the same run: a memcpy into memory whose pages are
 * already touched, ISA-L's crc64 and ec_encode_data / decode called directly
 * (not through ec/codec.c), and write+fsync to a disk directory.  Nothing
 * here knows about MPI or the runtime.
 */
#ifndef FT_BENCH_BASELINE_H
#define FT_BENCH_BASELINE_H

#include <stddef.h>
#include <stdint.h>

double fb_now(void);         /* CLOCK_MONOTONIC seconds */
double fb_thread_cpu(void);  /* CPU seconds of the calling thread */
double fb_process_cpu(void); /* CPU seconds of the whole process */

/* 64-byte aligned, every page written (pseudo-random bytes from seed), so
 * that no timed copy pays first-touch page faults.  NULL when out of memory;
 * free() it. */
uint8_t *fb_alloc_touched(size_t bytes, uint64_t seed);

double fb_median(const double *v, int n); /* n >= 1; v is not reordered */

/* Wall seconds of memcpy(dst, src, n). */
double fb_time_memcpy(void *dst, const void *src, size_t n);
/* Thread CPU seconds of crc64_ecma_refl over n bytes; *crc gets the CRC. */
double fb_cpu_crc64(const void *buf, size_t n, uint64_t *crc);

/*
 * Raw ISA-L encoding of k data chunks of len bytes into m parity chunks, with
 * the Cauchy matrix the runtime uses.  Every buffer is touched at init.
 */
typedef struct fb_encoder {
  int k, m;
  size_t len;
  uint8_t *data[255], *parity[255];
  unsigned char *matrix, *tables;
} fb_encoder_t;

/* 0, or -1 when out of memory or k, m out of range (fb_encoder_free it). */
int fb_encoder_init(fb_encoder_t *e, int k, int m, size_t len);
void fb_encoder_free(fb_encoder_t *e);
/* One ec_encode_data call over all k*len bytes (calls of 1 GiB a row when
 * len is larger): wall seconds. */
double fb_encoder_run(fb_encoder_t *e);
/* ec_encode_data over all k*len bytes in calls of at most piece bytes a row
 * (1 <= piece <= 1 GiB), each call on bytes of its own: wall seconds. */
double fb_encoder_run_pieces(fb_encoder_t *e, size_t piece);

/*
 * Raw ISA-L decode rebuilding `bytes` bytes of one erased data chunk of a
 * k+m code from k survivors (what one lost node costs: gf_invert_matrix,
 * ec_init_tables, ec_encode_data), from source pieces of at most piece bytes
 * so that the buffers stay bounded.  The bytes are split evenly over
 * `threads` threads (>= 1) that decode at once, each from sources and into
 * an output of its own: touched once beforehand, or (cold) fresh pages at
 * every repetition, as the memory of a replacement node is.  Median over
 * reps of GB/s (1e9 B) of all bytes rebuilt over the wall time from the
 * first thread's start to the last one's end; every thread's result is
 * checked against the original.  < 0 on error.
 */
#define FB_MAX_THREADS 1024
double fb_decode_gbs(int k, int m, uint64_t bytes, size_t piece, int reps,
                     int cold, int threads);

/*
 * Write n bytes to a new file in dir, fsync it, close it, and remove it:
 * wall seconds of write+fsync+close, or < 0 (errno kept) on failure.
 */
double fb_time_write_fsync(const char *dir, const char *name, const void *buf,
                           size_t n);

/* 1 when path lies on tmpfs or ramfs (not a disk), 0 otherwise or unknown. */
int fb_on_tmpfs(const char *path);

#endif
