/*
 * Spares prepared ahead of a recovery.  Once a job has committed its
 * first snapshot (the filter's PREPARE), every spare a recovery may take
 * next makes two files of a slot's size ("ft-spare --job J [--store R]
 * --until-eof prepare BYTES" run there as the probe reaches it: the
 * backend's host_cmd), which a rebuild takes as its slots.  The
 * preparation runs in a process group of its own, in the background; each
 * host's ft-spare reads a pipe that group holds open, so that ending the
 * group ends the preparation on the host too (through ssh as well).  A
 * preparation that failed says why (exit 3: "warning: spare H not
 * prepared: ...", 4: "warning: spare H has no room: ...", 255: nothing,
 * the probe finds out, other: "warning: spare H cannot be prepared
 * (ft-spare exit N): ...") and is undone at once ("ft-spare ... remove",
 * bounded by --timeout).  At the end of the launch, ft__spares_clear ends
 * every preparation under way, waits for it (10 s bound a hang), then
 * removes what was prepared on every spare that was.
 */
#ifndef FT_LAUNCH_SPARES_H
#define FT_LAUNCH_SPARES_H

#include <stdint.h>
#include <sys/types.h>

#include "launch/backend.h"
#include "launch/probe.h"
#include "launch/words.h"

typedef struct ft__spares {
  const char *dir;      /* the launch's temporary directory: "prepared" */
  const char *job;      /* --job */
  const char *store;    /* FT_STORE_ROOT, or NULL */
  const char *ft_spare; /* the ft-spare program */
  const ft__launch_job_t *launch; /* for the backend's host_cmd */
  const ft__probe_t *probe;       /* its words, the backend, the timeout */
  ft__words_t groups;   /* the preparations started (their pids), own */
} ft__spares_t;

/* Start preparing hosts[0..n) for slots of bytes bytes, in the
 * background: its pid is added to s->groups, and only ft__spares_clear
 * waits for it.  FT_OK, FT_EIO or FT_ENOMEM (nothing started). */
int ft__spares_prepare(ft__spares_t *s, const char *const *hosts, int n,
                       uint64_t bytes);
/* End every preparation, remove what was prepared; frees s->groups. */
void ft__spares_clear(ft__spares_t *s);

#endif
