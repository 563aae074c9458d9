/* The control segment (snapshot/ctl.h): every refusal to create or attach
 * it gives a status and a message naming the cause, never a mapping
 * already undone; the calls that open a store's files take a NULL message
 * buffer; the status of a failing call is its own errno's, not the one the
 * clean-up after it left (close(2) is replaced in this program to show
 * it).  Each test works in its own directory (tmpdir.h). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ftrt.h"
#include "snapshot/ctl.h"
#include "snapshot/store.h"
#include "tests/unit/check_main.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/tmpdir.h"

/* close(2) as the library sees it in this program: the real one, except
 * that while close_errno is set it reports that error after closing, as
 * close may with a deferred write error (close(2): EIO, ENOSPC, EDQUOT).
 * It shows which errno an error path reports: the failing call's, or the
 * one left by the clean-up that followed. */
static int close_errno;

int close(int fd) {
  if (syscall(SYS_close, fd) != 0)
    return -1;
  if (close_errno) {
    errno = close_errno;
    return -1;
  }
  return 0;
}

/* ================= control segment ================= */

/* Every refusal of create and attach: status and message name the cause,
 * and *out is NULL, not a mapping already undone. */
START_TEST(ctl_refusals) {
  char msg[512] = "", path[256], missing[256];
  ft__ctl_t *ctl = NULL;
  snprintf(missing, sizeof(missing), "%s/none", dir);
  ft__dir_t none; /* as ft__dir_open leaves it when there is none */
  ck_assert_int_eq(ft__dir_open(&none, missing, msg, sizeof(msg)), FT_ENOENT);
  ck_assert_int_eq(ft__ctl_create(&none, 1, &ctl, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "none/ctl.new: ");
  ck_msg_has(msg, strerror(ENOENT));
  ck_assert_int_eq(ft__ctl_attach(&none, &ctl, msg, sizeof(msg)), FT_ENOENT);
  ck_msg_has(msg, "none/ctl: ");
  ck_msg_has(msg, strerror(ENOENT));

  /* a ctl of another size, then one of the right size but not a ctl */
  path_of(path, sizeof(path), "ctl");
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, 100), 0);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, msg, sizeof(msg)), FT_EMISMATCH);
  ck_msg_has(msg, "/ctl: wrong size");
  ck_assert_int_eq(ftruncate(fd, sizeof(ft__ctl_t)), 0);
  ctl = (ft__ctl_t *)msg; /* anything but NULL */
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, msg, sizeof(msg)), FT_ECORRUPT);
  ck_msg_has(msg, "/ctl: bad magic");
  ck_assert_ptr_null(ctl);
  close(fd);
  unlink(path);

  /* a directory in the way of the rename */
  char inside[300];
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(inside, sizeof(inside), "%s/x", path);
  ck_assert_int_eq(mkdir(inside, 0700), 0);
  ctl = (ft__ctl_t *)msg;
  ck_assert_int_eq(ft__ctl_create(&sdir, 1, &ctl, msg, sizeof(msg)), FT_EIO);
  ck_msg_has(msg, "/ctl: rename: ");
  ck_assert_ptr_null(ctl);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, msg, sizeof(msg)), FT_EIO);
  ck_msg_has(msg, "/ctl: ");
}
END_TEST

/* msg may be NULL, whatever msglen says (store.h, ctl.h). */
START_TEST(msg_may_be_null) {
  char missing[256], path[256];
  ft__ctl_t *ctl;
  ft__slot_t s;
  ft__meta_t *m = calloc(1, sizeof(*m));
  ck_assert_ptr_nonnull(m);
  snprintf(missing, sizeof(missing), "%s/none", dir);
  ft__dir_t none;
  ck_assert_int_eq(ft__dir_open(&none, missing, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__ctl_create(&none, 1, &ctl, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__ctl_attach(&none, &ctl, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__slot_open(&s, &none, 0, JOB, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__meta_read(&none, m, NULL, 512), FT_ENOENT);
  ck_assert_int_eq(ft__group_meta_read(&none, FT_GROUP_META, 0, m, NULL, 512),
                   FT_ENOENT);
  path_of(path, sizeof(path), "ctl");
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, NULL, 512), FT_EMISMATCH);
  ck_assert_int_eq(ftruncate(fd, sizeof(ft__ctl_t)), 0);
  ck_assert_int_eq(ft__ctl_attach(&sdir, &ctl, NULL, 512), FT_ECORRUPT);
  close(fd);
  free(m);
}
END_TEST

/* The status is the failing call's errno, not what the close after it left:
 * ftruncate past RLIMIT_FSIZE fails with EFBIG (FT_EIO), and close then
 * fails with ENOSPC (FT_ENOSPC).  Check forks: the limit is this test's. */
START_TEST(ctl_status_of_failing_call) {
  char msg[512] = "";
  ft__ctl_t *ctl = NULL;
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {4096, 4096};
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  close_errno = ENOSPC;
  int rc = ft__ctl_create(&sdir, 1, &ctl, msg, sizeof(msg));
  close_errno = 0;
  ck_assert_msg(rc == FT_EIO, "status %s for '%s'", ft_err_name(rc), msg);
  ck_msg_has(msg, "/ctl.new: ");
  ck_msg_has(msg, strerror(EFBIG));
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "ctl");
  TCase *tc = tmpdir_tcase(s, "control segment", 60);
  tcase_add_test(tc, ctl_refusals);
  tcase_add_test(tc, msg_may_be_null);
  tcase_add_test(tc, ctl_status_of_failing_call);
  return s;
}
