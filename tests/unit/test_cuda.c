/*
 * The CUDA capture path, as the store uses it: device bytes land exactly in a
 * pinned store segment, each copy sees the trainer's earlier work and does
 * not wait for its later work, restore puts the exact bytes back, and bad
 * arguments give a status, not a crash.
 *
 * Two builds, one file: with CUDA (FT_TEST_CUDA, set by cuda.inc) the tests
 * need a device and the program exits 77 (automake's SKIP) without one; the
 * stub build checks that every call refuses with FT_ENOTSUP and says why,
 * which needs no device.  The device is probed in a child process: Check
 * forks every test, and a CUDA runtime initialised before fork() cannot be
 * used in the child.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "ftrt.h"
#include "tests/unit/check_main.h"

#if FT_TEST_CUDA
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

/* ASan's default shadow-gap protection keeps CUDA from creating a context;
 * this is read only when the program is built with ASan. */
__attribute__((visibility("default"))) const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "protect_shadow_gap=0"; }

#define MIB (1024u * 1024u)
#define BIG (64u * MIB)
#define SLACK 4096u /* room around each copy to catch a write out of bounds */
#define CANARY 0x5a

#define CUDA_OK(call)                                                          \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

#define FT_CALL(c, call)                                                       \
  do {                                                                         \
    int st_ = (call);                                                          \
    ck_assert_msg(st_ == FT_OK, "%s: %s (%s)", #call, ft_err_name(st_),        \
                  ft__cuda_last_error(c));                                     \
  } while (0)

static ft__cuda_t *new_cuda(void) {
  ft__cuda_t *c;
  char msg[256];
  int st = ft__cuda_create(&c, msg, sizeof msg);
  ck_assert_msg(st == FT_OK, "ft__cuda_create: %s: %s", ft_err_name(st), msg);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* A store segment: shared memory mapped from a tmpfs file, as the store's. */
static unsigned char *seg_map(size_t len) {
  int fd = memfd_create("ftrt-test-seg", 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ck_assert_ptr_ne(p, MAP_FAILED);
  return p;
}

/* Bytes that differ from their neighbours, so a shifted copy shows. */
static void fill(unsigned char *p, size_t len, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < len; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (unsigned char)(x >> 24);
  }
}

static void assert_canary(const unsigned char *p, size_t len,
                          const char *where) {
  for (size_t i = 0; i < len; i++)
    ck_assert_msg(p[i] == CANARY, "%s: byte %zu overwritten", where, i);
}

static void assert_all(const unsigned char *p, size_t len, unsigned char v) {
  for (size_t i = 0; i < len; i++)
    ck_assert_msg(p[i] == v, "byte %zu is 0x%02x, want 0x%02x", i, p[i], v);
}

/* Device memory with known contents, put there without the code under test. */
static unsigned char *dev_with(const unsigned char *ref, size_t len) {
  void *d;
  CUDA_OK(cudaMalloc(&d, len));
  CUDA_OK(cudaMemcpy(d, ref, len, cudaMemcpyHostToDevice));
  return d;
}

/* Keep a stream busy for tens of milliseconds by rewriting scratch memory. */
static void busy(cudaStream_t s, void *scratch, size_t len, int rounds) {
  for (int i = 0; i < rounds; i++)
    CUDA_OK(cudaMemsetAsync(scratch, i & 0xff, len, s));
}

static const size_t sizes[] = {0, 1, 7, 4099, MIB + 13, BIG};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* One capture of each size, aligned (even _i) and at odd offsets (odd _i). */
START_TEST(d2h_sizes) {
  size_t n = sizes[_i / 2], soff = (_i % 2) ? 1 : 0, doff = (_i % 2) ? 3 : 0;
  size_t seglen = BIG + 2 * SLACK + 8;
  ft__cuda_t *c = new_cuda();
  unsigned char *ref = malloc(BIG + SLACK);
  ck_assert_ptr_nonnull(ref);
  fill(ref, BIG + SLACK, n + 1);
  unsigned char *dev = dev_with(ref, BIG + SLACK);
  unsigned char *seg = seg_map(seglen);
  FT_CALL(c, ft__cuda_register_host(c, seg, seglen));
  memset(seg, CANARY, seglen);

  unsigned char *dst = seg + SLACK + doff;
  FT_CALL(c, ft__cuda_copy_d2h_async(c, dst, dev + soff, n, NULL));
  FT_CALL(c, ft__cuda_wait(c));
  ck_assert_msg(memcmp(dst, ref + soff, n) == 0, "%zu bytes differ", n);
  assert_canary(seg, SLACK + doff, "before the copy");
  assert_canary(dst + n, SLACK, "after the copy");

  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, seglen);
  CUDA_OK(cudaFree(dev));
  free(ref);
  ft__cuda_destroy(c);
}
END_TEST

