#!/usr/bin/env bash
# The CUDA capture path end to end (sync and lazy), 1 SMP + 2 trainers, with
# the store where the tests keep it (/tmp: on a disk file system CUDA may
# refuse to pin it, and the copies go through its staging, with a warning)
# and on tmpfs (/dev/shm: pinned); skips (77) in a build without CUDA or on a
# machine without a device.
. "$(dirname "$0")/lib.sh"
[ -x "$B/tests/mpi/cuda-restore" ] || { echo "SKIP: built without CUDA"; exit 77; }
SHM_STORE=$(mktemp -d /dev/shm/ftrt-test.XXXXXX)
trap 'rm -rf "$FT_STORE_ROOT" "$LOGDIR" ${MPIRUN_DIR:+"$MPIRUN_DIR"} "$SHM_STORE"' EXIT
for run in sync:"$FT_STORE_ROOT" lazy:"$FT_STORE_ROOT" sync:"$SHM_STORE"; do
  mode=${run%%:*} root=${run#*:}
  FT_STORE_ROOT=$root FT_JOB=cuda-$mode FT_CAPTURE=$mode timeout -k 10 120 \
    mpirun -np 3 -x FT_STORE_ROOT "$B/tests/mpi/cuda-restore" >"$LOGDIR/$mode" 2>&1
  rc=$?
  grep -q "no CUDA device" "$LOGDIR/$mode" && { echo "SKIP: no CUDA device"; exit 77; }
  [ $rc -eq 0 ] || { cat "$LOGDIR/$mode"; fail "$mode, store in $root: exit $rc"; }
  [ "$(grep -c 'FT_OK, step 5, device0 exact, device1 exact, host exact' "$LOGDIR/$mode")" -eq 2 ] ||
    { cat "$LOGDIR/$mode"; fail "$mode, store in $root: restored bytes"; }
  pinned=pinned
  if grep -q "CUDA cannot pin the store" "$LOGDIR/$mode"; then
    [ "$root" != "$SHM_STORE" ] || { cat "$LOGDIR/$mode"; fail "a store on tmpfs was not pinned"; }
    pinned="not pinned (CUDA refused; warned)"
  fi
  note "$mode, store in $root ($pinned): device and host buffers restored exactly"
done
echo "PASS: cuda restore"
