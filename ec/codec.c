/*
 * The codec keeps the (k+m) x k Cauchy generator matrix and ISA-L's expanded
 * encode tables, built once.  Decoding picks the first k surviving chunks as
 * sources, inverts their k x k submatrix (gf_invert_matrix), and derives
 * one row of coefficients per erased chunk: a row of the inverse for lost
 * data, the parity's generator row times the inverse for lost parity, so
 * one ec_encode_data pass rebuilds both.  Those
 * tables depend only on the erasure pattern, which stays the same across all
 * the pieces and stripes of one recovery, so the last pattern's tables are
 * cached in a block the codec points to (decode takes a const codec).
 *
 * ISA-L's expanded tables are its own: ec_init_tables(k, rows, ...) needs
 * room for 32 bytes a coefficient, but what it writes there depends on the
 * library and the CPU (2.31 with GFNI keeps 8 bytes a coefficient, 2.30 and
 * 2.32 keep 32).  So no table is ever found by arithmetic inside ISA-L's
 * output: each one a call needs (all m rows, one row, one coefficient) is
 * the whole output of an ec_init_tables call of its own, and ISA-L alone
 * indexes within it (vec_i of ec_encode_data_update).  The room of such
 * tables side by side is TBL_ROOM bytes a coefficient.
 *
 * Every buffer is walked in pieces (see ft__codec_set_piece_bytes): ISA-L
 * makes one pass over the sources per group of at most 4-6 outputs, so for
 * wide parity the sources of a piece are still cached on the next pass.
 */
#include "ec/codec.h"

#include <string.h>

#include <isa-l/erasure_code.h>

#include "ec/upper.h"

#include "base/alloc.h"
#include "ftrt.h"

#define TBL_ROOM 32            /* ec_init_tables' room per coefficient */
#define PIECE_ALIGN 64         /* ISA-L's widest vector; keeps pieces aligned */
#define PIECE_MAX (1u << 30)   /* well inside ISA-L's int length */
#define PIECE_CACHE (1u << 20) /* cache the k+m pieces may fill */
#define PIECE_MIN (16u << 10)
#define PIECE_DEFAULT_MAX (256u << 10)

/* Tables for one erasure pattern; valid while nerased > 0. */
struct dec_cache {
  int nerased;
  unsigned char erased[FT_EC_MAX_CHUNKS]; /* in the caller's order */
  unsigned char src[FT_EC_MAX_CHUNKS];    /* the k surviving sources */
  unsigned char *sub;                     /* k x k, destroyed by inversion */
  unsigned char *inv;                     /* k x k */
  unsigned char *rows;                    /* nerased x k coefficients */
  unsigned char *tbls;                    /* all the rows, expanded */
  unsigned char *row_tbls;                /* row r alone: r * k * TBL_ROOM */
  unsigned char *term_tbls; /* coefficient (r, s) alone: (r * k + s) * ROOM */
};

struct ft__codec {
  int k, m;
  size_t piece;
  unsigned char *matrix;   /* (k+m) x k: identity, then m Cauchy rows */
  unsigned char *enc_tbls; /* the m Cauchy rows, expanded */
  unsigned char *enc_row;  /* row j alone, at j * k * TBL_ROOM */
  struct dec_cache *dec;
};

static size_t default_piece(int n) {
  size_t p = PIECE_CACHE / (size_t)n / PIECE_ALIGN * PIECE_ALIGN;
  if (p < PIECE_MIN)
    return PIECE_MIN;
  return p > PIECE_DEFAULT_MAX ? PIECE_DEFAULT_MAX : p;
}

static void dec_free(struct dec_cache *d) {
  if (!d)
    return;
  ft__free(d->sub);
  ft__free(d->inv);
  ft__free(d->rows);
  ft__free(d->tbls);
  ft__free(d->row_tbls);
  ft__free(d->term_tbls);
  ft__free(d);
}

