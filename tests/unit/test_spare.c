/* The spare pool (snapshot/spare.h): a slot made from a file ft-spare
 * prepared is that same file, renamed and sized to the geometry, never a
 * link to another file and never one that replaces a slot already there;
 * a spare's files are taken only under ft-spare's lock, what a cut-short
 * preparation left is removed, and the release removes the rest; the
 * spare directory's name.  Each test works in its own directory
 * (tmpdir.h). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* ---- a spare's prepared slot files (ft-spare) ---- */

/* dir/spare opened as a spare directory, with slot<idx> a prepared file of
 * bytes bytes (allocated as ft-spare makes it); its inode. */
static ino_t prepared(ft__dir_t *spare, int idx, uint64_t bytes) {
  char path[512], msg[512] = "", name[16];
  path_of(path, sizeof(path), "spare");
  if (spare->fd < 0) {
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_msg(ft__dir_open(spare, path, msg, sizeof(msg)) == FT_OK, "%s",
                  msg);
  }
  snprintf(name, sizeof(name), "slot%d", idx);
  int fd = openat(spare->fd, name, O_RDWR | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
  ck_assert_int_ge(ft__store_reserve(fd, bytes, NULL, NULL), 0);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  close(fd);
  return st.st_ino;
}

/* A prepared file becomes the slot (the same file, renamed: its pages are
 * not made again), sized to the geometry, with an EMPTY header; where the
 * spare has none for a slot, the slot is made as without a spare. */
START_TEST(create_from_prepared) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__dir_t spare;
  ft__dir_init(&spare, "");
  ino_t ino = prepared(&spare, 0, g.seg_bytes + 3 * PAGE); /* larger */
  ft__slot_t s;
  char msg[512] = "", path[512];
  int taken = -1;
  ck_assert_msg(ft__slot_create_from(&s, &sdir, 0, JOB, &g, &spare, &taken, msg,
                                     sizeof(msg)) == FT_OK,
                "%s", msg);
  ck_assert_int_eq(taken, 1);
  struct stat st;
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq(st.st_ino, ino);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);
  ck_assert(ft__slot_intact(&s));
  ck_assert_uint_eq(ft__slot_state(&s), FT_SLOT_EMPTY);
  write_version(&s, 7);
  ft__slot_close(&s);
  path_of(path, sizeof(path), "spare/slot0");
  ck_gone(path);
  open_slot(&s, 0);
  ck_assert(holds(&s, 7));
  ft__slot_close(&s);
  /* Smaller than the slot: grown, every byte reserved. */
  ino = prepared(&spare, 1, PAGE);
  ck_assert_int_eq(ft__slot_create_from(&s, &sdir, 1, JOB, &g, &spare, &taken,
                                        msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(taken, 1);
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq(st.st_ino, ino);
  ck_assert_uint_eq((uint64_t)st.st_size, g.seg_bytes);
  if (!s.unreserved)
    ck_assert_uint_ge((uint64_t)st.st_blocks * 512, g.seg_bytes);
  ft__slot_close(&s);
  /* None left for slot 0: made as ft__slot_create makes it. */
  ck_assert_int_eq(ft__slot_create_from(&s, &sdir, 0, JOB, &g, &spare, &taken,
                                        msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(taken, 0);
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ft__dir_close(&spare);
}
END_TEST

/* A spare's file that is not one ft-spare made is never taken: a second
 * link to another file (a slot's writes would land in it) or a symbolic
 * link.  Both are left as they were, and the slot is made anew. */
START_TEST(create_from_refuses_links) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__dir_t spare;
  ft__dir_init(&spare, "");
  prepared(&spare, 0, g.seg_bytes);
  char other[512], path[512], msg[512] = "";
  path_of(other, sizeof(other), "other");
  path_of(path, sizeof(path), "spare/slot0");
  ck_assert_int_eq(link(path, other), 0);
  ck_assert_int_eq(symlinkat(other, spare.fd, "slot1"), 0);
  ft__slot_t s;
  for (int idx = 0; idx < FT_NSLOTS; idx++) {
    int taken = -1;
    ck_assert_msg(ft__slot_create_from(&s, &sdir, idx, JOB, &g, &spare, &taken,
                                       msg, sizeof(msg)) == FT_OK,
                  "%s", msg);
    ck_assert_int_eq(taken, 0);
    write_version(&s, 5);
    ft__slot_close(&s);
  }
  struct stat st, ost;
  ck_assert_int_eq(stat(other, &ost), 0);
  ck_assert_int_eq(ost.st_nlink, 2);
  ck_assert_int_eq(fstatat(spare.fd, "slot1", &st, AT_SYMLINK_NOFOLLOW), 0);
  ck_assert(S_ISLNK(st.st_mode));
  /* The other file holds none of the slot's bytes. */
  int fd = open(other, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  uint8_t buf[PAGE];
  for (off_t off = 0; off < ost.st_size; off += (off_t)sizeof(buf)) {
    ssize_t n = pread(fd, buf, sizeof(buf), off);
    ck_assert_int_gt(n, 0);
    for (ssize_t i = 0; i < n; i++)
      ck_assert_uint_eq(buf[i], 0);
  }
  close(fd);
  ft__dir_close(&spare);
}
END_TEST

/* A rebuild takes a spare's files only under the lock ft-spare holds while
 * it prepares: busy past the wait, none are taken (the slots are made as
 * without); free, what a preparation killed midway left is removed, the
 * whole files stay to be taken, and the release removes the rest with the
 * directory. */
START_TEST(spare_take_locked) {
  char store[512], path[512], msg[512] = "";
  path_of(store, sizeof(store), "job-a");
  ck_assert_int_eq(mkdir(store, 0700), 0);
  path_of(path, sizeof(path), ".spare-job-a");
  ck_assert_int_eq(mkdir(path, 0700), 0);
  ft__dir_t sp;
  ck_assert_msg(ft__dir_open(&sp, path, msg, sizeof(msg)) == FT_OK, "%s", msg);
  const char *names[] = {"slot0", "slot1", "slot1.part", "stop"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    int fd = openat(sp.fd, names[i], O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
  }
  int held = openat(sp.fd, ".", O_RDONLY | O_DIRECTORY);
  ck_assert_int_ge(held, 0);
  ck_assert_int_eq(flock(held, LOCK_EX | LOCK_NB), 0); /* ft-spare's */
  ft__dir_t spare;
  int lock = -2;
  ck_assert_int_eq(ft__spare_take(dir, store, 0.05, &spare, &lock), 0);
  ck_assert_int_lt(spare.fd, 0);
  ck_assert_int_eq(lock, -1);
  struct stat st;
  ck_assert_int_eq(fstatat(sp.fd, "slot1.part", &st, 0), 0); /* untouched */
  close(held);
  ck_assert_int_eq(ft__spare_take(dir, store, 0.05, &spare, &lock), 1);
  ck_assert_int_ge(spare.fd, 0);
  ck_assert_int_ge(lock, 0);
  ck_assert_int_eq(fstatat(sp.fd, "slot0", &st, 0), 0);
  ck_assert_int_eq(fstatat(sp.fd, "slot1", &st, 0), 0);
  ck_assert_int_ne(fstatat(sp.fd, "slot1.part", &st, 0), 0);
  ck_assert_int_ne(fstatat(sp.fd, "stop", &st, 0), 0);
  /* Locked while taken: ft-spare waits. */
  held = openat(sp.fd, ".", O_RDONLY | O_DIRECTORY);
  ck_assert_int_ne(flock(held, LOCK_EX | LOCK_NB), 0);
  close(held);
  ck_assert_int_eq(renameat(spare.fd, "slot0", sdir.fd, "slot0"), 0);
  ft__spare_release(&spare, lock);
  ck_gone(path);
  ft__dir_close(&sp);
  /* None there: 0, nothing made. */
  ck_assert_int_eq(ft__spare_take(dir, store, 0.05, &spare, &lock), 0);
  ck_gone(path);
}
END_TEST

/* A slot already in the store is never replaced by a prepared file: it is
 * made anew as ft__slot_create makes it, and the prepared file stays. */
START_TEST(create_from_never_replaces) {
  ft__slot_geom_t g;
  geom3(&g, 3, 2);
  ft__slot_t s;
  create_slot(&s, 0, &g);
  struct stat st;
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ino_t old = st.st_ino;
  ft__slot_close(&s);
  ft__dir_t spare;
  ft__dir_init(&spare, "");
  ino_t ino = prepared(&spare, 0, g.seg_bytes);
  char msg[512] = "";
  int taken = -1;
  ck_assert_msg(ft__slot_create_from(&s, &sdir, 0, JOB, &g, &spare, &taken, msg,
                                     sizeof(msg)) == FT_OK,
                "%s", msg);
  ck_assert_int_eq(taken, 0);
  ck_assert_int_eq(fstat(s.fd, &st), 0);
  ck_assert_uint_eq(st.st_ino, old);
  ck_assert(ft__slot_intact(&s));
  ft__slot_close(&s);
  ck_assert_int_eq(fstatat(spare.fd, "slot0", &st, 0), 0);
  ck_assert_uint_eq(st.st_ino, ino);
  ft__dir_close(&spare);
}
END_TEST

START_TEST(spare_dir_names) {
  char out[64];
  ck_assert_int_eq(ft__spare_dir("/dev/shm/ftrt/job-a", out, sizeof(out)),
                   FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/.spare-job-a");
  ck_assert_int_eq(ft__spare_dir("/r/vnode3/j", out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/r/vnode3/.spare-j");
  ck_assert_int_eq(ft__spare_dir("job-a", out, sizeof(out)), FT_ERANGE);
  ck_assert_int_eq(ft__spare_dir("/r/job-a", out, 12), FT_ERANGE);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "spare");
  TCase *tc = tmpdir_tcase(s, "prepared files", 60);
  tcase_add_test(tc, create_from_prepared);
  tcase_add_test(tc, create_from_refuses_links);
  tcase_add_test(tc, create_from_never_replaces);
  tc = tmpdir_tcase(s, "spare directory", 60);
  tcase_add_test(tc, spare_dir_names);
  tcase_add_test(tc, spare_take_locked);
  return s;
}
