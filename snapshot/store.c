/*
 * Slot segments and node metadata on tmpfs.
 *
 * A slot file is sized once for its geometry and then reused: the header page
 * records where every local rank's region starts, how the data region is cut
 * into k chunks and where this node's m parity chunks live, and one CRC64 per
 * chunk, all under a CRC64 of the header itself.  The state word is the
 * only field that changes while others read, so it alone is accessed with
 * atomics and it checks itself instead (store.h says why); the SMP writes
 * every other field, and the header CRC after it, before the release store
 * of the state that publishes them.
 *
 * Readers never trust a file: ft__slot_validate and ft__meta_decode check
 * every size and offset against the real file length before anything is
 * dereferenced, so a truncated, foreign or scribbled file is an error with a
 * message, never a crash.
 */
#include "snapshot/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/pages.h"
#include "ec/crc.h"

#define SLOT_MAGIC "FTRTSLOT"
#define META_MAGIC "FTRTMETA"
#define PAGE 4096u

/* What a store of another ftrt's format leaves the user to do. */
#define UPGRADE                                                                \
  ": finish the job with the ftrt that wrote it, or start over with "          \
  "--fresh (FT_FRESH=1), which discards it"

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *ft__slot_state_name(uint32_t state) {
  static const char *const names[] = {"EMPTY", "FILLING", "LOCAL", "ENCODED",
                                      "COMMITTED"};
  return state <= FT_SLOT_COMMITTED ? names[state] : "INVALID";
}

/* ---- geometry ---- */

int ft__slot_geom_local(ft__slot_geom_t *g, uint32_t nlocal,
                        const uint64_t *rank_bytes) {
  if (nlocal > FT_MAX_LOCAL)
    return FT_ERANGE;
  memset(g, 0, sizeof(*g));
  g->nlocal = nlocal;
  g->data_off = FT_SLOT_HDR_BYTES;
  uint64_t off = g->data_off;
  for (uint32_t r = 0; r < nlocal; r++) {
    g->rank_off[r] = off;
    g->rank_bytes[r] = rank_bytes[r];
    off = round_up(off + rank_bytes[r], PAGE);
  }
  g->local_bytes = off - g->data_off;
  return FT_OK;
}

int ft__slot_geom_code(ft__slot_geom_t *g, uint32_t k, uint32_t m,
                       uint64_t chunk_bytes) {
  if (k < 1 || (uint64_t)k + m > FT_MAX_CHUNKS - 1 ||
      chunk_bytes * k < g->local_bytes)
    return FT_EINVAL;
  g->k = k;
  g->m = m;
  g->chunk_bytes = chunk_bytes;
  g->data_bytes = chunk_bytes * k;
  g->parity_off = round_up(g->data_off + g->data_bytes, PAGE);
  g->parity_bytes = chunk_bytes * m;
  g->seg_bytes = round_up(g->parity_off + g->parity_bytes, PAGE);
  return FT_OK;
}

/* ---- validation (fuzzed) ---- */

static int check_ranks(const ft__slot_hdr_t *h, const char *path, char *msg,
                       size_t msglen) {
  for (uint32_t r = 0; r < h->nlocal; r++) {
    uint64_t off = h->rank_off[r], len = h->rank_bytes[r];
    if (off < h->data_off || len > h->data_bytes ||
        off - h->data_off > h->data_bytes - len)
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: rank region %u [%llu, +%llu) lies outside the data "
                      "region",
                      path, r, (unsigned long long)off,
                      (unsigned long long)len);
  }
  return FT_OK;
}

static int check_regions(const ft__slot_hdr_t *h, size_t file_bytes,
                         const char *path, char *msg, size_t msglen) {
  /* k + m in 64 bits: k = 2^32 - 1, m = 254 must not wrap to 253 */
  if (h->k < 1 || (uint64_t)h->k + h->m >= FT_MAX_CHUNKS ||
      h->nlocal > FT_MAX_LOCAL)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: impossible code or rank count (k=%u m=%u ranks=%u)",
                    path, h->k, h->m, h->nlocal);
  if (h->seg_bytes != file_bytes)
    return ft__msgf(
        FT_ECORRUPT, msg, msglen,
        "%s: file is %zu bytes but its header says %llu (truncated?)", path,
        file_bytes, (unsigned long long)h->seg_bytes);
  uint64_t c = h->chunk_bytes;
  if (c > file_bytes || h->data_bytes != c * h->k ||
      h->parity_bytes != c * h->m || h->data_off < FT_SLOT_HDR_BYTES ||
      h->data_off > file_bytes || h->data_bytes > file_bytes - h->data_off ||
      h->parity_off < h->data_off + h->data_bytes ||
      h->parity_off > file_bytes ||
      h->parity_bytes > file_bytes - h->parity_off)
    return ft__msgf(
        FT_ECORRUPT, msg, msglen,
        "%s: data/parity regions do not fit the file (chunk %llu, k=%u, "
        "m=%u, file %zu bytes)",
        path, (unsigned long long)c, h->k, h->m, file_bytes);
  return check_ranks(h, path, msg, msglen);
}

/* ---- the header checksum and the state word ---- */

uint32_t ft__slot_state_word(uint32_t state) {
  return (state & 0xffffu) | (~state & 0xffffu) << 16;
}

uint32_t ft__slot_state_decode(uint32_t word) {
  uint32_t state = word & 0xffffu;
  if (word >> 16 != (~state & 0xffffu) || state > FT_SLOT_COMMITTED)
    return FT_SLOT_STATE_INVALID;
  return state;
}

/* Covered: [magic, state_word) and [job, filled_ns). */
uint64_t ft__slot_hdr_crc(const ft__slot_hdr_t *h) {
  const uint8_t *p = (const uint8_t *)h;
  size_t a = offsetof(ft__slot_hdr_t, state_word);
  size_t b = offsetof(ft__slot_hdr_t, job);
  size_t e = offsetof(ft__slot_hdr_t, filled_ns);
  return ft__crc64(ft__crc64(0, p, a), p + b, e - b);
}

/* Magic, format, checksum and state word: what says whether the rest of the
 * header can be believed at all. */
static int check_identity(const ft__slot_hdr_t *h, const char *path, char *msg,
                          size_t msglen) {
  if (memcmp(h->magic, SLOT_MAGIC, 8) != 0)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: bad magic, not an ftrt slot",
                    path);
  /* Formats before 4 wrote no checksum: there, hdr_crc's bytes are 0. */
  if (h->format != FT_SLOT_FORMAT && h->hdr_crc == 0)
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: store format %u (an older ftrt's, without a header "
                    "checksum), this ftrt reads format %u" UPGRADE,
                    path, h->format, FT_SLOT_FORMAT);
  uint64_t crc = ft__slot_hdr_crc(h);
  if (crc != h->hdr_crc)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: header checksum mismatch (stored %016llx, computed "
                    "%016llx): the slot header is damaged",
                    path, (unsigned long long)h->hdr_crc,
                    (unsigned long long)crc);
  if (h->format != FT_SLOT_FORMAT)
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: store format %u, this ftrt reads format %u" UPGRADE,
                    path, h->format, FT_SLOT_FORMAT);
  if (ft__slot_state_decode(h->state_word) == FT_SLOT_STATE_INVALID)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: invalid slot state word %08x: the slot header is "
                    "damaged",
                    path, h->state_word);
  return FT_OK;
}

int ft__slot_validate(const void *image, size_t file_bytes, const char *job,
                      const char *path, char *msg, size_t msglen) {
  if (file_bytes < sizeof(ft__slot_hdr_t))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes, too short for a slot header (truncated)",
                    path, file_bytes);
  ft__slot_hdr_t h;
  memcpy(&h, image, sizeof(h));
  int rc = check_identity(&h, path, msg, msglen);
  if (rc)
    return rc;
  if (memchr(h.job, '\0', sizeof(h.job)) == NULL ||
      (job && strcmp(h.job, job) != 0))
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: belongs to job '%.*s', not to job '%s'", path,
                    (int)strnlen(h.job, sizeof(h.job)), h.job, job ? job : "?");
  return check_regions(&h, file_bytes, path, msg, msglen);
}

/* ---- slot files ---- */

/* ---- files of a store directory, all relative to its descriptor ---- */

void ft__dir_init(ft__dir_t *d, const char *path) {
  d->fd = -1;
  if (path != d->path) /* ft__store_open_dir(root, d->path, ...) */
    snprintf(d->path, sizeof(d->path), "%s", path);
}

