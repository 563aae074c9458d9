/*
 * Fault-injection points (SQLite's sqlite3FaultSim idea).  They do nothing
 * unless FT_FAULT arms one:
 *
 *   FT_FAULT=[stop:]POINT[:NTH][@WHO]
 *
 * The NTH time (default 1) a process passes POINT it kills itself with
 * SIGKILL, as a crash would (with stop: it stops itself with SIGSTOP, a
 * hang: alive but silent).  WHO limits it to one process: rN (world rank
 * N) or a hostname.  Points: startup (every process in ft_init, once the
 * configuration is agreed), copy (trainer, in the middle of a snapshot
 * copy), crc (SMP, before the data CRCs), encode (SMP, in the middle of the
 * parity exchange), commit (SMP, after ENCODED, before the commit), restore
 * (ft-restore, in the middle of a rebuild), flush (SMP's flush thread,
 * after its first rank file of a version and before its node manifest).
 */
#ifndef FT_BASE_FAULT_H
#define FT_BASE_FAULT_H

typedef struct ft__fault {
  char point[16];
  int nth;
  int rank; /* -1: any */
  char host[64];
  int passes;
  int stop; /* SIGSTOP, not SIGKILL */
} ft__fault_t;

/* Parse spec (may be "" for none).  Returns 0 or -1 if malformed. */
int ft__fault_parse(ft__fault_t *f, const char *spec);

/* Called at a point: kills the process when this is the armed pass. */
void ft__fault_point(ft__fault_t *f, const char *point, int rank,
                     const char *host);

#endif