static struct dec_cache *dec_alloc(int k, int m) {
  struct dec_cache *d = ft__calloc(1, sizeof(*d));
  if (!d)
    return NULL;
  size_t kk = (size_t)k * (size_t)k, mk = (size_t)(m ? m : 1) * (size_t)k;
  d->sub = ft__malloc(kk);
  d->inv = ft__malloc(kk);
  d->rows = ft__malloc(mk);
  d->tbls = ft__malloc(mk * TBL_ROOM);
  d->row_tbls = ft__malloc(mk * TBL_ROOM);
  d->term_tbls = ft__malloc(mk * TBL_ROOM);
  if (!d->sub || !d->inv || !d->rows || !d->tbls || !d->row_tbls ||
      !d->term_tbls) {
    dec_free(d);
    return NULL;
  }
  return d;
}

void ft__codec_destroy(ft__codec_t *c) {
  if (!c)
    return;
  ft__free(c->matrix);
  ft__free(c->enc_tbls);
  ft__free(c->enc_row);
  dec_free(c->dec);
  ft__free(c);
}

int ft__codec_create(int k, int m, ft__codec_t **out) {
  if (!out)
    return FT_EINVAL;
  *out = NULL;
  if (k < 1 || m < 0 || k + m > FT_EC_MAX_CHUNKS)
    return FT_EINVAL;
  ft__codec_t *c = ft__calloc(1, sizeof(*c));
  if (!c)
    return FT_ENOMEM;
  c->k = k;
  c->m = m;
  c->piece = default_piece(k + m);
  c->matrix = ft__malloc((size_t)(k + m) * (size_t)k);
  c->enc_tbls = ft__malloc((size_t)(m ? m : 1) * (size_t)k * TBL_ROOM);
  c->enc_row = ft__malloc((size_t)(m ? m : 1) * (size_t)k * TBL_ROOM);
  c->dec = dec_alloc(k, m);
  if (!c->matrix || !c->enc_tbls || !c->enc_row || !c->dec) {
    ft__codec_destroy(c);
    return FT_ENOMEM;
  }
  gf_gen_cauchy1_matrix(c->matrix, k + m, k);
  if (m > 0)
    ec_init_tables(k, m, c->matrix + (size_t)k * (size_t)k, c->enc_tbls);
  for (int j = 0; j < m; j++)
    ec_init_tables(k, 1, c->matrix + (size_t)(k + j) * (size_t)k,
                   c->enc_row + (size_t)j * (size_t)k * TBL_ROOM);
  *out = c;
  return FT_OK;
}

int ft__codec_k(const ft__codec_t *c) { return c ? c->k : FT_EINVAL; }
int ft__codec_m(const ft__codec_t *c) { return c ? c->m : FT_EINVAL; }

int ft__codec_set_piece_bytes(ft__codec_t *c, size_t bytes) {
  if (!c || bytes % PIECE_ALIGN || bytes > PIECE_MAX)
    return FT_EINVAL;
  c->piece = bytes ? bytes : default_piece(c->k + c->m);
  return FT_OK;
}

size_t ft__codec_piece_bytes(const ft__codec_t *c) { return c ? c->piece : 0; }

/* dst[r] = sum over i of coefficient(r, i) * src[i], piece by piece. */
static void dot_pieces(size_t piece, size_t len, int nsrc, int rows,
                       unsigned char *tbls, unsigned char *const *src,
                       unsigned char *const *dst) {
  unsigned char *s[FT_EC_MAX_CHUNKS], *d[FT_EC_MAX_CHUNKS];
  for (size_t off = 0; off < len; off += piece) {
    size_t step = len - off < piece ? len - off : piece;
    for (int i = 0; i < nsrc; i++)
      s[i] = src[i] + off;
    for (int r = 0; r < rows; r++)
      d[r] = dst[r] + off;
    ec_encode_data((int)step, nsrc, rows, tbls, s, d);
  }
  ft__isal_done(); /* once a call: pieces run back to back in ISA-L */
}

/* dst[r] ^= coefficient(r, vec_i) * src, piece by piece. */
static void mad_pieces(size_t piece, size_t len, int k, int vec_i, int rows,
                       unsigned char *tbls, unsigned char *src,
                       unsigned char *const *dst) {
  unsigned char *d[FT_EC_MAX_CHUNKS];
  for (size_t off = 0; off < len; off += piece) {
    size_t step = len - off < piece ? len - off : piece;
    for (int r = 0; r < rows; r++)
      d[r] = dst[r] + off;
    ec_encode_data_update((int)step, k, rows, vec_i, tbls, src + off, d);
  }
  ft__isal_done();
}

