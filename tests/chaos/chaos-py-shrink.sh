#!/usr/bin/env bash
# The PyTorch example with --sharded (ZeRO-1: each trainer registers its
# slice of the flat parameter vector and of Adam's moments as slices of
# global tensors) on 4 hosts, 3+1, no spare.
#   1. fault-free reference: 12 steps; its digest after step 12
#   2. h4 lost at step 12 (kill-node): ft-launch --restarts 1 finds no spare
#      and shrinks the job to 3 trainers; the state restored there, re-sliced
#      over 3 ranks, has the fault-free digest of step 12 (every byte of the
#      parameters and moments), and training goes on to step 24 with the
#      loss below the first step's
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
need_python
STEPS=24 EVERY=4
TRAIN_ARGS=(--snapshot-every "$EVERY" --digest-at 12 --sharded)
up cpys 4

begin "1. fault-free reference: 4 hosts, 3+1, 12 steps, --sharded"
reference ref 12
REF12=$(sed -n 's/^digest-at 12 \([0-9a-f]*\)$/\1/p' "$WORK/ref")
[ -n "$REF12" ] || die_with ref "fault-free run: no digest-at 12 line"
ok "fault-free digest of step 12: $REF12"

begin "2. --sharded, no spare: h4 lost at step 12, the job shrinks to 3 trainers"
export FT_JOB=pyshrink
launch_held sh "$STEPS" step=12 --job "$FT_JOB" --restarts 1
chaos sh kill-node h4
finish
expect_rc sh 0 "shrink: ft-launch --restarts 1"
expect_line sh '^ft-launch: lost host\(s\): h4; no spare left: shrinking to 3 nodes$' "shrink"
expect_resumed sh 12 12 "shrink"
expect_line sh '^model 2 layers .* trainers 3 sharded$' "shrink: the relaunch"
expect_line sh "^digest-at 12 $REF12\$" "shrink: the state restored on 3 trainers is the fault-free state of step 12"
first=$(sed -n 's/^step 1 loss //p' "$WORK/sh" | head -1)
last=$(sed -n "s/^step $STEPS loss //p" "$WORK/sh" | tail -1)
[ -n "$first" ] && [ -n "$last" ] || die_with sh "shrink: no loss of step 1 or $STEPS"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' ||
  die_with sh "shrink: the loss of step $STEPS ($last) is not below step 1's ($first)"
ok "shrunk to 3: restored state of step 12 matches the fault-free one, loss $first -> $last"
echo "PASS: the sharded PyTorch example shrinks to 3 trainers with the fault-free state"
