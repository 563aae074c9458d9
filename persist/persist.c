/*
 * The disk tier's files (persist.h has the layout on disk).
 *
 * Writers never publish what they have not finished: every file goes to a
 * temporary name of its own (pid and a random tag, O_EXCL, so two SMPs
 * writing the same MANIFEST never share one), is fsynced, renamed, and the
 * directory fsynced.  Readers trust nothing: a manifest is checked (magic,
 * format, size, CRC, every count against the bytes that hold it) before a
 * field of it steers a read, a node manifest must have the CRC its MANIFEST
 * names, and every block of a rank file is checked before a byte of it is
 * handed out.
 */
#include "persist/persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/crc.h"
#include "snapshot/meta.h"

#define PNODE_MAGIC "FTRTPNOD"
#define PVER_MAGIC "FTRTPVER"

typedef struct pnode_fixed {
  char magic[8];
  uint32_t format, node, nnodes, ntrainers, nranks, pad;
  char job[FT_JOB_MAX];
  uint64_t run, version, step, epoch, block_bytes, total_bytes, nonce;
} pnode_fixed_t;

typedef struct prank_fixed {
  uint32_t rank, nbufs;
  uint64_t bytes, crc;
} prank_fixed_t;

typedef struct pver_fixed {
  char magic[8];
  uint32_t format, nnodes, ntrainers, pad;
  char job[FT_JOB_MAX];
  uint64_t run, version, step, epoch, bytes, total_bytes;
} pver_fixed_t;

uint64_t ft__persist_blocks(uint64_t bytes) {
  return (bytes + FT_PERSIST_BLOCK - 1) / FT_PERSIST_BLOCK;
}

void ft__pnode_clear(ft__pnode_t *n) {
  if (!n)
    return;
  for (uint32_t i = 0; n->ranks && i < n->nranks; i++) {
    ft__free(n->ranks[i].block_crc);
    ft__free(n->ranks[i].bufs);
  }
  ft__free(n->ranks);
  memset(n, 0, sizeof(*n));
}

void ft__pversion_clear(ft__pversion_t *v) {
  if (!v)
    return;
  ft__free(v->node_crc);
  ft__free(v->node_bytes);
  memset(v, 0, sizeof(*v));
}

int ft__persist_dirname(uint64_t version, uint64_t epoch, char *out,
                        size_t len) {
  int n = snprintf(out, len, "v%" PRIu64 ".e%" PRIu64, version, epoch);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int parse_u64(const char **p, uint64_t *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9')
    return -1;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (UINT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *p = s;
  *out = v;
  return 0;
}

int ft__persist_parse_dirname(const char *name, uint64_t *version,
                              uint64_t *epoch) {
  const char *p = name;
  if (*p++ != 'v' || parse_u64(&p, version) || *p++ != '.' || *p++ != 'e' ||
      parse_u64(&p, epoch) || *p)
    return -1;
  return 0;
}

/* ---- encoding ---- */

static size_t pnode_size(const ft__pnode_t *n) {
  size_t b = sizeof(pnode_fixed_t) + sizeof(uint64_t);
  for (uint32_t i = 0; i < n->nranks; i++)
    b += sizeof(prank_fixed_t) +
         ft__persist_blocks(n->ranks[i].bytes) * sizeof(uint64_t) +
         n->ranks[i].nbufs * sizeof(ft__buf_rec_t);
  return b;
}

int ft__pnode_encode(const ft__pnode_t *n, uint8_t **out, size_t *len) {
  size_t total = pnode_size(n);
  uint8_t *buf = ft__calloc(1, total), *p = buf;
  if (!buf)
    return FT_ENOMEM;
  pnode_fixed_t f = {.format = FT_PERSIST_FORMAT,
                     .node = n->node,
                     .nnodes = n->nnodes,
                     .ntrainers = n->ntrainers,
                     .nranks = n->nranks,
                     .run = n->run,
                     .version = n->version,
                     .step = n->step,
                     .epoch = n->epoch,
                     .block_bytes = FT_PERSIST_BLOCK,
                     .total_bytes = total,
                     .nonce = n->nonce};
  memcpy(f.magic, PNODE_MAGIC, 8);
  snprintf(f.job, sizeof(f.job), "%s", n->job);
  ft__put(&p, &f, sizeof(f));
  for (uint32_t i = 0; i < n->nranks; i++) {
    const ft__prank_t *r = &n->ranks[i];
    prank_fixed_t rf = {r->rank, r->nbufs, r->bytes, r->crc};
    ft__put(&p, &rf, sizeof(rf));
    ft__put(&p, r->block_crc, ft__persist_blocks(r->bytes) * sizeof(uint64_t));
    ft__put(&p, r->bufs, r->nbufs * sizeof(ft__buf_rec_t));
  }
  uint64_t crc = ft__crc64(0, buf, total - sizeof(crc));
  ft__put(&p, &crc, sizeof(crc));
  *out = buf;
  *len = total;
  return FT_OK;
}

/* Magic, format, length and CRC of a manifest of either kind. */
static int check_frame(const uint8_t *buf, size_t len, size_t fixed,
                       const char *magic, uint32_t format, uint64_t total,
                       const char *path, char *msg, size_t msglen) {
  if (len < fixed + sizeof(uint64_t))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes, too short (truncated)", path, len);
  if (memcmp(buf, magic, 8) != 0)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: bad magic, not an ftrt persisted manifest", path);
  if (format != FT_PERSIST_FORMAT)
    return ft__msgf(FT_EMISMATCH, msg, msglen,
                    "%s: persisted format %u, this ftrt reads format %u", path,
                    format, FT_PERSIST_FORMAT);
  if (total != len)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes but its header says %" PRIu64
                    " (truncated?)",
                    path, len, total);
  uint64_t crc;
  memcpy(&crc, buf + len - sizeof(crc), sizeof(crc));
  if (ft__crc64(0, buf, len - sizeof(crc)) != crc)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: CRC mismatch", path);
  return FT_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const ft__buf_rec_t *const *)a)->name,
                (*(const ft__buf_rec_t *const *)b)->name);
}

