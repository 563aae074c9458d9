/*
 * Encoding a group's stripes across its SMPs (docs/design.md section 6).
 *
 * Every SMP of a group calls ft__exchange_encode for the same version at the
 * same time.  Each sends its k data chunks to the parity holders of the
 * stripes they belong to and accumulates the parity rows it holds as pieces
 * arrive, so that transfer and encode overlap and no whole chunk is ever
 * buffered.  Data is sent straight from the slot; only a small window of
 * received pieces is buffered.
 */
#ifndef FT_EC_EXCHANGE_H
#define FT_EC_EXCHANGE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "base/pulse.h"

typedef struct ft__exchange {
  MPI_Comm comm;
  const int *members; /* [n] node index of each group position */
  const int *order;   /* node index -> rank in comm */
  int n, m, pos;      /* group size, parity count, this SMP's position */
  size_t chunk_bytes;
  size_t piece_bytes;
  const uint8_t *data; /* k = n - m contiguous chunks */
  uint8_t *parity;     /* m contiguous chunks, overwritten */
  uint64_t *data_crc;  /* NULL, or k CRC64s of the data chunks, computed on
                          the way out (no separate pass over the data) */
  ft__pulse_t *pulse;  /* heartbeats: a window may take as long as it
                          needs while no peer falls silent */
  void (*midway)(void *arg); /* optional: called halfway (fault injection) */
  void *midway_arg;
  /* results */
  double t_transfer, t_encode; /* seconds waiting for pieces, encoding */
  double t_crc;                 /* seconds computing data_crc */
  uint64_t bytes_sent, bytes_recv;
} ft__exchange_t;

/* FT_ETIMEDOUT (a peer fell silent: the pulse's silent field says which),
 * FT_EMPI, FT_ENOMEM, FT_EINVAL. */
int ft__exchange_encode(ft__exchange_t *x);

#endif
