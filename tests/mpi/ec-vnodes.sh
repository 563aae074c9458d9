#!/usr/bin/env bash
# Cross-node erasure coding and ft-restore on virtual nodes of one host
# (FT_VIRTUAL_NODE_RANKS: each 2 consecutive ranks = 1 SMP + 1 trainer with a
# store directory of its own).  The same cases run on the simulated
# multi-host cluster in tests/chaos/.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2
ARGS="--steps 12 --snapshot-every 2 --state-mb 2"
# repaired NP LOG SUMMARY RUN REF WHAT: after WHAT was refused, ft-restore on
# NP nodes rebuilds (its line SUMMARY) and the relaunch RUN resumes from
# step 8 with digest REF.
repaired() {
  local np=$1 log=$2 summary=$3 run=$4 ref=$5 what=$6
  restore "$np" >"$LOGDIR/$log" 2>&1 || { cat "$LOGDIR/$log"; fail "ft-restore after $what failed"; }
  grep -qF "$summary" "$LOGDIR/$log" || { cat "$LOGDIR/$log"; fail "$what: expected '$summary'"; }
  train "$run" $((np * 2)) $ARGS || { log_of "$run" | tail; fail "relaunch after $what failed"; }
  grep -q '^resumed from step 8$' "$LOGDIR/$run" || fail "$what: expected resume from step 8"
  expect_digest "$run" "$ref" "$what, then rebuilt"
}
slot_md5() { cat "$FT_STORE_ROOT"/vnode*/"$FT_JOB"/slot* | md5sum; }

# 1. 4 nodes, k=3 m=1, and 6 nodes, k=4 m=2: every stripe verifies and every
#    loss set of <= m nodes decodes to the original bytes.
for code in "4 3 1" "6 4 2"; do
  set -- $code
  export FT_JOB=verify-$1 FT_EC_K=$2 FT_EC_M=$3
  train v$1 $(($1 * 2)) $ARGS || { log_of v$1 | tail; fail "$1-node run failed"; }
  restore "$1" --verify --verify-losses >"$LOGDIR/ver$1" 2>&1 || { cat "$LOGDIR/ver$1"; fail "verify on $1 nodes"; }
  grep -q "0 with parity that does not match" "$LOGDIR/ver$1" || fail "parity check on $1 nodes"
  grep -qE "[1-9][0-9]* loss sets of <= m=$3 nodes decoded, 0 chunks wrong" "$LOGDIR/ver$1" ||
    { cat "$LOGDIR/ver$1"; fail "loss sets on $1 nodes"; }
  note "$1 nodes k=$2 m=$3: $(sed 's/^ft-restore: //' "$LOGDIR/ver$1")"
done

# 2. A configuration that cannot be satisfied is refused before training.
export FT_JOB=refused FT_EC_K=4 FT_EC_M=2
train refused 8 $ARGS && fail "k=4 m=2 on 4 nodes was accepted"
grep -q "k=4 m=2 needs at least 6 nodes but the job has 4" "$LOGDIR/refused" ||
  { log_of refused | tail -5; fail "no clear refusal message"; }
note "k=4 m=2 on 4 nodes refused: $(grep -o 'k=4 m=2 needs.*' "$LOGDIR/refused" | head -1)"
unset FT_EC_K FT_EC_M

# 3. Fault-free reference, 4 nodes (k=3 m=1).
export FT_JOB=ref
train ref 8 $ARGS || fail "reference run failed"
REF=$(digest_of ref)

# 4. A node lost: ft-restore rebuilds it, the relaunch ends with REF.
export FT_JOB=lose-one
train lose 8 --steps 8 --snapshot-every 2 --state-mb 2 || fail "run failed"
rm -rf "$FT_STORE_ROOT/vnode2/$FT_JOB"
restore 4 >"$LOGDIR/r1" 2>&1 || { cat "$LOGDIR/r1"; fail "ft-restore failed"; }
grep -q "restored version 4 (step 8): 1 lost node(s), 0 corrupt chunk(s)" "$LOGDIR/r1" || { cat "$LOGDIR/r1"; fail "restore summary"; }
# Every chunk rebuilt, parity too, carries the CRC of its bytes (made by the
# chain, not read back): a second survey finds nothing to do.
restore 4 >"$LOGDIR/r1b" 2>&1 || { cat "$LOGDIR/r1b"; fail "ft-restore after the rebuild failed"; }
grep -q "every node holds version 4 (step 8) whole: nothing to do" "$LOGDIR/r1b" ||
  { cat "$LOGDIR/r1b"; fail "a rebuilt chunk fails its CRC"; }
