/* The node store (docs/design.md section 4): slot geometry, the slot state
 * machine as seen through two mappings, the double-buffer reuse rule the SMP
 * applies (version V in slot V%2, prepared once V-1 is committed), which
 * versions a node holds whole (ft__slot_held, ft__slots_held: what the SMP
 * and ft-restore offer to the restore rule), the restore rule itself
 * (ft__newest_common), CRC64 per chunk, atomic metadata, and a clear error
 * -- status and message naming the file and what is wrong -- for every kind
 * of damaged file, and for every refusal to create or attach the control
 * segment (ctl.h).  Each test works in its own directory under /tmp, removed
 * at the end. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/landlock.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ec/crc.h"
#include "ftrt.h"
#include "snapshot/ctl.h"
#include "snapshot/store.h"
#include "tests/unit/tmpdir.h"

#define JOB "job-a"
#define PAGE 4096u

/* ---- per-test directory (tmpdir.h) ---- */

static void teardown(void) { rm_tree(dir); }

static void path_of(char *out, size_t len, const char *name) {
  snprintf(out, len, "%s/%s", dir, name);
}

#define ck_msg_has(msg, word)                                                  \
  ck_assert_msg(strstr((msg), (word)) != NULL, "message '%s' lacks '%s'",      \
                (msg), (word))

/* close(2) as the library sees it in this program: the real one, except
 * that while close_errno is set it reports that error after closing, as
 * close may with a deferred write error (close(2): EIO, ENOSPC, EDQUOT).
 * It shows which errno an error path reports: the failing call's, or the
 * one left by the clean-up that followed. */
static int close_errno;

int close(int fd) {
  if (syscall(SYS_close, fd) != 0)
    return -1;
  if (close_errno) {
    errno = close_errno;
    return -1;
  }
  return 0;
}

/* ---- a standard geometry: three ranks of odd sizes ---- */

static const uint64_t rank_bytes3[3] = {1000, 5000, 123};

static void geom3(ft__slot_geom_t *g, uint32_t k, uint32_t m) {
  ck_assert_int_eq(ft__slot_geom_local(g, 3, rank_bytes3), FT_OK);
  uint64_t chunk = (g->local_bytes + k - 1) / k;
  ck_assert_int_eq(ft__slot_geom_code(g, k, m, chunk), FT_OK);
}

static uint8_t pattern(uint64_t v, uint32_t who, uint64_t i) {
  return (uint8_t)(v * 131 + who * 17 + i * 7 + (i >> 8));
}

/* Write version v's bytes: rank regions [from, to) fraction in eighths. */
static void fill_ranks(ft__slot_t *s, uint64_t v, int from8, int to8) {
  const ft__slot_hdr_t *h = s->hdr;
  for (uint32_t r = 0; r < h->nlocal; r++) {
    uint64_t a = h->rank_bytes[r] * (uint64_t)from8 / 8;
    uint64_t b = h->rank_bytes[r] * (uint64_t)to8 / 8;
    for (uint64_t i = a; i < b; i++)
      s->map[h->rank_off[r] + i] = pattern(v, r, i);
  }
}

static void fill_parity(ft__slot_t *s, uint64_t v) {
  const ft__slot_hdr_t *h = s->hdr;
  for (uint64_t i = 0; i < h->parity_bytes; i++)
    s->map[h->parity_off + i] = pattern(v, 1000, i);
}

/* Every byte of version v is where it was written. */
static int holds(const ft__slot_t *s, uint64_t v) {
  const ft__slot_hdr_t *h = s->hdr;
  for (uint32_t r = 0; r < h->nlocal; r++)
    for (uint64_t i = 0; i < h->rank_bytes[r]; i++)
      if (s->map[h->rank_off[r] + i] != pattern(v, r, i))
        return 0;
  for (uint64_t i = 0; i < h->parity_bytes; i++)
    if (s->map[h->parity_off + i] != pattern(v, 1000, i))
      return 0;
  return 1;
}

/* Write, seal and commit version v in s, as the SMP does. */
static void write_version(ft__slot_t *s, uint64_t v) {
  ft__slot_begin(s, v, v * 10, 1, 1);
  fill_ranks(s, v, 0, 8);
  ft__slot_seal_data(s);
  ft__slot_set_state(s, FT_SLOT_LOCAL);
  fill_parity(s, v);
  ft__slot_seal_parity(s);
  ft__slot_set_state(s, FT_SLOT_ENCODED);
  ft__slot_set_state(s, FT_SLOT_COMMITTED);
}

static void create_slot(ft__slot_t *s, int idx, const ft__slot_geom_t *g) {
  char msg[512] = "";
  int rc = ft__slot_create(s, &sdir, idx, JOB, g, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "create: %s", msg);
}

static void open_slot(ft__slot_t *s, int idx) {
  char msg[512] = "";
  int rc = ft__slot_open(s, &sdir, idx, JOB, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "open: %s", msg);
}

/* ================= geometry ================= */

START_TEST(geom_local_regions) {
  ft__slot_geom_t g;
  const uint64_t b[4] = {1, 4096, 5000, 0};
  ck_assert_int_eq(ft__slot_geom_local(&g, 4, b), FT_OK);
  ck_assert_uint_eq(g.nlocal, 4);
  ck_assert_uint_eq(g.data_off, FT_SLOT_HDR_BYTES);
  ck_assert_uint_eq(g.rank_off[0], 4096);
  ck_assert_uint_eq(g.rank_off[1], 8192);
  ck_assert_uint_eq(g.rank_off[2], 12288);
  ck_assert_uint_eq(g.rank_off[3], 20480);
  for (int r = 0; r < 4; r++) {
    ck_assert_uint_eq(g.rank_off[r] % PAGE, 0);
    ck_assert_uint_eq(g.rank_bytes[r], b[r]);
    ck_assert_uint_ge(g.rank_off[r], g.data_off);
    if (r > 0) /* disjoint and in order */
      ck_assert_uint_ge(g.rank_off[r], g.rank_off[r - 1] + g.rank_bytes[r - 1]);
  }
  ck_assert_uint_eq(g.local_bytes, 20480 - 4096);
}
END_TEST

START_TEST(geom_code_layout) {
  static const uint32_t km[][2] = {{1, 0}, {3, 0}, {3, 2}, {4, 1}, {7, 3}};
  for (size_t t = 0; t < sizeof(km) / sizeof(km[0]); t++) {
    ft__slot_geom_t g;
    uint32_t k = km[t][0], m = km[t][1];
    geom3(&g, k, m);
    ck_assert_uint_eq(g.k, k);
    ck_assert_uint_eq(g.m, m);
    ck_assert_uint_eq(g.data_bytes, (uint64_t)k * g.chunk_bytes);
    ck_assert_uint_ge(g.data_bytes, g.local_bytes);
    ck_assert_uint_lt(g.data_bytes - g.local_bytes, k); /* chunk is tight */
    ck_assert_uint_eq(g.parity_off % PAGE, 0);
    ck_assert_uint_ge(g.parity_off, g.data_off + g.data_bytes);
    ck_assert_uint_lt(g.parity_off, g.data_off + g.data_bytes + PAGE);
    ck_assert_uint_eq(g.parity_bytes, (uint64_t)m * g.chunk_bytes);
    ck_assert_uint_eq(g.seg_bytes % PAGE, 0);
    ck_assert_uint_ge(g.seg_bytes, g.parity_off + g.parity_bytes);
    ck_assert_uint_lt(g.seg_bytes, g.parity_off + g.parity_bytes + PAGE);
    /* every rank region lies inside the data region */
    for (int r = 0; r < 3; r++)
      ck_assert_uint_le(g.rank_off[r] + g.rank_bytes[r],
                        g.data_off + g.data_bytes);
  }
}
END_TEST

START_TEST(geom_refusals) {
  ft__slot_geom_t g;
  uint64_t many[FT_MAX_LOCAL + 1] = {0};
  ck_assert_int_eq(ft__slot_geom_local(&g, FT_MAX_LOCAL + 1, many), FT_ERANGE);
  ck_assert_int_eq(ft__slot_geom_local(&g, FT_MAX_LOCAL, many), FT_OK);

  ck_assert_int_eq(ft__slot_geom_local(&g, 3, rank_bytes3), FT_OK);
  uint64_t need = g.local_bytes; /* 16384: chunk * k must cover it */
  ck_assert_uint_eq(need, 16384);
  ck_assert_int_eq(ft__slot_geom_code(&g, 0, 1, need), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 3, 1, need / 3), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, 0, need - 1), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 200, 60, need), FT_EINVAL);
  /* k + m must not wrap around 2^32 into an acceptable count */
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, UINT32_MAX, need), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 2, UINT32_MAX - 1, need), FT_EINVAL);
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, 0, need), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(&g, 3, 1, need / 3 + 1), FT_OK);
}
END_TEST

/* ================= state machine ================= */

START_TEST(state_names) {
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_EMPTY), "EMPTY");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_FILLING), "FILLING");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_LOCAL), "LOCAL");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_ENCODED), "ENCODED");
  ck_assert_str_eq(ft__slot_state_name(FT_SLOT_COMMITTED), "COMMITTED");
  ck_assert_str_eq(ft__slot_state_name(5), "INVALID");
  ck_assert_str_eq(ft__slot_state_name(UINT32_MAX), "INVALID");
}
END_TEST

START_TEST(state_machine) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t a, b;
  create_slot(&a, 1, &g);
  ck_assert_uint_eq(ft__slot_state(&a), FT_SLOT_EMPTY);
  ck_assert_str_eq(a.path + strlen(dir), "/slot1");
  ck_assert_uint_eq(a.map_bytes, g.seg_bytes);

  /* the file on disk is exactly the geometry's size */
  struct stat st;
  ck_assert_int_eq(stat(a.path, &st), 0);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);

  ft__slot_begin(&a, 7, 700, 3, 1);
  ck_assert_uint_eq(ft__slot_state(&a), FT_SLOT_FILLING);
  ck_assert_uint_eq(a.hdr->version, 7);
  ck_assert_uint_eq(a.hdr->step, 700);
  ck_assert_uint_eq(a.hdr->epoch, 3);
  ck_assert_uint_ne(a.hdr->filled_ns, 0);
  ck_assert_uint_eq(a.hdr->committed_ns, 0);

  /* a second, independent mapping of the same file sees each transition */
  open_slot(&b, 1);
  ck_assert_ptr_ne(a.map, b.map);
  static const uint32_t seq[] = {FT_SLOT_FILLING, FT_SLOT_LOCAL,
                                 FT_SLOT_ENCODED, FT_SLOT_COMMITTED};
  for (size_t i = 0; i < 4; i++) {
    if (i)
      ft__slot_set_state(&a, seq[i]);
    ck_assert_uint_eq(ft__slot_state(&a), seq[i]);
    ck_assert_uint_eq(ft__slot_state(&b), seq[i]);
  }
  ck_assert_uint_ne(a.hdr->committed_ns, 0);
  ck_assert_uint_ge(a.hdr->committed_ns, a.hdr->filled_ns);
  ft__slot_close(&b);
  ft__slot_close(&a);
  ck_assert_ptr_null(a.map);
  ck_assert_int_eq(a.fd, -1);

  /* reopen from disk: same state and fields as written */
  open_slot(&b, 1);
  ck_assert_uint_eq(ft__slot_state(&b), FT_SLOT_COMMITTED);
  ck_assert_str_eq(b.hdr->job, JOB);
  ck_assert_uint_eq(b.hdr->version, 7);
  ck_assert_uint_eq(b.hdr->step, 700);
  ck_assert_uint_eq(b.hdr->epoch, 3);
  ck_assert_uint_eq(b.hdr->format, FT_SLOT_FORMAT);
  ck_assert_uint_eq(b.hdr->seg_bytes, g.seg_bytes);
  ck_assert_uint_eq(b.hdr->k, 3);
  ck_assert_uint_eq(b.hdr->m, 2);
  ck_assert_uint_eq(b.hdr->nlocal, 3);
  ck_assert_uint_eq(b.hdr->chunk_bytes, g.chunk_bytes);
  ck_assert_uint_eq(b.hdr->data_off, g.data_off);
  ck_assert_uint_eq(b.hdr->data_bytes, g.data_bytes);
  ck_assert_uint_eq(b.hdr->parity_off, g.parity_off);
  ck_assert_uint_eq(b.hdr->parity_bytes, g.parity_bytes);
  for (int r = 0; r < 3; r++) {
    ck_assert_uint_eq(b.hdr->rank_off[r], g.rank_off[r]);
    ck_assert_uint_eq(b.hdr->rank_bytes[r], g.rank_bytes[r]);
  }

  /* beginning the next version drops the commit time and the old identity */
  ft__slot_begin(&b, 9, 900, 3, 1);
  ck_assert_uint_eq(ft__slot_state(&b), FT_SLOT_FILLING);
  ck_assert_uint_eq(b.hdr->version, 9);
  ck_assert_uint_eq(b.hdr->committed_ns, 0);
  ft__slot_close(&b);

  /* a slot that was never created */
  char msg[512] = "";
  ck_assert_int_eq(ft__slot_open(&b, &sdir, 0, JOB, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, dir);
  ck_msg_has(msg, "/slot0");
}
END_TEST

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

/* The file at path is gone. */
static void ck_gone(const char *path) {
  struct stat st;
  int gone = stat(path, &st) != 0 && errno == ENOENT;
  ck_assert_msg(gone, "%s left behind", path);
}

