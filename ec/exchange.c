/*
 * Pipelined stripe encoding.  Chunks are cut into pieces; for piece q every
 * SMP posts the receives of the pieces it needs and the sends of the pieces
 * it owes, then encodes piece q-1 while q is in flight (two windows).  A
 * holder of parity row j of a stripe owns one row of the Cauchy matrix only,
 * so it updates its own row only (ft__codec_encode_update_row), not all m.
 *
 * Tags carry the piece number, the parity row at the receiver and the data
 * index, so that pieces from one peer for different stripes never mix.
 */
#include "ec/exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "ec/codec.h"
#include "ec/crc.h"
#include "ftrt.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

typedef struct window {
  MPI_Request *req; /* m*k receives then k*m sends */
  int *peer;        /* [2*k*m] the rank each request is with */
  uint8_t *buf;     /* m*k received pieces */
  size_t q, len;
  int active;
} window_t;

typedef struct run {
  ft__exchange_t *x;
  int k;
  size_t tag_pieces; /* piece numbers the tag can hold */
  ft__codec_t *codec;
  window_t w[2];
} run_t;

/* Pieces between two SMPs with one (row, data index) match in order (MPI
 * does not overtake), so the piece number in the tag only has to tell the
 * two windows apart, and not even that (posting order decides); it wraps
 * within what MPI_TAG_UB allows (2^15 - 1 at
 * least, 2^23 - 1 on pml/ucx, 2^31 - 1 on ob1). */
static int tag_of(const run_t *r, size_t q, int j, int d) {
  return (int)(((q % r->tag_pieces) << 16) | ((unsigned)j << 8) | (unsigned)d);
}

static int peer_rank(const ft__exchange_t *x, int pos) {
  return x->order[x->members[mod(pos, x->n)]];
}

static int post(run_t *r, window_t *w, size_t q) {
  ft__exchange_t *x = r->x;
  int k = r->k, m = x->m, nr = 0;
  w->q = q;
  w->len = x->chunk_bytes - q * x->piece_bytes;
  if (w->len > x->piece_bytes)
    w->len = x->piece_bytes;
  /* Receive data index d of the stripe whose parity row j we hold. */
  for (int j = 0; j < m; j++) {
    int s = mod(x->pos - j, x->n);
    for (int d = 0; d < k; d++, nr++)
      if (MPI_Irecv(w->buf + (size_t)nr * x->piece_bytes, (int)w->len,
                    MPI_BYTE, w->peer[nr] = peer_rank(x, s + m + d),
                    tag_of(r, q, j, d), x->comm, &w->req[nr]) != MPI_SUCCESS)
        return FT_EMPI;
  }
  /* Send our chunk d to every parity holder of its stripe. */
  for (int d = 0; d < k; d++) {
    int s = mod(x->pos - m - d, x->n);
    const uint8_t *src = x->data + (size_t)d * x->chunk_bytes + q * x->piece_bytes;
    if (x->data_crc) { /* pieces go out in order: the CRC chains */
      double t = now();
      x->data_crc[d] = ft__crc64(x->data_crc[d], src, w->len);
      x->t_crc += now() - t;
    }
    for (int j = 0; j < m; j++, nr++) {
      /* A send's completion is no sign of the peer's life (pulse.h). */
      w->peer[nr] = -1;
      if (MPI_Isend(src, (int)w->len, MPI_BYTE, peer_rank(x, s + j),
                    tag_of(r, q, j, d), x->comm, &w->req[nr]) != MPI_SUCCESS)
        return FT_EMPI;
    }
  }
  x->bytes_sent += (uint64_t)w->len * (uint64_t)(k * m);
  x->bytes_recv += (uint64_t)w->len * (uint64_t)(k * m);
  w->active = 1;
  return FT_OK;
}

/* Wait for every request of w without spinning a core, as long as no peer
 * falls silent (base/pulse.h; short naps: a piece of 1 MiB lands in ~1 ms).
 * FT_ETIMEDOUT: the pulse's silent field says which peer. */
static int wait_window(run_t *r, window_t *w) {
  double start = now();
  int rc = ft__pulse_wait(r->x->pulse, 2 * r->k * r->x->m, w->req, w->peer,
                          200e-6);
  r->x->t_transfer += now() - start;
  return rc;
}

