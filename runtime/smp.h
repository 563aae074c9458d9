/*
 * The Snapshot Management Process of a node (runtime/smp.c).  ft_init makes
 * the first rank of each node its SMP: start creates the store and the
 * control segment, run serves the node until its trainers finalize.
 */
#ifndef FT_RUNTIME_SMP_H
#define FT_RUNTIME_SMP_H

#include <stddef.h>

#include "runtime/ctx.h"

/* FT_OK, or the error with a message in msg (msglen bytes; empty when there
 * is none to give).  msg may be NULL. */
int ft__smp_start(ft_ctx_t *c, char *msg, size_t msglen);
/* Free what ft__smp_start made (after a failed start: a running SMP exits
 * from ft__smp_run instead); c->smp may be NULL. */
void ft__smp_free(ft_ctx_t *c);
/* Serve the node; finalizes MPI and exits the process, never returns. */
void ft__smp_run(ft_ctx_t *c) __attribute__((noreturn));

#endif
