/* Re-slicing restore after ft-restore --mode shrink (runtime/reslice.c). */
#ifndef FT_RUNTIME_RESLICE_H
#define FT_RUNTIME_RESLICE_H

#include "runtime/ctx.h"

/* An old rank's buffer table and who serves it (a node, or a file). */
typedef struct ft__reslice_entry {
  ft__rank_rec_t rec;
  int server;
} ft__reslice_entry_t;

typedef struct ft__reslice_request {
  uint32_t old_rank;
  uint64_t src_off; /* inside the old rank's region */
  uint64_t len;
} ft__reslice_request_t;

/* One piece of registered buffer reg: q from old rank q.old_rank, served
 * by server, into the buffer at dst_off. */
typedef struct ft__reslice_want {
  ft__reslice_request_t q;
  int server;
  int reg;
  uint64_t dst_off;
} ft__reslice_want_t;

/* The pieces of registered buffer reg for app rank me, appended to
 * w[*n] (room *cap, grown by doubling): every byte exactly once
 * (replicated old slices overlap; the first source of a byte wins).  A
 * slice of a global tensor comes from every old rank whose slice of the
 * same tensor (name and global size) overlaps it; a private buffer whole
 * from old rank me (same name and size).  FT_EMISMATCH, logged, when some
 * byte is held by no old rank; FT_ENOMEM. */
int ft__reslice_plan_buffer(ft_ctx_t *c, int reg,
                            const ft__reslice_entry_t *all, int nall, int me,
                            ft__reslice_want_t **w, int *n, int *cap);

/* Collective over app_comm: fill every registered buffer from the old
 * ranks' data held by the nodes (own slot `own`, adopt<N>/ stores). */
int ft__reslice_restore(ft_ctx_t *c, ft__slot_t *own);

#endif
