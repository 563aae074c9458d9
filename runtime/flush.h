/*
 * The SMP's background flush to the disk tier (persist/persist.h).
 *
 * After a commit, the SMP hands a version to a thread of its own, which
 * writes this node's part of it (its ranks' regions, then its node
 * manifest) from the slot file with pread(2) -- never through the slot's
 * mapping -- while the SMP goes on serving snapshots.  Nothing waits for a
 * flush: when the SMP needs the slot being flushed for a newer version
 * (two commits later), it cancels the flush before it touches the slot, and
 * the flush publishes nothing (it asks once more after its last read, so
 * every byte it publishes was read while the slot held the version).  A
 * flush that fails (a full or unwritable directory) is reported in the
 * SMP's log and in ft-status; training goes on.
 */
#ifndef FT_RUNTIME_FLUSH_H
#define FT_RUNTIME_FLUSH_H

#include <stdint.h>

#include "persist/persist.h"
#include "runtime/log.h"
#include "snapshot/ctl.h"

typedef struct ft__flush ft__flush_t;

/* A flusher into root/job, reporting into st and log (both outlive it):
 * NULL when out of memory.  keep: FT_PERSIST_KEEP. */
ft__flush_t *ft__flush_new(const char *root, const char *job, int keep,
                           ft__ctl_persist_t *st, const ft__log_t *log);
/* midway(arg) is called by the flush thread after its first rank file of
 * a version is written (a fault point: FT_FAULT=flush). */
void ft__flush_set_midway(ft__flush_t *f, void (*midway)(void *), void *arg);
/* Is a flush running (started and not yet joined)? */
int ft__flush_busy(ft__flush_t *f);
/* Start flushing the version described by desc (taken over: cleared here
 * whatever happens) from slot idx, read through slot_fd (dup'ed here) at
 * rank_off[i] for desc->ranks[i].  FT_EBUSY while one runs. */
int ft__flush_start(ft__flush_t *f, int idx, int slot_fd,
                    const uint64_t *rank_off, ft__pnode_t *desc);
/* Slot idx is about to be reused: a flush from it stops and publishes
 * nothing.  Does not wait. */
void ft__flush_cancel_slot(ft__flush_t *f, int idx);
/* Join a flush that has ended (does not wait for a running one). */
void ft__flush_poll(ft__flush_t *f);
/* The newest version whose part this node has flushed, 0 none. */
uint64_t ft__flush_done_version(const ft__flush_t *f);
/* Cancel, wait, free.  f may be NULL. */
void ft__flush_free(ft__flush_t *f);

#endif