/* Two buffers of one rank with one name: a reader could not tell which
 * is meant (ft_register refuses it). */
static int check_unique(const ft__prank_t *r, const char *path, char *msg,
                        size_t msglen) {
  if (r->nbufs < 2)
    return FT_OK;
  const ft__buf_rec_t **by = ft__malloc(r->nbufs * sizeof(*by));
  if (!by)
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", path);
  for (uint32_t b = 0; b < r->nbufs; b++)
    by[b] = &r->bufs[b];
  qsort(by, r->nbufs, sizeof(*by), by_name);
  int rc = FT_OK;
  for (uint32_t b = 1; rc == FT_OK && b < r->nbufs; b++)
    if (strcmp(by[b - 1]->name, by[b]->name) == 0)
      rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: rank %u holds two buffers named '%s'", path, r->rank,
                    by[b]->name);
  ft__free(by);
  return rc;
}

static int check_bufs(const ft__prank_t *r, const char *path, char *msg,
                      size_t msglen) {
  for (uint32_t b = 0; b < r->nbufs; b++) {
    const ft__buf_rec_t *br = &r->bufs[b];
    if (!ft__str_ok(br->name, sizeof(br->name)) || br->bytes > r->bytes ||
        br->offset > r->bytes - br->bytes ||
        (!br->global_bytes && br->global_offset) ||
        (br->global_bytes &&
         (br->bytes > br->global_bytes ||
          br->global_offset > br->global_bytes - br->bytes)))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: buffer %u of rank %u is malformed (name, or a "
                      "place outside its file or global buffer)",
                      path, b, r->rank);
  }
  return check_unique(r, path, msg, msglen);
}

static int decode_rank(const uint8_t **p, const uint8_t *end, ft__prank_t *r,
                       const char *path, char *msg, size_t msglen) {
  prank_fixed_t rf;
  if ((size_t)(end - *p) < sizeof(rf))
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: rank table truncated", path);
  memcpy(&rf, *p, sizeof(rf));
  *p += sizeof(rf);
  uint64_t nblocks = ft__persist_blocks(rf.bytes);
  size_t left = (size_t)(end - *p);
  if (nblocks > left / sizeof(uint64_t) ||
      rf.nbufs > (left - nblocks * sizeof(uint64_t)) / sizeof(ft__buf_rec_t))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: tables of rank %u run past the end", path, rf.rank);
  r->rank = rf.rank, r->nbufs = rf.nbufs, r->bytes = rf.bytes, r->crc = rf.crc;
  r->block_crc = ft__malloc(nblocks ? nblocks * sizeof(uint64_t) : 1);
  r->bufs = ft__malloc(rf.nbufs ? rf.nbufs * sizeof(ft__buf_rec_t) : 1);
  if (!r->block_crc || !r->bufs)
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", path);
  memcpy(r->block_crc, *p, nblocks * sizeof(uint64_t));
  *p += nblocks * sizeof(uint64_t);
  memcpy(r->bufs, *p, rf.nbufs * sizeof(ft__buf_rec_t));
  *p += rf.nbufs * sizeof(ft__buf_rec_t);
  return check_bufs(r, path, msg, msglen);
}

static int decode_pnode(const uint8_t *buf, size_t len, ft__pnode_t *n,
                        const char *path, char *msg, size_t msglen) {
  pnode_fixed_t f;
  if (len >= sizeof(f))
    memcpy(&f, buf, sizeof(f));
  int rc = len < sizeof(f) ? check_frame(buf, len, sizeof(f), PNODE_MAGIC, 0,
                                         0, path, msg, msglen)
                           : check_frame(buf, len, sizeof(f), PNODE_MAGIC,
                                         f.format, f.total_bytes, path, msg,
                                         msglen);
  if (rc)
    return rc;
  if (!ft__str_ok(f.job, sizeof(f.job)) || f.nnodes < 1 || f.node >= f.nnodes ||
      f.block_bytes != FT_PERSIST_BLOCK || f.nranks > FT_MAX_LOCAL ||
      f.nranks > f.ntrainers)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: fields out of range", path);
  memcpy(n->job, f.job, sizeof(n->job));
  n->run = f.run, n->version = f.version, n->step = f.step;
  n->epoch = f.epoch, n->node = f.node, n->nnodes = f.nnodes;
  n->nonce = f.nonce;
  n->ntrainers = f.ntrainers;
  n->ranks = ft__calloc(f.nranks ? f.nranks : 1, sizeof(*n->ranks));
  if (!n->ranks)
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", path);
  n->nranks = f.nranks;
  const uint8_t *p = buf + sizeof(f), *end = buf + len - sizeof(uint64_t);
  for (uint32_t i = 0; i < f.nranks; i++)
    if ((rc = decode_rank(&p, end, &n->ranks[i], path, msg, msglen)))
      return rc;
  if (p != end)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: trailing bytes", path);
  return FT_OK;
}

