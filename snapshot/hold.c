/* Hold points: parsing of FT_HOLD, arming, and the wait at a point. */
#include "snapshot/hold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static const char *const names[] = {"none",   "step",   "snapshot", "crc",
                                    "encode", "commit", "restore"};

const char *ft__hold_point_name(uint32_t point) {
  return point <= FT_HOLD_RESTORE ? names[point] : "?";
}

int ft__hold_is_trainer(uint32_t point) {
  return point == FT_HOLD_STEP || point == FT_HOLD_SNAPSHOT;
}

static int parse_step(const char *s, uint64_t *out) {
  if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
    return -1;
  *out = strtoull(s, NULL, 10);
  return 0;
}

static int parse_phase(const char *s, size_t len) {
  for (uint32_t p = FT_HOLD_SNAPSHOT; p <= FT_HOLD_RESTORE; p++)
    if (strlen(names[p]) == len && strncmp(s, names[p], len) == 0)
      return (int)p;
  return -1;
}

int ft__hold_parse(const char *s, ft__hold_spec_t *out) {
  memset(out, 0, sizeof(*out));
  if (!s)
    return -1;
  if (strncmp(s, "step=", 5) == 0) {
    out->point = FT_HOLD_STEP;
    return parse_step(s + 5, &out->step);
  }
  if (strncmp(s, "phase=", 6) != 0)
    return -1;
  s += 6;
  const char *comma = strchr(s, ',');
  int p = parse_phase(s, comma ? (size_t)(comma - s) : strlen(s));
  if (p < 0)
    return -1;
  out->point = (uint32_t)p;
  if (!comma)
    return 0;
  if (strncmp(comma + 1, "step=", 5) != 0)
    return -1;
  return parse_step(comma + 6, &out->step);
}

/* Part i (0-based) of a ';'-separated list into part; 0 when there is no
 * such part or it does not fit. */
static int part_of(const char *list, int i, char *part, size_t len) {
  const char *p = list;
  for (; p && i > 0; i--) {
    p = strchr(p, ';');
    p = p ? p + 1 : NULL;
  }
  if (!p)
    return 0;
  const char *end = strchr(p, ';');
  size_t n = end ? (size_t)(end - p) : strlen(p);
  if (n >= len)
    return 0;
  memcpy(part, p, n);
  part[n] = '\0';
  return 1;
}

int ft__hold_parse_list(const char *s) {
  char part[96];
  ft__hold_spec_t h;
  if (!s || !*s)
    return -1;
  int i = 0, restore = 0, others = 0;
  for (; part_of(s, i, part, sizeof(part)); i++) {
    if (ft__hold_parse(part, &h) != 0)
      return -1;
    /* one point per kind of process: a second would never be armed */
    if (h.point == FT_HOLD_RESTORE ? restore++ : others++)
      return -1;
  }
  /* every part was read: as many as there are separators plus one */
  int parts = 1;
  for (const char *p = s; *p; p++)
    parts += *p == ';';
  return i == parts ? 0 : -1;
}

int ft__hold_spec_for(const char *spec, uint32_t mask, ft__hold_spec_t *out) {
  char part[96];
  for (int i = 0; spec && part_of(spec, i, part, sizeof(part)); i++)
    if (ft__hold_parse(part, out) == 0 && ((mask >> out->point) & 1))
      return 1;
  return 0;
}

void ft__hold_format(const ft__hold_spec_t *h, char *out, size_t len) {
  if (h->point == FT_HOLD_STEP)
    snprintf(out, len, "step=%llu", (unsigned long long)h->step);
  else if (h->step)
    snprintf(out, len, "phase=%s,step=%llu", ft__hold_point_name(h->point),
             (unsigned long long)h->step);
  else
    snprintf(out, len, "phase=%s", ft__hold_point_name(h->point));
}

uint32_t ft__hold_arm(ft__ctl_t *ctl, const ft__hold_spec_t *h) {
  ft__ctl_hold_t *d = &ctl->hold;
  uint32_t gen = d->gen + 1 ? d->gen + 1 : 1;
  d->gen = gen;
  d->point = h->point;
  d->step = h->step;
  d->limit_s = h->limit_s;
  __atomic_store_n(&d->armed, gen, __ATOMIC_SEQ_CST);
  ft__ctl_notify(ctl);
  return gen;
}

