#!/usr/bin/env bash
# FT_SNAPSHOT_POLICY=skip|block with a snapshot asked while the previous one
# is still being protected (1 SMP + 2 trainers, 64 MiB each).
. "$(dirname "$0")/lib.sh"
export FT_CAPTURE=sync
FT_JOB=skip FT_SNAPSHOT_POLICY=skip timeout -k 10 120 mpirun -np 3 "$B/tests/mpi/policy-check" >"$LOGDIR/skip" 2>&1 ||
  { cat "$LOGDIR/skip"; fail "skip run"; }
[ "$(grep -c 'first FT_OK second FT_EBUSY wait FT_OK version 1 restore FT_OK step 1 wrong 0' "$LOGDIR/skip")" -eq 2 ] ||
  { cat "$LOGDIR/skip"; fail "skip: the second snapshot was not skipped on every rank, or version 1 not whole"; }
FT_JOB=skip "$B/ft-status" --json | grep -q '"skipped":1,' || { FT_JOB=skip "$B/ft-status"; fail "skip not counted"; }
note "skip: the second snapshot returned FT_EBUSY on both ranks, counted by ft-status; version 1 restored whole"
FT_JOB=block FT_SNAPSHOT_POLICY=block timeout -k 10 120 mpirun -np 3 "$B/tests/mpi/policy-check" >"$LOGDIR/block" 2>&1 ||
  { cat "$LOGDIR/block"; fail "block run"; }
[ "$(grep -c 'first FT_OK second FT_OK wait FT_OK version 2 restore FT_OK step 2 wrong 0' "$LOGDIR/block")" -eq 2 ] ||
  { cat "$LOGDIR/block"; fail "block: the second snapshot did not wait and succeed"; }
note "block: the second snapshot waited, version 2 committed and restored whole"
echo "PASS: snapshot policy"
