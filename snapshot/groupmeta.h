/*
 * Sharing group metadata: every member of an erasure-coding group keeps the
 * metadata of every member (group.meta), so that survivors can describe a
 * lost member to its replacement.  Used by the SMP at layout time and by
 * ft-restore after a rebuild.
 */
#ifndef FT_SNAPSHOT_GROUPMETA_H
#define FT_SNAPSHOT_GROUPMETA_H

#include <mpi.h>
#include <stddef.h>

#include "snapshot/store.h"

/* Completes a request; the SMP waits with naps and a timeout, tools block. */
typedef int (*ft__wait_fn)(void *arg, MPI_Request *req);

/* Collective over gc (members in position order): allgather every member's
 * encoded metadata and write dir/name (FT_GROUP_META, or
 * FT_GROUP_META_PENDING for a layout not yet committed: store.h).  m may
 * be NULL for a member
 * with nothing to share: then nobody writes (the table would be
 * incomplete).  Returns the first error, with one line in msg when it was
 * writing the file that failed.  msg may be NULL. */
int ft__group_meta_share(MPI_Comm gc, const ft__meta_t *m,
                         const ft__dir_t *dir, const char *name,
                         ft__wait_fn wait, void *arg, char *msg,
                         size_t msglen);

#endif
