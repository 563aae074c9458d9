/*
 * A requeued Slurm batch job (launch/requeue.h, launch/resume.h): which
 * exit statuses ask for a requeue, what scontrol show job must say, what
 * ft-launch says and runs with a fake scontrol (its arguments written into
 * the test's directory); the node number of a store as ft-status prints
 * it, and the order the stores give an allocation's nodes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "ftrt.h"
#include "launch/requeue.h"
#include "launch/resume.h"
#include "tests/unit/check_main.h"
#include "tests/unit/procs.h"
#include "tests/unit/tmpdir.h"

START_TEST(codes) {
  /* the losses no restart could mend: 4, 124, 125; never the program's own
   * failure, a usage error, too many losses (3), no room (5), or the user's
   * signals */
  static const int yes[] = {4, 124, 125};
  static const int no[] = {0, 1, 2, 3, 5, 7, 129, 130, 143};
  for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
    ck_assert(ft__requeue_code(yes[i]));
  for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
    ck_assert(!ft__requeue_code(no[i]));
}
END_TEST

START_TEST(asked) {
  ck_assert(ft__requeue_asked("JobId=7 JobName=x BatchFlag=1 Reboot=0 "
                              "ExitCode=0:0 Requeue=1 Restarts=0"));
  ck_assert(!ft__requeue_asked("JobId=7 BatchFlag=1 Requeue=0 Restarts=0"));
  ck_assert(!ft__requeue_asked("JobId=7 BatchFlag=0 Requeue=1"));
  ck_assert(!ft__requeue_asked("JobId=7 BatchFlag=1 Requeue=10"));
  ck_assert(!ft__requeue_asked(""));
}
END_TEST

static char args_file[256], envp_path[512];
static char *envp[2];

/* A fake scontrol: "show" prints show_job (exit show_rc), "requeue"
 * exits requeue_rc; every call's arguments a line of args_file. */
static void fake_scontrol(const char *show_job, int show_rc, int requeue_rc) {
  char body[1024], path[256], bin[256];
  path_of(args_file, sizeof(args_file), "args");
  snprintf(body, sizeof(body),
           "echo \"$*\" >>%s\n"
           "case $* in *show*) echo '%s'; exit %d;; esac\n"
           "echo 'scontrol: error: requeue said no' >&2; exit %d\n",
           args_file, show_job, show_rc, requeue_rc);
  procs_script(path, sizeof(path), "scontrol", body);
  snprintf(bin, sizeof(bin), "%s", path);
  *strrchr(bin, '/') = '\0';
  snprintf(envp_path, sizeof(envp_path), "PATH=%s:/usr/bin:/bin", bin);
  envp[0] = envp_path, envp[1] = NULL;
}

static const char *RESTARTS = "";

static int requeue(int code, const char *persist, const char *want) {
  ft__text_t line = FT__TEXT_INIT;
  int r = ft__requeue(code, "7", persist, RESTARTS, "", envp, &line);
  if (want)
    ck_assert_str_eq(ft__text_str(&line), want);
  ft__text_free(&line);
  return r;
}

#define SHOW_ASKED "JobId=7 BatchFlag=1 Requeue=1"

START_TEST(requeued) {
  fake_scontrol(SHOW_ASKED, 0, 0);
  ck_assert_int_eq(
      requeue(125, "/shared/ckpt",
              "exit 125: unrecoverable in this allocation: Slurm job 7 "
              "requeued (it is requeueable: Requeue=1); its next run "
              "resumes from the job's stores left in memory, or from the "
              "disk tier (/shared/ckpt)"),
      1);
  ck_assert_str_eq(procs_slurp(args_file), "-o show job 7\nrequeue 7\n");
}
END_TEST

START_TEST(never_for_the_user) {
  /* a signal (the user's end), the program's failure: Slurm not even
   * asked */
  fake_scontrol(SHOW_ASKED, 0, 0);
  ck_assert_int_eq(requeue(143, "/shared/ckpt", ""), 0);
  ck_assert_int_eq(requeue(130, "/shared/ckpt", ""), 0);
  ck_assert_int_eq(requeue(1, "/shared/ckpt", ""), 0);
  ck_assert_int_eq(requeue(0, "/shared/ckpt", ""), 0);
  ck_assert_str_eq(procs_slurp(args_file), "");
  ft__text_t line = FT__TEXT_INIT;
  ck_assert_int_eq(ft__requeue(125, NULL, "/p", "", "", envp, &line), 0);
  ck_assert_int_eq(ft__requeue(125, "", "/p", "", "", envp, &line), 0);
  ck_assert_uint_eq(line.len, 0);
}
END_TEST

