/*
 * The model of the example trainer: a multi-layer perceptron
 * in -> hidden -> hidden -> out, tanh activations, inverted dropout after each
 * hidden layer, softmax cross-entropy on class labels.
 *
 * All parameters live in one flat float vector (W1, b1, W2, b2, W3, b3, each
 * weight matrix row-major [fan_in][fan_out]); the gradient has the same
 * layout.  That flat vector is what the optimizer slices across ranks.
 *
 * Every loop runs in a fixed order, so the same inputs give the same bits.
 */
#ifndef EXAMPLES_MLP_H
#define EXAMPLES_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "examples/rng.h"

#define MLP_IN 32
#define MLP_OUT 10
#define MLP_HIDDEN_MIN 8

typedef struct mlp_shape {
  int in, hidden, out;
  size_t n_params;
  size_t w1, b1, w2, b2, w3, b3; /* offsets in the flat vector */
} mlp_shape_t;

/* Activations and deltas of one batch; owned by the caller of mlp_work_init. */
typedef struct mlp_work {
  int batch;
  float *h1, *m1, *d1; /* tanh output, dropout scale (0 or 1/(1-p)), product */
  float *h2, *m2, *d2;
  float *z;       /* logits, then d(loss)/d(logits) */
  float *g1, *g2; /* deltas of the hidden layers */
} mlp_work_t;

void mlp_shape(mlp_shape_t *s, int hidden);

/* The largest hidden width whose parameter count is at most max_params
 * (at least MLP_HIDDEN_MIN). */
int mlp_hidden_for_params(double max_params);

/* Glorot-uniform weights from the stream (seed, RNG_INIT), zero biases; the
 * same on every rank. */
void mlp_init_params(const mlp_shape_t *s, float *params, uint64_t seed);

/* 0 on success, -1 when out of memory (w then holds nothing to free). */
int mlp_work_init(mlp_work_t *w, const mlp_shape_t *s, int batch);
void mlp_work_free(mlp_work_t *w);

/*
 * Forward and backward pass of one batch (x: batch x in, labels: batch).
 * Adds scale * d(sum of losses)/d(params) to grad and returns the sum of the
 * batch's losses.  Dropout masks are drawn from *dropout in a fixed order.
 */
double mlp_train_batch(const mlp_shape_t *s, const float *params, float *grad,
                       mlp_work_t *w, const float *x, const int *labels,
                       rng_t *dropout, float drop_p, float scale);

#endif
