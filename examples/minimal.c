/* The smallest protected trainer: one buffer, a snapshot every 10 steps. */
#include <ftrt.h>
#include <stdio.h>

int main(int argc, char **argv) {
  ft_ctx_t *ctx;
  MPI_Comm comm; /* the trainers: use it instead of MPI_COMM_WORLD */
  int rc = ft_init(&argc, &argv, &ctx, &comm); /* SMP ranks never return */
  if (rc != FT_OK) return fprintf(stderr, "ft_init: %s\n", ft_strerror(rc)), 1;
  static double w[1 << 16]; /* this rank's state, registered before the first snapshot */
  if ((rc = ft_register(ctx, "w", w, sizeof w, NULL)) != FT_OK) return fprintf(stderr, "%s\n", ft_strerror(rc)), 1;
  uint64_t step = 0;
  if ((rc = ft_restore(ctx, &step)) == FT_OK) printf("resumed from step %llu\n", (unsigned long long)step);
  else if (rc != FT_ENOSNAPSHOT) return fprintf(stderr, "ft_restore: %s\n", ft_strerror(rc)), 1; /* never start over */
  for (; step < 100; step++) {
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) w[i] += 1e-3 * (double)i; /* "train" */
    if ((step + 1) % 10 == 0 && (rc = ft_snapshot(ctx, step + 1)) != FT_OK)
      fprintf(stderr, "ft_snapshot: %s\n", ft_strerror(rc));
  }
  printf("done at step %llu, w[1] = %.3f\n", (unsigned long long)step, w[1]);
  return ft_finalize(ctx) == FT_OK ? 0 : 1;
}
