/* Slot files (snapshot/slotfile.h): a slot made with every byte reserved,
 * a piece at a time, and faulted in (whole by the SMP, a trainer's own
 * region by the trainer) without changing a byte; a slot that cannot be
 * sized or emptied leaves no file that could pass for a damaged copy, and
 * one that was there stays as it was; a slot made again with another
 * geometry keeps no byte of the old one; the CRC64 of every chunk catches
 * a flipped bit and names the chunk.  Each test works in its own directory
 * (tmpdir.h), or in one it makes: on /dev/shm for the prefault tests, a
 * tmpfs as a store is. */
#include <check.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ec/crc.h"
#include "ftrt.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* ================= prefault ================= */

/* Pages of [off, off + len) of s's mapping in memory (mincore). */
static size_t pages_present(const ft__slot_t *s, uint64_t off, uint64_t len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
  unsigned char *v = calloc(n ? n : 1, 1);
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(mincore(s->map + off, len, v), 0);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += v[i] & 1;
  free(v);
  return k;
}

static void count_call(void *arg) { ++*(int *)arg; }

/* The geometry of a slot of one rank of `bytes` and no parity. */
static void one_rank_geom(ft__slot_geom_t *g, uint64_t bytes) {
  const uint64_t b[1] = {bytes};
  ck_assert_int_eq(ft__slot_geom_local(g, 1, b), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(g, 1, 0, g->local_bytes), FT_OK);
}

/* A new directory from tmpl ("/dev/shm/...XXXXXX") when /dev/shm is a
 * tmpfs, as a store is (a disk file system's read-ahead would bring pages
 * in around the ones asked for); 0: none here. */
static int tmpfs_dir(char *tmpl) {
  struct statfs fs;
  return statfs("/dev/shm", &fs) == 0 && fs.f_type == 0x01021994 /* tmpfs */ &&
         mkdtemp(tmpl) != NULL;
}

/* Pages of [off, off + len) of s's mapping that this process's page tables
 * map (/proc/self/pagemap's present bit), as opposed to the file's pages
 * that exist (pages_present). */
static size_t pages_mapped(const ft__slot_t *s, uint64_t off, uint64_t len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), k = 0;
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  uintptr_t first = ((uintptr_t)s->map + off) / page;
  for (size_t i = 0; i < (len + page - 1) / page; i++) {
    uint64_t e = 0;
    ck_assert_int_eq(pread(fd, &e, sizeof(e), (off_t)((first + i) * 8)), 8);
    k += (size_t)(e >> 63);
  }
  close(fd);
  return k;
}

/* Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14). */
static int kernel_populates(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(p, MAP_FAILED);
  int ok = madvise(p, page, 23 /* MADV_POPULATE_WRITE */) == 0;
  munmap(p, page);
  return ok;
}

/* Whether a write into one page of a file in dir brings no other page in
 * (4 KiB folios), asked of a file of its own, not of a slot. */