/* The store's pattern: every buffer queued, then one wait. */
START_TEST(d2h_batch) {
  ft__cuda_t *c = new_cuda();
  size_t total = 0;
  for (int i = 0; i < NSIZES; i++)
    total += sizes[i] + SLACK;
  unsigned char *ref = malloc(total);
  ck_assert_ptr_nonnull(ref);
  fill(ref, total, 42);
  unsigned char *dev = dev_with(ref, total);
  unsigned char *seg = seg_map(total);
  FT_CALL(c, ft__cuda_register_host(c, seg, total));
  memset(seg, CANARY, total);

  size_t off = 0;
  for (int i = 0; i < NSIZES; off += sizes[i] + SLACK, i++)
    FT_CALL(c,
            ft__cuda_copy_d2h_async(c, seg + off, dev + off, sizes[i], NULL));
  FT_CALL(c, ft__cuda_wait(c));
  off = 0;
  for (int i = 0; i < NSIZES; off += sizes[i] + SLACK, i++) {
    ck_assert_msg(memcmp(seg + off, ref + off, sizes[i]) == 0,
                  "copy %d (%zu bytes) differs", i, sizes[i]);
    assert_canary(seg + off + sizes[i], SLACK, "between copies");
  }
  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, total);
  CUDA_OK(cudaFree(dev));
  free(ref);
  ft__cuda_destroy(c);
}
END_TEST

/*
 * The trainer's stream is kept busy, then writes the buffer; the capture,
 * queued after, must see what was written.  _i == 0: a stream of the
 * trainer's own; _i == 1: the legacy default stream (NULL).  Without the
 * event the private stream would copy at once and see zeros.
 */
START_TEST(d2h_after_user_stream) {
  const size_t n = 16 * MIB, scratch_len = 256 * MIB;
  ft__cuda_t *c = new_cuda();
  cudaStream_t user = NULL;
  if (_i == 0)
    CUDA_OK(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
  void *src, *scratch;
  CUDA_OK(cudaMalloc(&src, n));
  CUDA_OK(cudaMalloc(&scratch, scratch_len));
  CUDA_OK(cudaMemset(src, 0, n));
  unsigned char *seg = seg_map(n);
  FT_CALL(c, ft__cuda_register_host(c, seg, n));

  busy(user, scratch, scratch_len, 64);
  CUDA_OK(cudaMemsetAsync(src, 0xab, n, user));
  FT_CALL(c, ft__cuda_copy_d2h_async(c, seg, src, n, user));
  FT_CALL(c, ft__cuda_wait(c));
  assert_all(seg, n, 0xab);

  CUDA_OK(cudaDeviceSynchronize());
  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, n);
  CUDA_OK(cudaFree(src));
  CUDA_OK(cudaFree(scratch));
  if (user)
    CUDA_OK(cudaStreamDestroy(user));
  ft__cuda_destroy(c);
}
END_TEST

/*
 * Lazy capture: once the copy is queued the trainer goes on, on its stream
 * and on another, writing other device memory.  The capture is exact, and
 * the wait returns while that later work is still running.
 */
