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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"

#define CTL_MAGIC "FTRTCTL1"

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
  rc = map_ctl(fd, out, tmp, msg, msglen);
  close(fd);
  if (rc)
    return rc;
  ft__ctl_t *c = *out;
  memcpy(c->magic, CTL_MAGIC, 8);
  c->format = FT_STORE_FORMAT;
  c->nlocal = nlocal;
  c->smp_pid = (uint32_t)getpid();
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
