/*
 * CUDA capture path: copies between device buffers and the host store.
 *
 * A trainer's device buffers are captured with cudaMemcpyAsync on a private
 * stream straight into the store segment, which is pinned once with
 * cudaHostRegister so that the copy goes by DMA, with no staging bounce
 * (docs/design.md section 5).  Each copy is ordered after the work already
 * queued on the trainer's stream and after nothing else, so the next forward
 * pass overlaps it (lazy capture).
 *
 * Two implementations share this header: cuda/cuda.c (configure found CUDA)
 * and cuda/cuda_stub.c, where every call returns FT_ENOTSUP.  Callers never
 * test for CUDA at compile time.
 *
 * Threads: a handle is used by one thread at a time, one whose current device
 * is the one the handle was created on (the trainer's thread, normally).
 */
#ifndef FT_CUDA_CUDA_H
#define FT_CUDA_CUDA_H

#include <stddef.h>

/* Opaque per-process CUDA state: private stream, events, first error. */
typedef struct ft__cuda ft__cuda_t;

/*
 * Create the state on the calling thread's current device.  FT_ENOTSUP when
 * ftrt was built without CUDA ("ftrt was built without CUDA") or when no
 * device can be used ("no CUDA device: ..."); another status when the CUDA
 * runtime fails otherwise.  On any failure *out is NULL and msg holds a
 * one-line reason; on success msg is "".  msg may be NULL.
 */
int ft__cuda_create(ft__cuda_t **out, char *msg, size_t msglen);

/* Make the handle's device current on the calling thread (a thread of the
 * library's own, such as lazy capture's copier, starts on device 0).  No-op
 * for NULL and in the stub. */
void ft__cuda_bind_thread(const ft__cuda_t *c);

/* Wait for queued copies, then free everything.  c may be NULL. */
void ft__cuda_destroy(ft__cuda_t *c);

/*
 * 1 when ptr is memory a device owns (cudaMalloc'ed or managed), 0 for host
 * memory, pinned or not, for NULL, and for anything CUDA does not know.
 * Always 0 in the stub.  It starts the CUDA runtime (a context on the current
 * device) if nothing has: ask only about buffers declared as CUDA memory.
 */
int ft__cuda_is_device_ptr(const void *ptr);

/*
 * Pin a host range (a memory-mapped store segment) so that copies to and from
 * it go by DMA.  Done once per segment; the range must be unregistered with
 * ft__cuda_unregister_host (same ptr) before it is unmapped.  A range that
 * overlaps one already registered is refused (FT_EINVAL).
 */
int ft__cuda_register_host(ft__cuda_t *c, void *ptr, size_t len);
int ft__cuda_unregister_host(ft__cuda_t *c, void *ptr);

/*
 * Queue a copy of len bytes from device memory src_dev into host memory
 * dst_host on the private stream, ordered after the work queued so far on
 * user_stream (a cudaStream_t passed as void *; NULL is the legacy default
 * stream of the current device), and not after work queued there later.
 * Returns at once (at once only when dst_host is pinned; into pageable memory
 * CUDA copies synchronously).  Neither buffer may be touched until
 * ft__cuda_wait returns.  len 0 queues nothing.  src_dev that is not device
 * memory gives FT_EINVAL.  A failure here is also returned by the next
 * ft__cuda_wait.
 */
int ft__cuda_copy_d2h_async(ft__cuda_t *c, void *dst_host, const void *src_dev,
                            size_t len, void *user_stream);

/*
 * Wait for every copy queued since the last wait; returns the first error of
 * any of them (queueing included), then starts afresh.  FT_OK with nothing
 * queued.
 */
int ft__cuda_wait(ft__cuda_t *c);

/*
 * Copy len bytes from host memory into device memory dst_dev and wait for it
 * (restore).  Ordered after the copies already queued on the private stream
 * and after the work queued so far on user_stream (as for a capture: the
 * buffer's registered stream; NULL is the legacy default stream), so that
 * an earlier write of the application's still in flight cannot land over
 * the restored bytes.  dst_dev that is not device memory gives FT_EINVAL.
 */
int ft__cuda_copy_h2d(ft__cuda_t *c, void *dst_dev, const void *src_host,
                      size_t len, void *user_stream);

/*
 * The reason for the last failure on c, with the CUDA error name and message
 * where CUDA gave one ("cudaMemcpyAsync: cudaErrorInvalidValue: invalid
 * argument"); "" when nothing failed.  Valid until the next call on c.
 * c may be NULL.
 */
const char *ft__cuda_last_error(const ft__cuda_t *c);

#endif
