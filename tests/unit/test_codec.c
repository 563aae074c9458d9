/* The codec against a plain GF(2^8) reference written here (bitwise multiply,
 * poly 0x11d, the Cauchy matrix built from its definition, Gauss-Jordan
 * inversion), every erasure set of the small codes, random sets of the wide
 * ones, refusals that must leave buffers untouched, and CRC64 against a
 * bitwise CRC-64/XZ. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec/codec.h"
#include "ec/crc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "ftrt.h"
#include "tests/unit/check_main.h"

#define MAXN FT_EC_MAX_CHUNKS

/* ---- reference GF(2^8) ------------------------------------------------ */

static uint8_t slow_mul(uint8_t a, uint8_t b) {
  uint8_t p = 0;
  for (; b; b >>= 1) {
    if (b & 1)
      p ^= a;
    a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
  }
  return p;
}

/* Log tables built from slow_mul before any test forks; read-only after. */
static uint8_t gexp[512];
static int glog[256];

static void ref_init(void) {
  uint8_t x = 1;
  for (int i = 0; i < 255; i++) {
    gexp[i] = gexp[i + 255] = x;
    glog[x] = i;
    x = slow_mul(x, 2);
  }
}

static uint8_t mul(uint8_t a, uint8_t b) {
  return a && b ? gexp[glog[a] + glog[b]] : 0;
}
static uint8_t inv(uint8_t a) { return gexp[255 - glog[a]]; }

/* Generator: identity on top, then a[i][j] = 1 / (i ^ j) for i >= k. */
static uint8_t gen(int k, int row, int col) {
  if (row < k)
    return row == col;
  return inv((uint8_t)(row ^ col));
}

static void ref_encode(int k, int m, size_t len, uint8_t *const *data,
                       uint8_t **out) {
  for (int j = 0; j < m; j++)
    for (size_t b = 0; b < len; b++) {
      uint8_t s = 0;
      for (int i = 0; i < k; i++)
        s ^= mul(gen(k, k + j, i), data[i][b]);
      out[j][b] = s;
    }
}

/* Gauss-Jordan on a (k x k), result in r; 0 if singular. */
static int ref_invert(int k, uint8_t *a, uint8_t *r) {
  memset(r, 0, (size_t)k * k);
  for (int i = 0; i < k; i++)
    r[i * k + i] = 1;
  for (int c = 0; c < k; c++) {
    int p = c;
    while (p < k && !a[p * k + c])
      p++;
    if (p == k)
      return 0;
    for (int j = 0; j < k; j++) {
      uint8_t t = a[c * k + j];
      a[c * k + j] = a[p * k + j];
      a[p * k + j] = t;
      t = r[c * k + j];
      r[c * k + j] = r[p * k + j];
      r[p * k + j] = t;
    }
    uint8_t f = inv(a[c * k + c]);
    for (int j = 0; j < k; j++) {
      a[c * k + j] = mul(a[c * k + j], f);
      r[c * k + j] = mul(r[c * k + j], f);
    }
    for (int i = 0; i < k; i++) {
      uint8_t g = a[i * k + c];
      if (i == c || !g)
        continue;
      for (int j = 0; j < k; j++) {
        a[i * k + j] ^= mul(g, a[c * k + j]);
        r[i * k + j] ^= mul(g, r[c * k + j]);
      }
    }
  }
  return 1;
}

/* Rebuild chunks erased[] into out[] from the LAST k survivors (the codec
 * takes the first k, so the two are independent). */
static void ref_decode(int k, int m, size_t len, uint8_t *const *chunks,
                       const int *erased, int ne, uint8_t **out) {
  int n = k + m, src[MAXN], ns = 0;
  uint8_t gone[MAXN] = {0};
  for (int r = 0; r < ne; r++)
    gone[erased[r]] = 1;
  for (int i = n - 1; i >= 0 && ns < k; i--)
    if (!gone[i])
      src[ns++] = i;
  uint8_t *a = malloc((size_t)k * k), *r = malloc((size_t)k * k);
  for (int s = 0; s < k; s++)
    for (int j = 0; j < k; j++)
      a[s * k + j] = gen(k, src[s], j);
  ck_assert(ref_invert(k, a, r));
  uint8_t **data = malloc(sizeof(uint8_t *) * (size_t)k);
  for (int i = 0; i < k; i++) {
    data[i] = calloc(len + 1, 1);
    for (size_t b = 0; b < len; b++)
      for (int s = 0; s < k; s++)
        data[i][b] ^= mul(r[i * k + s], chunks[src[s]][b]);
  }
  for (int e = 0; e < ne; e++)
    for (size_t b = 0; b < len; b++) {
      uint8_t v = 0;
      for (int i = 0; i < k; i++)
        v ^= mul(gen(k, erased[e], i), data[i][b]);
      out[e][b] = v;
    }
  for (int i = 0; i < k; i++)
    free(data[i]);
  free(data);
  free(a);
  free(r);
}

