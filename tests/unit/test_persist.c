/* The disk tier's files (persist/persist.h): a version written by two
 * "nodes" from slot-like files is listed, read back byte for byte (whole
 * and in ranges that cross blocks), and verified; a version whose MANIFEST
 * is missing is not listed; a cancelled flush publishes nothing; a
 * truncated or flipped rank file, a flipped node manifest, and a MANIFEST
 * from another directory each make the version unusable with a message
 * naming the file; every byte of a manifest flipped is refused, never
 * read; prune keeps the newest versions in (epoch, version) order. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ftrt.h"
#include "persist/persist.h"
#include "tests/unit/check_main.h"
#include "tests/unit/tmpdir.h"

#define JOB "job-p"
#define NODES 2
#define RANKS 2 /* per node */

/* Rank r's bytes: big enough for several blocks for rank 1. */
static uint64_t rank_bytes(uint32_t r) {
  return r == 1 ? 2 * FT_PERSIST_BLOCK + 12345 : 40960 + r;
}

static uint8_t byte_of(uint32_t r, uint64_t i, uint64_t version) {
  return (uint8_t)(i * 131 + r * 7 + version * 13 + (i >> 13));
}

/* A slot-like file holding every rank of node's data back to back. */
static int slot_file(uint32_t node, uint64_t version, uint64_t *off) {
  char path[160];
  snprintf(path, sizeof(path), "%s/slot-%u", dir, node);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  uint64_t at = 4096;
  for (uint32_t i = 0; i < RANKS; i++) {
    uint32_t r = node * RANKS + i;
    off[i] = at;
    uint8_t *b = malloc(rank_bytes(r));
    for (uint64_t j = 0; j < rank_bytes(r); j++)
      b[j] = byte_of(r, j, version);
    ck_assert_int_eq(pwrite(fd, b, rank_bytes(r), (off_t)at),
                     (ssize_t)rank_bytes(r));
    free(b);
    at += rank_bytes(r) + 4096;
  }
  return fd;
}

static void describe(ft__pnode_t *n, uint32_t node, uint64_t version,
                     uint64_t epoch) {
  memset(n, 0, sizeof(*n));
  snprintf(n->job, sizeof(n->job), JOB);
  n->run = 77, n->version = version, n->step = version * 10;
  n->epoch = epoch, n->node = node, n->nnodes = NODES;
  n->ntrainers = NODES * RANKS, n->nranks = RANKS;
  n->ranks = ft__calloc(RANKS, sizeof(*n->ranks));
  for (uint32_t i = 0; i < RANKS; i++) {
    ft__prank_t *r = &n->ranks[i];
    r->rank = node * RANKS + i;
    r->bytes = rank_bytes(r->rank);
    r->block_crc = ft__calloc(ft__persist_blocks(r->bytes) + 1, 8);
    r->nbufs = 2;
    r->bufs = ft__calloc(2, sizeof(ft__buf_rec_t));
    snprintf(r->bufs[0].name, FT_NAME_MAX, "head");
    r->bufs[0].bytes = 100;
    snprintf(r->bufs[1].name, FT_NAME_MAX, "tail");
    r->bufs[1].offset = 100;
    r->bufs[1].bytes = r->bytes - 100;
  }
}

static int never(void *arg) {
  (void)arg;
  return 0;
}

static int after_n(void *arg) {
  int *n = arg;
  return (*n)-- <= 0;
}

static uint64_t nonce; /* of the "launch" write_node writes for */

/* Node's part of version; complete says whether MANIFEST was written. */
static int write_node(const ft__dir_t *job, uint32_t node, uint64_t version,
                      uint64_t epoch, int (*cancel)(void *), void *arg) {
  char name[64], msg[512] = "";
  ck_assert_int_eq(ft__persist_dirname(version, epoch, name, sizeof(name)), 0);
  ft__dir_t vd;
  ck_assert_int_eq(ft__persist_mkvdir(job, name, &vd, msg, sizeof(msg)), FT_OK);
  uint64_t off[RANKS];
  int fd = slot_file(node, version, off);
  ft__pnode_t n;
  describe(&n, node, version, epoch);
  n.nonce = nonce;
  uint8_t *buf = malloc(FT_PERSIST_BLOCK);
  int rc = FT_OK;
  for (uint32_t i = 0; rc == FT_OK && i < RANKS; i++)
    rc = ft__persist_write_rank(&vd, &n.ranks[i], fd, off[i], buf, cancel, arg,
                                msg, sizeof(msg));
  if (rc == FT_OK)
    rc = ft__persist_write_node(&vd, &n, cancel, arg, msg, sizeof(msg));
  int done = 0;
  if (rc == FT_OK)
    ck_assert_int_eq(ft__persist_complete(&vd, &n, &done, msg, sizeof(msg)),
                     FT_OK);
  free(buf);
  close(fd);
  ft__pnode_clear(&n);
  ft__dir_close(&vd);
  return rc == FT_OK ? done : rc;
}