static int small_folios(const char *dir) {
  char path[512];
  snprintf(path, sizeof(path), "%s/folio-probe", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 4u << 20;
  ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
  ck_assert_int_eq(fallocate(fd, 0, 0, (off_t)len), 0);
  uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert_ptr_ne(p, MAP_FAILED);
  p[0] = 1;
  unsigned char v[(4u << 20) / 4096];
  size_t n = len / page, k = 0;
  ck_assert_uint_le(n, sizeof(v));
  ck_assert_int_eq(mincore(p, len, v), 0);
  for (size_t i = 1; i < n; i++)
    k += v[i] & 1;
  munmap(p, len);
  close(fd);
  unlink(path);
  return k == 0;
}

/* A trainer's first copy into a slot would fault a page at a time: it
 * faults its own region in at once, and nothing else of the slot; the SMP
 * faults a new slot in whole.  Nothing written changes. */
START_TEST(prefault_ranges) {
  if (!kernel_populates())
    return; /* before Linux 5.14: the copies fault as before */
  /* On tmpfs, as a store is: a disk file system's read-ahead would bring
   * pages in around the header's. */
  char shm[] = "/dev/shm/ftrt-prefault-XXXXXX", msg[512] = "";
  ft__dir_t d;
  if (!tmpfs_dir(shm))
    return; /* no tmpfs at /dev/shm here */
  ck_assert_msg(ft__dir_open(&d, shm, msg, sizeof(msg)) == FT_OK, "%s", msg);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const uint64_t b[3] = {64 * page, 96 * page + 5, 32 * page};
  ft__slot_geom_t g;
  ck_assert_int_eq(ft__slot_geom_local(&g, 3, b), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(&g, 2, 1, (g.local_bytes + 1) / 2),
                   FT_OK);
  ft__slot_t s;
  ck_assert_msg(ft__slot_create(&s, &d, 0, JOB, &g, msg, sizeof(msg)) == FT_OK,
                "%s", msg);
  ck_assert(s.prefault_ok); /* tmpfs */
  const ft__slot_hdr_t *h = s.hdr;
  uint64_t r1 = h->rank_off[1], n1 = h->rank_bytes[1];
  /* A tmpfs of large folios (a huge= mount, shmem_enabled=force) brings
   * a page's neighbours in with it: which pages besides the asked-for
   * ones came in is then the kernel's affair, not ftrt's. */
  int small = small_folios(shm);
  if (small)
    ck_assert_uint_eq(pages_present(&s, r1, n1), 0);
  else
    fprintf(stderr, "prefault_ranges: /dev/shm brings neighbouring pages in "
                    "(large folios): only what must be present is checked\n");
  ft__slot_prefault_range(&s, r1, n1);
  /* every whole page of rank 1's region; its last, shared page is left */
  ck_assert_uint_ge(pages_present(&s, r1, n1), n1 / page);
  /* out of range: nothing */
  ft__slot_prefault_range(&s, s.map_bytes, page);
  ft__slot_prefault_range(&s, page, s.map_bytes);
  if (small) {
    ck_assert_uint_eq(pages_present(&s, h->rank_off[0], h->rank_bytes[0]), 0);
    ck_assert_uint_eq(pages_present(&s, h->rank_off[2], h->rank_bytes[2]), 0);
    ck_assert_uint_eq(pages_present(&s, h->parity_off, h->parity_bytes), 0);
  }
  ft__slot_prefault(&s);
  ck_assert_uint_eq(pages_present(&s, 0, s.map_bytes),
                    (s.map_bytes + page - 1) / page);
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);

  /* Paced (an SMP's heartbeats between pieces): a slot of a piece and a
   * bit, faulted in whole, with a call between after each of its 2 pieces */
  one_rank_geom(&g, FT_PREFAULT_PIECE + 5 * page);
  ck_assert_msg(ft__slot_create(&s, &d, 1, JOB, &g, msg, sizeof(msg)) == FT_OK,
                "%s", msg);
  int calls = 0;
  ft__slot_prefault_paced(&s, count_call, &calls);
  ck_assert_int_eq(calls, 2);
  ck_assert_uint_eq(pages_present(&s, 0, s.map_bytes),
                    (s.map_bytes + page - 1) / page);
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ft__dir_close(&d);
  rm_tree(shm);
}
END_TEST

/* ft__slot_prefault_made: a slot whose pages were written before (as
 * ft-spare prepares them), opened anew, gets them mapped by the call, its
 * bytes unchanged; out of range: nothing. */
