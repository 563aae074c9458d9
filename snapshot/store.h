/*
 * The node store: memory-mapped files on tmpfs that outlive every process of
 * a job (docs/design.md section 4).  A store directory holds
 *
 *   meta        node metadata (layout, k, m, per-rank buffer tables), written
 *               atomically: temp file, fsync, rename, fsync of the directory;
 *   slot0 slot1 two version slots, each a header page then the data region
 *               (every local trainer's region, page aligned, padded to k
 *               chunks) then this node's m parity chunks;
 *   ctl         the control segment of the running job (snapshot/ctl.h).
 *
 * A store directory is verified once (ft__store_open_dir: ours, private,
 * no link on the way down from the root) and then used only through the
 * descriptor that was verified (ft__dir_t): every file in it is opened,
 * made, renamed and removed relative to that descriptor (openat, renameat,
 * unlinkat) and never through a symbolic link in its place (O_NOFOLLOW;
 * O_EXCL for the temporary files, which must be new).  A directory put in
 * place of the store's path after the check is never written or read.
 *
 * Nothing here is trusted on read: every reader validates magic, format,
 * sizes against the file size, and CRCs, and reports what is wrong with the
 * file's path in msg.  The validators take plain bytes so they can be fuzzed.
 *
 * Messages: a function of the store (this header and the ones it
 * includes) that takes (msg, msglen) writes one line into msg when it
 * fails (ft__msgf: at most msglen bytes, NUL-terminated) and leaves msg
 * unspecified when it succeeds.  msg may be NULL in every one of them;
 * each says so.
 *
 * The store is built of modules, each with its contract in its header,
 * all included here:
 *
 *   format.h     the sizes and format numbers they share;
 *   slot.h       the slot format: geometry, header, state machine,
 *                validation;
 *   slotfile.h   slot files: made, mapped, opened, written, verified;
 *   spare.h      the spare pool of prepared slot files;
 *   newest.h     the restore rule;
 *   meta.h       node metadata: the codec and the meta files;
 *   groupmeta.h  the group's metadata table and its exchange, the pending
 *                layout;
 *   fileio.h     atomic file I/O in a store directory;
 *   dir.h        store directories: opened safely, locked, emptied.
 *
 * What stays here knows every file of a store directory: the marker that
 * sends the next launch to the disk tier, and the clearing of a store.
 */
#ifndef FT_SNAPSHOT_STORE_H
#define FT_SNAPSHOT_STORE_H

#include <stddef.h>

#include "snapshot/dir.h"
#include "snapshot/fileio.h"
#include "snapshot/format.h"
#include "snapshot/groupmeta.h"
#include "snapshot/meta.h"
#include "snapshot/newest.h"
#include "snapshot/slot.h"
#include "snapshot/slotfile.h"
#include "snapshot/spare.h"

/* Left by ft-restore in every live node's store when the versions held in
 * memory cannot be rebuilt and the disk tier holds one to resume from; it
 * holds FT_PERSIST_DIR.  The next launch's SMPs drop the store and restore
 * from disk (runtime/smp_disk.c). */
#define FT_DISK_MARKER "restore.disk"

/* Remove everything of the job's store in dir but the directory (and its
 * lock): meta, meta.next, group.meta, both slots, the adopt<N>/ stores,
 * and last FT_DISK_MARKER.
 * Close the slots' mappings first.  The first failure, with msg (may be
 * NULL). */
int ft__store_clear(const ft__dir_t *dir, char *msg, size_t msglen);

#endif
