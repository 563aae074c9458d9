/*
 * ftrt: in-memory fault tolerance for MPI training jobs.
 *
 * A training rank registers the buffers that make up its state; ft_snapshot()
 * captures them into host RAM held by the node's Snapshot Management Process
 * (SMP), which protects that RAM with Reed-Solomon coding across nodes.  After
 * a failure, ft-restore rebuilds lost nodes and ft_restore() loads the state.
 *
 * Conventions of this header:
 *  - every call returns an int status from the FT_ERRNO_MAP list, FT_OK == 0;
 *  - the library never aborts the process: it returns a status, and the
 *    collective calls (ft_init, ft_snapshot, ft_restore, ft_finalize) agree
 *    first, so that every trainer rank returns the same status;
 *  - a handle that a call failed on stays valid unless the call says otherwise.
 */
#ifndef FTRT_H
#define FTRT_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FT_EXTERN __attribute__((visibility("default")))
#else
#define FT_EXTERN
#endif

#define FT_VERSION_MAJOR 0
#define FT_VERSION_MINOR 1

/* The one list of statuses: XX(NAME, value, message). */
#define FT_ERRNO_MAP(XX)                                                       \
  XX(OK, 0, "success")                                                         \
  XX(EINVAL, -1, "invalid argument")                                           \
  XX(ENOMEM, -2, "out of memory")                                              \
  XX(EIO, -3, "input/output error")                                            \
  XX(ENOENT, -4, "no such file or store")                                      \
  XX(ECONFIG, -5, "bad configuration")                                         \
  XX(ENOSNAPSHOT, -6, "no committed snapshot to restore")                      \
  XX(ENOTSUP, -7, "operation not supported by this build")                     \
  XX(ECORRUPT, -8, "data failed an integrity check")                           \
  XX(EMISMATCH, -9, "store belongs to another job or layout")                  \
  XX(ETOOMANY, -10, "more losses than the erasure code can rebuild")           \
  XX(EMPI, -11, "MPI call failed")                                             \
  XX(ETIMEDOUT, -12, "peer did not answer in time")                            \
  XX(ESTATE, -13, "call not valid in the current state")                       \
  XX(EBUSY, -14, "previous snapshot still in progress")                        \
  XX(ERANGE, -15, "value out of range")                                        \
  XX(ENOSPC, -16, "no space left in the store")                                \
  XX(EPEER, -17, "a peer process failed")                                      \
  XX(EINUSE, -18, "store in use by another launch of the job")

typedef enum {
#define FT__ENUM(name, val, msg) FT_##name = (val),
  FT_ERRNO_MAP(FT__ENUM)
#undef FT__ENUM
  FT__ERR_MIN = -18
} ft_status_t;

/* Static strings, never NULL; unknown codes give "unknown error". */
FT_EXTERN const char *ft_strerror(int status);
FT_EXTERN const char *ft_err_name(int status);

/*
 * Replace the functions ftrt allocates its own memory with (libuv's
 * uv_replace_allocator): for an allocator of the application's, or a
 * failing one in out-of-memory tests.  The four must behave as the C
 * library's malloc, realloc, calloc and free; ftrt never asks them for 0
 * bytes.  FT_EINVAL, and nothing replaced, if any is NULL.
 * Call it before ft_init, before any other ftrt call.  Replacing it later is
 * allowed only while no ftrt object is alive (no context, nothing ftrt
 * allocated), because a block is freed by whichever free_fn is in place
 * then.  Not thread-safe: no other thread may be inside ftrt meanwhile.
 * The defaults are malloc, realloc, calloc and free; passing them back
 * restores them.
 */
typedef void *(*ft_malloc_fn)(size_t size);
typedef void *(*ft_realloc_fn)(void *ptr, size_t size);
typedef void *(*ft_calloc_fn)(size_t count, size_t size);
typedef void (*ft_free_fn)(void *ptr);

FT_EXTERN int ft_replace_allocator(ft_malloc_fn malloc_fn,
                                   ft_realloc_fn realloc_fn,
                                   ft_calloc_fn calloc_fn, ft_free_fn free_fn);

/* Opaque per-process context; created by ft_init, freed by ft_finalize. */
typedef struct ft_ctx ft_ctx_t;

