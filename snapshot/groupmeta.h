/*
 * Group metadata: every member of an erasure-coding group keeps the
 * metadata of every member (group.meta), so that survivors can describe a
 * lost member to its replacement.  The table's file (written atomically,
 * read and checked member by member), the exchange that builds it (used
 * by the SMP at layout time and by ft-restore after a rebuild), and the
 * pending layout's two files (snapshot/meta.h), made current or dropped
 * together.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_GROUPMETA_H
#define FT_SNAPSHOT_GROUPMETA_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/dir.h"
#include "snapshot/meta.h"

/* dir/name (FT_GROUP_META or FT_GROUP_META_PENDING): the metadata of every
 * member of this node's group (each as ft__meta_encode wrote it), so that
 * the survivors can describe a lost member to its replacement.  msg may be
 * NULL. */
int ft__group_meta_write(const ft__dir_t *dir, const char *name,
                         const uint8_t *const *parts, const size_t *lens, int n,
                         char *msg, size_t msglen);
/* Read member pos (0-based) of dir/name into m.  msg may be NULL. */
int ft__group_meta_read(const ft__dir_t *dir, const char *name, int pos,
                        ft__meta_t *m, char *msg, size_t msglen);
/* The same from the len bytes of such a file (path names them). */
int ft__group_meta_decode(const uint8_t *buf, size_t len, int pos,
                          ft__meta_t *m, const char *path, char *msg,
                          size_t msglen);
/* Does dir/name (a group table) hold mine's own entry for mine's layout?
 * 0 when it does not or cannot be read.  tmp: room for one entry. */
int ft__group_meta_matches(const ft__dir_t *dir, const char *name,
                           const ft__meta_t *mine, ft__meta_t *tmp);

/* The pending layout becomes the current one: FT_GROUP_META_PENDING, then
 * FT_META_PENDING renamed over the current files, each where it is there
 * (a crash in between leaves FT_META_PENDING, which the next start-up or
 * ft-restore promotes again or drops; readers take the group table whose
 * members match their metadata's layout).  msg may be NULL. */
int ft__meta_promote(const ft__dir_t *dir, char *msg, size_t msglen);
/* Remove FT_META_PENDING (a layout that never committed a version, or one
 * already made current) and FT_GROUP_META_PENDING, unless that table is
 * the one that matches m, the metadata that stays: then it replaces
 * FT_GROUP_META.  msg may be NULL. */
int ft__meta_drop_pending(const ft__dir_t *dir, const ft__meta_t *m, char *msg,
                          size_t msglen);

/* Completes a request; the SMP waits with naps and a timeout, tools block. */
typedef int (*ft__wait_fn)(void *arg, MPI_Request *req);

/* Collective over gc (members in position order): allgather every member's
 * encoded metadata and write dir/name (FT_GROUP_META, or
 * FT_GROUP_META_PENDING for a layout not yet committed: meta.h).  m may
 * be NULL for a member
 * with nothing to share: then nobody writes (the table would be
 * incomplete).  Returns the first error, with one line in msg when it was
 * writing the file that failed.  msg may be NULL. */
int ft__group_meta_share(MPI_Comm gc, const ft__meta_t *m, const ft__dir_t *dir,
                         const char *name, ft__wait_fn wait, void *arg,
                         char *msg, size_t msglen);

#endif