int ft__pnode_decode(const uint8_t *buf, size_t len, ft__pnode_t *n,
                     const char *path, char *msg, size_t msglen) {
  ft__pnode_clear(n);
  int rc = decode_pnode(buf, len, n, path, msg, msglen);
  if (rc)
    ft__pnode_clear(n);
  return rc;
}

int ft__pversion_encode(const ft__pversion_t *v, uint8_t **out, size_t *len) {
  size_t total = sizeof(pver_fixed_t) + (size_t)v->nnodes * 16 + 8;
  uint8_t *buf = ft__calloc(1, total), *p = buf;
  if (!buf)
    return FT_ENOMEM;
  pver_fixed_t f = {.format = FT_PERSIST_FORMAT,
                    .nnodes = v->nnodes,
                    .ntrainers = v->ntrainers,
                    .run = v->run,
                    .version = v->version,
                    .step = v->step,
                    .epoch = v->epoch,
                    .bytes = v->bytes,
                    .total_bytes = total};
  memcpy(f.magic, PVER_MAGIC, 8);
  snprintf(f.job, sizeof(f.job), "%s", v->job);
  ft__put(&p, &f, sizeof(f));
  for (uint32_t i = 0; i < v->nnodes; i++) {
    ft__put(&p, &v->node_crc[i], 8);
    ft__put(&p, &v->node_bytes[i], 8);
  }
  uint64_t crc = ft__crc64(0, buf, total - sizeof(crc));
  ft__put(&p, &crc, sizeof(crc));
  *out = buf;
  *len = total;
  return FT_OK;
}

static int decode_pversion(const uint8_t *buf, size_t len, ft__pversion_t *v,
                           const char *path, char *msg, size_t msglen) {
  pver_fixed_t f;
  if (len >= sizeof(f))
    memcpy(&f, buf, sizeof(f));
  int rc = len < sizeof(f) ? check_frame(buf, len, sizeof(f), PVER_MAGIC, 0,
                                         0, path, msg, msglen)
                           : check_frame(buf, len, sizeof(f), PVER_MAGIC,
                                         f.format, f.total_bytes, path, msg,
                                         msglen);
  if (rc)
    return rc;
  if (!ft__str_ok(f.job, sizeof(f.job)) || f.nnodes < 1 ||
      (len - sizeof(f) - 8) / 16 != f.nnodes || (len - sizeof(f) - 8) % 16)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: fields out of range", path);
  memcpy(v->job, f.job, sizeof(v->job));
  v->run = f.run, v->version = f.version, v->step = f.step;
  v->epoch = f.epoch, v->nnodes = f.nnodes, v->ntrainers = f.ntrainers;
  v->bytes = f.bytes;
  v->node_crc = ft__malloc((size_t)f.nnodes * 8);
  v->node_bytes = ft__malloc((size_t)f.nnodes * 8);
  if (!v->node_crc || !v->node_bytes)
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", path);
  const uint8_t *p = buf + sizeof(f);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < f.nnodes; i++, p += 16) {
    memcpy(&v->node_crc[i], p, 8);
    memcpy(&v->node_bytes[i], p + 8, 8);
    sum += v->node_bytes[i];
  }
  if (sum != v->bytes)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: its nodes' sizes do not add up", path);
  return FT_OK;
}

int ft__pversion_decode(const uint8_t *buf, size_t len, ft__pversion_t *v,
                        const char *path, char *msg, size_t msglen) {
  ft__pversion_clear(v);
  int rc = decode_pversion(buf, len, v, path, msg, msglen);
  if (rc)
    ft__pversion_clear(v);
  return rc;
}

/* ---- writing ---- */

/* snapshot/dir.c's advice on a refused directory names the store root: under
 * the persist directory, it is FT_PERSIST_DIR that the user sets. */