START_TEST(capped) {
  /* FT_REQUEUE_MAX (default 3) requeues at most: a run that fails the same
   * way again is not requeued for ever; Slurm not even asked */
  fake_scontrol(SHOW_ASKED, 0, 0);
  RESTARTS = "3";
  ck_assert_int_eq(
      requeue(125, "/p",
              "exit 125: unrecoverable in this allocation, but Slurm job 7 is "
              "not requeued again: it was requeued 3 time(s) "
              "(FT_REQUEUE_MAX=3); see what failed above"),
      0);
  ck_assert_str_eq(procs_slurp(args_file), "");
  RESTARTS = "2";
  ck_assert_int_eq(requeue(125, "/p", NULL) , 1);
  RESTARTS = "";
  ft__text_t line = FT__TEXT_INIT;
  ck_assert_int_eq(ft__requeue(125, "7", "/p", "1", "1", envp, &line), 0);
  ck_assert_ptr_nonnull(strstr(ft__text_str(&line), "(FT_REQUEUE_MAX=1)"));
  ft__text_free(&line);
}
END_TEST

START_TEST(without_persist) {
  /* a requeued run on other nodes would start afresh: refused, said */
  fake_scontrol(SHOW_ASKED, 0, 0);
  ck_assert_int_eq(
      requeue(125, "",
              "exit 125: unrecoverable in this allocation, but Slurm job 7 "
              "is not requeued: without --persist a run on other nodes finds "
              "nothing to resume from and would start afresh; give ft-launch "
              "--persist DIR on a shared file system"),
      0);
  ck_assert_str_eq(procs_slurp(args_file), "-o show job 7\n");
}
END_TEST

START_TEST(not_asked) {
  /* a batch job without --requeue: a hint with --persist; an salloc one
   * (BatchFlag=0): nothing */
  fake_scontrol("JobId=7 BatchFlag=1 Requeue=0", 0, 0);
  ck_assert_int_eq(requeue(124, "/p",
                           "exit 124: unrecoverable in this allocation; had "
                           "it been submitted with sbatch --requeue, Slurm "
                           "job 7 would have been requeued to resume from "
                           "the disk tier (/p)"),
                   0);
  fake_scontrol("JobId=7 BatchFlag=0 Requeue=1", 0, 0);
  ck_assert_int_eq(requeue(124, "/p", ""), 0);
}
END_TEST

START_TEST(scontrol_fails) {
  fake_scontrol("slurm_load_jobs error: Invalid job id specified", 1, 0);
  ck_assert_int_eq(requeue(125, "/p",
                           "cannot ask Slurm whether job 7 may be requeued "
                           "(scontrol show job: slurm_load_jobs error: "
                           "Invalid job id specified): not requeued"),
                   -1);
  fake_scontrol(SHOW_ASKED, 0, 1);
  ck_assert_int_eq(requeue(4, "/p",
                           "exit 4: unrecoverable in this allocation; "
                           "scontrol requeue 7 failed (scontrol: error: "
                           "requeue said no): not requeued"),
                   -1);
  envp_path[0] = '\0';
  snprintf(envp_path, sizeof(envp_path), "PATH=/nonexistent");
  ck_assert_int_eq(requeue(4, "/p",
                           "cannot ask Slurm whether job 7 may be requeued "
                           "(scontrol show job: not run): not requeued"),
                   -1);
}
END_TEST

/* ---- the order of the stores ---- */

START_TEST(parse) {
  ft__resume_store_t st = {.node = -9, .of = -9};
  ck_assert(ft__resume_parse("job RQ on h4, store /dev/shm/ftrt/RQ\n"
                             "layout epoch 7: node 3 of 4, group 0 position "
                             "3, k=3 m=1, 1 trainer(s)\nslot ...\n",
                             &st));
  ck_assert_int_eq(st.node, 3);
  ck_assert_int_eq(st.of, 4);
  ck_assert_uint_eq(st.epoch, 7);
  ck_assert(!ft__resume_parse("ft-status: no store for job 'RQ'\n", &st));
  ck_assert(!ft__resume_parse("layout epoch 1: node 4 of 4,\n", &st));
  ck_assert(!ft__resume_parse("layout epoch 1: node -1 of 4,\n", &st));
  ck_assert(!ft__resume_parse("", &st));
  ck_assert(!ft__resume_parse(NULL, &st));
  ck_assert_int_eq(st.node, 3);
}
END_TEST

