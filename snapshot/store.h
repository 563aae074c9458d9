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
 * Messages: a function below that takes (msg, msglen) writes one line into
 * msg when it fails (ft__msgf: at most msglen bytes, NUL-terminated) and
 * leaves msg unspecified when it succeeds.  msg may be NULL in every one of
 * them; each says so.
 */
#ifndef FT_SNAPSHOT_STORE_H
#define FT_SNAPSHOT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FT_JOB_MAX 64   /* job name with its NUL */
#define FT_PATH_MAX 512 /* store root and directories */
#define FT_STORE_FORMAT 3 /* 2: meta records the run id; 3: the layout
                           * epoch and the re-slice target */
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

typedef enum {
  FT_SLOT_EMPTY = 0,
  FT_SLOT_FILLING = 1,   /* trainers are copying into it */
  FT_SLOT_LOCAL = 2,     /* every local trainer wrote, data CRCs done */
  FT_SLOT_ENCODED = 3,   /* this node's parity written */
  FT_SLOT_COMMITTED = 4  /* every SMP of the job encoded this version */
} ft__slot_state_t;

const char *ft__slot_state_name(uint32_t state);

/* The header page of a slot.
 *
 * Every field that steers a read (where the data is, how it is cut into
 * chunks, which version, step and layout epoch it holds, the chunk CRCs) is
 * covered by hdr_crc, a CRC64 that ft__slot_validate checks before it looks
 * at anything else: a flipped offset or version makes the slot damaged
 * (FT_ECORRUPT), never a slot that reads the wrong bytes or claims another
 * version.  Not covered: the state word, which checks itself (below), the
 * time stamps, which steer nothing, and hdr_crc itself.
 *
 * Only `state_word` changes while others read: it is read and written with
 * atomics (acquire/release), everything else is written by the one writer
 * (the SMP, or ft-restore) before the state that publishes it, and the
 * writer recomputes hdr_crc after each change (ft__slot_begin, _set_step,
 * _set_data_crcs, _seal_data, _seal_parity).  The state is not under the
 * CRC because it changes while the slot is read: a CRC rewritten after
 * each state store would leave a window in which a reader (or a crash)
 * sees the new state with the old CRC, and a committed slot could turn
 * into a damaged one at the very moment it commits.  Instead the word
 * holds the state and its complement (ft__slot_state_word), so one atomic
 * store changes both and any flipped byte of it is caught. */
typedef struct ft__slot_hdr {
  char magic[8];       /* "FTRTSLOT" */
  uint32_t format;     /* FT_SLOT_FORMAT */
  uint32_t state_word; /* ft__slot_state_word(state); not under hdr_crc */
  char job[FT_JOB_MAX];
  uint64_t version;
  uint64_t step;
  uint64_t epoch;
  uint64_t seg_bytes;
  uint64_t data_off, data_bytes;     /* k * chunk_bytes */
  uint64_t parity_off, parity_bytes; /* m * chunk_bytes */
  uint64_t chunk_bytes;
  uint32_t k, m;
  uint32_t nlocal;
  uint32_t layout; /* the layout (ft__meta_t.layout) it was encoded under */
  uint64_t rank_off[FT_MAX_LOCAL]; /* absolute offsets in the file */
  uint64_t rank_bytes[FT_MAX_LOCAL];
  uint64_t crc[FT_MAX_CHUNKS]; /* data chunks 0..k-1, parity k..k+m-1 */
  /* not under hdr_crc from here on */
  uint64_t filled_ns, committed_ns; /* CLOCK_REALTIME */
  uint64_t hdr_crc; /* ft__slot_hdr_crc: magic through crc[], less the
                     * state word */
} ft__slot_hdr_t;

/* The state word of a state: the state in the low 16 bits, its complement
 * in the high 16.  ft__slot_state_decode gives the state back, or
 * FT_SLOT_STATE_INVALID for a word that is not one of these. */
#define FT_SLOT_STATE_INVALID UINT32_MAX
uint32_t ft__slot_state_word(uint32_t state);
uint32_t ft__slot_state_decode(uint32_t word);
/* The checksum of a header as it is now (see ft__slot_hdr_t). */
uint64_t ft__slot_hdr_crc(const ft__slot_hdr_t *h);