static int persist_advice(int rc, char *msg, size_t msglen) {
  if (!rc || !msg || !msglen || !strstr(msg, "FT_STORE_ROOT"))
    return rc;
  char out[1024];
  size_t o = 0;
  for (const char *p = msg; *p && o + 16 < sizeof(out);) {
    if (strncmp(p, "FT_STORE_ROOT", 13) == 0) {
      memcpy(out + o, "FT_PERSIST_DIR", 14);
      o += 14, p += 13;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = '\0';
  snprintf(msg, msglen, "%s", out);
  return rc;
}

/* ft__dir_sub of a directory of the persist tree. */
static int persist_sub(const ft__dir_t *d, const char *name, int create,
                       ft__dir_t *sub, char *msg, size_t msglen) {
  return persist_advice(ft__dir_sub(d, name, create, sub, msg, msglen), msg,
                        msglen);
}

int ft__persist_open(const char *root, const char *job, int create,
                     ft__dir_t *jobdir, char *msg, size_t msglen) {
  char dir[FT_PATH_MAX + FT_JOB_MAX + 2];
  int n = snprintf(dir, sizeof(dir), "%s/%s", root, job);
  if (n < 0 || (size_t)n >= FT_PATH_MAX) {
    ft__dir_init(jobdir, "");
    return ft__msgf(FT_ERANGE, msg, msglen,
                    "FT_PERSIST_DIR: %s/%s is longer than %d characters", root,
                    job, FT_PATH_MAX - 1);
  }
  int rc = ft__store_open_dir(root, dir, create, jobdir, msg, msglen);
  if (rc && rc != FT_ENOENT && msg && msglen) {
    char why[1024];
    persist_advice(rc, msg, msglen);
    snprintf(why, sizeof(why), "%s", msg);
    ft__msgf(rc, msg, msglen, "FT_PERSIST_DIR: %s", why);
  }
  return rc;
}

int ft__persist_mkvdir(const ft__dir_t *jobdir, const char *vdir,
                       ft__dir_t *out, char *msg, size_t msglen) {
  return persist_sub(jobdir, vdir, 1, out, msg, msglen);
}

/* A temporary name of this writer's own for name. */
static void tmp_name(char *out, size_t len, const char *name) {
  uint32_t tag = 0;
  if (getrandom(&tag, sizeof(tag), GRND_NONBLOCK) != sizeof(tag))
    tag = (uint32_t)rand();
  snprintf(out, len, "%s.tmp.%ld.%08x", name, (long)getpid(), tag);
}

/* Atomically put len bytes at dir/name, under a temporary name of our own
 * (two SMPs may write the same MANIFEST at once). */
static int write_atomic(const ft__dir_t *dir, const char *name,
                        const void *buf, size_t len, char *msg,
                        size_t msglen) {
  char tmp[FT_NAME_MAX + 48];
  tmp_name(tmp, sizeof(tmp), name);
  int fd = ft__store_openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  int rc = FT_OK;
  if (fd < 0 || ft__write_all(fd, buf, len) != 0 || fsync(fd) != 0)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s/%s: write: %s",
                  dir->path, name, strerror(errno));
  if (fd >= 0)
    close(fd);
  if (rc == FT_OK)
    return ft__store_rename(dir, tmp, name, msg, msglen);
  unlinkat(dir->fd, tmp, 0);
  return rc;
}

/* A rank file's CRC: the CRC64 of its blocks' CRC64s, in order (persist.h):
 * it covers every byte once, without a second pass over them. */
static uint64_t file_crc(const ft__prank_t *r) {
  return ft__crc64(0, r->block_crc,
                   ft__persist_blocks(r->bytes) * sizeof(uint64_t));
}

/* Copy r->bytes from fd at off into out, block by block, with the CRCs. */
static int copy_rank(ft__prank_t *r, int fd, uint64_t off, int out,
                     uint8_t *buf, int (*cancelled)(void *), void *arg,
                     const char *path, char *msg, size_t msglen) {
  r->crc = 0;
  for (uint64_t b = 0, done = 0; done < r->bytes; b++) {
    if (cancelled && cancelled(arg))
      return FT_EBUSY;
    size_t n = (size_t)(r->bytes - done < FT_PERSIST_BLOCK
                            ? r->bytes - done
                            : FT_PERSIST_BLOCK);
    if (ft__pread_all(fd, buf, n, off + done) != 0)
      return ft__msgf(FT_EIO, msg, msglen,
                      "%s: the slot could not be read (%s)", path,
                      errno ? strerror(errno) : "it was cut short");
    r->block_crc[b] = ft__crc64(0, buf, n);
    if (ft__write_all(out, buf, n) != 0)
      return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: write: %s",
                      path, strerror(errno));
    done += n;
  }
  r->crc = file_crc(r);
  return fsync(out) == 0 ? FT_OK
                         : ft__msgf(ft__from_errno(errno), msg, msglen,
                                    "%s: fsync: %s", path, strerror(errno));
}

int ft__persist_write_rank(const ft__dir_t *vdir, ft__prank_t *r, int fd,
                           uint64_t off, uint8_t *buf,
                           int (*cancelled)(void *), void *arg, char *msg,
                           size_t msglen) {
  char name[32], tmp[FT_NAME_MAX + 48], path[sizeof(vdir->path) + 40];
  snprintf(name, sizeof(name), "rank%u", r->rank);
  snprintf(path, sizeof(path), "%s/%s", vdir->path, name);
  tmp_name(tmp, sizeof(tmp), name);
  int out = ft__store_openat(vdir, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (out < 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s: create: %s",
                    path, strerror(errno));
  int rc = copy_rank(r, fd, off, out, buf, cancelled, arg, path, msg, msglen);
  close(out);
  if (rc == FT_OK)
    return ft__store_rename(vdir, tmp, name, msg, msglen);
  unlinkat(vdir->fd, tmp, 0);
  return rc;
}

int ft__persist_write_node(const ft__dir_t *vdir, const ft__pnode_t *n,
                           int (*cancelled)(void *), void *arg, char *msg,
                           size_t msglen) {
  uint8_t *buf = NULL;
  size_t len = 0;
  if (ft__pnode_encode(n, &buf, &len))
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory for node %u's "
                    "manifest", vdir->path, n->node);
  char name[32];
  snprintf(name, sizeof(name), "node%u", n->node);
  /* Asked after the last byte was read from the slot: what was read is
   * what the slot held while the version was there. */
  int rc = cancelled && cancelled(arg)
               ? FT_EBUSY
               : write_atomic(vdir, name, buf, len, msg, msglen);
  ft__free(buf);
  return rc;
}