void ft__dir_close(ft__dir_t *d) {
  if (d->fd >= 0)
    close(d->fd);
  d->fd = -1;
}

int ft__store_openat(const ft__dir_t *d, const char *name, int flags,
                     mode_t mode) {
  if (d->fd < 0) {
    errno = ENOENT;
    return -1;
  }
  return openat(d->fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

/* The path of name in d, for messages. */
static const char *path_in(char *out, size_t len, const ft__dir_t *d,
                           const char *name) {
  snprintf(out, len, "%s/%s", d->path, name);
  return out;
}

static void slot_name(char *out, size_t len, int idx) {
  snprintf(out, len, "slot%d", idx);
}

static int map_file(ft__slot_t *s, size_t bytes, char *msg, size_t msglen) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
  if (p == MAP_FAILED)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: mmap: %s", s->path,
                    strerror(errno));
  s->map = p;
  s->map_bytes = bytes;
  s->hdr = (ft__slot_hdr_t *)p;
  s->prefault_ok = ft__prefault_fd_safe(s->fd);
  return FT_OK;
}

static void write_header(ft__slot_hdr_t *h, const char *job,
                         const ft__slot_geom_t *g) {
  memset(h, 0, sizeof(*h));
  memcpy(h->magic, SLOT_MAGIC, 8);
  h->format = FT_SLOT_FORMAT;
  h->state_word = ft__slot_state_word(FT_SLOT_EMPTY);
  snprintf(h->job, sizeof(h->job), "%s", job);
  h->seg_bytes = g->seg_bytes;
  h->data_off = g->data_off;
  h->data_bytes = g->data_bytes;
  h->parity_off = g->parity_off;
  h->parity_bytes = g->parity_bytes;
  h->chunk_bytes = g->chunk_bytes;
  h->k = g->k;
  h->m = g->m;
  h->nlocal = g->nlocal;
  memcpy(h->rank_off, g->rank_off, sizeof(h->rank_off));
  memcpy(h->rank_bytes, g->rank_bytes, sizeof(h->rank_bytes));
  h->hdr_crc = ft__slot_hdr_crc(h);
}

int ft__store_reserve(int fd, uint64_t bytes, void (*between)(void *),
                      void *arg) {
  for (uint64_t off = 0; off < bytes; off += FT_PREFAULT_PIECE) {
    uint64_t left = bytes - off;
    int rc;
    do
      rc = fallocate(
          fd, 0, (off_t)off,
          (off_t)(left < FT_PREFAULT_PIECE ? left : FT_PREFAULT_PIECE));
    while (rc != 0 && errno == EINTR);
    if (rc != 0)
      return errno == EOPNOTSUPP || errno == ENOSYS ? 1 : -1;
    if (between)
      between(arg);
  }
  return 0;
}

int ft__slot_create(ft__slot_t *s, const ft__dir_t *dir, int idx,
                    const char *job, const ft__slot_geom_t *g, char *msg,
                    size_t msglen) {
  return ft__slot_create_paced(s, dir, idx, job, g, NULL, NULL, msg, msglen);
}

/* A slot that could not be made: closed, and its file removed, so that
 * what it reserved is given back and no empty or headerless file is left
 * to be taken for a damaged copy of the slot (the caller was replacing
 * whatever the file held). */
static void unmade(ft__slot_t *s, const ft__dir_t *dir, const char *name) {
  ft__slot_close(s);
  (void)ft__store_unlink(dir, name, NULL, 0);
}

/* The file of a slot being made, open in s->fd and holding nothing the new
 * slot must not have: sized to the geometry, reserved, mapped, given an
 * EMPTY header.  On failure the file is removed. */
static int shape_file(ft__slot_t *s, const ft__dir_t *dir, const char *name,
                      const char *job, const ft__slot_geom_t *g,
                      void (*between)(void *), void *arg, char *msg,
                      size_t msglen) {
  if (ftruncate(s->fd, (off_t)g->seg_bytes) != 0) {
    int rc =
        ft__msgf(ft__from_errno(errno), msg, msglen, "%s: resize to %llu: %s",
                 s->path, (unsigned long long)g->seg_bytes, strerror(errno));
    unmade(s, dir, name);
    return rc;
  }
  /* Every byte backed before anything maps it: on a full tmpfs or disk, a
   * write into a page that cannot be backed is a SIGBUS in the writer (the
   * SMP's header, a trainer's copy, a rebuild's decode). */
  int reserved = ft__store_reserve(s->fd, g->seg_bytes, between, arg);
  if (reserved < 0) {
    int err = errno;
    int rc = ft__msgf(ft__from_errno(err), msg, msglen,
                      "%s: cannot reserve the slot's %llu bytes: %s; make "
                      "room there, or set FT_STORE_ROOT to a file system "
                      "with room",
                      s->path, (unsigned long long)g->seg_bytes, strerror(err));
    unmade(s, dir, name);
    return rc;
  }
  int rc = map_file(s, g->seg_bytes, msg, msglen);
  if (rc) {
    unmade(s, dir, name);
    return rc;
  }
  s->unreserved = reserved > 0;
  write_header(s->hdr, job, g);
  return FT_OK;
}

int ft__slot_create_paced(ft__slot_t *s, const ft__dir_t *dir, int idx,
                          const char *job, const ft__slot_geom_t *g,
                          void (*between)(void *), void *arg, char *msg,
                          size_t msglen) {
  char name[16];
  memset(s, 0, sizeof(*s));
  s->idx = idx;
  slot_name(name, sizeof(name), idx);
  path_in(s->path, sizeof(s->path), dir, name);
  /* Made here, or there before (whose bytes a failure before the file is
   * emptied must leave as they were). */
  int made = 0;
  s->fd = ft__store_openat(dir, name, O_RDWR, 0);
  if (s->fd < 0 && errno == ENOENT) {
    s->fd = ft__store_openat(dir, name, O_RDWR | O_CREAT | O_EXCL, 0600);
    made = s->fd >= 0;
    if (s->fd < 0 && errno == EEXIST) /* made meanwhile: there before */
      s->fd = ft__store_openat(dir, name, O_RDWR, 0);
  }
  if (s->fd < 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: open: %s", s->path,
                    strerror(errno));
  /* Shrink to zero first so no byte of an older, differently shaped slot
   * survives in the new geometry. */
  if (ftruncate(s->fd, 0) != 0) {
    int rc = ft__msgf(ft__from_errno(errno), msg, msglen,
                      "%s: cannot empty it: %s", s->path, strerror(errno));
    if (made)
      unmade(s, dir, name);
    else /* nothing of it changed: left as it was */
      ft__slot_close(s);
    return rc;
  }
  return shape_file(s, dir, name, job, g, between, arg, msg, msglen);
}

/* A file ft-spare made: a regular file of this user's with no other name
 * (a second link would let a write into the slot reach another file). */
static int prepared_file(const struct stat *st) {
  return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1;
}

int ft__slot_create_from(ft__slot_t *s, const ft__dir_t *dir, int idx,
                         const char *job, const ft__slot_geom_t *g,
                         const ft__dir_t *spare, int *taken, char *msg,
                         size_t msglen) {
  char name[16];
  struct stat st;
  *taken = 0;
  slot_name(name, sizeof(name), idx);
  /* Never over a slot of the store (a spare's was cleared): one there is
   * made anew as ft__slot_create makes it. */
  if (!spare || spare->fd < 0 || dir->fd < 0 ||
      fstatat(spare->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !prepared_file(&st) ||
      renameat2(spare->fd, name, dir->fd, name, RENAME_NOREPLACE) != 0)
    return ft__slot_create(s, dir, idx, job, g, msg, msglen);
  memset(s, 0, sizeof(*s));
  s->idx = idx;
  path_in(s->path, sizeof(s->path), dir, name);
  s->fd = ft__store_openat(dir, name, O_RDWR, 0);
  /* Checked again through the descriptor: it is the file that was
   * renamed, whatever stood there between the two calls. */
  if (s->fd < 0 || fstat(s->fd, &st) != 0 || !prepared_file(&st)) {
    unmade(s, dir, name);
    return ft__slot_create(s, dir, idx, job, g, msg, msglen);
  }
  int rc = shape_file(s, dir, name, job, g, NULL, NULL, msg, msglen);
  *taken = rc == FT_OK;
  return rc;
}

/* Unlink the entries of directory fd (path, for messages) but those named
 * in keep (NULL-ended; may be NULL).  The first failure, with msg (may be
 * NULL); the directory stays. */
static int unlink_entries(int fd, const char *const *keep, const char *path,
                          char *msg, size_t msglen) {
  /* A descriptor of its own for the listing: closedir closes it. */
  int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    int err = errno;
    if (dfd >= 0)
      close(dfd);
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: opendir: %s", path,
                    strerror(err));
  }
  int rc = FT_OK;
  struct dirent *e;
  while (rc == FT_OK && (e = readdir(d))) {
    int kept = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    for (const char *const *k = keep; !kept && k && *k; k++)
      kept = strcmp(e->d_name, *k) == 0;
    if (!kept && unlinkat(fd, e->d_name, 0) != 0 && errno != ENOENT)
      rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s/%s: unlink: %s",
                    path, e->d_name, strerror(errno));
  }
  closedir(d);
  return rc;
}

