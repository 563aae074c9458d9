/*
 * Synthetic, learnable data: inputs uniform with unit variance, labels from a
 * fixed random "teacher" network (in -> TEACHER_HIDDEN tanh -> out, argmax).
 * The teacher depends on the seed only; a batch depends on (seed, rank,
 * step) only, so every rank has its own shard and a resumed run sees exactly
 * the batches that an uninterrupted run would have seen.
 */
#ifndef EXAMPLES_DATA_H
#define EXAMPLES_DATA_H

#include <stdint.h>

#define TEACHER_HIDDEN 16

typedef struct teacher {
  int in, out;
  float *w1; /* in x TEACHER_HIDDEN */
  float *w2; /* TEACHER_HIDDEN x out */
} teacher_t;

/* 0 on success, -1 when out of memory. */
int teacher_init(teacher_t *t, int in, int out, uint64_t seed);
void teacher_free(teacher_t *t);

/* Fill x (batch x in) and labels (batch) for this rank and step. */
void data_batch(const teacher_t *t, uint64_t seed, int rank, uint64_t step,
                int batch, float *x, int *labels);

#endif
