/* Store directories (snapshot/dir.h, docs/design.md section 4): a store's
 * path, made private; one launch per job through its lock; a root, a job
 * directory or a sub-directory that is not this user's own private
 * directory, or a link in its place, refused with a message; once open,
 * every file of the store made, read, locked and removed relative to the
 * verified directory, never through a link or a directory swapped in
 * under its path; adopted stores removed whatever a crash left in them.
 * Each test works in its own directory (tmpdir.h). */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrt.h"
#include "snapshot/ctl.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* ================= directories ================= */

/* A store root that is not this user's own, private directory is refused
 * with a message, and nothing is created in it. */
START_TEST(store_root_private) {
  char r[160], job[200], msg[512] = "";
  snprintf(r, sizeof(r), "%s/root", dir);
  snprintf(job, sizeof(job), "%s/job", r);
  ck_assert_int_eq(mkdir(r, 0777), 0);
  ck_assert_int_eq(chmod(r, 0777), 0); /* past the umask */
  ft__dir_t d;
  ck_assert_int_eq(ft__store_open_dir(r, job, 1, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_assert_int_eq(d.fd, -1);
  ck_msg_has(msg, r);
  ck_msg_has(msg, "writable by group or others");
  ck_assert_int_ne(access(job, F_OK), 0);
  ck_assert_int_eq(chmod(r, 0700), 0);
  /* without create, a missing job directory is FT_ENOENT, none made */
  ck_assert_int_eq(ft__store_open_dir(r, job, 0, &d, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_int_ne(access(job, F_OK), 0);
  ck_assert_int_eq(ft__store_open_dir(r, job, 1, &d, msg, sizeof(msg)), FT_OK);
  ck_assert_int_ge(d.fd, 0);
  ck_assert_str_eq(d.path, job);
  ft__dir_close(&d);
  struct stat st;
  ck_assert_int_eq(lstat(job, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  /* a job directory planted as a symlink */
  char elsewhere[200], job2[200];
  snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
  snprintf(job2, sizeof(job2), "%s/job2", r);
  ck_assert_int_eq(mkdir(elsewhere, 0700), 0);
  ck_assert_int_eq(symlink(elsewhere, job2), 0);
  ck_assert_int_eq(ft__store_open_dir(r, job2, 1, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "symbolic link");
  ck_assert_int_eq(ft__store_open_dir(r, job2, 0, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "symbolic link");
  /* another user's root (only root can make one) */
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(r, 65534, 65534), 0);
    ck_assert_int_eq(ft__store_open_dir(r, job, 0, &d, msg, sizeof(msg)),
                     FT_ECONFIG);
    ck_msg_has(msg, "owned by uid 65534");
    ck_assert_int_eq(chown(r, 0, 0), 0);
  }
}
END_TEST

/* Entries of path other than . and .. */
static int entries(const char *path) {
  DIR *d = opendir(path);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

/* Once a store directory is verified and open, its files are made, read,
 * renamed, locked and removed there only: a directory swapped in under its
 * path afterwards (the real one renamed away, a symbolic link to another
 * directory put in its place) receives nothing and nothing of it is read
 * (everything relative to the verified directory's descriptor). */
START_TEST(store_dir_swapped) {
  char r[160], job[200], moved[200], other[200], path[300], msg[512] = "";
  snprintf(r, sizeof(r), "%s/root", dir);
  snprintf(job, sizeof(job), "%s/job", r);
  snprintf(moved, sizeof(moved), "%s/moved", r);
  snprintf(other, sizeof(other), "%s/other", dir);
  ck_assert_int_eq(mkdir(r, 0700), 0);
  ft__dir_t d;
  ck_assert_msg(ft__store_open_dir(r, job, 1, &d, msg, sizeof(msg)) == FT_OK,
                "%s", msg);
  ft__meta_t *m = sample_meta(), *got = calloc(1, sizeof(*got));
  ck_assert_int_eq(ft__meta_write(&d, m, msg, sizeof(msg)), FT_OK);
  /* the swap */
  ck_assert_int_eq(rename(job, moved), 0);
  ck_assert_int_eq(mkdir(other, 0700), 0);
  ck_assert_int_eq(symlink(other, job), 0);
  /* a planted metadata file in the other directory is never read */
  snprintf(path, sizeof(path), "%s/meta.pending", other);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("planted", f);
  fclose(f);
  ck_assert_int_eq(ft__meta_read_as(&d, FT_META_PENDING, got, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_int_eq(ft__meta_read(&d, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, m->epoch);
  /* every kind of write lands in the verified directory */
  m->epoch++;
  ck_assert_int_eq(ft__meta_write_as(&d, FT_META_PENDING, m, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_eq(
      ft__store_write_file(&d, FT_GROUP_META, "t", 1, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_promote(&d, msg, sizeof(msg)), FT_OK);
  ft__ctl_t *ctl = NULL;
  ck_assert_int_eq(ft__ctl_create(&d, 1, &ctl, msg, sizeof(msg)), FT_OK);
  ft__ctl_detach(ctl);
  ck_assert_int_eq(ft__ctl_attach(&d, &ctl, msg, sizeof(msg)), FT_OK);
  ft__ctl_detach(ctl);
  ft__slot_geom_t g;
  geom3(&g, 2, 1);
  ft__slot_t s;
  ck_assert_int_eq(ft__slot_create(&s, &d, 0, JOB, &g, msg, sizeof(msg)),
                   FT_OK);
  ft__slot_close(&s);
  ck_assert_int_eq(ft__slot_open(&s, &d, 0, JOB, msg, sizeof(msg)), FT_OK);
  ft__slot_close(&s);
  ck_assert_int_eq(ft__slot_blank(&d, 0), 0);
  ft__dir_t sub;
  ck_assert_int_eq(ft__dir_sub(&d, "adopt1", 1, &sub, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__meta_write(&sub, m, msg, sizeof(msg)), FT_OK);
  ft__dir_close(&sub);
  ck_assert_int_eq(entries(other), 1); /* only the planted file */
  static const char *const there[] = {"meta", "group.meta", "ctl", "slot0",
                                      "adopt1/meta"};
  struct stat st;
  for (size_t i = 0; i < sizeof(there) / sizeof(there[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", moved, there[i]);
    ck_assert_msg(lstat(path, &st) == 0, "%s missing", path);
  }
  ck_assert_int_eq(ft__meta_read(&d, got, msg, sizeof(msg)), FT_OK);
  ck_assert_uint_eq(got->epoch, m->epoch); /* the promoted one */
  /* the lock is the verified directory's */
  int lk = -1;
  ck_assert_int_eq(ft__store_lock(&d, 0, &lk, msg, sizeof(msg)), FT_OK);
  int fd = open(moved, O_RDONLY | O_DIRECTORY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_ne(flock(fd, LOCK_EX | LOCK_NB), 0);
  close(fd);
  close(lk);
  /* and so is what is removed */
  ck_assert_int_eq(ft__store_clear(&d, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(entries(moved), 1); /* ctl: rebuilt at each launch */
  ck_assert_int_eq(entries(other), 1);
  /* opened again by its path, the store is refused: a link is in the way */
  ft__dir_close(&d);
  ck_assert_int_eq(ft__store_open_dir(r, job, 0, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "symbolic link");
  ft__meta_clear(m);
  ft__meta_clear(got);
  free(m);
  free(got);
}
END_TEST

/* A sub-directory of a store (adopt<N>/) is opened relative to it and
 * checked as the store is: not a link, ours, private. */
START_TEST(store_sub_private) {
  char path[300], target[200], msg[512] = "";
  ft__dir_t sub;
  snprintf(target, sizeof(target), "%s/elsewhere", dir);
  ck_assert_int_eq(mkdir(target, 0700), 0);
  snprintf(path, sizeof(path), "%s/adopt1", dir);
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt1", 1, &sub, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_assert_int_eq(sub.fd, -1);
  ck_msg_has(msg, path);
  ck_msg_has(msg, "symbolic link");
  snprintf(path, sizeof(path), "%s/adopt2", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  ck_assert_int_eq(chmod(path, 0777), 0);
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt2", 0, &sub, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "writable by group or others");
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt3", 0, &sub, msg, sizeof(msg)),
                   FT_ENOENT);
  ck_assert_int_eq(ft__dir_sub(&sdir, "adopt3", 1, &sub, msg, sizeof(msg)),
                   FT_OK);
  struct stat st;
  ck_assert_int_eq(fstat(sub.fd, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  ft__dir_close(&sub);
  ck_assert_int_eq(entries(target), 0);
}
END_TEST

/* Adopted stores are removed whatever a crash left in them (a temporary
 * file of a write cut short), and a link named like one is removed, never
 * followed. */
START_TEST(remove_adopted_all) {
  char path[256], target[200], msg[512] = "";
  static const char *const files[] = {"adopt1/meta", "adopt1/meta.tmp",
                                      "adopt1/slot1", "adopt3/slot0.tmp"};
  snprintf(path, sizeof(path), "%s/adopt1", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/adopt3", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
  }
  snprintf(target, sizeof(target), "%s/elsewhere", dir);
  ck_assert_int_eq(mkdir(target, 0700), 0);
  snprintf(path, sizeof(path), "%s/elsewhere/precious", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(path, sizeof(path), "%s/adopt2", dir);
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(ft__store_remove_adopted(&sdir, msg, sizeof(msg)), FT_OK);
  struct stat st;
  static const char *const gone[] = {"adopt1", "adopt2", "adopt3"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, gone[i]);
    ck_assert_int_ne(lstat(path, &st), 0);
  }
  snprintf(path, sizeof(path), "%s/elsewhere/precious", dir);
  ck_assert_int_eq(lstat(path, &st), 0);
}
END_TEST

/* A file planted as a symlink where the store writes one is refused and its
 * target is untouched (O_NOFOLLOW). */
START_TEST(store_no_follow) {
  char target[200], link[200], msg[512] = "";
  snprintf(target, sizeof(target), "%s/target", dir);
  FILE *f = fopen(target, "w");
  ck_assert_ptr_nonnull(f);
  fputs("precious", f);
  fclose(f);
  static const char *const names[] = {"meta.tmp", "slot0", "ctl.new"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(link, sizeof(link), "%s/%s", dir, names[i]);
    ck_assert_int_eq(symlink(target, link), 0);
  }
  /* meta.tmp and ctl.new are made anew: the planted links are removed,
   * not followed */
  ft__meta_t *m = sample_meta();
  ck_assert_int_eq(ft__meta_write(&sdir, m, msg, sizeof(msg)), FT_OK);
  ft__meta_free(m);
  ft__ctl_t *ctl = NULL;
  ck_assert_int_eq(ft__ctl_create(&sdir, 1, &ctl, msg, sizeof(msg)), FT_OK);
  ft__ctl_detach(ctl);
  struct stat st;
  path_of(link, sizeof(link), "meta");
  ck_assert_int_eq(lstat(link, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
  path_of(link, sizeof(link), "ctl");
  ck_assert_int_eq(lstat(link, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
  /* a slot is never opened through a link */
  ft__slot_geom_t g;
  uint64_t bytes[1] = {4096};
  ck_assert_int_eq(ft__slot_geom_local(&g, 1, bytes), FT_OK);
  ck_assert_int_eq(ft__slot_geom_code(&g, 1, 0, 4096), FT_OK);
  ft__slot_t s;
  ck_assert_int_ne(ft__slot_create(&s, &sdir, 0, JOB, &g, msg, sizeof(msg)),
                   FT_OK);
  ck_assert_int_ne(ft__slot_open(&s, &sdir, 0, JOB, msg, sizeof(msg)), FT_OK);
  ck_first_line(target, "precious");
}
END_TEST

static int calls_between;
static int count_between(void *rc) {
  calls_between++;
  return *(int *)rc;
}

/* One launch per job: a second lock on the store is refused after its wait
 * with FT_EINUSE and a message; the lock ends with its descriptor.  A
 * waiter's hook runs between its tries, and its failure ends the wait. */
START_TEST(store_lock) {
  char msg[512] = "", none[300];
  int a, b;
  ck_assert_int_eq(ft__store_lock(&sdir, 0, &a, msg, sizeof(msg)), FT_OK);
  ck_assert_int_ge(a, 0);
  ck_assert_int_eq(ft__store_lock(&sdir, 0.05, &b, msg, sizeof(msg)),
                   FT_EINUSE);
  ck_assert_int_eq(b, -1);
  ck_msg_has(msg, dir);
  ck_msg_has(msg, "another launch of this job");
  ck_assert_int_eq(ft__store_lock(&sdir, 0, &b, NULL, 0), FT_EINUSE);
  int hook_rc = FT_OK;
  ck_assert_int_eq(ft__store_lock_while(&sdir, 0.1, &b, count_between, &hook_rc,
                                        msg, sizeof(msg)),
                   FT_EINUSE);
  ck_assert_int_ge(calls_between, 1);
  ck_msg_has(msg, "another launch of this job");
  hook_rc = FT_EMPI;
  calls_between = 0;
  ck_assert_int_eq(ft__store_lock_while(&sdir, 60, &b, count_between, &hook_rc,
                                        msg, sizeof(msg)),
                   FT_EMPI);
  ck_assert_int_eq(calls_between, 1);
  ck_assert_int_eq(b, -1);
  close(a);
  ck_assert_int_eq(ft__store_lock(&sdir, 0, &b, msg, sizeof(msg)), FT_OK);
  close(b);
  snprintf(none, sizeof(none), "%s/none", dir);
  ft__dir_t nd;
  ft__dir_init(&nd, none);
  ck_assert_int_eq(ft__store_lock(&nd, 0, &b, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, none);
}
END_TEST

/* ft-restore makes a spare's store and locks it before writing in it: a
 * second maker (a job launched on the spare meanwhile) gets FT_EINUSE. */
START_TEST(store_open_locked) {
  char msg[512] = "", p[FT_PATH_MAX];
  snprintf(p, sizeof(p), "%s/spare", dir);
  ft__dir_t a, b;
  ft__dir_init(&a, p);
  ft__dir_init(&b, p);
  ck_assert_int_eq(ft__store_open_locked(dir, &a, msg, sizeof(msg)), FT_OK);
  ck_assert_int_ge(a.fd, 0);
  ck_assert_int_eq(ft__store_open_locked(dir, &b, msg, sizeof(msg)), FT_EINUSE);
  ck_assert_int_eq(b.fd, -1);
  ck_msg_has(msg, "another launch of this job");
  int lk;
  ck_assert_int_eq(ft__store_lock(&a, 0, &lk, NULL, 0), FT_EINUSE);
  ft__dir_close(&a);
}
END_TEST

/* A symbolic link above the store root that another user owns is refused
 * (its owner could point it elsewhere); as root only (lchown). */
START_TEST(store_foreign_link_above) {
  if (geteuid() != 0)
    return;
  char real[FT_PATH_MAX], link[FT_PATH_MAX], root[FT_PATH_MAX + 16];
  char msg[512] = "";
  snprintf(real, sizeof(real), "%s/real", dir);
  snprintf(link, sizeof(link), "%s/link", dir);
  snprintf(root, sizeof(root), "%s/store", link);
  ck_assert_int_eq(mkdir(real, 0755), 0);
  ck_assert_int_eq(symlink(real, link), 0);
  ft__dir_t d;
  ft__dir_init(&d, root);
  ck_assert_int_eq(ft__store_open_dir(root, root, 1, &d, msg, sizeof(msg)),
                   FT_OK);
  ft__dir_close(&d);
  ck_assert_int_eq(lchown(link, 65534, 65534), 0);
  ft__dir_init(&d, root);
  ck_assert_int_eq(ft__store_open_dir(root, root, 1, &d, msg, sizeof(msg)),
                   FT_ECONFIG);
  ck_msg_has(msg, "a symbolic link owned by uid 65534");
  ck_msg_has(msg, link);
}
END_TEST

START_TEST(store_dir) {
  char root[FT_PATH_MAX] = "/dev/shm/ftrt", job[FT_JOB_MAX] = "llm.run_2";
  char out[FT_PATH_MAX + 64];
  ck_assert_int_eq(ft__store_dir(root, job, -1, out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/llm.run_2");
  ck_assert_int_eq(ft__store_dir(root, job, 0, out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/vnode0/llm.run_2");
  ck_assert_int_eq(ft__store_dir(root, job, 17, out, sizeof(out)), FT_OK);
  ck_assert_str_eq(out, "/dev/shm/ftrt/vnode17/llm.run_2");
  snprintf(root, sizeof(root), "%s", dir);
  ck_assert_int_eq(ft__store_dir(root, job, 3, out, sizeof(out)), FT_OK);
  char want[256];
  snprintf(want, sizeof(want), "%s/vnode3/llm.run_2", dir);
  ck_assert_str_eq(out, want);

  /* exactly fits, one byte short */
  size_t n = strlen(want) + 1;
  ck_assert_int_eq(ft__store_dir(root, job, 3, out, n), FT_OK);
  ck_assert_int_eq(ft__store_dir(root, job, 3, out, n - 1), FT_ERANGE);
  /* a store root of maximal length does not fit an FT_PATH_MAX buffer */
  memset(root, 'r', sizeof(root) - 1);
  root[0] = '/';
  root[sizeof(root) - 1] = '\0';
  ck_assert_int_eq(ft__store_dir(root, job, -1, out, FT_PATH_MAX), FT_ERANGE);

  /* mkdir -p of the virtual-node path, twice */
  char msg[512] = "";
  ck_assert_int_eq(ft__store_mkdir(want, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__store_mkdir(want, msg, sizeof(msg)), FT_OK);
  struct stat st;
  ck_assert_int_eq(stat(want, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  /* a file in the way */
  char file[256], below[300];
  snprintf(file, sizeof(file), "%s/file", dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(below, sizeof(below), "%s/x", file);
  ck_assert_int_ne(ft__store_mkdir(below, msg, sizeof(msg)), FT_OK);
  ck_msg_has(msg, below);
  ck_msg_has(msg, "mkdir");
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "dir");
  TCase *tc = tmpdir_tcase(s, "paths", 60);
  tcase_add_test(tc, store_dir);
  tc = tmpdir_tcase(s, "locking", 60);
  tcase_add_test(tc, store_lock);
  tcase_add_test(tc, store_open_locked);
  tc = tmpdir_tcase(s, "safe opening", 60);
  tcase_add_test(tc, store_foreign_link_above);
  tcase_add_test(tc, store_root_private);
  tcase_add_test(tc, store_no_follow);
  tcase_add_test(tc, store_dir_swapped);
  tcase_add_test(tc, store_sub_private);
  tc = tmpdir_tcase(s, "removing", 60);
  tcase_add_test(tc, remove_adopted_all);
  return s;
}
