#!/usr/bin/env bash
# A refused rebuild under FT_REBUILD (the relaunch of ft-launch --restarts
# rebuilds in ft_init) always ends the job with a failure, even when the
# program goes on after ft_init failed and exits 0 (init-ignored): ft-launch
# reads a relaunch that exits 0 as a recovery done, and would not run
# ft-restore (exit 3, the disk tier) nor say the state was not restored.
# 3 virtual nodes (2+1); two of their stores lost: more than m=1.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2
export FT_JOB=refused
train first 6 --steps 4 --snapshot-every 2 --state-mb 1 || { log_of first | tail; fail "first run failed"; }
rm -rf "$FT_STORE_ROOT/vnode1/$FT_JOB" "$FT_STORE_ROOT/vnode2/$FT_JOB"
before=$(md5sum "$FT_STORE_ROOT/vnode0/$FT_JOB"/*)

for prog in ft-train-example tests/mpi/init-ignored; do
  name=${prog##*/}
  FT_REBUILD=replace timeout -k 10 120 mpirun -np 6 "$B/$prog" --steps 4 --snapshot-every 2 --state-mb 1 >"$LOGDIR/$name" 2>&1
  rc=$?
  [ $rc -ne 0 ] || { log_of "$name" | tail; fail "$name: the rebuild was refused but the job exited 0"; }
  grep -q "ft_init: the rebuild of the recovery (FT_REBUILD=replace): .*nothing was changed" "$LOGDIR/$name" ||
    { log_of "$name" | tail; fail "$name: no message saying the rebuild was refused"; }
  [ "$before" = "$(md5sum "$FT_STORE_ROOT/vnode0/$FT_JOB"/*)" ] || fail "$name: the refused rebuild changed vnode0's store"
  note "$name: refused rebuild, job exit status $rc, store unchanged"
done
# No process returns into the program: it cannot train on without the state.
grep -q "; going on" "$LOGDIR/init-ignored" && { log_of init-ignored | tail; fail "ft_init returned into the program after a refused rebuild"; }
# Nor when ft_init fails before the rebuild, on one node only (a bad
# variable there: its configuration falls back to the defaults) or on all.
timeout -k 10 120 mpirun -np 2 env FT_REBUILD=replace FT_LOG=bogus "$B/tests/mpi/init-ignored" : \
  -np 4 env FT_REBUILD=replace "$B/tests/mpi/init-ignored" >"$LOGDIR/bad-one" 2>&1 && fail "a bad FT_LOG on one node under FT_REBUILD: exited 0"
FT_REBUILD=replace FT_LOG=bogus timeout -k 10 120 mpirun -np 6 "$B/tests/mpi/init-ignored" >"$LOGDIR/bad-all" 2>&1 &&
  fail "a bad FT_LOG under FT_REBUILD: exited 0"
for f in bad-one bad-all; do
  grep -q "FT_LOG=bogus" "$LOGDIR/$f" || { log_of $f | tail; fail "$f: no message naming FT_LOG"; }
  grep -q "; going on" "$LOGDIR/$f" && { log_of $f | tail; fail "$f: ft_init returned into the program under FT_REBUILD"; }
done
note "a bad variable under FT_REBUILD, on one node or all: the job fails, no process goes on"
echo "PASS: a refused rebuild fails the job"
