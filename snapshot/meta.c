/*
 * Node metadata.
 *
 * The wire form is a fixed part, the host table, then each rank's fixed
 * fields and buffer table, then a CRC64 of everything before it.  The
 * decoder checks the magic, the format, the length the bytes claim against
 * the length there is and the CRC before it believes a field, then every
 * count against the bytes that would hold its table before the table is
 * allocated: a truncated, foreign or scribbled file is an error with a
 * message, never a crash or an allocation of a scribbled size.
 */
#include "snapshot/meta.h"

#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/crc.h"
#include "snapshot/fileio.h"

#define META_MAGIC "FTRTMETA"

/* ---- the codec ---- */

/* The wire form: magic, format, length, then the fixed part of ft__meta_t
 * up to ranks, then per rank its fixed fields and nbufs records, then a
 * CRC64 of everything before it. */
typedef struct meta_fixed {
  char magic[8];
  uint32_t format;
  uint32_t reserved;
  uint64_t total_bytes;
  char job[FT_JOB_MAX];
  char host[FT_NAME_MAX];
  uint64_t epoch;
  uint32_t node, nnodes, ntrainers, k, m, group, pos, group_size, nlocal;
  uint32_t pad;
  uint64_t run;
  uint64_t layout;
  uint32_t next_node, next_nnodes;
} meta_fixed_t;

typedef struct rank_fixed {
  uint32_t rank, nbufs;
  uint64_t region_bytes;
} rank_fixed_t;

static size_t meta_size(const ft__meta_t *m) {
  size_t n =
      sizeof(meta_fixed_t) + sizeof(uint64_t) + (size_t)m->nnodes * FT_NAME_MAX;
  for (uint32_t r = 0; r < m->nlocal; r++)
    n += sizeof(rank_fixed_t) + m->ranks[r].nbufs * sizeof(ft__buf_rec_t);
  return n;
}

void ft__meta_clear(ft__meta_t *m) {
  if (!m)
    return;
  for (uint32_t r = 0; r < FT_MAX_LOCAL; r++)
    ft__free(m->ranks[r].bufs);
  ft__free(m->hosts);
  memset(m, 0, sizeof(*m));
}

void ft__meta_free(ft__meta_t *m) {
  ft__meta_clear(m);
  ft__free(m);
}

int ft__meta_alloc_hosts(ft__meta_t *m, uint32_t nnodes) {
  ft__free(m->hosts);
  m->nnodes = 0;
  m->hosts = nnodes ? ft__calloc(nnodes, sizeof(*m->hosts)) : NULL;
  if (nnodes && !m->hosts)
    return FT_ENOMEM;
  m->nnodes = nnodes;
  return FT_OK;
}

int ft__meta_alloc_bufs(ft__meta_t *m, uint32_t r, uint32_t nbufs) {
  ft__rank_rec_t *rec = &m->ranks[r];
  ft__free(rec->bufs);
  rec->nbufs = 0;
  rec->bufs = nbufs ? ft__calloc(nbufs, sizeof(*rec->bufs)) : NULL;
  if (nbufs && !rec->bufs)
    return FT_ENOMEM;
  rec->nbufs = nbufs;
  return FT_OK;
}

/* Are the tables that m's counts promise there? */
static int tables_ok(const ft__meta_t *m) {
  if (m->nnodes && !m->hosts)
    return 0;
  for (uint32_t r = 0; r < m->nlocal; r++)
    if (m->ranks[r].nbufs && !m->ranks[r].bufs)
      return 0;
  return 1;
}

/* The fixed fields of a and b and of their first nlocal ranks, less the
 * table pointers. */
static int fixed_equal(const ft__meta_t *a, const ft__meta_t *b) {
  ft__meta_t x = *a, y = *b; /* shallow: only compared, never released */
  x.hosts = y.hosts = NULL;
  for (uint32_t r = 0; r < FT_MAX_LOCAL; r++) {
    if (r >= a->nlocal)
      memset(&x.ranks[r], 0, sizeof(x.ranks[r]));
    if (r >= b->nlocal)
      memset(&y.ranks[r], 0, sizeof(y.ranks[r]));
    x.ranks[r].bufs = y.ranks[r].bufs = NULL;
  }
  return memcmp(&x, &y, sizeof(x)) == 0;
}

int ft__meta_equal(const ft__meta_t *a, const ft__meta_t *b) {
  if (!fixed_equal(a, b) || a->nlocal > FT_MAX_LOCAL ||
      (a->nnodes &&
       memcmp(a->hosts, b->hosts, (size_t)a->nnodes * FT_NAME_MAX) != 0))
    return 0;
  for (uint32_t r = 0; r < a->nlocal; r++)
    if (a->ranks[r].nbufs &&
        memcmp(a->ranks[r].bufs, b->ranks[r].bufs,
               (size_t)a->ranks[r].nbufs * sizeof(ft__buf_rec_t)) != 0)
      return 0;
  return 1;
}

