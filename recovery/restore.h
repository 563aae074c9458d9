/*
 * ft-restore's engine (docs/design.md section 7).  One MPI rank per node of the
 * new node set (survivors, plus spares in replace mode) surveys its local
 * store; together they agree on the layout and on the newest version that
 * counts as committed (snapshot/store.h, ft__newest_committed), find the
 * lost nodes, the survivors whose copy of it is damaged or missing, and the
 * corrupted chunks, decode what is missing from the survivors with ISA-L,
 * place it, recompute lost parity, and write a new layout epoch.
 *
 * Nothing is changed before the whole plan is known to be recoverable: more
 * than m erasures in any stripe is refused (FT_ETOOMANY) with the survivors'
 * stores untouched.  Spares receive their metadata last (atomically), so a
 * restore killed half-way leaves stores that a second run completes.
 */
#ifndef FT_RECOVERY_RESTORE_H
#define FT_RECOVERY_RESTORE_H

#include <mpi.h>

#include "ftrt.h"
#include <stdint.h>

#include "base/fault.h"
#include "base/times.h"
#include "ec/layout.h"
#include "snapshot/ctl.h"
#include "snapshot/store.h"

#define FT_RESTORE_MAX_GROUP 256

/* What one rank found in its store; allgathered. */
typedef struct ft__rnode {
  int32_t has_meta, node, nnodes, k, m, group, pos, gsize;
  uint64_t epoch, run; /* layout epoch and run id of the metadata */
  uint64_t layout;     /* its slots stamped [layout, epoch] are described */
  uint64_t pend_epoch; /* epoch of a pending layout (store.h), 0: none */
  uint64_t pend_layout; /* and its layout number */
  int32_t pend_node;    /* and this node's index in it */
  uint64_t seen;        /* the highest epoch or layout number in the store */
  uint32_t flags, next_nnodes; /* of the metadata: FT_META_RESLICE, and the
                                * node count of its re-sliced job */
  uint64_t version[FT_NSLOTS], step[FT_NSLOTS], chunk[FT_NSLOTS];
  uint64_t vepoch[FT_NSLOTS]; /* epoch in the slot header: where it was made */
  uint64_t vlayout[FT_NSLOTS]; /* layout in the slot header */
  uint32_t state[FT_NSLOTS];
  int32_t slot_ok[FT_NSLOTS];
  int32_t err; /* a store that exists but cannot be read */
  int32_t members[FT_RESTORE_MAX_GROUP]; /* node of each group position
                                         * (32 bits: a job may have more
                                         * than 32,767 nodes) */
  char host[FT_NAME_MAX];
  char err_msg[256];
  /* Damaged copies (survey.c read_slots): why a slot was not read (0: it
   * was; FT_ENOENT: missing), and whether the metadata was unreadable
   * (err_msg says why): then the node counts as lost, and this rank as a
   * node without a store that can take its place. */
  int32_t slot_rc[FT_NSLOTS];
  int32_t meta_bad;
  int32_t marked; /* its store holds FT_DISK_MARKER (a hand-over to disk) */
  char slot_msg[FT_NSLOTS][192];
} ft__rnode_t;

typedef enum { FT_RESTORE_REPLACE = 0, FT_RESTORE_SHRINK = 1 } ft__rmode_t;

typedef struct ft__restore_opts {
  ft__rmode_t mode;
  int dry_run;
  int verify;        /* check every stripe instead of restoring */
  int verify_losses; /* with verify: decode every loss set of <= m nodes */
  int json;
  int quiet;
} ft__restore_opts_t;

