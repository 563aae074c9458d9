/*
 * The spare pool: slot files that ft-spare prepares on a host while the
 * job runs (their pages allocated and written then), beside the store
 * directory the host would have as a node of the job, for a rebuild that
 * makes the host a node to take instead of making its slots from nothing
 * (ft__slot_create_from, snapshot/slotfile.h).  ft-spare and a rebuild
 * share the directory under its lock; what a rebuild does not take is
 * removed.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_SPARE_H
#define FT_SNAPSHOT_SPARE_H

#include <stddef.h>

#include "snapshot/dir.h"

/* A spare's prepared files, for a rebuild that makes this host a node of
 * the job (store_dir its store directory, made already): their directory
 * (ft__spare_dir) opened into spare, checked as a store is, and locked as
 * ft-spare locks it while it prepares or removes, waiting up to wait_s for
 * a preparation to stop (ft-spare stops once store_dir exists).  Whatever
 * is there but whole slot files is removed at once (a preparation killed
 * midway), so that none of it holds memory a slot made anew needs.  1 when
 * taken (*lock_fd holds the lock), 0 when there are none (also: removed by
 * whoever held the lock before), they are refused, or the lock was not
 * free in time (spare closed): slots are made as without, and the files,
 * if any, stay until ft-spare remove or the node's layout. */
int ft__spare_take(const char *root, const char *store_dir, double wait_s,
                   ft__dir_t *spare, int *lock_fd);
/* How long a rebuild or a layout waits for ft-spare to stop (it does
 * within one FT_PREFAULT_PIECE once the host's store exists). */
#define FT_SPARE_WAIT_S 10.0
/* After the slots are made: what the rebuild did not take is removed, with
 * the directory, and the lock given up.  Nothing when spare is closed. */
void ft__spare_release(ft__dir_t *spare, int lock_fd);
/* Every entry of a spare directory its caller holds locked, unlinked
 * through its descriptor, then the directory, by name only while that name
 * is still this directory (one put in its place is never touched).  FT_OK
 * also when it was removed already; msg may be NULL. */
int ft__spare_remove_locked(const ft__dir_t *spare, char *msg, size_t msglen);
/* The directory of a spare's prepared slot files beside store directory
 * store_dir (ROOT/JOB, or ROOT/vnodeN/JOB): ROOT/.spare-JOB (a job name
 * never begins with a dot).  FT_ERANGE when it does not fit in len. */
int ft__spare_dir(const char *store_dir, char *out, size_t len);

#endif