static void open_job(ft__dir_t *job) {
  char msg[512] = "";
  int rc = ft__persist_open(dir, JOB, 1, job, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "%s", msg);
}

static void write_version(const ft__dir_t *job, uint64_t version,
                          uint64_t epoch) {
  ck_assert_int_eq(write_node(job, 0, version, epoch, never, NULL), 0);
  ck_assert_int_eq(write_node(job, 1, version, epoch, never, NULL), 1);
}

static void vpath(char *out, size_t len, uint64_t version, uint64_t epoch,
                  const char *file) {
  snprintf(out, len, "%s/%s/v%llu.e%llu/%s", dir, JOB,
           (unsigned long long)version, (unsigned long long)epoch, file);
}

static void flip(const char *path, off_t at) {
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  uint8_t b;
  ck_assert_int_eq(pread(fd, &b, 1, at), 1);
  b ^= 0x10;
  ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
  close(fd);
}

START_TEST(dirnames) {
  char name[64];
  uint64_t v, e;
  ck_assert_int_eq(ft__persist_dirname(12, 3, name, sizeof(name)), 0);
  ck_assert_str_eq(name, "v12.e3");
  ck_assert_int_eq(ft__persist_parse_dirname(name, &v, &e), 0);
  ck_assert(v == 12 && e == 3);
  const char *bad[] = {"v12", "v.e3", "v12.e", "x12.e3", "v12.e3.tmp",
                       "v99999999999999999999999.e1", "v1e2", ""};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(ft__persist_parse_dirname(bad[i], &v, &e) != 0, "%s",
                  bad[i]);
}
END_TEST

/* Written, listed, read back byte for byte, whole and across blocks. */
START_TEST(round_trip) {
  ft__dir_t job;
  open_job(&job);
  write_version(&job, 5, 2);
  ft__pversion_t *v;
  int n;
  uint64_t hi;
  char msg[512] = "";
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(n, 1);
  ck_assert(v[0].version == 5 && v[0].epoch == 2 && v[0].step == 50);
  ck_assert(v[0].run == 77 && v[0].nnodes == NODES);
  ck_assert_int_eq(v[0].ntrainers, NODES * RANKS);
  ck_assert_int_eq(hi, 2);
  uint64_t bytes = 0;
  ck_assert_int_eq(ft__persist_verify(&job, &v[0], 0, 1, &bytes, msg,
                                      sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(bytes, v[0].bytes);
  for (uint32_t node = 0; node < NODES; node++) {
    ft__pnode_t pn = {0};
    ck_assert_int_eq(ft__persist_read_node(&job, &v[0], node, &pn, msg,
                                           sizeof(msg)),
                     FT_OK);
    for (uint32_t i = 0; i < pn.nranks; i++) {
      const ft__prank_t *r = &pn.ranks[i];
      ck_assert_str_eq(r->bufs[1].name, "tail");
      ft__pfile_t f;
      ck_assert_int_eq(ft__pfile_open(&f, &job, v[0].name, r, msg,
                                      sizeof(msg)),
                       FT_OK);
      uint8_t *got = malloc(r->bytes);
      /* in three pieces, the middle one across a block boundary */
      uint64_t a = r->bytes / 3, b = 2 * r->bytes / 3;
      ck_assert_int_eq(ft__pfile_read(&f, 0, a, got, msg, sizeof(msg)), FT_OK);
      ck_assert_int_eq(ft__pfile_read(&f, a, b - a, got + a, msg, sizeof(msg)),
                       FT_OK);
      ck_assert_int_eq(
          ft__pfile_read(&f, b, r->bytes - b, got + b, msg, sizeof(msg)),
          FT_OK);
      /* One assertion for the whole rank: Check reports every passing
       * assertion to its parent, a write per byte. */
      uint64_t j = 0;
      while (j < r->bytes && got[j] == byte_of(r->rank, j, 5))
        j++;
      ck_assert_msg(j == r->bytes, "rank %u byte %llu", r->rank,
                    (unsigned long long)j);
      ck_assert_int_eq(ft__pfile_read(&f, r->bytes - 1, 2, got, msg,
                                      sizeof(msg)),
                       FT_ERANGE);
      free(got);
      ft__pfile_close(&f);
    }
    ft__pnode_clear(&pn);
  }
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
}
END_TEST

/* One node's part alone is no version; a flush cancelled at any block, or
 * after the last one, publishes no node manifest. */
START_TEST(incomplete_and_cancelled) {
  ft__dir_t job;
  open_job(&job);
  ck_assert_int_eq(write_node(&job, 0, 3, 1, never, NULL), 0);
  for (int at = 0; at < 3; at++) { /* 2 blocks, then the manifest */
    int left = at;
    ck_assert_int_eq(write_node(&job, 1, 3, 1, after_n, &left), FT_EBUSY);
  }
  ft__pversion_t *v;
  int n;
  uint64_t hi;
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(hi, 1);
  char p[256];
  vpath(p, sizeof(p), 3, 1, "node1");
  ck_assert_int_ne(access(p, F_OK), 0);
  ft__persist_list_free(v, n);
  /* the node finishing later completes it */
  ck_assert_int_eq(write_node(&job, 1, 3, 1, never, NULL), 1);
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 1);
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
}
END_TEST

/* Two launches' flushes of one version (same job, run, version, step and
 * epoch: a relaunch that redoes it) never make one MANIFEST: the last
 * part written by the second launch completes it with its own parts. */
START_TEST(two_launches_never_mix) {
  ft__dir_t job;
  open_job(&job);
  nonce = 5;
  ck_assert_int_eq(write_node(&job, 0, 3, 1, never, NULL), 0);
  nonce = 6;
  ck_assert_int_eq(write_node(&job, 1, 3, 1, never, NULL), 0);
  ft__pversion_t *v;
  int n;
  uint64_t hi;
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 0);
  ft__persist_list_free(v, n);
  ck_assert_int_eq(write_node(&job, 0, 3, 1, never, NULL), 1);
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 1);
  ft__persist_list_free(v, n);
  nonce = 0;
  ft__dir_close(&job);
}
END_TEST

