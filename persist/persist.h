/*
 * The disk tier (docs/design.md section 9): committed versions flushed from
 * the SMPs' memory to a directory that every host sees (FT_PERSIST_DIR), so
 * that a job survives what erasure coding cannot (more than m losses in a
 * group, the whole cluster lost) and can be restored onto any number of
 * ranks.
 *
 * On disk, under the persist root:
 *
 *   <job>/                       the job's directory (0700, checked as a
 *                                store directory is: ft__store_open_dir)
 *   <job>/v<V>.e<E>/             version V as launch epoch E made it
 *       rank<R>                  app rank R's region, byte for byte as its
 *                                slot held it: its buffers at the offsets
 *                                its node manifest gives
 *       node<N>                  node N's manifest: its ranks' buffer tables
 *                                (names, sizes, offsets, places in global
 *                                tensors), each rank file's size, the
 *                                CRC64 of every FT_PERSIST_BLOCK bytes of
 *                                it, and its file CRC: the CRC64 of those
 *                                block CRCs in order (every byte covered
 *                                once, with one pass over the data)
 *       MANIFEST                 the version's manifest: job, run, version,
 *                                step, epoch, node count and the CRC64 of
 *                                every node manifest
 *
 * Every file is written as a temporary file (O_EXCL), fsynced and renamed
 * into place, and the directory fsynced; a node manifest is written after
 * the node's rank files, and MANIFEST after every node manifest, by the SMP
 * that finds them all there (any may: they write the same bytes).  A
 * version exists for a reader only when its MANIFEST is there and checks:
 * an interrupted flush leaves a directory without one, which is never read
 * and is removed by a later prune.  Each file carries a CRC64 (ISA-L) over
 * its bytes, and the manifests name the CRCs of what they describe, so a
 * truncated or flipped file makes its version unusable, with a message
 * naming the file, and never restores wrong bytes.
 *
 * Order of versions: by epoch, then version.  Every launch's epoch is above
 * every epoch in the memory stores and on disk, so the newest launch's
 * versions come first, whatever a version number of an older timeline
 * (one abandoned by a restore from disk) says.
 */
#ifndef FT_PERSIST_PERSIST_H
#define FT_PERSIST_PERSIST_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/store.h"

#define FT_PERSIST_FORMAT 1
/* Each rank file's blocks carry a CRC64 of their own, so that a reader of
 * part of a file (a re-slice) checks what it reads without reading the rest. */
#define FT_PERSIST_BLOCK ((uint64_t)4 << 20)
#define FT_PERSIST_MANIFEST "MANIFEST"
/* Largest manifest read back: keeps a scribbled size from being allocated. */
#define FT_PERSIST_FILE_MAX ((size_t)1 << 30)

/* One rank of a node manifest. */
typedef struct ft__prank {
  uint32_t rank;        /* app rank */
  uint32_t nbufs;
  uint64_t bytes;       /* the rank file's size: its region */
  uint64_t crc;         /* the file's CRC: CRC64 of block_crc[] */
  uint64_t *block_crc;  /* [ft__persist_blocks(bytes)] */
  ft__buf_rec_t *bufs;  /* [nbufs]: offsets inside the file */
} ft__prank_t;

/* A node manifest.  Owns its tables: ft__pnode_clear releases them. */
typedef struct ft__pnode {
  char job[FT_JOB_MAX];
  uint64_t run, version, step, epoch;
  uint64_t nonce; /* the flushing launch's: a MANIFEST joins node
                   * manifests of one launch only */
  uint32_t node, nnodes;
  uint32_t ntrainers; /* ranks of the whole job */
  uint32_t nranks;    /* ranks of this node */
  ft__prank_t *ranks; /* [nranks] */
} ft__pnode_t;

