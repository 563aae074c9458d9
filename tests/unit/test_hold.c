/* Hold points (snapshot/hold.h): FT_HOLD parsing, the gate, a process held
 * at its point until released, one-shot arming, and the too-late check
 * that keeps a late arming from holding some nodes and not others. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrt.h"
#include "runtime/config.h"
#include "snapshot/hold.h"
#include "tests/unit/check_main.h"

START_TEST(parse_good) {
  static const struct {
    const char *in;
    uint32_t point;
    uint64_t step;
  } good[] = {{"step=8", FT_HOLD_STEP, 8},
              {"step=0", FT_HOLD_STEP, 0},
              {"phase=snapshot", FT_HOLD_SNAPSHOT, 0},
              {"phase=crc,step=4", FT_HOLD_CRC, 4},
              {"phase=encode,step=8", FT_HOLD_ENCODE, 8},
              {"phase=commit", FT_HOLD_COMMIT, 0},
              {"phase=restore", FT_HOLD_RESTORE, 0}};
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    ft__hold_spec_t h;
    char back[64];
    ck_assert_msg(ft__hold_parse(good[i].in, &h) == 0, "%s", good[i].in);
    ck_assert_uint_eq(h.point, good[i].point);
    ck_assert_uint_eq(h.step, good[i].step);
    ft__hold_format(&h, back, sizeof(back));
    ck_assert_str_eq(back, good[i].in);
  }
}
END_TEST

START_TEST(parse_bad) {
  static const char *const bad[] = {
      "",          "step=",         "step=x",          "step=-1",
      "step=8,",   "phase=",        "phase=idle",      "phase=encodex",
      "phase=encode,",              "phase=encode,step=",
      "phase=encode,stp=3",         "phase=encode;step=3",
      "step=12345678901234567890",  "STEP=8",          "encode"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ft__hold_spec_t h;
    ck_assert_msg(ft__hold_parse(bad[i], &h) == -1, "'%s' accepted", bad[i]);
  }
}
END_TEST

/* FT_HOLD with several points: each process takes the first one of its
 * kind; a list with any bad part is refused. */
START_TEST(parse_list) {
  ft__hold_spec_t h;
  const char *both = "step=8;phase=restore";
  ck_assert_int_eq(ft__hold_parse_list(both), 0);
  ck_assert_int_eq(ft__hold_spec_for(both, ~(1u << FT_HOLD_RESTORE), &h), 1);
  ck_assert_uint_eq(h.point, FT_HOLD_STEP);
  ck_assert_uint_eq(h.step, 8);
  ck_assert_int_eq(ft__hold_spec_for(both, 1u << FT_HOLD_RESTORE, &h), 1);
  ck_assert_uint_eq(h.point, FT_HOLD_RESTORE);
  ck_assert_int_eq(ft__hold_spec_for("phase=commit", 1u << FT_HOLD_RESTORE, &h),
                   0);
  ck_assert_int_eq(ft__hold_parse_list("phase=encode,step=8"), 0);
  static const char *const bad[] = {"",        ";",           "step=8;",
                                    ";step=8", "step=8;;step=9", "step=8;x",
                                    "x;step=8", "phase=crc;phase=encode",
                                    "step=8;phase=snapshot",
                                    "phase=restore;phase=restore,step=3"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(ft__hold_parse_list(bad[i]) == -1, "'%s' accepted", bad[i]);
}
END_TEST

static const char *env_hold(const char *name, void *arg) {
  return strcmp(name, "FT_HOLD") == 0 ? arg : NULL;
}

START_TEST(config_names_the_variable) {
  ft__config_t cfg;
  char msg[256];
  ck_assert_int_eq(ft__config_load(&cfg, env_hold, "phase=later", msg,
                                   sizeof(msg)),
                   FT_ECONFIG);
  ck_assert_ptr_nonnull(strstr(msg, "FT_HOLD=phase=later"));
  ck_assert_ptr_nonnull(strstr(msg, "step=N"));
  ck_assert_int_eq(
      ft__config_load(&cfg, env_hold, "step=8", msg, sizeof(msg)), FT_OK);
  ck_assert_str_eq(cfg.hold, "step=8");
}
END_TEST

static ft__ctl_t *new_ctl(char *dir) {
  strcpy(dir, "/tmp/ftrt-hold-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ft__ctl_t *ctl;
  ft__dir_t d;
  char msg[512];
  ck_assert_int_eq(ft__dir_open(&d, dir, msg, sizeof(msg)), FT_OK);
  ck_assert_int_eq(ft__ctl_create(&d, 2, &ctl, msg, sizeof(msg)), FT_OK);
  ft__dir_close(&d);
  return ctl;
}

static void drop_ctl(ft__ctl_t *ctl, const char *dir) {
  char path[64];
  ft__ctl_detach(ctl);
  snprintf(path, sizeof(path), "%s/ctl", dir);
  unlink(path);
  rmdir(dir);
}

#define TRAINER ((1u << FT_HOLD_STEP) | (1u << FT_HOLD_SNAPSHOT))

START_TEST(gate_unarmed) {
  char dir[32];
  ft__ctl_t *ctl = new_ctl(dir);
  ck_assert_uint_eq(ft__hold_gate(ctl, &ctl->rank[0].gate_step, 6, TRAINER), 0);
  ck_assert_uint_eq(ctl->rank[0].gate_step, 6); /* published for ft-hold */
  ck_assert_int_eq(ft__hold_at(ctl, 0, FT_HOLD_STEP, 6), 0);
  drop_ctl(ctl, dir);
}
END_TEST

START_TEST(gate_armed) {
  char dir[32];
  ft__ctl_t *ctl = new_ctl(dir);
  ft__hold_spec_t h = {.point = FT_HOLD_STEP, .step = 8};
  uint32_t gen = ft__hold_arm(ctl, &h);
  ck_assert_uint_ne(gen, 0);
  uint64_t gate = 0;
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 6, TRAINER), 0); /* before */
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 8, TRAINER), gen);
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 10, TRAINER), gen); /* >= N */
  /* An SMP's gate does not hold at a trainer point, and the reverse. */
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 8, 1u << FT_HOLD_ENCODE), 0);
  h.point = FT_HOLD_ENCODE;
  gen = ft__hold_arm(ctl, &h);
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 8, TRAINER), 0);
  /* A stale generation does not hold when the arming that replaced it
   * since the gate does not hold there (a later step). */
  uint32_t old = ft__hold_gate(ctl, &gate, 8, 1u << FT_HOLD_ENCODE);
  ck_assert_uint_eq(old, gen);
  h.step = 10;
  ft__hold_arm(ctl, &h);
  ck_assert_int_eq(ft__hold_at(ctl, old, FT_HOLD_ENCODE, 8), 0);
  ck_assert_uint_eq(ctl->hold.passed, 0); /* never held */
  drop_ctl(ctl, dir);
}
END_TEST