int ft__spare_take(const char *root, const char *store_dir, double wait_s,
                   ft__dir_t *spare, int *lock_fd) {
  char path[sizeof(spare->path)];
  struct stat st;
  *lock_fd = -1;
  ft__dir_init(spare, "");
  if (ft__spare_dir(store_dir, path, sizeof(path)) != FT_OK ||
      ft__store_open_dir(root, path, 0, spare, NULL, 0) != FT_OK)
    return 0;
  /* Locked once removed (by the one that held the lock): none. */
  if (ft__store_lock(spare, wait_s, lock_fd, NULL, 0) != FT_OK ||
      fstat(spare->fd, &st) != 0 || st.st_nlink == 0) {
    ft__dir_close(spare);
    if (*lock_fd >= 0)
      close(*lock_fd);
    *lock_fd = -1;
    return 0;
  }
  /* What a preparation killed midway left (slotN.part), or a removal's
   * request (ft-spare): the whole files alone stay. */
  static const char *const whole[] = {"slot0", "slot1", NULL};
  (void)unlink_entries(spare->fd, whole, spare->path, NULL, 0);
  return 1;
}

int ft__spare_remove_locked(const ft__dir_t *spare, char *msg, size_t msglen) {
  struct stat here, there;
  const char *name = strrchr(spare->path, '/');
  int rc = unlink_entries(spare->fd, NULL, spare->path, msg, msglen);
  if (rc)
    return rc;
  if (fstat(spare->fd, &here) != 0 || here.st_nlink == 0 || !name)
    return FT_OK; /* removed already */
  int pfd = openat(spare->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  /* By name only while the name is still this directory. */
  if (pfd >= 0 && fstatat(pfd, name + 1, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
      there.st_dev == here.st_dev && there.st_ino == here.st_ino &&
      unlinkat(pfd, name + 1, AT_REMOVEDIR) != 0 && errno != ENOENT)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s: rmdir: %s",
                  spare->path, strerror(errno));
  if (pfd >= 0)
    close(pfd);
  return rc;
}

void ft__spare_release(ft__dir_t *spare, int lock_fd) {
  if (spare->fd >= 0) /* what the rebuild did not take, and the directory */
    (void)ft__spare_remove_locked(spare, NULL, 0);
  ft__dir_close(spare);
  if (lock_fd >= 0)
    close(lock_fd);
}

int ft__spare_dir(const char *store_dir, char *out, size_t len) {
  const char *base = strrchr(store_dir, '/');
  int n = base ? snprintf(out, len, "%.*s/.spare-%s", (int)(base - store_dir),
                          store_dir, base + 1)
               : -1;
  return n > 0 && (size_t)n < len ? FT_OK : FT_ERANGE;
}

void ft__slot_prefault(ft__slot_t *s) {
  ft__slot_prefault_paced(s, NULL, NULL);
}

void ft__slot_prefault_paced(ft__slot_t *s, void (*between)(void *),
                             void *arg) {
  for (size_t off = 0; s->prefault_ok && off < s->map_bytes;
       off += FT_PREFAULT_PIECE) {
    size_t left = s->map_bytes - off;
    ft__slot_prefault_range(
        s, off, left < FT_PREFAULT_PIECE ? left : FT_PREFAULT_PIECE);
    if (between)
      between(arg);
  }
}

static void prefault_in(ft__slot_t *s, uint64_t off, uint64_t len, int write) {
  if (s->prefault_ok && off <= s->map_bytes && len <= s->map_bytes - off)
    ft__prefault(s->map + off, len, write);
}

void ft__slot_prefault_range(ft__slot_t *s, uint64_t off, uint64_t len) {
  prefault_in(s, off, len, 1);
}

void ft__slot_prefault_made(ft__slot_t *s, uint64_t off, uint64_t len) {
  /* A disk file system's shared mapping is mapped read-only by a read (its
   * writes must be noticed): each write would fault again. */
  prefault_in(s, off, len, !ft__fd_in_ram(s->fd));
}

int ft__slot_open(ft__slot_t *s, const ft__dir_t *dir, int idx,
                  const char *job, char *msg, size_t msglen) {
  char name[16];
  memset(s, 0, sizeof(*s));
  s->idx = idx;
  slot_name(name, sizeof(name), idx);
  path_in(s->path, sizeof(s->path), dir, name);
  s->fd = ft__store_openat(dir, name, O_RDWR, 0);
  if (s->fd < 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: open: %s", s->path,
                    strerror(errno));
  struct stat st;
  int rc;
  if (fstat(s->fd, &st) != 0)
    rc =
        ft__msgf(FT_EIO, msg, msglen, "%s: stat: %s", s->path, strerror(errno));
  else if (st.st_size < (off_t)sizeof(ft__slot_hdr_t))
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: %lld bytes, too short for a slot header (truncated)",
                  s->path, (long long)st.st_size);
  else if ((rc = map_file(s, (size_t)st.st_size, msg, msglen)) == FT_OK)
    rc = ft__slot_validate(s->map, s->map_bytes, job, s->path, msg, msglen);
  if (rc)
    ft__slot_close(s);
  return rc;
}

void ft__slot_close(ft__slot_t *s) {
  if (s->map)
    munmap(s->map, s->map_bytes);
  if (s->fd >= 0)
    close(s->fd);
  s->map = NULL;
  s->hdr = NULL;
  s->fd = -1;
}

uint32_t ft__slot_state(const ft__slot_t *s) {
  return ft__slot_state_decode(
      __atomic_load_n(&s->hdr->state_word, __ATOMIC_ACQUIRE));
}

void ft__slot_set_state(ft__slot_t *s, uint32_t state) {
  if (state == FT_SLOT_COMMITTED)
    s->hdr->committed_ns = now_ns();
  __atomic_store_n(&s->hdr->state_word, ft__slot_state_word(state),
                   __ATOMIC_RELEASE);
}

int ft__slot_intact(const ft__slot_t *s) {
  return s->hdr->hdr_crc == ft__slot_hdr_crc(s->hdr) &&
         ft__slot_state(s) != FT_SLOT_STATE_INVALID;
}

/* After a change to covered fields by the one writer: a new checksum, if
 * the header was intact before the change (ft__slot_intact, taken by the
 * caller first). */
static void reseal(ft__slot_t *s, int was_intact) {
  if (was_intact)
    s->hdr->hdr_crc = ft__slot_hdr_crc(s->hdr);
}

void ft__slot_begin(ft__slot_t *s, uint64_t version, uint64_t step,
                    uint64_t epoch, uint64_t layout) {
  int intact = ft__slot_intact(s);
  /* Drop to EMPTY before touching the identity fields, so a crash between
   * the stores never leaves a FILLING slot claiming an older version. */
  ft__slot_set_state(s, FT_SLOT_EMPTY);
  s->hdr->version = version;
  s->hdr->step = step;
  s->hdr->epoch = epoch;
  s->hdr->layout = (uint32_t)layout;
  s->hdr->filled_ns = now_ns();
  s->hdr->committed_ns = 0;
  reseal(s, intact);
  ft__slot_set_state(s, FT_SLOT_FILLING);
}

void ft__slot_set_step(ft__slot_t *s, uint64_t step) {
  int intact = ft__slot_intact(s);
  s->hdr->step = step;
  reseal(s, intact);
}