int ft__meta_encode(const ft__meta_t *m, uint8_t **out, size_t *len) {
  if (m->nlocal > FT_MAX_LOCAL)
    return FT_ERANGE;
  if (!tables_ok(m))
    return FT_EINVAL;
  size_t n = meta_size(m);
  if (n > FT_META_FILE_MAX) /* no reader would take it: refuse to write */
    return FT_ERANGE;
  uint8_t *buf = ft__calloc(1, n), *p = buf;
  if (!buf)
    return FT_ENOMEM;
  meta_fixed_t f = {0};
  memcpy(f.magic, META_MAGIC, 8);
  f.format = FT_STORE_FORMAT;
  f.reserved = m->flags;
  f.total_bytes = n;
  memcpy(f.job, m->job, sizeof(f.job));
  memcpy(f.host, m->host, sizeof(f.host));
  f.epoch = m->epoch;
  f.run = m->run;
  f.layout = m->layout;
  f.next_node = m->next_node, f.next_nnodes = m->next_nnodes;
  f.node = m->node, f.nnodes = m->nnodes, f.ntrainers = m->ntrainers;
  f.k = m->k, f.m = m->m, f.group = m->group, f.pos = m->pos;
  f.group_size = m->group_size, f.nlocal = m->nlocal;
  ft__put(&p, &f, sizeof(f));
  ft__put(&p, m->hosts, (size_t)m->nnodes * FT_NAME_MAX);
  for (uint32_t r = 0; r < m->nlocal; r++) {
    rank_fixed_t rf = {m->ranks[r].rank, m->ranks[r].nbufs,
                       m->ranks[r].region_bytes};
    ft__put(&p, &rf, sizeof(rf));
    ft__put(&p, m->ranks[r].bufs, rf.nbufs * sizeof(ft__buf_rec_t));
  }
  uint64_t crc = ft__crc64(0, buf, (size_t)(p - buf));
  ft__put(&p, &crc, sizeof(crc));
  *out = buf;
  *len = n;
  return FT_OK;
}

static int decode_fixed(const uint8_t *buf, size_t len, ft__meta_t *m,
                        const char *path, char *msg, size_t msglen) {
  meta_fixed_t f;
  if (len < sizeof(f) + sizeof(uint64_t))
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes, too short (truncated)", path, len);
  memcpy(&f, buf, sizeof(f));
  if (memcmp(f.magic, META_MAGIC, 8) != 0)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: bad magic, not ftrt metadata", path);
  if (f.format != FT_STORE_FORMAT)
    return ft__msgf(
        FT_EMISMATCH, msg, msglen,
        "%s: store format %u, this ftrt reads format %u" FT_STORE_UPGRADE, path,
        f.format, FT_STORE_FORMAT);
  if (f.total_bytes != len)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu bytes but the header says %llu (truncated?)", path,
                    len, (unsigned long long)f.total_bytes);
  uint64_t crc;
  memcpy(&crc, buf + len - sizeof(crc), sizeof(crc));
  if (ft__crc64(0, buf, len - sizeof(crc)) != crc)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: CRC mismatch", path);
  if (!ft__str_ok(f.job, sizeof(f.job)) ||
      !ft__str_ok(f.host, sizeof(f.host)) || f.nlocal > FT_MAX_LOCAL ||
      f.k < 1 || (uint64_t)f.k + f.m >= FT_MAX_CHUNKS || f.nnodes < 1 ||
      f.node >= f.nnodes || f.group >= f.nnodes || f.group_size < 1 ||
      f.group_size >= FT_MAX_CHUNKS || f.pos >= f.group_size || f.layout < 1 ||
      f.layout > f.epoch || f.layout > UINT32_MAX ||
      ((f.reserved & FT_META_RESLICE) &&
       (f.next_nnodes < 1 || f.next_nnodes > f.nnodes ||
        f.next_node >= f.next_nnodes)) ||
      (len - sizeof(f) - 8) / FT_NAME_MAX < f.nnodes)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: fields out of range", path);
  /* The host table is allocated only now that len is known to hold it. */
  if (ft__meta_alloc_hosts(m, f.nnodes))
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s: out of memory for the hosts of %u nodes", path,
                    f.nnodes);
  memcpy(m->job, f.job, sizeof(m->job));
  memcpy(m->host, f.host, sizeof(m->host));
  m->epoch = f.epoch;
  m->run = f.run;
  m->layout = f.layout;
  m->next_node = f.next_node, m->next_nnodes = f.next_nnodes;
  m->node = f.node, m->nnodes = f.nnodes, m->ntrainers = f.ntrainers;
  m->k = f.k, m->m = f.m, m->group = f.group, m->pos = f.pos;
  m->group_size = f.group_size, m->nlocal = f.nlocal;
  m->flags = f.reserved;
  return FT_OK;
}

