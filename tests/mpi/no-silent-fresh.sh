#!/usr/bin/env bash
# Committed state is never thrown away without being asked (issue 14.3), on
# 3 virtual nodes of one host (2+1).  A finished job's store: one node's two
# slots marked EMPTY (as a lost or cleared store would look), the others
# still holding the committed versions.  A relaunch must not start fresh:
# it is refused with a message naming the job, the committed version and
# what each host holds, and the stores are unchanged.  ft-restore then
# rebuilds the lost copy in place (issue 14.4) and the relaunch resumes.
# FT_FRESH=1 (ft-launch --fresh) starts over explicitly, and a later
# relaunch of that job resumes normally.  Stores of two runs of one
# job name never mix, and damaged slot headers never lead to a fresh start.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2
ARGS="--steps 8 --snapshot-every 2 --state-mb 1"
stores() { md5sum "$FT_STORE_ROOT"/vnode*/"$FT_JOB"/slot* "$FT_STORE_ROOT"/vnode*/"$FT_JOB"/meta; }

FT_JOB=ref train ref 6 $ARGS || { log_of ref | tail; fail "fault-free run failed"; }
REF=$(digest_of ref)

export FT_JOB=lost-slots
train first 6 $ARGS || { log_of first | tail; fail "first run failed"; }
# The slot header's state word is at offset 12 (after magic and format):
# the state in the low 16 bits, its complement in the high 16
# (snapshot/store.h), so EMPTY is 00 00 ff ff.
for s in 0 1; do
  printf '\0\0\377\377' | dd of="$FT_STORE_ROOT/vnode1/$FT_JOB/slot$s" bs=1 seek=12 conv=notrunc status=none
done
before=$(stores)
train again 6 $ARGS && { log_of again | tail; fail "a relaunch over committed state no node set holds whole exited 0"; }
grep -q '^fresh start' "$LOGDIR/again" && fail "the relaunch started fresh over committed state"
grep -q "job 'lost-slots': version [0-9]* was committed, but no version is held whole by every node" "$LOGDIR/again" ||
  { log_of again | tail; fail "no clear refusal message"; }