/* The file at path begins with the line want (no newline in it). */
static void ck_first_line(const char *path, const char *want) {
  char got[64] = "";
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(fgets(got, sizeof(got), f));
  fclose(f);
  ck_assert_str_eq(got, want);
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

/* ---- a spare's prepared slot files (ft-spare) ---- */

/* dir/spare opened as a spare directory, with slot<idx> a prepared file of
 * bytes bytes (allocated as ft-spare makes it); its inode. */
static ino_t prepared(ft__dir_t *spare, int idx, uint64_t bytes) {
  char path[512], msg[512] = "", name[16];
  path_of(path, sizeof(path), "spare");
  if (spare->fd < 0) {
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_msg(ft__dir_open(spare, path, msg, sizeof(msg)) == FT_OK, "%s",
                  msg);
  }
  snprintf(name, sizeof(name), "slot%d", idx);
  int fd = openat(spare->fd, name, O_RDWR | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
  ck_assert_int_ge(ft__store_reserve(fd, bytes, NULL, NULL), 0);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  close(fd);
  return st.st_ino;
}

/* A prepared file becomes the slot (the same file, renamed: its pages are
 * not made again), sized to the geometry, with an EMPTY header; where the
 * spare has none for a slot, the slot is made as without a spare. */
START_TEST(create_from_prepared) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__dir_t spare;
  ft__dir_init(&spare, "");
  ino_t ino = prepared(&spare, 0, g.seg_bytes + 3 * PAGE); /* larger */
  ft__slot_t s;
  char msg[512] = "", path[512];
  int taken = -1;
  ck_assert_msg(ft__slot_create_from(&s, &sdir, 0, JOB, &g, &spare, &taken, msg,
                                     sizeof(msg)) == FT_OK,
                "%s", msg);
  ck_assert_int_eq(taken, 1);
  struct stat st;
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq(st.st_ino, ino);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);
  ck_assert(ft__slot_intact(&s));
  ck_assert_uint_eq(ft__slot_state(&s), FT_SLOT_EMPTY);
  write_version(&s, 7);
  ft__slot_close(&s);
  path_of(path, sizeof(path), "spare/slot0");
  ck_gone(path);
  open_slot(&s, 0);
  ck_assert(holds(&s, 7));
  ft__slot_close(&s);
  /* Smaller than the slot: grown, every byte reserved. */
  ino = prepared(&spare, 1, PAGE);
  ck_assert_int_eq(ft__slot_create_from(&s, &sdir, 1, JOB, &g, &spare, &taken,
                                        msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(taken, 1);
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq(st.st_ino, ino);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);
  if (!s.unreserved)
    ck_assert_uint_ge((uint64_t)st.st_blocks * 512, g.seg_bytes);
  ft__slot_close(&s);
  /* None left for slot 0: made as ft__slot_create makes it. */
  ck_assert_int_eq(ft__slot_create_from(&s, &sdir, 0, JOB, &g, &spare, &taken,
                                        msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(taken, 0);
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ft__dir_close(&spare);
}
END_TEST

/* A spare's file that is not one ft-spare made is never taken: a second
 * link to another file (a slot's writes would land in it) or a symbolic
 * link.  Both are left as they were, and the slot is made anew. */
START_TEST(create_from_refuses_links) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__dir_t spare;
  ft__dir_init(&spare, "");
  prepared(&spare, 0, g.seg_bytes);
  char other[512], path[512], msg[512] = "";
  path_of(other, sizeof(other), "other");
  path_of(path, sizeof(path), "spare/slot0");
  ck_assert_int_eq(link(path, other), 0);
  ck_assert_int_eq(symlinkat(other, spare.fd, "slot1"), 0);
  ft__slot_t s;
  for (int idx = 0; idx < FT_NSLOTS; idx++) {
    int taken = -1;
    ck_assert_msg(ft__slot_create_from(&s, &sdir, idx, JOB, &g, &spare, &taken,
                                       msg, sizeof(msg)) == FT_OK,
                  "%s", msg);
    ck_assert_int_eq(taken, 0);
    write_version(&s, 5);
    ft__slot_close(&s);
  }
  struct stat st, ost;
  ck_assert_int_eq(stat(other, &ost), 0);
  ck_assert_int_eq(ost.st_nlink, 2);
  ck_assert_int_eq(fstatat(spare.fd, "slot1", &st, AT_SYMLINK_NOFOLLOW), 0);
  ck_assert(S_ISLNK(st.st_mode));
  /* The other file holds none of the slot's bytes. */
  int fd = open(other, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  uint8_t buf[PAGE];
  for (off_t off = 0; off < ost.st_size; off += (off_t)sizeof(buf)) {
    ssize_t n = pread(fd, buf, sizeof(buf), off);
    ck_assert_int_gt(n, 0);
    for (ssize_t i = 0; i < n; i++)
      ck_assert_uint_eq(buf[i], 0);
  }
  close(fd);
  ft__dir_close(&spare);
}
END_TEST

/* A rebuild takes a spare's files only under the lock ft-spare holds while
 * it prepares: busy past the wait, none are taken (the slots are made as
 * without); free, what a preparation killed midway left is removed, the
 * whole files stay to be taken, and the release removes the rest with the
 * directory. */
START_TEST(spare_take_locked) {
  char store[512], path[512], msg[512] = "";
  path_of(store, sizeof(store), "job-a");
  ck_assert_int_eq(mkdir(store, 0700), 0);
  path_of(path, sizeof(path), ".spare-job-a");
  ck_assert_int_eq(mkdir(path, 0700), 0);
  ft__dir_t sp;
  ck_assert_msg(ft__dir_open(&sp, path, msg, sizeof(msg)) == FT_OK, "%s", msg);
  const char *names[] = {"slot0", "slot1", "slot1.part", "stop"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    int fd = openat(sp.fd, names[i], O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
  }
  int held = openat(sp.fd, ".", O_RDONLY | O_DIRECTORY);
  ck_assert_int_ge(held, 0);
  ck_assert_int_eq(flock(held, LOCK_EX | LOCK_NB), 0); /* ft-spare's */
  ft__dir_t spare;
  int lock = -2;
  ck_assert_int_eq(ft__spare_take(dir, store, 0.05, &spare, &lock), 0);
  ck_assert_int_lt(spare.fd, 0);
  ck_assert_int_eq(lock, -1);
  struct stat st;
  ck_assert_int_eq(fstatat(sp.fd, "slot1.part", &st, 0), 0); /* untouched */
  close(held);
  ck_assert_int_eq(ft__spare_take(dir, store, 0.05, &spare, &lock), 1);
  ck_assert_int_ge(spare.fd, 0);
  ck_assert_int_ge(lock, 0);
  ck_assert_int_eq(fstatat(sp.fd, "slot0", &st, 0), 0);
  ck_assert_int_eq(fstatat(sp.fd, "slot1", &st, 0), 0);
  ck_assert_int_ne(fstatat(sp.fd, "slot1.part", &st, 0), 0);
  ck_assert_int_ne(fstatat(sp.fd, "stop", &st, 0), 0);
  /* Locked while taken: ft-spare waits. */
  held = openat(sp.fd, ".", O_RDONLY | O_DIRECTORY);
  ck_assert_int_ne(flock(held, LOCK_EX | LOCK_NB), 0);
  close(held);
  ck_assert_int_eq(renameat(spare.fd, "slot0", sdir.fd, "slot0"), 0);
  ft__spare_release(&spare, lock);
  ck_gone(path);
  ft__dir_close(&sp);
  /* None there: 0, nothing made. */
  ck_assert_int_eq(ft__spare_take(dir, store, 0.05, &spare, &lock), 0);
  ck_gone(path);
}
END_TEST

/* A slot already in the store is never replaced by a prepared file: it is
 * made anew as ft__slot_create makes it, and the prepared file stays. */
START_TEST(create_from_never_replaces) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  struct stat st;
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ino_t old = st.st_ino;
  ft__slot_close(&s);
  ft__dir_t spare;
  ft__dir_init(&spare, "");
  ino_t ino = prepared(&spare, 0, g.seg_bytes);
  char msg[512] = "";
  int taken = -1;
  ck_assert_msg(ft__slot_create_from(&s, &sdir, 0, JOB, &g, &spare, &taken, msg,
                                     sizeof(msg)) == FT_OK,
                "%s", msg);
  ck_assert_int_eq(taken, 0);
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq(st.st_ino, old);
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ck_assert_int_eq(fstatat(spare.fd, "slot0", &st, 0), 0);
  ck_assert_uint_eq(st.st_ino, ino);
  ft__dir_close(&spare);
}
END_TEST

START_TEST(spare_dir_names) {
  char out[64];
  ck_assert_int_eq(ft__spare_dir("/dev/shm/ftrt/job-a", out, sizeof(out)),
                   FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/.spare-job-a");
  ck_assert_int_eq(ft__spare_dir("/r/vnode3/j", out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/r/vnode3/.spare-j");
  ck_assert_int_eq(ft__spare_dir("job-a", out, sizeof(out)), FT_ERANGE);
  ck_assert_int_eq(ft__spare_dir("/r/job-a", out, 12), FT_ERANGE);
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

/* ================= the reuse rule ================= */

/* What restore agreement offers from one node (ft__slots_held, as the SMP
 * calls it) is exactly {slot 0, slot 1}. */
static void check_held(ft__slot_t sl[FT_NSLOTS], uint64_t want0, uint64_t want1,
                       const char *when) {
  uint64_t held[FT_NSLOTS] = {99, 99};
  ft__slots_held(sl, held);
  ck_assert_msg(held[0] == want0 && held[1] == want1,
                "%s: held {%llu, %llu}, expected {%llu, %llu}", when,
                (unsigned long long)held[0], (unsigned long long)held[1],
                (unsigned long long)want0, (unsigned long long)want1);
}

/* check_held for version v's slot holding `now` and the other slot v-1. */
static void check_held_v(ft__slot_t sl[FT_NSLOTS], uint64_t v, uint64_t now,
                         const char *when) {
  uint64_t want[FT_NSLOTS];
  want[v % FT_NSLOTS] = now;
  want[(v + 1) % FT_NSLOTS] = v - 1;
  check_held(sl, want[0], want[1], when);
}

/* At any point: the slot that holds the latest committed version is not the
 * one being filled, verifies against its CRCs, and holds its bytes -- as
 * seen through our mappings and by a process that opens the store afresh. */
static void check_committed_whole(ft__slot_t sl[FT_NSLOTS], uint64_t latest,
                                  const char *when) {
  if (latest == 0)
    return;
  int found = -1;
  for (int i = 0; i < FT_NSLOTS; i++) {
    uint32_t st = ft__slot_state(&sl[i]);
    if (st == FT_SLOT_COMMITTED)
      ck_assert_msg(sl[i].hdr->version <= latest,
                    "%s: slot %d claims committed version %llu > %llu", when, i,
                    (unsigned long long)sl[i].hdr->version,
                    (unsigned long long)latest);
    if (st == FT_SLOT_COMMITTED && sl[i].hdr->version == latest)
      found = i;
  }
  ck_assert_msg(found >= 0, "%s: version %llu committed but in no slot", when,
                (unsigned long long)latest);
  ck_assert_uint_eq(found, latest % FT_NSLOTS);
  for (int i = 0; i < FT_NSLOTS; i++)
    if (ft__slot_state(&sl[i]) == FT_SLOT_FILLING)
      ck_assert_msg(i != found, "%s: filling the committed slot", when);
  char msg[512] = "";
  const ft__slot_hdr_t *h = sl[found].hdr;
  int rc = ft__slot_verify(&sl[found], 0, h->k + h->m, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "%s: %s", when, msg);
  ck_assert_msg(holds(&sl[found], latest), "%s: bytes of version %llu changed",
                when, (unsigned long long)latest);
  ft__slot_t fresh;
  open_slot(&fresh, found);
  ck_assert_uint_eq(ft__slot_state(&fresh), FT_SLOT_COMMITTED);
  ck_assert_uint_eq(fresh.hdr->version, latest);
  ck_assert_int_eq(ft__slot_verify(&fresh, 0, h->k + h->m, msg, sizeof(msg)),
                   FT_OK);
  ck_assert(holds(&fresh, latest));
  ft__slot_close(&fresh);
}

/* prepare(V) of runtime/smp.c: slot V%2, allowed only when V-1 committed.
 * The SMP does not check this (it follows from the order in which it
 * prepares and commits); the test asserts it at every step. */
static ft__slot_t *prepare(ft__slot_t sl[FT_NSLOTS], uint64_t v,
                           uint64_t latest) {
  ft__slot_t *s = &sl[v % FT_NSLOTS], *other = &sl[(v + 1) % FT_NSLOTS];
  ck_assert_uint_eq(latest, v - 1);
  if (v > 1) {
    ck_assert_uint_eq(ft__slot_state(other), FT_SLOT_COMMITTED);
    ck_assert_uint_eq(other->hdr->version, v - 1);
  }
  ft__slot_begin(s, v, v * 10, 1, 1);
  return s;
}

START_TEST(reuse_rule) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    create_slot(&sl[i], i, &g);
  uint64_t latest = 0;
  char when[64];
  for (uint64_t v = 1; v <= 9; v++) {
    ft__slot_t *s = prepare(sl, v, latest);
    snprintf(when, sizeof(when), "v%llu begun", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, 0, when);
    fill_ranks(s, v, 0, 4);
    snprintf(when, sizeof(when), "v%llu half written", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, 0, when);
    fill_ranks(s, v, 4, 8);
    ft__slot_seal_data(s);
    ft__slot_set_state(s, FT_SLOT_LOCAL);
    snprintf(when, sizeof(when), "v%llu LOCAL", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, 0, when);
    fill_parity(s, v);
    ft__slot_seal_parity(s);
    ft__slot_set_state(s, FT_SLOT_ENCODED);
    snprintf(when, sizeof(when), "v%llu ENCODED", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, v, when);
    ft__slot_set_state(s, FT_SLOT_COMMITTED);
    latest = v;
    snprintf(when, sizeof(when), "v%llu COMMITTED", (unsigned long long)v);
    check_committed_whole(sl, latest, when);
    check_held_v(sl, v, v, when);
  }
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&sl[i]);
}
END_TEST

/* A crash at each point of filling V (nothing after it runs; the mappings
 * just go away): the store on disk still holds V-1 committed and whole, and
 * restore offers V-1 (or V, once this node had encoded it). */
START_TEST(crash_mid_fill) {
  static const uint32_t crash_at[] = {FT_SLOT_EMPTY, FT_SLOT_FILLING,
                                      FT_SLOT_LOCAL, FT_SLOT_ENCODED};
  uint32_t at = crash_at[_i];
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    create_slot(&sl[i], i, &g);
  for (uint64_t v = 1; v <= 5; v++) {
    prepare(sl, v, v - 1);
    write_version(&sl[v % FT_NSLOTS], v);
  }
  /* version 6 goes to slot 0 and never finishes */
  ft__slot_t *s = prepare(sl, 6, 5);
  if (at >= FT_SLOT_FILLING)
    fill_ranks(s, 6, 0, at == FT_SLOT_FILLING ? 3 : 8);
  if (at >= FT_SLOT_LOCAL) {
    ft__slot_seal_data(s);
    ft__slot_set_state(s, FT_SLOT_LOCAL);
  }
  if (at >= FT_SLOT_ENCODED) {
    fill_parity(s, 6);
    ft__slot_seal_parity(s);
    ft__slot_set_state(s, FT_SLOT_ENCODED);
  }
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&sl[i]);

  ft__slot_t re[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    open_slot(&re[i], i);
  ck_assert_uint_eq(ft__slot_state(&re[0]),
                    at == FT_SLOT_EMPTY ? FT_SLOT_FILLING : at);
  ck_assert_uint_eq(re[0].hdr->version, 6);
  ck_assert_uint_eq(ft__slot_state(&re[1]), FT_SLOT_COMMITTED);
  ck_assert_uint_eq(re[1].hdr->version, 5);
  ck_assert_uint_eq(re[1].hdr->step, 50);
  check_committed_whole(re, 5, "after the crash");
  /* version 6 counts once this node had encoded it, and the restore rule
   * over this one node picks it then; 5 otherwise */
  check_held(re, at == FT_SLOT_ENCODED ? 6 : 0, 5, "after the crash");
  uint64_t held[FT_NSLOTS];
  ft__slots_held(re, held);
  ck_assert_uint_eq(ft__newest_common(held, 1, NULL),
                    at == FT_SLOT_ENCODED ? 6 : 5);
  if (at == FT_SLOT_ENCODED) {
    char msg[512];
    ck_assert_int_eq(ft__slot_verify(&re[0], 0, 5, msg, sizeof(msg)), FT_OK);
    ck_assert(holds(&re[0], 6));
  }
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&re[i]);
}
END_TEST

/* ================= what a node holds whole ================= */

/* Every state, open or not, at small and large versions: only an open slot
 * that reached ENCODED (or COMMITTED) holds its version. */
START_TEST(slot_held_states) {
  static const struct {
    uint32_t state;
    int counts;
  } st[] = {{FT_SLOT_EMPTY, 0},
            {FT_SLOT_FILLING, 0},
            {FT_SLOT_LOCAL, 0},
            {FT_SLOT_ENCODED, 1},
            {FT_SLOT_COMMITTED, 1}};
  static const uint64_t vers[] = {0, 1, 7, (1ull << 32) + 1, UINT64_MAX};
  for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
    for (size_t j = 0; j < sizeof(vers) / sizeof(vers[0]); j++) {
      uint64_t v = vers[j];
      ck_assert_msg(ft__slot_held(0, st[i].state, v) == 0,
                    "unopened %s slot of version %llu counted",
                    ft__slot_state_name(st[i].state), (unsigned long long)v);
      ck_assert_msg(ft__slot_held(1, st[i].state, v) == (st[i].counts ? v : 0),
                    "%s slot of version %llu: held %llu",
                    ft__slot_state_name(st[i].state), (unsigned long long)v,
                    (unsigned long long)ft__slot_held(1, st[i].state, v));
    }
}
END_TEST

/* A slot that is not mapped -- closed, never created, or refused on open
 * because it is damaged -- holds nothing, whatever its file says. */
START_TEST(slots_held_unmapped) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[FT_NSLOTS];
  for (int i = 0; i < FT_NSLOTS; i++)
    create_slot(&sl[i], i, &g);
  write_version(&sl[0], 2);
  write_version(&sl[1], 3);
  check_held(sl, 2, 3, "both committed");
  ft__slot_close(&sl[0]);
  check_held(sl, 0, 3, "slot 0 closed");
  char path[160], msg[512] = "";
  path_of(path, sizeof(path), "slot0");
  ck_assert_int_eq(truncate(path, 100), 0);
  ck_assert_int_eq(ft__slot_open(&sl[0], &sdir, 0, JOB, msg, sizeof(msg)),
                   FT_ECORRUPT);
  check_held(sl, 0, 3, "slot 0 truncated");
  ft__slot_close(&sl[1]);
  check_held(sl, 0, 0, "both closed");
  ft__slot_t none[FT_NSLOTS];
  memset(none, 0, sizeof(none));
  check_held(none, 0, 0, "never opened");
}
END_TEST

/* ================= the restore rule ================= */

#define NC_NODES 4

/* with_ignore: pass ignore (else NULL); want: the exact answer. */
typedef struct nc_case {
  const char *name;
  int nnodes;
  uint64_t held[NC_NODES][FT_NSLOTS];
  int with_ignore;
  unsigned char ignore[NC_NODES];
  uint64_t want;
} nc_case_t;

#define MAX UINT64_MAX
#define P32 (1ull << 32)

/* One case a line. */
/* clang-format off */
static const nc_case_t nc_cases[] = {
  {"no node holds anything",     3, {{0, 0}, {0, 0}, {0, 0}}, 0, {0}, 0},
  {"no nodes",                   0, {{8, 7}},                 0, {0}, 0},
  {"every node holds v",         3, {{8, 0}, {8, 0}, {8, 0}}, 0, {0}, 8},
  {"every node holds v and v-1", 3, {{8, 7}, {7, 8}, {8, 7}}, 0, {0}, 8},
  {"{v, v-1} and {v-1}",         2, {{8, 7}, {7, 0}},         0, {0}, 7},
  {"{v-1, v} and {0, v-1}",      2, {{7, 8}, {0, 7}},         0, {0}, 7},
  {"a node holding nothing",     3, {{8, 7}, {8, 7}, {0, 0}}, 0, {0}, 0},
  {"the first holding nothing",  3, {{0, 0}, {8, 7}, {8, 7}}, 0, {0}, 0},
  /* ignore: spares and other nodes left out */
  {"spare holding nothing",      3, {{8, 7}, {8, 7}, {0, 0}}, 1, {0, 0, 1}, 8},
  {"spare holding older ones",   3, {{8, 7}, {8, 7}, {3, 2}}, 1, {0, 0, 1}, 8},
  {"spare holding a newer one",  3, {{5, 4}, {5, 4}, {9, 0}}, 1, {0, 0, 1}, 5},
  {"the node lacking v out",     3, {{8, 7}, {7, 6}, {8, 7}}, 1, {0, 1, 0}, 8},
  {"another node out",           3, {{8, 7}, {7, 6}, {8, 7}}, 1, {1, 0, 0}, 7},
  {"no flag set",                3, {{8, 7}, {7, 6}, {8, 7}}, 1, {0, 0, 0}, 7},
  {"every node left out",        2, {{8, 7}, {8, 7}},         1, {1, 1},    0},
  /* where in the two slots v and v-1 are */
  {"{v-1, v} / {v, v-1}",        2, {{7, 8}, {8, 7}},         0, {0}, 8},
  {"{v-1, v} / {0, v-1}",        2, {{7, 8}, {0, 7}},         0, {0}, 7},
  {"{v-1, v} / {0, v}",          2, {{7, 8}, {0, 8}},         0, {0}, 8},
  {"{v-1, v} / {v-1, 0}",        2, {{7, 8}, {7, 0}},         0, {0}, 7},
  {"{v, 0} / {0, v-1}",          2, {{8, 0}, {0, 7}},         0, {0}, 0},
  {"{0, v} / {v, 0}",            2, {{0, 8}, {8, 0}},         0, {0}, 8},
  {"{v, v} / {v, v-1}",          2, {{8, 8}, {8, 7}},         0, {0}, 8},
  /* one node */
  {"one node {v, v-1}",          1, {{8, 7}},                 0, {0}, 8},
  {"one node {v-1, v}",          1, {{7, 8}},                 0, {0}, 8},
  {"one node {0, v}",            1, {{0, 3}},                 0, {0}, 3},
  {"one node holding nothing",   1, {{0, 0}},                 0, {0}, 0},
  {"one node, left out",         1, {{8, 7}},                 1, {1}, 0},
  /* versions outside every common set */
  {"no version common",          3, {{9, 8}, {7, 6}, {5, 4}}, 0, {0}, 0},
  {"each on two nodes of three", 3, {{9, 8}, {8, 7}, {9, 7}}, 0, {0}, 0},
  {"newer ones on some only",    3, {{9, 7}, {8, 7}, {9, 7}}, 0, {0}, 7},
  {"only an old one common",     4, {{10, 2}, {11, 2}, {2, 12}, {2, 13}},
                                                              0, {0}, 2},
  /* large version numbers */
  {"the largest version",        2, {{MAX, MAX - 1}, {MAX - 1, MAX}},
                                                              0, {0}, MAX},
  {"the largest, lacking on one",2, {{MAX, MAX - 1}, {MAX - 1, 0}},
                                                              0, {0}, MAX - 1},
  {"equal in the low 32 bits",   2, {{P32 + 1, 0}, {1, 0}},   0, {0}, 0},
  {"above 2^32, common",         2, {{P32 + 1, 1}, {1, P32 + 1}},
                                                              0, {0}, P32 + 1},
  {"2^32 common, 2^32+1 not",    3, {{P32 + 1, P32}, {P32, 0}, {P32, P32 + 1}},
                                                              0, {0}, P32},
};
/* clang-format on */
#undef MAX
#undef P32

START_TEST(newest_common_cases) {
  const nc_case_t *c = &nc_cases[_i];
  const uint64_t *held = &c->held[0][0];
  uint64_t got =
      ft__newest_common(held, c->nnodes, c->with_ignore ? c->ignore : NULL);
  ck_assert_msg(got == c->want, "%s: %llu, expected %llu", c->name,
                (unsigned long long)got, (unsigned long long)c->want);
  if (!c->with_ignore) { /* no flag set and no flags at all agree */
    static const unsigned char zero[NC_NODES];
    ck_assert_uint_eq(ft__newest_common(held, c->nnodes, zero), c->want);
  }
}
END_TEST

/* The plain statement of the rule: the largest candidate that some counted
 * node holds and every counted node holds; 0 without one. */
static uint64_t plain_rule(const uint64_t *held, int nnodes,
                           const unsigned char *ignore, const uint64_t *cand,
                           int ncand) {
  int counted = 0;
  for (int n = 0; n < nnodes; n++)
    counted += !ignore[n];
  for (int c = 0; c < ncand && counted; c++) { /* cand: newest first */
    int all = 1;
    for (int n = 0; n < nnodes && all; n++)
      all = ignore[n] || held[n * FT_NSLOTS] == cand[c] ||
            held[n * FT_NSLOTS + 1] == cand[c];
    if (all)
      return cand[c];
  }
  return 0;
}

/* Three nodes, every slot one of {0, 4, 5, 6}, every set of nodes left out:
 * 4096 x 8 cases against the plain rule. */
START_TEST(newest_common_exhaustive) {
  static const uint64_t vals[] = {0, 4, 5, 6}, cand[] = {6, 5, 4};
  uint64_t held[3 * FT_NSLOTS];
  unsigned char ignore[3];
  for (int mask = 0; mask < 8; mask++) {
    for (int n = 0; n < 3; n++)
      ignore[n] = (unsigned char)((mask >> n) & 1);
    for (int code = 0; code < 4096; code++) {
      for (int i = 0; i < 3 * FT_NSLOTS; i++)
        held[i] = vals[(code >> (2 * i)) & 3];
      uint64_t want = plain_rule(held, 3, ignore, cand, 3);
      uint64_t got = ft__newest_common(held, 3, mask ? ignore : NULL);
      ck_assert_msg(got == want,
                    "{%llu,%llu} {%llu,%llu} {%llu,%llu} ignore %d: %llu, "
                    "expected %llu",
                    (unsigned long long)held[0], (unsigned long long)held[1],
                    (unsigned long long)held[2], (unsigned long long)held[3],
                    (unsigned long long)held[4], (unsigned long long)held[5],
                    mask, (unsigned long long)got, (unsigned long long)want);
    }
  }
}
END_TEST

/* Many nodes: one node at either end lacking v decides. */
START_TEST(newest_common_many_nodes) {
  enum { N = 1024 };
  uint64_t *held = calloc(N * FT_NSLOTS, sizeof(uint64_t));
  unsigned char *ignore = calloc(N, 1);
  ck_assert_ptr_nonnull(held);
  ck_assert_ptr_nonnull(ignore);
  for (int n = 0; n < N; n++) {
    held[n * FT_NSLOTS + (n & 1)] = 41;
    held[n * FT_NSLOTS + !(n & 1)] = 40;
  }
  ck_assert_uint_eq(ft__newest_common(held, N, NULL), 41);
  held[(N - 1) * FT_NSLOTS + ((N - 1) & 1)] = 0; /* the last lacks 41 */
  ck_assert_uint_eq(ft__newest_common(held, N, NULL), 40);
  ignore[N - 1] = 1;
  ck_assert_uint_eq(ft__newest_common(held, N, ignore), 41);
  held[0] = held[1] = 0; /* the first holds nothing */
  ck_assert_uint_eq(ft__newest_common(held, N, ignore), 0);
  ignore[0] = 1;
  ck_assert_uint_eq(ft__newest_common(held, N, ignore), 41);
  free(held);
  free(ignore);
}
END_TEST

/* ---- ft-restore's rule: the newest version that counts as committed ---- */

/* One slot as a short code: held version, C for COMMITTED, X unusable. */
typedef struct seen_case {
  const char *name;
  int nnodes;
  const char *slots[NC_NODES][FT_NSLOTS]; /* "5", "5C", "X", "0" */
  unsigned char ignore[NC_NODES];
  uint64_t want;
} seen_case_t;

static ft__slot_seen_t seen_of(const char *code) {
  ft__slot_seen_t x = {0, 0, 0};
  if (strcmp(code, "X") == 0)
    x.unusable = 1;
  else
    x.held = strtoull(code, NULL, 10), x.committed = strchr(code, 'C') != NULL;
  return x;
}

/* Version v lives in slot v % 2: {slot0, slot1}. */
/* clang-format off */
static const seen_case_t seen_cases[] = {
  {"nothing held anywhere",        3, {{"0", "0"}, {"0", "0"}, {"0", "0"}}, {0}, 0},
  {"v committed everywhere",       3, {{"4C", "0"}, {"4C", "0"}, {"4C", "0"}}, {0}, 4},
  {"v+1 encoded everywhere",       3, {{"4C", "5"}, {"4C", "5"}, {"4C", "5"}}, {0}, 5},
  {"v committed, one copy damaged",3, {{"4C", "0"}, {"4C", "0"}, {"X", "0"}}, {0}, 4},
  {"v committed, one copy missing",3, {{"4C", "3C"}, {"4C", "0"}, {"X", "3C"}}, {0}, 4},
  {"v committed, one holds v-2",   3, {{"4C", "3C"}, {"4C", "3C"}, {"2C", "3C"}}, {0}, 4},
  {"v committed on one node only", 3, {{"4C", "3C"}, {"4", "3C"}, {"X", "3C"}}, {0}, 4},
  {"v encoded, one damaged",       3, {{"4", "3C"}, {"4", "3C"}, {"X", "3C"}}, {0}, 4},
  {"v encoded on one, two damaged",3, {{"4", "3C"}, {"X", "3C"}, {"X", "3C"}}, {0}, 4},
  {"v encoded, one LOCAL (vetoes)",3, {{"4", "3C"}, {"4", "3C"}, {"0", "3C"}}, {0}, 3},
  {"v encoded, one holds v-2",     3, {{"4", "3C"}, {"4", "3C"}, {"2C", "3C"}}, {0}, 3},
  {"veto, damage elsewhere",       3, {{"4", "3C"}, {"0", "3C"}, {"X", "3C"}}, {0}, 3},
  {"v vetoed, v-1 damaged on one", 3, {{"4", "3C"}, {"0", "3C"}, {"0", "X"}}, {0}, 3},
  {"all v-1 copies damaged",       3, {{"X", "X"}, {"X", "X"}, {"X", "X"}}, {0}, 0},
  {"only damaged and unheld",      2, {{"X", "0"}, {"0", "X"}}, {0}, 0},
  {"lacking node left out",        3, {{"4", "3C"}, {"4", "3C"}, {"0", "3C"}}, {0, 0, 1}, 4},
  {"spare holding a newer one",    3, {{"4", "3C"}, {"4", "3C"}, {"6C", "5C"}}, {0, 0, 1}, 4},
  {"every node left out",          2, {{"4C", "3C"}, {"4C", "3C"}}, {1, 1}, 0},
  {"v in the other slot, damaged v-slot",
                                   2, {{"4", "5"}, {"X", "5"}}, {0}, 5},
  {"v only in the wrong slot",     2, {{"4", "0"}, {"0", "4"}}, {0}, 4},
  {"the largest version",          2, {{"18446744073709551614", "18446744073709551615C"},
                                       {"18446744073709551614", "X"}}, {0}, UINT64_MAX},
  {"one node, v damaged",          1, {{"X", "3C"}}, {0}, 3},
  {"one node, v committed",        1, {{"4C", "3C"}}, {0}, 4},
};
/* clang-format on */

START_TEST(newest_committed_cases) {
  const seen_case_t *c = &seen_cases[_i];
  ft__slot_seen_t seen[NC_NODES * FT_NSLOTS];
  for (int n = 0; n < c->nnodes; n++)
    for (int i = 0; i < FT_NSLOTS; i++)
      seen[n * FT_NSLOTS + i] = seen_of(c->slots[n][i]);
  uint64_t got = ft__newest_committed(seen, c->nnodes, c->ignore);
  ck_assert_msg(got == c->want, "%s: %llu, expected %llu", c->name,
                (unsigned long long)got, (unsigned long long)c->want);
}
END_TEST

/* The plain statement of ft-restore's rule, candidate by candidate. */
static uint64_t plain_committed(const ft__slot_seen_t *seen, int nnodes,
                                const unsigned char *ignore) {
  static const uint64_t cand[] = {6, 5, 4};
  for (int c = 0; c < 3; c++) {
    uint64_t v = cand[c];
    int held_somewhere = 0, committed = 0, all = 1;
    for (int n = 0; n < nnodes; n++) {
      if (ignore[n])
        continue;
      const ft__slot_seen_t *row = &seen[n * FT_NSLOTS];
      int has = row[0].held == v || row[1].held == v;
      held_somewhere |= has;
      committed |= (row[0].held == v && row[0].committed) ||
                   (row[1].held == v && row[1].committed);
      all &= has || row[v % 2].unusable;
    }
    if (held_somewhere && (committed || all))
      return v;
  }
  return 0;
}

/* Three nodes, every slot one of {unusable, 0, 4, 4C, 5, 5C, 6, 6C}, no
 * node or the last left out: 2 x 8^6 cases against the plain rule.  With
 * no slot unusable and none COMMITTED it is ft__newest_common's rule. */
START_TEST(newest_committed_exhaustive) {
  static const char *codes[8] = {"X", "0", "4", "4C", "5", "5C", "6", "6C"};
  ft__slot_seen_t seen[3 * FT_NSLOTS];
  uint64_t held[3 * FT_NSLOTS];
  for (int mask = 0; mask < 2; mask++) {
    unsigned char ignore[3] = {0, 0, (unsigned char)mask};
    for (int code = 0; code < 1 << 18; code++) {
      int plain_only = 1;
      for (int i = 0; i < 3 * FT_NSLOTS; i++) {
        seen[i] = seen_of(codes[(code >> (3 * i)) & 7]);
        held[i] = seen[i].held;
        plain_only &= !seen[i].unusable && !seen[i].committed;
      }
      uint64_t want = plain_committed(seen, 3, ignore);
      uint64_t got = ft__newest_committed(seen, 3, ignore);
      ck_assert_msg(got == want, "code %o ignore %d: %llu, expected %llu", code,
                    mask, (unsigned long long)got, (unsigned long long)want);
      if (plain_only)
        ck_assert_uint_eq(got, ft__newest_common(held, 3, ignore));
    }
  }
}
END_TEST

/* ---- the rule over real stores: three nodes' slot files ---- */

#define NODES3 3

static void node_slots(ft__slot_t sl[FT_NSLOTS], int node,
                       const ft__slot_geom_t *g) {
  char sub[160], msg[512] = "";
  snprintf(sub, sizeof(sub), "%s/node%d", dir, node);
  ck_assert_msg(ft__store_mkdir(sub, msg, sizeof(msg)) == FT_OK, "%s", msg);
  ft__dir_t d;
  ck_assert_msg(ft__dir_open(&d, sub, msg, sizeof(msg)) == FT_OK, "%s", msg);
  for (int i = 0; i < FT_NSLOTS; i++) {
    int rc = ft__slot_create(&sl[i], &d, i, JOB, g, msg, sizeof(msg));
    ck_assert_msg(rc == FT_OK, "create: %s", msg);
  }
  ft__dir_close(&d);
}

/* Take a begun slot of version v up to state `to` (LOCAL and later). */
static void advance(ft__slot_t *s, uint64_t v, uint32_t to) {
  fill_ranks(s, v, 0, 8);
  ft__slot_seal_data(s);
  ft__slot_set_state(s, FT_SLOT_LOCAL);
  if (to >= FT_SLOT_ENCODED) {
    fill_parity(s, v);
    ft__slot_seal_parity(s);
    ft__slot_set_state(s, FT_SLOT_ENCODED);
  }
  if (to >= FT_SLOT_COMMITTED)
    ft__slot_set_state(s, FT_SLOT_COMMITTED);
}

/* What the SMPs' restore agreement computes: each node's ft__slots_held
 * row, then the rule. */
static uint64_t agreed(ft__slot_t (*sl)[FT_NSLOTS],
                       const unsigned char *ignore) {
  uint64_t held[NODES3 * FT_NSLOTS];
  for (int n = 0; n < NODES3; n++)
    ft__slots_held(sl[n], &held[n * FT_NSLOTS]);
  return ft__newest_common(held, NODES3, ignore);
}

/* Versions 1..4 committed everywhere, then version 5 reaches a different
 * state on each node, as when a job dies between encode and commit. */
START_TEST(rule_over_stores) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t sl[NODES3][FT_NSLOTS];
  for (int n = 0; n < NODES3; n++) {
    node_slots(sl[n], n, &g);
    for (uint64_t v = 1; v <= 4; v++) {
      prepare(sl[n], v, v - 1);
      write_version(&sl[n][v % FT_NSLOTS], v);
    }
    prepare(sl[n], 5, 4);
  }
  ck_assert_uint_eq(agreed(sl, NULL), 4); /* 5 FILLING everywhere */
  ft__slot_t *v5[NODES3];
  for (int n = 0; n < NODES3; n++)
    v5[n] = &sl[n][5 % FT_NSLOTS];
  advance(v5[0], 5, FT_SLOT_ENCODED);
  advance(v5[1], 5, FT_SLOT_ENCODED);
  advance(v5[2], 5, FT_SLOT_LOCAL);
  /* encoded on two nodes, not on the third: not committed */
  ck_assert_uint_eq(agreed(sl, NULL), 4);
  /* ft-restore leaving the third node out (as it does a spare) */
  static const unsigned char third[NODES3] = {0, 0, 1};
  ck_assert_uint_eq(agreed(sl, third), 5);
  /* encoded everywhere, the commit notice reached node 0 only */
  ft__slot_seal_parity(v5[2]);
  ft__slot_set_state(v5[2], FT_SLOT_ENCODED);
  ft__slot_set_state(v5[0], FT_SLOT_COMMITTED);
  ck_assert_uint_eq(agreed(sl, NULL), 5);
  /* node 2's slots lost (unmapped): nothing common unless it is left out */
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&sl[2][i]);
  ck_assert_uint_eq(agreed(sl, NULL), 0);
  ck_assert_uint_eq(agreed(sl, third), 5);
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < FT_NSLOTS; i++)
      ft__slot_close(&sl[n][i]);
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

/* ================= damaged slot files ================= */

/* Each damage below is written with a fresh header checksum (the table is
 * about the checks behind it: what a writer with a bug, or a forger, could
 * put there); slot_header_flips covers damage the checksum catches.  The
 * older-format case drops the checksum, as format 2 had none. */
typedef void (*slot_damage_fn)(ft__slot_hdr_t *h, const char *path);

static void trunc_to(const char *path, off_t n) {
  ck_assert_int_eq(truncate(path, n), 0);
}
static void d_trunc0(ft__slot_hdr_t *h, const char *p) {
  (void)h, trunc_to(p, 0);
}
static void d_trunc_half_hdr(ft__slot_hdr_t *h, const char *p) {
  (void)h, trunc_to(p, sizeof(ft__slot_hdr_t) / 2);
}
static void d_trunc_one(ft__slot_hdr_t *h, const char *p) {
  trunc_to(p, (off_t)h->seg_bytes - 1);
}
static void d_trunc_data(ft__slot_hdr_t *h, const char *p) {
  trunc_to(p, (off_t)h->data_off);
}
static void d_grown(ft__slot_hdr_t *h, const char *p) {
  trunc_to(p, (off_t)h->seg_bytes + 1);
}
static void d_magic(ft__slot_hdr_t *h, const char *p) {
  (void)p, memcpy(h->magic, "FTRTMETA", 8);
}
static void d_format(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->format = 99;
}
/* a slot of format 3 (or 2), before the header had a checksum */
static void d_format_old(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->format = 3;
}
static void d_job(ft__slot_hdr_t *h, const char *p) {
  (void)p, snprintf(h->job, sizeof(h->job), "other-job");
}
static void d_job_unterminated(ft__slot_hdr_t *h, const char *p) {
  (void)p, memset(h->job, 'x', sizeof(h->job));
}
static void d_state(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->state_word = 9;
}
static void d_state_5(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->state_word = ft__slot_state_word(5); /* well formed, no state */
}
static void d_rank_past_data(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_off[1] = h->data_off + h->data_bytes - 10;
}
static void d_rank_before_data(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_off[2] = 0;
}
static void d_rank_huge(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_bytes[0] = UINT64_MAX;
}
static void d_rank_wrap(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->rank_off[0] = UINT64_MAX - 100;
}
static void d_k0(ft__slot_hdr_t *h, const char *p) { (void)p, h->k = 0; }
static void d_km_big(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->k = 200, h->m = 56;
}
static void d_km_wrap(ft__slot_hdr_t *h, const char *p) {
  /* k + m == 2^32 + 2: wraps to 2 in 32-bit arithmetic; with zero-sized
   * chunks every size check would pass */
  (void)p, h->m = UINT32_MAX - 1;
  h->chunk_bytes = 0, h->data_bytes = 0, h->parity_bytes = 0;
  h->nlocal = 0;
}
static void d_nlocal(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->nlocal = FT_MAX_LOCAL + 1;
}
static void d_chunk(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->chunk_bytes *= 2;
}
static void d_chunk_huge(ft__slot_hdr_t *h, const char *p) {
  /* chunk * k wraps to the recorded data_bytes */
  (void)p, h->chunk_bytes = (1ull << 62) + h->chunk_bytes, h->k = 4, h->m = 0;
  h->data_bytes = h->chunk_bytes * 4, h->parity_bytes = 0;
}
static void d_parity_in_data(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->parity_off = h->data_off + h->data_bytes - 1;
}
static void d_parity_past_end(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->parity_off = h->seg_bytes - h->parity_bytes + 1;
}
static void d_data_off(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->data_off = 100;
}
static void d_seg_bytes(ft__slot_hdr_t *h, const char *p) {
  (void)p, h->seg_bytes += PAGE;
}

static const struct {
  const char *what;
  slot_damage_fn damage;
  int status;
  const char *want1, *want2;
} slot_bad[] = {
    {"truncated to 0", d_trunc0, FT_ECORRUPT, "0 bytes, too short",
     "truncated"},
    {"truncated to half a header", d_trunc_half_hdr, FT_ECORRUPT, "too short",
     "truncated"},
    {"one byte short", d_trunc_one, FT_ECORRUPT, "header says", "truncated?"},
    {"data cut off", d_trunc_data, FT_ECORRUPT, "header says", "truncated?"},
    {"one byte long", d_grown, FT_ECORRUPT, "header says", "bytes"},
    {"bad magic", d_magic, FT_ECORRUPT, "bad magic", "not an ftrt slot"},
    {"other format", d_format, FT_EMISMATCH, "store format 99",
     "reads format 4"},
    {"older format", d_format_old, FT_EMISMATCH, "store format 3",
     "without a header checksum"},
    {"other job", d_job, FT_EMISMATCH, "job 'other-job'", "job '" JOB "'"},
    {"job unterminated", d_job_unterminated, FT_EMISMATCH, "belongs to job",
     "not to job '" JOB "'"},
    {"bad state", d_state, FT_ECORRUPT, "invalid slot state word 00000009",
     "damaged"},
    {"state 5", d_state_5, FT_ECORRUPT, "invalid slot state word", "fffa0005"},
    {"rank past data", d_rank_past_data, FT_ECORRUPT, "rank region 1",
     "outside the data region"},
    {"rank before data", d_rank_before_data, FT_ECORRUPT, "rank region 2 [0,",
     "outside the data region"},
    {"rank huge", d_rank_huge, FT_ECORRUPT, "rank region 0",
     "outside the data region"},
    {"rank offset wraps", d_rank_wrap, FT_ECORRUPT, "rank region 0",
     "outside the data region"},
    {"k = 0", d_k0, FT_ECORRUPT, "impossible code", "k=0"},
    {"k + m = 256", d_km_big, FT_ECORRUPT, "impossible code", "k=200 m=56"},
    {"k + m wraps", d_km_wrap, FT_ECORRUPT, "impossible code", "m=4294967294"},
    {"65 ranks", d_nlocal, FT_ECORRUPT, "impossible code", "ranks=65"},
    {"chunk size", d_chunk, FT_ECORRUPT, "do not fit the file", "k=3"},
    {"chunk * k wraps", d_chunk_huge, FT_ECORRUPT, "do not fit the file",
     "chunk"},
    {"parity inside data", d_parity_in_data, FT_ECORRUPT, "do not fit the file",
     "m=2"},
    {"parity past the end", d_parity_past_end, FT_ECORRUPT,
     "do not fit the file", "file"},
    {"data inside the header", d_data_off, FT_ECORRUPT, "do not fit the file",
     "chunk"},
    {"seg_bytes", d_seg_bytes, FT_ECORRUPT, "header says", "truncated?"},
};

START_TEST(slot_damaged) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 1, &g);
  write_version(&s, 3);
  char path[128];
  path_of(path, sizeof(path), "slot1");
  slot_bad[_i].damage(s.hdr, path);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  if ((size_t)st.st_size >= sizeof(ft__slot_hdr_t)) /* still mapped in */
    s.hdr->hdr_crc =
        slot_bad[_i].damage == d_format_old ? 0 : ft__slot_hdr_crc(s.hdr);
  ft__slot_close(&s);

  char msg[512] = "";
  int rc = ft__slot_open(&s, &sdir, 1, JOB, msg, sizeof(msg));
  ck_assert_msg(rc == slot_bad[_i].status, "%s: status %s, want %s (%s)",
                slot_bad[_i].what, ft_err_name(rc),
                ft_err_name(slot_bad[_i].status), msg);
  ck_assert_ptr_null(s.map);
  ck_assert_int_eq(s.fd, -1);
  ck_msg_has(msg, path);
  ck_msg_has(msg, slot_bad[_i].want1);
  ck_msg_has(msg, slot_bad[_i].want2);
}
END_TEST