/* The first n CRCs of the header, from crc[]. */
static void set_crcs(ft__slot_t *s, const uint64_t *crc, uint32_t n) {
  int intact = ft__slot_intact(s);
  memcpy(s->hdr->crc, crc, (size_t)n * sizeof(uint64_t));
  reseal(s, intact);
}

void ft__slot_set_data_crcs(ft__slot_t *s, const uint64_t *crc) {
  set_crcs(s, crc, s->hdr->k);
}

void ft__slot_set_crcs(ft__slot_t *s, const uint64_t *crc) {
  set_crcs(s, crc, s->hdr->k + s->hdr->m);
}

/* ---- chunks and CRCs ---- */

uint8_t *ft__slot_chunk(const ft__slot_t *s, uint32_t chunk) {
  const ft__slot_hdr_t *h = s->hdr;
  if (chunk < h->k)
    return s->map + h->data_off + (uint64_t)chunk * h->chunk_bytes;
  return s->map + h->parity_off + (uint64_t)(chunk - h->k) * h->chunk_bytes;
}

uint64_t ft__slot_chunk_crc(const ft__slot_t *s, uint32_t chunk) {
  return ft__crc64(0, ft__slot_chunk(s, chunk), s->hdr->chunk_bytes);
}

void ft__slot_seal_data(ft__slot_t *s) {
  int intact = ft__slot_intact(s);
  for (uint32_t c = 0; c < s->hdr->k; c++)
    s->hdr->crc[c] = ft__slot_chunk_crc(s, c);
  reseal(s, intact);
}

void ft__slot_seal_parity(ft__slot_t *s) {
  int intact = ft__slot_intact(s);
  for (uint32_t c = s->hdr->k; c < s->hdr->k + s->hdr->m; c++)
    s->hdr->crc[c] = ft__slot_chunk_crc(s, c);
  reseal(s, intact);
}

void ft__slot_prefault_read(const ft__slot_t *s, uint32_t first, uint32_t n) {
  const ft__slot_hdr_t *h = s->hdr;
  if (!s->prefault_ok)
    return;
  uint32_t end = first + n < h->k + h->m ? first + n : h->k + h->m;
  /* The data chunks, then the parity chunks: each run is contiguous. */
  uint32_t cut = end < h->k ? end : h->k, from = first > h->k ? first : h->k;
  if (first < cut)
    ft__prefault(ft__slot_chunk(s, first),
                 (size_t)(cut - first) * h->chunk_bytes, 0);
  if (from < end)
    ft__prefault(ft__slot_chunk(s, from), (size_t)(end - from) * h->chunk_bytes,
                 0);
}

int ft__slot_verify(const ft__slot_t *s, uint32_t first, uint32_t n, char *msg,
                    size_t msglen) {
  ft__slot_prefault_read(s, first, n);
  for (uint32_t c = first; c < first + n && c < s->hdr->k + s->hdr->m; c++) {
    if (ft__slot_chunk_crc(s, c) != s->hdr->crc[c])
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: CRC mismatch in %s chunk %u (version %llu)", s->path,
                      c < s->hdr->k ? "data" : "parity", c,
                      (unsigned long long)s->hdr->version);
  }
  return FT_OK;
}

int ft__slot_verify_range(const ft__slot_t *s, uint64_t off, uint64_t len,
                          char *msg, size_t msglen) {
  const ft__slot_hdr_t *h = s->hdr;
  if (len == 0 || h->chunk_bytes == 0)
    return FT_OK;
  uint64_t first = (off - h->data_off) / h->chunk_bytes;
  uint64_t last = (off + len - 1 - h->data_off) / h->chunk_bytes;
  return ft__slot_verify(s, (uint32_t)first, (uint32_t)(last - first + 1), msg,
                         msglen);
}

uint64_t ft__slot_held(int open, uint32_t state, uint64_t version) {
  return open && (state == FT_SLOT_ENCODED || state == FT_SLOT_COMMITTED)
             ? version
             : 0;
}

void ft__slots_held(const ft__slot_t sl[FT_NSLOTS], uint64_t held[FT_NSLOTS]) {
  /* The state is read only from a mapped header. */
  for (int i = 0; i < FT_NSLOTS; i++)
    held[i] = sl[i].map
                  ? ft__slot_held(1, ft__slot_state(&sl[i]), sl[i].hdr->version)
                  : 0;
}

static int node_holds(const uint64_t *row, uint64_t v) {
  for (int i = 0; i < FT_NSLOTS; i++)
    if (row[i] == v)
      return 1;
  return 0;
}

uint64_t ft__newest_common(const uint64_t *held, int nnodes,
                           const unsigned char *ignore) {
  uint64_t best = 0;
  for (int n = 0; n < nnodes; n++)
    for (int i = 0; i < FT_NSLOTS && !(ignore && ignore[n]); i++) {
      uint64_t v = held[n * FT_NSLOTS + i];
      int everywhere = v > best;
      for (int o = 0; everywhere && o < nnodes; o++)
        everywhere = (ignore && ignore[o]) || node_holds(&held[o * FT_NSLOTS], v);
      if (everywhere)
        best = v;
    }
  return best;
}

/* Does v count as committed over the counted nodes (store.h)? */
static int counts_committed(const ft__slot_seen_t *seen, int nnodes,
                            const unsigned char *ignore, uint64_t v) {
  int committed = 0, vetoed = 0;
  for (int n = 0; n < nnodes; n++) {
    if (ignore && ignore[n])
      continue;
    const ft__slot_seen_t *row = &seen[(size_t)n * FT_NSLOTS];
    int has = 0;
    for (int i = 0; i < FT_NSLOTS; i++)
      if (row[i].held == v) {
        has = 1;
        committed |= row[i].committed;
      }
    vetoed |= !has && !row[v % FT_NSLOTS].unusable;
  }
  return committed || !vetoed;
}

/* The newest version some counted node holds below `below` (of any
 * number when below is 0), 0 for none. */
static uint64_t next_candidate(const ft__slot_seen_t *seen, int nnodes,
                               const unsigned char *ignore, uint64_t below) {
  uint64_t best = 0;
  for (int n = 0; n < nnodes; n++)
    for (int i = 0; i < FT_NSLOTS && !(ignore && ignore[n]); i++) {
      uint64_t v = seen[(size_t)n * FT_NSLOTS + (size_t)i].held;
      if ((!below || v < below) && v > best)
        best = v;
    }
  return best;
}

uint64_t ft__newest_committed(const ft__slot_seen_t *seen, int nnodes,
                              const unsigned char *ignore) {
  uint64_t v = next_candidate(seen, nnodes, ignore, 0);
  while (v && !counts_committed(seen, nnodes, ignore, v))
    v = next_candidate(seen, nnodes, ignore, v);
  return v;
}

/* ---- metadata ---- */

/* The wire form: magic, format, length, then the fixed part of ft__meta_t
 * up to ranks, then per rank its fixed fields and nbufs records, then a
 * CRC64 of everything before it. */
typedef struct meta_fixed {
  char magic[8];
  uint32_t format;
  uint32_t reserved;
  uint64_t total_bytes;
  char job[FT_JOB_MAX];
  char host[FT_NAME_MAX];
  uint64_t epoch;
  uint32_t node, nnodes, ntrainers, k, m, group, pos, group_size, nlocal;
  uint32_t pad;
  uint64_t run;
  uint64_t layout;
  uint32_t next_node, next_nnodes;
} meta_fixed_t;

typedef struct rank_fixed {
  uint32_t rank, nbufs;
  uint64_t region_bytes;
} rank_fixed_t;

static size_t meta_size(const ft__meta_t *m) {
  size_t n = sizeof(meta_fixed_t) + sizeof(uint64_t) +
             (size_t)m->nnodes * FT_NAME_MAX;
  for (uint32_t r = 0; r < m->nlocal; r++)
    n += sizeof(rank_fixed_t) + m->ranks[r].nbufs * sizeof(ft__buf_rec_t);
  return n;
}

static void put(uint8_t **p, const void *src, size_t n) {
  if (n) /* an empty table may be NULL */
    memcpy(*p, src, n);
  *p += n;
}

void ft__meta_clear(ft__meta_t *m) {
  if (!m)
    return;
  for (uint32_t r = 0; r < FT_MAX_LOCAL; r++)
    ft__free(m->ranks[r].bufs);
  ft__free(m->hosts);
  memset(m, 0, sizeof(*m));
}

