/*
 * The SMP's private state, and the contract between the files that make up
 * the SMP (runtime/smp.c and runtime/smp_*.c; nothing else includes this
 * header, runtime/smp.h is the SMP's entry for ft_init).
 *
 * One smp_t per SMP process, made by ft__smp_start and freed by
 * ft__smp_free (smp_start.c).  Start-up runs these steps in this order.
 * Their collectives (over smp_comm) are run by every SMP or by none: a
 * local failure is agreed on first (ft__smp_agree_ok), so that no SMP is
 * left alone in a collective.
 *   smp_start.c    the store locked, read (slots, metadata, the disk
 *                  marker), the control segment made; the sequence itself
 *   smp_nodes.c    the nodes discovered, checked against the stores and
 *                  ordered; the run id; the erasure-coding groups
 *   smp_restore.c  the version to restore from memory, agreed
 *   smp_disk.c     the disk tier: usable or not, and with nothing in memory
 *                  the persisted version to restore
 * Then the loop (smp.c) serves the node: the layout once every local
 * trainer has registered (smp_layout.c), each version the trainers wrote
 * sealed, encoded and committed, the next slot prepared (smp_version.c),
 * committed versions handed to the disk tier's flush (smp_flush.c).  Every
 * wait on the other SMPs goes through smp_wait.c.
 *
 * Who writes what; the other files only read it.
 *   c, ctl, pulse
 *             smp_start.c
 *   nnodes, node, scratch, job, ec
 *             smp_nodes.c at start-up; read-only once start-up is done
 *   committed smp_restore.c (the restore point), smp_version.c (each commit)
 *   prepared  smp_version.c
 *   msg       whichever step fails (its message)
 *   store     smp_start.c reads the store into it; smp_restore.c marks the
 *             restore point's slot COMMITTED and swaps meta and pend when
 *             the pending layout is promoted; smp_disk.c forgets it when the
 *             job resumes from disk; smp_version.c (re)makes, prepares and
 *             commits the slots
 *   layout    smp_layout.c, once (done); smp_restore.c clears pending when
 *             the pending layout is promoted (at start-up, or after this
 *             launch's first commit)
 *   disk      smp_disk.c at start-up (flush is made by smp_start.c and
 *             dropped by smp_disk.c when the tier is unusable); the flush's
 *             schedule by smp_flush.c
 *   trainers  smp.c (the loop's watch on its trainers)
 *
 * Errors.  A function that fails writes its message into s->msg (when it
 * has one to give) and returns the status; ft__smp_stop posts it in the
 * control segment.  A wait that finds a peer silent for FT_TIMEOUT never
 * returns: it says which peer in the SMP's log and the control segment and
 * exits 1 at once (ft__smp_silent_peer), without another MPI call.
 */
#ifndef FT_RUNTIME_SMP_IMPL_H
#define FT_RUNTIME_SMP_IMPL_H

#include <stdint.h>

#include "base/pulse.h"
#include "ec/layout.h"
#include "runtime/ctx.h"
#include "runtime/flush.h"

typedef struct ft__smp {
  ft_ctx_t *c;
  ft__ctl_t *ctl;
  int nnodes, node;   /* node = index in the sorted node order */
  uint64_t committed; /* the newest committed version, 0 none */
  uint64_t prepared;  /* the version prepared for the trainers to write */
  ft__pulse_t pulse;  /* heartbeats with the other SMPs (base/pulse.h) */
  uint64_t *scratch;  /* [nnodes * FT_NSLOTS]: the allgathers after start-up */
  char msg[512];

  /* The job's nodes and run, agreed at start-up. */
  struct {
    int *order;                 /* [nnodes] smp_comm rank of each sorted node */
    char (*hosts)[FT_NAME_MAX]; /* [nnodes] host of each sorted node */
    uint64_t run;               /* run id (store.h) */
  } job;

  /* This node's erasure-coding group. */
  struct {
    MPI_Comm gcomm; /* the group, ranked by position */
    ft__groups_t groups;
    int k, m, group, pos, gsize;
  } ec;

  /* The node store and its slots. */
  struct {
    ft__slot_t slot[FT_NSLOTS];
    ft__meta_t *meta; /* metadata found at start (NULL: none) */
    ft__meta_t *pend; /* FT_META_PENDING found at start (NULL: none): a
                       * layout whose first version may not have committed */
    uint64_t seen;    /* the highest epoch or layout number in the store */
    int lock_fd; /* flock on the store: this launch's, until the process ends */
    int damaged; /* a slot that is not blank failed validation (store.h) */
    int marked;  /* this store holds FT_DISK_MARKER (read at start-up) */
    int warned_unreserved; /* said once that slots cannot be reserved */
    int slots_said;        /* told ft-launch the slot size (smp_version.c) */
  } store;

  /* This launch's layout, made once by the loop. */
  struct {
    int done;             /* made (or failed): the job is past start-up */
    ft__slot_geom_t geom; /* of both slots */
    ft__buf_rec_t *tabs[FT_MAX_LOCAL]; /* each local trainer's buffer table
                                        * (ctl.h), read at the layout */
    uint64_t epoch;  /* layout epoch this launch stamps its versions with */
    uint64_t number; /* epoch at which its grouping was made: the layout
                      * number (store.h) */
    int pending;     /* its layout is in the pending files until the first
                      * commit (store.h) */
  } layout;

  /* The disk tier (persist/persist.h). */
  struct {
    /* ft-restore gave the memory tier up, and every node dropped its
     * store: the disk tier must restore (agreed) */
    int dropped;
    uint64_t epoch;      /* the highest epoch named on disk (agreed) */
    uint64_t nonce;      /* this launch's, agreed: stamps its node manifests */
    ft__flush_t *flush;  /* flush.h, NULL without a disk tier */
    uint64_t next_flush; /* the first version the next flush may take */
    uint64_t want_flush; /* a committed version due for a flush while
                          * another ran, 0 none */
  } disk;

  /* The loop's watch on its trainers. */
  struct {
    double stopped_since[FT_MAX_LOCAL]; /* when a trainer was first seen
                                         * stopped by a signal, 0: running */
    double checked;                     /* when they were last looked at */
  } trainers;
} smp_t;

