/* The budget allocator of the out-of-memory tests (budget.h). */
#include "tests/unit/budget.h"

#include <check.h>
#include <stdlib.h>

#include "ftrt.h"

long oom_budget = -1, oom_live, oom_refused;

static int spend(void) {
  if (oom_budget == 0) {
    oom_refused++;
    return 0;
  }
  if (oom_budget > 0)
    oom_budget--;
  return 1;
}

void *oom_malloc(size_t n) {
  void *p = spend() ? malloc(n) : NULL;
  oom_live += p != NULL;
  return p;
}

void *oom_calloc(size_t count, size_t n) {
  void *p = spend() ? calloc(count, n) : NULL;
  oom_live += p != NULL;
  return p;
}

void *oom_realloc(void *old, size_t n) {
  void *p = spend() ? realloc(old, n) : NULL;
  oom_live += p != NULL && old == NULL;
  return p;
}

void oom_free(void *p) {
  oom_live -= p != NULL;
  free(p);
}

void oom_use_budget(long n) {
  oom_budget = n;
  oom_refused = 0;
  ck_assert_int_eq(
      ft_replace_allocator(oom_malloc, oom_realloc, oom_calloc, oom_free),
      FT_OK);
}

void oom_use_default(void) {
  ck_assert_int_eq(ft_replace_allocator(malloc, realloc, calloc, free), FT_OK);
}
