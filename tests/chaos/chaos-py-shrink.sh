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
py_reference ref 12
ok "fault-free digest of step 12: $REF12"

begin "2. --sharded, no spare: h4 lost at step 12, the job shrinks to 3 trainers"
export FT_JOB=pyshrink
py_shrink sh sharded
ok "shrunk to 3: restored state of step 12 matches the fault-free one, loss $FIRST -> $LAST"
echo "PASS: the sharded PyTorch example shrinks to 3 trainers with the fault-free state"