/* The validator alone, on images shorter than a header and with job NULL. */
START_TEST(slot_validate_bytes) {
  ft__slot_geom_t g;
  geom3(&g, 1, 0);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  char msg[512] = "";
  ck_assert_int_eq(
      ft__slot_validate(s.map, s.map_bytes, JOB, "img", msg, sizeof(msg)),
      FT_OK);
  ck_assert_int_eq(
      ft__slot_validate(s.map, s.map_bytes, NULL, "img", msg, sizeof(msg)),
      FT_OK);
  ck_assert_int_eq(
      ft__slot_validate(s.map, s.map_bytes, "job-b", "img", msg, sizeof(msg)),
      FT_EMISMATCH);
  ck_msg_has(msg, "img: belongs to job '" JOB "', not to job 'job-b'");
  ck_assert_int_eq(ft__slot_validate(s.map, sizeof(ft__slot_hdr_t) - 1, JOB,
                                     "img", msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_msg_has(msg, "too short for a slot header");
  ck_assert_int_eq(ft__slot_validate(s.map, 0, JOB, "img", msg, sizeof(msg)),
                   FT_ECORRUPT);
  /* a tiny message buffer is cut, not overrun */
  char tiny[8];
  memset(tiny, '#', sizeof(tiny));
  ck_assert_int_eq(ft__slot_validate(s.map, 0, JOB, "img", tiny, 5),
                   FT_ECORRUPT);
  ck_assert_str_eq(tiny, "img:");
  ck_assert_int_eq(tiny[5], '#');
  ck_assert_int_eq(ft__slot_validate(s.map, 0, JOB, "img", NULL, 0),
                   FT_ECORRUPT);
  ft__slot_close(&s);
}
END_TEST

/* ================= the header checksum ================= */

/* One byte of a header field of a committed slot, flipped on disk (xor
 * mask): the slot is refused (FT_ECORRUPT) with a message that names the
 * file and says what failed.  Every field that steers a read is covered:
 * identity (magic, format, job, version, step, epoch), every size and
 * offset, the code, the rank table and the whole chunk CRC table (entries
 * past k+m included); the state word checks itself (store.h).  Before the
 * header had a checksum, most of these opened as if nothing happened: a
 * flipped rank offset read another region while every chunk CRC passed. */
typedef struct hdr_flip {
  const char *name;
  size_t off;
  uint8_t mask;
  const char *want;
} hdr_flip_t;

#define HDR_OFF(f) offsetof(ft__slot_hdr_t, f)
#define FLIP(f, extra)                                                         \
  { #f "+" #extra, HDR_OFF(f) + (extra), 0xff, "header checksum" }
/* The state word follows the format word (offset 12, see no-silent-fresh). */
#define STATE_OFF (HDR_OFF(format) + 4)

static const hdr_flip_t hdr_flips[] = {
    {"magic", 0, 0xff, "bad magic"},
    FLIP(format, 0),
    FLIP(format, 3),
    {"state COMMITTED -> EMPTY", STATE_OFF, 0x04, "slot state"},
    {"state COMMITTED -> ENCODED", STATE_OFF, 0x07, "slot state"},
    {"state high byte", STATE_OFF + 3, 0x01, "slot state"},
    FLIP(job, 0),
    FLIP(job, 5), /* its NUL */
    FLIP(job, FT_JOB_MAX - 1),
    FLIP(version, 0),
    FLIP(version, 7),
    FLIP(step, 0),
    FLIP(step, 4),
    FLIP(epoch, 0),
    FLIP(seg_bytes, 1),
    FLIP(data_off, 0),
    FLIP(data_bytes, 0),
    FLIP(parity_off, 1),
    FLIP(parity_bytes, 0),
    FLIP(chunk_bytes, 0),
    FLIP(k, 0),
    FLIP(m, 0),
    FLIP(nlocal, 0),
    FLIP(layout, 0),
    FLIP(rank_off, 0),
    FLIP(rank_off, 8 * 2 + 1),
    FLIP(rank_off, 8 * (FT_MAX_LOCAL - 1)), /* past nlocal */
    FLIP(rank_bytes, 0),
    FLIP(rank_bytes, 8 * 1 + 1),
    FLIP(crc, 0),
    FLIP(crc, 8 * 4 + 3),               /* a parity chunk's */
    FLIP(crc, 8 * (FT_MAX_CHUNKS - 1)), /* past k+m */
};
#undef FLIP

START_TEST(slot_header_flips) {
  const hdr_flip_t *f = &hdr_flips[_i];
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 1, &g);
  write_version(&s, 3);
  ft__slot_close(&s);
  char path[160], msg[512] = "";
  path_of(path, sizeof(path), "slot1");
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint8_t b;
  ck_assert_int_eq(pread(fd, &b, 1, (off_t)f->off), 1);
  b ^= f->mask;
  ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)f->off), 1);
  close(fd);
  int rc = ft__slot_open(&s, &sdir, 1, JOB, msg, sizeof(msg));
  ck_assert_msg(rc == FT_ECORRUPT,
                "%s flipped (byte %zu ^ 0x%02x): %s, "
                "expected FT_ECORRUPT (%s)",
                f->name, f->off, f->mask, ft_err_name(rc), rc ? msg : "opened");
  ck_assert_ptr_null(s.map);
  ck_msg_has(msg, path);
  ck_msg_has(msg, f->want);
}
END_TEST