void ft__meta_free(ft__meta_t *m) {
  ft__meta_clear(m);
  ft__free(m);
}

int ft__meta_alloc_hosts(ft__meta_t *m, uint32_t nnodes) {
  ft__free(m->hosts);
  m->nnodes = 0;
  m->hosts = nnodes ? ft__calloc(nnodes, sizeof(*m->hosts)) : NULL;
  if (nnodes && !m->hosts)
    return FT_ENOMEM;
  m->nnodes = nnodes;
  return FT_OK;
}

int ft__meta_alloc_bufs(ft__meta_t *m, uint32_t r, uint32_t nbufs) {
  ft__rank_rec_t *rec = &m->ranks[r];
  ft__free(rec->bufs);
  rec->nbufs = 0;
  rec->bufs = nbufs ? ft__calloc(nbufs, sizeof(*rec->bufs)) : NULL;
  if (nbufs && !rec->bufs)
    return FT_ENOMEM;
  rec->nbufs = nbufs;
  return FT_OK;
}

/* Are the tables that m's counts promise there? */
static int tables_ok(const ft__meta_t *m) {
  if (m->nnodes && !m->hosts)
    return 0;
  for (uint32_t r = 0; r < m->nlocal; r++)
    if (m->ranks[r].nbufs && !m->ranks[r].bufs)
      return 0;
  return 1;
}

/* The fixed fields of a and b and of their first nlocal ranks, less the
 * table pointers. */
static int fixed_equal(const ft__meta_t *a, const ft__meta_t *b) {
  ft__meta_t x = *a, y = *b; /* shallow: only compared, never released */
  x.hosts = y.hosts = NULL;
  for (uint32_t r = 0; r < FT_MAX_LOCAL; r++) {
    if (r >= a->nlocal)
      memset(&x.ranks[r], 0, sizeof(x.ranks[r]));
    if (r >= b->nlocal)
      memset(&y.ranks[r], 0, sizeof(y.ranks[r]));
    x.ranks[r].bufs = y.ranks[r].bufs = NULL;
  }
  return memcmp(&x, &y, sizeof(x)) == 0;
}

int ft__meta_equal(const ft__meta_t *a, const ft__meta_t *b) {
  if (!fixed_equal(a, b) || a->nlocal > FT_MAX_LOCAL ||
      (a->nnodes &&
       memcmp(a->hosts, b->hosts, (size_t)a->nnodes * FT_NAME_MAX) != 0))
    return 0;
  for (uint32_t r = 0; r < a->nlocal; r++)
    if (a->ranks[r].nbufs &&
        memcmp(a->ranks[r].bufs, b->ranks[r].bufs,
               (size_t)a->ranks[r].nbufs * sizeof(ft__buf_rec_t)) != 0)
      return 0;
  return 1;
}

int ft__meta_encode(const ft__meta_t *m, uint8_t **out, size_t *len) {
  if (m->nlocal > FT_MAX_LOCAL)
    return FT_ERANGE;
  if (!tables_ok(m))
    return FT_EINVAL;
  size_t n = meta_size(m);
  if (n > FT_META_FILE_MAX) /* no reader would take it: refuse to write */
    return FT_ERANGE;
  uint8_t *buf = ft__calloc(1, n), *p = buf;
  if (!buf)
    return FT_ENOMEM;
  meta_fixed_t f = {0};
  memcpy(f.magic, META_MAGIC, 8);
  f.format = FT_STORE_FORMAT;
  f.reserved = m->flags;
  f.total_bytes = n;
  memcpy(f.job, m->job, sizeof(f.job));
  memcpy(f.host, m->host, sizeof(f.host));
  f.epoch = m->epoch;
  f.run = m->run;
  f.layout = m->layout;
  f.next_node = m->next_node, f.next_nnodes = m->next_nnodes;
  f.node = m->node, f.nnodes = m->nnodes, f.ntrainers = m->ntrainers;
  f.k = m->k, f.m = m->m, f.group = m->group, f.pos = m->pos;
  f.group_size = m->group_size, f.nlocal = m->nlocal;
  put(&p, &f, sizeof(f));
  put(&p, m->hosts, (size_t)m->nnodes * FT_NAME_MAX);
  for (uint32_t r = 0; r < m->nlocal; r++) {
    rank_fixed_t rf = {m->ranks[r].rank, m->ranks[r].nbufs,
                       m->ranks[r].region_bytes};
    put(&p, &rf, sizeof(rf));
    put(&p, m->ranks[r].bufs, rf.nbufs * sizeof(ft__buf_rec_t));
  }
  uint64_t crc = ft__crc64(0, buf, (size_t)(p - buf));
  put(&p, &crc, sizeof(crc));
  *out = buf;
  *len = n;
  return FT_OK;
}

static int str_ok(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

static int decode_fixed(const uint8_t *buf, size_t len, ft__meta_t *m,
                        const char *path, char *msg, size_t msglen) {
  meta_fixed_t f;
  if (len < sizeof(f) + sizeof(uint64_t))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes, too short (truncated)", path, len);
  memcpy(&f, buf, sizeof(f));
  if (memcmp(f.magic, META_MAGIC, 8) != 0)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: bad magic, not ftrt metadata", path);
  if (f.format != FT_STORE_FORMAT)
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: store format %u, this ftrt reads format %u" UPGRADE,
                    path, f.format, FT_STORE_FORMAT);
  if (f.total_bytes != len)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes but the header says %llu (truncated?)", path,
                    len, (unsigned long long)f.total_bytes);
  uint64_t crc;
  memcpy(&crc, buf + len - sizeof(crc), sizeof(crc));
  if (ft__crc64(0, buf, len - sizeof(crc)) != crc)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: CRC mismatch", path);
  if (!str_ok(f.job, sizeof(f.job)) || !str_ok(f.host, sizeof(f.host)) ||
      f.nlocal > FT_MAX_LOCAL || f.k < 1 ||
      (uint64_t)f.k + f.m >= FT_MAX_CHUNKS || f.nnodes < 1 ||
      f.node >= f.nnodes || f.group >= f.nnodes ||
      f.group_size < 1 || f.group_size >= FT_MAX_CHUNKS ||
      f.pos >= f.group_size || f.layout < 1 || f.layout > f.epoch ||
      f.layout > UINT32_MAX ||
      ((f.reserved & FT_META_RESLICE) &&
       (f.next_nnodes < 1 || f.next_nnodes > f.nnodes ||
        f.next_node >= f.next_nnodes)) ||
      (len - sizeof(f) - 8) / FT_NAME_MAX < f.nnodes)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: fields out of range", path);
  /* The host table is allocated only now that len is known to hold it. */
  if (ft__meta_alloc_hosts(m, f.nnodes))
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s: out of memory for the hosts of %u nodes", path,
                    f.nnodes);
  memcpy(m->job, f.job, sizeof(m->job));
  memcpy(m->host, f.host, sizeof(m->host));
  m->epoch = f.epoch;
  m->run = f.run;
  m->layout = f.layout;
  m->next_node = f.next_node, m->next_nnodes = f.next_nnodes;
  m->node = f.node, m->nnodes = f.nnodes, m->ntrainers = f.ntrainers;
  m->k = f.k, m->m = f.m, m->group = f.group, m->pos = f.pos;
  m->group_size = f.group_size, m->nlocal = f.nlocal;
  m->flags = f.reserved;
  return FT_OK;
}

static int decode_rank(const uint8_t **p, const uint8_t *end, ft__meta_t *m,
                       uint32_t idx, const char *path, char *msg,
                       size_t msglen) {
  ft__rank_rec_t *r = &m->ranks[idx];
  rank_fixed_t rf;
  if ((size_t)(end - *p) < sizeof(rf))
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: rank table truncated", path);
  memcpy(&rf, *p, sizeof(rf));
  *p += sizeof(rf);
  if ((size_t)(end - *p) / sizeof(ft__buf_rec_t) < rf.nbufs)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: buffer table of rank %u bad",
                    path, rf.rank);
  if (ft__meta_alloc_bufs(m, idx, rf.nbufs))
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s: out of memory for the %u buffers of rank %u", path,
                    rf.nbufs, rf.rank);
  r->rank = rf.rank, r->region_bytes = rf.region_bytes;
  if (rf.nbufs)
    memcpy(r->bufs, *p, rf.nbufs * sizeof(ft__buf_rec_t));
  *p += rf.nbufs * sizeof(ft__buf_rec_t);
  for (uint32_t b = 0; b < rf.nbufs; b++) {
    const ft__buf_rec_t *br = &r->bufs[b];
    if (!str_ok(br->name, sizeof(br->name)))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: name of buffer %u of rank %u is not terminated",
                      path, b, rf.rank);
    if (br->bytes > rf.region_bytes || br->offset > rf.region_bytes - br->bytes)
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: buffer %u of rank %u lies outside its region", path,
                      b, rf.rank);
    if (br->global_bytes && (br->bytes > br->global_bytes ||
                             br->global_offset > br->global_bytes - br->bytes))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: buffer %u of rank %u is a slice outside its global "
                      "buffer",
                      path, b, rf.rank);
  }
  return FT_OK;
}

