/*
 * One version, from written to committed.  Version V is always written to
 * slot V % 2, prepared only once V-1 has committed in the other slot (the
 * reuse rule, snapshot/store.h), in this launch's geometry (the slot is
 * made anew otherwise).  Once every local trainer has written V, its data
 * CRCs are sealed (LOCAL), its parity encoded with the group (ENCODED) and
 * the SMPs agree on it in the commit allreduce (COMMITTED); then a due
 * flush starts and slot V+1 is prepared.  A failed encode still joins the
 * commit, offering only V-1, so that no node commits V.  The SMP's hold
 * points (crc, encode, commit) and fault points are passed here.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>

#include "base/times.h"
#include "ec/exchange.h"
#include "runtime/smp_impl.h"
#include "snapshot/hold.h"

static void poll_pulse(void *pulse) { (void)ft__pulse_poll(pulse); }

static int same_geom(const ft__slot_t *sl, const ft__slot_geom_t *g) {
  const ft__slot_hdr_t *h = sl->hdr;
  return sl->map && h->seg_bytes == g->seg_bytes &&
         h->chunk_bytes == g->chunk_bytes && h->k == g->k && h->m == g->m &&
         h->nlocal == g->nlocal &&
         memcmp(h->rank_off, g->rank_off, sizeof(h->rank_off)) == 0 &&
         memcmp(h->rank_bytes, g->rank_bytes, sizeof(h->rank_bytes)) == 0;
}

/* Slot i in this launch's geometry: made anew unless it already is.  A
 * slot whose header went bad while mapped is made anew too (its writers
 * never bless a damaged header with a new checksum, store.h). */
int ft__smp_shape_slot(smp_t *s, int i) {
  ft__slot_t *sl = &s->store.slot[i];
  if (same_geom(sl, &s->layout.geom) && ft__slot_intact(sl))
    return FT_OK;
  if (sl->map)
    ft__slot_close(sl);
  int rc =
      ft__slot_create_paced(sl, &s->c->dir, i, s->c->cfg.job, &s->layout.geom,
                            poll_pulse, &s->pulse, s->msg, sizeof(s->msg));
  if (rc)
    return rc;
  if (sl->unreserved && !s->store.warned_unreserved) {
    s->store.warned_unreserved = 1;
    FT_LOGW(&s->c->log,
            "%s: its file system cannot reserve space (fallocate: not "
            "supported): should the store fill up, a write into the slot "
            "is a SIGBUS rather than FT_ENOSPC; keep the store on tmpfs",
            sl->path);
  }
  /* Its pages made in bulk, not a fault at a time as the trainers'
   * copies, the CRCs and the parity first touch them; a piece at a time
   * with heartbeats between (trainers and peers hear this SMP). */
  ft__slot_prefault_paced(sl, poll_pulse, &s->pulse);
  return FT_OK;
}