START_TEST(prefault_made_maps) {
  char shm[] = "/dev/shm/ftrt-prefault-XXXXXX", msg[512] = "";
  if (!tmpfs_dir(shm))
    return; /* no tmpfs at /dev/shm here */
  ft__dir_t d;
  ck_assert_msg(ft__dir_open(&d, shm, msg, sizeof(msg)) == FT_OK, "%s", msg);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  ft__slot_geom_t g;
  one_rank_geom(&g, 256 * page);
  ft__slot_t s;
  ck_assert_msg(ft__slot_create(&s, &d, 0, JOB, &g, msg, sizeof(msg)) == FT_OK,
                "%s", msg);
  /* pages well past the header's: its read at the open maps some around it */
  uint64_t off = s.hdr->rank_off[0] + 64 * page, len = 128 * page;
  for (uint64_t i = 0; i < len; i++)
    s.map[off + i] = (uint8_t)(i * 7 + 1);
  ft__slot_close(&s);
  ck_assert_msg(ft__slot_open(&s, &d, 0, JOB, msg, sizeof(msg)) == FT_OK, "%s",
                msg);
  if (!s.prefault_ok || !kernel_populates() || pages_mapped(&s, off, len)) {
    fprintf(stderr, "prefault_made_maps: pages mapped before the call, or no "
                    "MADV_POPULATE_READ here: nothing to tell\n");
    ft__slot_close(&s);
    ft__dir_close(&d);
    rm_tree(shm);
    return;
  }
  ft__slot_prefault_made(&s, s.map_bytes, page); /* out of range */
  ft__slot_prefault_made(&s, page, s.map_bytes);
  ck_assert_uint_eq(pages_mapped(&s, off, len), 0);
  ft__slot_prefault_made(&s, off, len);
  ck_assert_uint_ge(pages_mapped(&s, off, len), len / page);
  for (uint64_t i = 0; i < len; i++)
    ck_assert_uint_eq(s.map[off + i], (uint8_t)(i * 7 + 1));
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ft__dir_close(&d);
  rm_tree(shm);
}
END_TEST

/* ================= making a slot ================= */

/* A slot's bytes are reserved when it is made, a piece at a time with a
 * call between (an SMP's heartbeats): a slot of a piece and a bit has every
 * block allocated, the calls are 2, and the header is written. */
START_TEST(create_reserves) {
  char dir[] = "/tmp/ftrt-reserve-XXXXXX", msg[512] = "";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ft__dir_t d;
  ck_assert_msg(ft__dir_open(&d, dir, msg, sizeof(msg)) == FT_OK, "%s", msg);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  ft__slot_geom_t g;
  one_rank_geom(&g, FT_PREFAULT_PIECE + 5 * page);
  ft__slot_t s;
  int calls = 0;
  ck_assert_msg(ft__slot_create_paced(&s, &d, 0, JOB, &g, count_call, &calls,
                                      msg, sizeof(msg)) == FT_OK,
                "%s", msg);
  struct stat st;
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);
  if (!s.unreserved) { /* a file system that reserves */
    ck_assert_int_eq(calls, 2);
    ck_assert_uint_ge((uint64_t)st.st_blocks * 512, g.seg_bytes);
  }
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ft__dir_close(&d);
  rm_tree(dir);
}
END_TEST

/* A slot that cannot be sized (here: beyond the process's file size limit)
 * leaves no file behind, empty or not: one could be taken for a damaged
 * copy of the slot. */
START_TEST(create_unsized_leaves_nothing) {
  char dir[] = "/tmp/ftrt-unsized-XXXXXX", msg[512] = "", path[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ft__dir_t d;
  ck_assert_msg(ft__dir_open(&d, dir, msg, sizeof(msg)) == FT_OK, "%s", msg);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  ft__slot_geom_t g;
  one_rank_geom(&g, 64 * page);
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > (rlim_t)(g.seg_bytes / 2))
    lim.rlim_cur = (rlim_t)(g.seg_bytes / 2);
  void (*was)(int) = signal(SIGXFSZ, SIG_IGN); /* EFBIG, not a signal */
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  ft__slot_t s;
  int rc = ft__slot_create(&s, &d, 0, JOB, &g, msg, sizeof(msg));
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, was);
  ck_assert_int_ne(rc, FT_OK);
  ck_assert_msg(strstr(msg, "slot0: resize to") != NULL, "%s", msg);
  snprintf(path, sizeof(path), "%s/slot0", dir);
  ck_gone(path);
  ft__dir_close(&d);
  rm_tree(dir);
}
END_TEST

