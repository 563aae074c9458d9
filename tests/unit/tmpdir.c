/* Per-test directories (tmpdir.h).  Every test's directory lives under one
 * root, which main removes at the end: a failed test exits its forked
 * process without running teardown.  The state is the program's own: a
 * test program is one test file, so there is one root and one dir. */
#include "tests/unit/tmpdir.h"

#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ftrt.h"

static char root[64];
char dir[96];
ft__dir_t sdir;

int tmpdir_make_root(const char *name) {
  char what[128];
  snprintf(root, sizeof(root), "/tmp/ftrt-%s-XXXXXX", name);
  snprintf(what, sizeof(what), "test_%s: mkdtemp %s", name, root);
  if (mkdtemp(root))
    return 0;
  perror(what);
  root[0] = '\0';
  return -1;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

void rm_tree(char *path) {
  if (path[0])
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  path[0] = '\0';
}

void tmpdir_remove_root(void) { rm_tree(root); }

void tmpdir_setup(void) {
  char msg[512] = "";
  snprintf(dir, sizeof(dir), "%s/t-XXXXXX", root);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  int rc = ft__dir_open(&sdir, dir, msg, sizeof(msg));
  ck_assert_msg(rc == FT_OK, "%s: %s", dir, msg);
}

void tmpdir_teardown(void) { rm_tree(dir); }

Suite *tmpdir_suite(unit_prog_t *prog, const char *name) {
  prog->tmpdir = name;
  return suite_create(name);
}

TCase *tmpdir_tcase(Suite *s, const char *name, double timeout) {
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
  tcase_set_timeout(tc, timeout);
  suite_add_tcase(s, tc);
  return tc;
}

void path_of(char *out, size_t len, const char *name) {
  snprintf(out, len, "%s/%s", dir, name);
}

void ck_gone(const char *path) {
  struct stat st;
  int gone = stat(path, &st) != 0 && errno == ENOENT;
  ck_assert_msg(gone, "%s left behind", path);
}

void ck_first_line(const char *path, const char *want) {
  char got[64] = "";
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(fgets(got, sizeof(got), f));
  fclose(f);
  ck_assert_str_eq(got, want);
}