/* Sizes of a slot, computed from the local ranks' bytes and the group code. */
typedef struct ft__slot_geom {
  uint32_t nlocal, k, m;
  uint64_t rank_off[FT_MAX_LOCAL], rank_bytes[FT_MAX_LOCAL];
  uint64_t local_bytes; /* end of the last rank region, from data_off */
  uint64_t chunk_bytes, data_off, data_bytes, parity_off, parity_bytes;
  uint64_t seg_bytes;
} ft__slot_geom_t;

/* Rank regions of nlocal ranks, page aligned, after the header page. */
int ft__slot_geom_local(ft__slot_geom_t *g, uint32_t nlocal,
                        const uint64_t *rank_bytes);
/* Complete the geometry for a code whose chunk is chunk_bytes (>= what the
 * local data needs when cut into k chunks).  k >= 1, m >= 0. */
int ft__slot_geom_code(ft__slot_geom_t *g, uint32_t k, uint32_t m,
                       uint64_t chunk_bytes);

/*
 * A store directory: the descriptor it was verified through (O_DIRECTORY |
 * O_NOFOLLOW), which every function below that takes one works in, and its
 * path, for messages only.  fd is -1 while none is open: the functions then
 * find no file in it (FT_ENOENT; ft__store_unlink and ft__store_clear find
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

/* An open, mapped slot. */
typedef struct ft__slot {
  int idx;
  int fd;
  char path[FT_PATH_MAX + 48];
  size_t map_bytes;
  uint8_t *map;
  ft__slot_hdr_t *hdr;
  int prefault_ok; /* ft__prefault_fd_safe(fd), asked at mapping */
  int unreserved;  /* made where the file system cannot reserve: sparse */
} ft__slot_t;

/*
 * Check a slot image of file_bytes bytes (at least the header must be there)
 * for job.  FT_ECORRUPT (bad magic, a header checksum that does not match,
 * an invalid state word, sizes, offsets), FT_EMISMATCH (a slot of another
 * format -- an older one has no header checksum -- or of another job), with
 * a message naming path and what is wrong.  Does not check the chunk CRCs.
 * msg may be NULL.
 */
int ft__slot_validate(const void *image, size_t file_bytes, const char *job,
                      const char *path, char *msg, size_t msglen);

/* Reserve [0, bytes) of fd's file in its file system (fallocate), so that
 * no write into a shared mapping of it meets a full store as a SIGBUS;
 * FT_PREFAULT_PIECE bytes at a time with between(arg) after each piece
 * (between may be NULL).  0, or -1 with errno (ENOSPC: no room).  A file
 * system that cannot reserve (EOPNOTSUPP) leaves the file sparse: 1. */
int ft__store_reserve(int fd, uint64_t bytes, void (*between)(void *),
                      void *arg);
/* Create (or resize) slot idx in dir with geometry g, state EMPTY.  Its
 * bytes are reserved in the file system first (fallocate; skipped where the
 * file system cannot), so no later write into the mapping meets a full
 * store as a SIGBUS: a store without room fails here, FT_ENOSPC with a
 * message naming the slot.  On any failure once the file was emptied
 * (sizing, reserving, mapping) the file is removed; one that could not be
 * emptied is left as it was.  msg may be NULL. */
int ft__slot_create(ft__slot_t *s, const ft__dir_t *dir, int idx,
                    const char *job, const ft__slot_geom_t *g, char *msg,
                    size_t msglen);
/* The same, reserving FT_PREFAULT_PIECE bytes at a time and calling
 * between(arg) after each piece (on tmpfs a reservation allocates the
 * pages: an SMP keeps its heartbeats going). */
int ft__slot_create_paced(ft__slot_t *s, const ft__dir_t *dir, int idx,
                          const char *job, const ft__slot_geom_t *g,
                          void (*between)(void *), void *arg, char *msg,
                          size_t msglen);
/* Slot idx made from a prepared spare's file where there is one: the file
 * dir/slot<idx> of spare (ft__spare_dir; ft-spare made it, its pages
 * already allocated and zeroed) is renamed into dir as the slot and then
 * sized, reserved, mapped and given an EMPTY header as ft__slot_create
 * does, without emptying it first.  Where spare is NULL or closed, has no
 * such file, or holds something else there (not a regular file of this
 * user's with a single link), or the rename fails (another file system):
 * ft__slot_create, the file in spare left as it was (one that, renamed,
 * turns out not to be such a file is removed).  A slot idx already in dir
 * is never replaced by a prepared file: it is made as ft__slot_create
 * makes it.  *taken: 1 when the prepared file became the slot. */