/* Slot v % 2 may be overwritten: the other slot holds v-1 committed. */
int ft__smp_prepare(smp_t *s, uint64_t v) {
  int i = (int)(v % FT_NSLOTS);
  ft__slot_t *sl = &s->store.slot[i];
  /* Before a byte of the slot changes: a flush from it publishes nothing. */
  ft__flush_cancel_slot(s->disk.flush, i);
  int rc = ft__smp_shape_slot(s, i);
  if (rc)
    return rc;
  ft__slot_begin(sl, v, 0, s->layout.epoch, s->layout.number);
  s->prepared = v;
  s->ctl->prepared_slot = i;
  ft__store64(&s->ctl->prepared_version, v);
  ft__ctl_notify(s->ctl);
  return FT_OK;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void encode_midway(void *arg) {
  smp_t *s = arg;
  FT_FAULT_POINT(s->c, "encode");
}

static int encode(smp_t *s, ft__slot_t *sl, ft__ctl_stats_t *st) {
  if (s->ec.m == 0)
    return FT_OK;
  /* The data CRCs are computed on the way out, then written to the header
   * through the store, which keeps its checksum. */
  uint64_t data_crc[FT_MAX_CHUNKS];
  ft__exchange_t x = {
      .comm = s->c->smp_comm,
      .members = s->ec.groups.members[s->ec.group],
      .order = s->job.order,
      .n = s->ec.gsize,
      .m = s->ec.m,
      .pos = s->ec.pos,
      .chunk_bytes = sl->hdr->chunk_bytes,
      .piece_bytes = s->c->cfg.piece_bytes,
      .data = ft__slot_chunk(sl, 0),
      .parity = ft__slot_chunk(sl, sl->hdr->k),
      .data_crc = data_crc,
      .pulse = &s->pulse,
      .midway = encode_midway,
      .midway_arg = s,
  };
  int rc = ft__exchange_encode(&x);
  if (rc == FT_ETIMEDOUT)
    rc = ft__smp_silent_peer(s, "encode");
  if (rc == FT_OK)
    ft__slot_set_data_crcs(sl, data_crc);
  st->last_transfer = x.t_transfer;
  st->last_encode = x.t_encode;
  st->last_crc += x.t_crc;
  st->last_bytes_sent = x.bytes_sent;
  st->last_bytes_recv = x.bytes_recv;
  return rc;
}

static void account(ft__ctl_stats_t *tot, const ft__ctl_stats_t *last,
                    uint64_t protected_bytes, double cpu) {
  tot->snapshots++;
  tot->last_crc = last->last_crc;
  tot->last_transfer = last->last_transfer;
  tot->last_encode = last->last_encode;
  tot->last_commit = last->last_commit;
  tot->last_copy = last->last_copy;
  tot->last_bytes_sent = last->last_bytes_sent;
  tot->last_bytes_recv = last->last_bytes_recv;
  tot->t_copy += last->last_copy;
  tot->t_crc += last->last_crc;
  tot->t_transfer += last->last_transfer;
  tot->t_encode += last->last_encode;
  tot->t_commit += last->last_commit;
  tot->bytes_sent += last->last_bytes_sent;
  tot->bytes_recv += last->last_bytes_recv;
  tot->bytes_protected += protected_bytes;
  tot->cpu_s += cpu;
}

/* Under ft-launch, once per launch at the first commit (both slots made,
 * the job past its start-up and any restore): node 0's slot size, for
 * ft-launch to prepare its free spares with (scripts/ft-spare.c). */
static void say_slots(smp_t *s) {
  s->store.slots_said = 1;
  if (s->node == 0)
    ft__times_say("slots", "slot_bytes=%" PRIu64, s->layout.geom.seg_bytes);
}

/* The hold points an SMP passes in ft__smp_protect() (hold.h). */
#define SMP_HOLDS                                                              \
  ((1u << FT_HOLD_CRC) | (1u << FT_HOLD_ENCODE) | (1u << FT_HOLD_COMMIT))

int ft__smp_protect(smp_t *s, uint64_t v) {
  ft__slot_t *sl = &s->store.slot[v % FT_NSLOTS];
  ft__ctl_stats_t st = {0};
  double cpu0 = cpu_seconds(), t = ft__now();
  for (int i = 0; i < s->c->nlocal; i++)
    if (s->ctl->rank[i].written_status != FT_OK)
      return s->ctl->rank[i].written_status;
  ft__slot_set_step(sl, ft__load64(&s->ctl->rank[0].step));
  uint32_t hold =
      ft__hold_gate(s->ctl, &s->ctl->smp_gate_step, sl->hdr->step, SMP_HOLDS);
  ft__store32(&s->ctl->phase, FT_PHASE_CRC);
  ft__log_hold_at(&s->c->log, s->ctl, hold, FT_HOLD_CRC, sl->hdr->step);
  FT_FAULT_POINT(s->c, "crc");
  /* With peers, the data CRCs are computed as the chunks go out. */
  if (s->ec.m == 0)
    ft__slot_seal_data(sl);
  st.last_crc = ft__now() - t;
  ft__store32(&s->ctl->phase, FT_PHASE_ENCODE);
  ft__log_hold_at(&s->c->log, s->ctl, hold, FT_HOLD_ENCODE, sl->hdr->step);
  int rc = encode(s, sl, &st);
  if (rc == FT_OK)
    ft__slot_set_state(sl, FT_SLOT_LOCAL);
  /* The commit is collective: a failed encode still takes part, offering
   * only the previous version, so nobody commits v. */
  uint64_t offer = rc == FT_OK ? v : v - 1, agreed = 0;
  if (rc == FT_OK) {
    ft__slot_seal_parity(sl);
    ft__slot_set_state(sl, FT_SLOT_ENCODED);
  }
  ft__store32(&s->ctl->phase, FT_PHASE_COMMIT);
  ft__log_hold_at(&s->c->log, s->ctl, hold, FT_HOLD_COMMIT, sl->hdr->step);
  FT_FAULT_POINT(s->c, "commit");
  t = ft__now();
  int crc = ft__smp_min_u64(s, offer, &agreed, "commit");
  st.last_commit = ft__now() - t;
  if (rc == FT_OK)
    rc = crc;
  if (rc == FT_OK && agreed < v)
    rc = FT_EPEER;
  if (rc)
    return rc;
  ft__slot_set_state(sl, FT_SLOT_COMMITTED);
  s->committed = v;
  s->ctl->committed_step = sl->hdr->step;
  account(&s->ctl->stats, &st, sl->hdr->data_bytes, cpu_seconds() - cpu0);
  ft__store64(&s->ctl->committed_version, v);
  ft__store32(&s->ctl->phase, FT_PHASE_IDLE);
  ft__ctl_notify(s->ctl);
  if (s->layout.pending && (rc = ft__smp_promote_pending(s)))
    return rc;
  ft__smp_maybe_flush(s, v);
  rc = ft__smp_prepare(s, v + 1);
  if (rc == FT_OK && !s->store.slots_said)
    say_slots(s);
  return rc;
}
