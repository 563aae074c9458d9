#!/usr/bin/env bash
# 1,000 registered buffers a rank (issue 14.7: ftrt refused the 257th): on
# 4 virtual nodes every buffer is snapshotted and restored bit for bit by
# a relaunch, and after one node is lost and ft-restore --mode shrink,
# re-sliced onto 3 ranks (each new rank's buffers from the old rank of its
# number).
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2 FT_JOB=many-bufs
N=1000
run() { timeout -k 10 120 mpirun -np "$1" "$B/tests/mpi/many-bufs" "${@:2}"; }

run 8 write 5 $N >"$LOGDIR/w" 2>&1 || { cat "$LOGDIR/w"; fail "snapshot of $N buffers"; }
grep -q "4 ranks of $N buffers, status FT_OK" "$LOGDIR/w" || { cat "$LOGDIR/w"; fail "write"; }
run 8 read 5 $N >"$LOGDIR/r" 2>&1 || { cat "$LOGDIR/r"; fail "restore of $N buffers"; }
grep -q "4 ranks of $N buffers, status FT_OK, 0 wrong bytes, step 5" "$LOGDIR/r" || { cat "$LOGDIR/r"; fail "restored bytes"; }
note "4 ranks x $N buffers: every byte restored by a relaunch"

rm -rf "$FT_STORE_ROOT/vnode1"
mv "$FT_STORE_ROOT/vnode2" "$FT_STORE_ROOT/vnode1"
mv "$FT_STORE_ROOT/vnode3" "$FT_STORE_ROOT/vnode2"
timeout -k 10 120 mpirun -np 3 "$B/ft-restore" --mode shrink >"$LOGDIR/s" 2>&1 || { cat "$LOGDIR/s"; fail "ft-restore --mode shrink"; }
run 6 read 5 $N >"$LOGDIR/rs" 2>&1 || { cat "$LOGDIR/rs"; fail "re-sliced restore of $N buffers"; }
grep -q "3 ranks of $N buffers, status FT_OK, 0 wrong bytes, step 5" "$LOGDIR/rs" || { cat "$LOGDIR/rs"; fail "re-sliced bytes"; }
note "after a shrink to 3 ranks: every byte of their $N buffers re-sliced"
