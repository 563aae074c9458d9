/*
 * mpi_nodes: a small MPI program for the cluster tests.  It finds the nodes
 * by host name, as ftrt does (runtime/init.c), checks that each node holds
 * consecutive ranks, reports which host holds which ranks, and moves data
 * between nodes with an allreduce whose result it checks.  With --seconds it
 * keeps doing allreduces for that long; with --forever until it is killed, so
 * that a test can kill or partition a host under a running job: once it has
 * printed "running" it stays there, however slow the machine.
 *
 * usage: mpi_nodes [--mb M] [--seconds S | --forever] [--expect-nodes N]
 *                  [--expect-ppn K]
 * Exit 0 when every check passed, 1 otherwise.  Rank 0 prints lines starting
 * with "mpi_nodes:".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOST_LEN 64

typedef struct opts {
  long mb;
  double seconds;
  int expect_nodes;
  int expect_ppn;
} opts_t;

static int parse(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.mb = 4, .seconds = 0, .expect_nodes = 0, .expect_ppn = 0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--forever")) { /* the one flag without a value */
      o->seconds = 1e300;
      continue;
    }
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      return -1;
    if (!strcmp(argv[i], "--mb"))
      o->mb = atol(v);
    else if (!strcmp(argv[i], "--seconds"))
      o->seconds = atof(v);
    else if (!strcmp(argv[i], "--expect-nodes"))
      o->expect_nodes = atoi(v);
    else if (!strcmp(argv[i], "--expect-ppn"))
      o->expect_ppn = atoi(v);
    else
      return -1;
    i++;
  }
  return o->mb >= 0 ? 0 : -1;
}

/* Every rank: is the world rank of my node's ranks a consecutive block? */
static int check_layout(MPI_Comm node, int rank, int *nnodes, int *ppn_ok,
                        int expect_ppn) {
  int lrank, lsize, leader = rank, leaders, ok, all_ok;
  MPI_Comm_rank(node, &lrank);
  MPI_Comm_size(node, &lsize);
  MPI_Bcast(&leader, 1, MPI_INT, 0, node);
  leaders = lrank == 0;
  MPI_Allreduce(&leaders, nnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ok = rank == leader + lrank;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  ok = expect_ppn == 0 || lsize == expect_ppn;
  MPI_Allreduce(&ok, ppn_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all_ok;
}

/* node: the ranks with this host name, as ftrt groups them (with the boot
 * id and the store's file system, alike on the cluster's hosts; not
 * MPI_COMM_TYPE_SHARED, which Open MPI 4.1 with an external PMIx gets
 * wrong across hosts: runtime/init.c).  Out of memory, the job ends. */
static void split_by_host(int rank, int size, MPI_Comm *node) {
  char me[HOST_LEN] = {0}, *all = calloc((size_t)size, HOST_LEN);
  gethostname(me, sizeof(me) - 1);
  if (!all)
    MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Allgather(me, HOST_LEN, MPI_CHAR, all, HOST_LEN, MPI_CHAR,
                MPI_COMM_WORLD);
  int color = rank;
  for (int r = 0; r < rank && color == rank; r++)
    if (!memcmp(all + (size_t)r * HOST_LEN, me, HOST_LEN))
      color = r;
  free(all);
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, node);
}

/* Rank 0 prints "host RANKS" for each rank's host, and whether the hosts of
 * distinct nodes are distinct. */
static void report_hosts(int rank, int size, int nnodes) {
  char me[HOST_LEN] = {0}, *all = NULL;
  gethostname(me, sizeof(me) - 1);
  if (rank == 0)
    all = calloc((size_t)size, HOST_LEN);
  MPI_Gather(me, HOST_LEN, MPI_CHAR, all, HOST_LEN, MPI_CHAR, 0,
             MPI_COMM_WORLD);
  if (rank != 0)
    return;
  printf("mpi_nodes: %d ranks on %d nodes:", size, nnodes);
  for (int r = 0; r < size;) {
    int e = r;
    while (e + 1 < size && !strcmp(all + (size_t)r * HOST_LEN,
                                   all + (size_t)(e + 1) * HOST_LEN))
      e++;
    printf(" %s[%d-%d]", all + (size_t)r * HOST_LEN, r, e);
    r = e + 1;
  }
  printf("\n");
  free(all);
}

/* One allreduce of n doubles, checked element by element. */
static int allreduce_once(double *in, double *out, size_t n, int rank,
                          int size) {
  double tri = (double)size * (size + 1) / 2;
  for (size_t i = 0; i < n; i++)
    in[i] = (double)(rank + 1) * (double)(i % 13 + 1);
  if (MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) !=
      MPI_SUCCESS)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (out[i] != tri * (double)(i % 13 + 1))
      return 0;
  return 1;
}

static int run_allreduces(const opts_t *o, int rank, int size) {
  size_t n = (size_t)o->mb * 1024 * 1024 / sizeof(double);
  double *in = malloc(n * sizeof(double) + 1);
  double *out = malloc(n * sizeof(double) + 1);
  double t0 = MPI_Wtime();
  int ok = 1, more = 1, iter = 0, all_ok;
  while (more && in && out) {
    ok &= allreduce_once(in, out, n, rank, size);
    if (rank == 0 && ++iter == 1 && o->seconds > 0) {
      printf("mpi_nodes: running\n");
      fflush(stdout);
    }
    more = rank == 0 && MPI_Wtime() - t0 < o->seconds;
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  ok &= in && out;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_nodes: allreduce of %ld MB %s\n", o->mb,
           all_ok ? "ok" : "WRONG");
  free(in);
  free(out);
  return all_ok;
}

int main(int argc, char **argv) {
  opts_t o;
  int rank, size, nnodes, consecutive, ppn_ok, ok = 1;
  MPI_Comm node;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (parse(argc, argv, &o)) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_nodes [--mb M] [--seconds S | --forever] "
                      "[--expect-nodes N] [--expect-ppn K]\n");
    MPI_Finalize();
    return 2;
  }
  split_by_host(rank, size, &node);
  consecutive = check_layout(node, rank, &nnodes, &ppn_ok, o.expect_ppn);
  report_hosts(rank, size, nnodes);
  if (rank == 0) {
    printf("mpi_nodes: ranks of each node %s\n",
           consecutive ? "consecutive" : "NOT consecutive");
    if (o.expect_nodes && nnodes != o.expect_nodes)
      printf("mpi_nodes: expected %d nodes, found %d\n", o.expect_nodes,
             nnodes);
    if (!ppn_ok)
      printf("mpi_nodes: expected %d ranks on every node\n", o.expect_ppn);
  }
  ok = consecutive && ppn_ok && (!o.expect_nodes || nnodes == o.expect_nodes);
  ok &= run_allreduces(&o, rank, size);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return ok ? 0 : 1;
}
