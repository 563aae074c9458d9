/*
 * hwloc-based binding of the SMP.  Trainers publish their affinity (a CPU
 * list) in the control segment when they attach; the SMP reads the lists
 * once, at layout time, when every trainer of the node is known.
 */
#include "runtime/topo.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ctx.h"

void ft__topo_affinity(char *out, size_t outlen) {
  cpu_set_t set;
  out[0] = '\0';
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return;
  size_t n = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && n + 12 < outlen; cpu++) {
    if (!CPU_ISSET(cpu, &set))
      continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
      last++;
    n += (size_t)snprintf(out + n, outlen - n, last > cpu ? "%s%d-%d" : "%s%d",
                          n ? "," : "", cpu, last);
    cpu = last;
  }
}

/* Union of the trainers' CPU lists. */
static hwloc_bitmap_t trainers_set(const ft_ctx_t *c) {
  hwloc_bitmap_t all = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc();
  for (int i = 0; i < c->nlocal; i++) {
    if (hwloc_bitmap_list_sscanf(one, c->ctl->rank[i].cpuset) == 0)
      hwloc_bitmap_or(all, all, one);
  }
  hwloc_bitmap_free(one);
  return all;
}

typedef struct where {
  char *out, *cpus;
  size_t outlen, cpuslen;
} where_t;

static void bind_to(hwloc_topology_t topo, hwloc_const_bitmap_t set,
                    const char *why, where_t *w) {
  char list[128];
  hwloc_bitmap_list_snprintf(list, sizeof(list), set);
  if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0) {
    snprintf(w->out, w->outlen, "not bound: binding to CPUs %s failed", list);
    return;
  }
  snprintf(w->out, w->outlen, "bound to CPUs %s (%s)", list, why);
  snprintf(w->cpus, w->cpuslen, "%s", list);
}

int ft__topo_thread_to(const char *list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const char *p = list; *p;) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p || a < 0 || a >= CPU_SETSIZE)
      return -1;
    if (*end == '-')
      b = strtol(end + 1, &end, 10);
    for (long cpu = a; cpu <= b && cpu < CPU_SETSIZE; cpu++)
      CPU_SET(cpu, &set);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return -1;
  }
  return CPU_COUNT(&set) &&
                 pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0
             ? 0
             : -1;
}

/* The NUMA node whose CPUs include cpu (NUMA nodes are memory children in
 * hwloc 2, not ancestors of PUs, so they are searched by cpuset). */
static hwloc_obj_t numa_of(hwloc_topology_t topo, int cpu) {
  hwloc_obj_t o = NULL;
  while (cpu >= 0 &&
         (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)))
    if (hwloc_bitmap_isset(o->cpuset, (unsigned)cpu))
      return o;
  return NULL;
}

/* A free core next to the trainers: same NUMA node as the first of them.
 * Only among the CPUs this process was started on: a host confined to some
 * CPUs (taskset, as ft-cluster up --cpus-per-host does, or a cpuset the
 * launcher set) keeps its SMP there; hwloc's allowed set is the cgroup's,
 * the whole machine. */
static void choose(hwloc_topology_t topo, hwloc_bitmap_t busy, where_t *w) {
  hwloc_bitmap_t online =
      hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
  hwloc_bitmap_t mine = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) == 0 &&
      !hwloc_bitmap_iszero(mine))
    hwloc_bitmap_and(online, online, mine);
  hwloc_bitmap_free(mine);
  hwloc_bitmap_t free_set = hwloc_bitmap_alloc();
  hwloc_bitmap_andnot(free_set, online, busy);
  if (hwloc_bitmap_iszero(free_set)) {
    snprintf(w->out, w->outlen,
             "not bound: the trainers may run on every one of the %d CPUs "
             "this node may use, nothing to choose",
             hwloc_bitmap_weight(online));
    hwloc_bitmap_free(free_set);
    hwloc_bitmap_free(online);
    return;
  }
  hwloc_obj_t numa = numa_of(topo, hwloc_bitmap_first(busy));
  hwloc_bitmap_t near = hwloc_bitmap_alloc();
  if (numa)
    hwloc_bitmap_and(near, free_set, numa->cpuset);
  hwloc_bitmap_t pick = hwloc_bitmap_alloc();
  hwloc_bitmap_only(pick, (unsigned)hwloc_bitmap_first(
                              hwloc_bitmap_iszero(near) ? free_set : near));
  bind_to(topo, pick,
          hwloc_bitmap_iszero(near) ? "a core no trainer uses"
                                    : "a free core next to the trainers",
          w);
  hwloc_bitmap_free(pick);
  hwloc_bitmap_free(near);
  hwloc_bitmap_free(free_set);
  hwloc_bitmap_free(online);
}

void ft__topo_bind_smp(ft_ctx_t *c, char *out, size_t outlen, char *cpus,
                       size_t cpuslen) {
  where_t w = {out, cpus, outlen, cpuslen};
  cpus[0] = '\0';
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    snprintf(out, outlen, "not bound: hwloc could not read the topology");
    return;
  }
  if (c->cfg.smp_cpuset[0]) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (hwloc_bitmap_list_sscanf(set, c->cfg.smp_cpuset) == 0 &&
        !hwloc_bitmap_iszero(set))
      bind_to(topo, set, "FT_SMP_CPUSET", &w);
    else
      snprintf(out, outlen, "not bound: FT_SMP_CPUSET=%s names no CPU",
               c->cfg.smp_cpuset);
    hwloc_bitmap_free(set);
  } else {
    hwloc_bitmap_t busy = trainers_set(c);
    choose(topo, busy, &w);
    hwloc_bitmap_free(busy);
  }
  hwloc_topology_destroy(topo);
}
