#!/usr/bin/env bash
# The PyTorch example with FSDP2 (train_gpt.py --fsdp: every block sharded
# by fully_shard; parameters and Adam's state are DTensor shards, which
# ftrt registers as slices of their global tensors), 4 hosts, 3+1.
#   1. fault-free reference: 24 steps; its digest and its digest after
#      step 12 (the whole state, gathered: the same on any number of
#      trainers)
#   2. one spare: h2 lost at step 12, rebuilt on s1; the job resumes from
#      step 12 and ends with the fault-free digest
#   3. a cluster of its own, no spare: h4 lost at step 12, the job shrinks
#      to 3 trainers; FSDP2 shards the model over 3, ftrt re-slices every
#      shard: the state restored is the fault-free state of step 12, and
#      training goes on to step 24 with the loss below the first step's
#   4. the same with --dcp: model and optimizer saved by dcp.save through
#      ftrt.dcp.Writer and loaded by dcp.load onto 3 trainers (DCP reshards,
#      reading every item from whichever trainer holds its bytes now): the
#      fault-free state of step 12
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
need_python
"$BLD/ft-python" -c 'import torch.distributed.fsdp as f; f.fully_shard' 2>/dev/null ||
  skip "ft-python has no FSDP2 (torch.distributed.fsdp.fully_shard: torch 2.6 or later)"
STEPS=24 EVERY=4
TRAIN_ARGS=(--snapshot-every "$EVERY" --digest-at 12 --fsdp)
up cpyf 4 --spares 1

begin "1. fault-free reference: 4 hosts, 3+1, $STEPS steps, --fsdp"
py_reference ref "$STEPS"
expect_line ref '^model 2 layers .* trainers 4 fsdp$' "fault-free run"
ok "fault-free digest $REF, of step 12 $REF12"

begin "2. --fsdp, one spare: h2 lost at step 12, rebuilt on s1"
export FT_JOB=pyfsdprep
launch_held rp "$STEPS" step=12 --job "$FT_JOB" --restarts 1 --spares 1
chaos rp kill-node h2
finish
expect_rc rp 0 "kill-node h2: ft-launch --restarts 1 --spares 1"
expect_line rp '^ft-launch: lost host\(s\): *h2 *; replacing them with spare\(s\) s1$' "kill-node h2"
expect_resumed rp 12 12 "kill-node h2"
expect_line rp "^digest-at 12 $REF12\$" "kill-node h2: the state restored on s1"
expect_digest rp "kill-node h2"
ok "h2 lost: rebuilt on s1, resumed from step $RESUMED, digest matches"

begin "3. --fsdp, no spare: h4 lost at step 12, the job shrinks to 3 trainers"
up cpyf2 4
export FT_JOB=pyfsdpshr
py_shrink sh fsdp
ok "shrunk to 3: every shard re-sliced, the state of step 12 matches, loss $FIRST -> $LAST"
begin "4. --fsdp --dcp (DCP save and load through ftrt.dcp), no spare: h4 lost at step 12"
up cpyf3 4
export FT_JOB=pyfsdpdcp
TRAIN_ARGS+=(--dcp)
py_shrink dc "fsdp dcp"
ok "DCP loaded onto 3 trainers: the state of step 12 matches, loss $FIRST -> $LAST"
echo "PASS: the FSDP2 example survives a node loss, replaced and shrunk, and through DCP"