/* A node as every SMP describes itself at start-up (smp_nodes.c): the
 * allgather of node discovery, in smp_comm rank order. */
typedef struct node_id {
  char host[FT_NAME_MAX];
  char domain[FT_JOB_MAX];
  int rank;
  int stored_node; /* node index in this job's metadata, -1 without */
  int stored_nnodes;
  uint64_t stored_epoch; /* layout epoch of that metadata, 0 without */
  uint64_t pend_epoch;   /* of its pending layout, 0 without (store.h) */
  uint64_t stored_run;   /* its run id, 0 without */
  uint64_t new_run;      /* a fresh run id, should this launch start one */
  int marked;            /* FT_DISK_MARKER here */
  int empty;             /* the store holds nothing: no metadata, no slot
                          * holding a version, none damaged */
} node_id_t;

/* ---- smp.c: the loop ---- */

/* The SMP fails with rc: its message (s->msg, else ft_strerror(rc)) goes to
 * the log and, once the control segment exists, to the trainers with rc. */
void ft__smp_stop(smp_t *s, int rc);

/* ---- smp_wait.c: waiting on the other SMPs without spinning ---- */

/* Say which peer fell silent, post it (ft__smp_stop) and exit 1. */
int ft__smp_silent_peer(smp_t *s, const char *what);
/* Complete req while exchanging heartbeats (what names the wait in the
 * message of a silent peer). */
int ft__smp_wait_req(smp_t *s, MPI_Request *req, const char *what);
/* Collectives over smp_comm, waited for with ft__smp_wait_req. */
int ft__smp_allgather(smp_t *s, const void *in, void *out, int bytes,
                      const char *what);
int ft__smp_min_u64(smp_t *s, uint64_t in, uint64_t *out, const char *what);
/* Collective: FT_OK when every SMP's rc is FT_OK; else rc here (FT_EPEER
 * where rc was FT_OK). */
int ft__smp_agree_ok(smp_t *s, int rc, const char *what);

/* ---- smp_nodes.c: the nodes and their groups (start-up) ---- */

/* Discover, check and order the nodes, agree on the run id and form the
 * erasure-coding groups (collective); fills nnodes, node, job, ec and
 * scratch. */
int ft__smp_form_groups(smp_t *s);
/* A relaunch must match the job that wrote the store (local). */
int ft__smp_check_relaunch(smp_t *s);

/* ---- smp_restore.c: the version to restore from memory (start-up) ---- */

/* Agree on the newest version every node holds whole, refuse to discard a
 * committed one, settle the pending layout, and publish the restore point
 * in the control segment (collective); sets committed. */
int ft__smp_agree_restore(smp_t *s);
/* Every node re-slices the restore point left by a shrink, or none
 * (collective). */
int ft__smp_agree_reslice(smp_t *s);
/* A version of the pending layout has committed on every node: it becomes
 * the current layout (local). */
int ft__smp_promote_pending(smp_t *s);

/* ---- smp_disk.c: the disk tier at start-up ---- */

/* Act on the disk markers seen from every node (all[], in smp_comm rank
 * order; mine is this SMP's rank): with every node marked or empty, drop
 * the memory tier (all[] then shows no store anywhere); a stale marker is
 * removed. */
int ft__smp_settle_markers(smp_t *s, node_id_t *all, int mine);
/* FT_PERSIST_DIR set: check the tier, and with nothing to restore in
 * memory choose the persisted version to restore (collective). */
int ft__smp_agree_disk(smp_t *s);

/* ---- smp_layout.c: the layout ---- */

/* Once every local trainer registered: size the slots, choose the epoch,
 * write the metadata and share the group's (collective); the result is
 * posted in the control segment and layout.done set. */
int ft__smp_do_layout(smp_t *s);

/* ---- smp_version.c: one version ---- */

/* Slot i in this launch's geometry: made anew unless it already is. */
int ft__smp_shape_slot(smp_t *s, int i);
/* Prepare slot v % 2 for version v (the other slot holds v-1 committed). */
int ft__smp_prepare(smp_t *s, uint64_t v);
/* Version v is written by every local trainer: seal, encode, commit
 * (collective); then promote a pending layout, start a due flush and
 * prepare v + 1. */
int ft__smp_protect(smp_t *s, uint64_t v);

/* ---- smp_flush.c: the disk tier's flush ---- */

/* The flush's fault point (ft__flush_set_midway; arg: the smp_t). */
void ft__smp_flush_midway(void *arg);
/* Start the flush that is due, once none runs (the loop calls it). */
void ft__smp_flush_due(smp_t *s);
/* After the commit of v: a flush of v may be due. */
void ft__smp_maybe_flush(smp_t *s, uint64_t v);
/* The job ends: the newest committed version goes to disk first. */
void ft__smp_final_flush(smp_t *s);

#endif
