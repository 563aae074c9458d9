/*
 * persist-write: versions on disk with known bytes, written by persist/'s
 * own writer (ft__persist_write_rank, _write_node, _complete) as a flush
 * would write them, without a job: the fixture of tests/mpi/persist-tool.sh
 * and tests/python/test_persist.py.
 *
 *   persist-write write ROOT JOB VERSION EPOCH [--gap] [--partial]
 *       version VERSION of launch epoch EPOCH (step 10 * VERSION) of a job
 *       of 2 nodes with 2 ranks each; --gap: rank 2 leaves its slice of
 *       "w" out (bytes 7500000..9000000 of it are in no slice); --partial:
 *       node 1 never writes its part (no MANIFEST: an interrupted flush)
 *   persist-write expect NAME RANK|global VERSION
 *       the bytes tensor NAME must have, on stdout
 *   persist-write layout
 *       NAME<TAB>RANK|global<TAB>BYTES, one line per exported tensor
 *
 * The tensors (kinds as ft_buf_kind_t):
 *   w          global, 10 MiB + 12344 bytes in 4 uneven slices: rank 1's
 *              file is over one 4 MiB block
 *   emb        global, 1000 bytes, replicated: ranks 0 [0,600), 1 [400,1000),
 *              2 [0,1000) (overlaps hold the same bytes)
 *   model.fc.weight  private, 24 bytes (2x3 float32), the same on every rank
 *   model.bn.num_batches_tracked  private, 8 bytes (an int64 scalar), same
 *   counters   private, 16 bytes, each rank its own
 *   layer/../x private, 100 bytes, each rank its own (a name unsafe as a
 *              file name)
 *   ..         private to rank 3, 5 bytes
 *   empty      private to rank 0, 0 bytes
 * Byte i of a tensor: (131 i + 7 id + 13 version + 29 rank + i / 8192) mod
 * 256, rank 0 for global tensors and those the same on every rank.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "persist/persist.h"

#define NODES 2
#define PER_NODE 2
#define RANKS (NODES * PER_NODE)
#define W_BYTES ((uint64_t)10 * 1024 * 1024 + 12344)
#define PAD 8 /* bytes after each rank's buffers, in no buffer */

typedef struct tdef {
  const char *name;
  int id;
  int global;   /* a slice of a global tensor */
  int per_rank; /* private bytes differ between ranks */
  uint64_t bytes;
  uint32_t kind;
} tdef_t;

static const tdef_t T[] = {
    {"w", 1, 1, 0, W_BYTES, FT_KIND_PARAM},
    {"emb", 2, 1, 0, 1000, FT_KIND_PARAM},
    {"model.fc.weight", 3, 0, 0, 24, FT_KIND_PARAM},
    {"model.bn.num_batches_tracked", 4, 0, 0, 8, FT_KIND_PARAM},
    {"counters", 5, 0, 1, 16, FT_KIND_OTHER},
    {"layer/../x", 6, 0, 1, 100, FT_KIND_OPTIM},
    {"..", 7, 0, 1, 5, FT_KIND_OTHER},
    {"empty", 8, 0, 1, 0, FT_KIND_OTHER},
};
#define NT (sizeof(T) / sizeof(T[0]))

/* Slice of global tensor t held by rank r: 0 none. */
static int slice_of(const tdef_t *t, int r, int gap, uint64_t *off,
                    uint64_t *len) {
  static const uint64_t w_cut[RANKS + 1] = {0, 3000001, 7500000, 9000000,
                                            W_BYTES};
  static const uint64_t emb_lo[RANKS] = {0, 400, 0, 0};
  static const uint64_t emb_hi[RANKS] = {600, 1000, 1000, 0};
  if (t->id == 1) {
    if (gap && r == 2)
      return 0;
    *off = w_cut[r], *len = w_cut[r + 1] - w_cut[r];
    return 1;
  }
  *off = emb_lo[r], *len = emb_hi[r] - emb_lo[r];
  return *len > 0;
}

/* Does rank r register private tensor t? */
static int holds(const tdef_t *t, int r) {
  return t->id == 7 ? r == 3 : t->id == 8 ? r == 0 : 1;
}

static uint8_t byte_of(const tdef_t *t, uint64_t i, uint64_t version, int r) {
  int rr = t->per_rank ? r : 0;
  return (uint8_t)(i * 131 + (uint64_t)t->id * 7 + version * 13 +
                   (uint64_t)rr * 29 + (i >> 13));
}

/* Rank r's buffer table and region (allocated). */
static void rank_region(int r, uint64_t version, int gap, ft__prank_t *pr,
                        uint8_t **region) {
  memset(pr, 0, sizeof(*pr));
  pr->rank = (uint32_t)r;
  pr->bufs = ft__calloc(NT, sizeof(ft__buf_rec_t));
  uint64_t at = 0;
  for (size_t k = 0; k < NT; k++) {
    uint64_t off = 0, len = T[k].bytes;
    if (T[k].global ? !slice_of(&T[k], r, gap, &off, &len) : !holds(&T[k], r))
      continue;
    ft__buf_rec_t *b = &pr->bufs[pr->nbufs++];
    snprintf(b->name, sizeof(b->name), "%s", T[k].name);
    b->bytes = len, b->offset = at, b->kind = T[k].kind;
    if (T[k].global)
      b->global_offset = off, b->global_bytes = T[k].bytes;
    at += len;
  }
  pr->bytes = at + PAD;
  pr->block_crc = ft__calloc(ft__persist_blocks(pr->bytes) + 1, 8);
  *region = malloc(pr->bytes);
  memset(*region + at, 0xee, PAD);
  for (uint32_t j = 0; j < pr->nbufs; j++) {
    const ft__buf_rec_t *b = &pr->bufs[j];
    const tdef_t *t = NULL;
    for (size_t k = 0; k < NT; k++)
      t = strcmp(T[k].name, b->name) == 0 ? &T[k] : t;
    for (uint64_t i = 0; i < b->bytes; i++)
      (*region)[b->offset + i] = byte_of(t, b->global_offset + i, version, r);
  }
}

