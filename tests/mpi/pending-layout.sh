#!/usr/bin/env bash
# A version made under a pending layout (snapshot/store.h): 4 virtual nodes
# commit step 8 under 3+1, the job is relaunched under 2+2 and every SMP is
# killed at the commit of step 10, which every node has encoded under the
# new layout (committed by the restore rule) before any node promoted it.
#  A. vnode3 is lost; ft-restore rebuilds it in the pending layout; a run
#     of it cut short after the spare wrote its metadata, before the
#     survivors did (simulated by putting the survivors' metadata files
#     back), is finished by the next run (the survivors are members through
#     their pending layout, not stale stores), and the relaunch resumes
#     from step 10 with the fault-free digest.
#  B. one byte of vnode1's meta.pending flipped, vnode3 lost: vnode1 counts
#     as lost too (never as a node without a pending layout, which would
#     roll back to step 8 and later decode the 2+2 copies with the 3+1
#     groups); both are rebuilt, then the spare is lost again and rebuilt
#     byte for byte, and the relaunch resumes from step 10 with the digest.
#  C. vnode2's copy of step 10 damaged (its slot header): ft-restore rebuilds
#     it in the pending layout (a damaged copy does not veto the version),
#     never falls back to step 8 and drops the pending layout.
#  D. the pending layout never encoded anything (killed at the crc phase),
#     vnode1's meta.pending unreadable, vnode3 lost (3+1): vnode1 is not a
#     lost node (its pending layout describes no copy): step 8 restored.
#  E. every copy of step 10 COMMITTED, vnode0 promoted its pending layout and
#     its copy is damaged: the others are members through their pending
#     layout, not stale stores: vnode0's copy rebuilt, step 10 restored.
#  F. vnode3's host given up (its node rebuilt on a spare) comes back in
#     lost vnode2's place: its pending layout's node is the spare's: it is
#     a stale store, cleared and used for vnode2.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2
ARGS=(--steps 16 --snapshot-every 2 --state-mb 1)
FT_JOB=ref FT_EC_K=3 FT_EC_M=1 train ref 8 "${ARGS[@]}" || { log_of ref | tail; fail "reference run"; }
REF=$(digest_of ref)

# pending_commit JOB [PHASE]: step 8 under 3+1, then a 2+2 relaunch whose
# SMPs are all killed while held at PHASE (default commit) of step 10.
pending_commit() {
  export FT_JOB=$1
  FT_EC_K=3 FT_EC_M=1 train "$1.a" 8 --steps 8 --snapshot-every 2 --state-mb 1 ||
    { log_of "$1.a" | tail; fail "$1: 8 steps under 3+1"; }
  FT_EC_K=2 FT_EC_M=2 FT_HOLD=phase=${2:-commit},step=10 train_bg "$1.b" 8 "${ARGS[@]}"
  local v pid
  for v in 0 1 2 3; do held "$1.b" --vnode "$v"; done
  for v in 0 1 2 3; do
    pid=$("$B/ft-status" --vnode "$v" --json | sed -n 's/.*"smp":{"pid":\([0-9]*\).*/\1/p')
    [ -n "$pid" ] || fail "$1: no SMP on vnode$v"
    kill -9 "$pid"
  done
  wait "$PID" 2>/dev/null
  [ -e "$FT_STORE_ROOT/vnode0/$FT_JOB/meta.pending" ] || fail "$1: no pending layout left"
}
store() { echo "$FT_STORE_ROOT/vnode$1/$FT_JOB"; }
# restored LOG WHAT PATTERN: ft-restore on the 4 ranks exits 0 and says PATTERN
restored() {
  restore 4 >"$LOGDIR/$1" 2>&1 || { cat "$LOGDIR/$1"; fail "$2: ft-restore exit $?"; }
  grep -Eq "$3" "$LOGDIR/$1" || { cat "$LOGDIR/$1"; fail "$2: no '$3'"; }
}
# resumes LOG STEP WHAT: the relaunch resumes from STEP with the digest
resumes() {
  train "$1" 8 "${ARGS[@]}" || { log_of "$1" | tail; fail "$3: relaunch"; }
  grep -q "^resumed from step $2\$" "$LOGDIR/$1" || { log_of "$1" | grep -v '^step' | tail; fail "$3: did not resume from step $2"; }
  expect_digest "$1" "$REF" "$3"
}

