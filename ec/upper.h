/*
 * After every call into ISA-L.  Its AVX2 and AVX-512 kernels (crc64, the
 * erasure-code multiply-accumulate) return with the upper halves of the
 * vector registers dirty: they do not end with vzeroupper.  Until the next
 * vzeroupper, every legacy-SSE instruction the thread runs pays a
 * dependency on those upper halves -- measured on this project's 2-vCPU
 * AMD EPYC VM: an SSE-compiled training loop ran 2.5 to 4 times
 * slower for the rest of the process after one CRC in ft_snapshot, and
 * back at full speed with a vzeroupper after it.  ft__isal_done() clears
 * them before control goes back to code that may be SSE (ours, or the
 * trainer's).
 */
#ifndef FT_EC_UPPER_H
#define FT_EC_UPPER_H

#if defined(__AVX__)
#include <immintrin.h>
/* The compiler knows what the intrinsic clobbers. */
static inline void ft__isal_done(void) { _mm256_zeroupper(); }
#elif defined(__x86_64__) || defined(__i386__)
/* Built without AVX: the compiler never holds a value in an upper half, so
 * clearing them under it is safe; the instruction exists only on CPUs with
 * AVX, which are the ones ISA-L's AVX kernels run on. */
static inline void ft__isal_done(void) {
  static int avx = -1; /* a benign race: every thread finds the same */
  if (avx < 0)
    avx = __builtin_cpu_supports("avx") ? 1 : 0;
  if (avx)
    __asm__ volatile("vzeroupper" ::: "memory");
}
#else
static inline void ft__isal_done(void) {}
#endif

#endif