static int read_named(const ft__dir_t *dir, const char *name, uint8_t **buf,
                      size_t *len, char *msg, size_t msglen) {
  return ft__store_read_file(dir, name, FT_PERSIST_FILE_MAX, buf, len, msg,
                             msglen);
}

static int same_version(const ft__pnode_t *a, const ft__pnode_t *b) {
  return strcmp(a->job, b->job) == 0 && a->run == b->run &&
         a->version == b->version && a->step == b->step &&
         a->epoch == b->epoch && a->nonce == b->nonce &&
         a->nnodes == b->nnodes &&
         a->ntrainers == b->ntrainers;
}

/* Node manifest i of the version mine belongs to, with its CRC and rank
 * bytes: 0, or -1 when it is not there (yet) or not of the same version. */
static int node_part(const ft__dir_t *vdir, const ft__pnode_t *mine,
                     uint32_t i, uint64_t *crc, uint64_t *bytes) {
  char name[32];
  snprintf(name, sizeof(name), "node%u", i);
  uint8_t *buf = NULL;
  size_t len = 0;
  if (read_named(vdir, name, &buf, &len, NULL, 0) != FT_OK)
    return -1;
  ft__pnode_t n = {0};
  int rc = ft__pnode_decode(buf, len, &n, name, NULL, 0);
  int ok = rc == FT_OK && n.node == i && same_version(&n, mine);
  if (ok) {
    *crc = ft__crc64(0, buf, len);
    *bytes = 0;
    for (uint32_t r = 0; r < n.nranks; r++)
      *bytes += n.ranks[r].bytes;
  }
  ft__pnode_clear(&n);
  ft__free(buf);
  return ok ? 0 : -1;
}

int ft__persist_complete(const ft__dir_t *vdir, const ft__pnode_t *mine,
                         int *done, char *msg, size_t msglen) {
  *done = 0;
  ft__pversion_t v = {0};
  v.node_crc = ft__calloc(mine->nnodes, 8);
  v.node_bytes = ft__calloc(mine->nnodes, 8);
  int rc = v.node_crc && v.node_bytes
               ? FT_OK
               : ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory",
                          vdir->path);
  for (uint32_t i = 0; rc == FT_OK && i < mine->nnodes; i++)
    if (node_part(vdir, mine, i, &v.node_crc[i], &v.node_bytes[i]) != 0)
      goto out; /* not all there: the node that writes last completes it */
  if (rc == FT_OK) {
    snprintf(v.job, sizeof(v.job), "%s", mine->job);
    v.run = mine->run, v.version = mine->version, v.step = mine->step;
    v.epoch = mine->epoch, v.nnodes = mine->nnodes;
    v.ntrainers = mine->ntrainers;
    for (uint32_t i = 0; i < v.nnodes; i++)
      v.bytes += v.node_bytes[i];
    uint8_t *buf = NULL;
    size_t len = 0;
    rc = ft__pversion_encode(&v, &buf, &len) ? FT_ENOMEM : FT_OK;
    if (rc == FT_OK)
      rc = write_atomic(vdir, FT_PERSIST_MANIFEST, buf, len, msg, msglen);
    ft__free(buf);
    *done = rc == FT_OK;
  }
out:
  ft__pversion_clear(&v);
  return rc;
}

/* ---- reading ---- */

static int newer_first(const void *a, const void *b) {
  const ft__pversion_t *x = a, *y = b;
  if (x->epoch != y->epoch)
    return x->epoch > y->epoch ? -1 : 1;
  return x->version > y->version ? -1 : x->version < y->version;
}

int ft__persist_read_version(const ft__dir_t *jobdir, const char *name,
                             ft__pversion_t *v, char *msg, size_t msglen) {
  ft__dir_t vd;
  uint64_t ver, ep;
  ft__pversion_clear(v);
  if (ft__persist_parse_dirname(name, &ver, &ep) != 0)
    return ft__msgf(FT_EINVAL, msg, msglen,
                    "%s/%s: not a version directory's name", jobdir->path,
                    name);
  int rc = persist_sub(jobdir, name, 0, &vd, msg, msglen);
  char path[sizeof(vd.path) + 16];
  snprintf(path, sizeof(path), "%s/%s", vd.path, FT_PERSIST_MANIFEST);
  uint8_t *buf = NULL;
  size_t len = 0;
  if (rc == FT_OK)
    rc = read_named(&vd, FT_PERSIST_MANIFEST, &buf, &len, msg, msglen);
  if (rc == FT_OK)
    rc = ft__pversion_decode(buf, len, v, path, msg, msglen);
  if (rc == FT_OK && (v->version != ver || v->epoch != ep)) {
    ft__pversion_clear(v);
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: describes version %llu of epoch %llu, not this "
                  "directory's",
                  path, (unsigned long long)v->version,
                  (unsigned long long)v->epoch);
  }
  if (rc == FT_OK)
    snprintf(v->name, sizeof(v->name), "%s", name);
  ft__free(buf);
  ft__dir_close(&vd);
  return rc;
}

