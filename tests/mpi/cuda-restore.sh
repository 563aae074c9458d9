#!/usr/bin/env bash
# The CUDA capture path end to end (sync and lazy), 1 SMP + 2 trainers; skips
# (77) in a build without CUDA or on a machine without a device.
. "$(dirname "$0")/lib.sh"
[ -x "$B/tests/mpi/cuda-restore" ] || { echo "SKIP: built without CUDA"; exit 77; }
for mode in sync lazy; do
  FT_JOB=cuda-$mode FT_CAPTURE=$mode timeout -k 10 120 mpirun -np 3 "$B/tests/mpi/cuda-restore" >"$LOGDIR/$mode" 2>&1
  rc=$?
  grep -q "no CUDA device" "$LOGDIR/$mode" && { echo "SKIP: no CUDA device"; exit 77; }
  [ $rc -eq 0 ] || { cat "$LOGDIR/$mode"; fail "$mode: exit $rc"; }
  [ "$(grep -c 'FT_OK, step 5, device0 exact, device1 exact, host exact' "$LOGDIR/$mode")" -eq 2 ] ||
    { cat "$LOGDIR/$mode"; fail "$mode: restored bytes"; }
  note "$mode: device and host buffers restored exactly"
done
echo "PASS: cuda restore"
