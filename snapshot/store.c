/*
 * The store as a whole: ft__store_clear knows every file the store's
 * modules write into a job's store directory, and removes them all in an
 * order a crash cannot spoil.
 */
#include "snapshot/store.h"

#include "snapshot/dir.h"
#include "snapshot/fileio.h"
#include "snapshot/meta.h"

int ft__store_clear(const ft__dir_t *dir, char *msg, size_t msglen) {
  static const char *const files[] = {
      FT_META,         "meta.next",           FT_GROUP_META,
      FT_META_PENDING, FT_GROUP_META_PENDING, "slot0",
      "slot1"};
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    int rc = ft__store_unlink(dir, files[i], msg, msglen);
    if (rc)
      return rc;
  }
  int rc = ft__store_remove_adopted(dir, msg, msglen);
  /* Last: a clear cut short by a crash is done again at the next start. */
  return rc ? rc : ft__store_unlink(dir, FT_DISK_MARKER, msg, msglen);
}
