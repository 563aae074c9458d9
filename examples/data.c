/*
 * Teacher network and batch generator; see data.h.
 */
#include "examples/data.h"

#include <math.h>
#include <stdlib.h>

#include "examples/rng.h"

int teacher_init(teacher_t *t, int in, int out, uint64_t seed) {
  rng_t r;
  t->in = in;
  t->out = out;
  t->w1 = malloc((size_t)in * TEACHER_HIDDEN * sizeof(float));
  t->w2 = malloc((size_t)TEACHER_HIDDEN * out * sizeof(float));
  if (!t->w1 || !t->w2) {
    teacher_free(t);
    return -1;
  }
  /* Gains above 1 make the labels a sharply non-linear function of x. */
  rng_seed(&r, seed, RNG_TEACHER, 0, 0);
  for (int i = 0; i < in * TEACHER_HIDDEN; i++)
    t->w1[i] = rng_symmetric(&r, 2.0f * sqrtf(3.0f / (float)in));
  for (int i = 0; i < TEACHER_HIDDEN * out; i++)
    t->w2[i] = rng_symmetric(&r, sqrtf(3.0f / TEACHER_HIDDEN));
  return 0;
}

void teacher_free(teacher_t *t) {
  free(t->w1);
  free(t->w2);
  t->w1 = t->w2 = NULL;
}

static int teacher_label(const teacher_t *t, const float *x) {
  float h[TEACHER_HIDDEN];
  int best = 0;
  float best_z = -INFINITY;
  for (int j = 0; j < TEACHER_HIDDEN; j++) {
    float a = 0.0f;
    for (int k = 0; k < t->in; k++)
      a += x[k] * t->w1[k * TEACHER_HIDDEN + j];
    h[j] = tanhf(a);
  }
  for (int c = 0; c < t->out; c++) {
    float z = 0.0f;
    for (int j = 0; j < TEACHER_HIDDEN; j++)
      z += h[j] * t->w2[j * t->out + c];
    if (z > best_z) {
      best_z = z;
      best = c;
    }
  }
  return best;
}

void data_batch(const teacher_t *t, uint64_t seed, int rank, uint64_t step,
                int batch, float *x, int *labels) {
  rng_t r;
  rng_seed(&r, seed, RNG_DATA, (uint64_t)rank, step);
  for (int i = 0; i < batch; i++) {
    float *xi = x + (size_t)i * t->in;
    for (int k = 0; k < t->in; k++)
      xi[k] = rng_symmetric(&r, 1.7320508f); /* variance 1 */
    labels[i] = teacher_label(t, xi);
  }
}
