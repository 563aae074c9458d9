/*
 * bench/rebuild-floor [MIB]: the CPU work a chain rebuild of MIB MiB (341:
 * ft-bench's, k=3, one node of 4 lost) cannot avoid, each part timed alone
 * on one thread, best of 5: a copy (memcpy between touched buffers; a copy
 * between processes is no cheaper), a multiply-add (ec_encode_data_update,
 * one row), a first term (ec_encode_data, one source), a CRC64, and a slot
 * of tmpfs pages made (fallocate, then mapped with MAP_POPULATE, in
 * /dev/shm).  The chain needs 3 copies, 2 multiply-adds, a first term, 4
 * CRCs (3 sources against their seals, the result) and 2 slots (the
 * rebuilt one and the next snapshot's), printed as CPU time and as that
 * time over 2 CPUs (docs/performance.md: rebuild_vs_isal_decode).
 */
#include <fcntl.h>
#include <isa-l/crc64.h>
#include <isa-l/erasure_code.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/baseline.h"

enum { COPY, MAD, FIRST, CRC, SLOT, NPARTS };

/* best[part] = the shortest of its runs, since t0 (fb_now) */
static void keep(double *best, double t0) {
  double t = fb_now() - t0;
  if (t < *best)
    *best = t;
}

/* A slot of L bytes of tmpfs pages made as the rebuild makes one: wall
 * seconds, or < 0 on failure (said). */
static double make_slot(size_t L) {
  char name[] = "/dev/shm/floor.XXXXXX";
  int fd = mkstemp(name);
  if (fd < 0) {
    perror("rebuild-floor: /dev/shm");
    return -1;
  }
  unlink(name);
  double t0 = fb_now();
  if (fallocate(fd, 0, 0, (off_t)L)) {
    perror("rebuild-floor: fallocate in /dev/shm");
    close(fd);
    return -1;
  }
  void *m =
      mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  double t = fb_now() - t0;
  close(fd);
  if (m == MAP_FAILED) {
    perror("rebuild-floor: mmap");
    return -1;
  }
  munmap(m, L);
  return t;
}

int main(int argc, char **argv) {
  long mib = argc > 1 ? atol(argv[1]) : 341;
  if (argc > 2 || mib < 1 || mib > (1L << 20)) {
    fprintf(stderr,
            "usage: rebuild-floor [MIB]  (1 to 1048576; default 341)\n");
    return 2;
  }
  size_t L = (size_t)mib << 20, P = 1 << 20;
  uint8_t *a = fb_alloc_touched(L, 1), *b = fb_alloc_touched(L, 2);
  if (!a || !b) {
    fprintf(stderr, "rebuild-floor: out of memory for 2 x %ld MiB\n", mib);
    return 1;
  }
  unsigned char coef[3] = {7, 9, 11}, tbl[3 * 32], t1[32];
  ec_init_tables(3, 1, coef, tbl);
  ec_init_tables(1, 1, coef, t1);
  double best[NPARTS] = {1e9, 1e9, 1e9, 1e9, 1e9}, t0;
  volatile uint64_t crc = 0;
  for (int rep = 0; rep < 5; rep++) {
    double copy = fb_time_memcpy(b, a, L), slot;
    if (copy < best[COPY])
      best[COPY] = copy;
    t0 = fb_now();
    for (size_t o = 0; o < L; o += P) {
      unsigned char *d = b + o;
      ec_encode_data_update((int)P, 3, 1, 1, tbl, a + o, &d);
    }
    keep(&best[MAD], t0);
    t0 = fb_now();
    for (size_t o = 0; o < L; o += P) {
      unsigned char *s = a + o, *d = b + o;
      ec_encode_data((int)P, 1, 1, t1, &s, &d);
    }
    keep(&best[FIRST], t0);
    t0 = fb_now();
    crc = crc64_ecma_refl(crc, a, L);
    keep(&best[CRC], t0);
    if ((slot = make_slot(L)) < 0)
      return 1;
    if (slot < best[SLOT])
      best[SLOT] = slot;
  }
  const char *what[NPARTS] = {"copy", "mad", "first_term", "crc64",
                              "tmpfs_slot"};
  for (int i = 0; i < NPARTS; i++)
    printf("%-10s %7.1f ms  %6.2f GB/s\n", what[i], best[i] * 1e3,
           L / best[i] / 1e9);
  double cpu = 3 * best[COPY] + 2 * best[MAD] + best[FIRST] + 4 * best[CRC] +
               2 * best[SLOT];
  printf("chain floor: 3 copies + 2 mad + 1 first term + 4 crc + 2 slots = "
         "%.1f ms of CPU, %.1f ms on 2 CPUs\n",
         cpu * 1e3, cpu * 1e3 / 2);
  free(a);
  free(b);
  return 0;
}