typedef struct ft__restore {
  MPI_Comm comm;
  int rank, size;
  char job[FT_JOB_MAX];
  char store_root[FT_PATH_MAX]; /* for messages: dir is derived from it */
  size_t piece_bytes;           /* unit of the rebuild's transfers */
  ft__restore_opts_t opts;
  ft__fault_t fault;
  int world_rank; /* the rank FT_FAULT's @rN names: in ft_init's rebuild
                     the SMP's world rank, not its rank in comm */
  ft__ctl_t *ctl; /* only while FT_HOLD names phase=restore (hold.h) */
  ft__dir_t dir; /* this node's store (store.h): fd -1 until found or
                 * made (a spare has none at first) */
  char host[FT_NAME_MAX];
  ft__meta_t *meta; /* this rank's metadata, when it has one */
  const char *gname; /* its group table: FT_GROUP_META or
                      * FT_GROUP_META_PENDING, whichever matches its
                      * metadata's layout; NULL: none (survey.c) */
  ft__slot_t slot[FT_NSLOTS];
  ft__slot_t *adopted; /* [nnodes] shrink: lost nodes' data adopted here */
  ft__rnode_t *all; /* [size] */
  /* agreed */
  int nnodes, k, m, ngroups;
  uint64_t epoch, version, step;
  uint64_t vepoch; /* layout epoch the version was made at (slot headers) */
  uint64_t vlayout; /* and the layout it was encoded under */
  uint64_t next_epoch; /* of the metadata a rebuild writes: above every epoch
                        * and layout number any rank's store holds, so that
                        * no number is ever handed out twice (store.h) */
  int *rank_of_node;         /* [nnodes] rank holding the node, -1 lost */
  int *group_of, *pos_of;    /* [nnodes] */
  int *gsize;                /* [ngroups] */
  int (*members)[FT_RESTORE_MAX_GROUP]; /* [ngroups][pos] node */
  char (*hosts)[FT_NAME_MAX];           /* [nnodes] host of each node */
  uint64_t *chunk_of_group; /* [nnodes]: chunk bytes of each group (a
                             * group index is below nnodes; a fixed table
                             * overflowed past 256 groups) */
  unsigned char *bad;        /* [size][FT_MAX_CHUNKS] chunk CRC failures */
  int my_slot;               /* slot of this rank holding the version */
  int stale;  /* this rank's store is of an older layout epoch than the
               * newest one and not part of it: cleared before reuse */
  int resync; /* a member still at an older epoch (a restore cut short
               * while it wrote the new one): write the epoch again */
  int reslice; /* the stores hold the re-slice point of an earlier shrink
                * (FT_META_RESLICE): lost nodes may be adopted */
  unsigned char *adopt; /* [nnodes] a lost node's data is adopted by a
                         * survivor (data only, re-sliced at relaunch)
                         * rather than rebuilt whole on a spare */
  /* Members that count and lack a whole copy of the version (their slot
   * failed validation, is missing, or holds another version): erasures of
   * every stripe of their group, rebuilt in place (survey.c mark_damaged,
   * prepare.c ft__reshape_damaged). */
  unsigned char *damaged; /* [size] */
  int ndamaged;
  int ncleared; /* slots that failed validation and hold nothing to keep:
                 * removed, so that the relaunch finds none (finish.c) */
  /* results */
  int full;  /* this rank's store had no room for a slot (FT_ENOSPC) */
  int never; /* no version was ever committed (survey.c, never_committed):
              * FT_ENOSNAPSHOT, and nothing is lost by a fresh start */
  int disk; /* more losses than the code rebuilds: the relaunch resumes
             * from the disk tier, version disk_version (step disk_step) */
  uint64_t disk_version, disk_step;
  int nlost, ncorrupt;
  uint64_t bytes_rebuilt;
  int prepared; /* slots made from a prepared spare's files (ft-spare):
                 * this rank's, after the rebuild every rank's */
  double seconds;
  /* for ft-launch's account of a recovery (base/times.h): MPI up, survey
   * done, rebuild done (wall-clock ms) */
  int64_t mpi_ms, surveyed_ms, rebuilt_ms;
  char msg[1024];
} ft__restore_t;

/* Zero r: no communicator, no store, no slot (descriptors -1). */
void ft__restore_init(ft__restore_t *r);

/* Release what a run of the engine allocated and mapped in r (not r->dir,
 * r->ctl, nor r->comm, which the caller gave or made). */
void ft__restore_free(ft__restore_t *r);

/* Is the chunk with this role (0..k-1 data, k.. parity) of node unusable:
 * the node is lost, its copy of the version is damaged, or the chunk
 * failed its CRC? */
int ft__chunk_bad(const ft__restore_t *r, int node, int role);

/* ft__msgf into r->msg (ft__vmsgf): the restore's one message, which
 * ft__ragree hands to every rank.  Returns rc. */
int ft__rsay(ft__restore_t *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* After FT_ENOSNAPSHOT with r->never (no version was ever committed, so a
 * fresh start loses nothing): every store of the job among the ranks is
 * cleared (not under opts.dry_run), so that the next launch, on any hosts
 * and in any shape, starts the job afresh as its first launch did; r->msg
 * says so, ending with `next` (what happens now).  Collective over
 * r->comm. */
int ft__restore_start_over(ft__restore_t *r, const char *next);

/* Agreement over r->comm: the most negative status; everyone gets r->msg
 * from the lowest rank that failed with a message. */
int ft__ragree(ft__restore_t *r, int rc);

/* k of group g. */
int ft__group_k(const ft__restore_t *r, int g);

/* Node holding role `role` (0..k-1 data, k.. parity) of stripe s of g. */
int ft__node_at(const ft__restore_t *r, int g, int s, int role);

#endif
