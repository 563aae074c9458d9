/*
 * The library's allocator (CONTRIBUTING.md rule 11, libuv's uv__malloc): every block
 * ftrt allocates for itself goes through these, so that ft_replace_allocator
 * can put a counting or failing allocator under the whole library (the
 * out-of-memory test does).  Memory handed out by another library (hwloc,
 * MPI, ISA-L, getline) is still freed with that library's own function.
 *
 * A size of 0 is allocated as 1 byte, so NULL always means out of memory;
 * on NULL from ft__realloc, ptr is untouched.  ft__free accepts NULL and
 * leaves errno as it was.
 */
#ifndef FT_BASE_ALLOC_H
#define FT_BASE_ALLOC_H

#include <stddef.h>

void *ft__malloc(size_t size);
void *ft__calloc(size_t count, size_t size);
void *ft__realloc(void *ptr, size_t size);
void ft__free(void *ptr);

#endif
