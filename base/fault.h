/*
 * Fault-injection points (SQLite's sqlite3FaultSim idea).  They do nothing
 * unless FT_FAULT arms one:
 *
 *   FT_FAULT=[stop:|flip:|fail:]POINT[:NTH][@WHO]
 *
 * The NTH time (default 1) a process passes POINT it kills itself with
 * SIGKILL, as a crash would (with stop: it stops itself with SIGSTOP, a
 * hang: alive but silent; with flip:, at a point that allows it, the
 * caller flips a byte of what it has just received: corruption, not a
 * crash; with fail:, at a point that allows it, the caller returns an
 * error as if its own work there had failed).  WHO limits it to one
 * process: rN (world rank N) or a hostname.  Points: startup (every process in ft_init, once the
 * configuration is agreed), copy (trainer, in the middle of a snapshot
 * copy), crc (SMP, before the data CRCs), encode (SMP, in the middle of the
 * parity exchange), commit (SMP, after ENCODED, before the commit), restore
 * (ft-restore or ft_init's rebuild, in the middle of a rebuild), rebuilt
 * (the same, on the owner of a rebuilt chunk once its last byte is in,
 * before the chunk's CRC is kept; flip: allowed), source (the same, on a
 * source of a rebuilt chunk before it gives its own; flip: allowed), flush
 * (SMP's flush thread, after its first rank file of a version and before
 * its node manifest), link (fail: only: a link of a rebuild's chain that
 * sends its sum on to another, halfway through its chunk, as if its decode
 * had failed).  rN is the world rank also in ft_init's rebuild.
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
  int flip; /* the caller corrupts a byte instead */
  int fail; /* the caller returns an error instead */
} ft__fault_t;

/* Parse spec (may be "" for none).  Returns 0 or -1 if malformed. */
int ft__fault_parse(ft__fault_t *f, const char *spec);

/* Called at a point: kills (or stops) the process when this is the armed
 * pass.  Returns 1 when the caller is to flip a byte or fail (flip: or
 * fail: armed and this is its pass), else 0. */
int ft__fault_point(ft__fault_t *f, const char *point, int rank,
                    const char *host);

#endif