/* Damage to one file: the version fails verification naming the file. */
static const struct {
  const char *file;
  int how; /* 0 flip at offset, 1 truncate */
  off_t at;
  int rc;
  const char *says;
} damage[] = {
    {"rank1", 0, 5, FT_ECORRUPT, "rank1: block 0"},
    {"rank1", 0, (off_t)(2 * FT_PERSIST_BLOCK + 3), FT_ECORRUPT, "block 2"},
    {"rank3", 0, 40000, FT_ECORRUPT, "rank3"},
    {"rank2", 1, 100, FT_ECORRUPT, "truncated"},
    {"node1", 0, 9, FT_ECORRUPT, "node1"},
    {"node0", 1, 30, FT_ECORRUPT, "node0"},
};

START_TEST(damaged_file) {
  ft__dir_t job;
  open_job(&job);
  write_version(&job, 4, 1);
  char p[256], msg[512] = "";
  vpath(p, sizeof(p), 4, 1, damage[_i].file);
  if (damage[_i].how == 0)
    flip(p, damage[_i].at);
  else
    ck_assert_int_eq(truncate(p, damage[_i].at), 0);
  ft__pversion_t *v;
  int n;
  uint64_t hi;
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 1);
  int rc = ft__persist_verify(&job, &v[0], 0, 1, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == damage[_i].rc, "%s: %s", ft_err_name(rc), msg);
  ck_msg_has(msg, damage[_i].says);
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
}
END_TEST

/* Every byte of a MANIFEST and of a node manifest flipped: refused when
 * decoded, never read as a version. */
