/*
 * The numbers every module of the node store shares: the sizes its files
 * are built on and the format numbers they carry.  A header of its own,
 * below every module's, so that each module's header can include it
 * without including snapshot/store.h (which includes them all).
 */
#ifndef FT_SNAPSHOT_FORMAT_H
#define FT_SNAPSHOT_FORMAT_H

#include <stddef.h>

#define FT_JOB_MAX 64   /* job name with its NUL */
#define FT_PATH_MAX 512 /* store root and directories */
/* The metadata's format (2: meta records the run id; 3: the layout epoch
 * and the re-slice target). */
#define FT_STORE_FORMAT 3
/* The slot header's own format, apart from the metadata's: 4 added the
 * header checksum and the self-checking state word (slots of formats 2 and
 * 3 were stamped with FT_STORE_FORMAT and have neither). */
#define FT_SLOT_FORMAT 4
/* Trainers per node: the slot header is one page (FT_SLOT_HDR_BYTES) that
 * holds every local rank's offset and size, so this is part of the slot
 * format.  Checked when a job starts (runtime/init.c). */
#define FT_MAX_LOCAL 64
/* k + m of a group, with room: ISA-L's codes work in GF(2^8), so a group
 * has at most 255 chunks (checked by the configuration, FT_EC_K/FT_EC_M). */
#define FT_MAX_CHUNKS 256
#define FT_NAME_MAX 64
#define FT_SLOT_HDR_BYTES 4096
#define FT_NSLOTS 2
/* The largest metadata file read back (ft__meta_read_as): a node's meta
 * holds FT_NAME_MAX bytes per node of the job, so this allows some 16
 * million nodes.  It only keeps a scribbled size from being allocated;
 * the node count and buffer counts have no limit of their own. */
#define FT_META_FILE_MAX ((size_t)1 << 30)

/* What a store of another ftrt's format leaves the user to do: the end of
 * the message that refuses it. */
#define FT_STORE_UPGRADE                                                       \
  ": finish the job with the ftrt that wrote it, or start over with "          \
  "--fresh (FT_FRESH=1), which discards it"

#endif
