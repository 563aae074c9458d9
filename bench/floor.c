/*
 * ft-bench-floor: the physical floor of a recovery's downtime (issue 18),
 * the parts a recovery cannot do without, each measured on the hosts the
 * recovery used:
 *   hello       an MPI job that starts, meets once (MPI_Barrier) and ends:
 *               what one mpirun launch costs there, whatever the program
 *   tcp BYTES   rank 0 sends BYTES to rank 1 in 4 MiB messages, after one
 *               untimed round that opens the connection: the rate of moving
 *               the lost bytes between two hosts
 * Plain MPI, no ftrt.  Rank 0 prints "result KEY VALUE" lines.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIECE = 4 << 20, WINDOW = 8 };

static void usage(FILE *f) {
  fputs("usage: ft-bench-floor hello\n"
        "       ft-bench-floor tcp BYTES\n"
        "  hello      start, one MPI_Barrier, end (time it from outside)\n"
        "  tcp BYTES  rank 0 sends BYTES to rank 1 (2 ranks)\n"
        "  --help     this text\n"
        "See ft-bench(1).\n",
        f);
}

/* Rank 0 sends `bytes` to rank 1 in pieces, WINDOW of them in flight. */
static void move(char *buf, uint64_t bytes, int rank) {
  MPI_Request req[WINDOW];
  int n = 0;
  for (uint64_t off = 0; off < bytes; off += PIECE) {
    int len = (int)(bytes - off < PIECE ? bytes - off : PIECE);
    if (n == WINDOW) {
      MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
      n = 0;
    }
    if (rank == 0)
      MPI_Isend(buf, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &req[n++]);
    else
      MPI_Irecv(buf + (off / PIECE % WINDOW) * PIECE, len, MPI_BYTE, 0, 0,
                MPI_COMM_WORLD, &req[n++]);
  }
  MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

static int tcp(uint64_t bytes) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      fprintf(stderr, "ft-bench-floor tcp: needs 2 ranks, has %d\n", size);
    return 1;
  }
  char *buf = malloc((size_t)PIECE * WINDOW);
  int ok = buf != NULL, all;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    free(buf);
    return 1;
  }
  memset(buf, 1, (size_t)PIECE * WINDOW);
  move(buf, PIECE, rank); /* opens the connection */
  MPI_Barrier(MPI_COMM_WORLD);
  double t = MPI_Wtime();
  move(buf, bytes, rank);
  MPI_Barrier(MPI_COMM_WORLD); /* the last byte is in */
  t = MPI_Wtime() - t;
  if (rank == 0)
    printf("result tcp_bytes %llu\nresult tcp_gbs %.6g\n",
           (unsigned long long)bytes, (double)bytes / t / 1e9);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int hello = argc == 2 && !strcmp(argv[1], "hello");
  uint64_t bytes = 0;
  if (argc == 3 && !strcmp(argv[1], "tcp")) {
    char *end;
    bytes = strtoull(argv[2], &end, 10);
    if (*end || bytes == 0)
      bytes = 0;
  }
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    usage(stdout);
    return 0;
  }
  if (!hello && !bytes) {
    usage(stderr);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (hello)
    MPI_Barrier(MPI_COMM_WORLD);
  else
    rc = tcp(bytes);
  MPI_Finalize();
  return rc;
}
