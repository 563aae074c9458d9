/*
 * MLP forward and backward passes; see mlp.h.
 *
 * The matrix loops keep one weight row in cache and sweep the batch under it
 * (fan_in outermost), so a large hidden layer streams its weights once per
 * pass instead of once per sample.  Dot products use eight partial sums in a
 * fixed order: vectorisable, and still the same bits on every run.
 */
#include "examples/mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mlp_shape(mlp_shape_t *s, int hidden) {
  size_t in = MLP_IN, h = (size_t)hidden, out = MLP_OUT;
  s->in = MLP_IN;
  s->hidden = hidden;
  s->out = MLP_OUT;
  s->w1 = 0;
  s->b1 = s->w1 + in * h;
  s->w2 = s->b1 + h;
  s->b2 = s->w2 + h * h;
  s->w3 = s->b2 + h;
  s->b3 = s->w3 + h * out;
  s->n_params = s->b3 + out;
}

int mlp_hidden_for_params(double max_params) {
  /* n(h) = h^2 + (in + out + 2) h + out is increasing: solve, then step down
   * past any rounding of the square root. */
  double c = MLP_IN + MLP_OUT + 2;
  double h = floor((-c + sqrt(c * c + 4.0 * (max_params - MLP_OUT))) / 2.0);
  mlp_shape_t s;
  if (!(h >= MLP_HIDDEN_MIN))
    return MLP_HIDDEN_MIN;
  if (h > 1e6)
    h = 1e6;
  mlp_shape(&s, (int)h);
  while (h > MLP_HIDDEN_MIN && (double)s.n_params > max_params)
    mlp_shape(&s, (int)--h);
  return (int)h;
}

static void init_layer(float *w, float *b, size_t fan_in, size_t fan_out,
                       rng_t *r) {
  float a = sqrtf(6.0f / (float)(fan_in + fan_out));
  for (size_t i = 0; i < fan_in * fan_out; i++)
    w[i] = rng_symmetric(r, a);
  memset(b, 0, fan_out * sizeof *b);
}

void mlp_init_params(const mlp_shape_t *s, float *p, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed, RNG_INIT, 0, 0);
  init_layer(p + s->w1, p + s->b1, s->in, s->hidden, &r);
  init_layer(p + s->w2, p + s->b2, s->hidden, s->hidden, &r);
  init_layer(p + s->w3, p + s->b3, s->hidden, s->out, &r);
}

int mlp_work_init(mlp_work_t *w, const mlp_shape_t *s, int batch) {
  size_t nh = (size_t)batch * s->hidden, nz = (size_t)batch * s->out;
  float **hidden[] = {&w->h1, &w->m1, &w->d1, &w->h2,
                      &w->m2, &w->d2, &w->g1, &w->g2};
  int ok;
  memset(w, 0, sizeof *w);
  w->batch = batch;
  w->z = malloc(nz * sizeof(float));
  ok = w->z != NULL;
  for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++) {
    *hidden[i] = malloc(nh * sizeof(float));
    ok = ok && *hidden[i] != NULL;
  }
  if (!ok)
    mlp_work_free(w);
  return ok ? 0 : -1;
}

void mlp_work_free(mlp_work_t *w) {
  float *all[] = {w->h1, w->m1, w->d1, w->h2, w->m2, w->d2, w->g1, w->g2, w->z};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
  memset(w, 0, sizeof *w);
}

/* y += a x, eight lanes at a time: -O2 vectorises fixed-length blocks of
 * non-aliasing arrays, and each lane is the same operation as the scalar
 * loop, so the bits do not depend on whether it did. */
static void axpy(float *restrict y, float a, const float *restrict x, int n) {
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; l++)
      y[j + l] += a * x[j + l];
  for (; j < n; j++)
    y[j] += a * x[j];
}

/* y[B][nout] = x[B][nin] W[nin][nout] + b */
static void linear_fwd(const float *x, int B, int nin, int nout, const float *W,
                       const float *b, float *y) {
  for (int i = 0; i < B; i++)
    memcpy(y + (size_t)i * nout, b, (size_t)nout * sizeof *b);
  for (int k = 0; k < nin; k++) {
    const float *wk = W + (size_t)k * nout;
    for (int i = 0; i < B; i++)
      axpy(y + (size_t)i * nout, x[(size_t)i * nin + k], wk, nout);
  }
}

