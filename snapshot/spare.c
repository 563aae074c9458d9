/*
 * The spare pool.
 *
 * ft-spare prepares slot files in ROOT/.spare-JOB, beside the store the
 * host would have as a node of the job.  A rebuild that makes the host a
 * node takes that directory under the lock ft-spare holds while it
 * prepares or removes, removes at once whatever is not a whole slot file,
 * lets ft__slot_create_from rename the files it can use into the new
 * store, and removes the rest with the directory.  The directory is
 * removed by its name only while that name is still the directory it
 * locked.
 */
#include "snapshot/spare.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

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
  (void)ft__unlink_entries(spare->fd, whole, spare->path, NULL, 0);
  return 1;
}

int ft__spare_remove_locked(const ft__dir_t *spare, char *msg, size_t msglen) {
  struct stat here, there;
  const char *name = strrchr(spare->path, '/');
  int rc = ft__unlink_entries(spare->fd, NULL, spare->path, msg, msglen);
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
