/* Page tables filled in one call (base/pages.h). */
#include "base/pages.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void ft__prefault(const void *p, size_t len, int write) {
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
  long page = sysconf(_SC_PAGESIZE);
  if (!p || page <= 0 || len < (size_t)page)
    return;
  /* Only pages wholly inside the range: a page it shares with memory the
   * caller did not name is left to fault when touched. */
  uintptr_t mask = (uintptr_t)page - 1;
  uintptr_t a = ((uintptr_t)p + mask) & ~mask;
  uintptr_t e = ((uintptr_t)p + len) & ~mask;
  if (e <= a)
    return;
  int saved = errno;
  (void)madvise((void *)a, e - a,
                write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
  errno = saved; /* an optimisation: its failure is not the caller's */
#else
  (void)p;
  (void)len;
  (void)write;
#endif
}
