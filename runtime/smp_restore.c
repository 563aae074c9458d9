/*
 * The version to restore from memory, agreed at the SMP's start-up
 * (collective): the newest version that every node holds at least ENCODED,
 * under a layout its metadata describes (all nodes encoded it, so it is
 * committed even if the commit notice was lost in a crash).  Nothing
 * committed is thrown away unasked: a version some node holds COMMITTED
 * that not every node holds whole, or a damaged slot that may have held
 * one, refuses the launch (FT_ALLOW_ROLLBACK=1 and FT_FRESH=1 are the ways
 * to give versions up).  The agreed version settles the pending layout:
 * promoted if it was made under it, dropped otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "runtime/smp_impl.h"

/* The newest committed version this node holds, 0 for none. */
static uint64_t newest_committed(const smp_t *s) {
  uint64_t v = 0;
  for (int i = 0; i < FT_NSLOTS; i++)
    if (s->store.slot[i].map &&
        ft__slot_state(&s->store.slot[i]) == FT_SLOT_COMMITTED &&
        s->store.slot[i].hdr->version > v)
      v = s->store.slot[i].hdr->version;
  return v;
}

/* The restore may only throw away what was never committed.  Refused, with
 * the versions each node holds, when the version every node holds whole
 * (best, 0 for none) is older than one a node holds COMMITTED (some node
 * lost or damaged its copy), or when a slot is damaged (it may have held
 * the newest committed version) and a newer version than best, or none at
 * all, is what the nodes hold.  The way on is ft-restore (ft-launch
 * --restarts runs it): it rebuilds every copy a live node lost or damaged
 * of the newest version that counts as committed, and removes damaged
 * slots that hold nothing to keep, after which this refuses no more; or it
 * refuses (exit 3, nothing changed).  FT_ALLOW_ROLLBACK=1 and FT_FRESH=1
 * are the explicit ways to give versions up. */
static int refuse_discard(smp_t *s, const uint64_t *all, uint64_t best) {
  uint64_t committed = 0, intact = 0, newest = 0, allowed = 0;
  int rc =
      ft__smp_min_u64(s, ~newest_committed(s), &committed, "restore agreement");
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, !s->store.damaged, &intact, "restore agreement");
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, (uint64_t)s->c->cfg.allow_rollback, &allowed,
                         "restore agreement");
  committed = ~committed;
  for (int i = 0; i < s->nnodes * FT_NSLOTS; i++)
    newest = all[i] > newest ? all[i] : newest;
  if (rc || (committed <= best && (intact || (best && newest <= best))))
    return rc;
  if (best && allowed) { /* asked for, on every node: said, and done */
    FT_LOGW(&s->c->log,
            "FT_ALLOW_ROLLBACK=1: resuming from version %llu; "
            "version %llu of job '%s', committed but not held whole by every "
            "node, is discarded",
            (unsigned long long)best,
            (unsigned long long)(committed > best ? committed : newest),
            s->c->cfg.job);
    return FT_OK;
  }
  char found[384] = "";
  for (int n = 0; n < s->nnodes; n++) {
    const uint64_t *v = all + (size_t)s->job.order[n] * FT_NSLOTS;
    size_t used = strlen(found);
    snprintf(found + used, sizeof(found) - used, "%snode %d (%s): %llu/%llu",
             n ? ", " : "", n, s->job.hosts[n], (unsigned long long)v[0],
             (unsigned long long)v[1]);
  }
  char what[128];
  if (committed > best)
    snprintf(what, sizeof(what), "version %llu was committed",
             (unsigned long long)committed);
  else
    snprintf(what, sizeof(what),
             "a slot failed validation (see the warnings) "
             "and may have held a committed version");
  char held[64] = "no version is held whole by every node";
  if (best)
    snprintf(held, sizeof(held),
             "only version %llu is held whole by every node",
             (unsigned long long)best);
  char older[96] = "";
  if (best)
    snprintf(older, sizeof(older),
             "FT_ALLOW_ROLLBACK=1 resumes from "
             "version %llu and discards the newer one; ",
             (unsigned long long)best);
  return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "job '%s': %s, but %s (versions per node, 0 = none: %s). "
                  "Nothing was started, nothing changed. Run ft-restore to "
                  "rebuild the lost or damaged copies (--restarts does); %s"
                  "`--fresh` (FT_FRESH=1) starts over and discards it all",
                  s->c->cfg.job, what, held, found, older);
}