START_TEST(d2h_lazy_overlap) {
  const size_t n = 32 * MIB, other_len = 256 * MIB;
  ft__cuda_t *c = new_cuda();
  cudaStream_t user, side;
  CUDA_OK(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  unsigned char *ref = malloc(n);
  ck_assert_ptr_nonnull(ref);
  fill(ref, n, 7);
  unsigned char *src = dev_with(ref, n);
  unsigned char *other;
  CUDA_OK(cudaMalloc((void **)&other, 2 * other_len));
  unsigned char *seg = seg_map(n);
  FT_CALL(c, ft__cuda_register_host(c, seg, n));

  FT_CALL(c, ft__cuda_copy_d2h_async(c, seg, src, n, user));
  busy(user, other, other_len, 2000); /* its last value: 1999 & 0xff */
  busy(side, other + other_len, other_len, 500); /* 499 & 0xff */
  FT_CALL(c, ft__cuda_wait(c));
  ck_assert_int_eq(cudaStreamQuery(user), cudaErrorNotReady);
  (void)cudaGetLastError();
  ck_assert_msg(memcmp(seg, ref, n) == 0, "lazy capture differs");

  CUDA_OK(cudaDeviceSynchronize());
  unsigned char tail[2][4096];
  CUDA_OK(cudaMemcpy(tail[0], other + other_len - 4096, 4096,
                     cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(tail[1], other + 2 * other_len - 4096, 4096,
                     cudaMemcpyDeviceToHost));
  assert_all(tail[0], 4096, (unsigned char)(1999 & 0xff));
  assert_all(tail[1], 4096, (unsigned char)(499 & 0xff));

  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, n);
  CUDA_OK(cudaFree(src));
  CUDA_OK(cudaFree(other));
  CUDA_OK(cudaStreamDestroy(user));
  CUDA_OK(cudaStreamDestroy(side));
  free(ref);
  ft__cuda_destroy(c);
}
END_TEST

/* Restore: the exact bytes, at the offset asked, and nothing past them. */
START_TEST(h2d_sizes) {
  size_t n = sizes[_i / 2], off = (_i % 2) ? 5 : 0;
  size_t devlen = BIG + 2 * SLACK + 8;
  ft__cuda_t *c = new_cuda();
  unsigned char *seg = seg_map(BIG + 8);
  FT_CALL(c, ft__cuda_register_host(c, seg, BIG + 8));
  fill(seg, BIG + 8, n + 3);
  unsigned char *dev;
  CUDA_OK(cudaMalloc((void **)&dev, devlen));
  CUDA_OK(cudaMemset(dev, CANARY, devlen));

  FT_CALL(c, ft__cuda_copy_h2d(c, dev + SLACK + off, seg + off, n, NULL));
  unsigned char *back = malloc(devlen);
  ck_assert_ptr_nonnull(back);
  CUDA_OK(cudaMemcpy(back, dev, devlen, cudaMemcpyDeviceToHost));
  ck_assert_msg(memcmp(back + SLACK + off, seg + off, n) == 0,
                "%zu restored bytes differ", n);
  assert_canary(back, SLACK + off, "before the restore");
  assert_canary(back + SLACK + off + n, SLACK, "after the restore");

  free(back);
  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, BIG + 8);
  CUDA_OK(cudaFree(dev));
  ft__cuda_destroy(c);
}
END_TEST

/*
 * Restore while the application's stream still has a write of the buffer
 * queued behind other work (a non-blocking stream, _i 0, or the legacy
 * default stream, _i 1): the restored bytes land after it, not under it.
 */
