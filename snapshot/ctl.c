/*
 * Shared control segment and its futex.  The futex is the shared (not
 * private) kind because the waiters are different processes mapping the same
 * tmpfs file.
 */
#include "snapshot/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/crc.h"

#define CTL_MAGIC "FTRTCTL1"
#define BUFS_MAGIC "FTRTBUFS"

const char *ft__phase_name(uint32_t phase) {
  static const char *const names[] = {"idle",   "layout", "snapshot",
                                      "crc",    "encode", "commit",
                                      "restore", "done"};
  return phase <= FT_PHASE_DONE ? names[phase] : "?";
}

double ft__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t ft__load64(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
void ft__store64(uint64_t *p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
uint32_t ft__load32(const uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
void ft__store32(uint32_t *p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static int map_ctl(int fd, ft__ctl_t **out, const char *path, char *msg,
                   size_t msglen) {
  void *p = mmap(NULL, sizeof(ft__ctl_t), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: mmap: %s", path,
                    strerror(err));
  }
  *out = p;
  return FT_OK;
}

int ft__ctl_create(const ft__dir_t *dir, uint32_t nlocal, ft__ctl_t **out,
                   char *msg, size_t msglen) {
  char path[sizeof(dir->path) + 16], tmp[sizeof(dir->path) + 16];
  *out = NULL;
  snprintf(path, sizeof(path), "%s/ctl", dir->path);
  snprintf(tmp, sizeof(tmp), "%s/ctl.new", dir->path);
  /* Build a fresh file and rename it in, so that a process of an earlier
   * launch still mapping the old one can never confuse this launch. */
  /* A new file, never one already there (planted, or another's). */
  int rc = ft__store_unlink(dir, "ctl.new", msg, msglen);
  if (rc)
    return rc;
  int fd = ft__store_openat(dir, "ctl.new", O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ftruncate(fd, sizeof(ft__ctl_t)) != 0) {
    /* errno now, before the close below can change it */
    int err = errno;
    if (fd >= 0)
      close(fd);
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: %s", tmp,
                    strerror(err));
  }
  /* Every page backed: its users write it through their mappings. */
  if (ft__store_reserve(fd, sizeof(ft__ctl_t), NULL, NULL) < 0) {
    int err = errno;
    close(fd);
    (void)ft__store_unlink(dir, "ctl.new", NULL, 0);
    return ft__msgf(ft__from_errno(err), msg, msglen,
                    "%s: cannot reserve %zu bytes: %s; make room there, or "
                    "set FT_STORE_ROOT to a file system with room",
                    tmp, sizeof(ft__ctl_t), strerror(err));
  }
  rc = map_ctl(fd, out, tmp, msg, msglen);
  close(fd);
  if (rc)
    return rc;
  ft__ctl_t *c = *out;
  memcpy(c->magic, CTL_MAGIC, 8);
  c->format = FT_STORE_FORMAT;
  c->nlocal = nlocal;
  c->smp_pid = (uint32_t)getpid();
  if (getrandom(&c->launch, sizeof(c->launch), 0) != sizeof(c->launch))
    c->launch = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
  c->prepared_slot = -1;
  if (renameat(dir->fd, "ctl.new", dir->fd, "ctl") != 0) {
    int err = errno;
    ft__ctl_detach(c);
    *out = NULL;
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: rename: %s", path,
                    strerror(err));
  }
  return FT_OK;
}

int ft__ctl_attach(const ft__dir_t *dir, ft__ctl_t **out, char *msg,
                   size_t msglen) {
  char path[sizeof(dir->path) + 16];
  *out = NULL;
  snprintf(path, sizeof(path), "%s/ctl", dir->path);
  int fd = ft__store_openat(dir, "ctl", O_RDWR, 0);
  if (fd < 0) {
    int err = errno;
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: %s", path,
                    strerror(err));
  }
  struct stat st;
  int rc;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    rc = ft__msgf(ft__from_errno(err), msg, msglen, "%s: fstat: %s", path,
                  strerror(err));
  } else if (st.st_size != (off_t)sizeof(ft__ctl_t)) {
    rc = ft__msgf(FT_EMISMATCH, msg, msglen,
                  "%s: wrong size (another ftrt version?)", path);
  } else {
    rc = map_ctl(fd, out, path, msg, msglen);
  }
  close(fd);
  if (rc == FT_OK && memcmp((*out)->magic, CTL_MAGIC, 8) != 0) {
    rc = ft__msgf(FT_ECORRUPT, msg, msglen, "%s: bad magic", path);
    ft__ctl_detach(*out);
    *out = NULL;
  }
  return rc;
}

void ft__ctl_detach(ft__ctl_t *ctl) {
  if (ctl)
    munmap(ctl, sizeof(*ctl));
}

uint32_t ft__ctl_seq(const ft__ctl_t *ctl) {
  return __atomic_load_n(&ctl->seq, __ATOMIC_ACQUIRE);
}

