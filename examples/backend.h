/*
 * The only place where the example trainer talks to ftrt.
 *
 * With use_ftrt the calls go to libftrt: ft_init (this rank may become its
 * node's SMP and never come back), ft_register, ft_restore, ft_fence,
 * ft_snapshot, ft_finalize.  Without it (--no-ftrt) the same training runs on
 * plain MPI: MPI_Init, MPI_COMM_WORLD as the application communicator,
 * nothing registered, nothing saved; that is also the benchmark baseline.
 *
 * Every function returns an ftrt status (FT_OK == 0).
 */
#ifndef EXAMPLES_BACKEND_H
#define EXAMPLES_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "ftrt.h"

typedef struct backend {
  int use_ftrt;
  ft_ctx_t *ctx; /* NULL without ftrt */
  MPI_Comm comm; /* the application communicator */
  int rank, size;
} backend_t;

/* On failure b->comm is MPI_COMM_NULL and MPI may not be initialised. */
int backend_init(backend_t *b, int use_ftrt, int *argc, char ***argv);

/* ft_register with the given kind; global_bytes == 0: private to the rank. */
int backend_register(backend_t *b, const char *name, void *ptr, size_t bytes,
                     ft_buf_kind_t kind, uint64_t global_offset,
                     uint64_t global_bytes);

/* FT_OK with *step set (resume), FT_ENOSNAPSHOT (fresh start; always without
 * ftrt), or the error of ft_restore. */
int backend_restore(backend_t *b, uint64_t *step);

int backend_fence(backend_t *b);
int backend_snapshot(backend_t *b, uint64_t step);

/* Finalizes MPI in both modes; b is unusable afterwards. */
int backend_finalize(backend_t *b);

const char *backend_strerror(int status);

#endif
