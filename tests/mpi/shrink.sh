#!/usr/bin/env bash
# Shrink mode on virtual nodes: 4 nodes lose one, ft-restore --mode shrink
# spreads its data over the 3 survivors, and a relaunch on 3 nodes restores
# every byte of a global tensor re-sliced for 3 ranks (and each private
# buffer from the old rank of the same number); ft-train-example keeps
# training on fewer ranks with the loss going down.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2
lose_node1() {  # the survivors are renumbered vnode0..2, as a relaunch sees them
  rm -rf "$FT_STORE_ROOT/vnode1"
  mv "$FT_STORE_ROOT/vnode2" "$FT_STORE_ROOT/vnode1"
  mv "$FT_STORE_ROOT/vnode3" "$FT_STORE_ROOT/vnode2"
}
restore() { timeout -k 10 120 mpirun -np "$1" "$B/ft-restore" "${@:2}"; }

export FT_JOB=reslice
timeout -k 10 120 mpirun -np 8 "$B/tests/mpi/reslice-check" write 7 >"$LOGDIR/w" 2>&1 || { cat "$LOGDIR/w"; fail "write"; }
lose_node1
restore 3 --mode shrink >"$LOGDIR/r" 2>&1 || { cat "$LOGDIR/r"; fail "ft-restore --mode shrink"; }
grep -q "adopted: data only" "$LOGDIR/r" || { cat "$LOGDIR/r"; fail "no adoption in the plan"; }
timeout -k 10 120 mpirun -np 6 "$B/tests/mpi/reslice-check" read 7 >"$LOGDIR/rd" 2>&1 || { cat "$LOGDIR/rd"; fail "re-sliced restore"; }
grep -q "3 ranks, status FT_OK, 0 wrong bytes, step 7" "$LOGDIR/rd" || { cat "$LOGDIR/rd"; fail "re-sliced bytes"; }
note "4 -> 3 ranks: every byte of the re-sliced tensor and of the private buffers equals the snapshot's"

export FT_JOB=shrink-train
train t1 8 --steps 10 --snapshot-every 2 --state-mb 2 || { log_of t1 | tail; fail "run on 4 nodes"; }
l10=$(sed -n 's/^step 10 loss //p' "$LOGDIR/t1")
lose_node1
restore 3 --mode shrink >"$LOGDIR/r2" 2>&1 || { cat "$LOGDIR/r2"; fail "ft-restore --mode shrink"; }
train t2 6 --steps 30 --snapshot-every 2 --state-mb 2 || { log_of t2 | tail; fail "relaunch on 3 nodes"; }
grep -q '^resumed from step 10$' "$LOGDIR/t2" || fail "did not resume from step 10"
l1=$(sed -n 's/^step 1 loss //p' "$LOGDIR/t1")
l30=$(sed -n 's/^step 30 loss //p' "$LOGDIR/t2")
awk -v a="$l30" -v b="$l10" -v c="$l1" 'BEGIN { exit !(a < b && b < c) }' ||
  fail "loss did not keep going down: step 1 $l1, step 10 $l10, step 30 $l30"
note "training went on with 3 ranks: loss step 1 $l1, step 10 $l10, step 30 $l30"
[ ! -e "$FT_STORE_ROOT/vnode0/$FT_JOB/adopt1" ] || fail "adopted store not retired after the first commit"
# A shrink killed between its two metadata phases: the next ft-restore
# finishes it (some survivor had switched) or undoes it (none had).
export FT_JOB=half
train h1 8 --steps 8 --snapshot-every 2 --state-mb 1 || fail "run on 4 nodes"
lose_node1
for v in 0 1 2; do cp "$FT_STORE_ROOT/vnode$v/$FT_JOB/meta" "$LOGDIR/old$v"; done
restore 3 --mode shrink >"$LOGDIR/h2" 2>&1 || { cat "$LOGDIR/h2"; fail "shrink"; }
# survivor 1 is left with the new metadata pending and its old one in place
mv "$FT_STORE_ROOT/vnode1/$FT_JOB/meta" "$FT_STORE_ROOT/vnode1/$FT_JOB/meta.next"
cp "$LOGDIR/old1" "$FT_STORE_ROOT/vnode1/$FT_JOB/meta"
restore 3 >"$LOGDIR/h3" 2>&1 || { cat "$LOGDIR/h3"; fail "ft-restore after a half-switched shrink"; }
grep -q "an interrupted shrink was completed" "$LOGDIR/h3" || { cat "$LOGDIR/h3"; fail "not completed"; }
train h4 6 --steps 12 --snapshot-every 2 --state-mb 1 || { log_of h4 | tail; fail "relaunch after completion"; }
grep -q '^resumed from step 8$' "$LOGDIR/h4" || fail "no resume after the completed shrink"
note "a shrink half switched is completed by the next ft-restore; the relaunch resumes from step 8"
# Only survivor 2 had written its new metadata when the restore died.
export FT_JOB=half2
train h5 8 --steps 8 --snapshot-every 2 --state-mb 1 || fail "run on 4 nodes"
lose_node1
for v in 0 1 2; do cp "$FT_STORE_ROOT/vnode$v/$FT_JOB/meta" "$LOGDIR/old$v"; done
restore 3 --mode shrink >/dev/null 2>&1 || fail "shrink"
cp "$FT_STORE_ROOT/vnode2/$FT_JOB/meta" "$LOGDIR/new2"
for v in 0 1 2; do cp "$LOGDIR/old$v" "$FT_STORE_ROOT/vnode$v/$FT_JOB/meta"; done
rm -rf "$FT_STORE_ROOT"/vnode*/"$FT_JOB"/adopt*
cp "$LOGDIR/new2" "$FT_STORE_ROOT/vnode2/$FT_JOB/meta.next"
restore 3 --mode shrink >"$LOGDIR/h6" 2>&1 || { cat "$LOGDIR/h6"; fail "ft-restore after a half-written shrink"; }
grep -q "an interrupted shrink was undone" "$LOGDIR/h6" && grep -q "restored version 4 (step 8): 1 lost node" "$LOGDIR/h6" ||
  { cat "$LOGDIR/h6"; fail "not undone and redone"; }
train h7 6 --steps 12 --snapshot-every 2 --state-mb 1 || { log_of h7 | tail; fail "relaunch after redo"; }
grep -q '^resumed from step 8$' "$LOGDIR/h7" || fail "no resume after the redone shrink"
note "a shrink half written is undone and redone by the next ft-restore"
echo "PASS: shrink"