typedef enum {
  FT_KIND_PARAM = 0, /* model parameters */
  FT_KIND_OPTIM = 1, /* optimizer state */
  FT_KIND_RNG = 2,   /* random generator state */
  FT_KIND_OTHER = 3  /* counters, data-loader position, ... */
} ft_buf_kind_t;

typedef enum {
  FT_MEM_HOST = 0, /* ordinary host memory */
  FT_MEM_CUDA = 1  /* CUDA device memory (FT_ENOTSUP without CUDA) */
} ft_mem_kind_t;

/*
 * Options of a registered buffer.  Zero-initialise it ({0}) for a host buffer
 * of kind PARAM that belongs to this rank alone.
 *
 * A buffer that is a slice of a global tensor sets global_bytes to the
 * tensor's size and global_offset to where this rank's slice starts; such a
 * buffer can be restored by a different number of ranks (shrink mode), each
 * getting the slice at its new offset.  global_bytes == 0 means "private".
 */
typedef struct {
  ft_buf_kind_t kind;
  ft_mem_kind_t memory;
  uint64_t global_offset;
  uint64_t global_bytes;
  /* cudaStream_t whose queued work a capture of the buffer, and a restore
   * into it, come after; NULL: the legacy default stream.  ftrt copies on
   * the device current on the calling thread when the first FT_MEM_CUDA
   * buffer is registered: every device buffer and its stream must be on
   * that device, and ft_snapshot and ft_restore must be called with it
   * current (as a trainer of one GPU always has it); else the copy's
   * cudaEventRecord fails and the call returns an error */
  void *cuda_stream;
} ft_buf_opts_t;

/*
 * Initialise MPI (if not already) and ftrt.  Splits MPI_COMM_WORLD by node.
 * Each node's SMP is its process of ft-smp when the job was started with
 * one beside the trainers (ft-launch --smp ft-smp), else the node's first
 * rank, which never returns from this call (it serves the node, then
 * finalizes MPI and exits 0).  Every trainer must call it; each returns with
 * *app_comm, a communicator of trainers only, to use instead of
 * MPI_COMM_WORLD.  Collective over MPI_COMM_WORLD.
 * On failure *ctx is NULL, *app_comm is MPI_COMM_NULL and all ranks return the
 * same status.
 */
FT_EXTERN int ft_init(int *argc, char ***argv, ft_ctx_t **ctx,
                      MPI_Comm *app_comm);

/*
 * Register a buffer of this rank's state under a unique name.  The memory
 * stays owned by the caller and must stay valid until ft_finalize.  Every
 * registration must happen before the first ft_snapshot or ft_restore.
 * opts may be NULL (host, PARAM, private).  There is no fixed limit on how
 * many buffers a rank registers: FT_ENOMEM when the table cannot grow.
 */
FT_EXTERN int ft_register(ft_ctx_t *ctx, const char *name, void *ptr,
                          size_t bytes, const ft_buf_opts_t *opts);

/*
 * Start a snapshot of every registered buffer, labelled with a training step.
 * Collective over app_comm.  In sync mode (FT_CAPTURE=sync) the copy has ended
 * when it returns.  In lazy mode (FT_CAPTURE=lazy) buffers of kind RNG and
 * OTHER (generators, counters, small state the next step changes at once)
 * are copied before it returns and may be modified right away; PARAM and
 * OPTIM buffers may still be being copied, and the caller must call
 * ft_fence() before modifying one.  The snapshot is protected
 * once ft_wait_committed() reports its version.  With FT_SNAPSHOT_POLICY=skip
 * a snapshot requested while the previous one is still being protected is
 * skipped by every rank and FT_EBUSY is returned; nothing is corrupted.
 */
FT_EXTERN int ft_snapshot(ft_ctx_t *ctx, uint64_t step);

/* Return once every registered buffer may be modified again, with how the
 * last lazy capture ended (FT_OK, or why the copy failed: that version is
 * then never committed). */
FT_EXTERN int ft_fence(ft_ctx_t *ctx);

/*
 * Wait until the latest started snapshot is COMMITTED on every node, and
 * return its version number in *version (may be NULL).
 */
FT_EXTERN int ft_wait_committed(ft_ctx_t *ctx, uint64_t *version);

/*
 * Fill every registered buffer from the latest committed version held by the
 * node store, and return its training step in *step.  Collective over
 * app_comm.  FT_ENOSNAPSHOT (on every rank) when there is none; buffers are
 * untouched on any failure.
 */
