/* A directory per test under one root, for the unit tests that write
 * files (tmpdir.c), and assertions on what is in it.  The root is made and
 * removed by the shared main (check_main.h: unit_prog_t.tmpdir); the
 * fixture tmpdir_setup, tmpdir_teardown gives each test its dir. */
#ifndef FT_TESTS_TMPDIR_H
#define FT_TESTS_TMPDIR_H

#include <check.h>
#include <stddef.h>

#include "snapshot/store.h"
#include "tests/unit/check_main.h"

/* This test's directory, under the root; emptied ("") by its teardown. */
extern char dir[96];
/* dir opened as a store directory (store.h), by tmpdir_setup: what the
 * store's functions take. */
extern ft__dir_t sdir;

/* The root /tmp/ftrt-NAME-XXXXXX: 0, or -1 with "test_NAME: mkdtemp
 * TEMPLATE: why" on stderr. */
int tmpdir_make_root(const char *name);
/* The root and everything under it removed; nothing when there is none. */
void tmpdir_remove_root(void);

/* A Check fixture: dir made under the root and opened as sdir (the test
 * fails if either cannot be), then dir removed with all it holds. */
void tmpdir_setup(void);
void tmpdir_teardown(void);
/* The suite of a program whose tests each get a directory: prog->tmpdir
 * and the suite's name are name. */
Suite *tmpdir_suite(unit_prog_t *prog, const char *name);
/* A new test case of s, named name, whose every test gets that fixture and
 * timeout seconds. */
TCase *tmpdir_tcase(Suite *s, const char *name, double timeout);

/* path and everything under it removed, without following links; path
 * then "" (nothing when it is ""). */
void rm_tree(char *path);
/* out = dir/name. */
void path_of(char *out, size_t len, const char *name);

/* The file at path is gone. */
void ck_gone(const char *path);
/* The file at path begins with the line want (no newline in it). */
void ck_first_line(const char *path, const char *want);

#endif