/* What the checksum does not cover: the time stamps steer no read. */
START_TEST(slot_header_times_free) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  write_version(&s, 5);
  s.hdr->filled_ns ^= 0xff;
  s.hdr->committed_ns ^= 0xff00;
  ft__slot_close(&s);
  open_slot(&s, 0);
  ck_assert_uint_eq(ft__slot_state(&s), FT_SLOT_COMMITTED);
  ck_assert_uint_eq(s.hdr->version, 5);
  ft__slot_close(&s);
}
END_TEST

/* The state word: every state round-trips, and every word one flipped
 * byte away from a valid one is invalid (so is one that is all zero). */
START_TEST(state_word_flips) {
  ck_assert_uint_eq(ft__slot_state_decode(0), FT_SLOT_STATE_INVALID);
  for (uint32_t st = FT_SLOT_EMPTY; st <= FT_SLOT_COMMITTED; st++) {
    uint32_t w = ft__slot_state_word(st);
    ck_assert_uint_eq(ft__slot_state_decode(w), st);
    for (int byte = 0; byte < 4; byte++)
      for (uint32_t x = 1; x < 256; x++) {
        uint32_t bad = w ^ (x << (8 * byte));
        ck_assert_msg(ft__slot_state_decode(bad) == FT_SLOT_STATE_INVALID,
                      "state %u: word %08x decodes", st, bad);
      }
  }
  ck_assert_uint_eq(ft__slot_state_decode(ft__slot_state_word(5)),
                    FT_SLOT_STATE_INVALID);
  ck_assert_uint_eq(ft__slot_held(1, FT_SLOT_STATE_INVALID, 7), 0);
}
END_TEST

