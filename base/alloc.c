/*
 * The replaceable allocator behind ft__malloc and friends.
 *
 * This is the one mutable global of the library, against CONTRIBUTING.md rule 4,
 * and on purpose: the allocations it serves happen in functions that take no
 * context (ft__codec_create, ft__meta_read, ft__groups_form) and
 * in ft_init before a context exists, so the allocator cannot hang off
 * ft_ctx_t.  libuv keeps its uv__allocator the same way, with the same
 * contract: replaced once, before anything is allocated, never while any
 * ftrt object is alive, and not from two threads at once (ftrt.h).
 */
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>

#include "ftrt.h"

static struct {
  ft_malloc_fn malloc_fn;
  ft_realloc_fn realloc_fn;
  ft_calloc_fn calloc_fn;
  ft_free_fn free_fn;
} allocator = {malloc, realloc, calloc, free};

int ft_replace_allocator(ft_malloc_fn malloc_fn, ft_realloc_fn realloc_fn,
                         ft_calloc_fn calloc_fn, ft_free_fn free_fn) {
  if (!malloc_fn || !realloc_fn || !calloc_fn || !free_fn)
    return FT_EINVAL;
  allocator.malloc_fn = malloc_fn;
  allocator.realloc_fn = realloc_fn;
  allocator.calloc_fn = calloc_fn;
  allocator.free_fn = free_fn;
  return FT_OK;
}

void *ft__malloc(size_t size) { return allocator.malloc_fn(size ? size : 1); }

void *ft__calloc(size_t count, size_t size) {
  if (count == 0 || size == 0)
    count = size = 1;
  return allocator.calloc_fn(count, size);
}

void *ft__realloc(void *ptr, size_t size) {
  return allocator.realloc_fn(ptr, size ? size : 1);
}

void ft__free(void *ptr) {
  /* A replacement free may set errno; callers free on error paths and read
   * errno afterwards (libuv's uv__free keeps it the same way). */
  int saved = errno;
  allocator.free_fn(ptr);
  errno = saved;
}
