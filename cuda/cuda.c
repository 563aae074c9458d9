/*
 * CUDA capture path, built when configure found the CUDA runtime.
 *
 * Only the runtime API, from C: the library needs no nvcc.  One private
 * non-blocking stream carries every copy.  Non-blocking matters: a stream
 * created plainly synchronises with the legacy default stream, so the
 * trainer's next kernels there would wait for the capture, which is the
 * overlap lazy mode exists for.  Ordering after the trainer's work is made
 * explicit instead: an event recorded on the trainer's stream, which the
 * private stream waits on before the copy.  One event serves every copy,
 * since cudaStreamWaitEvent takes the state of the event at the time of the
 * call, and a later record does not change what was waited for.
 *
 * Errors: each failed CUDA call becomes a status (status_of) and leaves its
 * name and message in c->err, and the runtime's per-thread last error is
 * cleared so that the trainer's own cudaGetLastError does not see ours.  A
 * copy that fails to queue is also kept as the first error of the batch, so
 * that ft__cuda_wait reports it even to a caller that checks only the wait.
 */
#include "cuda/cuda.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ftrt.h"

struct ft__cuda {
  int device;          /* current when the handle was made */
  cudaStream_t stream; /* private, non-blocking: every copy goes here */
  cudaEvent_t ordered; /* recorded on the trainer's stream before a copy */
  int first;           /* first error since the last wait, FT_OK if none */
  char first_err[256]; /* its message */
  char err[256];       /* message of the last failure, "" if none */
};

static int status_of(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return FT_OK;
  case cudaErrorMemoryAllocation:
    return FT_ENOMEM;
  case cudaErrorInvalidValue:
  case cudaErrorInvalidDevicePointer:
  case cudaErrorInvalidMemcpyDirection:
  case cudaErrorInvalidResourceHandle:
  case cudaErrorInvalidDevice:
  case cudaErrorHostMemoryAlreadyRegistered:
  case cudaErrorHostMemoryNotRegistered:
    return FT_EINVAL;
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorDevicesUnavailable:
  case cudaErrorSystemDriverMismatch:
  case cudaErrorCompatNotSupportedOnDevice:
  case cudaErrorNotSupported:
    return FT_ENOTSUP;
  default:
    return FT_EIO;
  }
}

/* Record a failed CUDA call on c and return its status. */
static int record_cuda_error(ft__cuda_t *c, cudaError_t e, const char *what) {
  int st = ft__msgf(status_of(e), c->err, sizeof c->err, "%s: %s: %s", what,
                    cudaGetErrorName(e), cudaGetErrorString(e));
  (void)cudaGetLastError();
  return st;
}

/* A failure of ours, not CUDA's. */
static int refuse(ft__cuda_t *c, const char *what, const void *ptr) {
  return ft__msgf(FT_EINVAL, c->err, sizeof c->err,
                  "%s %p is not CUDA device memory", what, ptr);
}

/* Keep the first failure of a batch of queued copies for ft__cuda_wait. */
static int keep_first(ft__cuda_t *c, int st) {
  if (st != FT_OK && c->first == FT_OK) {
    c->first = st;
    memcpy(c->first_err, c->err, sizeof c->first_err);
  }
  return st;
}

int ft__cuda_is_device_ptr(const void *ptr) {
  struct cudaPointerAttributes a;
  if (!ptr)
    return 0;
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* Any failure to see a device means "no CUDA here", whatever CUDA calls it. */
static int find_device(char *msg, size_t msglen) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n == 0)
    e = cudaErrorNoDevice;
  if (e == cudaSuccess)
    return FT_OK;
  ft__msgf(FT_ENOTSUP, msg, msglen, "no CUDA device: %s: %s",
           cudaGetErrorName(e), cudaGetErrorString(e));
  (void)cudaGetLastError();
  return FT_ENOTSUP;
}

int ft__cuda_create(ft__cuda_t **out, char *msg, size_t msglen) {
  *out = NULL;
  ft__msgf(FT_OK, msg, msglen, "%s", "");
  ft__cuda_t *c = ft__calloc(1, sizeof *c);
  if (!c)
    return ft__msgf(FT_ENOMEM, msg, msglen, "out of memory for the CUDA state");
  int st = find_device(msg, msglen);
  if (st != FT_OK) {
    ft__free(c);
    return st;
  }
  cudaError_t e = cudaGetDevice(&c->device);
  const char *what = "cudaGetDevice";
  if (e == cudaSuccess) {
    e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    what = "cudaStreamCreateWithFlags";
  }
  if (e != cudaSuccess) {
    st = record_cuda_error(c, e, what);
    ft__msgf(st, msg, msglen, "%s", c->err);
    ft__free(c);
    return st;
  }
  e = cudaEventCreateWithFlags(&c->ordered, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    st = record_cuda_error(c, e, "cudaEventCreateWithFlags");
    ft__msgf(st, msg, msglen, "%s", c->err);
    (void)cudaStreamDestroy(c->stream);
    ft__free(c);
    return st;
  }
  *out = c;
  return FT_OK;
}

