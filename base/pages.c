/* Page tables filled in one call (base/pages.h). */
#include "base/pages.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Linux's values, where the C library does not name them yet (before glibc
 * 2.35); a kernel that does not know them answers EINVAL. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void ft__prefault(const void *p, size_t len, int write) {
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
}

/* Linux 6.9 or later (its populate gives up on a fault's I/O error).  The
 * kernel does not change under a process: asked once (0 unknown, 1 no, 2
 * yes; threads that race store the same answer). */
static int populate_gives_up(void) {
  static int known;
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k)
    return k == 2;
  struct utsname u;
  int major = 0, minor = 0, yes = 0;
  if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2)
    yes = major > 6 || (major == 6 && minor >= 9);
  __atomic_store_n(&known, yes ? 2 : 1, __ATOMIC_RELAXED);
  return yes;
}

void ft__prefault_user(void *p, size_t len) {
  if (populate_gives_up())
    ft__prefault(p, len, 1);
}

/* Linux's values (linux/magic.h). */
#define FT_TMPFS_MAGIC 0x01021994
#define FT_RAMFS_MAGIC 0x858458f6

int ft__fd_in_ram(int fd) {
  struct statfs f;
  int saved = errno, ram = 0;
  if (fstatfs(fd, &f) == 0) {
    unsigned long type = (unsigned long)f.f_type & 0xffffffffUL;
    ram = type == FT_TMPFS_MAGIC || type == FT_RAMFS_MAGIC;
  }
  errno = saved;
  return ram;
}

int ft__prefault_fd_safe(int fd) {
  return ft__fd_in_ram(fd) || populate_gives_up();
}
