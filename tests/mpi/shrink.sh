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
# A second loss after a shrink, before the smaller job commits anything:
# the re-slice point still describes the layout its version was made in,
# so it is recovered in those terms (the lost nodes of both faults are
# erasures of the same stripes) or refused when that is beyond m.
lose() {  # lose N NNODES: vnode N goes, the later ones move down by one
  local v
  rm -rf "${FT_STORE_ROOT:?}/vnode$1"
  for ((v = $1 + 1; v < $2; v++)); do mv "$FT_STORE_ROOT/vnode$v" "$FT_STORE_ROOT/vnode$((v - 1))"; done
}
export FT_JOB=second FT_EC_K=3 FT_EC_M=2
timeout -k 10 120 mpirun -np 10 "$B/tests/mpi/reslice-check" write 7 >"$LOGDIR/s1" 2>&1 || { cat "$LOGDIR/s1"; fail "write on 5 nodes"; }
lose 1 5
restore 4 --mode shrink >"$LOGDIR/s2" 2>&1 || { cat "$LOGDIR/s2"; fail "first shrink"; }
lose 2 4   # the node that was vnode3 when the version was made
restore 3 --mode shrink >"$LOGDIR/s3" 2>&1 || { cat "$LOGDIR/s3"; fail "second shrink (2 losses, m=2)"; }
grep -q "lost node 1 (" "$LOGDIR/s3" && grep -q "lost node 3 (" "$LOGDIR/s3" ||
  { cat "$LOGDIR/s3"; fail "the second restore did not name nodes 1 and 3 of the version's layout as lost"; }
FT_EC_K=2 FT_EC_M=1 timeout -k 10 120 mpirun -np 6 "$B/tests/mpi/reslice-check" read 7 >"$LOGDIR/s4" 2>&1 || { cat "$LOGDIR/s4"; fail "re-sliced restore after two losses"; }
grep -q "3 ranks, status FT_OK, 0 wrong bytes, step 7" "$LOGDIR/s4" || { cat "$LOGDIR/s4"; fail "re-sliced bytes after two losses"; }
note "3+2, two losses around a shrink: every byte re-sliced onto 3 ranks"
# The same with m=1: beyond m, refused (exit 3), nothing reported restored,
# the survivors' stores untouched.
export FT_JOB=second1 FT_EC_K=3 FT_EC_M=1
timeout -k 10 120 mpirun -np 8 "$B/tests/mpi/reslice-check" write 7 >"$LOGDIR/t1" 2>&1 || { cat "$LOGDIR/t1"; fail "write on 4 nodes"; }
lose 1 4
restore 3 --mode shrink >"$LOGDIR/t2" 2>&1 || { cat "$LOGDIR/t2"; fail "first shrink (m=1)"; }
lose 2 3
before=$(cd "$FT_STORE_ROOT" && find vnode0/$FT_JOB vnode1/$FT_JOB -type f | sort | xargs md5sum)
rc=0; restore 2 --mode shrink >"$LOGDIR/t3" 2>&1 || rc=$?
[ $rc = 3 ] || { cat "$LOGDIR/t3"; fail "second loss beyond m=1: ft-restore exit $rc, want 3"; }
grep -q "restored" "$LOGDIR/t3" && { cat "$LOGDIR/t3"; fail "ft-restore reported a restore it did not do"; }
grep -q "FT_ETOOMANY" "$LOGDIR/t3" || { cat "$LOGDIR/t3"; fail "no FT_ETOOMANY message"; }
after=$(cd "$FT_STORE_ROOT" && find vnode0/$FT_JOB vnode1/$FT_JOB -type f | sort | xargs md5sum)
[ "$before" = "$after" ] || fail "a refused restore changed the survivors' stores"
note "3+1, two losses around a shrink: refused with exit 3, survivors untouched"
unset FT_EC_K FT_EC_M
echo "PASS: shrink"