/* ---- chunk sets ------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

typedef struct {
  int k, m, n;
  size_t len;
  uint8_t **c; /* n chunks: k data (random), m parity (zero) */
} cs_t;

static uint8_t **bufs(int n, size_t len) {
  uint8_t **c = malloc(sizeof(uint8_t *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++)
    c[i] = calloc(len ? len : 1, 1);
  return c;
}

static void bufs_free(uint8_t **c, int n) {
  for (int i = 0; i < n; i++)
    free(c[i]);
  free(c);
}

static cs_t cs_new(int k, int m, size_t len, uint64_t seed) {
  cs_t s = {k, m, k + m, len, bufs(k + m, len)};
  for (int i = 0; i < k; i++)
    for (size_t b = 0; b < len; b++)
      s.c[i][b] = (uint8_t)rnd(&seed);
  return s;
}

static cs_t cs_copy(const cs_t *o) {
  cs_t s = {o->k, o->m, o->n, o->len, bufs(o->n, o->len)};
  for (int i = 0; i < o->n; i++)
    memcpy(s.c[i], o->c[i], o->len);
  return s;
}

static void cs_free(cs_t *s) { bufs_free(s->c, s->n); }

static int cs_equal(const cs_t *a, const cs_t *b) {
  for (int i = 0; i < a->n; i++)
    if (a->len && memcmp(a->c[i], b->c[i], a->len))
      return 0;
  return 1;
}

static ft__codec_t *codec(int k, int m) {
  ft__codec_t *c = NULL;
  ck_assert_int_eq(ft__codec_create(k, m, &c), FT_OK);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* Encode s's parity with the codec and check it against the reference. */
static void encode_checked(const ft__codec_t *c, cs_t *s) {
  uint8_t **want = bufs(s->m, s->len);
  ck_assert_int_eq(
      ft__codec_encode(c, s->len, (const uint8_t *const *)s->c, s->c + s->k),
      FT_OK);
  ref_encode(s->k, s->m, s->len, s->c, want);
  for (int j = 0; j < s->m; j++)
    ck_assert_msg(!s->len || !memcmp(s->c[s->k + j], want[j], s->len),
                  "%d+%d len %zu: parity %d differs from the reference", s->k,
                  s->m, s->len, j);
  bufs_free(want, s->m);
}

/* Erase, decode, and compare every chunk with the original; the rebuilt
 * chunks are also compared with the reference decoder. */
/* The decode spread over the sources (ft__codec_decode_update): each
 * erased chunk summed from the k sources' terms, last source first, equals
 * the original; and the same from an acc of stale bytes whose first term
 * is ft__codec_decode_first's (as a chain's first link sums). */
static void chain_checked(const ft__codec_t *c, const cs_t *orig,
                          const int *erased, int ne) {
  int src[MAXN], ns = 0, gone[MAXN] = {0};
  for (int r = 0; r < ne; r++)
    gone[erased[r]] = 1;
  for (int i = 0; i < orig->n && ns < orig->k; i++)
    if (!gone[i])
      src[ns++] = i;
  uint8_t *acc = calloc(orig->len ? orig->len : 1, 1);
  for (int r = 0; r < ne; r++) {
    memset(acc, 0, orig->len);
    for (int s = ns - 1; s >= 0; s--)
      ck_assert_int_eq(ft__codec_decode_update(c, orig->len, erased, ne, r, s,
                                               orig->c[src[s]], acc),
                       FT_OK);
    ck_assert_msg(!orig->len || !memcmp(acc, orig->c[erased[r]], orig->len),
                  "%d+%d len %zu: erased %d not rebuilt by the chain",
                  orig->k, orig->m, orig->len, erased[r]);
    for (int f = 0; f < ns; f++) { /* each source as the chain's first */
      memset(acc, 0x5a ^ r ^ f, orig->len);
      for (int i = 0; i < ns; i++) {
        int s = (f + i) % ns;
        ck_assert_int_eq(
            (i == 0 ? ft__codec_decode_first : ft__codec_decode_update)(
                c, orig->len, erased, ne, r, s, orig->c[src[s]], acc),
            FT_OK);
      }
      ck_assert_msg(!orig->len || !memcmp(acc, orig->c[erased[r]], orig->len),
                    "%d+%d len %zu: erased %d not rebuilt by a chain whose "
                    "first term (source %d) is set",
                    orig->k, orig->m, orig->len, erased[r], f);
    }
  }
  free(acc);
}

static void decode_checked(const ft__codec_t *c, const cs_t *orig,
                           const int *erased, int ne) {
  chain_checked(c, orig, erased, ne);
  cs_t w = cs_copy(orig);
  for (int r = 0; r < ne; r++)
    memset(w.c[erased[r]], 0xa5 ^ r, w.len);
  ck_assert_int_eq(ft__codec_decode(c, w.len, w.c, erased, ne), FT_OK);
  ck_assert_msg(cs_equal(&w, orig),
                "%d+%d len %zu: %d erasures (first %d) "
                "not restored",
                orig->k, orig->m, orig->len, ne, ne ? erased[0] : -1);
  if (ne && orig->len) {
    uint8_t **ref = bufs(ne, orig->len);
    ref_decode(orig->k, orig->m, orig->len, orig->c, erased, ne, ref);
    for (int r = 0; r < ne; r++)
      ck_assert(!memcmp(ref[r], w.c[erased[r]], orig->len));
    bufs_free(ref, ne);
  }
  cs_free(&w);
}

/* ---- CRC64 ------------------------------------------------------------ */

static uint64_t slow_crc64(uint64_t crc, const uint8_t *p, size_t len) {
  crc = ~crc;
  for (size_t i = 0; i < len; i++) {
    crc ^= p[i];
    for (int b = 0; b < 8; b++)
      crc = (crc >> 1) ^ (crc & 1 ? 0xC96C5795D7870F42ull : 0);
  }
  return ~crc;
}

START_TEST(crc_known) {
  ck_assert_uint_eq(ft__crc64(0, "123456789", 9), 0x995DC9BBDF1939FAull);
  ck_assert_uint_eq(slow_crc64(0, (const uint8_t *)"123456789", 9),
                    0x995DC9BBDF1939FAull);
  ck_assert_uint_eq(ft__crc64(0, NULL, 0), 0);
  ck_assert_uint_eq(ft__crc64(0x1234, NULL, 0), 0x1234);
  uint64_t seed = 7;
  uint8_t buf[5000];
  for (size_t i = 0; i < sizeof(buf); i++)
    buf[i] = (uint8_t)rnd(&seed);
  size_t lens[] = {1, 7, 8, 15, 16, 63, 64, 255, 256, 4097, sizeof(buf)};
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
    ck_assert_uint_eq(ft__crc64(0, buf, lens[i]), slow_crc64(0, buf, lens[i]));
  buf[100] ^= 4;
  ck_assert_uint_ne(ft__crc64(0, buf, sizeof(buf)),
                    slow_crc64(0, buf, sizeof(buf)) ^ 1);
}
END_TEST

START_TEST(crc_chain) {
  uint64_t seed = 99;
  uint8_t buf[3000];
  for (size_t i = 0; i < sizeof(buf); i++)
    buf[i] = (uint8_t)rnd(&seed);
  uint64_t whole = ft__crc64(0, buf, sizeof(buf));
  for (int t = 0; t < 200; t++) {
    size_t a = rnd(&seed) % (sizeof(buf) + 1);
    size_t b = a + rnd(&seed) % (sizeof(buf) - a + 1);
    uint64_t x = ft__crc64(0, buf, a);
    x = ft__crc64(x, buf + a, b - a);
    x = ft__crc64(x, buf + b, sizeof(buf) - b);
    ck_assert_uint_eq(x, whole);
  }
  ck_assert_uint_ne(ft__crc64(0, buf, 100), ft__crc64(0, buf + 1, 100));
}
END_TEST

/* ---- reference self-check --------------------------------------------- */

START_TEST(reference_field) {
  for (int a = 0; a < 256; a++) {
    for (int b = 0; b < 256; b++)
      ck_assert_int_eq(mul((uint8_t)a, (uint8_t)b),
                       slow_mul((uint8_t)a, (uint8_t)b));
    if (a)
      ck_assert_int_eq(slow_mul((uint8_t)a, inv((uint8_t)a)), 1);
  }
  uint8_t a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10}, r[9];
  uint8_t s[9] = {1, 2, 3, 2, 4, 6, 0, 0, 1}; /* row 1 = 2 * row 0 */
  ck_assert(ref_invert(3, a, r));
  ck_assert(!ref_invert(3, s, r));
}
END_TEST

/* ---- codes ------------------------------------------------------------ */

static const int wide[][2] = {{10, 4},   {20, 4},  {16, 16}, {12, 8},
                              {200, 55}, {254, 1}, {1, 254}};
#define NWIDE ((int)(sizeof(wide) / sizeof(wide[0])))
#define NSMALL 40 /* k 1..8 x m 0..4 */

static void code_of(int i, int *k, int *m) {
  if (i < NSMALL) {
    *k = 1 + i / 5;
    *m = i % 5;
  } else {
    *k = wide[i - NSMALL][0];
    *m = wide[i - NSMALL][1];
  }
}

START_TEST(encode_matches_reference) {
  int k, m;
  code_of(_i, &k, &m);
  uint64_t seed = 1000 + (uint64_t)_i;
  size_t lens[] = {0, 1, 31, 64, 4097, 1 + rnd(&seed) % 3000};
  int nl = k * m > 1000 ? 4 : 6; /* the widest codes: skip 4097 and random */
  ft__codec_t *c = codec(k, m);
  ck_assert_int_eq(ft__codec_k(c), k);
  ck_assert_int_eq(ft__codec_m(c), m);
  for (int l = 0; l < nl; l++) {
    cs_t s = cs_new(k, m, lens[l], seed + (uint64_t)l);
    encode_checked(c, &s);
    cs_free(&s);
  }
  ft__codec_destroy(c);
}
END_TEST

START_TEST(update_equals_encode) {
  int k, m;
  code_of(_i, &k, &m);
  uint64_t seed = 2000 + (uint64_t)_i;
  size_t lens[] = {1, 31, 4097, 1 + rnd(&seed) % 3000};
  ft__codec_t *c = codec(k, m);
  for (int l = 0; l < 4; l++) {
    cs_t s = cs_new(k, m, lens[l], seed + (uint64_t)l);
    uint8_t **acc = bufs(m, s.len);
    int order[MAXN];
    for (int i = 0; i < k; i++)
      order[i] = i;
    for (int i = k - 1; i > 0; i--) { /* arrival order is arbitrary */
      int j = (int)(rnd(&seed) % (uint64_t)(i + 1)), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int i = 0; i < k; i++)
      ck_assert_int_eq(
          ft__codec_encode_update(c, s.len, order[i], s.c[order[i]], acc),
          FT_OK);
    uint8_t **rows = bufs(m, s.len); /* each parity row on its own */
    for (int j = 0; j < m; j++)
      for (int i = k - 1; i >= 0; i--)
        ck_assert_int_eq(
            ft__codec_encode_update_row(c, s.len, i, j, s.c[i], rows[j]),
            FT_OK);
    encode_checked(c, &s);
    for (int j = 0; j < m; j++) {
      ck_assert(!memcmp(acc[j], s.c[k + j], s.len));
      ck_assert(!memcmp(rows[j], s.c[k + j], s.len));
    }
    bufs_free(rows, m);
    bufs_free(acc, m);
    cs_free(&s);
  }
  ft__codec_destroy(c);
}
END_TEST

static int set_of(unsigned mask, int n, int *erased, int reverse) {
  int ne = 0;
  for (int i = 0; i < n; i++)
    if (mask & (1u << i))
      erased[ne++] = i;
  for (int a = 0, b = ne - 1; reverse && a < b; a++, b--) {
    int t = erased[a];
    erased[a] = erased[b];
    erased[b] = t;
  }
  return ne;
}

/* Every set of at most m erasures is rebuilt; every set of m+1 is refused
 * and leaves every buffer as it was. */
START_TEST(decode_every_set) {
  int k, m;
  code_of(_i, &k, &m);
  int n = k + m, erased[MAXN];
  size_t lens[] = {1, 31, 67, 200};
  ft__codec_t *c = codec(k, m);
  cs_t orig[4];
  for (int l = 0; l < 4; l++) {
    orig[l] = cs_new(k, m, lens[l], 3000 + (uint64_t)(_i * 4 + l));
    encode_checked(c, &orig[l]);
  }
  int tried = 0, refused = 0;
  for (unsigned mask = 0; mask < (1u << n); mask++) {
    int ne = set_of(mask, n, erased, mask & 1);
    cs_t *o = &orig[mask % 4];
    if (ne <= m) {
      decode_checked(c, o, erased, ne);
      tried++;
    } else if (ne == m + 1) {
      cs_t w = cs_copy(o);
      ck_assert_int_eq(ft__codec_decode(c, w.len, w.c, erased, ne),
                       FT_ETOOMANY);
      ck_assert(cs_equal(&w, o));
      cs_free(&w);
      refused++;
    }
  }
  ck_assert_int_gt(tried, m); /* at least the empty set and singles */
  ck_assert_int_gt(refused, 0);
  for (int l = 0; l < 4; l++)
    cs_free(&orig[l]);
  ft__codec_destroy(c);
}
END_TEST

/* Random sets on the wide codes, mostly of exactly m erasures. */
START_TEST(decode_random_sets) {
  int k, m;
  code_of(NSMALL + _i, &k, &m);
  int n = k + m, trials = n > 100 ? 6 : 25, perm[MAXN];
  uint64_t seed = 4000 + (uint64_t)_i;
  ft__codec_t *c = codec(k, m);
  cs_t o = cs_new(k, m, n > 100 ? 300 : 1 + rnd(&seed) % 2000, seed);
  encode_checked(c, &o);
  for (int t = 0; t < trials; t++) {
    for (int i = 0; i < n; i++)
      perm[i] = i;
    int ne = t % 3 ? m : (int)(rnd(&seed) % (uint64_t)(m + 1));
    for (int i = 0; i < ne; i++) { /* partial Fisher-Yates */
      int j = i + (int)(rnd(&seed) % (uint64_t)(n - i)), x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    decode_checked(c, &o, perm, ne);
  }
  /* all data lost (when m allows), and all parity lost */
  for (int i = 0; i < n; i++)
    perm[i] = i;
  if (k <= m)
    decode_checked(c, &o, perm, k);
  decode_checked(c, &o, perm + k, m);
  cs_free(&o);
  ft__codec_destroy(c);
}
END_TEST

/* The cached tables follow the pattern, including the order of erased[]. */
START_TEST(decode_cache) {
  ft__codec_t *c = codec(6, 3);
  cs_t a = cs_new(6, 3, 500, 11), b = cs_new(6, 3, 500, 12);
  encode_checked(c, &a);
  encode_checked(c, &b);
  int p1[] = {0, 1, 7}, p2[] = {1, 0, 7}, p3[] = {7, 0, 1}, p4[] = {0, 1},
      p5[] = {2, 6, 8};
  decode_checked(c, &a, p1, 3);
  decode_checked(c, &b, p1, 3);
  decode_checked(c, &a, p2, 3);
  decode_checked(c, &b, p3, 3);
  decode_checked(c, &a, p4, 2);
  decode_checked(c, &b, p1, 3);
  decode_checked(c, &a, p5, 3);
  decode_checked(c, &a, p4, 2);
  /* a refused call between two uses of one pattern must not spoil it */
  int dup[] = {0, 0};
  cs_t w = cs_copy(&a);
  ck_assert_int_eq(ft__codec_decode(c, w.len, w.c, dup, 2), FT_EINVAL);
  cs_free(&w);
  decode_checked(c, &a, p4, 2);
  cs_free(&a);
  cs_free(&b);
  ft__codec_destroy(c);
}
END_TEST

/* Piece processing: lengths over several pieces, with small pieces set
 * explicitly and with the default. */
START_TEST(pieces) {
  static const int codes[][2] = {{3, 1}, {8, 2}, {10, 4}, {12, 8}};
  static const size_t piece[] = {64, 4096, 0};
  int k = codes[_i][0], m = codes[_i][1];
  ft__codec_t *c = codec(k, m);
  ck_assert_uint_ge(ft__codec_piece_bytes(c), 4096);
  ck_assert_uint_eq(ft__codec_piece_bytes(c) % 64, 0);
  for (int p = 0; p < 3; p++) {
    ck_assert_int_eq(ft__codec_set_piece_bytes(c, piece[p]), FT_OK);
    size_t pb = ft__codec_piece_bytes(c);
    ck_assert(piece[p] == 0 || pb == piece[p]);
    size_t len = p == 0 ? 64 * 16 + 5 : pb * 3 - 10 + (size_t)p;
    cs_t o = cs_new(k, m, len, 5000 + (uint64_t)(_i * 3 + p));
    encode_checked(c, &o);
    uint8_t **acc = bufs(m, len);
    for (int i = 0; i < k; i++)
      ck_assert_int_eq(ft__codec_encode_update(c, len, i, o.c[i], acc), FT_OK);
    for (int j = 0; j < m; j++) {
      ck_assert(!memcmp(acc[j], o.c[k + j], len));
      memset(acc[j], 0, len);
      for (int i = 0; i < k; i++)
        ck_assert_int_eq(
            ft__codec_encode_update_row(c, len, i, j, o.c[i], acc[j]), FT_OK);
      ck_assert(!memcmp(acc[j], o.c[k + j], len));
    }
    bufs_free(acc, m);
    int erased[MAXN]; /* m consecutive indices, data and parity mixed */
    for (int r = 0; r < m; r++)
      erased[r] = (p + r) % (k + m);
    decode_checked(c, &o, erased, m);
    cs_free(&o);
  }
  ft__codec_destroy(c);
}
END_TEST

START_TEST(piece_setting) {
  ft__codec_t *c = codec(4, 2);
  size_t def = ft__codec_piece_bytes(c);
  ck_assert_int_eq(ft__codec_set_piece_bytes(c, 63), FT_EINVAL);
  ck_assert_int_eq(ft__codec_set_piece_bytes(c, 65), FT_EINVAL);
  ck_assert_int_eq(ft__codec_set_piece_bytes(c, (1u << 30) + 64), FT_EINVAL);
  ck_assert_uint_eq(ft__codec_piece_bytes(c), def);
  ck_assert_int_eq(ft__codec_set_piece_bytes(c, 1u << 30), FT_OK);
  ck_assert_uint_eq(ft__codec_piece_bytes(c), 1u << 30);
  ck_assert_int_eq(ft__codec_set_piece_bytes(c, 0), FT_OK);
  ck_assert_uint_eq(ft__codec_piece_bytes(c), def);
  ck_assert_int_eq(ft__codec_set_piece_bytes(NULL, 64), FT_EINVAL);
  ft__codec_destroy(c);
}
END_TEST

START_TEST(create_limits) {
  ft__codec_t *c = (ft__codec_t *)&c;
  ck_assert_int_eq(ft__codec_create(0, 1, &c), FT_EINVAL);
  ck_assert_ptr_null(c);
  c = (ft__codec_t *)&c;
  ck_assert_int_eq(ft__codec_create(3, -1, &c), FT_EINVAL);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(ft__codec_create(200, 56, &c), FT_EINVAL);
  ck_assert_int_eq(ft__codec_create(255, 1, &c), FT_EINVAL);
  ck_assert_int_eq(ft__codec_create(3, 1, NULL), FT_EINVAL);
  ck_assert_int_eq(ft__codec_create(255, 0, &c), FT_OK);
  ft__codec_destroy(c);
  ck_assert_int_eq(ft__codec_create(1, 0, &c), FT_OK);
  ft__codec_destroy(c);
  ft__codec_destroy(NULL);
  ck_assert_int_eq(ft__codec_k(NULL), FT_EINVAL);
  ck_assert_int_eq(ft__codec_m(NULL), FT_EINVAL);
}
END_TEST

/* Bad arguments give FT_EINVAL and write nothing. */
START_TEST(bad_arguments) {
  ft__codec_t *c = codec(4, 2);
  cs_t o = cs_new(4, 2, 100, 77);
  encode_checked(c, &o);
  cs_t w = cs_copy(&o);
  uint8_t *hole[6] = {w.c[0], w.c[1], NULL, w.c[3], w.c[4], w.c[5]};
  const uint8_t *const *data = (const uint8_t *const *)w.c;
  ck_assert_int_eq(ft__codec_encode(NULL, 100, data, w.c + 4), FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode(c, 100, NULL, w.c + 4), FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode(c, 100, data, NULL), FT_EINVAL);
  ck_assert_int_eq(
      ft__codec_encode(c, 100, (const uint8_t *const *)hole, w.c + 4),
      FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode(c, 100, data, hole + 2), FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update(c, 100, -1, w.c[0], w.c + 4),
                   FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update(c, 100, 4, w.c[0], w.c + 4),
                   FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update(c, 100, 0, NULL, w.c + 4),
                   FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update(c, 100, 0, w.c[0], hole + 2),
                   FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update(NULL, 100, 0, w.c[0], w.c + 4),
                   FT_EINVAL);
  static const int rowbad[][2] = {{-1, 0}, {4, 0}, {0, -1}, {0, 2}};
  for (int t = 0; t < 4; t++)
    ck_assert_int_eq(ft__codec_encode_update_row(c, 100, rowbad[t][0],
                                                 rowbad[t][1], w.c[0], w.c[4]),
                     FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update_row(c, 100, 0, 0, NULL, w.c[4]),
                   FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update_row(c, 100, 0, 0, w.c[0], NULL),
                   FT_EINVAL);
  ck_assert_int_eq(ft__codec_encode_update_row(NULL, 100, 0, 0, w.c[0], w.c[4]),
                   FT_EINVAL);
  static const int bad[][3] = {
      {-1, 0, 0}, {6, 0, 0}, {2, 2, 0}, {0, -3, 0}, {1000, 0, 0}};
  for (int t = 0; t < 5; t++)
    ck_assert_int_eq(ft__codec_decode(c, 100, w.c, bad[t], 2), FT_EINVAL);
  int ok[] = {1, 2}, three[] = {0, 1, 1};
  ck_assert_int_eq(ft__codec_decode(c, 100, w.c, three, 3), FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode(c, 100, w.c, ok, -1), FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode(c, 100, w.c, NULL, 1), FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode(c, 100, NULL, ok, 2), FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode(c, 100, hole, ok, 1), FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode(NULL, 100, w.c, ok, 2), FT_EINVAL);
  /* the chain's term: a bad row or source, pattern or buffer */
  static const int rs[][2] = {{-1, 0}, {2, 0}, {0, -1}, {0, 4}};
  for (int t = 0; t < 4; t++)
    ck_assert_int_eq(ft__codec_decode_update(c, 100, ok, 2, rs[t][0], rs[t][1],
                                             w.c[0], w.c[1]),
                     FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode_update(c, 100, three, 3, 0, 0, w.c[0],
                                           w.c[1]),
                   FT_EINVAL);
  ck_assert_int_eq(
      ft__codec_decode_update(c, 100, ok, 2, 0, 0, NULL, w.c[1]), FT_EINVAL);
  ck_assert_int_eq(
      ft__codec_decode_update(c, 100, ok, 2, 0, 0, w.c[0], NULL), FT_EINVAL);
  ck_assert_int_eq(
      ft__codec_decode_update(NULL, 100, ok, 2, 0, 0, w.c[0], w.c[1]),
      FT_EINVAL);
  int four[] = {0, 1, 2, 3};
  ck_assert_int_eq(ft__codec_decode_update(c, 100, four, 3, 0, 0, w.c[4],
                                           w.c[5]),
                   FT_ETOOMANY);
  for (int t = 0; t < 4; t++)
    ck_assert_int_eq(ft__codec_decode_first(c, 100, ok, 2, rs[t][0], rs[t][1],
                                            w.c[0], w.c[1]),
                     FT_EINVAL);
  ck_assert_int_eq(ft__codec_decode_first(c, 100, ok, 2, 0, 0, NULL, w.c[1]),
                   FT_EINVAL);
  ck_assert_int_eq(
      ft__codec_decode_first(c, 100, four, 3, 0, 0, w.c[4], w.c[5]),
      FT_ETOOMANY);
  ck_assert(cs_equal(&w, &o));
  cs_free(&w);
  cs_free(&o);
  ft__codec_destroy(c);
}
END_TEST

/* m+1 (and more) erasures: FT_ETOOMANY, buffers untouched; m == 0 too. */
START_TEST(too_many) {
  static const int codes[][2] = {{3, 0}, {3, 1}, {4, 2}, {8, 4}, {20, 4}};
  int k = codes[_i][0], m = codes[_i][1], erased[MAXN];
  ft__codec_t *c = codec(k, m);
  cs_t o = cs_new(k, m, 333, 88 + (uint64_t)_i);
  encode_checked(c, &o);
  for (int ne = m + 1; ne <= k + m; ne++) {
    cs_t w = cs_copy(&o);
    for (int r = 0; r < ne; r++) /* from the top (parity first) or bottom */
      erased[r] = ne % 2 ? k + m - 1 - r : r;
    ck_assert_int_eq(ft__codec_decode(c, w.len, w.c, erased, ne), FT_ETOOMANY);
    ck_assert(cs_equal(&w, &o));
    cs_free(&w);
  }
  cs_free(&o);
  ft__codec_destroy(c);
}
END_TEST

/* Length 0: nothing to touch, NULL buffers accepted. */
/* XINUSE (xgetbv with ECX=1): which state components are not in their
 * initial state.  Bit 2: the upper halves of YMM0-15; bit 6: the upper
 * halves of ZMM0-15 -- what legacy-SSE instructions pay for while it is
 * set.  (ZMM16-31, bit 7, are out of SSE's reach and vzeroupper leaves
 * them.)  0 where the CPU cannot say (*known = 0). */
static uint64_t upper_in_use(int *known) {
  *known = 0;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
      !(c & bit_AVX) || !__get_cpuid_count(0xd, 1, &a, &b, &c, &d) ||
      !(a & (1u << 2)))
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  *known = 1;
  return ((uint64_t)hi << 32 | lo) & ((1u << 2) | (1u << 6));
#else
  return 0;
#endif
}

/* ISA-L's AVX kernels return with the upper vector halves dirty, and every
 * legacy-SSE instruction after them then pays for it (ec/upper.h: the
 * trainer's loop ran 2.5-4x slower for the rest of the process after one
 * CRC).  ft__crc64 and the codec's calls leave them clean. */
START_TEST(leaves_upper_clean) {
  int known;
  upper_in_use(&known);
  if (!known)
    return; /* no AVX, or no XINUSE: nothing to dirty, nothing to see */
  size_t len = 1 << 16;
  unsigned char *buf = malloc(len);
  ck_assert_ptr_nonnull(buf);
  memset(buf, 0x5a, len);
  uint64_t crc = ft__crc64(0, buf, len);
  uint64_t dirty = upper_in_use(&known);
  ck_assert_msg(dirty == 0, "ft__crc64 left XINUSE bits %#llx set",
                (unsigned long long)dirty);
  ck_assert(crc != 0);
  ft__codec_t *c = codec(3, 2);
  cs_t s = cs_new(3, 2, len, 7);
  ck_assert_int_eq(
      ft__codec_encode(c, len, (const uint8_t *const *)s.c, s.c + s.k),
      FT_OK);
  dirty = upper_in_use(&known);
  ck_assert_msg(dirty == 0, "ft__codec_encode left XINUSE bits %#llx set",
                (unsigned long long)dirty);
  cs_free(&s);
  ft__codec_destroy(c);
  free(buf);
}
END_TEST

START_TEST(zero_length) {
  ft__codec_t *c = codec(3, 2);
  uint8_t *none[5] = {NULL, NULL, NULL, NULL, NULL};
  int erased[] = {0, 4};
  ck_assert_int_eq(
      ft__codec_encode(c, 0, (const uint8_t *const *)none, none + 3), FT_OK);
  ck_assert_int_eq(ft__codec_encode_update(c, 0, 2, NULL, none + 3), FT_OK);
  ck_assert_int_eq(ft__codec_encode_update_row(c, 0, 2, 1, NULL, NULL), FT_OK);
  ck_assert_int_eq(ft__codec_decode(c, 0, none, erased, 2), FT_OK);
  ck_assert_int_eq(ft__codec_decode(c, 0, none, erased, 0), FT_OK);
  ft__codec_destroy(c);
}
END_TEST

Suite *unit_suite(unit_prog_t *prog) {
  (void)prog;
  ref_init();
  Suite *s = suite_create("codec");
  TCase *tc = tcase_create("codec");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, crc_known);
  tcase_add_test(tc, crc_chain);
  tcase_add_test(tc, reference_field);
  tcase_add_loop_test(tc, encode_matches_reference, 0, NSMALL + NWIDE);
  tcase_add_loop_test(tc, update_equals_encode, 0, NSMALL + NWIDE);
  tcase_add_loop_test(tc, decode_every_set, 0, NSMALL);
  tcase_add_loop_test(tc, decode_random_sets, 0, NWIDE);
  tcase_add_test(tc, decode_cache);
  tcase_add_loop_test(tc, pieces, 0, 4);
  tcase_add_test(tc, piece_setting);
  tcase_add_test(tc, create_limits);
  tcase_add_test(tc, bad_arguments);
  tcase_add_loop_test(tc, too_many, 0, 5);
  tcase_add_test(tc, zero_length);
  tcase_add_test(tc, leaves_upper_clean);
  suite_add_tcase(s, tc);
  return s;
}
