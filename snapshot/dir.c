/*
 * Store directories.
 *
 * Every directory from the store root down is opened relative to the one
 * above it, without following a link in its place (O_NOFOLLOW), and
 * checked through the descriptor opened (ours, not writable by group or
 * others), so that what is checked is what is used; the directories above
 * the root must be ones no other user can move.  The lock is an flock(2)
 * on a descriptor of the directory's own, held as long as that descriptor
 * is open.  Removals unlink through a directory's descriptor and never
 * follow a link.
 */
#include "snapshot/dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"

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

const char *ft__path_in(char *out, size_t len, const ft__dir_t *d,
                        const char *name) {
  snprintf(out, len, "%s/%s", d->path, name);
  return out;
}

/* ---- removing ---- */

int ft__unlink_entries(int fd, const char *const *keep, const char *path,
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

int ft__store_remove_dir(int dfd, const char *name, const char *sub, char *msg,
                         size_t msglen) {
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
    return unlinkat(dfd, name, 0) == 0 || errno == ENOENT
               ? FT_OK
               : ft__msgf(ft__from_errno(errno), msg, msglen, "%s: unlink: %s",
                          sub, strerror(errno));
  if (fd < 0)
    return errno == ENOENT ? FT_OK
                           : ft__msgf(ft__from_errno(errno), msg, msglen,
                                      "%s: open: %s", sub, strerror(errno));
  int rc = ft__unlink_entries(fd, NULL, sub, msg, msglen);
  close(fd);
  if (rc == FT_OK && unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s: rmdir: %s", sub,
                  strerror(errno));
  return rc;
}

int ft__store_remove_adopted(const ft__dir_t *dir, char *msg, size_t msglen) {
  /* A descriptor of its own for the listing: closedir closes it. */
  int fd = ft__store_openat(dir, ".", O_RDONLY | O_DIRECTORY, 0);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    return err == ENOENT
               ? FT_OK
               : ft__msgf(ft__from_errno(err), msg, msglen, "%s: opendir: %s",
                          dir->path, strerror(err));
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

/* ---- locking ---- */

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
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: open: %s", dir->path,
                    strerror(err));
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

/* ---- opening ---- */

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
    return ft__msgf(
        FT_ECONFIG, msg, msglen,
        "%s: mode %04o, writable by group or others: they could plant "
        "files in the job's store; %s",
        path, (unsigned)(st->st_mode & 07777),
        st->st_mode & S_ISVTX ? "set FT_STORE_ROOT to a directory of your own "
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
static int open_private(int at, const char *name, const char *path, int create,
                        int *fd, char *msg, size_t msglen) {
  *fd = -1;
  if (create && mkdirat(at, name, 0700) != 0 && errno != EEXIST)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: mkdir: %s", path,
                    strerror(errno));
  int f = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (f < 0)
    return open_refused(at, name, path, errno, msg, msglen);
  struct stat st;
  int rc = fstat(f, &st) != 0 ? ft__msgf(ft__from_errno(errno), msg, msglen,
                                         "%s: stat: %s", path, strerror(errno))
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
  ft__dir_init(sub, ft__path_in(path, sizeof(path), d, name));
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
static int walk_down(int rfd, const char *dir, size_t from, int create, int *fd,
                     char *msg, size_t msglen) {
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
