/* Config validation: each bad FT_* value gives FT_ECONFIG and a message that
 * names the variable and the value; good values land in the struct. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "ftrt.h"
#include "runtime/config.h"
#include "tests/unit/check_main.h"

/* A fake environment: NULL-terminated pairs. */
static const char *lookup(const char *name, void *arg) {
  const char **kv = arg;
  for (; kv[0]; kv += 2)
    if (strcmp(kv[0], name) == 0)
      return kv[1];
  return NULL;
}

static int load(ft__config_t *cfg, char *msg, const char **env) {
  return ft__config_load(cfg, lookup, (void *)env, msg, 256);
}

START_TEST(defaults) {
  ft__config_t cfg;
  char msg[256];
  const char *env[] = {NULL};
  ck_assert_int_eq(load(&cfg, msg, env), FT_OK);
  ck_assert_str_eq(cfg.store_root, "/dev/shm/ftrt");
  ck_assert_int_eq(cfg.capture, FT_CAPTURE_SYNC);
  ck_assert_int_eq(cfg.policy, FT_POLICY_BLOCK);
  ck_assert_int_eq(cfg.ec_k, 0);
  ck_assert_int_eq(cfg.ec_m, -1);
}
END_TEST

START_TEST(good_values) {
  ft__config_t cfg;
  char msg[256];
  const char *env[] = {"FT_JOB", "llm-7b.run_2", "FT_EC_K", "4", "FT_EC_M", "2",
                       "FT_CAPTURE", "lazy", "FT_SNAPSHOT_POLICY", "skip",
                       "FT_LOG", "debug", "FT_TIMEOUT", "2.5",
                       "FT_PIECE_SIZE", "4M", "FT_MEMORY", "cuda",
                       "FT_STORE_ROOT", "/tmp/x", "FT_SMP_CPUSET", "1-3,7",
                       "FT_HOLD_LIMIT", "30", NULL};
  ck_assert_int_eq(load(&cfg, msg, env), FT_OK);
  ck_assert_str_eq(cfg.job, "llm-7b.run_2");
  ck_assert_int_eq(cfg.ec_k, 4);
  ck_assert_int_eq(cfg.ec_m, 2);
  ck_assert_int_eq(cfg.capture, FT_CAPTURE_LAZY);
  ck_assert_int_eq(cfg.policy, FT_POLICY_SKIP);
  ck_assert_int_eq(cfg.log_level, FT_LOG_DEBUG);
  ck_assert(cfg.timeout_s == 2.5);
  ck_assert_uint_eq(cfg.piece_bytes, 4u << 20);
  ck_assert_int_eq(cfg.default_memory, FT_MEM_CUDA);
  ck_assert_str_eq(cfg.store_root, "/tmp/x");
  ck_assert_str_eq(cfg.smp_cpuset, "1-3,7");
  ck_assert_uint_eq(cfg.hold_limit_s, 30);
}
END_TEST