/* ft__persist_read_version as ft__persist_unlisted counts: 0, or -1 with
 * *status (when not NULL) and why in msg (may be NULL). */
static int read_version(const ft__dir_t *jobdir, const char *name,
                        ft__pversion_t *v, int *status, char *msg,
                        size_t msglen) {
  int rc = ft__persist_read_version(jobdir, name, v, msg, msglen);
  if (status)
    *status = rc;
  return rc == FT_OK ? 0 : -1;
}

void ft__persist_list_free(ft__pversion_t *v, int n) {
  for (int i = 0; v && i < n; i++)
    ft__pversion_clear(&v[i]);
  ft__free(v);
}

/* A directory stream of the job's directory, of its own descriptor. */
static DIR *open_listing(const ft__dir_t *jobdir, char *msg, size_t msglen) {
  int fd = ft__store_openat(jobdir, ".", O_RDONLY | O_DIRECTORY, 0);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    ft__msgf(ft__from_errno(errno), msg, msglen, "%s: opendir: %s",
             jobdir->path, strerror(errno));
    if (fd >= 0)
      close(fd);
  }
  return d;
}

int ft__persist_list(const ft__dir_t *jobdir, ft__pversion_t **out, int *n,
                     uint64_t *highest, char *msg, size_t msglen) {
  *out = NULL, *n = 0;
  if (highest)
    *highest = 0;
  DIR *d = open_listing(jobdir, msg, msglen);
  if (!d)
    return ft__from_errno(errno);
  int cap = 0, rc = FT_OK;
  struct dirent *e;
  while (rc == FT_OK && (e = readdir(d))) {
    uint64_t ver, ep;
    if (ft__persist_parse_dirname(e->d_name, &ver, &ep) != 0)
      continue;
    if (highest && ep > *highest)
      *highest = ep;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      ft__pversion_t *g = ft__realloc(*out, (size_t)cap * sizeof(**out));
      if (!g) {
        rc = ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory to list it",
                      jobdir->path);
        break;
      }
      *out = g;
    }
    memset(&(*out)[*n], 0, sizeof(**out));
    if (ft__persist_read_version(jobdir, e->d_name, &(*out)[*n], NULL, 0) ==
        FT_OK)
      (*n)++;
  }
  closedir(d);
  if (rc) {
    ft__persist_list_free(*out, *n);
    *out = NULL, *n = 0;
    return rc;
  }
  if (*n)
    qsort(*out, (size_t)*n, sizeof(**out), newer_first);
  return FT_OK;
}

static int parse_number(const char *s, uint64_t *out) {
  const char *p = s;
  return parse_u64(&p, out) == 0 && *p == '\0' ? 0 : -1;
}

int ft__persist_find(const ft__pversion_t *v, int n, const char *name,
                     int *idx) {
  uint64_t num, ep;
  int by_dir = ft__persist_parse_dirname(name, &num, &ep) == 0;
  if (!by_dir && parse_number(name, &num) != 0)
    return FT_EINVAL;
  for (int i = 0; i < n; i++) /* newest first: a number's newest epoch */
    if (v[i].version == num && (!by_dir || v[i].epoch == ep)) {
      *idx = i;
      return FT_OK;
    }
  return FT_ENOENT;
}

/* What directory name of the job is, when ft__persist_list leaves it out:
 * 0 gone meanwhile (pruned), 1 incomplete (no MANIFEST), 2 damaged (why in
 * msg), -1 a version. */
static int unlisted_kind(const ft__dir_t *jobdir, const char *name, char *msg,
                         size_t msglen) {
  ft__dir_t vd;
  int rc = persist_sub(jobdir, name, 0, &vd, msg, msglen);
  if (rc == FT_ENOENT)
    return 0;
  if (rc)
    return 2;
  int fd = ft__store_openat(&vd, FT_PERSIST_MANIFEST, O_RDONLY, 0);
  int err = errno;
  ft__dir_close(&vd);
  if (fd >= 0)
    close(fd);
  else if (err == ENOENT)
    return 1;
  ft__pversion_t v = {0};
  int kind = read_version(jobdir, name, &v, NULL, msg, msglen) == 0 ? -1 : 2;
  ft__pversion_clear(&v);
  return kind;
}

