/*
 * ft-bench-persist: the disk tier's flush against plain write+fsync of the
 * same bytes to the same directory, in the same run (issue 17).
 *
 * The source is a file on /dev/shm of --mb MiB of random bytes, as a slot
 * is.  Each repetition, in alternating order, writes it to --dir:
 *   fsync   read(2) from the source into a 4 MiB buffer, write(2), fsync
 *           (what any tool does that copies a file to disk safely);
 *   flush   ftrt's flush writer (ft__persist_write_rank): the same reads
 *           and writes, plus a CRC64 per 4 MiB block and per file, a
 *           temporary name, fsync, rename and fsync of the directory;
 *   direct  the fsync variant with O_DIRECT (page-aligned buffer; the
 *           tail written through the page cache), for comparison.
 * It prints every repetition, the medians in GB/s, and
 *   ratio persist_flush_vs_fsync  median fsync seconds / median flush seconds
 *                                 (>= 0.9 is the goal)
 *   ratio persist_direct_vs_fsync median fsync seconds / median direct seconds
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "persist/persist.h"

#define BLOCK (4u << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what) {
  fprintf(stderr, "ft-bench-persist: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* The source: mb MiB of random bytes in a file on /dev/shm. */
static int make_source(uint64_t bytes, char *path, size_t len) {
  snprintf(path, len, "/dev/shm/ft-bench-persist.%ld", (long)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    die(path);
  uint8_t *buf = ft__malloc(BLOCK);
  for (uint64_t done = 0; done < bytes; done += BLOCK) {
    size_t n = bytes - done < BLOCK ? (size_t)(bytes - done) : BLOCK;
    for (size_t i = 0; i < n; i += 256)
      if (getrandom(buf + i, n - i < 256 ? n - i : 256, 0) < 0)
        die("getrandom");
    if (pwrite(fd, buf, n, (off_t)done) != (ssize_t)n)
      die(path);
  }
  ft__free(buf);
  return fd;
}

/* read + write + fsync of the source into dir/name (O_DIRECT with direct). */
static double plain(int src, uint64_t bytes, const char *dir, int direct,
                    uint8_t *buf) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/plain.%ld", dir, (long)getpid());
  double t = now();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0),
                0600);
  if (fd < 0)
    die(path);
  for (uint64_t done = 0; done < bytes; done += BLOCK) {
    size_t n = bytes - done < BLOCK ? (size_t)(bytes - done) : BLOCK;
    if (pread(src, buf, n, (off_t)done) != (ssize_t)n)
      die("pread");
    if (direct && n % 4096) { /* the tail: through the page cache */
      close(fd);
      if ((fd = open(path, O_WRONLY)) < 0)
        die(path);
    }
    if (pwrite(fd, buf, n, (off_t)done) != (ssize_t)n)
      die(path);
  }
  if (fsync(fd) != 0)
    die("fsync");
  close(fd);
  t = now() - t;
  unlink(path);
  return t;
}

static double flush(int src, uint64_t bytes, const ft__dir_t *job,
                    uint8_t *buf) {
  char msg[512];
  ft__prank_t r = {.rank = 0, .bytes = bytes};
  r.block_crc = ft__calloc(ft__persist_blocks(bytes) + 1, 8);
  ft__dir_t vd;
  double t = now();
  if (ft__persist_mkvdir(job, "v1.e1", &vd, msg, sizeof(msg)) != FT_OK ||
      ft__persist_write_rank(&vd, &r, src, 0, buf, NULL, NULL, msg,
                             sizeof(msg)) != FT_OK) {
    fprintf(stderr, "ft-bench-persist: %s\n", msg);
    exit(1);
  }
  t = now() - t;
  unlinkat(vd.fd, "rank0", 0);
  ft__dir_close(&vd);
  unlinkat(job->fd, "v1.e1", AT_REMOVEDIR);
  ft__free(r.block_crc);
  return t;
}

static void usage(FILE *f) {
  fputs("usage: ft-bench-persist [--dir DIR] [--mb MiB] [--reps R]\n"
        "  --dir DIR   the directory written to (default /var/tmp)\n"
        "  --mb MiB    bytes written each time, in MiB (default 256)\n"
        "  --reps R    repetitions of each writer (default 5)\n"
        "  --help      this text\n"
        "See ft-bench(1).\n",
        f);
}

int main(int argc, char **argv) {
  const char *dir = "/var/tmp";
  long mb = 256, reps = 5;
  static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                       {"mb", required_argument, 0, 'm'},
                                       {"reps", required_argument, 0, 'r'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
    if (o == 'd')
      dir = optarg;
    else if (o == 'm')
      mb = strtol(optarg, NULL, 10);
    else if (o == 'r')
      reps = strtol(optarg, NULL, 10);
    else {
      usage(o == 'h' ? stdout : stderr);
      return o == 'h' ? 0 : 2;
    }
  }
  if (mb < 1 || mb > 65536 || reps < 1 || reps > 1000) {
    usage(stderr);
    return 2;
  }
  char root[4200], msg[512], src_path[128];
  snprintf(root, sizeof(root), "%s/ft-bench-persist.%ld", dir, (long)getpid());
  if (mkdir(root, 0700) != 0)
    die(root);
  ft__dir_t job;
  if (ft__persist_open(root, "bench", 1, &job, msg, sizeof(msg)) != FT_OK) {
    fprintf(stderr, "ft-bench-persist: %s\n", msg);
    return 1;
  }
  uint64_t bytes = (uint64_t)mb << 20;
  int src = make_source(bytes, src_path, sizeof(src_path));
  uint8_t *buf = aligned_alloc(4096, BLOCK);
  double *tf = calloc((size_t)reps, 8), *tp = calloc((size_t)reps, 8),
         *td = calloc((size_t)reps, 8);
  printf("# %ld MiB to %s, %ld repetitions (seconds)\n# rep   fsync   flush  "
         "direct\n",
         mb, dir, reps);
  for (long i = 0; i < reps; i++) {
    if (i % 2) {
      tf[i] = flush(src, bytes, &job, buf);
      tp[i] = plain(src, bytes, root, 0, buf);
    } else {
      tp[i] = plain(src, bytes, root, 0, buf);
      tf[i] = flush(src, bytes, &job, buf);
    }
    td[i] = plain(src, bytes, root, 1, buf);
    printf("%5ld %7.3f %7.3f %7.3f\n", i, tp[i], tf[i], td[i]);
  }
  double p = median(tp, (int)reps), f = median(tf, (int)reps),
         d = median(td, (int)reps);
  printf("fsync %.3f GB/s, flush %.3f GB/s, direct %.3f GB/s\n",
         (double)bytes / p / 1e9, (double)bytes / f / 1e9,
         (double)bytes / d / 1e9);
  printf("ratio persist_flush_vs_fsync %.3f\n", p / f);
  printf("ratio persist_direct_vs_fsync %.3f\n", p / d);
  close(src);
  unlink(src_path);
  ft__dir_close(&job);
  rmdir(root); /* the job directory first */
  char jd[4300];
  snprintf(jd, sizeof(jd), "%s/bench", root);
  rmdir(jd);
  rmdir(root);
  free(buf);
  free(tf), free(tp), free(td);
  return 0;
}