/* Each bad value: status, and the message must contain these words. */
static const struct {
  const char *var, *val, *want1, *want2;
} bad[] = {
    {"FT_EC_K", "abc", "FT_EC_K=abc", "not a whole number"},
    {"FT_EC_K", "0", "FT_EC_K=0", "between 1 and 254"},
    {"FT_EC_K", "255", "FT_EC_K=255", "between 1 and 254"},
    {"FT_EC_M", "-1", "FT_EC_M=-1", "between 0 and 254"},
    {"FT_EC_M", "3x", "FT_EC_M=3x", "not a whole number"},
    {"FT_CAPTURE", "eager", "FT_CAPTURE=eager", "sync|lazy"},
    {"FT_SNAPSHOT_POLICY", "drop", "FT_SNAPSHOT_POLICY=drop", "block|skip"},
    {"FT_LOG", "verbose", "FT_LOG=verbose", "error|warn|info|debug"},
    {"FT_MEMORY", "rocm", "FT_MEMORY=rocm", "host|cuda"},
    {"FT_TIMEOUT", "soon", "FT_TIMEOUT=soon", "seconds"},
    {"FT_HOLD_LIMIT", "-1", "FT_HOLD_LIMIT=-1", "whole seconds"},
    {"FT_HOLD_LIMIT", "1.5", "FT_HOLD_LIMIT=1.5", "whole seconds"},
    {"FT_TIMEOUT", "0", "FT_TIMEOUT=0", "above 0"},
    {"FT_TIMEOUT", "-3", "FT_TIMEOUT=-3", "above 0"},
    {"FT_PIECE_SIZE", "lots", "FT_PIECE_SIZE=lots", "between 4K and 1G"},
    {"FT_PIECE_SIZE", "12Q", "FT_PIECE_SIZE=12Q", "between 4K and 1G"},
    {"FT_PIECE_SIZE", "100", "FT_PIECE_SIZE=100", "between 4K and 1G"},
    {"FT_JOB", "a/b", "FT_JOB=a/b", "[A-Za-z0-9._-]"},
    {"FT_JOB", "", "FT_JOB=", "1-63 characters"},
    {"FT_JOB", "..", "FT_JOB=..", "not starting with '.'"},
    {"FT_STORE_ROOT", "relative/dir", "FT_STORE_ROOT=relative/dir",
     "absolute path"},
    {"FT_SMP_CPUSET", "core0", "FT_SMP_CPUSET=core0", "CPU list"},
    {"FT_FAILURE_DOMAINS", "h1", "FT_FAILURE_DOMAINS=h1", "host=domain"},
    {"FT_FAILURE_DOMAINS", "h1=r1,", "FT_FAILURE_DOMAINS=h1=r1,", "host=domain"},
    {"FT_FAILURE_DOMAINS", "=r1", "FT_FAILURE_DOMAINS==r1", "host=domain"},
    {"FT_VIRTUAL_NODE_RANKS", "1", "FT_VIRTUAL_NODE_RANKS=1",
     "between 2 and 4096"},
};

START_TEST(bad_value) {
  ft__config_t cfg;
  char msg[256];
  const char *env[] = {bad[_i].var, bad[_i].val, NULL};
  ck_assert_int_eq(load(&cfg, msg, env), FT_ECONFIG);
  ck_assert_msg(strstr(msg, bad[_i].want1), "message '%s' lacks '%s'", msg,
                bad[_i].want1);
  ck_assert_msg(strstr(msg, bad[_i].want2), "message '%s' lacks '%s'", msg,
                bad[_i].want2);
}
END_TEST

START_TEST(k_plus_m_over_255) {
  ft__config_t cfg;
  char msg[256];
  const char *env[] = {"FT_EC_K", "200", "FT_EC_M", "60", NULL};
  ck_assert_int_eq(load(&cfg, msg, env), FT_ECONFIG);
  ck_assert_ptr_nonnull(strstr(msg, "k+m=260"));
  ck_assert_ptr_nonnull(strstr(msg, "at most 255"));
}
END_TEST

/* k + m <= 255 is the one real limit of the code (ISA-L works in
 * GF(2^8)): refused at configuration time, naming the variables, also
 * when one of them is set alone and the other chosen would pass it (it
 * was accepted, and the job failed later in group formation). */
START_TEST(k_plus_m_over_255_one_set) {
  ft__config_t cfg;
  char msg[256];
  int k, m;
  ft__config_defaults(&cfg);
  cfg.ec_m = 254;
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 10000, &k, &m, msg, 256),
                   FT_ECONFIG);
  ck_assert_msg(strstr(msg, "FT_EC_K=3 FT_EC_M=254") &&
                    strstr(msg, "k+m=257") && strstr(msg, "at most 255"),
                "message: %s", msg);
  cfg.ec_m = 252; /* 3 + 252 = 255: the largest code there is */
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 10000, &k, &m, msg, 256),
                   FT_OK);
  ck_assert(k == 3 && m == 252);
}
END_TEST