START_TEST(h2d_after_user_stream) {
  const size_t n = 16 * MIB, scratch_len = 256 * MIB;
  ft__cuda_t *c = new_cuda();
  cudaStream_t user = NULL;
  if (_i == 0)
    CUDA_OK(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
  unsigned char *dst, *scratch;
  CUDA_OK(cudaMalloc((void **)&dst, n));
  CUDA_OK(cudaMalloc((void **)&scratch, scratch_len));
  unsigned char *seg = seg_map(n);
  FT_CALL(c, ft__cuda_register_host(c, seg, n));
  memset(seg, 0xab, n);

  busy(user, scratch, scratch_len, 64);
  CUDA_OK(cudaMemsetAsync(dst, 0xcd, n, user));
  FT_CALL(c, ft__cuda_copy_h2d(c, dst, seg, n, user));
  CUDA_OK(cudaDeviceSynchronize());
  unsigned char *back = malloc(n);
  ck_assert_ptr_nonnull(back);
  CUDA_OK(cudaMemcpy(back, dst, n, cudaMemcpyDeviceToHost));
  assert_all(back, n, 0xab);

  free(back);
  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, n);
  CUDA_OK(cudaFree(dst));
  CUDA_OK(cudaFree(scratch));
  if (user)
    CUDA_OK(cudaStreamDestroy(user));
  ft__cuda_destroy(c);
}
END_TEST

/* Capture from one buffer, restore into another: the same bytes. */
START_TEST(round_trip) {
  const size_t n = 3 * MIB + 1;
  ft__cuda_t *c = new_cuda();
  unsigned char *ref = malloc(n), *back = malloc(n);
  ck_assert(ref && back);
  fill(ref, n, 99);
  unsigned char *a = dev_with(ref, n), *b;
  CUDA_OK(cudaMalloc((void **)&b, n));
  CUDA_OK(cudaMemset(b, 0, n));
  unsigned char *seg = seg_map(n);
  FT_CALL(c, ft__cuda_register_host(c, seg, n));
  FT_CALL(c, ft__cuda_copy_d2h_async(c, seg, a, n, NULL));
  FT_CALL(c, ft__cuda_wait(c));
  FT_CALL(c, ft__cuda_copy_h2d(c, b, seg, n, NULL));
  CUDA_OK(cudaMemcpy(back, b, n, cudaMemcpyDeviceToHost));
  ck_assert(memcmp(back, ref, n) == 0);
  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, n);
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  free(ref);
  free(back);
  ft__cuda_destroy(c);
}
END_TEST

START_TEST(device_ptr_kinds) {
  ft__cuda_t *c = new_cuda();
  unsigned char *dev, *managed, *pinned;
  CUDA_OK(cudaMalloc((void **)&dev, 4096));
  CUDA_OK(cudaMallocManaged((void **)&managed, 4096, cudaMemAttachGlobal));
  CUDA_OK(cudaMallocHost((void **)&pinned, 4096));
  unsigned char *heap = malloc(4096), *seg = seg_map(4096);
  int stack;
  FT_CALL(c, ft__cuda_register_host(c, seg, 4096));

  ck_assert_int_eq(ft__cuda_is_device_ptr(dev), 1);
  ck_assert_int_eq(ft__cuda_is_device_ptr(dev + 100), 1);
  ck_assert_int_eq(ft__cuda_is_device_ptr(managed), 1);
  ck_assert_int_eq(ft__cuda_is_device_ptr(pinned), 0);
  ck_assert_int_eq(ft__cuda_is_device_ptr(seg), 0);
  ck_assert_int_eq(ft__cuda_is_device_ptr(heap), 0);
  ck_assert_int_eq(ft__cuda_is_device_ptr(&stack), 0);
  ck_assert_int_eq(ft__cuda_is_device_ptr(NULL), 0);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);

  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  munmap(seg, 4096);
  free(heap);
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(managed));
  CUDA_OK(cudaFree(dev));
  ft__cuda_destroy(c);
}
END_TEST

static void assert_err(ft__cuda_t *c, int st, int want, const char *words) {
  ck_assert_msg(st == want, "got %s, want %s", ft_err_name(st),
                ft_err_name(want));
  ck_assert_msg(strstr(ft__cuda_last_error(c), words),
                "message '%s' lacks '%s'", ft__cuda_last_error(c), words);
}