static int decode_tables(const uint8_t *buf, size_t len, ft__meta_t *m,
                         const char *path, char *msg, size_t msglen);

int ft__meta_decode(const uint8_t *buf, size_t len, ft__meta_t *m,
                    const char *path, char *msg, size_t msglen) {
  ft__meta_clear(m);
  int rc = decode_fixed(buf, len, m, path, msg, msglen);
  if (rc == FT_OK)
    rc = decode_tables(buf, len, m, path, msg, msglen);
  if (rc)
    ft__meta_clear(m);
  return rc;
}

static int decode_tables(const uint8_t *buf, size_t len, ft__meta_t *m,
                         const char *path, char *msg, size_t msglen) {
  int rc;
  const uint8_t *p = buf + sizeof(meta_fixed_t), *end = buf + len - 8;
  memcpy(m->hosts, p, (size_t)m->nnodes * FT_NAME_MAX);
  p += (size_t)m->nnodes * FT_NAME_MAX;
  for (uint32_t h = 0; h < m->nnodes; h++)
    if (!str_ok(m->hosts[h], FT_NAME_MAX))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: host name %u not terminated", path, h);
  for (uint32_t r = 0; r < m->nlocal; r++)
    if ((rc = decode_rank(&p, end, m, r, path, msg, msglen)))
      return rc;
  if (p != end)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu unexpected trailing bytes", path,
                    (size_t)(end - p));
  return FT_OK;
}

int ft__write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    /* one write(2) moves at most about 2 GiB on Linux */
    ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int ft__pread_all(int fd, void *buf, size_t n, uint64_t off) {
  for (size_t got = 0; got < n;) {
    ssize_t k = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      if (k == 0)
        errno = 0;
      return -1;
    }
    got += (size_t)k;
  }
  return 0;
}

int ft__store_write_file(const ft__dir_t *dir, const char *name,
                         const void *buf, size_t len, char *msg,
                         size_t msglen) {
  char tmpname[FT_NAME_MAX + 8], tmp[sizeof(dir->path) + 80],
      final[sizeof(dir->path) + 80];
  snprintf(tmpname, sizeof(tmpname), "%s.tmp", name);
  path_in(tmp, sizeof(tmp), dir, tmpname);
  path_in(final, sizeof(final), dir, name);
  int rc = FT_OK;
  /* A new file, never one already there (planted, or another's). */
  int rc0 = ft__store_unlink(dir, tmpname, msg, msglen);
  if (rc0)
    return rc0;
  int fd = ft__store_openat(dir, tmpname, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ft__write_all(fd, buf, len) != 0 || fsync(fd) != 0) {
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s: write: %s", tmp,
                  strerror(errno));
  } else if (renameat(dir->fd, tmpname, dir->fd, name) != 0 ||
             fsync(dir->fd) != 0) {
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s: rename: %s", final,
                  strerror(errno));
  }
  if (fd >= 0)
    close(fd);
  return rc;
}

int ft__store_rename(const ft__dir_t *dir, const char *from, const char *to,
                     char *msg, size_t msglen) {
  char a[sizeof(dir->path) + 80];
  path_in(a, sizeof(a), dir, from);
  if (dir->fd < 0)
    errno = ENOENT;
  if (dir->fd < 0 || renameat(dir->fd, from, dir->fd, to) != 0 ||
      fsync(dir->fd) != 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: rename to %s: %s",
                    a, to, strerror(errno));
  return FT_OK;
}

int ft__meta_describes(const ft__meta_t *m, uint64_t layout, uint64_t vepoch) {
  return layout == m->layout && vepoch >= m->layout && vepoch <= m->epoch;
}

int ft__meta_same_entry(const ft__meta_t *mine, const ft__meta_t *m) {
  return m->node == mine->node && m->layout == mine->layout &&
         m->run == mine->run && m->group == mine->group &&
         m->pos == mine->pos && m->nnodes == mine->nnodes;
}

int ft__group_meta_matches(const ft__dir_t *dir, const char *name,
                           const ft__meta_t *mine, ft__meta_t *tmp) {
  return ft__group_meta_read(dir, name, (int)mine->pos, tmp, NULL, 0) ==
             FT_OK &&
         ft__meta_same_entry(mine, tmp);
}

int ft__meta_write_as(const ft__dir_t *dir, const char *name,
                      const ft__meta_t *m, char *msg, size_t msglen) {
  uint8_t *buf;
  size_t len;
  int rc = ft__meta_encode(m, &buf, &len);
  if (rc)
    return ft__msgf(rc, msg, msglen, "%s/%s: cannot encode metadata",
                    dir->path, name);
  rc = ft__store_write_file(dir, name, buf, len, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__meta_write(const ft__dir_t *dir, const ft__meta_t *m, char *msg,
                   size_t msglen) {
  return ft__meta_write_as(dir, FT_META, m, msg, msglen);
}

int ft__store_unlink(const ft__dir_t *dir, const char *name, char *msg,
                     size_t msglen) {
  char path[sizeof(dir->path) + 80];
  if (dir->fd >= 0 && unlinkat(dir->fd, name, 0) != 0 && errno != ENOENT)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: unlink: %s",
                    path_in(path, sizeof(path), dir, name), strerror(errno));
  return FT_OK;
}

int ft__slot_unlink(const ft__dir_t *dir, int idx, char *msg, size_t msglen) {
  char name[16];
  slot_name(name, sizeof(name), idx);
  return ft__store_unlink(dir, name, msg, msglen);
}

static int exists_in(const ft__dir_t *dir, const char *name) {
  struct stat st;
  return dir->fd >= 0 &&
         fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int ft__meta_promote(const ft__dir_t *dir, char *msg, size_t msglen) {
  int rc = exists_in(dir, FT_GROUP_META_PENDING)
               ? ft__store_rename(dir, FT_GROUP_META_PENDING, FT_GROUP_META,
                                  msg, msglen)
               : FT_OK;
  if (rc == FT_OK && exists_in(dir, FT_META_PENDING))
    rc = ft__store_rename(dir, FT_META_PENDING, FT_META, msg, msglen);
  return rc;
}

int ft__meta_drop_pending(const ft__dir_t *dir, const ft__meta_t *m,
                          char *msg, size_t msglen) {
  ft__meta_t *tmp = ft__calloc(1, sizeof(*tmp));
  if (!tmp)
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", dir->path);
  int rc = ft__store_unlink(dir, FT_META_PENDING, msg, msglen);
  /* The pending table is kept where it is the one that matches m (a
   * rebuild cut short between its renames): it becomes the table. */
  if (rc == FT_OK && !ft__group_meta_matches(dir, FT_GROUP_META, m, tmp) &&
      ft__group_meta_matches(dir, FT_GROUP_META_PENDING, m, tmp))
    rc = ft__store_rename(dir, FT_GROUP_META_PENDING, FT_GROUP_META, msg,
                          msglen);
  else if (rc == FT_OK)
    rc = ft__store_unlink(dir, FT_GROUP_META_PENDING, msg, msglen);
  ft__meta_free(tmp);
  return rc;
}

int ft__store_read_file(const ft__dir_t *dir, const char *name, size_t max,
                        uint8_t **buf, size_t *len, char *msg, size_t msglen) {
  char path[sizeof(dir->path) + 80];
  path_in(path, sizeof(path), dir, name);
  int fd = ft__store_openat(dir, name, O_RDONLY, 0);
  if (fd < 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: open: %s", path,
                    strerror(errno));
  struct stat st;
  int rc = FT_OK;
  *buf = NULL;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size > max)
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: unreadable or larger than %zu bytes", path, max);
  else if (!(*buf = ft__malloc((size_t)st.st_size + 1)))
    rc = ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory for %lld bytes",
                  path, (long long)st.st_size);
  else {
    /* One read(2) returns at most about 2 GiB: read on until the end. */
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    if (got != (size_t)st.st_size)
      rc = ft__msgf(FT_EIO, msg, msglen, "%s: short read", path);
  }
  close(fd);
  if (rc) {
    ft__free(*buf);
    *buf = NULL;
  } else {
    *len = (size_t)st.st_size;
  }
  return rc;
}