int ft__hold_too_late(const ft__ctl_t *ctl, const ft__hold_spec_t *h,
                      char *msg, size_t msglen) {
  if (!ft__hold_is_trainer(h->point)) {
    uint64_t s = __atomic_load_n(&ctl->smp_gate_step, __ATOMIC_SEQ_CST);
    if (s < h->step)
      return 0;
    return ft__msgf(1, msg, msglen,
                    "the SMP already protects step %llu (>= %llu)",
                    (unsigned long long)s, (unsigned long long)h->step);
  }
  for (uint32_t i = 0; i < ctl->nlocal && i < FT_MAX_LOCAL; i++) {
    uint64_t s = __atomic_load_n(&ctl->rank[i].gate_step, __ATOMIC_SEQ_CST);
    if (s >= h->step)
      return ft__msgf(1, msg, msglen,
                      "trainer rank %u already passed step %llu (>= %llu)",
                      ctl->rank[i].app_rank, (unsigned long long)s,
                      (unsigned long long)h->step);
  }
  return 0;
}

void ft__hold_release(ft__ctl_t *ctl) {
  __atomic_store_n(&ctl->hold.armed, 0, __ATOMIC_SEQ_CST);
  ft__ctl_notify(ctl);
}

void ft__hold_expired_msg(const ft__ctl_t *ctl, uint32_t point, uint64_t step,
                          char *out, size_t len) {
  ft__hold_spec_t h = {.point = point, .step = step};
  char spec[64];
  ft__hold_format(&h, spec, sizeof(spec));
  snprintf(out, len,
           "FT_HOLD: held at %s for %u s and nobody let it go: going on "
           "(FT_HOLD_LIMIT)",
           spec, ctl->hold.limit_s);
}

/* The generation armed now when it holds a process at point and step (the
 * rule of ft__hold_gate), else 0.  The arming's point and step are written
 * before its generation is published (ft__hold_arm), so a generation read
 * here comes with its own point and step. */
static uint32_t holding(const ft__ctl_hold_t *d, uint32_t point,
                        uint64_t step) {
  uint32_t g = __atomic_load_n(&d->armed, __ATOMIC_ACQUIRE);
  return g && d->point == point && step >= d->step ? g : 0;
}

int ft__hold_at(ft__ctl_t *ctl, uint32_t gen, uint32_t point, uint64_t step) {
  ft__ctl_hold_t *d = &ctl->hold;
  /* The arming the gate saw, or one that replaced it (ft-hold arm
   * --replace) and holds here too. */
  if (!gen || !(gen = holding(d, point, step)))
    return 0;
  d->held_step = step;
  __atomic_add_fetch(&d->held, 1, __ATOMIC_ACQ_REL);
  ft__ctl_notify(ctl);
  uint32_t limit = d->limit_s;
  double until = ft__now() + limit;
  int rc = 1;
  for (;;) {
    uint32_t seq = ft__ctl_seq(ctl);
    uint32_t now = holding(d, point, step);
    if (!now)
      break; /* released, withdrawn, or replaced by one that is not here */
    if (now != gen) { /* replaced by one that holds here too: its bound */
      gen = now, limit = d->limit_s;
      until = ft__now() + limit;
    }
    double left = until - ft__now();
    if (limit && left <= 0) {
      /* Only the arming this process held at: a newer one stays. */
      uint32_t want = gen;
      if (__atomic_compare_exchange_n(&d->armed, &want, 0, 0, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST))
        rc = FT_HOLD_EXPIRED;
      break;
    }
    ft__ctl_wait(ctl, seq, limit && left < 1.0 ? left : 1.0);
  }
  __atomic_sub_fetch(&d->held, 1, __ATOMIC_ACQ_REL);
  __atomic_add_fetch(&d->passed, 1, __ATOMIC_ACQ_REL);
  ft__ctl_notify(ctl);
  return rc;
}
