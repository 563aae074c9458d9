/*
 * Node metadata: what a store directory's meta file says about its node
 * and its layout (job, run, epochs, node index and count, the group code
 * and place, every local rank's buffer table), the codec that turns it
 * into bytes and back, and the meta files themselves.  The decoder
 * trusts nothing it reads (it is fuzzed: tests/fuzz/fuzz_store.c); the
 * writer replaces a file atomically (snapshot/fileio.h).  The group's
 * table of every member's metadata is snapshot/groupmeta.h.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_META_H
#define FT_SNAPSHOT_META_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/dir.h"
#include "snapshot/format.h"

typedef struct ft__buf_rec {
  char name[FT_NAME_MAX];
  uint64_t bytes;
  uint64_t offset; /* inside the rank region */
  uint64_t global_offset, global_bytes;
  uint32_t kind, memory;
} ft__buf_rec_t;

typedef struct ft__rank_rec {
  uint32_t rank; /* rank in app_comm */
  uint32_t nbufs;
  uint64_t region_bytes;
  ft__buf_rec_t *bufs; /* [nbufs]: owned by the ft__meta_t that holds it */
} ft__rank_rec_t;

/* The restore point was left by ft-restore --mode shrink: it holds the data
 * of an older, larger layout (this node's own slot plus adopt<N>/ stores of
 * lost nodes), to be re-sliced by ft_restore for the new rank count. */
#define FT_META_RESLICE 1u

typedef struct ft__meta {
  char job[FT_JOB_MAX];
  uint64_t epoch;
  uint32_t node, nnodes;     /* this node's index and the job's node count */
  uint32_t ntrainers;        /* trainers of the whole job */
  uint32_t k, m, group, pos; /* this node's group code and place */
  uint32_t group_size;
  uint32_t nlocal;
  uint32_t flags; /* FT_META_* */
  uint64_t run;   /* run id: random at a fresh start, kept by every relaunch
                   * and ft-restore; stores of two runs never mix */
  /* The epoch at which this grouping (node indexes, k, m, groups, rank
   * tables) was made.  A version whose slots are stamped with an epoch in
   * [layout, epoch] was encoded under it; no other version is described
   * by this metadata (ft__meta_describes). */
  uint64_t layout;
  /* With FT_META_RESLICE: this survivor's node index and the node count of
   * the smaller job that re-slices the restore point (the rest of the
   * metadata still describes the layout the restore point was made in). */
  uint32_t next_node, next_nnodes;
  char host[FT_NAME_MAX];
  ft__rank_rec_t ranks[FT_MAX_LOCAL];
  char (*hosts)[FT_NAME_MAX]; /* [nnodes] host of every node: owned */
} ft__meta_t;

/*
 * An ft__meta_t owns its host table and its ranks' buffer tables, which
 * are sized by the job (nnodes, nbufs), not by a fixed limit.  One that is
 * zeroed (= {0}, ft__calloc) holds nothing; every function below that
 * fills one (decode, read) first releases what it held, and on failure
 * leaves it holding nothing, so one can be read into again and again and
 * released once with ft__meta_clear (or ft__meta_free for one from
 * ft__calloc).  Never copy one by value: the copy would share the tables.
 */
/* Release m's tables and zero it; m may be NULL. */
void ft__meta_clear(ft__meta_t *m);
/* ft__meta_clear, then ft__free(m); m may be NULL. */
void ft__meta_free(ft__meta_t *m);
/* Do a and b hold the same metadata: every field, the host table and the
 * first nlocal ranks with their buffer tables (ranks past nlocal are not
 * metadata: never written, zero when read)? */
int ft__meta_equal(const ft__meta_t *a, const ft__meta_t *b);
/* A zeroed host table of nnodes entries (m->nnodes = nnodes), replacing
 * any m held: FT_ENOMEM. */
int ft__meta_alloc_hosts(ft__meta_t *m, uint32_t nnodes);
/* A zeroed buffer table of nbufs records for rank r < FT_MAX_LOCAL
 * (m->ranks[r].nbufs = nbufs), replacing any it held: FT_ENOMEM. */
int ft__meta_alloc_bufs(ft__meta_t *m, uint32_t r, uint32_t nbufs);

/* Was a version whose slot header says layout and epoch vepoch encoded
 * under the layout m describes: the same layout, made at an epoch in
 * [layout, epoch]?  Layout numbers are never handed out twice (a new one
 * is above every epoch a store holds), so a copy made under a layout that
 * was dropped is never described by a later one. */
int ft__meta_describes(const ft__meta_t *m, uint64_t layout, uint64_t vepoch);
/* Is m, read from a group table, the entry of mine's own node in the layout
 * of mine? */
int ft__meta_same_entry(const ft__meta_t *mine, const ft__meta_t *m);

/*
 * Metadata files of a store directory.  FT_META and FT_GROUP_META describe
 * the layout of the committed versions.  A launch that changes the layout
 * (another --ec, other failure domains, a re-sliced job after a shrink)
 * writes the new one to FT_META_PENDING and FT_GROUP_META_PENDING, stamps
 * its versions with the new epoch, and renames them over the current ones
 * once a version made under them has committed on every node: until then a
 * loss is recovered with the layout the committed version was made in.
 */
#define FT_META "meta"
#define FT_GROUP_META "group.meta"
#define FT_META_PENDING "meta.pending"
#define FT_GROUP_META_PENDING "group.meta.pending"

/* Serialise to a buffer (*out, *len) to free with ft__free (base/alloc.h).
 * FT_ERANGE for more than FT_MAX_LOCAL ranks, FT_EINVAL for a table its
 * count promises that is not there. */
int ft__meta_encode(const ft__meta_t *m, uint8_t **out, size_t *len);
/* Parse and validate bytes written by ft__meta_encode (fuzzed); path names
 * the bytes in msg.  m: zeroed or filled before (see ft__meta_clear); on
 * failure it holds nothing.  No count is trusted beyond what len bytes can
 * hold.  msg may be NULL. */
int ft__meta_decode(const uint8_t *buf, size_t len, ft__meta_t *m,
                    const char *path, char *msg, size_t msglen);
/* Atomic write: dir/meta.tmp, fsync, rename to dir/meta, fsync dir.  msg
 * may be NULL. */
int ft__meta_write(const ft__dir_t *dir, const ft__meta_t *m, char *msg,
                   size_t msglen);
/* FT_ENOENT when there is none.  msg may be NULL. */
int ft__meta_read(const ft__dir_t *dir, ft__meta_t *m, char *msg,
                  size_t msglen);
/* The same for dir/name (FT_META or FT_META_PENDING). */
int ft__meta_write_as(const ft__dir_t *dir, const char *name,
                      const ft__meta_t *m, char *msg, size_t msglen);
int ft__meta_read_as(const ft__dir_t *dir, const char *name, ft__meta_t *m,
                     char *msg, size_t msglen);

/* The codec's two helpers, for every encoder and decoder of the store's
 * and the disk tier's files (persist/persist.c). */
/* Copy n bytes of src to *p and move *p past them (src may be NULL when
 * n is 0: an empty table). */
void ft__put(uint8_t **p, const void *src, size_t n);
/* Is the string in a field of cap bytes terminated within it? */
int ft__str_ok(const char *s, size_t cap);

#endif