int ft__meta_read_as(const ft__dir_t *dir, const char *name, ft__meta_t *m,
                     char *msg, size_t msglen) {
  uint8_t *buf;
  size_t len;
  int rc = ft__store_read_file(dir, name, FT_META_FILE_MAX, &buf, &len, msg,
                               msglen);
  if (rc) {
    ft__meta_clear(m);
    return rc;
  }
  char path[sizeof(dir->path) + 80];
  path_in(path, sizeof(path), dir, name);
  rc = ft__meta_decode(buf, len, m, path, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__meta_read(const ft__dir_t *dir, ft__meta_t *m, char *msg,
                  size_t msglen) {
  return ft__meta_read_as(dir, FT_META, m, msg, msglen);
}

/* group.meta: u32 count, then per member u64 length and its encoded meta,
 * then a CRC64 of everything before. */
int ft__group_meta_write(const ft__dir_t *dir, const char *name,
                         const uint8_t *const *parts, const size_t *lens,
                         int n, char *msg, size_t msglen) {
  size_t total = 4 + 8;
  for (int i = 0; i < n; i++)
    total += 8 + lens[i];
  uint8_t *buf = ft__malloc(total), *p = buf;
  if (!buf)
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s/%s: out of memory for %zu bytes", dir->path, name,
                    total);
  uint32_t cnt = (uint32_t)n;
  put(&p, &cnt, 4);
  for (int i = 0; i < n; i++) {
    uint64_t l = lens[i];
    put(&p, &l, 8);
    put(&p, parts[i], lens[i]);
  }
  uint64_t crc = ft__crc64(0, buf, (size_t)(p - buf));
  put(&p, &crc, 8);
  int rc = ft__store_write_file(dir, name, buf, total, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__group_meta_decode(const uint8_t *buf, size_t len, int pos,
                          ft__meta_t *m, const char *path, char *msg,
                          size_t msglen) {
  uint32_t cnt = 0;
  uint64_t crc = 0;
  if (len < 12 ||
      (memcpy(&crc, buf + len - 8, 8), ft__crc64(0, buf, len - 8) != crc)) {
    ft__meta_clear(m);
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: truncated or CRC mismatch",
                    path);
  }
  memcpy(&cnt, buf, 4);
  const uint8_t *p = buf + 4, *end = buf + len - 8, *member = NULL;
  uint64_t l = 0;
  for (uint32_t i = 0; i < cnt && (size_t)(end - p) >= 8; i++) {
    memcpy(&l, p, 8);
    p += 8;
    if (l > (size_t)(end - p))
      break;
    if ((int)i == pos) {
      member = p;
      break;
    }
    p += l;
  }
  if (member)
    return ft__meta_decode(member, (size_t)l, m, path, msg, msglen);
  ft__meta_clear(m);
  return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: no member %d", path, pos);
}

int ft__group_meta_read(const ft__dir_t *dir, const char *name, int pos,
                        ft__meta_t *m, char *msg, size_t msglen) {
  uint8_t *buf;
  size_t len;
  char path[sizeof(dir->path) + 80];
  path_in(path, sizeof(path), dir, name);
  /* k + m <= 255 members, each one node's metadata */
  int rc = ft__store_read_file(dir, name, FT_MAX_CHUNKS * FT_META_FILE_MAX,
                               &buf, &len, msg, msglen);
  if (rc) {
    ft__meta_clear(m);
    return rc;
  }
  rc = ft__group_meta_decode(buf, len, pos, m, path, msg, msglen);
  ft__free(buf);
  return rc;
}

/* ---- directories ---- */

int ft__store_mkdir(const char *dir, char *msg, size_t msglen) {
  char p[FT_PATH_MAX];
  snprintf(p, sizeof(p), "%s", dir);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST)
        return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: mkdir: %s", p,
                        strerror(errno));
      *s = c;
      if (c == '\0')
        break;
    }
  }
  return FT_OK;
}

int ft__store_open_locked(const char *root, ft__dir_t *d, char *msg,
                          size_t msglen) {
  char path[sizeof(d->path)];
  memcpy(path, d->path, sizeof(path));
  int fd = -1, rc = ft__store_open_dir(root, path, 1, d, msg, msglen);
  if (rc == FT_OK)
    rc = ft__store_lock(d, 0, &fd, msg, msglen); /* fd: held till exit */
  if (rc)
    ft__dir_close(d);
  return rc;
}

int ft__store_lock(const ft__dir_t *dir, double wait_s, int *fd, char *msg,
                   size_t msglen) {
  return ft__store_lock_while(dir, wait_s, fd, NULL, NULL, msg, msglen);
}

int ft__store_lock_while(const ft__dir_t *dir, double wait_s, int *fd,
                         int (*between)(void *arg), void *arg, char *msg,
                         size_t msglen) {
  /* A descriptor of its own (flock locks belong to an open file
   * description): closing it gives the lock up, dir->fd stays. */
  *fd = ft__store_openat(dir, ".", O_RDONLY | O_DIRECTORY, 0);
  if (*fd < 0) {
    int err = errno;
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: open: %s",
                    dir->path, strerror(err));
  }
  struct timespec nap = {0, 20 * 1000 * 1000}, t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
      return FT_OK;
    int err = errno;
    if (err == EINTR)
      continue;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double waited = (double)(t.tv_sec - t0.tv_sec) +
                    (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
    if (err != EWOULDBLOCK || waited >= wait_s) {
      close(*fd);
      *fd = -1;
      if (err != EWOULDBLOCK)
        return ft__msgf(ft__from_errno(err), msg, msglen, "%s: flock: %s",
                        dir->path, strerror(err));
      return ft__msgf(FT_EINUSE, msg, msglen,
                      "%s: another launch of this job holds the store on "
                      "this node, or an ft-restore of it does (waited %.0f "
                      "s); let it end first: two processes of one job never "
                      "share a store",
                      dir->path, wait_s);
    }
    nanosleep(&nap, NULL);
    int brc = between ? between(arg) : FT_OK;
    if (brc) {
      close(*fd);
      *fd = -1;
      return brc;
    }
  }
}

int ft__slot_blank(const ft__dir_t *dir, int idx) {
  char name[16], magic[8] = {0};
  slot_name(name, sizeof(name), idx);
  int fd = ft__store_openat(dir, name, O_RDONLY, 0);
  if (fd < 0)
    return 1;
  ssize_t n = pread(fd, magic, sizeof(magic), 0);
  close(fd);
  static const char zero[8] = {0};
  return n < (ssize_t)sizeof(magic) || memcmp(magic, zero, sizeof(zero)) == 0;
}

int ft__store_clear(const ft__dir_t *dir, char *msg, size_t msglen) {
  static const char *const files[] = {FT_META,         "meta.next",
                                      FT_GROUP_META,   FT_META_PENDING,
                                      FT_GROUP_META_PENDING, "slot0",
                                      "slot1"};
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    int rc = ft__store_unlink(dir, files[i], msg, msglen);
    if (rc)
      return rc;
  }
  int rc = ft__store_remove_adopted(dir, msg, msglen);
  /* Last: a clear cut short by a crash is done again at the next start. */
  return rc ? rc : ft__store_unlink(dir, FT_DISK_MARKER, msg, msglen);
}

int ft__store_remove_dir(int dfd, const char *name, const char *sub,
                         char *msg, size_t msglen) {
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
    return unlinkat(dfd, name, 0) == 0 || errno == ENOENT
               ? FT_OK
               : ft__msgf(ft__from_errno(errno), msg, msglen,
                          "%s: unlink: %s", sub, strerror(errno));
  if (fd < 0)
    return errno == ENOENT ? FT_OK
                           : ft__msgf(ft__from_errno(errno), msg, msglen,
                                      "%s: open: %s", sub, strerror(errno));
  int rc = unlink_entries(fd, NULL, sub, msg, msglen);
  close(fd);
  if (rc == FT_OK && unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s: rmdir: %s", sub,
                  strerror(errno));
  return rc;
}