/* Where ft-chaos's `corrupt HOST header FIELD` and the shell tests flip
 * bytes (scripts/ft-chaos header_offset, tests/mpi/no-silent-fresh.sh). */
START_TEST(slot_header_offsets) {
  ck_assert_uint_eq(HDR_OFF(format), 8);
  ck_assert_uint_eq(HDR_OFF(state_word), 12);
  ck_assert_uint_eq(HDR_OFF(job), 16);
  ck_assert_uint_eq(HDR_OFF(version), 80);
  ck_assert_uint_eq(HDR_OFF(step), 88);
  ck_assert_uint_eq(HDR_OFF(epoch), 96);
  ck_assert_uint_eq(HDR_OFF(seg_bytes), 104);
  ck_assert_uint_eq(HDR_OFF(data_off), 112);
  ck_assert_uint_eq(HDR_OFF(data_bytes), 120);
  ck_assert_uint_eq(HDR_OFF(parity_off), 128);
  ck_assert_uint_eq(HDR_OFF(parity_bytes), 136);
  ck_assert_uint_eq(HDR_OFF(chunk_bytes), 144);
  ck_assert_uint_eq(HDR_OFF(k), 152);
  ck_assert_uint_eq(HDR_OFF(m), 156);
  ck_assert_uint_eq(HDR_OFF(nlocal), 160);
  ck_assert_uint_eq(HDR_OFF(rank_off), 168);
  ck_assert_uint_eq(HDR_OFF(rank_bytes), 168 + 8 * FT_MAX_LOCAL);
  ck_assert_uint_eq(HDR_OFF(crc), 168 + 16 * FT_MAX_LOCAL);
  ck_assert_uint_le(sizeof(ft__slot_hdr_t), FT_SLOT_HDR_BYTES);
}
END_TEST

static int reopens(int idx) {
  ft__slot_t s;
  int rc = ft__slot_open(&s, &sdir, idx, JOB, NULL, 0);
  ft__slot_close(&s);
  return rc;
}

/* Every writer of a covered field keeps the checksum, in the order the SMP
 * calls them; none blesses a header damaged in memory. */
START_TEST(slot_header_writers) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  ck_assert_int_eq(ft__slot_intact(&s), 1);
  ck_assert_int_eq(reopens(0), FT_OK);
  ft__slot_begin(&s, 6, 0, 2, 1);
  ck_assert_int_eq(reopens(0), FT_OK);
  fill_ranks(&s, 6, 0, 8);
  ft__slot_set_step(&s, 60);
  ck_assert_int_eq(reopens(0), FT_OK);
  uint64_t crc[3];
  for (uint32_t c = 0; c < 3; c++)
    crc[c] = ft__slot_chunk_crc(&s, c);
  ft__slot_set_data_crcs(&s, crc);
  ck_assert_int_eq(reopens(0), FT_OK);
  char msg[512] = "";
  ck_assert_int_eq(ft__slot_verify(&s, 0, 3, msg, sizeof(msg)), FT_OK);
  ft__slot_set_state(&s, FT_SLOT_LOCAL);
  fill_parity(&s, 6);
  ft__slot_seal_parity(&s);
  ft__slot_set_state(&s, FT_SLOT_ENCODED);
  ft__slot_set_state(&s, FT_SLOT_COMMITTED);
  ck_assert_int_eq(reopens(0), FT_OK);
  ck_assert_int_eq(ft__slot_verify(&s, 0, 5, msg, sizeof(msg)), FT_OK);

  /* damaged in memory (a stray write to the mapping), then written to:
   * it stays refused, whichever writer comes next */
  s.hdr->rank_off[1] += 8;
  ck_assert_int_eq(ft__slot_intact(&s), 0);
  ft__slot_set_step(&s, 61);
  ft__slot_seal_data(&s);
  ft__slot_seal_parity(&s);
  ft__slot_set_data_crcs(&s, crc);
  ft__slot_begin(&s, 8, 80, 2, 1);
  ft__slot_set_state(&s, FT_SLOT_COMMITTED);
  ck_assert_int_eq(ft__slot_intact(&s), 0);
  ft__slot_close(&s);
  ck_assert_int_eq(ft__slot_open(&s, &sdir, 0, JOB, msg, sizeof(msg)),
                   FT_ECORRUPT);
  ck_msg_has(msg, "header checksum");
  /* made anew, it is whole again */
  create_slot(&s, 0, &g);
  ck_assert_int_eq(ft__slot_intact(&s), 1);
  ft__slot_close(&s);
  ck_assert_int_eq(reopens(0), FT_OK);
}
END_TEST

/* ================= metadata ================= */

static ft__meta_t *sample_meta(void) {
  ft__meta_t *m = calloc(1, sizeof(*m));
  ck_assert_ptr_nonnull(m);
  snprintf(m->job, sizeof(m->job), JOB);
  snprintf(m->host, sizeof(m->host), "node07.cluster");
  m->epoch = 3, m->layout = 2;
  m->run = 0x8badf00ddeadbeefull;
  ck_assert_int_eq(ft__meta_alloc_hosts(m, 5), FT_OK);
  m->node = 2, m->ntrainers = 20;
  m->k = 3, m->m = 2, m->group = 0, m->pos = 2, m->group_size = 5;
  m->nlocal = 4;
  for (uint32_t n = 0; n < m->nnodes; n++)
    snprintf(m->hosts[n], FT_NAME_MAX, "node%02u.cluster", 5 + n);
  for (uint32_t r = 0; r < 4; r++) {
    ft__rank_rec_t *rr = &m->ranks[r];
    rr->rank = 8 + r;
    /* rank 10 registered nothing */
    ck_assert_int_eq(ft__meta_alloc_bufs(m, r, r == 2 ? 0 : r + 1), FT_OK);
    uint64_t off = 0;
    for (uint32_t b = 0; b < rr->nbufs; b++) {
      ft__buf_rec_t *br = &rr->bufs[b];
      snprintf(br->name, sizeof(br->name), "layer%u.%s", b,
               b % 2 ? "bias" : "weight");
      br->bytes = 1000 * (b + 1) + r;
      br->offset = off;
      off += br->bytes + 24;
      br->global_bytes = b % 2 ? 0 : 4 * br->bytes;
      br->global_offset = b % 2 ? 0 : r * br->bytes;
      br->kind = b % 3;
      br->memory = b == 1;
    }
    rr->region_bytes = off + 4096;
  }
  return m;
}

