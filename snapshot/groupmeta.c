/*
 * Group metadata.
 *
 * The table's file holds a count, then per member its length and its
 * metadata as ft__meta_encode wrote it, then a CRC64 of everything before,
 * and is replaced atomically (snapshot/fileio.h).  A reader checks the
 * CRC, then walks the lengths only as far as the bytes there are, and
 * decodes the one member it asked for.
 *
 * The exchange: lengths first, then whether every member could allocate
 * room for the table, then the bytes (all non-blocking, completed by the
 * caller's wait function).  A member out of memory still takes part in
 * every collective it has room for, so that nobody waits for it.
 *
 * The pending layout's two files go together: the table is renamed first,
 * and a table that matches the metadata that stays is never thrown away.
 */
#include "snapshot/groupmeta.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/crc.h"
#include "ftrt.h"
#include "snapshot/fileio.h"

/* ---- the table's file ---- */

/* group.meta: u32 count, then per member u64 length and its encoded meta,
 * then a CRC64 of everything before. */
int ft__group_meta_write(const ft__dir_t *dir, const char *name,
                         const uint8_t *const *parts, const size_t *lens, int n,
                         char *msg, size_t msglen) {
  size_t total = 4 + 8;
  for (int i = 0; i < n; i++)
    total += 8 + lens[i];
  uint8_t *buf = ft__malloc(total), *p = buf;
  if (!buf)
    return ft__msgf(FT_ENOMEM, msg, msglen,
                    "%s/%s: out of memory for %zu bytes", dir->path, name,
                    total);
  uint32_t cnt = (uint32_t)n;
  ft__put(&p, &cnt, 4);
  for (int i = 0; i < n; i++) {
    uint64_t l = lens[i];
    ft__put(&p, &l, 8);
    ft__put(&p, parts[i], lens[i]);
  }
  uint64_t crc = ft__crc64(0, buf, (size_t)(p - buf));
  ft__put(&p, &crc, 8);
  int rc = ft__store_write_file(dir, name, buf, total, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__group_meta_decode(const uint8_t *buf, size_t len, int pos,
                          ft__meta_t *m, const char *path, char *msg,
                          size_t msglen) {
  uint32_t cnt = 0;
  uint64_t crc = 0;
  if (len < 12 ||
      (memcpy(&crc, buf + len - 8, 8), ft__crc64(0, buf, len - 8) != crc)) {
    ft__meta_clear(m);
    return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: truncated or CRC mismatch",
                    path);
  }
  memcpy(&cnt, buf, 4);
  const uint8_t *p = buf + 4, *end = buf + len - 8, *member = NULL;
  uint64_t l = 0;
  for (uint32_t i = 0; i < cnt && (size_t)(end - p) >= 8; i++) {
    memcpy(&l, p, 8);
    p += 8;
    if (l > (size_t)(end - p))
      break;
    if ((int)i == pos) {
      member = p;
      break;
    }
    p += l;
  }
  if (member)
    return ft__meta_decode(member, (size_t)l, m, path, msg, msglen);
  ft__meta_clear(m);
  return ft__msgf(FT_ECORRUPT, msg, msglen, "%s: no member %d", path, pos);
}

int ft__group_meta_read(const ft__dir_t *dir, const char *name, int pos,
                        ft__meta_t *m, char *msg, size_t msglen) {
  uint8_t *buf;
  size_t len;
  char path[sizeof(dir->path) + 80];
  ft__path_in(path, sizeof(path), dir, name);
  /* k + m <= 255 members, each one node's metadata */
  int rc = ft__store_read_file(dir, name, FT_MAX_CHUNKS * FT_META_FILE_MAX,
                               &buf, &len, msg, msglen);
  if (rc) {
    ft__meta_clear(m);
    return rc;
  }
  rc = ft__group_meta_decode(buf, len, pos, m, path, msg, msglen);
  ft__free(buf);
  return rc;
}

int ft__group_meta_matches(const ft__dir_t *dir, const char *name,
                           const ft__meta_t *mine, ft__meta_t *tmp) {
  return ft__group_meta_read(dir, name, (int)mine->pos, tmp, NULL, 0) ==
             FT_OK &&
         ft__meta_same_entry(mine, tmp);
}

/* ---- the pending layout ---- */

static int exists_in(const ft__dir_t *dir, const char *name) {
  struct stat st;
  return dir->fd >= 0 && fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int ft__meta_promote(const ft__dir_t *dir, char *msg, size_t msglen) {
  int rc = exists_in(dir, FT_GROUP_META_PENDING)
               ? ft__store_rename(dir, FT_GROUP_META_PENDING, FT_GROUP_META,
                                  msg, msglen)
               : FT_OK;
  if (rc == FT_OK && exists_in(dir, FT_META_PENDING))
    rc = ft__store_rename(dir, FT_META_PENDING, FT_META, msg, msglen);
  return rc;
}

int ft__meta_drop_pending(const ft__dir_t *dir, const ft__meta_t *m, char *msg,
                          size_t msglen) {
  ft__meta_t *tmp = ft__calloc(1, sizeof(*tmp));
  if (!tmp)
    return ft__msgf(FT_ENOMEM, msg, msglen, "%s: out of memory", dir->path);
  int rc = ft__store_unlink(dir, FT_META_PENDING, msg, msglen);
  /* The pending table is kept where it is the one that matches m (a
   * rebuild cut short between its renames): it becomes the table. */
  if (rc == FT_OK && !ft__group_meta_matches(dir, FT_GROUP_META, m, tmp) &&
      ft__group_meta_matches(dir, FT_GROUP_META_PENDING, m, tmp))
    rc = ft__store_rename(dir, FT_GROUP_META_PENDING, FT_GROUP_META, msg,
                          msglen);
  else if (rc == FT_OK)
    rc = ft__store_unlink(dir, FT_GROUP_META_PENDING, msg, msglen);
  ft__meta_free(tmp);
  return rc;
}

/* ---- the exchange ---- */

static int gather_lens(MPI_Comm gc, int mine, int *lens, ft__wait_fn wait,
                       void *arg) {
  MPI_Request req;
  if (MPI_Iallgather(&mine, 1, MPI_INT, lens, 1, MPI_INT, gc, &req) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return wait(arg, &req);
}

/* Collective: FT_OK when every member says ok, else FT_ENOMEM here and
 * FT_EPEER on the others. */
static int all_ok(MPI_Comm gc, int ok, ft__wait_fn wait, void *arg) {
  int all = 0, rc;
  MPI_Request req;
  if (MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, gc, &req) != MPI_SUCCESS)
    return FT_EMPI;
  if ((rc = wait(arg, &req)))
    return rc;
  return all ? FT_OK : ok ? FT_EPEER : FT_ENOMEM;
}

static int write_table(const ft__dir_t *dir, const char *name,
                       const uint8_t *all, const int *lens, const int *displs,
                       int n, char *msg, size_t msglen) {
  const uint8_t *parts[FT_MAX_CHUNKS];
  size_t plens[FT_MAX_CHUNKS];
  for (int i = 0; i < n; i++) {
    if (lens[i] <= 0)
      return FT_OK; /* a member had nothing: no incomplete table */
    parts[i] = all + displs[i];
    plens[i] = (size_t)lens[i];
  }
  return ft__group_meta_write(dir, name, parts, plens, n, msg, msglen);
}

int ft__group_meta_share(MPI_Comm gc, const ft__meta_t *m, const ft__dir_t *dir,
                         const char *name, ft__wait_fn wait, void *arg,
                         char *msg, size_t msglen) {
  uint8_t *mine = NULL, *all = NULL;
  size_t len = 0;
  int n, lens[FT_MAX_CHUNKS], displs[FT_MAX_CHUNKS];
  MPI_Comm_size(gc, &n);
  if (n > FT_MAX_CHUNKS) /* the same on every member: nobody goes on */
    return FT_EINVAL;
  int rc = m ? ft__meta_encode(m, &mine, &len) : FT_OK;
  int arc = gather_lens(gc, rc == FT_OK ? (int)len : 0, lens, wait, arg);
  size_t total = 0;
  for (int i = 0; arc == FT_OK && i < n; i++) {
    displs[i] = (int)total;
    total += (size_t)lens[i];
  }
  /* Every member sees the same lengths: all refuse a table MPI's int
   * displacements cannot address, before anyone allocates or sends. */
  if (arc == FT_OK && total > INT_MAX)
    arc = ft__msgf(FT_ERANGE, msg, msglen,
                   "%s/%s: the group's metadata comes to %zu bytes, more "
                   "than one table can hold (2 GiB): fewer buffers a rank "
                   "or smaller groups (FT_EC_K, FT_EC_M)",
                   dir->path, name, total);
  if (arc == FT_OK) {
    all = ft__malloc(total);
    arc = all_ok(gc, all != NULL, wait, arg);
    if (arc == FT_ENOMEM || arc == FT_EPEER)
      ft__msgf(arc, msg, msglen,
               "%s/%s: %s of the group is out of memory for the "
               "%zu-byte table",
               dir->path, name,
               arc == FT_ENOMEM ? "this member" : "another member", total);
  }
  MPI_Request req;
  if (arc == FT_OK)
    arc = MPI_Iallgatherv(mine, rc == FT_OK ? (int)len : 0, MPI_BYTE, all, lens,
                          displs, MPI_BYTE, gc, &req) == MPI_SUCCESS
              ? wait(arg, &req)
              : FT_EMPI;
  if (rc == FT_OK && arc == FT_OK)
    rc = write_table(dir, name, all, lens, displs, n, msg, msglen);
  ft__free(mine), ft__free(all);
  return rc ? rc : arc;
}