int ft__store_remove_adopted(const ft__dir_t *dir, char *msg,
                             size_t msglen) {
  /* A descriptor of its own for the listing: closedir closes it. */
  int fd = ft__store_openat(dir, ".", O_RDONLY | O_DIRECTORY, 0);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    return err == ENOENT ? FT_OK
                         : ft__msgf(ft__from_errno(err), msg, msglen,
                                    "%s: opendir: %s", dir->path,
                                    strerror(err));
  }
  int rc = FT_OK;
  struct dirent *e;
  char sub[FT_PATH_MAX + 300];
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "adopt", 5) != 0)
      continue;
    snprintf(sub, sizeof(sub), "%s/%s", dir->path, e->d_name);
    int drc =
        ft__store_remove_dir(dirfd(d), e->d_name, sub, rc ? NULL : msg, msglen);
    rc = rc ? rc : drc;
  }
  closedir(d);
  return rc;
}

/* One directory of the store's path, as it is seen through its stat st:
 * ours and private. */
static int private_stat(const struct stat *st, const char *path, char *msg,
                        size_t msglen) {
  if (!S_ISDIR(st->st_mode))
    return ft__msgf(FT_ECONFIG, msg, msglen, "%s: not a directory", path);
  if (st->st_uid != geteuid())
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "%s: owned by uid %u, not by this user (uid %u): another "
                    "user's store root could read or change this job's "
                    "state; set FT_STORE_ROOT to a directory of your own",
                    path, (unsigned)st->st_uid, (unsigned)geteuid());
  if (st->st_mode & 022)
    return ft__msgf(FT_ECONFIG, msg, msglen,
                    "%s: mode %04o, writable by group or others: they could plant "
                    "files in the job's store; %s",
                    path, (unsigned)(st->st_mode & 07777),
                    st->st_mode & S_ISVTX
                        ? "set FT_STORE_ROOT to a directory of your own "
                          "inside it, such as <it>/ftrt-$USER"
                        : "chmod 700 it, or set FT_STORE_ROOT to a "
                          "private directory");
  return FT_OK;
}

/* Why name in at (path) could not be opened as a directory: a link or
 * another file in its place, a directory that is not ours or not private
 * (another user's may not even be readable: EACCES), or errno err. */
static int open_refused(int at, const char *name, const char *path, int err,
                        char *msg, size_t msglen) {
  struct stat st;
  if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode))
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "%s: a symbolic link, not a directory of this store: "
                      "remove it, or give FT_STORE_ROOT as the real path",
                      path);
    int rc = private_stat(&st, path, msg, msglen);
    if (rc)
      return rc;
  }
  return ft__msgf(ft__from_errno(err), msg, msglen, "%s: %s", path,
                  strerror(err));
}

/* Directory name of at (path names it), made (0700) first when create,
 * opened without following a link in its place, and checked through the
 * descriptor (so what is checked is what is used): *fd, or -1 with a
 * message. */
static int open_private(int at, const char *name, const char *path,
                        int create, int *fd, char *msg, size_t msglen) {
  *fd = -1;
  if (create && mkdirat(at, name, 0700) != 0 && errno != EEXIST)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: mkdir: %s", path,
                    strerror(errno));
  int f = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (f < 0)
    return open_refused(at, name, path, errno, msg, msglen);
  struct stat st;
  int rc = fstat(f, &st) != 0
               ? ft__msgf(ft__from_errno(errno), msg, msglen, "%s: stat: %s",
                          path, strerror(errno))
               : private_stat(&st, path, msg, msglen);
  if (rc)
    close(f);
  else
    *fd = f;
  return rc;
}

int ft__dir_open(ft__dir_t *d, const char *path, char *msg, size_t msglen) {
  ft__dir_init(d, path);
  return open_private(AT_FDCWD, path, d->path, 0, &d->fd, msg, msglen);
}

int ft__dir_sub(const ft__dir_t *d, const char *name, int create,
                ft__dir_t *sub, char *msg, size_t msglen) {
  char path[sizeof(d->path) + 80];
  ft__dir_init(sub, path_in(path, sizeof(path), d, name));
  if (d->fd < 0)
    return ft__msgf(FT_ENOENT, msg, msglen, "%s: %s", d->path,
                    strerror(ENOENT));
  return open_private(d->fd, name, sub->path, create, &sub->fd, msg, msglen);
}

/* Every directory above the root: another user must not be able to
 * rename or replace what lies below it (owned by root or this user, and
 * writable by others only when sticky, as /tmp and /dev/shm are). */
static int safe_ancestors(const char *root, char *msg, size_t msglen) {
  char p[FT_PATH_MAX];
  for (size_t i = 1; root[i]; i++) {
    if (root[i] != '/')
      continue;
    snprintf(p, sizeof(p), "%.*s", (int)i, root);
    struct stat st;
    /* A symbolic link on the way is followed; its owner can point it
     * elsewhere at any time (even in a sticky directory), so it must be
     * root or this user. */
    if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid != 0 &&
        st.st_uid != geteuid())
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "%s (above the store root %s): a symbolic link owned "
                      "by uid %u, who could point it elsewhere; choose a "
                      "store root reached through directories and links "
                      "only root or you own",
                      p, root, (unsigned)st.st_uid);
    if (stat(p, &st) != 0)
      return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: %s", p,
                      strerror(errno));
    int owner_ok = st.st_uid == 0 || st.st_uid == geteuid();
    if (!owner_ok || ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
      return ft__msgf(FT_ECONFIG, msg, msglen,
                      "%s (above the store root %s): owned by uid %u, mode "
                      "%04o: another user could move the store away and "
                      "put their own in its place; choose a store root "
                      "whose every parent only root or you can change",
                      p, root, (unsigned)st.st_uid,
                      (unsigned)(st.st_mode & 07777));
  }
  return FT_OK;
}

/* Down from the open root (rfd, closed here) to dir, one component at a
 * time, each opened through the one above it and checked before anything
 * is made inside it: *fd is dir's. */
static int walk_down(int rfd, const char *dir, size_t from, int create,
                     int *fd, char *msg, size_t msglen) {
  char p[FT_PATH_MAX], name[FT_PATH_MAX];
  int at = rfd, rc = FT_OK;
  size_t len = strlen(dir);
  for (size_t i = from, start = from; rc == FT_OK && i <= len; i++) {
    if (dir[i] != '/' && dir[i] != '\0')
      continue;
    if (i > start) {
      snprintf(p, sizeof(p), "%.*s", (int)i, dir);
      snprintf(name, sizeof(name), "%.*s", (int)(i - start), dir + start);
      int next;
      rc = open_private(at, name, p, create, &next, msg, msglen);
      close(at);
      at = next;
    }
    start = i + 1;
  }
  *fd = at;
  return rc;
}

int ft__store_open_dir(const char *root, const char *dir, int create,
                       ft__dir_t *d, char *msg, size_t msglen) {
  ft__dir_init(d, dir);
  size_t n = strlen(root);
  if (strncmp(dir, root, n) != 0 || (dir[n] != '/' && dir[n] != '\0'))
    return ft__msgf(FT_EINVAL, msg, msglen, "%s: not under the store root %s",
                    dir, root);
  char p[FT_PATH_MAX];
  snprintf(p, sizeof(p), "%s", root);
  /* "/a/link/" would follow the link: the root is checked without its
   * trailing slashes. */
  for (size_t len = strlen(p); len > 1 && p[len - 1] == '/'; len--)
    p[len - 1] = '\0';
  int rc = safe_ancestors(p, msg, msglen), fd = -1;
  if (rc == FT_OK && create)
    rc = ft__store_mkdir(p, msg, msglen);
  if (rc == FT_OK)
    rc = open_private(AT_FDCWD, p, p, 0, &fd, msg, msglen);
  if (rc == FT_OK)
    rc = walk_down(fd, dir, n, create, &fd, msg, msglen);
  if (rc == FT_OK)
    d->fd = fd;
  return rc;
}

int ft__store_dir(const char *root, const char *job, int vnode, char *out,
                  size_t len) {
  int n = vnode >= 0 ? snprintf(out, len, "%s/vnode%d/%s", root, vnode, job)
                     : snprintf(out, len, "%s/%s", root, job);
  return n > 0 && (size_t)n < len ? FT_OK : FT_ERANGE;
}
