/*
 * A requeued Slurm batch job's nodes put in the order of the job's stores.
 * The run Slurm requeued (requeue.h) may get other nodes, in another
 * order: some of the old ones, whose stores in memory still hold the
 * job's committed state, and new ones.  A store keeps its node number
 * (ft-status: "layout epoch E: node I of N, ..."), and the job only
 * resumes from memory when every node is where its store says; so the
 * nodes with a store take their numbers, the new ones the numbers left,
 * in the allocation's order, and the rest stay spares.  Numbers no store
 * holds are rebuilt by the first attempt's SMPs (FT_REBUILD=replace), or
 * handed over to the disk tier when memory cannot rebuild them.
 */
#ifndef FT_LAUNCH_RESUME_H
#define FT_LAUNCH_RESUME_H

/* The node number and node count of a store as ft-status printed them:
 * 1 with *node, *of set, else 0 (no store, or no layout line). */
int ft__resume_parse(const char *status, int *node, int *of);

/* nodes 0..n of the allocation, store[i] the node number of node i's store
 * (-1: none) and of[i] its node count; want: the job's nodes.  With
 * stores that agree (every count want, no number twice) and enough nodes:
 * order[0..n) the allocation's indexes, the job's in rank order first,
 * then the spares in the allocation's order; *rebuild 1 when a number is
 * held by no store; 1.  Otherwise 0 (no store at all, or stores that do
 * not fit: ft_init says so). */
int ft__resume_order(const int *store, const int *of, int n, int want,
                     int *order, int *rebuild);

#endif
