/* Store test fixtures (store_fixture.h).  Version v's bytes are a
 * pattern of version, rank and offset, so that any byte left from another
 * version, or written into the wrong region, shows in holds(). */
#include "tests/unit/store_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "ftrt.h"
#include "tests/unit/tmpdir.h"

const uint64_t rank_bytes3[3] = {1000, 5000, 123};

void geom3(ft__slot_geom_t *g, uint32_t k, uint32_t m) {
  ck_assert_int_eq(ft__slot_geom_local(g, 3, rank_bytes3), FT_OK);
  uint64_t chunk = (g->local_bytes + k - 1) / k;
  ck_assert_int_eq(ft__slot_geom_code(g, k, m, chunk), FT_OK);
}

static uint8_t pattern(uint64_t v, uint32_t who, uint64_t i) {
  return (uint8_t)(v * 131 + who * 17 + i * 7 + (i >> 8));
}

void fill_ranks(ft__slot_t *s, uint64_t v, int from8, int to8) {
  const ft__slot_hdr_t *h = s->hdr;
  for (uint32_t r = 0; r < h->nlocal; r++) {
    uint64_t a = h->rank_bytes[r] * (uint64_t)from8 / 8;
    uint64_t b = h->rank_bytes[r] * (uint64_t)to8 / 8;
    for (uint64_t i = a; i < b; i++)
      s->map[h->rank_off[r] + i] = pattern(v, r, i);
  }
}

void fill_parity(ft__slot_t *s, uint64_t v) {
  const ft__slot_hdr_t *h = s->hdr;
  for (uint64_t i = 0; i < h->parity_bytes; i++)
    s->map[h->parity_off + i] = pattern(v, 1000, i);
}

int holds(const ft__slot_t *s, uint64_t v) {
  const ft__slot_hdr_t *h = s->hdr;
  for (uint32_t r = 0; r < h->nlocal; r++)
    for (uint64_t i = 0; i < h->rank_bytes[r]; i++)
      if (s->map[h->rank_off[r] + i] != pattern(v, r, i))
        return 0;
  for (uint64_t i = 0; i < h->parity_bytes; i++)
    if (s->map[h->parity_off + i] != pattern(v, 1000, i))
      return 0;
  return 1;
}

void write_version(ft__slot_t *s, uint64_t v) {
  ft__slot_begin(s, v, v * 10, 1, 1);
  fill_ranks(s, v, 0, 8);
  ft__slot_seal_data(s);
  ft__slot_set_state(s, FT_SLOT_LOCAL);
  fill_parity(s, v);
  ft__slot_seal_parity(s);
  ft__slot_set_state(s, FT_SLOT_ENCODED);
  ft__slot_set_state(s, FT_SLOT_COMMITTED);
}

void create_slot(ft__slot_t *s, int idx, const ft__slot_geom_t *g) {
  char msg[512] = "";
  int rc = ft__slot_create(s, &sdir, idx, JOB, g, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "create: %s", msg);
}

void open_slot(ft__slot_t *s, int idx) {
  char msg[512] = "";
  int rc = ft__slot_open(s, &sdir, idx, JOB, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "open: %s", msg);
}

ft__meta_t *sample_meta(void) {
  ft__meta_t *m = calloc(1, sizeof(*m));
  ck_assert_ptr_nonnull(m);
  snprintf(m->job, sizeof(m->job), JOB);
  snprintf(m->host, sizeof(m->host), "node07.cluster");
  m->epoch = 3, m->layout = 2;
  m->run = 0x8badf00ddeadbeefull;
  ck_assert_int_eq(ft__meta_alloc_hosts(m, 5), FT_OK);
  m->node = 2, m->ntrainers = 20;
  m->k = 3, m->m = 2, m->group = 0, m->pos = 2, m->group_size = 5;
  m->nlocal = 4;
  for (uint32_t n = 0; n < m->nnodes; n++)
    snprintf(m->hosts[n], FT_NAME_MAX, "node%02u.cluster", 5 + n);
  for (uint32_t r = 0; r < 4; r++) {
    ft__rank_rec_t *rr = &m->ranks[r];
    rr->rank = 8 + r;
    /* rank 10 registered nothing */
    ck_assert_int_eq(ft__meta_alloc_bufs(m, r, r == 2 ? 0 : r + 1), FT_OK);
    uint64_t off = 0;
    for (uint32_t b = 0; b < rr->nbufs; b++) {
      ft__buf_rec_t *br = &rr->bufs[b];
      snprintf(br->name, sizeof(br->name), "layer%u.%s", b,
               b % 2 ? "bias" : "weight");
      br->bytes = 1000 * (b + 1) + r;
      br->offset = off;
      off += br->bytes + 24;
      br->global_bytes = b % 2 ? 0 : 4 * br->bytes;
      br->global_offset = b % 2 ? 0 : r * br->bytes;
      br->kind = b % 3;
      br->memory = b == 1;
    }
    rr->region_bytes = off + 4096;
  }
  return m;
}
