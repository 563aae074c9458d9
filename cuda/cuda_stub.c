/*
 * CUDA capture path when ftrt was built without CUDA: every call refuses with
 * FT_ENOTSUP, so a trainer that registers device memory learns why, and no
 * caller needs to know at compile time which build it is in.
 */
#include "cuda/cuda.h"

#include "base/error.h"
#include "ftrt.h"

#define FT__NO_CUDA "ftrt was built without CUDA"

int ft__cuda_create(ft__cuda_t **out, char *msg, size_t msglen) {
  *out = NULL;
  return ft__msgf(FT_ENOTSUP, msg, msglen, "%s", FT__NO_CUDA);
}

void ft__cuda_bind_thread(const ft__cuda_t *c) { (void)c; }

void ft__cuda_destroy(ft__cuda_t *c) { (void)c; }

int ft__cuda_is_device_ptr(const void *ptr) {
  (void)ptr;
  return 0;
}

int ft__cuda_register_host(ft__cuda_t *c, void *ptr, size_t len) {
  (void)c, (void)ptr, (void)len;
  return FT_ENOTSUP;
}

int ft__cuda_unregister_host(ft__cuda_t *c, void *ptr) {
  (void)c, (void)ptr;
  return FT_ENOTSUP;
}

int ft__cuda_copy_d2h_async(ft__cuda_t *c, void *dst_host, const void *src_dev,
                            size_t len, void *user_stream) {
  (void)c, (void)dst_host, (void)src_dev, (void)len, (void)user_stream;
  return FT_ENOTSUP;
}

int ft__cuda_wait(ft__cuda_t *c) {
  (void)c;
  return FT_ENOTSUP;
}

int ft__cuda_copy_h2d(ft__cuda_t *c, void *dst_dev, const void *src_host,
                      size_t len, void *user_stream) {
  (void)c, (void)dst_dev, (void)src_host, (void)len, (void)user_stream;
  return FT_ENOTSUP;
}

const char *ft__cuda_last_error(const ft__cuda_t *c) {
  (void)c;
  return FT__NO_CUDA;
}
