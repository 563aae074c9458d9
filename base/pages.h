/*
 * Page tables filled in one call before a large first touch.
 *
 * On the recovery's path every page of a slot, and of a trainer's buffers,
 * is touched for the first time in its process: a fault per 4 KiB page,
 * each costing several microseconds on a virtual machine.  One
 * madvise(MADV_POPULATE_READ/WRITE) (Linux 5.14) does the same work in a
 * single pass, 2 to 3 times faster here (48 MiB: CRC and copy into fresh
 * memory 77-125 ms against 226-299 ms).  It changes no byte: it only does
 * early what the first read or write would.  Where the kernel lacks it, or
 * refuses the range, nothing is done and the touches fault as before.
 */
#ifndef FT_BASE_PAGES_H
#define FT_BASE_PAGES_H

#include <stddef.h>

/* Fault in the whole pages of [p, p + len): readable, or (write != 0)
 * writable, as the first read or write of each would.  For memory of
 * ftrt's own (a slot whose file ft__prefault_fd_safe accepts). */
void ft__prefault(const void *p, size_t len, int write);

/* The same, writable, for memory an application handed to ftrt: only on
 * Linux 6.9 and later.  Before it, MADV_POPULATE_* retried a fault that
 * failed with an I/O error forever (kernel commit 631426ba1d45): a buffer
 * mapped from a file on a failing disk or NFS would hang its trainer in
 * the restore, where the copy alone dies with SIGBUS and says so. */
void ft__prefault_user(void *p, size_t len);

/* Whether populating a mapping of file fd is safe: the file lives in RAM
 * (tmpfs, ramfs: no I/O to fail), or the kernel gives up on a failed
 * fault (Linux 6.9, see above).  A store on a disk file system, on an
 * older kernel, then faults page by page as it did. */
int ft__prefault_fd_safe(int fd);

/* Whether file fd lives in RAM (tmpfs, ramfs). */
int ft__fd_in_ram(int fd);

#endif