/* A NULL array of n > 0 buffers, or a NULL buffer in it when there are
 * bytes to touch. */
static int bad_bufs(const uint8_t *const *bufs, int n, size_t len) {
  if (!bufs)
    return n > 0;
  for (int i = 0; len > 0 && i < n; i++)
    if (!bufs[i])
      return 1;
  return 0;
}

int ft__codec_encode(const ft__codec_t *c, size_t len,
                     const uint8_t *const *data, uint8_t *const *parity) {
  if (!c || bad_bufs(data, c->k, len) ||
      bad_bufs((const uint8_t *const *)parity, c->m, len))
    return FT_EINVAL;
  if (len == 0 || c->m == 0)
    return FT_OK;
  /* ISA-L's prototype lacks const; it only reads the sources. */
  dot_pieces(c->piece, len, c->k, c->m, c->enc_tbls,
             (unsigned char *const *)data, parity);
  return FT_OK;
}

int ft__codec_encode_update(const ft__codec_t *c, size_t len, int i,
                            const uint8_t *data, uint8_t *const *parity) {
  if (!c || i < 0 || i >= c->k || (len > 0 && !data) ||
      bad_bufs((const uint8_t *const *)parity, c->m, len))
    return FT_EINVAL;
  if (len == 0 || c->m == 0)
    return FT_OK;
  mad_pieces(c->piece, len, c->k, i, c->m, c->enc_tbls, (unsigned char *)data,
             parity);
  return FT_OK;
}

int ft__codec_encode_update_row(const ft__codec_t *c, size_t len, int i, int j,
                                const uint8_t *data, uint8_t *parity_j) {
  if (!c || i < 0 || i >= c->k || j < 0 || j >= c->m ||
      (len > 0 && (!data || !parity_j)))
    return FT_EINVAL;
  unsigned char *row = c->enc_row + (size_t)j * (size_t)c->k * TBL_ROOM;
  mad_pieces(c->piece, len, c->k, i, 1, row, (unsigned char *)data, &parity_j);
  return FT_OK;
}

static int check_erased(int n, const int *erased, int nerased) {
  unsigned char seen[FT_EC_MAX_CHUNKS] = {0};
  if (nerased < 0 || (nerased > 0 && !erased))
    return FT_EINVAL;
  for (int r = 0; r < nerased; r++) {
    if (erased[r] < 0 || erased[r] >= n || seen[erased[r]])
      return FT_EINVAL;
    seen[erased[r]] = 1;
  }
  return FT_OK;
}

static int same_pattern(const struct dec_cache *d, const int *erased,
                        int nerased) {
  if (d->nerased != nerased)
    return 0;
  for (int r = 0; r < nerased; r++)
    if (d->erased[r] != erased[r])
      return 0;
  return 1;
}

/* Sources: the first k chunks not erased (data first, so when only parity is
 * lost the inverse is the identity and the rows are the generator's). */
static void pick_sources(const ft__codec_t *c, struct dec_cache *d,
                         const int *erased, int nerased) {
  unsigned char gone[FT_EC_MAX_CHUNKS] = {0};
  for (int r = 0; r < nerased; r++)
    gone[erased[r]] = 1;
  for (int i = 0, s = 0; s < c->k; i++)
    if (!gone[i])
      d->src[s++] = (unsigned char)i;
}

/* Coefficients over the sources that rebuild chunk e. */
static void erased_row(const ft__codec_t *c, const struct dec_cache *d, int e,
                       unsigned char *row) {
  size_t k = (size_t)c->k;
  if (e < c->k) {
    memcpy(row, d->inv + (size_t)e * k, k);
    return;
  }
  const unsigned char *gen = c->matrix + (size_t)e * k;
  for (size_t j = 0; j < k; j++) {
    unsigned char s = 0;
    for (size_t l = 0; l < k; l++)
      s ^= gf_mul(gen[l], d->inv[l * k + j]);
    row[j] = s;
  }
}

