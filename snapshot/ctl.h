/*
 * The control segment: one shared mapping per node (store dir/ctl) through
 * which the trainers and the SMP of a running job talk without MPI.  Every
 * change bumps `seq` and wakes its futex, and every waiter sleeps on that
 * futex (with a timeout), so an idle SMP costs no CPU.
 *
 * The segment is recreated by the SMP at each launch; nothing in it needs to
 * survive a crash (the slots carry the durable state).
 */
#ifndef FT_SNAPSHOT_CTL_H
#define FT_SNAPSHOT_CTL_H

#include <stdint.h>

#include "snapshot/store.h"

typedef enum {
  FT_PHASE_IDLE = 0,
  FT_PHASE_LAYOUT,
  FT_PHASE_SNAPSHOT, /* trainers copying */
  FT_PHASE_CRC,
  FT_PHASE_ENCODE,
  FT_PHASE_COMMIT,
  FT_PHASE_RESTORE,
  FT_PHASE_DONE
} ft__phase_t;

const char *ft__phase_name(uint32_t phase);

/* What one local trainer publishes.  Its buffer table is as long as the
 * trainer made it (a model registers a buffer per tensor), so it is not
 * here but in a file of its own, dir/ctl.bufs<local index>
 * (ft__ctl_put_bufs), written before `registered` is set. */
typedef struct ft__ctl_rank {
  uint32_t pid;
  uint32_t app_rank;
  uint32_t registered; /* the buffer table is written (or reg_status says
                        * why not) */
  uint32_t finalized;
  uint64_t step;            /* training step of the snapshot being written */
  uint64_t written_version; /* last version whose copy ended */
  uint64_t gate_step;       /* step of the last hold gate passed (hold.h) */
  int32_t written_status;   /* FT_OK or why the copy failed */
  uint32_t nbufs;           /* records in the buffer table */
  uint64_t region_bytes;
  int32_t reg_status;       /* FT_OK, or why the table could not be written */
  uint32_t pad;
  char cpuset[64];
} ft__ctl_rank_t;

/* Per-phase counters of the SMP (seconds and bytes). */
typedef struct ft__ctl_stats {
  uint64_t snapshots, skipped;
  uint64_t bytes_sent, bytes_recv, bytes_protected;
  double cpu_s;
  double t_copy, t_crc, t_transfer, t_encode, t_commit; /* totals */
  double last_copy, last_crc, last_transfer, last_encode, last_commit;
  uint64_t last_bytes_sent, last_bytes_recv;
} ft__ctl_stats_t;

/* A hold armed at a point of the job (hold.h). */
typedef struct ft__ctl_hold {
  uint32_t armed;     /* generation, 0 when nothing is armed */
  uint32_t point;     /* ft__hold_point_t */
  uint64_t step;      /* hold at the first snapshot of step >= this */
  uint32_t held;      /* processes held at the point now */
  uint32_t passed;    /* processes that held and were let go */
  uint64_t held_step; /* step of the snapshot they hold in */
  uint32_t gen;       /* last generation handed out */
  uint32_t limit_s;   /* a held process lets go by itself after this long
                       * (0: never); FT_HOLD_LIMIT of whoever armed it */
} ft__ctl_hold_t;

/* The disk tier as this node's SMP sees it (runtime/flush.c; ft-status
 * shows it).  Written by the SMP's flush thread, read by anyone: a reader
 * may see fields of two flushes mixed, which only a display can suffer. */
typedef struct ft__ctl_persist {
  uint32_t enabled;
  int32_t status;    /* of the last flush that ended: FT_OK, FT_EBUSY
                      * (abandoned: its slot was needed), another error */
  uint64_t flushing; /* version being flushed now, 0 for none */
  uint64_t version, step; /* newest version this node flushed its part of */
  uint64_t complete; /* newest version this node saw complete on disk */
  uint64_t flushes, abandoned, failed;
  uint64_t bytes;    /* of the last flush that ended well */
  double seconds;
  char msg[256];     /* what went wrong last, "" when nothing did */
} ft__ctl_persist_t;

