#!/usr/bin/env bash
# ft_init keeps the application's error handler (MPI_ERRORS_RETURN, as
# mpi4py sets it) on MPI_COMM_WORLD and app_comm, although it makes its
# own splits with errors fatal: one node of this host (the ranks of one
# host name, not virtual nodes), an SMP and 2 trainers.
. "$(dirname "$0")/lib.sh"
export FT_JOB=handler
timeout -k 10 120 mpirun -np 3 "$B/tests/mpi/comm-handler" >"$LOGDIR/h" 2>&1
rc=$?
[ $rc -eq 0 ] || { log_of h; fail "comm-handler exited $rc"; }
# Counted as words: MPICH's hydra does not keep the ranks' lines whole.
[ "$(grep -o 'comm-handler: ok' "$LOGDIR/h" | wc -l)" = 2 ] || { log_of h; fail "not both trainers ok"; }
note "MPI_ERRORS_RETURN kept on MPI_COMM_WORLD and app_comm: a bad send returns MPI_ERR_RANK"
