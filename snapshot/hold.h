/*
 * Hold points: the other half of fault injection (fault.h is the first).
 * A test or ft-chaos arms a hold for a named point of the job; the
 * processes that reach that point stop there, sleeping on the control
 * segment's futex, until the hold is released (after the fault was
 * delivered) or withdrawn, or until the arming's bound (FT_HOLD_LIMIT,
 * default 600 s) has passed: then the held process lets go by itself,
 * withdrawing the arming for everyone, and its caller says so.  A tool
 * that armed a hold and died can leave a job stopped for that long, never
 * for good.  Until then the job cannot run past the point, so a fault "at
 * step 8" lands at step 8 however slow the machine is.
 *
 *   FT_HOLD=step=N            every trainer, once the snapshot of the first
 *                             snapshot step >= N is committed on every node
 *   FT_HOLD=phase=P[,step=N]  P = snapshot: every trainer in the middle of
 *                             its copy; crc, encode, commit: the SMP on
 *                             entering that phase; restore: ft-restore in
 *                             the middle of a rebuild; each for the first
 *                             snapshot of step >= N (default 0: the next)
 *
 * The arming lives in the node's control segment (ctl.h), written by the
 * SMP from FT_HOLD at launch or by ft-hold into a running job, so that one
 * load of `armed` is all a point costs when nothing is armed.  A hold is
 * one-shot: once released, the point lets everyone pass.
 */
#ifndef FT_SNAPSHOT_HOLD_H
#define FT_SNAPSHOT_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/ctl.h"

typedef enum {
  FT_HOLD_NONE = 0,
  FT_HOLD_STEP,     /* trainers, after the commit of the step */
  FT_HOLD_SNAPSHOT, /* trainers, mid-copy */
  FT_HOLD_CRC,      /* SMP */
  FT_HOLD_ENCODE,   /* SMP */
  FT_HOLD_COMMIT,   /* SMP */
  FT_HOLD_RESTORE   /* ft-restore */
} ft__hold_point_t;

typedef struct ft__hold_spec {
  uint32_t point;
  uint64_t step;
  uint32_t limit_s; /* the bound of a hold (0: none); not part of the text */
} ft__hold_spec_t;

/* FT_HOLD_LIMIT's default, seconds. */
#define FT_HOLD_LIMIT_S 600

/* Parse "step=N" or "phase=P[,step=N]".  0, or -1 when malformed. */
int ft__hold_parse(const char *s, ft__hold_spec_t *out);
/* FT_HOLD: one spec, or one for the job and one for ft-restore separated
 * by ';' (for example "step=8;phase=restore": the job's processes hold at
 * step 8, ft-restore at its rebuild).  0 when every part parses and no two
 * are for the same kind of process, -1 otherwise. */
int ft__hold_parse_list(const char *s);
/* FT_HOLD as given to one kind of process: 1 and *out for the first part
 * of spec that names one of the points in mask (a bit per
 * ft__hold_point_t), else 0. */
int ft__hold_spec_for(const char *spec, uint32_t mask, ft__hold_spec_t *out);
/* The same text back ("step=8", "phase=encode,step=8"). */
void ft__hold_format(const ft__hold_spec_t *h, char *out, size_t len);
const char *ft__hold_point_name(uint32_t point);
/* Trainer points are held by every local trainer, the others by one. */
int ft__hold_is_trainer(uint32_t point);

/* Write an arming into ctl and wake everyone.  Returns the generation.
 * One writer at a time (the SMP at launch, then ft-hold).  An arming
 * replaces the one before at once, held processes included: each goes on
 * unless the new one holds it where it is (its point, a step at or past
 * the new step), and then it stays held under the new one's bound. */
uint32_t ft__hold_arm(ft__ctl_t *ctl, const ft__hold_spec_t *h);
/* After arming h: did a process of this node already gate at or past its
 * step?  Then it may never stop there (1, why in msg) and the caller
 * withdraws the arming; 0 when every process will see it in time, msg
 * untouched.  msg may be NULL. */
int ft__hold_too_late(const ft__ctl_t *ctl, const ft__hold_spec_t *h,
                      char *msg, size_t msglen);
/* Withdraw or release: every held process goes on, no point holds again. */
void ft__hold_release(ft__ctl_t *ctl);

/*
 * The gate, where a process decides once per snapshot whether it will hold
 * in it: it publishes the step it is at (*gate, read by ft-hold to tell an
 * arming that came too late), then reads the arming.  Returns the armed
 * generation when this step is to be held at one of the points in `mask`
 * (a bit per ft__hold_point_t), else 0: one load and a compare when
 * nothing is armed.
 */
static inline uint32_t ft__hold_gate(ft__ctl_t *ctl, uint64_t *gate,
                                     uint64_t step, uint32_t mask) {
  __atomic_store_n(gate, step, __ATOMIC_SEQ_CST);
  uint32_t gen = __atomic_load_n(&ctl->hold.armed, __ATOMIC_SEQ_CST);
  if (__builtin_expect(gen == 0, 1))
    return 0;
  return ((mask >> ctl->hold.point) & 1) && step >= ctl->hold.step ? gen : 0;
}

/* At `point` with the generation the gate returned: when it, or an arming
 * that replaced it and holds here too, is armed, sleep until released,
 * withdrawn or replaced by one that does not hold here.  Returns 0 if it
 * did not hold, 1 if it held and was let go, FT_HOLD_EXPIRED if it held
 * for the arming's limit_s and then let go by itself (withdrawing the
 * arming, so that every process held at it goes on): the caller says so. */
#define FT_HOLD_EXPIRED 2
/* What a caller says after FT_HOLD_EXPIRED at point and step ("FT_HOLD:
 * held at step=8 for 600 s and nobody let it go: going on
 * (FT_HOLD_LIMIT)"). */
void ft__hold_expired_msg(const ft__ctl_t *ctl, uint32_t point, uint64_t step,
                          char *out, size_t len);
int ft__hold_at(ft__ctl_t *ctl, uint32_t gen, uint32_t point, uint64_t step);

/* Is a process of this node held right now?  (Waits that would time out on
 * a held process extend their deadline instead.) */
static inline int ft__hold_active(const ft__ctl_t *ctl) {
  /* Armed too: a held process killed there leaves `held` counted, and must
   * not keep its node's waits from timing out once the hold is released. */
  return __atomic_load_n(&ctl->hold.armed, __ATOMIC_ACQUIRE) != 0 &&
         __atomic_load_n(&ctl->hold.held, __ATOMIC_ACQUIRE) != 0;
}

#endif