static int build_decode(const ft__codec_t *c, const int *erased, int nerased) {
  struct dec_cache *d = c->dec;
  size_t k = (size_t)c->k;
  d->nerased = 0; /* invalid until complete */
  pick_sources(c, d, erased, nerased);
  for (size_t s = 0; s < k; s++)
    memcpy(d->sub + s * k, c->matrix + (size_t)d->src[s] * k, k);
  if (gf_invert_matrix(d->sub, d->inv, c->k))
    return FT_ECORRUPT;
  for (int r = 0; r < nerased; r++)
    erased_row(c, d, erased[r], d->rows + (size_t)r * k);
  ec_init_tables(c->k, nerased, d->rows, d->tbls);
  for (int r = 0; r < nerased; r++) {
    ec_init_tables(c->k, 1, d->rows + (size_t)r * k,
                   d->row_tbls + (size_t)r * k * TBL_ROOM);
    for (size_t s = 0; s < k; s++)
      ec_init_tables(1, 1, d->rows + (size_t)r * k + s,
                     d->term_tbls + ((size_t)r * k + s) * TBL_ROOM);
    d->erased[r] = (unsigned char)erased[r];
  }
  d->nerased = nerased;
  return FT_OK;
}

int ft__codec_decode(const ft__codec_t *c, size_t len, uint8_t *const *chunks,
                     const int *erased, int nerased) {
  int rc;
  if (!c || bad_bufs((const uint8_t *const *)chunks, c->k + c->m, len))
    return FT_EINVAL;
  if ((rc = check_erased(c->k + c->m, erased, nerased)))
    return rc;
  if (nerased > c->m)
    return FT_ETOOMANY;
  if (nerased == 0 || len == 0)
    return FT_OK;
  if (!same_pattern(c->dec, erased, nerased) &&
      (rc = build_decode(c, erased, nerased)))
    return rc;
  unsigned char *src[FT_EC_MAX_CHUNKS], *dst[FT_EC_MAX_CHUNKS];
  for (int s = 0; s < c->k; s++)
    src[s] = chunks[c->dec->src[s]];
  for (int r = 0; r < nerased; r++)
    dst[r] = chunks[erased[r]];
  dot_pieces(c->piece, len, c->k, nerased, c->dec->tbls, src, dst);
  return FT_OK;
}

/* acc = (first) or ^= the term of source s in the rebuild of erased[r]. */
static int decode_term(const ft__codec_t *c, size_t len, const int *erased,
                       int nerased, int r, int s, const uint8_t *data,
                       uint8_t *acc, int first) {
  int rc;
  if (!c || (len > 0 && (!data || !acc)))
    return FT_EINVAL;
  if ((rc = check_erased(c->k + c->m, erased, nerased)))
    return rc;
  if (nerased > c->m)
    return FT_ETOOMANY;
  if (r < 0 || r >= nerased || s < 0 || s >= c->k)
    return FT_EINVAL;
  if (len == 0)
    return FT_OK;
  if (!same_pattern(c->dec, erased, nerased) &&
      (rc = build_decode(c, erased, nerased)))
    return rc;
  size_t k = (size_t)c->k;
  unsigned char *src = (unsigned char *)data;
  if (first) /* one source, one output: its coefficient's table alone */
    dot_pieces(c->piece, len, 1, 1,
               c->dec->term_tbls + ((size_t)r * k + (size_t)s) * TBL_ROOM, &src,
               &acc);
  else /* row r's tables, ISA-L finding source s's in them */
    mad_pieces(c->piece, len, c->k, s, 1,
               c->dec->row_tbls + (size_t)r * k * TBL_ROOM, src, &acc);
  return FT_OK;
}

int ft__codec_decode_update(const ft__codec_t *c, size_t len, const int *erased,
                            int nerased, int r, int s, const uint8_t *data,
                            uint8_t *acc) {
  return decode_term(c, len, erased, nerased, r, s, data, acc, 0);
}

int ft__codec_decode_first(const ft__codec_t *c, size_t len, const int *erased,
                           int nerased, int r, int s, const uint8_t *data,
                           uint8_t *acc) {
  return decode_term(c, len, erased, nerased, r, s, data, acc, 1);
}