START_TEST(ec_for_nodes) {
  ft__config_t cfg;
  char msg[256];
  int k, m;
  ft__config_defaults(&cfg);
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 1, &k, &m, msg, 256), FT_OK);
  ck_assert(k == 1 && m == 0);
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 3, &k, &m, msg, 256), FT_OK);
  ck_assert(k == 2 && m == 1);
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 16, &k, &m, msg, 256), FT_OK);
  ck_assert(k == 3 && m == 1);
  cfg.ec_k = 4;
  cfg.ec_m = 2;
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 6, &k, &m, msg, 256), FT_OK);
  ck_assert(k == 4 && m == 2);
  ck_assert_int_eq(ft__config_ec_for_nodes(&cfg, 4, &k, &m, msg, 256),
                   FT_ECONFIG);
  ck_assert_ptr_nonnull(strstr(msg, "needs at least 6 nodes"));
  ck_assert_ptr_nonnull(strstr(msg, "FT_EC_K=3 FT_EC_M=1"));
}
END_TEST

START_TEST(domains) {
  ft__config_t cfg;
  char msg[256], d[FT_JOB_MAX];
  const char *env[] = {"FT_FAILURE_DOMAINS", "h1=rack1,h2=rack2,h10=rack3",
                       NULL};
  ck_assert_int_eq(load(&cfg, msg, env), FT_OK);
  ft__config_domain_of(&cfg, "h2", d);
  ck_assert_str_eq(d, "rack2");
  ft__config_domain_of(&cfg, "h10", d);
  ck_assert_str_eq(d, "rack3");
  ft__config_domain_of(&cfg, "h1", d);
  ck_assert_str_eq(d, "rack1");
  ft__config_domain_of(&cfg, "h3", d);
  ck_assert_str_eq(d, "");
  snprintf(cfg.failure_domain, sizeof(cfg.failure_domain), "own");
  ft__config_domain_of(&cfg, "h1", d);
  ck_assert_str_eq(d, "own"); /* FT_FAILURE_DOMAIN wins */
}
END_TEST

/* FT_FAILURE_DOMAINS names every host of the job (ft-launch sets it from a
 * hostfile's labels): 5,000 hosts are read whole (a value over 1,023
 * characters, some 70 hosts, was refused before). */
START_TEST(domains_of_many_hosts) {
  enum { HOSTS = 5000 };
  size_t cap = (size_t)HOSTS * 32;
  char *v = malloc(cap), msg[256], d[FT_JOB_MAX];
  ck_assert_ptr_nonnull(v);
  size_t used = 0;
  for (int h = 0; h < HOSTS; h++)
    used += (size_t)snprintf(v + used, cap - used, "%snode%04d=rack%02d",
                             h ? "," : "", h, h / 40);
  const char *env[] = {"FT_FAILURE_DOMAINS", v, NULL};
  ft__config_t cfg;
  ck_assert_msg(load(&cfg, msg, env) == FT_OK, "%s", msg);
  ft__config_domain_of(&cfg, "node4999", d);
  ck_assert_str_eq(d, "rack124");
  ft__config_domain_of(&cfg, "node0000", d);
  ck_assert_str_eq(d, "rack00");
  free(v);
}
END_TEST

START_TEST(sizes) {
  size_t s;
  ck_assert_int_eq(ft__parse_size("64", &s), FT_OK);
  ck_assert_uint_eq(s, 64);
  ck_assert_int_eq(ft__parse_size("4k", &s), FT_OK);
  ck_assert_uint_eq(s, 4096);
  ck_assert_int_eq(ft__parse_size("2GB", &s), FT_OK);
  ck_assert_uint_eq(s, 2ull << 30);
  ck_assert_int_eq(ft__parse_size("", &s), FT_EINVAL);
  ck_assert_int_eq(ft__parse_size("-1", &s), FT_EINVAL);
  ck_assert_int_eq(ft__parse_size("1MBx", &s), FT_EINVAL);
}
END_TEST