/* dW[nin][nout] += x^T dy, db += column sums of dy */
static void linear_grad_w(const float *x, const float *dy, int B, int nin,
                          int nout, float *dW, float *db) {
  for (int k = 0; k < nin; k++) {
    float *gk = dW + (size_t)k * nout;
    for (int i = 0; i < B; i++)
      axpy(gk, x[(size_t)i * nin + k], dy + (size_t)i * nout, nout);
  }
  for (int i = 0; i < B; i++)
    for (int j = 0; j < nout; j++)
      db[j] += dy[(size_t)i * nout + j];
}

static float dot(const float *restrict a, const float *restrict b, int n) {
  float acc[8] = {0};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += a[j + l] * b[j + l];
  for (; j < n; j++)
    acc[0] += a[j] * b[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* dx[B][nin] = dy[B][nout] W^T */
static void linear_grad_x(const float *dy, int B, int nin, int nout,
                          const float *W, float *dx) {
  for (int k = 0; k < nin; k++) {
    const float *wk = W + (size_t)k * nout;
    for (int i = 0; i < B; i++)
      dx[(size_t)i * nin + k] = dot(dy + (size_t)i * nout, wk, nout);
  }
}

/* h = tanh(a) in place, m = dropout scales, d = h * m. */
static void activate(float *h, float *m, float *d, size_t n, rng_t *r,
                     float p) {
  float keep = 1.0f / (1.0f - p);
  for (size_t i = 0; i < n; i++) {
    h[i] = tanhf(h[i]);
    m[i] = rng_uniform(r) < p ? 0.0f : keep;
    d[i] = h[i] * m[i];
  }
}

/* g = g * m * (1 - h^2): back through dropout and tanh. */
static void deactivate(float *g, const float *m, const float *h, size_t n) {
  for (size_t i = 0; i < n; i++)
    g[i] *= m[i] * (1.0f - h[i] * h[i]);
}

/* Softmax cross-entropy of each row; z becomes scale * d(loss)/dz. */
static double softmax_xent(float *z, const int *labels, int B, int n,
                           float scale) {
  double loss = 0.0;
  for (int i = 0; i < B; i++) {
    float *zi = z + (size_t)i * n, mx = zi[0], sum = 0.0f;
    for (int j = 1; j < n; j++)
      mx = zi[j] > mx ? zi[j] : mx;
    for (int j = 0; j < n; j++)
      sum += expf(zi[j] - mx);
    loss -= (double)(zi[labels[i]] - mx - logf(sum));
    for (int j = 0; j < n; j++)
      zi[j] = scale * (expf(zi[j] - mx) / sum - (j == labels[i] ? 1.0f : 0.0f));
  }
  return loss;
}

double mlp_train_batch(const mlp_shape_t *s, const float *p, float *grad,
                       mlp_work_t *w, const float *x, const int *labels,
                       rng_t *dropout, float drop_p, float scale) {
  int B = w->batch, in = s->in, H = s->hidden, out = s->out;
  size_t nh = (size_t)B * H;
  double loss;

  linear_fwd(x, B, in, H, p + s->w1, p + s->b1, w->h1);
  activate(w->h1, w->m1, w->d1, nh, dropout, drop_p);
  linear_fwd(w->d1, B, H, H, p + s->w2, p + s->b2, w->h2);
  activate(w->h2, w->m2, w->d2, nh, dropout, drop_p);
  linear_fwd(w->d2, B, H, out, p + s->w3, p + s->b3, w->z);
  loss = softmax_xent(w->z, labels, B, out, scale);

  linear_grad_w(w->d2, w->z, B, H, out, grad + s->w3, grad + s->b3);
  linear_grad_x(w->z, B, H, out, p + s->w3, w->g2);
  deactivate(w->g2, w->m2, w->h2, nh);
  linear_grad_w(w->d1, w->g2, B, H, H, grad + s->w2, grad + s->b2);
  linear_grad_x(w->g2, B, H, H, p + s->w2, w->g1);
  deactivate(w->g1, w->m1, w->h1, nh);
  linear_grad_w(x, w->g1, B, in, H, grad + s->w1, grad + s->b1);
  return loss;
}