int ft__persist_unlisted(const ft__dir_t *jobdir, int *incomplete, int *damaged,
                         char *msg, size_t msglen) {
  *incomplete = *damaged = 0;
  DIR *d = open_listing(jobdir, msg, msglen);
  if (!d)
    return ft__from_errno(errno);
  if (msg && msglen)
    msg[0] = '\0';
  uint64_t best_ver = 0, best_ep = 0;
  struct dirent *e;
  char why[512];
  while ((e = readdir(d))) {
    uint64_t ver, ep;
    if (ft__persist_parse_dirname(e->d_name, &ver, &ep) != 0)
      continue;
    int kind = unlisted_kind(jobdir, e->d_name, why, sizeof(why));
    *incomplete += kind == 1;
    if (kind != 2)
      continue;
    /* the newest damaged one's message: the one a user looks at first */
    if (!*damaged || ep > best_ep || (ep == best_ep && ver > best_ver)) {
      best_ver = ver, best_ep = ep;
      if (msg && msglen)
        snprintf(msg, msglen, "%s", why);
    }
    (*damaged)++;
  }
  closedir(d);
  return FT_OK;
}

int ft__persist_read_node(const ft__dir_t *jobdir, const ft__pversion_t *v,
                          uint32_t node, ft__pnode_t *out, char *msg,
                          size_t msglen) {
  ft__dir_t vd;
  int rc = persist_sub(jobdir, v->name, 0, &vd, msg, msglen);
  char name[32], path[sizeof(vd.path) + 40];
  snprintf(name, sizeof(name), "node%u", node);
  snprintf(path, sizeof(path), "%s/%s", vd.path, name);
  uint8_t *buf = NULL;
  size_t len = 0;
  if (rc == FT_OK)
    rc = read_named(&vd, name, &buf, &len, msg, msglen);
  if (rc == FT_OK && (node >= v->nnodes || ft__crc64(0, buf, len) !=
                                               v->node_crc[node]))
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: not the node manifest its MANIFEST names (CRC "
                  "mismatch)",
                  path);
  if (rc == FT_OK)
    rc = ft__pnode_decode(buf, len, out, path, msg, msglen);
  if (rc == FT_OK && (out->node != node || out->version != v->version ||
                      out->epoch != v->epoch || out->nnodes != v->nnodes))
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: describes another node or version", path);
  if (rc)
    ft__pnode_clear(out);
  ft__free(buf);
  ft__dir_close(&vd);
  return rc;
}

int ft__pfile_open(ft__pfile_t *f, const ft__dir_t *jobdir,
                   const char *vdir, const ft__prank_t *r, char *msg,
                   size_t msglen) {
  memset(f, 0, sizeof(*f));
  f->fd = -1;
  f->r = r;
  f->block_idx = UINT64_MAX;
  snprintf(f->path, sizeof(f->path), "%s/%s/rank%u", jobdir->path, vdir,
           r->rank);
  ft__dir_t vd;
  int rc = persist_sub(jobdir, vdir, 0, &vd, msg, msglen);
  if (rc)
    return rc;
  char name[32];
  snprintf(name, sizeof(name), "rank%u", r->rank);
  f->fd = ft__store_openat(&vd, name, O_RDONLY, 0);
  int err = errno;
  ft__dir_close(&vd);
  if (f->fd < 0)
    return ft__msgf(ft__from_errno(err), msg, msglen, "%s: open: %s", f->path,
                    strerror(err));
  struct stat st;
  if (fstat(f->fd, &st) != 0 || (uint64_t)st.st_size != r->bytes) {
    ft__pfile_close(f);
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %lld bytes, its manifest says %" PRIu64
                    " (truncated?)",
                    f->path, (long long)st.st_size, r->bytes);
  }
  return FT_OK;
}

/* Block b of the file into f->block, checked. */
static int load_block(ft__pfile_t *f, uint64_t b, char *msg, size_t msglen) {
  if (f->block_idx == b)
    return FT_OK;
  if (!f->block && !(f->block = ft__malloc(FT_PERSIST_BLOCK)))
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", f->path);
  uint64_t off = b * FT_PERSIST_BLOCK;
  size_t n = (size_t)(f->r->bytes - off < FT_PERSIST_BLOCK ? f->r->bytes - off
                                                           : FT_PERSIST_BLOCK);
  f->block_idx = UINT64_MAX;
  if (ft__pread_all(f->fd, f->block, n, off) != 0)
    return ft__msgf(FT_EIO, msg, msglen, "%s: read: %s", f->path,
                    errno ? strerror(errno) : "short read (truncated?)");
  if (ft__crc64(0, f->block, n) != f->r->block_crc[b])
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: block %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64
                    ") fails its CRC",
                    f->path, b, off, off + n);
  f->block_idx = b;
  return FT_OK;
}

int ft__pfile_read(ft__pfile_t *f, uint64_t off, uint64_t len, void *dst,
                   char *msg, size_t msglen) {
  if (off > f->r->bytes || len > f->r->bytes - off)
    return ft__msgf(FT_ERANGE, msg, msglen,
                    "%s: bytes %" PRIu64 "..%" PRIu64 " lie past its end",
                    f->path, off, off + len);
  uint8_t *out = dst;
  while (len) {
    uint64_t b = off / FT_PERSIST_BLOCK, in = off % FT_PERSIST_BLOCK;
    int rc = load_block(f, b, msg, msglen);
    if (rc)
      return rc;
    uint64_t n = FT_PERSIST_BLOCK - in < len ? FT_PERSIST_BLOCK - in : len;
    memcpy(out, f->block + in, (size_t)n);
    out += n, off += n, len -= n;
  }
  return FT_OK;
}