/* Is the copy in slot i described by this node's metadata (current or
 * pending): was it encoded under a layout the store still describes? */
static int described(const smp_t *s, int i) {
  uint64_t l = s->store.slot[i].hdr->layout, e = s->store.slot[i].hdr->epoch;
  return (s->store.meta && ft__meta_describes(s->store.meta, l, e)) ||
         (s->store.pend && ft__meta_describes(s->store.pend, l, e));
}

/* A version of the pending layout has committed on every node: it becomes
 * the current layout, replacing the old one and the re-slice point made in
 * it, whose adopted stores of lost nodes go. */
int ft__smp_promote_pending(smp_t *s) {
  int rc = ft__meta_promote(&s->c->dir, s->msg, sizeof(s->msg));
  if (rc)
    return rc;
  s->layout.pending = 0;
  s->ctl->restore_reslice = 0;
  char msg[512];
  if (ft__store_remove_adopted(&s->c->dir, msg, sizeof(msg)) != FT_OK)
    FT_LOGW(&s->c->log, "%s (the re-slice point is gone: never read)", msg);
  return FT_OK;
}

/* The version to restore is agreed: if the pending layout describes it,
 * every node encoded it under that layout, so it becomes the current one
 * (the re-slice point it replaces and its adopted stores go); otherwise
 * the pending layout never committed anything and is dropped. */
static int settle_pending(smp_t *s, int slot) {
  char msg[512];
  if (!s->store.pend)
    return FT_OK;
  const ft__slot_hdr_t *h = slot >= 0 ? s->store.slot[slot].hdr : NULL;
  if (!h || ft__meta_describes(s->store.meta, h->layout, h->epoch) ||
      !ft__meta_describes(s->store.pend, h->layout, h->epoch)) {
    if (ft__meta_drop_pending(&s->c->dir, s->store.meta, msg, sizeof(msg)) !=
        FT_OK)
      FT_LOGW(&s->c->log, "%s (a pending layout is never used)", msg);
    return FT_OK;
  }
  int rc = ft__smp_promote_pending(s);
  if (rc == FT_OK) {
    ft__meta_t *old = s->store.meta;
    s->store.meta = s->store.pend;
    s->store.pend = old;
  }
  return rc;
}

int ft__smp_agree_restore(smp_t *s) {
  uint64_t mine[FT_NSLOTS]; /* by slot: the version it holds whole, or 0 */
  ft__slots_held(s->store.slot, mine);
  for (int i = 0; i < FT_NSLOTS; i++)
    if (mine[i] && !described(s, i))
      mine[i] = 0; /* made under a layout no metadata here describes */
  uint64_t *all = s->scratch;
  int rc = ft__smp_allgather(s, mine, all, sizeof(mine), "restore agreement");
  uint64_t best = rc == FT_OK ? ft__newest_common(all, s->nnodes, NULL) : 0;
  if (rc == FT_OK)
    rc = refuse_discard(s, all, best);
  s->committed = best;
  int at = -1;
  for (int i = 0; best && i < FT_NSLOTS; i++)
    at = mine[i] == best ? i : at;
  if (rc == FT_OK)
    rc = settle_pending(s, at);
  for (int i = 0; rc == FT_OK && best && i < FT_NSLOTS; i++) {
    if (mine[i] != best)
      continue;
    ft__slot_set_state(&s->store.slot[i], FT_SLOT_COMMITTED);
    s->ctl->restore_version = best;
    s->ctl->restore_step = s->store.slot[i].hdr->step;
    s->ctl->restore_reslice =
        s->store.meta && (s->store.meta->flags & FT_META_RESLICE);
    s->ctl->committed_step = s->store.slot[i].hdr->step;
  }
  ft__store64(&s->ctl->committed_version, best);
  return rc;
}

/* Every node must take the same restore path (collective): either all
 * re-slice the restore point left by a shrink, or none. */
int ft__smp_agree_reslice(smp_t *s) {
  uint64_t all_set = 0, none_set = 0;
  uint32_t mine = s->ctl->restore_reslice;
  int rc = ft__smp_min_u64(s, mine, &all_set, "restore agreement");
  if (rc == FT_OK)
    rc = ft__smp_min_u64(s, !mine, &none_set, "restore agreement");
  if (rc == FT_OK && !all_set && !none_set)
    rc = ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "%s: some nodes hold a restore point left by ft-restore "
                  "--mode shrink and some do not (was it interrupted?): run "
                  "ft-restore --mode shrink again on these nodes",
                  s->c->dir.path);
  return rc;
}