typedef struct held {
  ft__ctl_t *ctl;
  uint32_t gen;
  int returned;
  uint64_t step; /* where it holds: 8 unless set */
} held_t;

static void *hold_thread(void *arg) {
  held_t *t = arg;
  ft__hold_at(t->ctl, t->gen, FT_HOLD_STEP, t->step ? t->step : 8);
  __atomic_store_n(&t->returned, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Until n processes are held (bounded: a hang fails the test by Check's
 * timeout, never by a guess about speed). */
static void wait_held(ft__ctl_t *ctl, uint32_t n) {
  for (;;) {
    uint32_t seq = ft__ctl_seq(ctl);
    if (ft__load32(&ctl->hold.held) == n)
      return;
    ft__ctl_wait(ctl, seq, 1.0);
  }
}

START_TEST(held_until_released) {
  char dir[32];
  ft__ctl_t *ctl = new_ctl(dir);
  ft__hold_spec_t h = {.point = FT_HOLD_STEP, .step = 8};
  uint64_t gate[2];
  ft__hold_arm(ctl, &h);
  held_t t[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    t[i] = (held_t){ctl, ft__hold_gate(ctl, &gate[i], 8, TRAINER), 0, 8};
    ck_assert_int_eq(pthread_create(&th[i], NULL, hold_thread, &t[i]), 0);
  }
  wait_held(ctl, 2);
  ck_assert_uint_eq(ctl->hold.held_step, 8);
  ck_assert_int_eq(__atomic_load_n(&t[0].returned, __ATOMIC_ACQUIRE), 0);
  ck_assert_int_eq(__atomic_load_n(&t[1].returned, __ATOMIC_ACQUIRE), 0);
  ft__hold_release(ctl);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(t[i].returned, 1);
  }
  ck_assert_uint_eq(ctl->hold.held, 0);
  ck_assert_uint_eq(ctl->hold.passed, 2);
  /* One-shot: the next snapshot passes. */
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate[0], 10, TRAINER), 0);
  drop_ctl(ctl, dir);
}
END_TEST

START_TEST(too_late) {
  char dir[32], msg[256];
  ft__ctl_t *ctl = new_ctl(dir);
  ctl->rank[0].app_rank = 4;
  ctl->rank[1].app_rank = 5;
  ctl->rank[0].gate_step = 6;
  ctl->rank[1].gate_step = 8; /* already in the snapshot of step 8 */
  ft__hold_spec_t h = {.point = FT_HOLD_STEP, .step = 8};
  ck_assert_int_eq(ft__hold_too_late(ctl, &h, msg, sizeof(msg)), 1);
  ck_assert_str_eq(msg, "trainer rank 5 already passed step 8 (>= 8)");
  h.step = 10;
  ck_assert_int_eq(ft__hold_too_late(ctl, &h, msg, sizeof(msg)), 0);
  h.point = FT_HOLD_ENCODE;
  h.step = 8;
  ctl->smp_gate_step = 6;
  ck_assert_int_eq(ft__hold_too_late(ctl, &h, msg, sizeof(msg)), 0);
  ctl->smp_gate_step = 8;
  ck_assert_int_eq(ft__hold_too_late(ctl, &h, msg, sizeof(msg)), 1);
  ck_assert_str_eq(msg, "the SMP already protects step 8 (>= 8)");
  /* msg may be NULL (hold.h) */
  ck_assert_int_eq(ft__hold_too_late(ctl, &h, NULL, sizeof(msg)), 1);
  h.point = FT_HOLD_STEP;
  ck_assert_int_eq(ft__hold_too_late(ctl, &h, NULL, sizeof(msg)), 1);
  drop_ctl(ctl, dir);
}
END_TEST