void ft__ctl_notify(ft__ctl_t *ctl) {
  __atomic_add_fetch(&ctl->seq, 1, __ATOMIC_ACQ_REL);
  syscall(SYS_futex, &ctl->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void ft__ctl_wait(ft__ctl_t *ctl, uint32_t seen, double timeout_s) {
  if (timeout_s <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)timeout_s;
  ts.tv_nsec = (long)((timeout_s - (double)ts.tv_sec) * 1e9);
  syscall(SYS_futex, &ctl->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* ---- buffer tables ---- */

/* dir/ctl.bufs<idx>: this header, nbufs records, a CRC64 of all before. */
typedef struct bufs_hdr {
  char magic[8];
  uint32_t idx, nbufs;
  uint32_t smp_pid; /* the launch (its control segment is made by it) */
  uint32_t pad;
  uint64_t launch; /* the control segment's random stamp */
} bufs_hdr_t;

static void bufs_name(char *out, size_t len, uint32_t idx) {
  snprintf(out, len, "ctl.bufs%u", idx);
}

int ft__ctl_put_bufs(const ft__ctl_t *ctl, const ft__dir_t *dir, uint32_t idx,
                     const ft__buf_rec_t *bufs, uint32_t nbufs, char *msg,
                     size_t msglen) {
  char name[32];
  bufs_name(name, sizeof(name), idx);
  size_t recs = (size_t)nbufs * sizeof(*bufs);
  size_t len = sizeof(bufs_hdr_t) + recs + sizeof(uint64_t);
  uint8_t *buf = ft__malloc(len);
  if (!buf)
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s/%s: out of memory for %u buffer records", dir->path, name,
                    nbufs);
  bufs_hdr_t h = {.idx = idx, .nbufs = nbufs, .smp_pid = ctl->smp_pid,
                  .launch = ctl->launch};
  memcpy(h.magic, BUFS_MAGIC, 8);
  memcpy(buf, &h, sizeof(h));
  if (recs)
    memcpy(buf + sizeof(h), bufs, recs);
  uint64_t crc = ft__crc64(0, buf, len - sizeof(crc));
  memcpy(buf + len - sizeof(crc), &crc, sizeof(crc));
  int rc = ft__store_write_file(dir, name, buf, len, msg, msglen);
  ft__free(buf);
  return rc;
}

static int check_bufs(const ft__ctl_t *ctl, uint32_t idx, const uint8_t *buf,
                      size_t len, const char *path, char *msg,
                      size_t msglen) {
  const ft__ctl_rank_t *r = &ctl->rank[idx];
  bufs_hdr_t h;
  uint64_t crc;
  size_t recs = (size_t)r->nbufs * sizeof(ft__buf_rec_t);
  if (len != sizeof(h) + recs + sizeof(crc))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes, not the %u records trainer %u published",
                    path, len, r->nbufs, idx);
  memcpy(&h, buf, sizeof(h));
  memcpy(&crc, buf + len - sizeof(crc), sizeof(crc));
  if (memcmp(h.magic, BUFS_MAGIC, 8) != 0 || h.idx != idx ||
      h.nbufs != r->nbufs || ft__crc64(0, buf, len - sizeof(crc)) != crc ||
      h.smp_pid != ctl->smp_pid || h.launch != ctl->launch)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: not the buffer table trainer %u published for this "
                    "launch (bad magic, stamp or CRC)",
                    path, idx);
  for (uint32_t b = 0; b < r->nbufs; b++) {
    ft__buf_rec_t br;
    memcpy(&br, buf + sizeof(h) + (size_t)b * sizeof(br), sizeof(br));
    if (!memchr(br.name, '\0', sizeof(br.name)) ||
        br.bytes > r->region_bytes || br.offset > r->region_bytes - br.bytes)
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: buffer %u has no terminated name or lies outside "
                      "the %llu-byte region",
                      path, b, (unsigned long long)r->region_bytes);
  }
  return FT_OK;
}

int ft__ctl_get_bufs(const ft__ctl_t *ctl, const ft__dir_t *dir, uint32_t idx,
                     ft__buf_rec_t **bufs, char *msg, size_t msglen) {
  char name[32], path[sizeof(dir->path) + 48];
  bufs_name(name, sizeof(name), idx);
  snprintf(path, sizeof(path), "%s/%s", dir->path, name);
  *bufs = NULL;
  uint8_t *buf = NULL;
  size_t len = 0, recs = (size_t)ctl->rank[idx].nbufs * sizeof(ft__buf_rec_t);
  int rc = ft__store_read_file(dir, name, sizeof(bufs_hdr_t) + recs + 8, &buf,
                               &len, msg, msglen);
  if (rc == FT_OK)
    rc = check_bufs(ctl, idx, buf, len, path, msg, msglen);
  if (rc == FT_OK && recs && !(*bufs = ft__malloc(recs)))
    rc = ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory for %u records",
                  path, ctl->rank[idx].nbufs);
  if (rc == FT_OK && recs)
    memcpy(*bufs, buf + sizeof(bufs_hdr_t), recs);
  ft__free(buf);
  if (rc == FT_OK) /* read: nothing else needs it */
    ft__store_unlink(dir, name, NULL, 0);
  return rc;
}
