/*
 * The Snapshot Management Process of a node (runtime/smp.c).  ft_init makes
 * the first rank of each node its SMP, or ft-smp's process there when the
 * job runs one beside the trainers: start creates the store and the
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

/* What a process asks ft_init to make it: whatever its place in the node
 * says (ft_init), or the node's SMP (ft-smp, started beside the trainers:
 * the job's SMPs are then ft-smp's processes, one a node). */
enum { FT__ROLE_ANY = 0, FT__ROLE_SMP = 1 };

/* ft_init for a process of role; an FT__ROLE_SMP process never returns
 * FT_OK (it serves, then exits). */
int ft__init_as(int *argc, char ***argv, ft_ctx_t **ctx, MPI_Comm *app_comm,
                int role);

#endif