static void encode_window(run_t *r, window_t *w) {
  ft__exchange_t *x = r->x;
  double t = now();
  for (int j = 0; j < x->m; j++) {
    uint8_t *out = x->parity + (size_t)j * x->chunk_bytes + w->q * x->piece_bytes;
    for (int d = 0; d < r->k; d++)
      ft__codec_encode_update_row(
          r->codec, w->len, d, j,
          w->buf + (size_t)(j * r->k + d) * x->piece_bytes, out);
  }
  x->t_encode += now() - t;
  w->active = 0;
}

static int finish(run_t *r, window_t *w) {
  if (!w->active)
    return FT_OK;
  int rc = wait_window(r, w);
  if (rc == FT_OK)
    encode_window(r, w);
  return rc;
}

static int alloc_windows(run_t *r) {
  size_t nreq = (size_t)(2 * r->k * r->x->m);
  for (int i = 0; i < 2; i++) {
    r->w[i].req = ft__malloc(nreq * sizeof(MPI_Request));
    r->w[i].peer = ft__malloc(nreq * sizeof(int));
    r->w[i].buf = ft__malloc((size_t)(r->k * r->x->m) * r->x->piece_bytes);
    if (!r->w[i].req || !r->w[i].peer || !r->w[i].buf)
      return FT_ENOMEM;
    for (size_t q = 0; q < nreq; q++)
      r->w[i].req[q] = MPI_REQUEST_NULL;
  }
  return FT_OK;
}

static void free_run(run_t *r) {
  for (int i = 0; i < 2; i++) {
    ft__free(r->w[i].req);
    ft__free(r->w[i].peer);
    ft__free(r->w[i].buf);
  }
  ft__codec_destroy(r->codec);
}

static int pipeline(run_t *r) {
  ft__exchange_t *x = r->x;
  size_t npieces = (x->chunk_bytes + x->piece_bytes - 1) / x->piece_bytes;
  int rc = FT_OK;
  for (size_t q = 0; q < npieces && rc == FT_OK; q++) {
    window_t *w = &r->w[q % 2];
    if (q == npieces / 2 && x->midway)
      x->midway(x->midway_arg);
    rc = finish(r, w); /* piece q-2 */
    if (rc == FT_OK)
      rc = post(r, w, q);
    if (rc == FT_OK && q > 0)
      rc = finish(r, &r->w[(q - 1) % 2]);
  }
  for (int i = 0; i < 2 && rc == FT_OK; i++)
    rc = finish(r, &r->w[i]);
  return rc;
}

int ft__exchange_encode(ft__exchange_t *x) {
  if (!x || !x->pulse || x->n < 1 || x->m < 0 || x->m >= x->n || x->pos < 0 ||
      x->pos >= x->n || x->piece_bytes == 0 || x->piece_bytes > (1u << 30))
    return FT_EINVAL;
  x->t_transfer = x->t_encode = x->t_crc = 0;
  x->bytes_sent = x->bytes_recv = 0;
  if (x->m == 0 || x->chunk_bytes == 0)
    return FT_OK;
  run_t r = {.x = x, .k = x->n - x->m, .tag_pieces = 1};
  int *ub, flag = 0;
  MPI_Comm_get_attr(x->comm, MPI_TAG_UB, &ub, &flag);
  if (flag && *ub >= (1 << 17))
    r.tag_pieces = (size_t)(*ub >> 16) + 1;
  if (x->data_crc)
    memset(x->data_crc, 0, (size_t)r.k * sizeof(uint64_t));
  memset(x->parity, 0, (size_t)x->m * x->chunk_bytes);
  int rc = ft__codec_create(r.k, x->m, &r.codec);
  if (rc == FT_OK)
    rc = alloc_windows(&r);
  if (rc == FT_OK && (rc = pipeline(&r)) != FT_OK) {
    /* Receives may still be posted into the windows: keep them (the SMP
     * stops on any encode error) rather than free live buffers. */
    ft__codec_destroy(r.codec);
    return rc;
  }
  free_run(&r); /* nothing was posted if the allocations failed */
  return rc;
}