int ft__slot_create_from(ft__slot_t *s, const ft__dir_t *dir, int idx,
                         const char *job, const ft__slot_geom_t *g,
                         const ft__dir_t *spare, int *taken, char *msg,
                         size_t msglen);
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
/* Fault in every page of a slot just made (MADV_POPULATE_WRITE, in bulk:
 * a rebuild then writes into memory already there instead of taking one
 * fault a page).  Best effort: nothing happens where the kernel lacks it
 * (before Linux 5.14), memory runs short (the writes then fault as
 * before), or the store is on a disk and the kernel older than 6.9
 * (base/pages.h). */
void ft__slot_prefault(ft__slot_t *s);
/* The same, FT_PREFAULT_PIECE bytes at a time, calling between(arg) after
 * each piece: an SMP keeps its heartbeats going (a slot of tens of GB
 * takes tens of seconds to fault in, longer than FT_TIMEOUT). */
#define FT_PREFAULT_PIECE (64u << 20)
void ft__slot_prefault_paced(ft__slot_t *s, void (*between)(void *), void *arg);
/* The same for [off, off + len) of the slot's mapping, writable (a trainer
 * before its first copy into its region). */
void ft__slot_prefault_range(ft__slot_t *s, uint64_t off, uint64_t len);
/* The same for a range whose pages the file already holds, written once
 * (a slot file ft-spare prepared): on tmpfs (or ramfs) mapped as a read
 * would map them, many a fault (the kernel maps the pages around a read
 * fault that are there and written; writable, as such a mapping needs no
 * write notice), where a write fault maps one page.  The 2-vCPU VM, 341 MiB
 * prepared: 36-46 ms against 78-95 ms, no fault on the writes after.  A
 * page never written (only reserved, or beyond what was prepared) costs a
 * fault as before; elsewhere (a disk file system) it is
 * ft__slot_prefault_range. */
void ft__slot_prefault_made(ft__slot_t *s, uint64_t off, uint64_t len);

/* Open and validate an existing slot.  FT_ENOENT when it does not exist.
 * msg may be NULL. */
int ft__slot_open(ft__slot_t *s, const ft__dir_t *dir, int idx,
                  const char *job, char *msg, size_t msglen);
void ft__slot_close(ft__slot_t *s);

/* The state (FT_SLOT_STATE_INVALID if the word went bad since the slot
 * was validated). */
uint32_t ft__slot_state(const ft__slot_t *s);
void ft__slot_set_state(ft__slot_t *s, uint32_t state);

/*
 * The writers of covered fields.  Each recomputes hdr_crc after its change
 * -- but only when the header was intact before it: a header damaged in
 * memory is never blessed with a fresh checksum, it stays refused.
 */
/* Is the header intact now: checksum and state word? */
int ft__slot_intact(const ft__slot_t *s);
/* Start filling a version: FILLING, version, step, epoch. */
void ft__slot_begin(ft__slot_t *s, uint64_t version, uint64_t step,
                    uint64_t epoch, uint64_t layout);
/* The training step the version holds (known once every trainer wrote). */
void ft__slot_set_step(ft__slot_t *s, uint64_t step);
/* The CRCs of the k data chunks, computed elsewhere (ec/exchange.c
 * computes them as the chunks go out). */
void ft__slot_set_data_crcs(ft__slot_t *s, const uint64_t *crc);
/* The CRCs of all k+m chunks, computed elsewhere (recovery/rebuild.c: by
 * the link that made each rebuilt chunk's bytes, as it sent them). */
void ft__slot_set_crcs(ft__slot_t *s, const uint64_t *crc);

/* CRC64 of data chunk i (0..k-1) or parity chunk k+j, as held now. */
uint64_t ft__slot_chunk_crc(const ft__slot_t *s, uint32_t chunk);

/* Chunks [first, first + n) about to be read for the first time in this
 * process (a survey, a restore): their pages faulted in in one pass
 * (base/pages.h).  Changes nothing. */
