/*
 * Where the SMP runs (hwloc).  The SMP binds itself to a core that no local
 * trainer is bound to, on the NUMA node of the first trainer, so that its CRC
 * and encode work do not steal the trainers' cores and its memory traffic
 * stays near theirs.  FT_SMP_CPUSET overrides the choice.  When there is
 * nothing to choose (the trainers may use every core) it does not bind and
 * says so.  Store pages are first touched by the trainer that writes them,
 * which places them on the trainer's NUMA node.
 */
#ifndef FT_RUNTIME_TOPO_H
#define FT_RUNTIME_TOPO_H

#include <stddef.h>

struct ft_ctx;

/* Bind the calling SMP; describe what was done in out ("bound to core 3 ..."
 * or "not bound: ..."), and the CPU list it is bound to in cpus ("" when
 * not bound). Never fails the job: binding is an optimisation. */
void ft__topo_bind_smp(struct ft_ctx *c, char *out, size_t outlen, char *cpus,
                       size_t cpuslen);

/* Move the calling thread to the CPUs of a list ("3", "2-3,7").  Lazy
 * capture runs its copier thread on the SMP's CPUs, which are idle while
 * the trainers copy, instead of on the trainer's own core.  0 or -1. */
int ft__topo_thread_to(const char *list);

/* This process's CPU affinity as a list ("0-3,8"), for the control segment. */
void ft__topo_affinity(char *out, size_t outlen);

#endif
