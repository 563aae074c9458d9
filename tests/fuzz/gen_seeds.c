/*
 * Seed inputs for fuzz_store: valid slot images and metadata files made by
 * the store's own writers (so every slot seed carries a valid header
 * checksum and gets past it), plus interesting truncations.  Each file
 * starts with the selector byte fuzz_store.c reads (0/1 slot, 2/3 metadata,
 * 0x07/0x17 a group table's member 0/1; for a slot, bit 2: check the job,
 * bit 3: fix the header checksum up).
 * Usage: gen_seeds OUTDIR   (tests/fuzz/run builds it;
 * `tests/fuzz/run --regen-corpus` refreshes tests/fuzz/corpus/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec/crc.h"
#include "ftrt.h"
#include "snapshot/store.h"

static const char *out_dir;

static void emit(const char *name, uint8_t sel, const void *p, size_t n) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", out_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fputc(sel, f) == EOF || fwrite(p, 1, n, f) != n || fclose(f)) {
    perror(path);
    exit(1);
  }
}

/* A slot of nlocal ranks of the given sizes, code (k, m), in state st. */
static void slot_seed(const char *tmp, const char *name, uint32_t nlocal,
                      const uint64_t *bytes, uint32_t k, uint32_t m,
                      uint32_t st) {
  ft__slot_geom_t g;
  ft__slot_t s;
  ft__dir_t d;
  char msg[512];
  if (ft__slot_geom_local(&g, nlocal, bytes) != FT_OK ||
      ft__slot_geom_code(&g, k, m, (g.local_bytes + k - 1) / k) != FT_OK ||
      ft__dir_open(&d, tmp, msg, sizeof(msg)) != FT_OK ||
      ft__slot_create(&s, &d, 0, "fuzz-job", &g, msg, sizeof(msg)) != FT_OK) {
    fprintf(stderr, "gen_seeds: %s: cannot make the slot\n", name);
    exit(1);
  }
  ft__dir_close(&d);
  if (st != FT_SLOT_EMPTY) {
    ft__slot_begin(&s, 42, 0, 1, 1);
    for (uint32_t r = 0; r < nlocal; r++)
      for (uint64_t i = 0; i < bytes[r]; i++)
        s.map[s.hdr->rank_off[r] + i] = (uint8_t)(r * 31 + i);
    ft__slot_set_step(&s, 4200);
    ft__slot_seal_data(&s);
    ft__slot_seal_parity(&s);
    ft__slot_set_state(&s, st);
  }
  char fname[256];
  snprintf(fname, sizeof(fname), "slot-%s", name);
  emit(fname, 0x04, s.map, s.map_bytes); /* as is, job checked */
  snprintf(fname, sizeof(fname), "slot-%s-patched", name);
  emit(fname, 0x01, s.map, s.map_bytes);
  /* the header checksum fixed up after each mutation: mutated fields
   * reach the checks behind it */
  snprintf(fname, sizeof(fname), "slot-%s-fixed", name);
  emit(fname, 0x0c, s.map, s.map_bytes);
  /* the header page alone: the patched mode makes it a slot whose regions
   * no longer fit */
  snprintf(fname, sizeof(fname), "slot-%s-header-only", name);
  emit(fname, 0x01, s.map, FT_SLOT_HDR_BYTES);
  ft__slot_close(&s);
}

static ft__meta_t *meta_seed(uint32_t nlocal, uint32_t nbufs, uint32_t nnodes) {
  ft__meta_t *m = calloc(1, sizeof(*m));
  if (!m)
    exit(1);
  snprintf(m->job, sizeof(m->job), "fuzz-job");
  snprintf(m->host, sizeof(m->host), "node%u", nnodes - 1);
  m->epoch = 2, m->layout = 1;
  if (ft__meta_alloc_hosts(m, nnodes) != FT_OK)
    exit(1);
  m->node = nnodes - 1, m->ntrainers = nnodes * nlocal;
  m->k = nnodes > 1 ? nnodes - 1 : 1, m->m = nnodes > 1;
  m->group_size = m->k + m->m, m->pos = m->node;
  m->nlocal = nlocal;
  for (uint32_t i = 0; i < nnodes; i++)
    snprintf(m->hosts[i], FT_NAME_MAX, "node%u", i);
  for (uint32_t r = 0; r < nlocal; r++) {
    ft__rank_rec_t *rr = &m->ranks[r];
    rr->rank = r;
    if (ft__meta_alloc_bufs(m, r, nbufs) != FT_OK)
      exit(1);
    uint64_t off = 0;
    for (uint32_t b = 0; b < nbufs; b++) {
      ft__buf_rec_t *br = &rr->bufs[b];
      snprintf(br->name, sizeof(br->name), "w%u", b);
      br->bytes = 64 * (b + 1);
      br->offset = off;
      off += br->bytes;
      br->global_bytes = br->bytes * nlocal;
      br->global_offset = br->bytes * r;
      br->kind = b % 3;
    }
    rr->region_bytes = off;
  }
  return m;
}

