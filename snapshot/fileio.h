/*
 * Atomic file I/O in a store directory: whole files written to a new
 * temporary name, fsynced, renamed into place and the directory fsynced
 * (CONTRIBUTING.md rule 10), renamed and removed relative to the
 * directory's descriptor, read back whole; and the loops that move all the
 * bytes a write(2) or a pread(2) may move only part of.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_FILEIO_H
#define FT_SNAPSHOT_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/dir.h"

/* Atomic replacement of dir/name by len bytes: temp file (name.tmp, made
 * new: O_EXCL), fsync, rename, fsync of the directory (redis rdbSave).
 * msg may be NULL. */
int ft__store_write_file(const ft__dir_t *dir, const char *name,
                         const void *buf, size_t len, char *msg, size_t msglen);
/* rename(dir/from, dir/to), then fsync of the directory.  msg may be
 * NULL. */
int ft__store_rename(const ft__dir_t *dir, const char *from, const char *to,
                     char *msg, size_t msglen);
/* Remove dir/name (a link in its place is removed, never followed); none
 * there is no error.  msg may be NULL. */
int ft__store_unlink(const ft__dir_t *dir, const char *name, char *msg,
                     size_t msglen);

/* Read a whole file of at most max bytes into a buffer to free with
 * ft__free (*buf NULL on failure); FT_ENOMEM (with msg) when there is no
 * room for it.  msg may be NULL. */
int ft__store_read_file(const ft__dir_t *dir, const char *name, size_t max,
                        uint8_t **buf, size_t *len, char *msg, size_t msglen);

/* write(2) until all n bytes are out (EINTR retried); 0 or -1 (errno). */
int ft__write_all(int fd, const uint8_t *p, size_t n);
/* pread(2) of exactly n bytes at off (EINTR retried): 0, or -1 with errno,
 * which is 0 when the file ended first. */
int ft__pread_all(int fd, void *buf, size_t n, uint64_t off);

#endif