train lose2 8 $ARGS || { log_of lose2 | tail; fail "relaunch failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/lose2" || fail "relaunch did not resume from step 8"
expect_digest lose2 "$REF" "node 2 lost and rebuilt"

# 5. m+1 = 2 nodes of the group lost: exit 3, message, survivors unchanged.
export FT_JOB=lose-two
train lose-two 8 --steps 8 --snapshot-every 2 --state-mb 2 || fail "run failed"
rm -rf "$FT_STORE_ROOT/vnode1/$FT_JOB" "$FT_STORE_ROOT/vnode3/$FT_JOB"
before=$(slot_md5)
restore 4 >"$LOGDIR/r2" 2>&1; rc=$?
[ $rc -eq 3 ] || { cat "$LOGDIR/r2"; fail "ft-restore exit $rc with 2 of 4 nodes lost, expected 3"; }
grep -q "group 0 lost 2 chunks of stripe 0 but m=1: lost hosts \[.*\]; version 4 (step 8) cannot be rebuilt; nothing was changed" "$LOGDIR/r2" ||
  { cat "$LOGDIR/r2"; fail "no clear message for too many losses"; }
[ "$before" = "$(slot_md5)" ] || fail "survivors' stores changed"
note "2 of 4 nodes lost: exit 3, survivors unchanged"

# 6. A data chunk flipped on a survivor: detected by CRC and repaired.
export FT_JOB=corrupt
train corrupt 8 --steps 8 --snapshot-every 2 --state-mb 2 || fail "run failed"
slot=$(FT_JOB=$FT_JOB "$B/ft-status" --vnode 1 --json | grep -o '"slot":[01],"state":"COMMITTED"' | grep -o '[01]')
printf '\xff\xff\xff\xff' | dd of="$FT_STORE_ROOT/vnode1/$FT_JOB/slot$slot" bs=1 seek=8192 conv=notrunc status=none
restore 4 >"$LOGDIR/r3" 2>&1 || { cat "$LOGDIR/r3"; fail "ft-restore failed on a corrupt chunk"; }
grep -q "1 corrupt chunk(s)" "$LOGDIR/r3" || { cat "$LOGDIR/r3"; fail "corrupt chunk not reported"; }
train corrupt2 8 $ARGS || { log_of corrupt2 | tail; fail "relaunch failed"; }
expect_digest corrupt2 "$REF" "corrupt data chunk repaired"

# 7. The SMP of node 1 dies in the middle of the 3rd encode: the survivors
#    hold version 2 whole; the relaunch resumes from its step.
export FT_JOB=kill-encode
FT_FAULT=encode:3@r2 train ke 8 $ARGS && fail "run with an encode fault exited 0"
grep -q "fault point 'encode'" "$LOGDIR/ke" || fail "encode fault did not fire"
restore 4 --verify >"$LOGDIR/r4" 2>&1 || { cat "$LOGDIR/r4"; fail "stores not whole after a kill mid-encode"; }
grep -q "of version 2: 0 with parity" "$LOGDIR/r4" || { cat "$LOGDIR/r4"; fail "expected version 2 whole"; }
train ke2 8 $ARGS || { log_of ke2 | tail; fail "relaunch failed"; }
grep -q '^resumed from step 4$' "$LOGDIR/ke2" || fail "expected resume from step 4"
expect_digest ke2 "$REF" "SMP killed mid-encode, resumed from step 4"

# 8. A byte of a rebuilt chunk flipped on its owner after the last piece is
#    in (FT_FAULT=flip:rebuilt: memory or a link corrupting it): the chunk's
#    CRC is the one its bytes were sent with, so the relaunch refuses the
#    data instead of resuming with wrong bytes (before: the owner sealed
#    what it held, and the job resumed with another digest); ft-restore
#    then finds the chunk corrupt and rebuilds it: the fault-free digest.
export FT_JOB=flip-rebuilt
train fl 8 --steps 8 --snapshot-every 2 --state-mb 2 || fail "run failed"
rm -rf "$FT_STORE_ROOT/vnode2/$FT_JOB"
FT_FAULT=flip:rebuilt@r2 restore 4 >"$LOGDIR/r5" 2>&1 || { cat "$LOGDIR/r5"; fail "ft-restore with a flipped byte failed"; }
line=$(grep "^ftrt: fault point 'rebuilt' (FT_FAULT) flipped byte [0-9]* of data chunk [0-9]" "$LOGDIR/r5") ||
  { cat "$LOGDIR/r5"; fail "no data chunk flipped on rank 2 (the layout changed? pick another NTH)"; }
chunk=$(sed -n 's/.* of data chunk \([0-9]*\) .*/\1/p' <<<"$line")
train fl2 8 $ARGS && { log_of fl2 | tail; fail "the relaunch resumed on a flipped rebuilt chunk"; }
grep -q "error: ft_restore: $FT_STORE_ROOT/vnode2/$FT_JOB/slot[01]: CRC mismatch in data chunk $chunk (version 4)$" "$LOGDIR/fl2" ||
  { log_of fl2 | tail; fail "the relaunch did not name the flipped chunk"; }
grep -q '^digest ' "$LOGDIR/fl2" && fail "the refused relaunch printed a digest"
restore 4 >"$LOGDIR/r6" 2>&1 || { cat "$LOGDIR/r6"; fail "ft-restore after the flip failed"; }
grep -q "restored version 4 (step 8): 0 lost node(s), 1 corrupt chunk(s)" "$LOGDIR/r6" || { cat "$LOGDIR/r6"; fail "the flipped chunk was not repaired"; }
train fl3 8 $ARGS || { log_of fl3 | tail; fail "relaunch after the repair failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/fl3" || fail "expected resume from step 8 after the repair"
expect_digest fl3 "$REF" "a flipped rebuilt chunk refused, then repaired"

# 9. A byte of a source's chunk flipped after the survey checked it, before
#    the chain reads it (FT_FAULT=flip:source, 6 nodes 4+2): the rebuilt
#    chunk would be made of other bytes under a CRC of its own; the source
#    finds its chunk no longer matches its seal, and ft-restore refuses
#    (exit 1) sealing nothing.  Run again, it finds the chunk corrupt and
#    rebuilds both (2 erasures, m=2): the fault-free 6-node digest.
REF6=$(digest_of v6)
export FT_JOB=flip-source FT_EC_K=4 FT_EC_M=2
train fs 12 --steps 8 --snapshot-every 2 --state-mb 2 || fail "run failed"
rm -rf "$FT_STORE_ROOT/vnode3/$FT_JOB"
FT_FAULT=flip:source@r0 restore 6 >"$LOGDIR/r7" 2>&1; rc=$?
[ $rc -eq 1 ] || { cat "$LOGDIR/r7"; fail "ft-restore with a source flipped: exit $rc, expected 1"; }
grep -q "^ftrt: fault point 'source' (FT_FAULT) flipped byte" "$LOGDIR/r7" || { cat "$LOGDIR/r7"; fail "no source flipped"; }
grep -q "a chunk of its copy of version 4 (group 0 stripe [0-9]*) no longer matches its CRC, checked by the survey: the rebuild from it is refused and nothing is sealed" "$LOGDIR/r7" ||
  { cat "$LOGDIR/r7"; fail "the flipped source was not named"; }
repaired 6 r8 "restored version 4 (step 8): 1 lost node(s), 1 corrupt chunk(s)" fs2 "$REF6" "a flipped source refused"
unset FT_EC_K FT_EC_M

# 10. A link of a chain fails halfway through its chunk (FT_FAULT=fail:link:
#     every link that sends its sum on to another, as a decode that failed
#     would; then rank 1's only).  The links after it, and the tasks after
#     it, must not wait for pieces that never come: ft-restore ends, exit 1, naming the failure,
#     and seals nothing; the next ft-restore rebuilds the lost node and the
#     relaunch has the fault-free digest.  (Before: the failed link left the
#     chain, the next link waited for its piece forever.)
export FT_JOB=fail-link
train lk 8 --steps 8 --snapshot-every 2 --state-mb 2 || fail "run failed"
rm -rf "$FT_STORE_ROOT/vnode2/$FT_JOB"
FT_FAULT=fail:link restore 4 >"$LOGDIR/r9" 2>&1; rc=$?
[ $rc -eq 1 ] || { cat "$LOGDIR/r9"; fail "ft-restore with a failed link: exit $rc, expected 1 (124: it hung)"; }
grep -q "fault point 'link' (FT_FAULT) failed its link of the rebuild of group 0 stripe" "$LOGDIR/r9" ||
  { cat "$LOGDIR/r9"; fail "the failed link was not named"; }
if grep -q "restored version" "$LOGDIR/r9"; then cat "$LOGDIR/r9"; fail "ft-restore said it restored with a failed link"; fi
# One link only (rank 1): the links after it pass its failure on.
FT_FAULT=fail:link@r1 restore 4 >"$LOGDIR/r9b" 2>&1; rc=$?
[ $rc -eq 1 ] || { cat "$LOGDIR/r9b"; fail "ft-restore with rank 1's link failed: exit $rc, expected 1 (124: it hung)"; }
grep -q "(rank 1): fault point 'link' (FT_FAULT) failed its link" "$LOGDIR/r9b" ||
  { cat "$LOGDIR/r9b"; fail "rank 1's failed link was not named"; }
repaired 4 r10 "restored version 4 (step 8): 1 lost node(s), 0 corrupt chunk(s)" lk2 "$REF" "a failed link"
echo "PASS: erasure coding on virtual nodes"
