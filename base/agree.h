/*
 * Agreement: after any step that can fail on some ranks, every rank of the
 * communicator learns the same status, so none is left waiting in a
 * collective the others abandoned (STYLE.md 5).
 */
#ifndef FT_BASE_AGREE_H
#define FT_BASE_AGREE_H

#include <mpi.h>
#include <stddef.h>

/* Collective over comm: the most negative status of all ranks (FT_EMPI when
 * MPI itself fails). */
int ft__agree(MPI_Comm comm, int status);

/* ft__agree, and when the result is a failure every rank's msg (msglen
 * bytes, the same on every rank) becomes the message of the lowest rank that
 * failed with a non-empty one; left as is when none did.  msg may be NULL
 * (or msglen 0) only when it is on every rank: then this is ft__agree. */
int ft__agree_msg(MPI_Comm comm, int status, char *msg, size_t msglen);

#endif
