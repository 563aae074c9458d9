/*
 * The budget allocator of the out-of-memory tests (test_alloc, test_filter),
 * the way libuv's test-loop-oom does it: oom_use_budget(n) puts an allocator
 * under the library (ft_replace_allocator) that hands out n blocks, then
 * refuses every allocation (counting them in oom_refused) until the next
 * oom_use_budget; n < 0 is no limit.  oom_live counts the blocks handed out
 * and not freed.  oom_use_default puts the C library's allocator back.
 */
#ifndef FT_TESTS_UNIT_BUDGET_H
#define FT_TESTS_UNIT_BUDGET_H

extern long oom_budget;  /* allocations still allowed; < 0: no limit */
extern long oom_live;    /* blocks handed out and not freed */
extern long oom_refused; /* allocations refused since the last reset */

#include <stddef.h>

/* The allocator itself, for a test that installs it by hand. */
void *oom_malloc(size_t n);
void *oom_calloc(size_t count, size_t n);
void *oom_realloc(void *old, size_t n);
void oom_free(void *p);

void oom_use_budget(long n);
void oom_use_default(void);

#endif