pending_commit cut
rm -rf "$(store 3)"                     # vnode3 lost; its rank is a spare
for v in 0 1 2; do mkdir -p "$LOGDIR/saved$v"; cp -a "$(store $v)"/*meta* "$LOGDIR/saved$v/"; done
restore 4 >"$LOGDIR/cut.r1" 2>&1 || { cat "$LOGDIR/cut.r1"; fail "A: ft-restore"; }
grep -q "restored version 5 (step 10): 1 lost node" "$LOGDIR/cut.r1" || { cat "$LOGDIR/cut.r1"; fail "A: not restored from step 10"; }
for v in 0 1 2; do                      # as if it died before the survivors wrote
  rm -f "$(store $v)"/*meta*
  cp -a "$LOGDIR/saved$v"/* "$(store $v)/"
done
restore 4 >"$LOGDIR/cut.r2" 2>&1 || { cat "$LOGDIR/cut.r2"; fail "A: ft-restore after one cut short"; }
grep -q "is still at layout epoch" "$LOGDIR/cut.r2" || { cat "$LOGDIR/cut.r2"; fail "A: the survivors were not taken as members to write again"; }
train cut.c 8 "${ARGS[@]}" || { log_of cut.c | tail; fail "A: relaunch"; }
grep -q '^resumed from step 10$' "$LOGDIR/cut.c" || fail "A: did not resume from step 10"
expect_digest cut.c "$REF" "A: a restore of a pending layout's version cut short, run again"

pending_commit flip
printf '\x5a' | dd of="$(store 1)/meta.pending" bs=1 seek=40 conv=notrunc status=none
rm -rf "$(store 3)"
restore 4 >"$LOGDIR/flip.r1" 2>&1 || { cat "$LOGDIR/flip.r1"; fail "B: ft-restore"; }
grep -q "restored version 5 (step 10): 2 lost node" "$LOGDIR/flip.r1" ||
  { cat "$LOGDIR/flip.r1"; fail "B: a node with an unreadable pending layout was not rebuilt from step 10"; }
cp "$(store 3)/slot1" "$LOGDIR/spare-slot1"
rm -rf "$(store 3)"                     # the spare lost too, before any relaunch
restore 4 >"$LOGDIR/flip.r2" 2>&1 || { cat "$LOGDIR/flip.r2"; fail "B: second ft-restore"; }
grep -q "restored version 5 (step 10): 1 lost node" "$LOGDIR/flip.r2" || { cat "$LOGDIR/flip.r2"; fail "B: second restore"; }
cmp -s "$LOGDIR/spare-slot1" "$(store 3)/slot1" || {
  # the header's times differ; the data and parity must not
  off=$("$B/ft-status" --vnode 3 --json | grep -o '"slot":1[^}]*' | sed -n 's/.*"data_off":\([0-9]*\).*/\1/p')
  cmp -s <(tail -c +$((off + 1)) "$LOGDIR/spare-slot1") <(tail -c +$((off + 1)) "$(store 3)/slot1") ||
    fail "B: the copy rebuilt a second time differs from the first"
}
train flip.c 8 "${ARGS[@]}" || { log_of flip.c | tail; fail "B: relaunch"; }
grep -q '^resumed from step 10$' "$LOGDIR/flip.c" || fail "B: did not resume from step 10"
expect_digest flip.c "$REF" "B: an unreadable meta.pending, then the spare lost again"
pending_commit dmg
printf '\x5a' | dd of="$(store 2)/slot1" bs=1 seek=20 conv=notrunc status=none
restored dmg.r "C" 'restored version 5 \(step 10\): 0 lost node\(s\), 0 corrupt chunk\(s\), 1 damaged'
resumes dmg.c 10 "C: a damaged copy of the pending layout's version"

pending_commit never crc
printf '\x5a' | dd of="$(store 1)/meta.pending" bs=1 seek=40 conv=notrunc status=none
rm -rf "$(store 3)"
restored never.r "D" 'restored version 4 \(step 8\): 1 lost node\(s\)'
resumes never.c 8 "D: an unreadable pending layout that describes no copy"

pending_commit prom
for v in 0 1 2 3; do   # killed after the commit: every copy COMMITTED
  printf '\x04\x00\xfb\xff' | dd of="$(store $v)/slot1" bs=1 seek=12 conv=notrunc status=none
done
mv "$(store 0)/group.meta.pending" "$(store 0)/group.meta"
mv "$(store 0)/meta.pending" "$(store 0)/meta"
printf '\x5a' | dd of="$(store 0)/slot1" bs=1 seek=20 conv=notrunc status=none
restored prom.r "E" 'restored version 5 \(step 10\): 0 lost node\(s\), 0 corrupt chunk\(s\), 1 damaged'
resumes prom.c 10 "E: the promoted node's copy damaged"

pending_commit back
mv "$(store 3)" "$LOGDIR/given-up"   # vnode3's host unreachable: an empty rank
restored back.r1 "F" 'restored version 5 \(step 10\): 1 lost node\(s\)'
rm -rf "$(store 2)"
mv "$LOGDIR/given-up" "$(store 2)"   # it comes back, in lost vnode2's place
restored back.r2 "F" 'restored version 5 \(step 10\): 1 lost node\(s\)'
grep -q "holds a stale store" "$LOGDIR/back.r2" || { cat "$LOGDIR/back.r2"; fail "F: the given-up store was not taken for stale"; }
resumes back.c 10 "F: a given-up store back in another node's place"
echo "PASS: pending-layout"
