/*
 * Store directories: opened safely, locked, and emptied.
 *
 * A store directory is verified once, from the store root down (ours,
 * private, no link on the way), and then used only through the descriptor
 * that was verified (ft__dir_t): every file in it is opened, made, renamed
 * and removed relative to that descriptor by the store's other modules.
 * The lock is the one-launch-per-job-and-node rule; the removals take
 * apart what the store's modules made, never following a link.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_DIR_H
#define FT_SNAPSHOT_DIR_H

#include <stddef.h>
#include <sys/types.h>

#include "snapshot/format.h"

/*
 * A store directory: the descriptor it was verified through (O_DIRECTORY |
 * O_NOFOLLOW), which every function of the store that takes one works in,
 * and its path, for messages only.  fd is -1 while none is open: the functions
 * then find no file in it (FT_ENOENT; ft__store_unlink and ft__store_clear find
 * nothing to remove).  ft__dir_close closes it (and leaves fd -1).
 */
typedef struct ft__dir {
  int fd;
  char path[FT_PATH_MAX + 32];
} ft__dir_t;

/* fd -1, path copied (truncated to fit): nothing opened. */
void ft__dir_init(ft__dir_t *d, const char *path);
void ft__dir_close(ft__dir_t *d);
/* Open path as a store directory: not a symbolic link, a directory owned
 * by this user and not writable by group or others, checked through the
 * descriptor opened (FT_ECONFIG with a message saying what is wrong and
 * what to do; FT_ENOENT when there is none).  Only the last component is
 * checked: ft__store_open_dir checks the whole way from the store root.
 * d->fd is -1 on failure.  msg may be NULL. */
int ft__dir_open(ft__dir_t *d, const char *path, char *msg, size_t msglen);
/* The sub-directory name of d (an adopt<N>/ store), made (mode 0700) first
 * when create and missing, opened relative to d and checked as
 * ft__dir_open does.  sub->path is d's path/name.  msg may be NULL. */
int ft__dir_sub(const ft__dir_t *d, const char *name, int create,
                ft__dir_t *sub, char *msg, size_t msglen);

/* openat(2) of name in d with flags | O_NOFOLLOW | O_CLOEXEC (and mode
 * where it makes the file): a descriptor, or -1 with errno (ENOENT when d
 * is not open).  A symbolic link in name's place is never followed
 * (ELOOP). */
int ft__store_openat(const ft__dir_t *d, const char *name, int flags,
                     mode_t mode);
/* The path of name in d, for messages: "d->path/name" in out (truncated
 * to fit len), which it returns. */
const char *ft__path_in(char *out, size_t len, const ft__dir_t *d,
                        const char *name);

/*
 * The store directory dir of a job, under root (FT_STORE_ROOT; dir begins
 * with root), opened into d: with create, made (mode 0700) where missing
 * (without, FT_ENOENT where it is missing and nothing is made), and
 * refused (FT_ECONFIG, with a message saying what is wrong and what to do)
 * unless root and every directory from it down to dir is a real directory
 * (not a symbolic link) owned by this user and not writable by group or
 * others.  Each directory below the root is opened relative to the one
 * above it and checked through its descriptor, and d->fd is the one
 * checked last: nothing put in place of a path after the check is used.
 * On a shared node, another user could otherwise have made the root first
 * and read, fill or redirect the job's files.  Every tool that reads a
 * store opens it here.  d->fd is -1 on failure.  msg may be NULL.
 */
int ft__store_open_dir(const char *root, const char *dir, int create,
                       ft__dir_t *d, char *msg, size_t msglen);

/* A store made (ft__store_open_dir with create, at d->path) and locked at
 * once (ft__store_lock, no wait: FT_EINUSE when a process holds it), the
 * lock held until the process ends: ft-restore writes in a spare's store
 * only under the lock a launch would take.  d->fd is -1 on failure. */
int ft__store_open_locked(const char *root, ft__dir_t *d, char *msg,
                          size_t msglen);

/* mkdir -p of dir (mode 0700).  msg may be NULL. */
int ft__store_mkdir(const char *dir, char *msg, size_t msglen);
/* The store directory of job under root (FT_STORE_ROOT): root/job, or
 * root/vnodeN/job for virtual nodes (vnode >= 0).  FT_ERANGE when it does
 * not fit in len bytes of out. */
int ft__store_dir(const char *root, const char *job, int vnode, char *out,
                  size_t len);

/*
 * One launch per job and node: an exclusive flock(2) on the store directory
 * dir, held through *fd (a descriptor of dir's own, opened relative to
 * dir->fd) until that descriptor is closed (or the process ends, however
 * it ends).  A lock held elsewhere is waited for up to
 * wait_s seconds (a previous launch's SMP may still be exiting), then
 * FT_EINUSE; nothing in dir is read or written either way.  *fd is -1 on
 * failure.  msg may be NULL.
 */
int ft__store_lock(const ft__dir_t *dir, double wait_s, int *fd, char *msg,
                   size_t msglen);
/* The same, calling between(arg) after every try that found the lock held
 * (a process that must show signs of life while it waits: the SMP's
 * heartbeats); a status other than FT_OK from it ends the wait with it. */
int ft__store_lock_while(const ft__dir_t *dir, double wait_s, int *fd,
                         int (*between)(void *arg), void *arg, char *msg,
                         size_t msglen);

/* Unlink the entries of directory fd (path, for messages) but those named
 * in keep (NULL-ended; may be NULL), listed through a descriptor of its
 * own (fd stays open).  The first failure, with msg (may be
 * NULL); the directory stays. */
int ft__unlink_entries(int fd, const char *const *keep, const char *path,
                       char *msg, size_t msglen);
/* Remove every entry of the directory name in the directory dfd (files
 * only: what ftrt writes there, temporary files of a write cut short
 * included), then the directory; sub names it in msg.  A link or a file in
 * its place is removed, never followed.  None there is no error.  msg may
 * be NULL. */
int ft__store_remove_dir(int dfd, const char *name, const char *sub, char *msg,
                         size_t msglen);

/* Remove every adopt<N>/ store under dir (what ft-restore --mode shrink
 * left for a re-slice).  The first failure, with msg (may be NULL); what
 * could be removed is removed. */
int ft__store_remove_adopted(const ft__dir_t *dir, char *msg, size_t msglen);

#endif