FT_EXTERN int ft_restore(ft_ctx_t *ctx, uint64_t *step);

/*
 * Wait for outstanding work, release the node's SMP, free ctx and finalize
 * MPI if ft_init initialised it.  ctx is invalid afterwards, whatever status.
 */
FT_EXTERN int ft_finalize(ft_ctx_t *ctx);

/*
 * Reading a persisted version (the disk tier, FT_PERSIST_DIR), without MPI
 * and without a job: what ft-persist export and the Python package's
 * load_persisted use.  Not collective; any process of the directory's
 * owner may call it, while the job runs or after it ended.
 *
 * A version is read as tensors: a buffer registered as a slice of a global
 * tensor (global_bytes != 0) once, whole, every rank's slice in its place
 * (where replicated slices overlap, the lowest-offset one's bytes are
 * taken, as a re-slicing restore takes them); a private buffer once for
 * each rank that registered it.  Every byte handed out was read in a 4 MiB
 * block that passed its CRC64.
 */
typedef struct ft_persisted ft_persisted_t;

typedef struct {
  char dir[64]; /* the version's directory under the job's: "v<V>.e<E>" */
  uint64_t version, step, epoch, run;
  uint32_t nnodes, nranks;
  uint64_t bytes; /* every rank file together */
  size_t ntensors;
} ft_persisted_info_t;

typedef struct {
  const char *name; /* as registered; valid until ft_persisted_close */
  int64_t rank;     /* the rank that registered it; -1 for a global tensor */
  uint64_t bytes;   /* the whole tensor's */
  uint32_t kind;    /* ft_buf_kind_t */
  uint32_t nslices; /* global: slices it is put together from; private: 0 */
} ft_persisted_tensor_t;

typedef struct {
  uint32_t rank;          /* the rank that registered the slice */
  uint64_t global_offset; /* its place in the global tensor */
  uint64_t bytes;
} ft_persisted_slice_t;

/*
 * Open a version of job under dir (FT_PERSIST_DIR; the job's directory is
 * dir/job) into *out.  version: NULL or "latest", the newest complete
 * version whose every file verifies (each newer one is read whole and
 * skipped when it fails; on FT_OK msg then names what was skipped and why,
 * and is "" when nothing was); "N", the newest version numbered N (a
 * version number recurs across launch epochs after a restore from disk);
 * "vN.eE", that directory.
 * Statuses: FT_ENOENT no such directory, job or version, or no complete
 * version; FT_ECONFIG dir refused (not this user's private directory, as a
 * store root is checked); FT_ECORRUPT a manifest fails its checks, or
 * ("latest") no version verifies; FT_EMISMATCH a global tensor's slices
 * leave bytes out (msg names them) or disagree on its size or kind, or a
 * name is both a slice and private; FT_EINVAL a malformed version;
 * FT_ENOMEM.  msg (may be NULL) says what, where and why.  *out is NULL on
 * failure.
 */
FT_EXTERN int ft_persisted_open(const char *dir, const char *job,
                                const char *version, ft_persisted_t **out,
                                char *msg, size_t msglen);
FT_EXTERN void ft_persisted_info(const ft_persisted_t *p,
                                 ft_persisted_info_t *info);
/* Tensor i (0 <= i < ntensors) and slice j of a global tensor (0 <= j <
 * nslices, by offset): FT_ERANGE past the end. */
FT_EXTERN int ft_persisted_tensor(const ft_persisted_t *p, size_t i,
                                  ft_persisted_tensor_t *t);
FT_EXTERN int ft_persisted_slice(const ft_persisted_t *p, size_t i, uint32_t j,
                                 ft_persisted_slice_t *s);
/* len bytes of tensor i from offset off into dst: FT_ECORRUPT naming the
 * file and block that fails its CRC (what dst holds is then undefined),
 * FT_ENOENT or FT_EIO for a file gone or unreadable (pruned meanwhile),
 * FT_ERANGE past the tensor's end.  Not thread-safe on one handle. */
FT_EXTERN int ft_persisted_read(ft_persisted_t *p, size_t i, uint64_t off,
                                uint64_t len, void *dst, char *msg,
                                size_t msglen);
/* NULL is allowed. */
FT_EXTERN void ft_persisted_close(ft_persisted_t *p);

#ifdef __cplusplus
}
#endif
#endif /* FTRT_H */
