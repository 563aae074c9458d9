/*
 * Atomic file I/O in a store directory.
 *
 * A file is replaced by writing a new temporary file (O_EXCL: never one
 * planted there), fsyncing it, renaming it over the old one and fsyncing
 * the directory, so that a crash leaves the old file or the new one, never
 * a mix.  Every name is resolved relative to the directory's descriptor.
 * Reads and writes loop until every byte moved: one call moves at most
 * about 2 GiB on Linux, and EINTR is retried.
 */
#include "snapshot/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"

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
  ft__path_in(tmp, sizeof(tmp), dir, tmpname);
  ft__path_in(final, sizeof(final), dir, name);
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
  ft__path_in(a, sizeof(a), dir, from);
  if (dir->fd < 0)
    errno = ENOENT;
  if (dir->fd < 0 || renameat(dir->fd, from, dir->fd, to) != 0 ||
      fsync(dir->fd) != 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: rename to %s: %s",
                    a, to, strerror(errno));
  return FT_OK;
}

int ft__store_unlink(const ft__dir_t *dir, const char *name, char *msg,
                     size_t msglen) {
  char path[sizeof(dir->path) + 80];
  if (dir->fd >= 0 && unlinkat(dir->fd, name, 0) != 0 && errno != ENOENT)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: unlink: %s",
                    ft__path_in(path, sizeof(path), dir, name),
                    strerror(errno));
  return FT_OK;
}

int ft__store_read_file(const ft__dir_t *dir, const char *name, size_t max,
                        uint8_t **buf, size_t *len, char *msg, size_t msglen) {
  char path[sizeof(dir->path) + 80];
  ft__path_in(path, sizeof(path), dir, name);
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
