/*
 * The context: all state of one process of a job hangs off it (CONTRIBUTING.md rule 4).
 * A process is either its node's SMP or a trainer; the fields used by each
 * role are grouped.
 */
#ifndef FT_RUNTIME_CTX_H
#define FT_RUNTIME_CTX_H

#include <pthread.h>

#include "base/fault.h"
#include "base/times.h"
#include "cuda/cuda.h"
#include "ftrt.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "snapshot/ctl.h"
#include "snapshot/store.h"

typedef struct ft__reg {
  char name[FT_NAME_MAX];
  void *ptr;
  size_t bytes;
  uint64_t offset; /* inside this rank's region */
  ft_buf_opts_t opts;
} ft__reg_t;

struct ft_ctx {
  ft__config_t cfg;
  ft__log_t log;
  int mpi_owned; /* ft_init called MPI_Init */
  MPI_Comm node_comm, app_comm, smp_comm;
  /* app_comm's duplicate for the library's point-to-point messages (a
   * re-sliced restore): a receive the application has posted on app_comm
   * can never take one of them. */
  MPI_Comm lib_comm;
  int world_rank, world_size;
  int role;        /* FT__ROLE_*: what the process asked to be */
  int smp_program; /* the job's SMPs are ft-smp's processes (MPMD) */
  int is_smp;
  int node_size; /* ranks of this node, SMP included */
  int nlocal;    /* trainers of this node */
  int local_idx; /* this trainer's index on the node */
  int vnode;     /* virtual node index, -1 on real nodes */
  char host[FT_NAME_MAX];
  ft__dir_t dir; /* the store directory (store.h), open from start-up */
  ft__ctl_t *ctl;
  ft__fault_t fault;
  struct ft__smp *smp; /* SMP only */

  /* trainer */
  int nregs, cap_regs; /* regs[nregs], room for cap_regs: grows by
                        * doubling, freed with the context */
  ft__reg_t *regs;
  uint64_t region_bytes;
  int published;     /* registration table handed to the SMP */
  int layout_status; /* what the layout answered, kept for later calls */
  int frozen;        /* no more ft_register */
  ft__slot_t slot[FT_NSLOTS];
  uint64_t version;  /* last snapshot started */
  uint32_t hold_gen; /* hold armed for this snapshot (hold.h), else 0 */
  pthread_t copier;
  int copying;
  int copy_slot;
  uint64_t copy_version;
  int copy_status;
  ft__cuda_t *cuda;
  ft__times_t times; /* for ft-launch's account of a recovery */
  /* per slot mapping: 0 not tried, 1 pinned, -1 refused by CUDA (copies
   * then go through CUDA's staging: the same bytes, slower) */
  int cuda_pinned[FT_NSLOTS];
  int cuda_pin_warned; /* the refusal was logged once */
  /* per slot mapping: this rank's region faulted in (base/pages.h) */
  int region_faulted[FT_NSLOTS];
};

/* Pass a fault point (base/fault.h). */
#define FT_FAULT_POINT(c, name)                                                \
  ft__fault_point(&(c)->fault, (name), (c)->world_rank, (c)->host)

#endif
