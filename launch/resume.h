/*
 * A requeued Slurm batch job's nodes put in the order of the job's stores.
 * The run Slurm requeued (requeue.h) may get other nodes, in another
 * order: some of the old ones, whose stores in memory still hold the
 * job's committed state, and new ones.  A store keeps its node number
 * (ft-status: "layout epoch E: node I of N, ..."), and the job only
 * resumes from memory when every node is where its store says; so the
 * nodes with a store take their numbers, the new ones the numbers left,
 * in the allocation's order, and the rest stay spares.  Only the newest
 * layout counts: a store of an older epoch (a node replaced before, whose
 * old store outlived the run) is stale, and a job that shrank before the
 * requeue resumes on as many nodes as its stores have.  Numbers no store
 * holds are rebuilt by the first attempt's SMPs (FT_REBUILD=replace), or
 * handed over to the disk tier when memory cannot rebuild them.
 */
#ifndef FT_LAUNCH_RESUME_H
#define FT_LAUNCH_RESUME_H

/* What ft-status said of one node's store: node -1 when it has none. */
typedef struct ft__resume_store {
  int node, of;   /* its node number, its node count */
  unsigned epoch; /* its layout's epoch */
  int stale;      /* ft__resume_order: an older layout's, not used */
} ft__resume_store_t;

/* The node number, node count and epoch of a store as ft-status printed
 * them ("layout epoch E: node I of N, ..."): 1 with *st set, else 0 (no
 * store, or no layout line) and *st unchanged. */
int ft__resume_parse(const char *status, ft__resume_store_t *st);

/* st[0..n) what the allocation's nodes hold, in its order; want: the
 * job's nodes.  Only the newest layout's stores count: an older epoch's
 * are stale (marked, and taken as none).  With stores that agree (every
 * count the same N, at most want, no number twice) and enough nodes:
 * order[0..n) the allocation's indexes, the job's N in rank order first,
 * then the spares in the allocation's order; *rebuild 1 when a number is
 * held by no store; N (less than want when the job shrank before it was
 * requeued).  Otherwise 0 (no store at all, or stores that do not fit:
 * ft_init says so). */
int ft__resume_order(ft__resume_store_t *st, int n, int want, int *order,
                     int *rebuild);

#endif