void ft__pfile_close(ft__pfile_t *f) {
  if (f->fd >= 0)
    close(f->fd);
  ft__free(f->block);
  f->fd = -1;
  f->block = NULL;
  f->block_idx = UINT64_MAX;
}

/* Every block of rank file r, and its whole-file CRC. */
static int verify_rank(const ft__dir_t *jobdir, const char *vdir,
                       const ft__prank_t *r, uint64_t *bytes, char *msg,
                       size_t msglen) {
  ft__pfile_t f;
  int rc = ft__pfile_open(&f, jobdir, vdir, r, msg, msglen);
  /* the block CRCs first: a scribbled table is named as such */
  if (rc == FT_OK && file_crc(r) != r->crc)
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s: its block CRCs in the node manifest do not match its "
                  "file CRC", f.path);
  for (uint64_t b = 0; rc == FT_OK && b < ft__persist_blocks(r->bytes); b++)
    rc = load_block(&f, b, msg, msglen);
  if (rc == FT_OK && bytes)
    *bytes += r->bytes;
  ft__pfile_close(&f);
  return rc;
}

int ft__persist_verify(const ft__dir_t *jobdir, const ft__pversion_t *v,
                       uint32_t first, uint32_t stride, uint64_t *bytes,
                       char *msg, size_t msglen) {
  int rc = FT_OK;
  uint32_t ranks = 0;
  if (bytes)
    *bytes = 0;
  for (uint32_t i = 0; rc == FT_OK && i < v->nnodes; i++) {
    ft__pnode_t n = {0};
    rc = ft__persist_read_node(jobdir, v, i, &n, msg, msglen);
    ranks += rc == FT_OK ? n.nranks : 0;
    for (uint32_t r = 0; rc == FT_OK && i % stride == first && r < n.nranks;
         r++)
      rc = verify_rank(jobdir, v->name, &n.ranks[r], bytes, msg, msglen);
    ft__pnode_clear(&n);
  }
  if (rc == FT_OK && ranks != v->ntrainers)
    rc = ft__msgf(FT_ECORRUPT, msg, msglen,
                  "%s/%s: its node manifests hold %u ranks, its MANIFEST "
                  "says %u",
                  jobdir->path, v->name, ranks, v->ntrainers);
  return rc;
}

/* ---- pruning ---- */

static int remove_version(const ft__dir_t *jobdir, const char *name,
                          char *msg, size_t msglen) {
  char path[sizeof(jobdir->path) + 300];
  snprintf(path, sizeof(path), "%s/%s", jobdir->path, name);
  /* Its MANIFEST first: a removal cut short leaves no listed version with
   * files missing. */
  ft__dir_t vd;
  if (persist_sub(jobdir, name, 0, &vd, NULL, 0) == FT_OK) {
    unlinkat(vd.fd, FT_PERSIST_MANIFEST, 0);
    fsync(vd.fd);
    ft__dir_close(&vd);
  }
  return ft__store_remove_dir(jobdir->fd, name, path, msg, msglen);
}

/* Is directory (ver, ep) older than version v in the order of versions? */
static int older(uint64_t ver, uint64_t ep, const ft__pversion_t *v) {
  return ep < v->epoch || (ep == v->epoch && ver < v->version);
}

int ft__persist_prune(const ft__dir_t *jobdir, int keep, int *removed,
                      char *msg, size_t msglen) {
  ft__pversion_t *v = NULL;
  int n = 0;
  if (removed)
    *removed = 0;
  int rc = ft__persist_list(jobdir, &v, &n, NULL, msg, msglen);
  if (rc || n <= 0 || keep < 1) {
    ft__persist_list_free(v, n);
    return rc;
  }
  const ft__pversion_t *oldest = &v[keep < n ? keep - 1 : n - 1];
  DIR *d = open_listing(jobdir, msg, msglen);
  if (!d) {
    ft__persist_list_free(v, n);
    return ft__from_errno(errno);
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    uint64_t ver, ep;
    if (ft__persist_parse_dirname(e->d_name, &ver, &ep) != 0 ||
        !older(ver, ep, oldest))
      continue;
    int r = remove_version(jobdir, e->d_name, rc ? NULL : msg, msglen);
    rc = rc ? rc : r;
    if (r == FT_OK && removed)
      (*removed)++;
  }
  closedir(d);
  ft__persist_list_free(v, n);
  return rc;
}

int ft__persist_remove_all(const ft__dir_t *jobdir, char *msg, size_t msglen) {
  DIR *d = open_listing(jobdir, msg, msglen);
  if (!d)
    return errno == ENOENT ? FT_OK : ft__from_errno(errno);
  int rc = FT_OK;
  struct dirent *e;
  while ((e = readdir(d))) {
    uint64_t ver, ep;
    if (ft__persist_parse_dirname(e->d_name, &ver, &ep) != 0)
      continue;
    int r = remove_version(jobdir, e->d_name, rc ? NULL : msg, msglen);
    rc = rc ? rc : r;
  }
  closedir(d);
  return rc;
}
