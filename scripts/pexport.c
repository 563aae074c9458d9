/*
 * ft-persist export: a persisted version as files any numpy reads, with no
 * ftrt: one .npy file (format 1.0, dtype uint8, one dimension: the C side
 * knows byte sizes, not dtypes) per tensor, global tensors whole under
 * global/, private buffers under rank<R>/, and index.json naming each
 * tensor's real name, rank, size, kind, file and, for a global tensor, the
 * slices it was put together from.
 *
 * The version is opened (every manifest checked, every global tensor known
 * to be covered) before OUTDIR is touched; every byte is read through
 * ft_persisted_read, which checks the CRC of each block it reads.  A
 * registered name may hold any byte ('/', "..", a leading dot): in a file
 * name every byte but [A-Za-z0-9_.-] is written %XX, and a leading dot
 * %2E, so names map one to one to files inside their directory.
 * index.json is written last: an export without it is not finished, and a
 * failed one removes what it wrote (OUTDIR too when it made it).
 */
#include "scripts/pexport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "persist/persist.h"
#include "snapshot/store.h"

#define CHUNK FT_PERSIST_BLOCK
/* rank<R>/ (16) + 3 bytes per name byte + ".npy" */
#define REL_MAX (16 + 3 * FT_NAME_MAX + 8)

typedef struct out {
  const char *path; /* OUTDIR as given */
  int fd;           /* OUTDIR */
  int made;         /* OUTDIR was made here */
  char **created;   /* relative paths made, in order (undone backwards) */
  int *is_dir;
  size_t n, cap;
  char msg[1024];
} out_t;

int ft__px_exit_of(int status) {
  switch (status) {
  case FT_OK:
    return FT_PX_OK;
  case FT_EINVAL:
    return FT_PX_USAGE;
  case FT_ECONFIG:
    return FT_PX_REFUSED;
  case FT_ENOENT:
    return FT_PX_NOTFOUND;
  case FT_ECORRUPT:
  case FT_EIO:
    return FT_PX_CORRUPT;
  case FT_EMISMATCH:
    return FT_PX_UNCOVERED;
  default:
    return FT_PX_ERROR;
  }
}

/* Length of the UTF-8 sequence at s, 0 when it is not a valid one
 * (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF). */
static int utf8_len(const unsigned char *s) {
  int n = s[0] >= 0xf0 && s[0] <= 0xf4   ? 4
          : s[0] >= 0xe0 && s[0] <= 0xef ? 3
          : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                                         : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
      (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
    return 0;
  return n;
}

void ft__px_json_str(FILE *f, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', f);
  while (*s) {
    int n = *s >= 0x80 ? utf8_len(s) : 1;
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if (*s < 0x20 || n == 0)
      fprintf(f, "\\u%04x", *s);
    else
      fwrite(s, 1, (size_t)n, f);
    s += n ? n : 1;
  }
  fputc('"', f);
}

void ft__px_human(char *out, size_t len, double b) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    i++;
  }
  snprintf(out, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static const char *kind_name(uint32_t kind) {
  static const char *names[] = {"param", "optim", "rng", "other"};
  return kind < 4 ? names[kind] : "unknown";
}

/* ---- file names ---- */

static void safe_name(const char *name, char *out, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t at = 0;
  for (const unsigned char *s = (const unsigned char *)name; *s && at + 4 < len;
       s++) {
    int plain = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
                (*s == '.' && s != (const unsigned char *)name);
    if (plain) {
      out[at++] = (char)*s;
      continue;
    }
    out[at++] = '%';
    out[at++] = hex[*s >> 4];
    out[at++] = hex[*s & 15];
  }
  out[at] = '\0';
}

/* The directory and file of tensor t, relative to OUTDIR. */
static void rel_dir(const ft_persisted_tensor_t *t, char *out, size_t len) {
  if (t->rank < 0)
    snprintf(out, len, "global");
  else
    snprintf(out, len, "rank%" PRId64, t->rank);
}

static void rel_file(const ft_persisted_tensor_t *t, char *out, size_t len) {
  char d[24], n[3 * FT_NAME_MAX + 1];
  rel_dir(t, d, sizeof(d));
  safe_name(t->name, n, sizeof(n));
  snprintf(out, len, "%s/%s.npy", d, n);
}

/* ---- OUTDIR ---- */

static int track(out_t *o, const char *rel, int is_dir) {
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 64;
    char **c = realloc(o->created, cap * sizeof(*c));
    if (c)
      o->created = c;
    int *d = c ? realloc(o->is_dir, cap * sizeof(*d)) : NULL;
    if (d)
      o->is_dir = d;
    if (!c || !d)
      return -1;
    o->cap = cap;
  }
  if (!(o->created[o->n] = strdup(rel)))
    return -1;
  o->is_dir[o->n++] = is_dir;
  return 0;
}