/* "N E N E ...": node N (-1: none) of of[i] at epoch E, for n nodes. */
static ft__resume_store_t ST[16];
static ft__resume_store_t *stores(const char *spec, const int *of, int n) {
  const char *s = spec;
  for (int i = 0; i < n; i++) {
    int node, used;
    unsigned epoch;
    ck_assert_int_eq(sscanf(s, "%d %u%n", &node, &epoch, &used), 2);
    s += used;
    ST[i] = (ft__resume_store_t){.node = node, .of = of[i], .epoch = epoch};
  }
  return ST;
}

static void order_is(const char *spec, const int *of, int n, int want,
                     int job, const char *expect, int rebuild) {
  int order[16], r = -1;
  ck_assert_int_eq(ft__resume_order(stores(spec, of, n), n, want, order, &r),
                   job);
  char got[64] = "";
  for (int i = 0; i < n; i++)
    snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d",
             i ? " " : "", order[i]);
  ck_assert_str_eq(got, expect);
  ck_assert_int_eq(r, rebuild);
}

START_TEST(order) {
  /* the allocation h1 h2 h4 s1 after h3 (node 2) was lost: s1 takes 2 */
  order_is("0 1  1 1  3 1  -1 0", (int[]){4, 4, 4, 0}, 4, 4, 4, "0 1 3 2",
           1);
  /* every store there, listed out of order, a spare left over */
  order_is("2 1  -1 0  0 1  1 1", (int[]){3, 0, 3, 3}, 4, 3, 3, "2 3 0 1",
           0);
  /* two lost: the new nodes in the allocation's order */
  order_is("0 1  -1 0  -1 0  3 1  -1 0", (int[]){4, 0, 0, 4, 0}, 5, 4, 4,
           "0 1 2 3 4", 1);
  order_is("3 1  -1 0  -1 0  0 1  -1 0", (int[]){4, 0, 0, 4, 0}, 5, 4, 4,
           "3 1 2 0 4", 1);
}
END_TEST

START_TEST(order_epochs) {
  /* node 1 was replaced by s1 at epoch 2, and the old h2 came back into
   * the allocation with its epoch-1 store of node 1: stale, a spare */
  order_is("0 2  1 1  2 2  1 2", (int[]){3, 3, 3, 3}, 4, 3, 3, "0 3 2 1", 0);
  ck_assert(ST[1].stale && ST[1].node == -1 && !ST[0].stale);
  /* the job shrank to 3 of 4 nodes at epoch 5; a stale store of the old
   * layout's node 3 is no number of the new one */
  order_is("0 5  3 4  1 5  2 5  -1 0", (int[]){3, 4, 3, 3, 0}, 5, 4, 3,
           "0 2 3 1 4", 0);
  ck_assert(ST[1].stale);
  /* shrunk, and one of its nodes lost since: rebuilt on a new node */
  order_is("-1 0  0 5  2 5  -1 0  -1 0", (int[]){0, 3, 3, 0, 0}, 5, 4, 3,
           "1 0 2 3 4", 1);
}
END_TEST

START_TEST(order_refused) {
  /* nothing to order, or stores that do not fit: left to ft_init */
  int order[8], r;
  ck_assert(!ft__resume_order(stores("-1 0 -1 0", (int[]){0, 0}, 2), 2, 2,
                              order, &r));
  /* stores of more nodes than the job has */
  ck_assert(!ft__resume_order(stores("0 1 1 1", (int[]){3, 3}, 2), 2, 2,
                              order, &r));
  ck_assert(!ft__resume_order(stores("0 1 0 1", (int[]){2, 2}, 2), 2, 2,
                              order, &r));
  ck_assert(!ft__resume_order(stores("0 1 1 1", (int[]){4, 4}, 2), 2, 4,
                              order, &r));
  ck_assert(!ft__resume_order(stores("0 1", (int[]){1}, 1), 1, 0, order, &r));
  /* the same epoch, two counts */
  ck_assert(!ft__resume_order(stores("0 3 1 3", (int[]){2, 3}, 2), 2, 3,
                              order, &r));
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  Suite *s = tmpdir_suite(prog, "requeue");
  TCase *tc = tcase_create("decisions");
  tcase_add_test(tc, codes);
  tcase_add_test(tc, asked);
  tcase_add_test(tc, parse);
  tcase_add_test(tc, order);
  tcase_add_test(tc, order_epochs);
  tcase_add_test(tc, order_refused);
  suite_add_tcase(s, tc);
  tc = tmpdir_tcase(s, "scontrol", 60);
  tcase_add_test(tc, requeued);
  tcase_add_test(tc, never_for_the_user);
  tcase_add_test(tc, without_persist);
  tcase_add_test(tc, capped);
  tcase_add_test(tc, not_asked);
  tcase_add_test(tc, scontrol_fails);
  return s;
}