/* A group table of two members, this metadata twice, as
 * ft__group_meta_write lays it out (count, then a length and the bytes a
 * member, then the CRC64): member 0 and member 1 asked for. */
static void group_seeds(const char *name, const uint8_t *meta, size_t len) {
  size_t total = 4 + 2 * (8 + len) + 8;
  uint8_t *g = malloc(total), *p = g;
  if (!g)
    exit(1);
  uint32_t cnt = 2;
  memcpy(p, &cnt, 4), p += 4;
  for (int i = 0; i < 2; i++) {
    uint64_t l = len;
    memcpy(p, &l, 8), p += 8;
    memcpy(p, meta, len), p += len;
  }
  uint64_t crc = ft__crc64(0, g, total - 8);
  memcpy(p, &crc, 8);
  char fname[256];
  snprintf(fname, sizeof(fname), "group-%s-0", name);
  emit(fname, 0x07, g, total);
  snprintf(fname, sizeof(fname), "group-%s-1", name);
  emit(fname, 0x17, g, total);
  free(g);
}

static void meta_seeds(const char *name, uint32_t nlocal, uint32_t nbufs,
                       uint32_t nnodes) {
  ft__meta_t *m = meta_seed(nlocal, nbufs, nnodes);
  uint8_t *buf;
  size_t len;
  if (ft__meta_encode(m, &buf, &len) != FT_OK)
    exit(1);
  char fname[256];
  snprintf(fname, sizeof(fname), "meta-%s", name);
  emit(fname, 0x02, buf, len);
  snprintf(fname, sizeof(fname), "meta-%s-patched", name);
  emit(fname, 0x03, buf, len);
  snprintf(fname, sizeof(fname), "meta-%s-half", name);
  emit(fname, 0x03, buf, len / 2);
  snprintf(fname, sizeof(fname), "meta-%s-no-crc", name);
  emit(fname, 0x02, buf, len - 8);
  group_seeds(name, buf, len);
  free(buf);
  ft__meta_free(m);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_seeds OUTDIR\n");
    return 2;
  }
  out_dir = argv[1];
  char tmp[] = "/tmp/ftrt-seeds-XXXXXX";
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  const uint64_t one[1] = {100};
  const uint64_t three[3] = {100, 5000, 1};
  const uint64_t none[2] = {0, 0};
  slot_seed(tmp, "k1m0-empty", 1, one, 1, 0, FT_SLOT_EMPTY);
  slot_seed(tmp, "k4m2-committed", 1, one, 4, 2, FT_SLOT_COMMITTED);
  slot_seed(tmp, "k3m1-3ranks-encoded", 3, three, 3, 1, FT_SLOT_ENCODED);
  slot_seed(tmp, "k2m0-0bytes-filling", 2, none, 2, 0, FT_SLOT_FILLING);
  meta_seeds("1node-1rank", 1, 1, 1);
  meta_seeds("3nodes-2ranks", 2, 3, 3);
  meta_seeds("2nodes-4ranks-nobufs", 4, 0, 2);
  /* shorter than a slot header, and than a metadata header */
  static const uint8_t slot_magic[] = "FTRTSLOT\4\0\0\0";
  static const uint8_t meta_magic[] = "FTRTMETA\1\0\0\0";
  emit("slot-magic-only", 0x00, slot_magic, sizeof(slot_magic) - 1);
  emit("meta-magic-only", 0x02, meta_magic, sizeof(meta_magic) - 1);
  char slot[64];
  snprintf(slot, sizeof(slot), "%s/slot0", tmp);
  unlink(slot);
  rmdir(tmp);
  return 0;
}