/* A version's MANIFEST.  Owns node_crc: ft__pversion_clear. */
typedef struct ft__pversion {
  char job[FT_JOB_MAX];
  char name[64]; /* its directory: v<V>.e<E> */
  uint64_t run, version, step, epoch;
  uint32_t nnodes, ntrainers;
  uint64_t bytes;     /* every rank file together */
  uint64_t *node_crc; /* [nnodes]: CRC64 of each node manifest file */
  uint64_t *node_bytes; /* [nnodes]: the rank bytes of each node */
} ft__pversion_t;

uint64_t ft__persist_blocks(uint64_t bytes);
void ft__pnode_clear(ft__pnode_t *n);
void ft__pversion_clear(ft__pversion_t *v);
/* "v<V>.e<E>" into out; 0, or -1 when it does not fit. */
int ft__persist_dirname(uint64_t version, uint64_t epoch, char *out,
                        size_t len);
/* Parse such a name: 0, or -1 for a name that is not one. */
int ft__persist_parse_dirname(const char *name, uint64_t *version,
                              uint64_t *epoch);

/* Encode and decode (fuzzed: nothing in buf is trusted; path names the
 * bytes in msg).  Encoded buffers are freed with ft__free.  The decoders
 * release what the struct held first and leave it holding nothing on
 * failure. */
int ft__pnode_encode(const ft__pnode_t *n, uint8_t **out, size_t *len);
int ft__pnode_decode(const uint8_t *buf, size_t len, ft__pnode_t *n,
                     const char *path, char *msg, size_t msglen);
int ft__pversion_encode(const ft__pversion_t *v, uint8_t **out, size_t *len);
int ft__pversion_decode(const uint8_t *buf, size_t len, ft__pversion_t *v,
                        const char *path, char *msg, size_t msglen);

/* The job's directory under root, made (0700) with create; refused as
 * ft__store_open_dir refuses a store (ownership, modes, links).  msg may be
 * NULL. */
int ft__persist_open(const char *root, const char *job, int create,
                     ft__dir_t *jobdir, char *msg, size_t msglen);

/*
 * Writing one node's part of a version (the SMP's flush thread).
 *
 * ft__persist_write_rank: jobdir/<vdir>/rank<R> from bytes read with
 * pread(2) from fd at offset off (the slot file: the flush never maps the
 * slot, so a slot resized under it gives a short read, an error, never a
 * fault), computing r->crc and r->block_crc on exactly the bytes written.
 * r->rank, r->bytes and r->block_crc (room for every block) are the
 * caller's.  cancelled(arg) is asked between blocks; when it says yes, the
 * temporary file is removed and FT_EBUSY returned.  buf: FT_PERSIST_BLOCK
 * bytes of scratch.
 *
 * ft__persist_write_node: the node manifest n, after every rank file of it
 * is written; cancelled(arg) is asked once more first, after the last byte
 * was read from the slot: a flush that was cancelled at any time before
 * publishes nothing.
 *
 * ft__persist_complete: writes MANIFEST when every node manifest of the
 * version is there and describes the same job, run, version, step and
 * epoch (*done = 1); otherwise leaves it to the node that writes last
 * (*done = 0).
 *
 * msg may be NULL in each.
 */
int ft__persist_mkvdir(const ft__dir_t *jobdir, const char *vdir,
                       ft__dir_t *out, char *msg, size_t msglen);
int ft__persist_write_rank(const ft__dir_t *vdir, ft__prank_t *r, int fd,
                           uint64_t off, uint8_t *buf,
                           int (*cancelled)(void *), void *arg, char *msg,
                           size_t msglen);
int ft__persist_write_node(const ft__dir_t *vdir, const ft__pnode_t *n,
                           int (*cancelled)(void *), void *arg, char *msg,
                           size_t msglen);
int ft__persist_complete(const ft__dir_t *vdir, const ft__pnode_t *mine,
                         int *done, char *msg, size_t msglen);

/*
 * Reading.
 *
 * ft__persist_list: the versions whose MANIFEST is there and decodes, for
 * job, newest first (epoch, then version); *n of them, in an array to free
 * with ft__persist_list_free.  Directories without one are not versions
 * (an interrupted or running flush).  *highest: the highest epoch any
 * version directory is named with, complete or not (a new launch numbers
 * its epoch above it).  msg may be NULL.
 */