grep -q -- "\`--fresh\` (FT_FRESH=1) starts over" "$LOGDIR/again" || fail "the refusal does not say how to start over"
[ "$before" = "$(stores)" ] || fail "the refused relaunch changed the stores"
note "refused: $(grep -m1 -o "version [0-9]* was committed[^(]*" "$LOGDIR/again")"
grep -q "Run ft-restore to rebuild the lost or damaged copies" "$LOGDIR/again" ||
  { log_of again | tail; fail "the refusal does not point at ft-restore"; }
# As it says: ft-restore rebuilds vnode1's copy of version 4 in place from
# the two others (2+1: one erasure per stripe); the relaunch resumes.
timeout -k 10 120 mpirun -np 3 "$B/ft-restore" >"$LOGDIR/restore-lost" 2>&1 ||
  { log_of restore-lost | tail; fail "ft-restore of the copy vnode1 lost failed"; }
grep -Eq "damaged copy of version 4 on .* \(node 1, group 0 position [0-2]\): slot0 holds version 4 \(EMPTY\); rebuilt in place" "$LOGDIR/restore-lost" ||
  { log_of restore-lost | tail; fail "ft-restore does not name the lost copy"; }
grep -q "restored version 4 (step 8): 0 lost node(s), 0 corrupt chunk(s), 1 damaged copy(ies)" "$LOGDIR/restore-lost" ||
  { log_of restore-lost | tail; fail "ft-restore's summary"; }
train rebuilt 6 $ARGS || { log_of rebuilt | tail; fail "relaunch after ft-restore rebuilt the lost copy failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/rebuilt" || { log_of rebuilt | head; fail "expected resume from step 8"; }
expect_digest rebuilt "$REF" "a copy lost on a live node, rebuilt by ft-restore"

FT_FRESH=1 train fresh 6 $ARGS || { log_of fresh | tail; fail "FT_FRESH=1 run failed"; }
grep -q '^fresh start' "$LOGDIR/fresh" || fail "FT_FRESH=1 did not start fresh"
grep -q "FT_FRESH=1: starting over; version [0-9]* of job 'lost-slots' is discarded" "$LOGDIR/fresh" ||
  { log_of fresh | tail; fail "FT_FRESH=1 does not say what it discards"; }
expect_digest fresh "$REF" "FT_FRESH=1 started over"
train after 6 $ARGS || { log_of after | tail; fail "relaunch after the fresh run failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/after" || { log_of after | head; fail "expected resume from step 8"; }
expect_digest after "$REF" "relaunch after FT_FRESH=1"

# A store of another run of the same job name (a host that kept the store
# of an earlier run) never mixes with this run's: the relaunch and
# ft-restore both refuse, naming it, and change nothing.
export FT_JOB=two-runs
train runA 6 $ARGS || fail "run A failed"
cp -a "$FT_STORE_ROOT/vnode2/$FT_JOB" "$LOGDIR/old-store"
FT_FRESH=1 train runB 6 $ARGS || fail "run B (FT_FRESH=1) failed"
rm -rf "$FT_STORE_ROOT/vnode2/$FT_JOB"
cp -a "$LOGDIR/old-store" "$FT_STORE_ROOT/vnode2/$FT_JOB"
before=$(stores)
train mixed 6 $ARGS && fail "a launch over stores of two runs exited 0"
grep -q "belong to another run of this job name" "$LOGDIR/mixed" ||
  { log_of mixed | tail; fail "no clear message for stores of two runs"; }
timeout -k 10 120 mpirun -np 3 "$B/ft-restore" >"$LOGDIR/restore-mixed" 2>&1
rc=$?
[ $rc = 1 ] || { log_of restore-mixed | tail; fail "ft-restore over two runs: exit $rc, expected 1"; }
grep -q "stores of two different runs of job 'two-runs'" "$LOGDIR/restore-mixed" ||
  { log_of restore-mixed | tail; fail "ft-restore over two runs: no clear message"; }
[ "$before" = "$(stores)" ] || fail "a refusal over two runs changed the stores"
note "two runs never mix: $(grep -m1 -o 'the stores on [^(]*' "$LOGDIR/mixed")"

# A damaged copy of the newest committed version never means a silent
# rollback to the one before.  The job is held as its SMPs enter the commit
# of version 4 (step 8: ENCODED everywhere, version 3 COMMITTED in the other
# slot) and killed there; node 0 is marked as having seen the commit (the
# state word of COMMITTED, 04 00 fb ff), vnode1's copy of version 4 is
# damaged (a byte of seg_bytes flipped: its header checksum fails).  The
# relaunch refuses rather than resume from step 6 and overwrite version 4
# everywhere.
export FT_JOB=rollback
FT_HOLD=phase=commit,step=8 train_bg full 6 $ARGS
for v in 0 1 2; do held full --vnode $v; done
# Kill the SMPs (mpirun then ends the job); a TERM to mpirun itself can
# leave it hanging on a loaded machine.
for v in 0 1 2; do
  pid=$(FT_JOB=$FT_JOB "$B/ft-status" --vnode $v --json | sed -n 's/.*"smp":{"pid":\([0-9]*\).*/\1/p')
  [ -n "$pid" ] && kill -9 "$pid"
done
wait "$PID" && fail "mpirun exited 0 after its SMPs were killed"
printf '\x04\0\xfb\xff' | dd of="$FT_STORE_ROOT/vnode0/$FT_JOB/slot0" bs=1 seek=12 conv=notrunc status=none
printf '\x5a' | dd of="$FT_STORE_ROOT/vnode1/$FT_JOB/slot0" bs=1 seek=104 conv=notrunc status=none
before=$(stores)
train rolled 6 $ARGS && { log_of rolled | tail; fail "a relaunch that would roll back a committed version exited 0"; }
grep -q '^resumed from' "$LOGDIR/rolled" && fail "the relaunch rolled back to an older version"
grep -q "job 'rollback': version 4 was committed, but only version 3 is held whole by every node" "$LOGDIR/rolled" ||
  { log_of rolled | tail; fail "no clear message for a rollback"; }
[ "$before" = "$(stores)" ] || fail "the refused relaunch changed the stores"
note "no silent rollback: $(grep -m1 -o 'version 4 was committed[^(]*' "$LOGDIR/rolled")"
# Asked for on every node, the rollback happens, and says what it discards.
FT_ALLOW_ROLLBACK=1 train rolled-ok 6 $ARGS || { log_of rolled-ok | tail; fail "FT_ALLOW_ROLLBACK=1 relaunch failed"; }
grep -q '^resumed from step 6$' "$LOGDIR/rolled-ok" || { log_of rolled-ok | head; fail "expected resume from step 6"; }
grep -q "FT_ALLOW_ROLLBACK=1: resuming from version 3; version 4 of job 'rollback'" "$LOGDIR/rolled-ok" ||
  { log_of rolled-ok | tail; fail "the rollback does not say what it discards"; }
expect_digest rolled-ok "$REF" "FT_ALLOW_ROLLBACK=1, resumed from step 6"

# The same, without the commit notice anywhere (version 4 ENCODED on every
# node, vnode1's copy damaged): version 4 may have been committed, so
# ft-restore rebuilds vnode1's copy (issue 14.4) instead of falling back to
# version 3 -- also when it is cut short mid-rebuild (FT_FAULT=restore on
# vnode1) and run again: the copies it rebuilds from are marked COMMITTED
# first, so the half-made copy cannot make version 4 look never committed.
export FT_JOB=encoded-damaged
FT_HOLD=phase=commit,step=8 train_bg held 6 $ARGS
for v in 0 1 2; do held held --vnode $v; done
for v in 0 1 2; do
  pid=$(FT_JOB=$FT_JOB "$B/ft-status" --vnode $v --json | sed -n 's/.*"smp":{"pid":\([0-9]*\).*/\1/p')
  [ -n "$pid" ] && kill -9 "$pid"
done
wait "$PID" && fail "mpirun exited 0 after its SMPs were killed"
printf '\x5a' | dd of="$FT_STORE_ROOT/vnode1/$FT_JOB/slot0" bs=1 seek=104 conv=notrunc status=none
FT_FAULT=restore@r1 timeout -k 10 120 mpirun -np 3 "$B/ft-restore" >"$LOGDIR/restore-cut" 2>&1 &&
  { log_of restore-cut | tail; fail "ft-restore with FT_FAULT=restore@r1 exited 0"; }
grep -q "damaged copy of version 4 on .*header checksum mismatch.*; rebuilt in place" "$LOGDIR/restore-cut" ||
  { log_of restore-cut | tail; fail "ft-restore does not name the damaged copy"; }
timeout -k 10 120 mpirun -np 3 "$B/ft-restore" >"$LOGDIR/restore-again" 2>&1 ||
  { log_of restore-again | tail; fail "ft-restore run again after being cut short failed"; }
grep -q "restored version 4 (step 8): 0 lost node(s), 0 corrupt chunk(s), 1 damaged copy(ies)" "$LOGDIR/restore-again" ||
  { log_of restore-again | tail; fail "ft-restore run again did not rebuild version 4"; }
train resumed 6 $ARGS || { log_of resumed | tail; fail "relaunch after the rebuild failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/resumed" || { log_of resumed | head; fail "expected resume from step 8"; }
expect_digest resumed "$REF" "a damaged copy of an uncommitted, fully encoded version, rebuilt"

# FT_FRESH=1 that reaches one node only removes nothing and is refused.
before=$(stores)
timeout -k 10 120 mpirun -np 2 env FT_FRESH=1 "$B/ft-train-example" $ARGS : -np 4 "$B/ft-train-example" $ARGS \
  >"$LOGDIR/partial" 2>&1 && fail "a launch with FT_FRESH=1 on one node only exited 0"
grep -q "FT_FRESH is not the same on every process of the job (1 on rank 0, [^;]*; 0 on rank 2, [^)]*): nothing was changed" "$LOGDIR/partial" ||
  { log_of partial | tail; fail "no clear message for a partial FT_FRESH"; }
[ "$before" = "$(stores)" ] || fail "a partial FT_FRESH removed something"
note "FT_FRESH=1 on one node only: refused, nothing removed"

# One node (1+0), both slots' headers damaged (not blank): nothing shows a
# committed version, yet one may have been there; no silent fresh start.
unset FT_VIRTUAL_NODE_RANKS
export FT_JOB=damaged
train one 2 $ARGS || fail "one-node run failed"
for s in 0 1; do
  printf '\x5a' | dd of="$FT_STORE_ROOT/$FT_JOB/slot$s" bs=1 seek=104 conv=notrunc status=none
done
train one-again 2 $ARGS && fail "a relaunch over damaged slots exited 0"
grep -q '^fresh start' "$LOGDIR/one-again" && fail "the relaunch started fresh over damaged slots"
grep -q "a slot failed validation (see the warnings) and may have held a committed version" "$LOGDIR/one-again" ||
  { log_of one-again | tail; fail "no clear message for damaged slots"; }
note "damaged slot headers: refused, no fresh start"
echo "PASS: no silent fresh start"
