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
 * time over 2 CPUs (README: rebuild_vs_isal_decode).
 */
#include <fcntl.h>
#include <isa-l/crc64.h>
#include <isa-l/erasure_code.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
  long mib = argc > 1 ? atol(argv[1]) : 341;
  if (argc > 2 || mib < 1 || mib > (1L << 20)) {
    fprintf(stderr,
            "usage: rebuild-floor [MIB]  (1 to 1048576; default 341)\n");
    return 2;
  }
  size_t L = (size_t)mib << 20, P = 1 << 20;
  unsigned char *a = aligned_alloc(4096, L), *b = aligned_alloc(4096, L);
  if (!a || !b) {
    fprintf(stderr, "rebuild-floor: out of memory for 2 x %ld MiB\n", mib);
    return 1;
  }
  memset(a, 1, L);
  memset(b, 2, L);
  unsigned char coef[3] = {7, 9, 11}, tbl[3 * 32], t1[32];
  ec_init_tables(3, 1, coef, tbl);
  ec_init_tables(1, 1, coef, t1);
  double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
  for (int rep = 0; rep < 5; rep++) {
    double t = now();
    for (size_t o = 0; o < L; o += P)
      memcpy(b + o, a + o, P);
    t = now() - t;
    if (t < best[0])
      best[0] = t;
    t = now();
    for (size_t o = 0; o < L; o += P) {
      unsigned char *d = b + o;
      ec_encode_data_update((int)P, 3, 1, 1, tbl, a + o, &d);
    }
    t = now() - t;
    if (t < best[1])
      best[1] = t;
    t = now();
    for (size_t o = 0; o < L; o += P) {
      unsigned char *s = a + o, *d = b + o;
      ec_encode_data((int)P, 1, 1, t1, &s, &d);
    }
    t = now() - t;
    if (t < best[2])
      best[2] = t;
    volatile uint64_t c = 0;
    t = now();
    c = crc64_ecma_refl(0, a, L);
    t = now() - t;
    if (t < best[3])
      best[3] = t;
    (void)c;
    char name[] = "/dev/shm/floor.XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) {
      perror("rebuild-floor: /dev/shm");
      return 1;
    }
    unlink(name);
    t = now();
    if (fallocate(fd, 0, 0, (off_t)L)) {
      perror("rebuild-floor: fallocate in /dev/shm");
      return 1;
    }
    unsigned char *m =
        mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    t = now() - t;
    if (m == MAP_FAILED) {
      perror("rebuild-floor: mmap");
      return 1;
    }
    if (t < best[4])
      best[4] = t;
    munmap(m, L);
    close(fd);
  }
  const char *what[5] = {"copy", "mad", "first_term", "crc64", "tmpfs_slot"};
  for (int i = 0; i < 5; i++)
    printf("%-10s %7.1f ms  %6.2f GB/s\n", what[i], best[i] * 1e3,
           L / best[i] / 1e9);
  double cpu = 3 * best[0] + 2 * best[1] + best[2] + 4 * best[3] + 2 * best[4];
  printf("chain floor: 3 copies + 2 mad + 1 first term + 4 crc + 2 slots = "
         "%.1f ms of CPU, %.1f ms on 2 CPUs\n",
         cpu * 1e3, cpu * 1e3 / 2);
  return 0;
}