void ft__slot_prefault_read(const ft__slot_t *s, uint32_t first, uint32_t n);
uint8_t *ft__slot_chunk(const ft__slot_t *s, uint32_t chunk);
/* Compute and store the CRCs of the data chunks (LOCAL needs them). */
void ft__slot_seal_data(ft__slot_t *s);
/* Compute and store the CRCs of the parity chunks. */
void ft__slot_seal_parity(ft__slot_t *s);
/* Verify chunks [first, first+n): FT_ECORRUPT naming the first bad chunk.
 * msg may be NULL. */
int ft__slot_verify(const ft__slot_t *s, uint32_t first, uint32_t n, char *msg,
                    size_t msglen);
/* Verify every chunk overlapping [off, off+len) of the file.  msg may be
 * NULL. */
int ft__slot_verify_range(const ft__slot_t *s, uint64_t off, uint64_t len,
                          char *msg, size_t msglen);

/* The version one slot holds whole, as the restore rule counts it: the
 * slot opened and validated (open != 0) and its state ENCODED or COMMITTED --
 * every local trainer wrote it, its CRCs are sealed and this node's parity
 * is written, so it counts for the restore rule whether or not the commit
 * notice came.  0 for a slot that holds none: not open, EMPTY, FILLING or
 * LOCAL, or version 0.  Pure: the caller reads state (ft__slot_state) and
 * version from the header, or from a survey of them; neither is looked at
 * when open is 0. */
uint64_t ft__slot_held(int open, uint32_t state, uint64_t version);
/* held[i] = ft__slot_held of sl[i], a slot being open when it is mapped
 * (map != NULL; ft__slot_open leaves a slot it refuses unmapped): this
 * node's row of ft__newest_common's held. */
void ft__slots_held(const ft__slot_t sl[FT_NSLOTS], uint64_t held[FT_NSLOTS]);

/* The restore rule of docs/design.md section 7: the newest version that every
 * counted node holds whole (at least ENCODED: all nodes encoded it, so it
 * is committed even if the commit notice was lost).  held[node * FT_NSLOTS
 * + i]: the versions node holds whole (ft__slot_held), 0 for none, in any
 * slot order; ignore (NULL or one flag per node) leaves nodes out, such as
 * spares.  0 when there is none, when nnodes is 0 or every node is left
 * out.  Only version numbers are compared (not epochs or steps). */
uint64_t ft__newest_common(const uint64_t *held, int nnodes,
                           const unsigned char *ignore);

/* What ft-restore saw of one slot of a node, for ft__newest_committed. */
typedef struct ft__slot_seen {
  uint64_t held;     /* ft__slot_held: the version it holds whole, 0 none */
  uint8_t committed; /* and its state is COMMITTED */
  uint8_t unusable;  /* missing, or failed validation: it may have held
                      * anything, a committed version included */
} ft__slot_seen_t;

/*
 * ft-restore's rule (docs/design.md section 7): the newest version that
 * counts as committed.  seen[node * FT_NSLOTS + i] is slot i of node;
 * ignore (NULL, or one flag per node) leaves nodes out, such as spares.  A
 * version v that some counted node holds whole counts when
 *   - some counted node holds it COMMITTED (the commit needed every node to
 *     have encoded it), or
 *   - every counted node holds it whole or has its slot v % FT_NSLOTS
 *     unusable (what that slot held is unknown; a readable slot that does
 *     not hold v says v was never encoded there, so never committed).
 * 0 when no version counts.  A node that counts and lacks the version
 * returned has lost or damaged its copy: ft-restore rebuilds it, or
 * refuses -- it never skips to an older version, which could throw a
 * committed one away.
 */
uint64_t ft__newest_committed(const ft__slot_seen_t *seen, int nnodes,
                              const unsigned char *ignore);

/* ---- node metadata ---- */

typedef struct ft__buf_rec {
  char name[FT_NAME_MAX];
  uint64_t bytes;
  uint64_t offset; /* inside the rank region */
  uint64_t global_offset, global_bytes;
  uint32_t kind, memory;
} ft__buf_rec_t;