/* Bad arguments: a status and a reason, the handle still usable after, and
 * the trainer's cudaGetLastError left clean. */
START_TEST(bad_arguments) {
  const size_t n = 4096;
  ft__cuda_t *c = new_cuda();
  unsigned char ref[4096];
  fill(ref, n, 5);
  unsigned char *dev = dev_with(ref, n), *heap = malloc(n);
  unsigned char *seg = seg_map(n);
  ck_assert_ptr_nonnull(heap);
  ck_assert_str_eq(ft__cuda_last_error(c), "");

  assert_err(c, ft__cuda_copy_d2h_async(c, seg, heap, n, NULL), FT_EINVAL,
             "not CUDA device memory");
  assert_err(c, ft__cuda_copy_d2h_async(c, seg, (void *)0x1000, n, NULL),
             FT_EINVAL, "not CUDA device memory");
  assert_err(c, ft__cuda_copy_d2h_async(c, NULL, dev, n, NULL), FT_EINVAL,
             "NULL");
  /* The wait reports the first failure of the batch, then starts afresh. */
  assert_err(c, ft__cuda_wait(c), FT_EINVAL, "source");
  FT_CALL(c, ft__cuda_wait(c));

  assert_err(c, ft__cuda_copy_h2d(c, heap, ref, n, NULL), FT_EINVAL,
             "not CUDA device memory");
  assert_err(c, ft__cuda_copy_h2d(c, dev, NULL, n, NULL), FT_EINVAL, "NULL");
  assert_err(c, ft__cuda_register_host(c, NULL, n), FT_EINVAL, "empty");
  assert_err(c, ft__cuda_register_host(c, seg, 0), FT_EINVAL, "empty");
  FT_CALL(c, ft__cuda_register_host(c, seg, n));
  assert_err(c, ft__cuda_register_host(c, seg, n), FT_EINVAL,
             "cudaHostRegister: cudaErrorHostMemoryAlreadyRegistered");
  FT_CALL(c, ft__cuda_unregister_host(c, seg));
  assert_err(c, ft__cuda_unregister_host(c, seg), FT_EINVAL,
             "cudaHostUnregister: cudaErrorHostMemoryNotRegistered");
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);

  ck_assert_int_eq(ft__cuda_copy_d2h_async(NULL, seg, dev, n, NULL), FT_EINVAL);
  ck_assert_int_eq(ft__cuda_copy_h2d(NULL, dev, seg, n, NULL), FT_EINVAL);
  ck_assert_int_eq(ft__cuda_wait(NULL), FT_EINVAL);
  ck_assert_int_eq(ft__cuda_register_host(NULL, seg, n), FT_EINVAL);
  ck_assert_str_eq(ft__cuda_last_error(NULL), "");
  ft__cuda_destroy(NULL);

  memset(seg, 0, n);
  FT_CALL(c, ft__cuda_copy_d2h_async(c, seg, dev, n, NULL));
  FT_CALL(c, ft__cuda_wait(c));
  ck_assert(memcmp(seg, ref, n) == 0);

  munmap(seg, n);
  free(heap);
  CUDA_OK(cudaFree(dev));
  ft__cuda_destroy(c);
}
END_TEST

/* Destroy waits for queued copies: the caller unmaps the segment next. */
START_TEST(destroy_waits) {
  ft__cuda_t *c = new_cuda();
  unsigned char *ref = malloc(BIG);
  ck_assert_ptr_nonnull(ref);
  fill(ref, BIG, 11);
  unsigned char *dev = dev_with(ref, BIG);
  unsigned char *seg = seg_map(BIG);
  FT_CALL(c, ft__cuda_register_host(c, seg, BIG));
  memset(seg, 0, BIG);
  FT_CALL(c, ft__cuda_copy_d2h_async(c, seg, dev, BIG, NULL));
  ft__cuda_destroy(c);
  ck_assert_msg(memcmp(seg, ref, BIG) == 0, "destroy did not wait");
  CUDA_OK(cudaHostUnregister(seg));
  munmap(seg, BIG);
  CUDA_OK(cudaFree(dev));
  free(ref);
}
END_TEST