/* A hold nobody releases lets go by itself after its bound (limit_s),
 * withdrawing the arming for every process held at it, and says so; one
 * without a bound (0) stays until released.  The bound of 1 s is what is
 * waited for, never a guess about speed. */
START_TEST(held_until_bound) {
  char dir[32];
  ft__ctl_t *ctl = new_ctl(dir);
  ft__hold_spec_t h = {.point = FT_HOLD_STEP, .step = 8, .limit_s = 1};
  uint32_t gen = ft__hold_arm(ctl, &h);
  ck_assert_uint_eq(ctl->hold.limit_s, 1);
  ck_assert_int_eq(ft__hold_at(ctl, gen, FT_HOLD_STEP, 8), FT_HOLD_EXPIRED);
  ck_assert_uint_eq(ft__load32(&ctl->hold.armed), 0);
  ck_assert_uint_eq(ft__load32(&ctl->hold.held), 0);
  ck_assert_uint_eq(ft__load32(&ctl->hold.passed), 1);
  char m[160];
  ft__hold_expired_msg(ctl, FT_HOLD_STEP, 8, m, sizeof(m));
  ck_assert_str_eq(m, "FT_HOLD: held at step=8 for 1 s and nobody let it go: "
                      "going on (FT_HOLD_LIMIT)");
  /* Without a bound: held until released (a thread releases it once held). */
  h.limit_s = 0;
  held_t t = {.ctl = ctl, .gen = ft__hold_arm(ctl, &h)};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, hold_thread, &t), 0);
  wait_held(ctl, 1);
  ck_assert_int_eq(__atomic_load_n(&t.returned, __ATOMIC_ACQUIRE), 0);
  ft__hold_release(ctl);
  pthread_join(th, NULL);
  ck_assert_int_eq(t.returned, 1);
  drop_ctl(ctl, dir);
}
END_TEST

static int returned(held_t *t) {
  return __atomic_load_n(&t->returned, __ATOMIC_ACQUIRE);
}

/* ft-hold arm --replace: a new arming replaces the one a process is held
 * at, at once.  The process goes on when the new one does not hold it
 * where it is (a later step: it stops there instead), and stays held,
 * counted once, when it does. */
START_TEST(replaced) {
  char dir[32];
  ft__ctl_t *ctl = new_ctl(dir);
  ft__hold_spec_t h = {.point = FT_HOLD_STEP, .step = 4};
  uint64_t gate;
  ft__hold_arm(ctl, &h);
  held_t t = {ctl, ft__hold_gate(ctl, &gate, 4, TRAINER), 0, 4};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, hold_thread, &t), 0);
  wait_held(ctl, 1);
  /* An earlier step holds it still (4 >= 2): held, counted once. */
  h.step = 2;
  uint32_t gen2 = ft__hold_arm(ctl, &h);
  /* A second process that gated under the first arming holds under the
   * second (its gate's generation is stale, the point the same). */
  held_t u = {ctl, t.gen, 0, 6};
  pthread_t tu;
  ck_assert_int_eq(pthread_create(&tu, NULL, hold_thread, &u), 0);
  wait_held(ctl, 2);
  ck_assert_int_eq(returned(&t), 0);
  ck_assert_uint_eq(ft__load32(&ctl->hold.armed), gen2);
  ck_assert_uint_eq(ctl->hold.passed, 0);
  /* A later step lets both go, and the job stops there next. */
  h.step = 8;
  uint32_t gen3 = ft__hold_arm(ctl, &h);
  pthread_join(th, NULL);
  pthread_join(tu, NULL);
  ck_assert_int_eq(t.returned + u.returned, 2);
  ck_assert_uint_eq(ctl->hold.held, 0);
  ck_assert_uint_eq(ctl->hold.passed, 2);
  ck_assert_uint_eq(ft__load32(&ctl->hold.armed), gen3); /* still armed */
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 6, TRAINER), 0);
  ck_assert_uint_eq(ft__hold_gate(ctl, &gate, 8, TRAINER), gen3);
  drop_ctl(ctl, dir);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("hold");
  TCase *tc = tcase_create("hold");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, parse_good);
  tcase_add_test(tc, parse_bad);
  tcase_add_test(tc, parse_list);
  tcase_add_test(tc, config_names_the_variable);
  tcase_add_test(tc, gate_unarmed);
  tcase_add_test(tc, gate_armed);
  tcase_add_test(tc, held_until_released);
  tcase_add_test(tc, held_until_bound);
  tcase_add_test(tc, replaced);
  tcase_add_test(tc, too_late);
  suite_add_tcase(s, tc);
  return s;
}
