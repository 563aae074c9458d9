/*
 * ftrt or plain MPI behind one switch; see backend.h.
 */
#include "examples/backend.h"

int backend_init(backend_t *b, int use_ftrt, int *argc, char ***argv) {
  int rc = FT_OK;
  b->use_ftrt = use_ftrt;
  b->ctx = NULL;
  b->comm = MPI_COMM_NULL;
  if (use_ftrt)
    rc = ft_init(argc, argv, &b->ctx, &b->comm);
  else if (MPI_Init(argc, argv) == MPI_SUCCESS)
    b->comm = MPI_COMM_WORLD;
  else
    rc = FT_EMPI;
  if (rc != FT_OK)
    return rc;
  MPI_Comm_rank(b->comm, &b->rank);
  MPI_Comm_size(b->comm, &b->size);
  return FT_OK;
}

int backend_register(backend_t *b, const char *name, void *ptr, size_t bytes,
                     ft_buf_kind_t kind, uint64_t global_offset,
                     uint64_t global_bytes) {
  ft_buf_opts_t opts = {0};
  if (!b->use_ftrt)
    return FT_OK;
  opts.kind = kind;
  opts.memory = FT_MEM_HOST;
  opts.global_offset = global_offset;
  opts.global_bytes = global_bytes;
  return ft_register(b->ctx, name, ptr, bytes, &opts);
}

int backend_restore(backend_t *b, uint64_t *step) {
  return b->use_ftrt ? ft_restore(b->ctx, step) : FT_ENOSNAPSHOT;
}

int backend_fence(backend_t *b) {
  return b->use_ftrt ? ft_fence(b->ctx) : FT_OK;
}

int backend_snapshot(backend_t *b, uint64_t step) {
  return b->use_ftrt ? ft_snapshot(b->ctx, step) : FT_OK;
}

int backend_finalize(backend_t *b) {
  int rc = FT_OK;
  if (b->use_ftrt)
    rc = ft_finalize(b->ctx);
  else if (MPI_Finalize() != MPI_SUCCESS)
    rc = FT_EMPI;
  b->ctx = NULL;
  b->comm = MPI_COMM_NULL;
  return rc;
}

const char *backend_strerror(int status) { return ft_strerror(status); }