/* 0: a device to test on; 77: none, and create said so properly; 1: not. */
static int probe(void) {
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return 1;
  if (pid == 0) {
    ft__cuda_t *c = (ft__cuda_t *)&c;
    char msg[256] = "unset";
    int st = ft__cuda_create(&c, msg, sizeof msg);
    if (st == FT_OK) {
      ft__cuda_destroy(c);
      _exit(0);
    }
    if (st == FT_ENOTSUP && !c && strstr(msg, "no CUDA device")) {
      fprintf(stderr, "test_cuda: skipping: %s\n", msg);
      _exit(77);
    }
    fprintf(stderr, "test_cuda: ft__cuda_create gave %s, handle %p, '%s'\n",
            ft_err_name(st), (void *)c, msg);
    _exit(1);
  }
  int ws;
  if (waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
    return 1;
  return WEXITSTATUS(ws);
}

static void add_tests(TCase *tc) {
  tcase_add_loop_test(tc, d2h_sizes, 0, 2 * NSIZES);
  tcase_add_test(tc, d2h_batch);
  tcase_add_loop_test(tc, d2h_after_user_stream, 0, 2);
  tcase_add_test(tc, d2h_lazy_overlap);
  tcase_add_loop_test(tc, h2d_sizes, 0, 2 * NSIZES);
  tcase_add_loop_test(tc, h2d_after_user_stream, 0, 2);
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, device_ptr_kinds);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, destroy_waits);
}

#else /* the stub build */

static int probe(void) { return 0; }

START_TEST(stub_refuses) {
  const char *why = "ftrt was built without CUDA";
  ft__cuda_t *c = (ft__cuda_t *)&c;
  char msg[64], small[8];
  ck_assert_int_eq(ft__cuda_create(&c, msg, sizeof msg), FT_ENOTSUP);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(msg, why);
  ck_assert_int_eq(ft__cuda_create(&c, small, sizeof small), FT_ENOTSUP);
  ck_assert_str_eq(small, "ftrt wa");
  ck_assert_int_eq(ft__cuda_create(&c, NULL, 0), FT_ENOTSUP);
  ck_assert_str_eq(ft__cuda_last_error(NULL), why);

  unsigned char buf[64];
  memset(buf, 0x5a, sizeof buf);
  ck_assert_int_eq(ft__cuda_is_device_ptr(buf), 0);
  ck_assert_int_eq(ft__cuda_is_device_ptr(NULL), 0);
  ck_assert_int_eq(ft__cuda_register_host(NULL, buf, sizeof buf), FT_ENOTSUP);
  ck_assert_int_eq(ft__cuda_unregister_host(NULL, buf), FT_ENOTSUP);
  ck_assert_int_eq(ft__cuda_copy_d2h_async(NULL, buf, buf + 32, 32, NULL),
                   FT_ENOTSUP);
  ck_assert_int_eq(ft__cuda_wait(NULL), FT_ENOTSUP);
  ck_assert_int_eq(ft__cuda_copy_h2d(NULL, buf, buf + 32, 32, NULL),
                   FT_ENOTSUP);
  ft__cuda_destroy(NULL);
  for (size_t i = 0; i < sizeof buf; i++)
    ck_assert_int_eq(buf[i], 0x5a);
}
END_TEST

static void add_tests(TCase *tc) { tcase_add_test(tc, stub_refuses); }

#endif

Suite *unit_suite(unit_prog_t *prog) {
  int p = probe();
  if (p != 0) {
    prog->status = p;
    return NULL;
  }
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("cuda");
  tcase_set_timeout(tc, 120); /* a CUDA context can take seconds to create */
  add_tests(tc);
  suite_add_tcase(s, tc);
  return s;
}