START_TEST(manifest_flips) {
  ft__dir_t job;
  open_job(&job);
  write_version(&job, 2, 1);
  const char *files[] = {FT_PERSIST_MANIFEST, "node0"};
  for (int f = 0; f < 2; f++) {
    char p[256];
    vpath(p, sizeof(p), 2, 1, files[f]);
    FILE *fp = fopen(p, "rb");
    ck_assert_ptr_nonnull(fp);
    uint8_t buf[65536];
    size_t len = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    for (size_t i = 0; i < len; i++) {
      for (int bit = 0; bit < 8; bit += 7) {
        buf[i] ^= (uint8_t)(1u << bit);
        char msg[512] = "";
        int rc;
        if (f == 0) {
          ft__pversion_t v = {0};
          rc = ft__pversion_decode(buf, len, &v, p, msg, sizeof(msg));
          ft__pversion_clear(&v);
        } else {
          ft__pnode_t n = {0};
          rc = ft__pnode_decode(buf, len, &n, p, msg, sizeof(msg));
          ft__pnode_clear(&n);
        }
        ck_assert_msg(rc != FT_OK, "%s byte %zu bit %d accepted", files[f], i,
                      bit);
        ck_msg_has(msg, p);
        buf[i] ^= (uint8_t)(1u << bit);
      }
    }
    for (size_t cut = 0; cut < len; cut += 7) {
      ft__pnode_t n = {0};
      ck_assert_int_ne(ft__pnode_decode(buf, cut, &n, p, NULL, 0), FT_OK);
    }
  }
  ft__dir_close(&job);
}
END_TEST

/* A MANIFEST copied into another version's directory is not that version. */
START_TEST(manifest_elsewhere) {
  ft__dir_t job;
  open_job(&job);
  write_version(&job, 2, 1);
  ck_assert_int_eq(write_node(&job, 0, 3, 1, never, NULL), 0);
  char from[256], to[256], cmd[600];
  vpath(from, sizeof(from), 2, 1, FT_PERSIST_MANIFEST);
  vpath(to, sizeof(to), 3, 1, FT_PERSIST_MANIFEST);
  snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
  ck_assert_int_eq(system(cmd), 0);
  ft__pversion_t *v;
  int n;
  uint64_t hi;
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(v[0].version, 2);
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
}
END_TEST

/* Newest first by (epoch, version); prune keeps the newest and removes the
 * older ones and abandoned directories older than them, not newer ones. */
START_TEST(order_and_prune) {
  ft__dir_t job;
  open_job(&job);
  write_version(&job, 9, 1); /* an older timeline's higher version */
  write_version(&job, 4, 2);
  write_version(&job, 5, 2);
  write_version(&job, 6, 2);
  ck_assert_int_eq(write_node(&job, 0, 2, 1, never, NULL), 0); /* abandoned */
  ck_assert_int_eq(write_node(&job, 0, 7, 2, never, NULL), 0); /* running */
  ft__pversion_t *v;
  int n, removed;
  uint64_t hi;
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 4);
  ck_assert(v[0].version == 6 && v[1].version == 5 && v[2].version == 4 &&
            v[3].version == 9);
  ft__persist_list_free(v, n);
  char msg[512] = "";
  ck_assert_int_eq(ft__persist_prune(&job, 2, &removed, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(removed, 3); /* v4.e2, v9.e1, v2.e1 */
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 2);
  ck_assert(v[0].version == 6 && v[1].version == 5);
  ft__persist_list_free(v, n);
  char p[256];
  vpath(p, sizeof(p), 7, 2, "node0");
  ck_assert_int_eq(access(p, F_OK), 0);
  ck_assert_int_eq(ft__persist_remove_all(&job, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__persist_list(&job, &v, &n, &hi, NULL, 0), FT_OK);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(hi, 0);
  ft__persist_list_free(v, n);
  ft__dir_close(&job);
}
END_TEST

/* The job's directory is refused where a store would be. */
START_TEST(open_refusals) {
  char msg[512] = "", p[160];
  snprintf(p, sizeof(p), "%s/" JOB, dir);
  ck_assert_int_eq(mkdir(p, 0777), 0);
  ck_assert_int_eq(chmod(p, 0777), 0);
  ft__dir_t job;
  ck_assert_int_eq(ft__persist_open(dir, JOB, 1, &job, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "FT_PERSIST_DIR");
  ck_assert_int_eq(ft__persist_open(dir, "absent", 0, &job, msg, sizeof(msg)),
                   FT_ENOENT);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "persist");
  TCase *tc = tmpdir_tcase(s, "persist", 120);
  tcase_add_test(tc, dirnames);
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, incomplete_and_cancelled);
  tcase_add_test(tc, two_launches_never_mix);
  tcase_add_loop_test(tc, damaged_file, 0,
                      (int)(sizeof(damage) / sizeof(damage[0])));
  tcase_add_test(tc, manifest_flips);
  tcase_add_test(tc, manifest_elsewhere);
  tcase_add_test(tc, order_and_prune);
  tcase_add_test(tc, open_refusals);
  return s;
}
