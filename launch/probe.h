/*
 * Asking hosts whether they are there: on an ft-cluster, a ping from its
 * head ("CLUSTER_CMD ping --name C --wait 1 HOST..." prints the hosts that
 * do not answer); elsewhere the probe, "PROBE... HOST true" (the backend's
 * probe_cmd), run for every host at once, each host up to `tries` tries
 * 1, 2, 4... s apart, each try bounded by the timeout (TERM, then KILL 2 s
 * later, as timeout -k 2 T does).  This host (localhost, 127.*, ::1, its
 * names) is never asked.  Blocking: it returns once every host has answered
 * or failed, or soon after the caller's stop said so.  The probes' output
 * goes nowhere; their input is /dev/null.  Each host's tries are a child
 * process of the caller's, waited for by its pid (launch/proc.h).  In a
 * Slurm allocation Slurm is asked first (sinfo, one call for all hosts):
 * what it reports down, drained, failed or powered off is lost without a
 * job step, and only the others are probed (a node it reports not
 * responding but not yet down too: one missed ping is no loss).
 */
#ifndef FT_LAUNCH_PROBE_H
#define FT_LAUNCH_PROBE_H

#include "launch/backend.h"
#include "launch/words.h"

typedef struct ft__probe {
  const char *cluster;     /* the ft-cluster's name, or NULL */
  const char *cluster_cmd; /* its ft-cluster program */
  const char *const *words; /* hostfile, Slurm: the probe's words */
  int nwords;
  int tries;        /* FT_PROBE_TRIES (>= 1) */
  double timeout_s; /* --timeout: a try's bound */
  const char *timeout; /* --timeout as given, for messages */
  const ft__launcher_t *be;
  char *const *envp; /* the environment the probes run in */
  /* The caller's way to end the probes under way (NULL: none, they are
   * waited for to their end): while they run, whenever wake_fd is
   * readable (the caller's signal pipe: a signal, a child's end; stop
   * reads what is there) or a second has passed, stop(stop_arg) is
   * asked; once it says nonzero, each host's process gets a TERM, which
   * ends its try (KILL 2 s later) and its tries, and is waited for:
   * ft__probe_unreachable returns within about 2 s, every host not
   * answered yet counted lost.  Only the caller's process asks it: the
   * watchdog's probes have none. */
  int wake_fd;
  int (*stop)(void *arg);
  void *stop_arg;
  /* In a Slurm allocation, the sinfo program (else NULL): Slurm's own view
   * of its nodes comes before any probe, and a host it reports lost
   * (ft__probe_slurm_lost) is lost without a job step. */
  const char *sinfo;
  /* With sinfo: Slurm's view alone, no probe at all (the watchdog's rounds
   * start no job steps). */
  int view_only;
  /* Where a failing sinfo has been said (0, then 1 once said), or NULL:
   * not said. */
  int *sinfo_failed;
} ft__probe_t;

/* Those of hosts[0..n) that are lost, in their order, appended to bad;
 * tries: 0 for p->tries, else that many (named back asks once).  FT_OK,
 * FT_ENOMEM, FT_EIO (a probe that could not be started counts as failed;
 * FT_EIO only when ft-cluster ping could not be run). */
int ft__probe_unreachable(const ft__probe_t *p, const char *const *hosts,
                          int n, int tries, ft__words_t *bad);
/* How the hosts were asked, for messages: "ping from the head", "'ssh -o
 * BatchMode=yes HOST true' failed once", "... failed 3 times"; appended
 * to out. */
int ft__probe_words(const ft__probe_t *p, int tries, ft__text_t *out);
/* The cluster's "CLUSTER_CMD ping --name C [--wait W] HOST..." (wait 0:
 * no --wait, ft-cluster's 3 s): those of hosts[0..n) it prints, in their
 * order, appended to bad.  ft__probe_unreachable's ping (--wait 1), and
 * the watchdog's every second once its watch has ended (none).  FT_OK,
 * FT_ENOMEM, FT_EIO (the program could not be run). */
int ft__probe_cluster_ping(const ft__probe_t *p, const char *const *hosts,
                           int n, int wait, ft__words_t *bad);
/* What the compact state sinfo's %t prints ("idle", "alloc", "down*",
 * "drain", "fail", "mix*", ...) says of a node: LOST, it cannot run a step
 * of the job (down, drained, failed, powered off '~'); SILENT, Slurm has
 * missed its answers (not responding '*') but has not set it down yet,
 * which one missed ping of a healthy node also does; UP otherwise. */
enum { FT__SLURM_UP = 0, FT__SLURM_LOST, FT__SLURM_SILENT };
int ft__probe_slurm_state(const char *state);
/* Those of hosts[0..n) that the lines "NODE STATE" of text (sinfo -h -N
 * -o '%N %t') give a LOST state, in their order, appended to bad, the
 * SILENT ones to silent (NULL: to bad as well); a host it does not list is
 * not Slurm's to judge. */
int ft__probe_slurm_parse(const char *text, const char *const *hosts, int n,
                          ft__words_t *bad, ft__words_t *silent);
/* Slurm's view of hosts[0..n): "SINFO -h -a -N -n H1,H2,... -o '%N %t'"
 * bounded by timeout_s, parsed as ft__probe_slurm_parse.  FT_OK,
 * FT_ENOMEM, FT_EIO (no p->sinfo, or it could not be run, or it failed or
 * timed out: no view, bad and silent unchanged; said once on standard
 * error where sinfo_failed is given). */
int ft__probe_slurm_down(const ft__probe_t *p, const char *const *hosts, int n,
                         ft__words_t *bad, ft__words_t *silent);
/* 1 when host is this host (nothing to probe). */
int ft__probe_is_this_host(const char *host);

#endif