static int outdir_fail(out_t *o, const char *what, int err) {
  snprintf(o->msg, sizeof(o->msg), "%s: %s: %s", o->path, what, strerror(err));
  return FT_PX_OUTDIR;
}

static int is_empty(int fd) {
  int d = dup(fd);
  DIR *dir = d >= 0 ? fdopendir(d) : NULL;
  if (!dir) {
    if (d >= 0)
      close(d);
    return -1;
  }
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(dir)))
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(dir);
  return empty;
}

static int open_outdir(out_t *o) {
  o->made = mkdir(o->path, 0700) == 0;
  if (!o->made && errno != EEXIST)
    return outdir_fail(o,
                       "cannot make it (its parent must exist and be "
                       "writable)",
                       errno);
  o->fd = open(o->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (o->fd < 0)
    return outdir_fail(o, "exists but cannot be opened as a directory", errno);
  int empty = o->made ? 1 : is_empty(o->fd);
  if (empty < 0)
    return outdir_fail(o, "cannot list it", errno);
  if (!empty) {
    snprintf(o->msg, sizeof(o->msg),
             "%s exists and is not empty: an export goes into a new or "
             "empty directory, never among other files (give another OUTDIR "
             "or empty this one)",
             o->path);
    return FT_PX_OUTDIR;
  }
  return FT_PX_OK;
}

/* Remove what this export made, newest first. */
static void undo(out_t *o) {
  for (size_t i = o->n; i-- > 0;)
    unlinkat(o->fd, o->created[i], o->is_dir[i] ? AT_REMOVEDIR : 0);
  if (o->made)
    rmdir(o->path);
}

static void out_free(out_t *o) {
  for (size_t i = 0; i < o->n; i++)
    free(o->created[i]);
  free(o->created);
  free(o->is_dir);
  if (o->fd >= 0)
    close(o->fd);
}

static int make_dir(out_t *o, const char *rel) {
  if (mkdirat(o->fd, rel, 0700) == 0)
    return track(o, rel, 1) == 0 ? FT_PX_OK : outdir_fail(o, rel, ENOMEM);
  return errno == EEXIST ? FT_PX_OK : outdir_fail(o, rel, errno);
}

/* A new file rel under OUTDIR, remembered for undo. */
static int create_file(out_t *o, const char *rel, int *fd) {
  *fd = openat(o->fd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
               0600);
  if (*fd < 0)
    return outdir_fail(o, rel, errno);
  if (track(o, rel, 0) != 0) {
    close(*fd);
    unlinkat(o->fd, rel, 0);
    return outdir_fail(o, rel, ENOMEM);
  }
  return FT_PX_OK;
}

/* ---- .npy ---- */

/* The header of a .npy file (format 1.0) of n bytes of uint8: magic,
 * version, header length, then the dict padded with spaces to a multiple
 * of 64 bytes in all, ending in a newline. */
static size_t npy_header(uint64_t n, char *out, size_t len) {
  char dict[128];
  int d = snprintf(dict, sizeof(dict),
                   "{'descr': '|u1', 'fortran_order': False, 'shape': "
                   "(%" PRIu64 ",), }",
                   n);
  size_t total = (10 + (size_t)d + 1 + 63) / 64 * 64;
  if (total > len)
    return 0;
  size_t hlen = total - 10;
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  out[8] = (char)(hlen & 0xff);
  out[9] = (char)(hlen >> 8);
  memset(out + 10, ' ', hlen);
  memcpy(out + 10, dict, (size_t)d);
  out[total - 1] = '\n';
  return total;
}

static int write_npy(out_t *o, ft_persisted_t *p, size_t i,
                     const ft_persisted_tensor_t *t, uint8_t *buf, int *rs) {
  char rel[REL_MAX], hdr[256];
  rel_dir(t, rel, sizeof(rel));
  int rc = make_dir(o, rel), fd = -1;
  rel_file(t, rel, sizeof(rel));
  if (rc == FT_PX_OK)
    rc = create_file(o, rel, &fd);
  size_t h = rc == FT_PX_OK ? npy_header(t->bytes, hdr, sizeof(hdr)) : 0;
  if (rc == FT_PX_OK && ft__write_all(fd, (uint8_t *)hdr, h) != 0)
    rc = outdir_fail(o, rel, errno);
  for (uint64_t off = 0; rc == FT_PX_OK && off < t->bytes; off += CHUNK) {
    uint64_t n = t->bytes - off < CHUNK ? t->bytes - off : CHUNK;
    *rs = ft_persisted_read(p, i, off, n, buf, o->msg, sizeof(o->msg));
    if (*rs) /* a file of a listed version missing is damage, not "none" */
      rc = *rs == FT_ENOENT ? FT_PX_CORRUPT : ft__px_exit_of(*rs);
    else if (ft__write_all(fd, buf, (size_t)n) != 0)
      rc = outdir_fail(o, rel, errno);
  }
  if (rc == FT_PX_OK && fsync(fd) != 0)
    rc = outdir_fail(o, rel, errno);
  if (fd >= 0 && close(fd) != 0 && rc == FT_PX_OK)
    rc = outdir_fail(o, rel, errno);
  return rc;
}

/* ---- index.json ---- */

static void index_tensor(FILE *f, const ft_persisted_t *p, size_t i) {
  ft_persisted_tensor_t t;
  ft_persisted_tensor(p, i, &t);
  char rel[REL_MAX];
  rel_file(&t, rel, sizeof(rel));
  fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
  ft__px_json_str(f, t.name);
  if (t.rank < 0)
    fprintf(f, ", \"rank\": \"global\"");
  else
    fprintf(f, ", \"rank\": %" PRId64, t.rank);
  fprintf(f, ", \"bytes\": %" PRIu64 ", \"kind\": \"%s\", \"file\": ", t.bytes,
          kind_name(t.kind));
  ft__px_json_str(f, rel);
  /* the exact bytes: a name that is not UTF-8 reads as another in JSON */
  fprintf(f, ", \"name_hex\": \"");
  for (const unsigned char *c = (const unsigned char *)t.name; *c; c++)
    fprintf(f, "%02x", *c);
  fprintf(f, "\"");
  if (t.rank < 0) {
    fprintf(f, ",\n     \"slices\": [");
    for (uint32_t j = 0; j < t.nslices; j++) {
      ft_persisted_slice_t s;
      ft_persisted_slice(p, i, j, &s);
      fprintf(f,
              "%s{\"rank\": %u, \"global_offset\": %" PRIu64
              ", \"bytes\": %" PRIu64 "}",
              j ? ", " : "", s.rank, s.global_offset, s.bytes);
    }
    fprintf(f, "]");
  }
  fprintf(f, "}");
}

/* index.json last, whole or not at all: written as index.json.tmp,
 * fsynced, renamed, and OUTDIR fsynced, after every .npy was fsynced, so
 * an export cut short (a crash, a power loss) never has an index.json. */
static int write_index(out_t *o, const ft_persisted_t *p, const char *job) {
  int fd;
  int rc = create_file(o, "index.json.tmp", &fd);
  FILE *f = rc == FT_PX_OK ? fdopen(fd, "w") : NULL;
  if (rc == FT_PX_OK && !f) {
    close(fd);
    return outdir_fail(o, "index.json", errno);
  }
  if (rc)
    return rc;
  ft_persisted_info_t in;
  ft_persisted_info(p, &in);
  fprintf(f, "{\"format\": \"ftrt-export\", \"format_version\": 1, \"job\": ");
  ft__px_json_str(f, job);
  fprintf(f,
          ", \"dir\": \"%s\", \"version\": %" PRIu64 ", \"step\": %" PRIu64
          ", \"epoch\": %" PRIu64 ", \"run\": %" PRIu64
          ", \"nodes\": %u, \"ranks\": %u,\n \"dtype\": \"uint8\", "
          "\"tensors\": [",
          in.dir, in.version, in.step, in.epoch, in.run, in.nnodes, in.nranks);
  for (size_t i = 0; i < in.ntensors; i++)
    index_tensor(f, p, i);
  fprintf(f, "\n]}\n");
  int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
  int err = errno;
  if (fclose(f) != 0 || bad)
    return outdir_fail(o, "index.json", bad ? err : errno);
  if (renameat(o->fd, "index.json.tmp", o->fd, "index.json") != 0 ||
      track(o, "index.json", 0) != 0 || fsync(o->fd) != 0)
    return outdir_fail(o, "index.json", errno);
  return FT_PX_OK;
}

/* ---- the command ---- */

static int export_all(out_t *o, ft_persisted_t *p, const char *job,
                      uint64_t *bytes, int *rs) {
  uint8_t *buf = malloc(CHUNK);
  if (!buf) {
    snprintf(o->msg, sizeof(o->msg), "out of memory");
    return FT_PX_ERROR;
  }
  ft_persisted_info_t in;
  ft_persisted_info(p, &in);
  int rc = FT_PX_OK;
  for (size_t i = 0; rc == FT_PX_OK && i < in.ntensors; i++) {
    ft_persisted_tensor_t t;
    ft_persisted_tensor(p, i, &t);
    rc = write_npy(o, p, i, &t, buf, rs);
    *bytes += t.bytes;
  }
  free(buf);
  return rc == FT_PX_OK ? write_index(o, p, job) : rc;
}

static void report(const ft_persisted_t *p, const char *job, const char *outdir,
                   uint64_t bytes, const char *skipped, int json) {
  ft_persisted_info_t in;
  ft_persisted_info(p, &in);
  if (json) {
    printf("{\"job\":");
    ft__px_json_str(stdout, job);
    printf(",\"dir\":\"%s\",\"version\":%" PRIu64 ",\"step\":%" PRIu64
           ",\"epoch\":%" PRIu64 ",\"outdir\":",
           in.dir, in.version, in.step, in.epoch);
    ft__px_json_str(stdout, outdir);
    printf(",\"tensors\":%zu,\"bytes\":%" PRIu64 ",\"skipped\":", in.ntensors,
           bytes);
    ft__px_json_str(stdout, skipped);
    printf("}\n");
    return;
  }
  char h[32];
  ft__px_human(h, sizeof(h), (double)bytes);
  printf("exported %s (version %" PRIu64 ", step %" PRIu64 ", epoch %" PRIu64
         ") of job %s: %zu tensors, %s, into %s (index.json lists them)\n",
         in.dir, in.version, in.step, in.epoch, job, in.ntensors, h, outdir);
}

int ft__px_export(const char *dir, const char *job, const char *version,
                  const char *outdir, int json) {
  char msg[2048];
  ft_persisted_t *p = NULL;
  /* OUTDIR first: a refused one is said before the version is read (a
   * whole version is verified before "latest" is chosen). */
  out_t o = {.path = outdir, .fd = -1};
  int rc = open_outdir(&o);
  if (rc) {
    fprintf(stderr, "ft-persist export: %s\n", o.msg);
    out_free(&o);
    return rc;
  }
  int rs = ft_persisted_open(dir, job, version, &p, msg, sizeof(msg));
  if (rs) {
    fprintf(stderr, "ft-persist export: %s\n", msg);
    undo(&o);
    out_free(&o);
    return ft__px_exit_of(rs);
  }
  if (msg[0]) /* "latest" passed over newer versions */
    fprintf(stderr,
            "ft-persist export: newer versions fail verification: "
            "%s\n",
            msg);
  uint64_t bytes = 0;
  rs = FT_OK;
  rc = export_all(&o, p, job, &bytes, &rs);
  if (rc == FT_PX_OK)
    report(p, job, outdir, bytes, msg, json);
  else {
    int wrote = o.n > 0 || o.made;
    if (o.fd >= 0) /* OUTDIR was ours to fill: leave it as it was */
      undo(&o);
    fprintf(stderr, "ft-persist export: %s%s%s\n", o.msg,
            wrote ? "; what the export wrote is removed" : "",
            rs ? "; 'ft-persist verify' checks every version, 'ft-persist "
                 "export latest' takes the newest that verifies"
               : "");
  }
  out_free(&o);
  ft_persisted_close(p);
  return rc;
}