static int decode_rank(const uint8_t **p, const uint8_t *end, ft__meta_t *m,
                       uint32_t idx, const char *path, char *msg,
                       size_t msglen) {
  ft__rank_rec_t *r = &m->ranks[idx];
  rank_fixed_t rf;
  if ((size_t)(end - *p) < sizeof(rf))
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: rank table truncated", path);
  memcpy(&rf, *p, sizeof(rf));
  *p += sizeof(rf);
  if ((size_t)(end - *p) / sizeof(ft__buf_rec_t) < rf.nbufs)
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: buffer table of rank %u bad",
                    path, rf.rank);
  if (ft__meta_alloc_bufs(m, idx, rf.nbufs))
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s: out of memory for the %u buffers of rank %u", path,
                    rf.nbufs, rf.rank);
  r->rank = rf.rank, r->region_bytes = rf.region_bytes;
  if (rf.nbufs)
    memcpy(r->bufs, *p, rf.nbufs * sizeof(ft__buf_rec_t));
  *p += rf.nbufs * sizeof(ft__buf_rec_t);
  for (uint32_t b = 0; b < rf.nbufs; b++) {
    const ft__buf_rec_t *br = &r->bufs[b];
    if (!ft__str_ok(br->name, sizeof(br->name)))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: name of buffer %u of rank %u is not terminated",
                      path, b, rf.rank);
    if (br->bytes > rf.region_bytes || br->offset > rf.region_bytes - br->bytes)
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: buffer %u of rank %u lies outside its region", path,
                      b, rf.rank);
    if (br->global_bytes && (br->bytes > br->global_bytes ||
                             br->global_offset > br->global_bytes - br->bytes))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: buffer %u of rank %u is a slice outside its global "
                      "buffer",
                      path, b, rf.rank);
  }
  return FT_OK;
}

static int decode_tables(const uint8_t *buf, size_t len, ft__meta_t *m,
                         const char *path, char *msg, size_t msglen);

int ft__meta_decode(const uint8_t *buf, size_t len, ft__meta_t *m,
                    const char *path, char *msg, size_t msglen) {
  ft__meta_clear(m);
  int rc = decode_fixed(buf, len, m, path, msg, msglen);
  if (rc == FT_OK)
    rc = decode_tables(buf, len, m, path, msg, msglen);
  if (rc)
    ft__meta_clear(m);
  return rc;
}

static int decode_tables(const uint8_t *buf, size_t len, ft__meta_t *m,
                         const char *path, char *msg, size_t msglen) {
  int rc;
  const uint8_t *p = buf + sizeof(meta_fixed_t), *end = buf + len - 8;
  memcpy(m->hosts, p, (size_t)m->nnodes * FT_NAME_MAX);
  p += (size_t)m->nnodes * FT_NAME_MAX;
  for (uint32_t h = 0; h < m->nnodes; h++)
    if (!ft__str_ok(m->hosts[h], FT_NAME_MAX))
      return ft__msgf(FT_ECORRUPT, msg, msglen,
                      "%s: host name %u not terminated", path, h);
  for (uint32_t r = 0; r < m->nlocal; r++)
    if ((rc = decode_rank(&p, end, m, r, path, msg, msglen)))
      return rc;
  if (p != end)
    return ft__msgf(FT_ECORRUPT, msg, msglen,
                    "%s: %zu unexpected trailing bytes", path,
                    (size_t)(end - p));
  return FT_OK;
}

int ft__meta_describes(const ft__meta_t *m, uint64_t layout, uint64_t vepoch) {
  return layout == m->layout && vepoch >= m->layout && vepoch <= m->epoch;
}

int ft__meta_same_entry(const ft__meta_t *mine, const ft__meta_t *m) {
  return m->node == mine->node && m->layout == mine->layout &&
         m->run == mine->run && m->group == mine->group &&
         m->pos == mine->pos && m->nnodes == mine->nnodes;
}

/* ---- the meta files ---- */

int ft__meta_write_as(const ft__dir_t *dir, const char *name,
                      const ft__meta_t *m, char *msg, size_t msglen) {
  uint8_t *buf;
  size_t len;
  int rc = ft__meta_encode(m, &buf, &len);
  if (rc)
    return ft__msgf(rc, msg, msglen, "%s/%s: cannot encode metadata", dir->path,
                    name);
  rc = ft__store_write_file(dir, name, buf, len, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__meta_write(const ft__dir_t *dir, const ft__meta_t *m, char *msg,
                   size_t msglen) {
  return ft__meta_write_as(dir, FT_META, m, msg, msglen);
}

int ft__meta_read_as(const ft__dir_t *dir, const char *name, ft__meta_t *m,
                     char *msg, size_t msglen) {
  uint8_t *buf;
  size_t len;
  int rc =
      ft__store_read_file(dir, name, FT_META_FILE_MAX, &buf, &len, msg, msglen);
  if (rc) {
    ft__meta_clear(m);
    return rc;
  }
  char path[sizeof(dir->path) + 80];
  ft__path_in(path, sizeof(path), dir, name);
  rc = ft__meta_decode(buf, len, m, path, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__meta_read(const ft__dir_t *dir, ft__meta_t *m, char *msg,
                  size_t msglen) {
  return ft__meta_read_as(dir, FT_META, m, msg, msglen);
}

/* ---- the codec's helpers ---- */

void ft__put(uint8_t **p, const void *src, size_t n) {
  if (n) /* an empty table may be NULL */
    memcpy(*p, src, n);
  *p += n;
}

int ft__str_ok(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}