/* Landlock's truncate right (ABI 3, Linux 6.2) denied to this process:
 * ftruncate fails with EACCES, every other access as before.  0 when the
 * kernel cannot, or when Check does not fork a process for the test (a
 * restriction lasts as long as the process: every later test would have
 * it). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
static int deny_truncate(void) {
  const char *fork = getenv("CK_FORK");
  if (fork && strcmp(fork, "no") == 0)
    return 0;
  struct landlock_ruleset_attr attr = {.handled_access_fs =
                                           LANDLOCK_ACCESS_FS_TRUNCATE};
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 3)
    return 0;
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
  if (rs < 0)
    return 0;
  int ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           syscall(SYS_landlock_restrict_self, rs, 0) == 0;
  close(rs);
  return ok;
}

/* A slot file that cannot be emptied (truncating denied): one this call
 * made is removed, one that was there is left byte for byte. */
START_TEST(create_unemptied_keeps_old) {
  char dir[] = "/tmp/ftrt-unemptied-XXXXXX", msg[512] = "", path[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ft__dir_t d;
  ck_assert_msg(ft__dir_open(&d, dir, msg, sizeof(msg)) == FT_OK, "%s", msg);
  snprintf(path, sizeof(path), "%s/slot1", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_gt(fputs("an older slot", f), 0);
  ck_assert_int_eq(fclose(f), 0);
  ft__slot_geom_t g;
  one_rank_geom(&g, 4096);
  if (!deny_truncate()) { /* no Landlock here: nothing to check */
    fprintf(stderr, "create_unemptied_keeps_old: skipped (no Landlock "
                    "truncate right, or Check does not fork)\n");
    ft__dir_close(&d);
    rm_tree(dir);
    return;
  }
  ft__slot_t s;
  ck_assert_int_ne(ft__slot_create(&s, &d, 0, JOB, &g, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_msg(strstr(msg, "slot0: cannot empty it") != NULL, "%s", msg);
  char p0[512];
  snprintf(p0, sizeof(p0), "%s/slot0", dir);
  ck_gone(p0);
  ck_assert_int_ne(ft__slot_create(&s, &d, 1, JOB, &g, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_msg(strstr(msg, "slot1: cannot empty it") != NULL, "%s", msg);
  ck_first_line(path, "an older slot");
  ft__dir_close(&d);
  rm_tree(dir);
}
END_TEST

/* Re-creating a slot with another geometry leaves no byte of the old one. */
START_TEST(recreate_other_geometry) {
  ft__slot_geom_t g1, g2;
  geom3(&g1, 3, 2);
  const uint64_t b[1] = {3000};
  ck_assert_int_eq(ft__slot_geom_local(&g2, 1, b), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(&g2, 2, 1, 2048), FT_OK);
  ft__slot_t s;
  create_slot(&s, 0, &g1);
  write_version(&s, 4);
  memset(s.map + s.hdr->data_off, 0xff, s.map_bytes - s.hdr->data_off);
  ft__slot_close(&s);
  create_slot(&s, 0, &g2);
  ft__slot_close(&s);
  open_slot(&s, 0);
  ck_assert_uint_eq(ft__slot_state(&s), FT_SLOT_EMPTY);
  ck_assert_uint_eq(s.hdr->version, 0);
  ck_assert_uint_eq(s.map_bytes, g2.seg_bytes);
  ck_assert_uint_eq(s.hdr->nlocal, 1);
  ck_assert_uint_eq(s.hdr->k, 2);
  for (size_t i = s.hdr->data_off; i < s.map_bytes; i++)
    ck_assert_uint_eq(s.map[i], 0);
  ft__slot_close(&s);
}
END_TEST

/* ================= CRC ================= */

START_TEST(crc_detects_flips) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  write_version(&s, 7);
  char msg[512] = "";
  const ft__slot_hdr_t *h = s.hdr;
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_OK);
  for (uint32_t r = 0; r < 3; r++)
    ck_assert_int_eq(ft__slot_verify_range(&s, h->rank_off[r], h->rank_bytes[r],
                                           msg, sizeof(msg)),
                     FT_OK);
  for (uint32_t c = 0; c < 5; c++) {
    ck_assert_uint_eq(ft__slot_chunk_crc(&s, c), h->crc[c]);
    ck_assert_uint_eq(h->crc[c],
                      ft__crc64(0, ft__slot_chunk(&s, c), h->chunk_bytes));
  }
  ck_assert_ptr_eq(ft__slot_chunk(&s, 0), s.map + h->data_off);
  ck_assert_ptr_eq(ft__slot_chunk(&s, 3), s.map + h->parity_off);
  ck_assert_ptr_eq(ft__slot_chunk(&s, 4),
                   s.map + h->parity_off + h->chunk_bytes);

  /* chunk 1 of the data starts inside rank 1's region; rank 0 and rank 2
   * live in chunks 0 and 2 only */
  uint64_t at = h->data_off + h->chunk_bytes + 100;
  ck_assert_uint_ge(at, h->rank_off[1]);
  ck_assert_uint_lt(at, h->rank_off[1] + h->rank_bytes[1]);
  s.map[at] ^= 0x10;
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, s.path);
  ck_msg_has(msg, "data chunk 1");
  ck_msg_has(msg, "version 7");
  msg[0] = '\0';
  ck_assert_int_eq(ft__slot_verify_range(&s, h->rank_off[1], h->rank_bytes[1],
                                         msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_msg_has(msg, s.path);
  ck_msg_has(msg, "data chunk 1");
  ck_assert_int_eq(ft__slot_verify_range(&s, h->rank_off[0], h->rank_bytes[0],
                                         msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(ft__slot_verify_range(&s, h->rank_off[2], h->rank_bytes[2],
                                         msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(ft__slot_verify(&s, 3, 2, msg, sizeof(msg)), FT_OK);
  s.map[at] ^= 0x10;
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_OK);

  /* the last bit of parity chunk 4 (k + 1) */
  at = h->parity_off + 2 * h->chunk_bytes - 1;
  s.map[at] ^= 0x80;
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, s.path);
  ck_msg_has(msg, "parity chunk 4");
  ck_assert_int_eq(ft__slot_verify(&s, 0, 4, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__slot_verify(&s, 4, 1, msg, sizeof(msg)), FT_ECORRUPT);
  for (uint32_t r = 0; r < 3; r++) /* data ranges do not look at parity */
    ck_assert_int_eq(ft__slot_verify_range(&s, h->rank_off[r], h->rank_bytes[r],
                                           msg, sizeof(msg)),
                     FT_OK);
  /* resealing accepts what is there now */
  ft__slot_seal_parity(&s);
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_OK);

  /* a flip in the first data byte, seen through a fresh mapping */
  s.map[h->data_off] ^= 1;
  ft__slot_t f;
  open_slot(&f, 0);
  ck_assert_int_eq(ft__slot_verify(&f, 0, 5, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, f.path);
  ck_msg_has(msg, "data chunk 0");
  ft__slot_close(&f);
  ft__slot_close(&s);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "slotfile");
  TCase *tc = tmpdir_tcase(s, "prefault", 60);
  tcase_add_test(tc, prefault_ranges);
  tcase_add_test(tc, prefault_made_maps);
  tc = tmpdir_tcase(s, "making a slot", 60);
  tcase_add_test(tc, create_reserves);
  tcase_add_test(tc, create_unsized_leaves_nothing);
  tcase_add_test(tc, create_unemptied_keeps_old);
  tcase_add_test(tc, recreate_other_geometry);
  tc = tmpdir_tcase(s, "CRC", 60);
  tcase_add_test(tc, crc_detects_flips);
  return s;
}