/* A buffer recorded as a slice reaching past its global buffer is refused
 * when read (a re-slice would compute its range with a wrap-around). */
START_TEST(meta_slice_outside_global) {
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  char msg[512] = "";
  ft__buf_rec_t *br = &m->ranks[3].bufs[2];
  br->global_offset = br->global_bytes - br->bytes + 1;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, "buffer 2 of rank 11 is a slice outside its global buffer");
  br->global_offset = UINT64_MAX - 8; /* offset + bytes wraps */
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_ECORRUPT);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

START_TEST(meta_round_trip) {
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  char msg[512] = "", path[128], tmp[128];
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_str_eq(got->job, JOB);
  ck_assert_str_eq(got->host, "node07.cluster");
  ck_assert_uint_eq(got->epoch, 3);
  ck_assert_uint_eq(got->run, 0x8badf00ddeadbeefull);
  ck_assert_uint_eq(got->node, 2);
  ck_assert_uint_eq(got->nnodes, 5);
  ck_assert_uint_eq(got->ntrainers, 20);
  ck_assert_uint_eq(got->k, 3);
  ck_assert_uint_eq(got->m, 2);
  ck_assert_uint_eq(got->pos, 2);
  ck_assert_uint_eq(got->group_size, 5);
  ck_assert_uint_eq(got->nlocal, 4);
  ck_assert_uint_eq(got->ranks[3].rank, 11);
  ck_assert_uint_eq(got->ranks[3].nbufs, 4);
  ck_assert_uint_eq(got->ranks[2].nbufs, 0);
  ck_assert_str_eq(got->ranks[3].bufs[1].name, "layer1.bias");
  ck_assert_str_eq(got->ranks[3].bufs[2].name, "layer2.weight");
  ck_assert_uint_eq(got->ranks[3].bufs[2].bytes, 3003);
  ck_assert_uint_eq(got->ranks[3].bufs[2].global_offset, 3 * 3003);
  ck_assert_uint_eq(got->ranks[3].bufs[2].global_bytes, 4 * 3003);
  ck_assert_uint_eq(got->ranks[1].bufs[1].memory, 1);
  ck_assert_uint_eq(got->ranks[1].region_bytes, m->ranks[1].region_bytes);
  ck_assert_str_eq(got->hosts[0], "node05.cluster");
  ck_assert_str_eq(got->hosts[4], "node09.cluster");
  ck_assert_msg(ft__meta_equal(m, got), "decoded metadata differs");

  /* atomic: the temp file is gone, and a second write replaces the file
   * (a reader holding the old one keeps reading the old bytes) */
  path_of(path, sizeof(path), "meta");
  path_of(tmp, sizeof(tmp), "meta.tmp");
  ck_assert_int_eq(access(tmp, F_OK), -1);
  struct stat st1, st2;
  ck_assert_int_eq(stat(path, &st1), 0);
  ck_assert_uint_eq(st1.st_mode & 0777, 0600);
  int old = open(path, O_RDONLY);
  ck_assert_int_ge(old, 0);
  uint8_t first[16];
  ck_assert_int_eq(read(old, first, 16), 16);

  m->epoch = 4;
  m->nlocal = 1;
  snprintf(m->host, sizeof(m->host), "node08");
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(access(tmp, F_OK), -1);
  ck_assert_int_eq(stat(path, &st2), 0);
  ck_assert_uint_ne(st1.st_ino, st2.st_ino);
  ck_assert_uint_lt(st2.st_size, st1.st_size);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 4);
  ck_assert_uint_eq(got->nlocal, 1);
  ck_assert_str_eq(got->host, "node08");
  ck_assert_uint_eq(got->ranks[1].nbufs, 0); /* nothing left from before */
  struct stat ost;
  ck_assert_int_eq(fstat(old, &ost), 0);
  ck_assert_uint_eq(ost.st_ino, st1.st_ino);
  ck_assert_int_eq(ost.st_size, st1.st_size);
  close(old);

  /* a stale temp file from a crashed writer is ignored, then replaced */
  FILE *f = fopen(tmp, "w");
  ck_assert_ptr_nonnull(f);
  fputs("garbage from a crash", f);
  fclose(f);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 4);
  m->epoch = 5;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(access(tmp, F_OK), -1);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, 5);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

/* No fixed limit on nodes or buffers (issue 14.7): 10,000 nodes and 64
 * ranks of 1,000 buffers each are written and read back whole (the store
 * refused more than 4096 nodes and 256 buffers a rank before). */
START_TEST(meta_large_tables) {
  enum { NODES = 10000, BUFS = 1000 };
  ft__meta_t *m = calloc(1, sizeof(*m)), *got = calloc(1, sizeof(*got));
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_nonnull(got);
  snprintf(m->job, sizeof(m->job), JOB);
  ck_assert_int_eq(ft__meta_alloc_hosts(m, NODES), FT_OK);
  m->node = NODES - 1, m->group = NODES / 6 - 1;
  m->k = 4, m->m = 2, m->pos = 3, m->nlocal = FT_MAX_LOCAL;
  m->epoch = m->layout = 1;
  m->group_size = 6;
  for (uint32_t n = 0; n < NODES; n++)
    snprintf(m->hosts[n], FT_NAME_MAX, "host%05u.rack%02u", n, n % 50);
  for (uint32_t r = 0; r < FT_MAX_LOCAL; r++) {
    ck_assert_int_eq(ft__meta_alloc_bufs(m, r, BUFS), FT_OK);
    m->ranks[r].rank = r;
    m->ranks[r].region_bytes = BUFS;
    for (uint32_t b = 0; b < BUFS; b++) {
      snprintf(m->ranks[r].bufs[b].name, FT_NAME_MAX, "r%u.layer%u.exp_avg",
               r, b);
      m->ranks[r].bufs[b].offset = b;
      m->ranks[r].bufs[b].bytes = 1;
    }
  }
  char msg[512] = "";
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->nnodes, NODES);
  ck_assert_str_eq(got->hosts[NODES - 1], "host09999.rack49");
  ck_assert_uint_eq(got->ranks[63].nbufs, BUFS);
  ck_assert_str_eq(got->ranks[63].bufs[BUFS - 1].name, "r63.layer999.exp_avg");
  ck_assert(ft__meta_equal(m, got));
  /* read again into the same struct: the old tables are released (ASan,
   * valgrind) and the new ones sized by the new file */
  m->nlocal = 1;
  ck_assert_int_eq(ft__meta_alloc_hosts(m, 7), FT_OK);
  m->node = 6, m->group = 1;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->nnodes, 7);
  ck_assert_ptr_null(got->ranks[1].bufs);
  ck_assert(ft__meta_equal(m, got));
  /* the rank count is the slot format's (FT_MAX_LOCAL); a count whose
   * table is not there is refused, never read past */
  m->nlocal = FT_MAX_LOCAL + 1;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_ERANGE);
  ck_msg_has(msg, "meta: cannot encode");
  m->nlocal = 1;
  free(m->ranks[0].bufs); /* the default allocator */
  m->ranks[0].bufs = NULL;
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_EINVAL);
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

