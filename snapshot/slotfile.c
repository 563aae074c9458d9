/*
 * Slot files in a store directory.
 *
 * A slot file is sized once for its geometry and then reused.  It is made
 * by emptying the file, sizing it to the geometry, reserving every byte of
 * it in the file system (so that no write into the mapping meets a full
 * store as a SIGBUS), mapping it shared and writing an EMPTY header; a
 * failure once the file was emptied removes it, so that nothing half made
 * is taken for a damaged copy.  The state word alone is accessed with
 * atomics: the one writer (the SMP, or ft-restore) writes every other
 * field, and the header CRC after it, before the release store of the
 * state that publishes them, and a header that was not intact before a
 * change never gets a fresh CRC (snapshot/slot.h).
 */
#include "snapshot/slotfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/pages.h"
#include "ec/crc.h"
#include "snapshot/fileio.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
  ft__slot_write_header(s->hdr, job, g);
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
  ft__path_in(s->path, sizeof(s->path), dir, name);
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
  ft__path_in(s->path, sizeof(s->path), dir, name);
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

int ft__slot_open(ft__slot_t *s, const ft__dir_t *dir, int idx, const char *job,
                  char *msg, size_t msglen) {
  char name[16];
  memset(s, 0, sizeof(*s));
  s->idx = idx;
  slot_name(name, sizeof(name), idx);
  ft__path_in(s->path, sizeof(s->path), dir, name);
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

int ft__slot_unlink(const ft__dir_t *dir, int idx, char *msg, size_t msglen) {
  char name[16];
  slot_name(name, sizeof(name), idx);
  return ft__store_unlink(dir, name, msg, msglen);
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