static int die(const char *what, const char *msg) {
  fprintf(stderr, "persist-write: %s: %s\n", what, msg);
  return 1;
}

/* Node n's part of the version, from a slot-like file of its ranks. */
static int write_node(const ft__dir_t *vd, int node, uint64_t version,
                      uint64_t epoch, const char *job, int gap, int *done) {
  ft__pnode_t pn = {.run = 77,
                    .version = version,
                    .step = version * 10,
                    .epoch = epoch,
                    .node = (uint32_t)node,
                    .nnodes = NODES,
                    .ntrainers = RANKS,
                    .nranks = PER_NODE};
  snprintf(pn.job, sizeof(pn.job), "%s", job);
  pn.ranks = ft__calloc(PER_NODE, sizeof(*pn.ranks));
  char path[] = "/tmp/persist-write.XXXXXX", msg[1024] = "";
  int fd = mkstemp(path), rc = fd < 0 ? FT_EIO : FT_OK;
  unlink(path);
  uint8_t *buf = malloc(FT_PERSIST_BLOCK);
  for (int i = 0; rc == FT_OK && i < PER_NODE; i++) {
    uint8_t *region;
    rank_region(node * PER_NODE + i, version, gap, &pn.ranks[i], &region);
    off_t at = 4096 * (i + 1) + (off_t)(i * (W_BYTES + 4096));
    if (pwrite(fd, region, pn.ranks[i].bytes, at) != (ssize_t)pn.ranks[i].bytes)
      rc = FT_EIO;
    free(region);
    if (rc == FT_OK)
      rc = ft__persist_write_rank(vd, &pn.ranks[i], fd, (uint64_t)at, buf, NULL,
                                  NULL, msg, sizeof(msg));
  }
  if (rc == FT_OK)
    rc = ft__persist_write_node(vd, &pn, NULL, NULL, msg, sizeof(msg));
  if (rc == FT_OK)
    rc = ft__persist_complete(vd, &pn, done, msg, sizeof(msg));
  if (rc)
    die("write", msg[0] ? msg : strerror(errno));
  free(buf);
  if (fd >= 0)
    close(fd);
  ft__pnode_clear(&pn);
  return rc;
}

static int cmd_write(int argc, char **argv) {
  if (argc < 6)
    return die("usage", "write ROOT JOB VERSION EPOCH [--gap] [--partial]");
  const char *root = argv[2], *job = argv[3];
  uint64_t version = strtoull(argv[4], NULL, 10);
  uint64_t epoch = strtoull(argv[5], NULL, 10);
  int gap = 0, partial = 0;
  for (int i = 6; i < argc; i++) {
    gap |= strcmp(argv[i], "--gap") == 0;
    partial |= strcmp(argv[i], "--partial") == 0;
  }
  char msg[1024] = "", name[64];
  ft__dir_t jobdir, vd;
  ft__persist_dirname(version, epoch, name, sizeof(name));
  if (ft__persist_open(root, job, 1, &jobdir, msg, sizeof(msg)) ||
      ft__persist_mkvdir(&jobdir, name, &vd, msg, sizeof(msg)))
    return die(root, msg);
  int done = 0, rc = FT_OK;
  for (int n = 0; rc == FT_OK && n < (partial ? 1 : NODES); n++)
    rc = write_node(&vd, n, version, epoch, job, gap, &done);
  if (rc == FT_OK && done != !partial)
    rc = die(name, done ? "completed a partial version" : "not completed");
  ft__dir_close(&vd);
  ft__dir_close(&jobdir);
  return rc ? 1 : 0;
}

static int cmd_expect(int argc, char **argv) {
  if (argc != 5)
    return die("usage", "expect NAME RANK|global VERSION");
  const tdef_t *t = NULL;
  for (size_t k = 0; k < NT; k++)
    t = strcmp(T[k].name, argv[2]) == 0 ? &T[k] : t;
  if (!t)
    return die(argv[2], "no such tensor");
  int r = strcmp(argv[3], "global") == 0 ? 0 : atoi(argv[3]);
  uint64_t version = strtoull(argv[4], NULL, 10);
  for (uint64_t i = 0; i < t->bytes; i++)
    putchar(byte_of(t, i, version, r));
  return 0;
}

static int cmd_layout(void) {
  for (size_t k = 0; k < NT; k++) {
    if (T[k].global) {
      printf("%s\tglobal\t%llu\n", T[k].name, (unsigned long long)T[k].bytes);
      continue;
    }
    for (int r = 0; r < RANKS; r++)
      if (holds(&T[k], r))
        printf("%s\t%d\t%llu\n", T[k].name, r, (unsigned long long)T[k].bytes);
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *cmd = argc > 1 ? argv[1] : "";
  if (strcmp(cmd, "write") == 0)
    return cmd_write(argc, argv);
  if (strcmp(cmd, "expect") == 0)
    return cmd_expect(argc, argv);
  if (strcmp(cmd, "layout") == 0)
    return cmd_layout();
  return die("usage", "write | expect | layout (see the source's comment)");
}