START_TEST(meta_missing) {
  ft__meta_t *got = calloc(1, sizeof(*got));
  char msg[512] = "", path[128];
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_ENOENT);
  path_of(path, sizeof(path), "meta");
  ck_msg_has(msg, path);
  /* a directory where the file should be */
  ck_assert_int_eq(mkdir(path, 0700), 0);
  ck_assert_int_eq(ft__meta_read(&sdir, got, msg, sizeof(msg)), FT_EIO);
  ck_msg_has(msg, path);
  ck_msg_has(msg, "read");
  /* writing into a directory that does not exist */
  ft__meta_t *m = sample_meta();
  path_of(path, sizeof(path), "nodir");
  ft__dir_t nodir;
  ck_assert_int_eq(ft__dir_open(&nodir, path, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "nodir");
  ck_assert_int_eq(ft__meta_write(&nodir, m, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "nodir/meta.tmp");
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

/* The wire form of the metadata (snapshot/store.c): a 224-byte fixed part,
 * nnodes host names of 64 bytes, then per rank 16 bytes and nbufs records,
 * then a CRC64 of all before it.  The sample has 5 nodes. */
enum {
  M_FORMAT = 8,
  M_FLAGS = 12,
  M_TOTAL = 16,
  M_JOB = 24,
  M_HOST = 88,
  M_NODE = 160,
  M_NNODES = 164,
  M_K = 172,
  M_M = 176,
  M_NLOCAL = 192,
  M_LAYOUT = 208,
  M_NEXT_NODE = 216,
  M_NEXT_NNODES = 220,
  M_FIXED = 224,
  M_HOSTS = M_FIXED,
  R_FIXED = 16
};

static uint8_t *mbuf;
static size_t mlen;

static void put32(size_t off, uint32_t v) { memcpy(mbuf + off, &v, 4); }
static void put64(size_t off, uint64_t v) { memcpy(mbuf + off, &v, 8); }
static void refix(void) { /* make total and CRC consistent again */
  put64(M_TOTAL, mlen);
  put64(mlen - 8, ft__crc64(0, mbuf, mlen - 8));
}
/* Offset of rank r's fixed part in the sample. */
static size_t rank_at(uint32_t r) {
  static const uint32_t nbufs[4] = {1, 2, 0, 4};
  size_t off = M_HOSTS + 5 * FT_NAME_MAX;
  for (uint32_t i = 0; i < r; i++)
    off += R_FIXED + nbufs[i] * sizeof(ft__buf_rec_t);
  return off;
}
static size_t buf_at(uint32_t r, uint32_t b) {
  return rank_at(r) + R_FIXED + b * sizeof(ft__buf_rec_t);
}

static void m_trunc0(void) { mlen = 0; }
static void m_trunc100(void) { mlen = 100; }
static void m_trunc_half(void) { mlen /= 2; }
static void m_trunc_crc(void) { mlen -= 1; }
static void m_magic(void) { memcpy(mbuf, "FTRTSLOT", 8); }
static void m_format(void) { put32(M_FORMAT, 9), refix(); }
static void m_flip_body(void) { mbuf[M_HOST + 3] ^= 4; }
static void m_flip_crc(void) { mbuf[mlen - 1] ^= 1; }
static void m_nlocal_less(void) { put32(M_NLOCAL, 3), refix(); }
static void m_extra(void) {
  mlen += 8;
  memset(mbuf + mlen - 16, 0, 8);
  refix();
}
static void m_nlocal_more(void) { put32(M_NLOCAL, 5), refix(); }
static void m_nlocal_65(void) { put32(M_NLOCAL, 65), refix(); }
static void m_k0(void) { put32(M_K, 0), refix(); }
static void m_km_256(void) { put32(M_K, 250), put32(M_M, 6), refix(); }
static void m_km_wrap(void) { put32(M_M, UINT32_MAX), refix(); }
static void m_node(void) { put32(M_NODE, 5), refix(); }
static void m_nnodes0(void) { put32(M_NNODES, 0), put32(M_NODE, 0), refix(); }
/* The versions a metadata describes: a layout epoch after its epoch, or
 * none, describes nothing sane; a re-slice target must fit the nodes. */
static void m_layout0(void) { put64(M_LAYOUT, 0), refix(); }
static void m_layout_late(void) { put64(M_LAYOUT, 4), refix(); }
static void m_next_node(void) {
  put32(M_FLAGS, FT_META_RESLICE), put32(M_NEXT_NODE, 3),
      put32(M_NEXT_NNODES, 3), refix();
}
static void m_next_more(void) {
  put32(M_FLAGS, FT_META_RESLICE), put32(M_NEXT_NODE, 0),
      put32(M_NEXT_NNODES, 6), refix();
}
static void m_job_unterminated(void) {
  memset(mbuf + M_JOB, 'j', FT_JOB_MAX), refix();
}
static void m_host_unterminated(void) {
  memset(mbuf + M_HOST, 'h', FT_NAME_MAX), refix();
}
static void m_nbufs_257(void) { put32(rank_at(1) + 4, UINT32_MAX), refix(); }
static void m_nbufs_more(void) { put32(rank_at(3) + 4, 5), refix(); }
static void m_buf_past_region(void) {
  /* rank 9 buffer 1: offset so that it ends one byte past the region */
  ft__buf_rec_t br;
  memcpy(&br, mbuf + buf_at(1, 1), sizeof(br));
  uint64_t region;
  memcpy(&region, mbuf + rank_at(1) + 8, 8);
  put64(buf_at(1, 1) + offsetof(ft__buf_rec_t, offset), region - br.bytes + 1);
  refix();
}
static void m_buf_huge(void) {
  put64(buf_at(3, 0) + offsetof(ft__buf_rec_t, bytes), UINT64_MAX), refix();
}
static void m_buf_offset_wrap(void) {
  put64(buf_at(3, 2) + offsetof(ft__buf_rec_t, offset), UINT64_MAX), refix();
}
static void m_host_name(void) {
  memset(mbuf + M_HOSTS + 3 * FT_NAME_MAX, 'n', FT_NAME_MAX), refix();
}
/* No fixed node limit: a count is refused only because the bytes do not
 * hold its host table -- before anything is allocated for it. */
static void m_nnodes_max(void) { put32(M_NNODES, UINT32_MAX), refix(); }
static void m_nnodes_no_room(void) { put32(M_NNODES, 1000), refix(); }
static void m_buf_name(void) {
  memset(mbuf + buf_at(0, 0), 'n', FT_NAME_MAX), refix();
}

static const struct {
  const char *what;
  void (*damage)(void);
  int status;
  const char *want1, *want2;
} meta_bad[] = {
    {"empty", m_trunc0, FT_ECORRUPT, "0 bytes, too short", "truncated"},
    {"100 bytes", m_trunc100, FT_ECORRUPT, "100 bytes, too short", "truncated"},
    {"half", m_trunc_half, FT_ECORRUPT, "but the header says", "truncated?"},
    {"one byte short", m_trunc_crc, FT_ECORRUPT, "but the header says",
     "truncated?"},
    {"bad magic", m_magic, FT_ECORRUPT, "bad magic", "not ftrt metadata"},
    {"other format", m_format, FT_EMISMATCH, "store format 9",
     "reads format 3"},
    {"flipped byte", m_flip_body, FT_ECORRUPT, "CRC mismatch", "meta"},
    {"flipped CRC", m_flip_crc, FT_ECORRUPT, "CRC mismatch", "meta"},
    {"rank table after the last rank", m_nlocal_less, FT_ECORRUPT,
     "unexpected trailing bytes", "trailing"},
    {"8 bytes appended", m_extra, FT_ECORRUPT, "8 unexpected trailing bytes",
     "meta"},
    {"rank table missing", m_nlocal_more, FT_ECORRUPT, "rank table truncated",
     "meta"},
    {"65 ranks", m_nlocal_65, FT_ECORRUPT, "fields out of range", "meta"},
    {"k = 0", m_k0, FT_ECORRUPT, "fields out of range", "meta"},
    {"k + m = 256", m_km_256, FT_ECORRUPT, "fields out of range", "meta"},
    {"k + m wraps", m_km_wrap, FT_ECORRUPT, "fields out of range", "meta"},
    {"node >= nnodes", m_node, FT_ECORRUPT, "fields out of range", "meta"},
    {"no nodes", m_nnodes0, FT_ECORRUPT, "fields out of range", "meta"},
    {"layout epoch 0", m_layout0, FT_ECORRUPT, "fields out of range", "meta"},
    {"layout after epoch", m_layout_late, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"re-slice node outside", m_next_node, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"re-slice onto more nodes", m_next_more, FT_ECORRUPT,
     "fields out of range", "meta"},
    {"job unterminated", m_job_unterminated, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"host unterminated", m_host_unterminated, FT_ECORRUPT,
     "fields out of range", "meta"},
    {"host name unterminated", m_host_name, FT_ECORRUPT,
     "host name 3 not terminated", "meta"},
    {"2^32 - 1 nodes", m_nnodes_max, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"host table missing", m_nnodes_no_room, FT_ECORRUPT, "fields out of range",
     "meta"},
    {"2^32 - 1 buffers", m_nbufs_257, FT_ECORRUPT,
     "buffer table of rank 9 bad", "meta"},
    {"more buffers than bytes", m_nbufs_more, FT_ECORRUPT,
     "buffer table of rank 11 bad", "meta"},
    {"buffer past its region", m_buf_past_region, FT_ECORRUPT,
     "buffer 1 of rank 9", "lies outside its region"},
    {"buffer larger than its region", m_buf_huge, FT_ECORRUPT,
     "buffer 0 of rank 11", "lies outside its region"},
    {"buffer offset wraps", m_buf_offset_wrap, FT_ECORRUPT,
     "buffer 2 of rank 11", "lies outside its region"},
    {"buffer name unterminated", m_buf_name, FT_ECORRUPT,
     "name of buffer 0 of rank 8", "not terminated"},
};

START_TEST(meta_damaged) {
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  ck_assert_int_eq(ft__meta_encode(m, &mbuf, &mlen), FT_OK);
  /* the layout the damage functions assume */
  ck_assert_uint_eq(mlen, rank_at(4) + 8);
  ck_assert_int_eq(memcmp(mbuf, "FTRTMETA", 8), 0);
  uint64_t total;
  memcpy(&total, mbuf + M_TOTAL, 8);
  ck_assert_uint_eq(total, mlen);
  ck_assert_int_eq(memcmp(mbuf + M_JOB, JOB, sizeof(JOB)), 0);
  ck_assert_str_eq((const char *)mbuf + M_HOSTS + FT_NAME_MAX,
                   "node06.cluster");
  uint32_t v;
  memcpy(&v, mbuf + M_NLOCAL, 4);
  ck_assert_uint_eq(v, 4);
  memcpy(&v, mbuf + rank_at(3), 4);
  ck_assert_uint_eq(v, 11);
  ck_assert_str_eq((const char *)mbuf + buf_at(3, 1), "layer1.bias");

  mbuf = realloc(mbuf, mlen + 64); /* room for appended bytes */
  meta_bad[_i].damage();
  char path[128], msg[512] = "";
  path_of(path, sizeof(path), "meta");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(mbuf, 1, mlen, f), mlen);
  fclose(f);
  int rc = ft__meta_read(&sdir, got, msg, sizeof(msg));
  ck_assert_msg(rc == meta_bad[_i].status, "%s: status %s, want %s (%s)",
                meta_bad[_i].what, ft_err_name(rc),
                ft_err_name(meta_bad[_i].status), msg);
  ck_msg_has(msg, path);
  ck_msg_has(msg, meta_bad[_i].want1);
  ck_msg_has(msg, meta_bad[_i].want2);
  /* and the bytes alone, without a file */
  rc = ft__meta_decode(mbuf, mlen, got, "mem", msg, sizeof(msg));
  ck_assert_int_eq(rc, meta_bad[_i].status);
  ck_assert(strncmp(msg, "mem: ", 5) == 0);
  free(mbuf);
  mbuf = NULL;
  ft__meta_free(m);
  ft__meta_free(got);
}
END_TEST

/* ================= directories ================= */

/* A store root that is not this user's own, private directory is refused
 * with a message, and nothing is created in it (issue 14.5). */
START_TEST(store_root_private) {
  char r[160], job[200], msg[512] = "";
  snprintf(r, sizeof(r), "%s/root", dir);
  snprintf(job, sizeof(job), "%s/job", r);
  ck_assert_int_eq(mkdir(r, 0777), 0);
  ck_assert_int_eq(chmod(r, 0777), 0); /* past the umask */
  ft__dir_t d;
  ck_assert_int_eq(ft__store_open_dir(r, job, 1, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_assert_int_eq(d.fd, -1);
  ck_msg_has(msg, r);
  ck_msg_has(msg, "writable by group or others");
  ck_assert_int_ne(access(job, F_OK), 0);
  ck_assert_int_eq(chmod(r, 0700), 0);
  /* without create, a missing job directory is FT_ENOENT, none made */
  ck_assert_int_eq(ft__store_open_dir(r, job, 0, &d, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_int_ne(access(job, F_OK), 0);
  ck_assert_int_eq(ft__store_open_dir(r, job, 1, &d, msg, sizeof(msg)), FT_OK);
  ck_assert_int_ge(d.fd, 0);
  ck_assert_str_eq(d.path, job);
  ft__dir_close(&d);
  struct stat st;
  ck_assert_int_eq(lstat(job, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  /* a job directory planted as a symlink */
  char elsewhere[200], job2[200];
  snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
  snprintf(job2, sizeof(job2), "%s/job2", r);
  ck_assert_int_eq(mkdir(elsewhere, 0700), 0);
  ck_assert_int_eq(symlink(elsewhere, job2), 0);
  ck_assert_int_eq(ft__store_open_dir(r, job2, 1, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "symbolic link");
  ck_assert_int_eq(ft__store_open_dir(r, job2, 0, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "symbolic link");
  /* another user's root (only root can make one) */
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(r, 65534, 65534), 0);
    ck_assert_int_eq(ft__store_open_dir(r, job, 0, &d, msg, sizeof(msg)),
                     FT_ECONFIG);
    ck_msg_has(msg, "owned by uid 65534");
    ck_assert_int_eq(chown(r, 0, 0), 0);
  }
}
END_TEST

/* Entries of path other than . and .. */
static int entries(const char *path) {
  DIR *d = opendir(path);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

/* Once a store directory is verified and open, its files are made, read,
 * renamed, locked and removed there only: a directory swapped in under its
 * path afterwards (the real one renamed away, a symbolic link to another
 * directory put in its place) receives nothing and nothing of it is read
 * (issue 14.5: everything relative to the verified directory's
 * descriptor). */
START_TEST(store_dir_swapped) {
  char r[160], job[200], moved[200], other[200], path[300], msg[512] = "";
  snprintf(r, sizeof(r), "%s/root", dir);
  snprintf(job, sizeof(job), "%s/job", r);
  snprintf(moved, sizeof(moved), "%s/moved", r);
  snprintf(other, sizeof(other), "%s/other", dir);
  ck_assert_int_eq(mkdir(r, 0700), 0);
  ft__dir_t d;
  ck_assert_msg(ft__store_open_dir(r, job, 1, &d, msg, sizeof(msg)) == FT_OK,
                "%s", msg);
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  ck_assert_int_eq(ft__meta_write(&d, m, msg, sizeof(msg)), FT_OK);
  /* the swap */
  ck_assert_int_eq(rename(job, moved), 0);
  ck_assert_int_eq(mkdir(other, 0700), 0);
  ck_assert_int_eq(symlink(other, job), 0);
  /* a planted metadata file in the other directory is never read */
  snprintf(path, sizeof(path), "%s/meta.pending", other);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("planted", f);
  fclose(f);
  ck_assert_int_eq(ft__meta_read_as(&d, FT_META_PENDING, got, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_int_eq(ft__meta_read(&d, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, m->epoch);
  /* every kind of write lands in the verified directory */
  m->epoch++;
  ck_assert_int_eq(ft__meta_write_as(&d, FT_META_PENDING, m, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(ft__store_write_file(&d, FT_GROUP_META, "t", 1, msg,
                                        sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(ft__meta_promote(&d, msg, sizeof(msg)), FT_OK);
  ft__ctl_t *ctl = NULL;
  ck_assert_int_eq(ft__ctl_create(&d, 1, &ctl, msg, sizeof(msg)), FT_OK);
  ft__ctl_detach(ctl);
  ck_assert_int_eq(ft__ctl_attach(&d, &ctl, msg, sizeof(msg)), FT_OK);
  ft__ctl_detach(ctl);
  ft__slot_geom_t g;
  geom3(&g, 2, 1);
  ft__slot_t s;
  ck_assert_int_eq(ft__slot_create(&s, &d, 0, JOB, &g, msg, sizeof(msg)),
                   FT_OK);
  ft__slot_close(&s);
  ck_assert_int_eq(ft__slot_open(&s, &d, 0, JOB, msg, sizeof(msg)), FT_OK);
  ft__slot_close(&s);
  ck_assert_int_eq(ft__slot_blank(&d, 0), 0);
  ft__dir_t sub;
  ck_assert_int_eq(ft__dir_sub(&d, "adopt1", 1, &sub, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_write(&sub, m, msg, sizeof(msg)), FT_OK);
  ft__dir_close(&sub);
  ck_assert_int_eq(entries(other), 1); /* only the planted file */
  static const char *const there[] = {"meta", "group.meta", "ctl", "slot0",
                                      "adopt1/meta"};
  struct stat st;
  for (size_t i = 0; i < sizeof(there) / sizeof(there[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", moved, there[i]);
    ck_assert_msg(lstat(path, &st) == 0, "%s missing", path);
  }
  ck_assert_int_eq(ft__meta_read(&d, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, m->epoch); /* the promoted one */
  /* the lock is the verified directory's */
  int lk = -1;
  ck_assert_int_eq(ft__store_lock(&d, 0, &lk, msg, sizeof(msg)), FT_OK);
  int fd = open(moved, O_RDONLY | O_DIRECTORY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_ne(flock(fd, LOCK_EX | LOCK_NB), 0);
  close(fd);
  close(lk);
  /* and so is what is removed */
  ck_assert_int_eq(ft__store_clear(&d, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(entries(moved), 1); /* ctl: rebuilt at each launch */
  ck_assert_int_eq(entries(other), 1);
  /* opened again by its path, the store is refused: a link is in the way */
  ft__dir_close(&d);
  ck_assert_int_eq(ft__store_open_dir(r, job, 0, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "symbolic link");
  free(m);
  free(got);
}
END_TEST

/* A sub-directory of a store (adopt<N>/) is opened relative to it and
 * checked as the store is: not a link, ours, private. */
START_TEST(store_sub_private) {
  char path[300], target[200], msg[512] = "";
  ft__dir_t sub;
  snprintf(target, sizeof(target), "%s/elsewhere", dir);
  ck_assert_int_eq(mkdir(target, 0700), 0);
  snprintf(path, sizeof(path), "%s/adopt1", dir);
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt1", 1, &sub, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_assert_int_eq(sub.fd, -1);
  ck_msg_has(msg, path);
  ck_msg_has(msg, "symbolic link");
  snprintf(path, sizeof(path), "%s/adopt2", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  ck_assert_int_eq(chmod(path, 0777), 0);
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt2", 0, &sub, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "writable by group or others");
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt3", 0, &sub, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt3", 1, &sub, msg, sizeof(msg)),
                   FT_OK);
  struct stat st;
  ck_assert_int_eq(fstat(sub.fd, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  ft__dir_close(&sub);
  ck_assert_int_eq(entries(target), 0);
}
END_TEST

/* A file planted as a symlink where the store writes one is refused and its
 * target is untouched (O_NOFOLLOW). */
/* Adopted stores are removed whatever a crash left in them (a temporary
 * file of a write cut short), and a link named like one is removed, never
 * followed. */
START_TEST(remove_adopted_all) {
  char path[256], target[200], msg[512] = "";
  static const char *const files[] = {"adopt1/meta", "adopt1/meta.tmp",
                                      "adopt1/slot1", "adopt3/slot0.tmp"};
  snprintf(path, sizeof(path), "%s/adopt1", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/adopt3", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
  }
  snprintf(target, sizeof(target), "%s/elsewhere", dir);
  ck_assert_int_eq(mkdir(target, 0700), 0);
  snprintf(path, sizeof(path), "%s/elsewhere/precious", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(path, sizeof(path), "%s/adopt2", dir);
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(ft__store_remove_adopted(&sdir, msg, sizeof(msg)), FT_OK);
  struct stat st;
  static const char *const gone[] = {"adopt1", "adopt2", "adopt3"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, gone[i]);
    ck_assert_int_ne(lstat(path, &st), 0);
  }
  snprintf(path, sizeof(path), "%s/elsewhere/precious", dir);
  ck_assert_int_eq(lstat(path, &st), 0);
}
END_TEST

START_TEST(store_no_follow) {
  char target[200], link[200], msg[512] = "";
  snprintf(target, sizeof(target), "%s/target", dir);
  FILE *f = fopen(target, "w");
  ck_assert_ptr_nonnull(f);
  fputs("precious", f);
  fclose(f);
  static const char *const names[] = {"meta.tmp", "slot0", "ctl.new"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(link, sizeof(link), "%s/%s", dir, names[i]);
    ck_assert_int_eq(symlink(target, link), 0);
  }
  /* meta.tmp and ctl.new are made anew: the planted links are removed,
   * not followed */
  ft__meta_t *m = sample_meta();
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ft__meta_free(m);
  ft__ctl_t *ctl = NULL;
  ck_assert_int_eq(ft__ctl_create(&sdir, 1, &ctl, msg, sizeof(msg)), FT_OK);
  ft__ctl_detach(ctl);
  struct stat st;
  path_of(link, sizeof(link), "meta");
  ck_assert_int_eq(lstat(link, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
  path_of(link, sizeof(link), "ctl");
  ck_assert_int_eq(lstat(link, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
  /* a slot is never opened through a link */
  ft__slot_geom_t g;
  uint64_t bytes[1] = {4096};
  ck_assert_int_eq(ft__slot_geom_local(&g, 1, bytes), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, 0, 4096), FT_OK);
  ft__slot_t s;
  ck_assert_int_ne(ft__slot_create(&s, &sdir, 0, JOB, &g, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_ne(ft__slot_open(&s, &sdir, 0, JOB, msg, sizeof(msg)), FT_OK);
  ck_first_line(target, "precious");
}
END_TEST

static int calls_between;
static int count_between(void *rc) {
  calls_between++;
  return *(int *)rc;
}

/* One launch per job: a second lock on the store is refused after its wait
 * with FT_EINUSE and a message; the lock ends with its descriptor.  A
 * waiter's hook runs between its tries, and its failure ends the wait. */
START_TEST(store_lock) {
  char msg[512] = "", none[300];
  int a, b;
  ck_assert_int_eq(ft__store_lock(&sdir, 0, &a, msg, sizeof(msg)), FT_OK);
  ck_assert_int_ge(a, 0);
  ck_assert_int_eq(ft__store_lock(&sdir, 0.05, &b, msg, sizeof(msg)),
                   FT_EINUSE);
  ck_assert_int_eq(b, -1);
  ck_msg_has(msg, dir);
  ck_msg_has(msg, "another launch of this job");
  ck_assert_int_eq(ft__store_lock(&sdir, 0, &b, NULL, 0), FT_EINUSE);
  int hook_rc = FT_OK;
  ck_assert_int_eq(ft__store_lock_while(&sdir, 0.1, &b, count_between,
                                        &hook_rc, msg, sizeof(msg)),
                   FT_EINUSE);
  ck_assert_int_ge(calls_between, 1);
  ck_msg_has(msg, "another launch of this job");
  hook_rc = FT_EMPI;
  calls_between = 0;
  ck_assert_int_eq(ft__store_lock_while(&sdir, 60, &b, count_between,
                                        &hook_rc, msg, sizeof(msg)),
                   FT_EMPI);
  ck_assert_int_eq(calls_between, 1);
  ck_assert_int_eq(b, -1);
  close(a);
  ck_assert_int_eq(ft__store_lock(&sdir, 0, &b, msg, sizeof(msg)), FT_OK);
  close(b);
  snprintf(none, sizeof(none), "%s/none", dir);
  ft__dir_t nd;
  ft__dir_init(&nd, none);
  ck_assert_int_eq(ft__store_lock(&nd, 0, &b, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, none);
}
END_TEST

/* ft-restore makes a spare's store and locks it before writing in it: a
 * second maker (a job launched on the spare meanwhile) gets FT_EINUSE. */
START_TEST(store_open_locked) {
  char msg[512] = "", p[FT_PATH_MAX];
  snprintf(p, sizeof(p), "%s/spare", dir);
  ft__dir_t a, b;
  ft__dir_init(&a, p);
  ft__dir_init(&b, p);
  ck_assert_int_eq(ft__store_open_locked(dir, &a, msg, sizeof(msg)), FT_OK);
  ck_assert_int_ge(a.fd, 0);
  ck_assert_int_eq(ft__store_open_locked(dir, &b, msg, sizeof(msg)),
                   FT_EINUSE);
  ck_assert_int_eq(b.fd, -1);
  ck_msg_has(msg, "another launch of this job");
  int lk;
  ck_assert_int_eq(ft__store_lock(&a, 0, &lk, NULL, 0), FT_EINUSE);
  ft__dir_close(&a);
}
END_TEST

/* A symbolic link above the store root that another user owns is refused
 * (its owner could point it elsewhere); as root only (lchown). */
START_TEST(store_foreign_link_above) {
  if (geteuid() != 0)
    return;
  char real[FT_PATH_MAX], link[FT_PATH_MAX], root[FT_PATH_MAX + 16];
  char msg[512] = "";
  snprintf(real, sizeof(real), "%s/real", dir);
  snprintf(link, sizeof(link), "%s/link", dir);
  snprintf(root, sizeof(root), "%s/store", link);
  ck_assert_int_eq(mkdir(real, 0755), 0);
  ck_assert_int_eq(symlink(real, link), 0);
  ft__dir_t d;
  ft__dir_init(&d, root);
  ck_assert_int_eq(ft__store_open_dir(root, root, 1, &d, msg, sizeof(msg)),
                   FT_OK);
  ft__dir_close(&d);
  ck_assert_int_eq(lchown(link, 65534, 65534), 0);
  ft__dir_init(&d, root);
  ck_assert_int_eq(ft__store_open_dir(root, root, 1, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "a symbolic link owned by uid 65534");
  ck_msg_has(msg, link);
}
END_TEST

START_TEST(store_dir) {
  char root[FT_PATH_MAX] = "/dev/shm/ftrt", job[FT_JOB_MAX] = "llm.run_2";
  char out[FT_PATH_MAX + 64];
  ck_assert_int_eq(ft__store_dir(root, job, -1, out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/llm.run_2");
  ck_assert_int_eq(ft__store_dir(root, job, 0, out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/vnode0/llm.run_2");
  ck_assert_int_eq(ft__store_dir(root, job, 17, out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/vnode17/llm.run_2");
  snprintf(root, sizeof(root), "%s", dir);
  ck_assert_int_eq(ft__store_dir(root, job, 3, out, sizeof(out)), FT_OK);
  char want[256];
  snprintf(want, sizeof(want), "%s/vnode3/llm.run_2", dir);
  ck_assert_str_eq(out, want);

  /* exactly fits, one byte short */
  size_t n = strlen(want) + 1;
  ck_assert_int_eq(ft__store_dir(root, job, 3, out, n), FT_OK);
  ck_assert_int_eq(ft__store_dir(root, job, 3, out, n - 1), FT_ERANGE);
  /* a store root of maximal length does not fit an FT_PATH_MAX buffer */
  memset(root, 'r', sizeof(root) - 1);
  root[0] = '/';
  root[sizeof(root) - 1] = '\0';
  ck_assert_int_eq(ft__store_dir(root, job, -1, out, FT_PATH_MAX), FT_ERANGE);

  /* mkdir -p of the virtual-node path, twice */
  char msg[512] = "";
  ck_assert_int_eq(ft__store_mkdir(want, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__store_mkdir(want, msg, sizeof(msg)), FT_OK);
  struct stat st;
  ck_assert_int_eq(stat(want, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  /* a file in the way */
  char file[256], below[300];
  snprintf(file, sizeof(file), "%s/file", dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(below, sizeof(below), "%s/x", file);
  ck_assert_int_ne(ft__store_mkdir(below, msg, sizeof(msg)), FT_OK);
  ck_msg_has(msg, below);
  ck_msg_has(msg, "mkdir");
}
END_TEST

/* ================= control segment ================= */

/* Every refusal of create and attach: status and message name the cause,
 * and *out is NULL, not a mapping already undone. */
START_TEST(ctl_refusals) {
  char msg[512] = "", path[256], missing[256];
  ft__ctl_t *ctl = NULL;
  snprintf(missing, sizeof(missing), "%s/none", dir);
  ft__dir_t none; /* as ft__dir_open leaves it when there is none */
  ck_assert_int_eq(ft__dir_open(&none, missing, msg, sizeof(msg)), FT_ENOENT);
  ck_assert_int_eq(ft__ctl_create(&none, 1, &ctl, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_msg_has(msg, "none/ctl.new: ");
  ck_msg_has(msg, strerror(ENOENT));
  ck_assert_int_eq(ft__ctl_attach(&none, &ctl, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "none/ctl: ");
  ck_msg_has(msg, strerror(ENOENT));

  /* a ctl of another size, then one of the right size but not a ctl */
  path_of(path, sizeof(path), "ctl");
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, 100), 0);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, msg, sizeof(msg)), FT_EMISMATCH);
  ck_msg_has(msg, "/ctl: wrong size");
  ck_assert_int_eq(ftruncate(fd, sizeof(ft__ctl_t)), 0);
  ctl = (ft__ctl_t *)msg; /* anything but NULL */
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, "/ctl: bad magic");
  ck_assert_ptr_null(ctl);
  close(fd);
  unlink(path);

  /* a directory in the way of the rename */
  char inside[300];
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(inside, sizeof(inside), "%s/x", path);
  ck_assert_int_eq(mkdir(inside, 0700), 0);
  ctl = (ft__ctl_t *)msg;
  ck_assert_int_eq(ft__ctl_create(&sdir, 1, &ctl, msg, sizeof(msg)), FT_EIO);
  ck_msg_has(msg, "/ctl: rename: ");
  ck_assert_ptr_null(ctl);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, msg, sizeof(msg)), FT_EIO);
  ck_msg_has(msg, "/ctl: ");
}
END_TEST

/* msg may be NULL, whatever msglen says (store.h, ctl.h). */
START_TEST(msg_may_be_null) {
  char missing[256], path[256];
  ft__ctl_t *ctl;
  ft__slot_t s;
  ft__meta_t *m = calloc(1, sizeof(*m));
  ck_assert_ptr_nonnull(m);
  snprintf(missing, sizeof(missing), "%s/none", dir);
  ft__dir_t none;
  ck_assert_int_eq(ft__dir_open(&none, missing, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__ctl_create(&none, 1, &ctl, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__ctl_attach(&none, &ctl, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__slot_open(&s, &none, 0, JOB, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__meta_read(&none, m, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__group_meta_read(&none, FT_GROUP_META, 0, m, NULL, 512),
                   FT_ENOENT);
  path_of(path, sizeof(path), "ctl");
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, NULL, 512), FT_EMISMATCH);
  ck_assert_int_eq(ftruncate(fd, sizeof(ft__ctl_t)), 0);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, NULL, 512), FT_ECORRUPT);
  close(fd);
  free(m);
}
END_TEST

/* The status is the failing call's errno, not what the close after it left:
 * ftruncate past RLIMIT_FSIZE fails with EFBIG (FT_EIO), and close then
 * fails with ENOSPC (FT_ENOSPC).  Check forks: the limit is this test's. */
START_TEST(ctl_status_of_failing_call) {
  char msg[512] = "";
  ft__ctl_t *ctl = NULL;
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {4096, 4096};
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  close_errno = ENOSPC;
  int rc = ft__ctl_create(&sdir, 1, &ctl, msg, sizeof(msg));
  close_errno = 0;
  ck_assert_msg(rc == FT_EIO, "status %s for '%s'", ft_err_name(rc), msg);
  ck_msg_has(msg, "/ctl.new: ");
  ck_msg_has(msg, strerror(EFBIG));
}
END_TEST

int main(void) {
  snprintf(root, sizeof(root), "/tmp/ftrt-store-XXXXXX");
  if (!mkdtemp(root)) {
    perror("test_store: mkdtemp /tmp/ftrt-store-XXXXXX");
    return EXIT_FAILURE;
  }
  Suite *s = suite_create("store");
  TCase *tc = tcase_create("store");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, geom_local_regions);
  tcase_add_test(tc, geom_code_layout);
  tcase_add_test(tc, geom_refusals);
  tcase_add_test(tc, prefault_ranges);
  tcase_add_test(tc, prefault_made_maps);
  tcase_add_test(tc, create_reserves);
  tcase_add_test(tc, create_unsized_leaves_nothing);
  tcase_add_test(tc, create_unemptied_keeps_old);
  tcase_add_test(tc, create_from_prepared);
  tcase_add_test(tc, create_from_refuses_links);
  tcase_add_test(tc, create_from_never_replaces);
  tcase_add_test(tc, spare_dir_names);
  tcase_add_test(tc, spare_take_locked);
  tcase_add_test(tc, state_names);
  tcase_add_test(tc, state_machine);
  tcase_add_test(tc, recreate_other_geometry);
  tcase_add_test(tc, reuse_rule);
  tcase_add_loop_test(tc, crash_mid_fill, 0, 4);
  tcase_add_test(tc, slot_held_states);
  tcase_add_test(tc, slots_held_unmapped);
  tcase_add_loop_test(tc, newest_common_cases, 0,
                      (int)(sizeof(nc_cases) / sizeof(nc_cases[0])));
  tcase_add_test(tc, newest_common_exhaustive);
  tcase_add_test(tc, newest_common_many_nodes);
  tcase_add_loop_test(tc, newest_committed_cases, 0,
                      (int)(sizeof(seen_cases) / sizeof(seen_cases[0])));
  tcase_add_test(tc, newest_committed_exhaustive);
  tcase_add_test(tc, rule_over_stores);
  tcase_add_test(tc, crc_detects_flips);
  tcase_add_loop_test(tc, slot_damaged, 0,
                      (int)(sizeof(slot_bad) / sizeof(slot_bad[0])));
  tcase_add_test(tc, slot_validate_bytes);
  tcase_add_loop_test(tc, slot_header_flips, 0,
                      (int)(sizeof(hdr_flips) / sizeof(hdr_flips[0])));
  tcase_add_test(tc, slot_header_times_free);
  tcase_add_test(tc, state_word_flips);
  tcase_add_test(tc, slot_header_offsets);
  tcase_add_test(tc, slot_header_writers);
  tcase_add_test(tc, meta_slice_outside_global);
  tcase_add_test(tc, meta_round_trip);
  tcase_add_test(tc, meta_large_tables);
  tcase_add_test(tc, meta_missing);
  tcase_add_loop_test(tc, meta_damaged, 0,
                      (int)(sizeof(meta_bad) / sizeof(meta_bad[0])));
  tcase_add_test(tc, store_dir);
  tcase_add_test(tc, store_lock);
  tcase_add_test(tc, store_open_locked);
  tcase_add_test(tc, store_foreign_link_above);
  tcase_add_test(tc, store_root_private);
  tcase_add_test(tc, store_no_follow);
  tcase_add_test(tc, store_dir_swapped);
  tcase_add_test(tc, store_sub_private);
  tcase_add_test(tc, remove_adopted_all);
  tcase_add_test(tc, ctl_refusals);
  tcase_add_test(tc, msg_may_be_null);
  tcase_add_test(tc, ctl_status_of_failing_call);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  rm_tree(root);
  return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