typedef struct ft__ctl {
  char magic[8];
  uint32_t format;
  uint32_t seq; /* futex word */
  uint32_t nlocal;
  uint32_t smp_pid;
  uint32_t pad_launch;
  uint64_t launch; /* random, made with the segment: stamps what trainers
                    * hand over in files (ctl.bufs<i>), which a pid reused
                    * by a later launch (a container) would not */
  uint32_t node, nnodes;
  uint32_t k, m, group, pos, group_size;
  uint32_t layout_ready;
  int32_t layout_status;
  uint32_t phase;
  int32_t smp_status; /* FT_OK, or the error that stopped the SMP */
  uint64_t restore_version, restore_step; /* 0: nothing to restore */
  uint32_t restore_reslice; /* restore point left by a shrink: re-slice */
  uint32_t restore_disk;    /* restore from the disk tier: restore_vdir of
                             * FT_PERSIST_DIR/<job> (persist/persist.h) */
  char restore_vdir[64];
  uint64_t prepared_version; /* trainers may write this version */
  int32_t prepared_slot;
  uint32_t pad2;
  uint64_t committed_version, committed_step;
  uint64_t started_ns;
  uint64_t smp_gate_step; /* step of the version the SMP protects (hold.h) */
  uint64_t smp_beat; /* the SMP's heartbeats so far: it moves while the SMP
                      * lives, however long a phase takes (base/pulse.h) */
  ft__ctl_hold_t hold;
  char host[FT_NAME_MAX];
  char msg[512];     /* message that goes with layout/smp status */
  char binding[160]; /* what the SMP did about CPU binding */
  char smp_cpus[160]; /* CPU list the SMP is bound to, "" when not bound */
  ft__ctl_stats_t stats;
  ft__ctl_persist_t persist;
  ft__ctl_rank_t rank[FT_MAX_LOCAL];
} ft__ctl_t;

/* Create (SMP) or attach (trainers, tools) dir/ctl, relative to the
 * directory's descriptor (store.h).  On failure, a status
 * from the errno of the call that failed (FT_ENOENT: no dir, or no ctl to
 * attach), FT_EMISMATCH (a ctl of another size) or FT_ECORRUPT (bad magic),
 * one line in msg naming the file and the cause, and *out NULL (never a
 * mapping already undone).  msg may be NULL. */
int ft__ctl_create(const ft__dir_t *dir, uint32_t nlocal, ft__ctl_t **out,
                   char *msg, size_t msglen);
int ft__ctl_attach(const ft__dir_t *dir, ft__ctl_t **out, char *msg,
                   size_t msglen);
void ft__ctl_detach(ft__ctl_t *ctl);

/* The buffer table of local trainer idx, for the SMP of the launch whose
 * control segment is ctl: written atomically to dir/ctl.bufs<idx> (records
 * with the launch's stamp and a CRC) by the trainer before it sets
 * registered.  msg may be NULL. */
int ft__ctl_put_bufs(const ft__ctl_t *ctl, const ft__dir_t *dir, uint32_t idx,
                     const ft__buf_rec_t *bufs, uint32_t nbufs, char *msg,
                     size_t msglen);
/* Read it back (the SMP): exactly nbufs records (what the trainer
 * published in ctl), stamped by this launch, names terminated, each inside
 * region_bytes; *bufs (ft__free; NULL when nbufs is 0) on success, NULL
 * and FT_ECORRUPT/FT_ENOMEM/an errno status with msg on failure.  The
 * file is removed once read.  msg may be NULL. */
int ft__ctl_get_bufs(const ft__ctl_t *ctl, const ft__dir_t *dir, uint32_t idx,
                     ft__buf_rec_t **bufs, char *msg, size_t msglen);

/* Publish a change: bump seq and wake every waiter. */
void ft__ctl_notify(ft__ctl_t *ctl);
/* Current seq, to pass to ft__ctl_wait after checking a condition. */
uint32_t ft__ctl_seq(const ft__ctl_t *ctl);
/* Sleep until seq differs from seen or timeout_s passes (spurious wakeups
 * possible: callers re-check their condition). */
void ft__ctl_wait(ft__ctl_t *ctl, uint32_t seen, double timeout_s);

uint64_t ft__load64(const uint64_t *p);
void ft__store64(uint64_t *p, uint64_t v);
uint32_t ft__load32(const uint32_t *p);
void ft__store32(uint32_t *p, uint32_t v);

double ft__now(void); /* CLOCK_MONOTONIC seconds */

#endif
