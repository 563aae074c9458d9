/* A directory per test under one root, for the unit tests that write
 * stores.  Included by one test file each (static state). */
#ifndef FT_TESTS_TMPDIR_H
#define FT_TESTS_TMPDIR_H

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ftrt.h"
#include "snapshot/store.h"

/* Every test's directory lives under root, which main removes at the end:
 * a failed test exits its forked process without running teardown. */
static char root[64], dir[96];
/* dir opened as a store directory (store.h), by setup: what the store's
 * functions take. */
static ft__dir_t sdir;

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void rm_tree(char *path) {
  if (path[0])
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  path[0] = '\0';
}

static void setup(void) {
  char msg[512] = "";
  snprintf(dir, sizeof(dir), "%s/t-XXXXXX", root);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  int rc = ft__dir_open(&sdir, dir, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "%s: %s", dir, msg);
}

#endif
