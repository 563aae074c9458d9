/*
 * Agreement: after any step that can fail on some ranks, every rank of the
 * communicator learns the same status, so none is left waiting in a
 * collective the others abandoned (CONTRIBUTING.md rule 5).
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

/* The same, waiting in naps instead of spinning in MPI: the allreduce is
 * started non-blocking and tested between naps that grow from 10 us to
 * FT_PULSE_NAP_SHORT (base/pulse.h).  For agreements where some ranks wait
 * long for others that work on the same CPUs (ft_init while ranks still
 * start, a recovery's rebuild while one rank shapes a slot): a rank
 * spinning there, even yielding, takes CPU from the one it waits for (8
 * ranks on 2 CPUs of an ft-cluster host).  Costs a waiting rank at most a
 * nap more a round of the allreduce; not for the training loop's short
 * agreements. */
int ft__agree_napping(MPI_Comm comm, int status);
int ft__agree_msg_napping(MPI_Comm comm, int status, char *msg, size_t msglen);

#endif
