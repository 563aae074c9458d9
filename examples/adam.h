/*
 * Adam with its moments sharded across ranks, ZeRO stage 1.
 *
 * The flat parameter vector of n floats is cut into one contiguous slice per
 * rank (adam_slice: the first n % W ranks get one float more).  A rank keeps
 * the moments m and v of its slice only.  One step:
 *
 *   adam_reduce_grad   every rank's gradient, summed for the owned slice
 *                      (a reduce-scatter done as an MPI_Alltoallv plus a sum
 *                      in rank order, so the bits never depend on which
 *                      algorithm MPI picks);
 *   adam_update        Adam on the owned slice of the parameters;
 *   adam_allgather     every rank's updated slice to every rank
 *                      (MPI_Allgatherv in place), parameters replicated again.
 *
 * In a global tensor of n floats, this rank's m (and v) starts at float
 * adam->off: that is the global_offset it is registered with, which lets a
 * different number of ranks restore the moments re-sliced.
 */
#ifndef EXAMPLES_ADAM_H
#define EXAMPLES_ADAM_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

typedef struct adam {
  MPI_Comm comm;
  int rank, size;
  size_t n;               /* floats in the whole parameter vector */
  size_t off, cnt;        /* the owned slice */
  int *counts, *displs;   /* every rank's slice, for the collectives */
  int *rcounts, *rdispls; /* where each rank's piece of ours lands in recv */
  float *m, *v;           /* moments of the owned slice (cnt floats each) */
  float *gsum;            /* summed gradient of the owned slice */
  float *recv; /* size x cnt: every rank's piece of the owned slice */
  float lr, beta1, beta2, eps;
} adam_t;

/* The slice of rank r of W over n floats. */
void adam_slice(size_t n, int size, int r, size_t *off, size_t *cnt);

/* Collective-free; 0 on success, -1 when out of memory or when a count does
 * not fit an int.  Moments start at zero. */
int adam_init(adam_t *a, MPI_Comm comm, size_t n, float lr);
void adam_free(adam_t *a);

/* Collective over comm.  grad: n floats, already scaled so that the sum over
 * ranks is the mean gradient. */
void adam_reduce_grad(adam_t *a, const float *grad);

/* Update the owned slice of params (n floats) at step t >= 1. */
void adam_update(adam_t *a, float *params, uint64_t t);

/* Collective over comm. */
void adam_allgather(adam_t *a, float *params);

#endif