typedef struct ft__rank_rec {
  uint32_t rank;  /* rank in app_comm */
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
  uint32_t flags;            /* FT_META_* */
  uint64_t run; /* run id: random at a fresh start, kept by every relaunch
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
/* Does dir/name (a group table) hold mine's own entry for mine's layout?
 * 0 when it does not or cannot be read.  tmp: room for one entry. */
int ft__group_meta_matches(const ft__dir_t *dir, const char *name,
                           const ft__meta_t *mine, ft__meta_t *tmp);

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
/* Left by ft-restore in every live node's store when the versions held in
 * memory cannot be rebuilt and the disk tier holds one to resume from; it
 * holds FT_PERSIST_DIR.  The next launch's SMPs drop the store and restore
 * from disk (runtime/smp.c). */
#define FT_DISK_MARKER "restore.disk"

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
int ft__meta_drop_pending(const ft__dir_t *dir, const ft__meta_t *m,
                          char *msg, size_t msglen);

/* Atomic replacement of dir/name by len bytes: temp file (name.tmp, made
 * new: O_EXCL), fsync, rename, fsync of the directory (redis rdbSave).
 * msg may be NULL. */
int ft__store_write_file(const ft__dir_t *dir, const char *name,
                         const void *buf, size_t len, char *msg,
                         size_t msglen);
/* rename(dir/from, dir/to), then fsync of the directory.  msg may be
 * NULL. */
int ft__store_rename(const ft__dir_t *dir, const char *from, const char *to,
                     char *msg, size_t msglen);
/* Remove dir/name (a link in its place is removed, never followed); none
 * there is no error.  msg may be NULL. */
int ft__store_unlink(const ft__dir_t *dir, const char *name, char *msg,
                     size_t msglen);
/* Remove slot idx's file from dir, as ft__store_unlink does.  msg may be
 * NULL. */
int ft__slot_unlink(const ft__dir_t *dir, int idx, char *msg, size_t msglen);

/* Read a whole file of at most max bytes into a buffer to free with
 * ft__free (*buf NULL on failure); FT_ENOMEM (with msg) when there is no
 * room for it.  msg may be NULL. */
int ft__store_read_file(const ft__dir_t *dir, const char *name, size_t max,
                        uint8_t **buf, size_t *len, char *msg, size_t msglen);

/* dir/name (FT_GROUP_META or FT_GROUP_META_PENDING): the metadata of every
 * member of this node's group (each as ft__meta_encode wrote it), so that
 * the survivors can describe a lost member to its replacement.  msg may be
 * NULL. */
int ft__group_meta_write(const ft__dir_t *dir, const char *name,
                         const uint8_t *const *parts, const size_t *lens,
                         int n, char *msg, size_t msglen);
/* Read member pos (0-based) of dir/name into m.  msg may be NULL. */
int ft__group_meta_read(const ft__dir_t *dir, const char *name, int pos,
                        ft__meta_t *m, char *msg, size_t msglen);
/* The same from the len bytes of such a file (path names them). */
int ft__group_meta_decode(const uint8_t *buf, size_t len, int pos,
                          ft__meta_t *m, const char *path, char *msg,
                          size_t msglen);

/* write(2) until all n bytes are out (EINTR retried); 0 or -1 (errno). */
int ft__write_all(int fd, const uint8_t *p, size_t n);
/* pread(2) of exactly n bytes at off (EINTR retried): 0, or -1 with errno,
 * which is 0 when the file ended first. */
int ft__pread_all(int fd, void *buf, size_t n, uint64_t off);

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

/* Is slot idx of dir blank: absent, shorter than its magic, or with an
 * all-zero magic (what a crash leaves while ft__slot_create resizes it)?
 * A blank slot holds no version; one that is not blank yet fails
 * ft__slot_open is damaged and may have held a committed one. */
int ft__slot_blank(const ft__dir_t *dir, int idx);

/* Remove everything of the job's store in dir but the directory (and its
 * lock): meta, meta.next, group.meta, both slots, the adopt<N>/ stores,
 * and last FT_DISK_MARKER.
 * Close the slots' mappings first.  The first failure, with msg (may be
 * NULL). */
int ft__store_clear(const ft__dir_t *dir, char *msg, size_t msglen);

/* Remove every entry of the directory name in the directory dfd (files
 * only: what ftrt writes there, temporary files of a write cut short
 * included), then the directory; sub names it in msg.  A link or a file in
 * its place is removed, never followed.  None there is no error.  msg may
 * be NULL. */
int ft__store_remove_dir(int dfd, const char *name, const char *sub,
                         char *msg, size_t msglen);

/* Remove every adopt<N>/ store under dir (what ft-restore --mode shrink
 * left for a re-slice).  The first failure, with msg (may be NULL); what
 * could be removed is removed. */
int ft__store_remove_adopted(const ft__dir_t *dir, char *msg,
                             size_t msglen);

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

#endif