/* FT_FAULT: flip: is a corruption only the rebuilt and source points can
 * make (their caller flips a byte of the chunk); elsewhere it is refused,
 * and a flip point returns 1 on its pass instead of killing. */
START_TEST(fault_specs) {
  ft__fault_t f;
  ck_assert_int_eq(ft__fault_parse(&f, "flip:rebuilt:2@r1"), 0);
  ck_assert(f.flip && !f.stop && f.nth == 2 && f.rank == 1);
  ck_assert_str_eq(f.point, "rebuilt");
  ck_assert_int_eq(ft__fault_point(&f, "rebuilt", 0, "h"), 0); /* not r0 */
  ck_assert_int_eq(ft__fault_point(&f, "restore", 1, "h"), 0);
  ck_assert_int_eq(ft__fault_point(&f, "rebuilt", 1, "h"), 0); /* pass 1 */
  ck_assert_int_eq(ft__fault_point(&f, "rebuilt", 1, "h"), 1); /* pass 2 */
  ck_assert_int_eq(ft__fault_point(&f, "rebuilt", 1, "h"), 0);
  ck_assert_int_eq(ft__fault_parse(&f, "flip:restore"), -1);
  ck_assert_int_eq(ft__fault_parse(&f, "flip:copy@h2"), -1);
  ck_assert_int_eq(ft__fault_parse(&f, "rebuilt@h2"), 0);
  ck_assert(!f.flip && !f.stop);
  ck_assert_int_eq(ft__fault_parse(&f, "flip:"), -1);
  /* fail: only at link, and link only with fail: (it has nothing to kill
   * that restore does not); its pass returns 1, the caller fails. */
  ck_assert_int_eq(ft__fault_parse(&f, "fail:link@h3"), 0);
  ck_assert(f.fail && !f.flip && !f.stop && f.nth == 1);
  ck_assert_int_eq(ft__fault_point(&f, "link", 5, "h2"), 0);
  ck_assert_int_eq(ft__fault_point(&f, "link", 5, "h3"), 1);
  ck_assert_int_eq(ft__fault_parse(&f, "fail:restore"), -1);
  ck_assert_int_eq(ft__fault_parse(&f, "link"), -1);
  ck_assert_int_eq(ft__fault_parse(&f, "flip:link"), -1);
  ck_assert_int_eq(ft__fault_parse(&f, "stop:link"), -1);
  ft__config_t cfg;
  char msg[256];
  const char *env[] = {"FT_FAULT", "flip:commit", NULL};
  ck_assert_int_eq(load(&cfg, msg, env), FT_ECONFIG);
  ck_assert_msg(strstr(msg, "FT_FAULT=flip:commit") &&
                    strstr(msg, "flip: only with rebuilt or source"),
                "message: %s", msg);
}
END_TEST

START_TEST(error_names) {
  ck_assert_str_eq(ft_err_name(FT_OK), "FT_OK");
  ck_assert_str_eq(ft_err_name(FT_ETOOMANY), "FT_ETOOMANY");
  ck_assert_str_eq(ft_strerror(FT_ENOSNAPSHOT),
                   "no committed snapshot to restore");
  ck_assert_str_eq(ft_strerror(12345), "unknown error");
  ck_assert_str_eq(ft_err_name(12345), "FT_UNKNOWN");
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("config");
  tcase_add_test(tc, defaults);
  tcase_add_test(tc, good_values);
  tcase_add_loop_test(tc, bad_value, 0, (int)(sizeof(bad) / sizeof(bad[0])));
  tcase_add_test(tc, k_plus_m_over_255);
  tcase_add_test(tc, k_plus_m_over_255_one_set);
  tcase_add_test(tc, domains_of_many_hosts);
  tcase_add_test(tc, ec_for_nodes);
  tcase_add_test(tc, sizes);
  tcase_add_test(tc, domains);
  tcase_add_test(tc, error_names);
  tcase_add_test(tc, fault_specs);
  suite_add_tcase(s, tc);
  return s;
}