void ft__cuda_bind_thread(const ft__cuda_t *c) {
  /* A failure leaves the thread on its device; the copies then go on the
   * handle's stream all the same, and CUDA reports what fails there. */
  if (c && cudaSetDevice(c->device) != cudaSuccess)
    (void)cudaGetLastError();
}

void ft__cuda_destroy(ft__cuda_t *c) {
  if (!c)
    return;
  /* The copies write into store segments the caller unmaps next. */
  (void)cudaStreamSynchronize(c->stream);
  (void)cudaEventDestroy(c->ordered);
  (void)cudaStreamDestroy(c->stream);
  (void)cudaGetLastError();
  ft__free(c);
}

int ft__cuda_register_host(ft__cuda_t *c, void *ptr, size_t len) {
  if (!c)
    return FT_EINVAL;
  if (!ptr || len == 0)
    return ft__msgf(FT_EINVAL, c->err, sizeof c->err,
                    "cannot pin an empty host range");
  /* Portable: pinned for every device's context, not only the current. */
  cudaError_t e = cudaHostRegister(ptr, len, cudaHostRegisterPortable);
  return e == cudaSuccess ? FT_OK : record_cuda_error(c, e, "cudaHostRegister");
}

int ft__cuda_unregister_host(ft__cuda_t *c, void *ptr) {
  if (!c)
    return FT_EINVAL;
  cudaError_t e = cudaHostUnregister(ptr);
  return e == cudaSuccess ? FT_OK
                          : record_cuda_error(c, e, "cudaHostUnregister");
}

static int queue_d2h(ft__cuda_t *c, void *dst, const void *src, size_t len,
                     cudaStream_t user) {
  if (!dst || !src)
    return ft__msgf(FT_EINVAL, c->err, sizeof c->err,
                    "NULL buffer for a %zu-byte copy", len);
  if (!ft__cuda_is_device_ptr(src))
    return refuse(c, "source", src);
  cudaError_t e = cudaEventRecord(c->ordered, user);
  if (e != cudaSuccess)
    return record_cuda_error(c, e, "cudaEventRecord on the trainer's stream");
  e = cudaStreamWaitEvent(c->stream, c->ordered, 0);
  if (e != cudaSuccess)
    return record_cuda_error(c, e, "cudaStreamWaitEvent");
  e = cudaMemcpyAsync(dst, src, len, cudaMemcpyDeviceToHost, c->stream);
  return e == cudaSuccess ? FT_OK : record_cuda_error(c, e, "cudaMemcpyAsync");
}

int ft__cuda_copy_d2h_async(ft__cuda_t *c, void *dst_host, const void *src_dev,
                            size_t len, void *user_stream) {
  if (!c)
    return FT_EINVAL;
  if (len == 0)
    return FT_OK;
  return keep_first(
      c, queue_d2h(c, dst_host, src_dev, len, (cudaStream_t)user_stream));
}

int ft__cuda_wait(ft__cuda_t *c) {
  if (!c)
    return FT_EINVAL;
  cudaError_t e = cudaStreamSynchronize(c->stream);
  if (e != cudaSuccess)
    keep_first(c, record_cuda_error(c, e, "cudaStreamSynchronize"));
  int st = c->first;
  if (st != FT_OK)
    memcpy(c->err, c->first_err, sizeof c->err);
  c->first = FT_OK;
  return st;
}

int ft__cuda_copy_h2d(ft__cuda_t *c, void *dst_dev, const void *src_host,
                      size_t len, void *user_stream) {
  if (!c)
    return FT_EINVAL;
  if (len == 0)
    return FT_OK;
  if (!dst_dev || !src_host)
    return ft__msgf(FT_EINVAL, c->err, sizeof c->err,
                    "NULL buffer for a %zu-byte copy", len);
  if (!ft__cuda_is_device_ptr(dst_dev))
    return refuse(c, "destination", dst_dev);
  cudaError_t e = cudaEventRecord(c->ordered, (cudaStream_t)user_stream);
  if (e != cudaSuccess)
    return record_cuda_error(c, e, "cudaEventRecord on the trainer's stream");
  e = cudaStreamWaitEvent(c->stream, c->ordered, 0);
  if (e != cudaSuccess)
    return record_cuda_error(c, e, "cudaStreamWaitEvent");
  e = cudaMemcpyAsync(dst_dev, src_host, len, cudaMemcpyHostToDevice,
                      c->stream);
  if (e != cudaSuccess)
    return record_cuda_error(c, e, "cudaMemcpyAsync");
  e = cudaStreamSynchronize(c->stream);
  return e == cudaSuccess ? FT_OK
                          : record_cuda_error(c, e, "cudaStreamSynchronize");
}

const char *ft__cuda_last_error(const ft__cuda_t *c) { return c ? c->err : ""; }