int ft__persist_list(const ft__dir_t *jobdir, ft__pversion_t **out, int *n,
                     uint64_t *highest, char *msg, size_t msglen);
void ft__persist_list_free(ft__pversion_t *v, int n);

/* The MANIFEST of version directory name (v<V>.e<E>) of jobdir, checked,
 * into v (cleared first; holding nothing on failure).  msg may be NULL. */
int ft__persist_read_version(const ft__dir_t *jobdir, const char *name,
                             ft__pversion_t *v, char *msg, size_t msglen);

/* Which of v[0..n) (ft__persist_list's order) name names: "N" the newest
 * numbered N (a number recurs across epochs after a restore from disk),
 * "v<V>.e<E>" that directory.  FT_OK with *idx, FT_ENOENT when none is,
 * FT_EINVAL for a name that is neither. */
int ft__persist_find(const ft__pversion_t *v, int n, const char *name,
                     int *idx);

/* The version directories ft__persist_list leaves out: *incomplete of
 * them have no MANIFEST (a flush interrupted, or still being written),
 * *damaged have one that does not read back or is not its directory's (or
 * are no private directory).  On FT_OK msg (may be NULL) says why for the
 * newest damaged one, "" when none is. */
int ft__persist_unlisted(const ft__dir_t *jobdir, int *incomplete, int *damaged,
                         char *msg, size_t msglen);

/* Node manifest N of version v, checked against the CRC its MANIFEST
 * gives.  msg may be NULL. */
int ft__persist_read_node(const ft__dir_t *jobdir, const ft__pversion_t *v,
                          uint32_t node, ft__pnode_t *out, char *msg,
                          size_t msglen);

/* Verify version v: every node manifest, and every rank file of the nodes
 * N with N % stride == first (stride 1: all), whole: size, file CRC and
 * block CRCs.  FT_ECORRUPT (or FT_ENOENT, FT_EIO) with a message naming
 * the first bad file.  *bytes (may be NULL): bytes read.  msg may be
 * NULL. */
int ft__persist_verify(const ft__dir_t *jobdir, const ft__pversion_t *v,
                       uint32_t first, uint32_t stride, uint64_t *bytes,
                       char *msg, size_t msglen);

/* A rank file open for reading, with the block it read last. */
typedef struct ft__pfile {
  int fd;
  const ft__prank_t *r; /* its record in a node manifest (not owned) */
  char path[FT_PATH_MAX + 160];
  uint8_t *block; /* FT_PERSIST_BLOCK bytes, or NULL until the first read */
  uint64_t block_idx; /* the block held, UINT64_MAX for none */
} ft__pfile_t;

int ft__pfile_open(ft__pfile_t *f, const ft__dir_t *jobdir,
                   const char *vdir, const ft__prank_t *r, char *msg,
                   size_t msglen);
/* len bytes at off into dst, every block they touch read whole and checked
 * against its CRC first: FT_ECORRUPT naming the file and block, FT_ERANGE
 * past the end.  msg may be NULL. */
int ft__pfile_read(ft__pfile_t *f, uint64_t off, uint64_t len, void *dst,
                   char *msg, size_t msglen);
void ft__pfile_close(ft__pfile_t *f);

/*
 * Keep the newest keep complete versions and remove the rest, and every
 * directory without a MANIFEST that is older than the oldest one kept (an
 * abandoned flush; newer ones may be being written).  *removed (may be
 * NULL): versions removed.  msg may be NULL: the first failure; what can be
 * removed is removed.
 */
int ft__persist_prune(const ft__dir_t *jobdir, int keep, int *removed,
                      char *msg, size_t msglen);
/* Remove every version directory of the job (FT_FRESH=1 starts over).
 * msg may be NULL. */
int ft__persist_remove_all(const ft__dir_t *jobdir, char *msg, size_t msglen);

#endif
