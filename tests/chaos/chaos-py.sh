#!/usr/bin/env bash
# The PyTorch example (examples/python/train_gpt.py, the ftrt Python
# package) on the simulated cluster: 4 hosts, 3+1, one Python trainer per
# host (each host's SMP a process of ft-smp, ft-launch's default for a
# Python program), the model wrapped in DistributedDataParallel (--ddp), a
# snapshot every 4 steps, SGD with momentum and an ExponentialLR scheduler
# (registered as a Stateful; Adam is chaos-py-shrink.sh's).
# Faults land at a named step (the job is held there until ft-chaos has
# delivered them).
#   1. fault-free reference: 24 steps; its digest, and its digest after
#      step 12 (digest-at 12)
#   2. kill -9 of the Python trainer of h2 at step 8: ft-launch --restarts 1
#      relaunches on the same hosts, resumes from step 8, the same digest
#   3. h3 lost at step 12 (kill-node: processes and /dev/shm gone), one
#      spare: ft-restore rebuilds h3's store on s1, the job resumes from
#      step 12 and ends with the fault-free digest; ft-launch says where
#      the recovery's time went (the Python trainer stamps it too)
# The shrink case is tests/chaos/chaos-py-shrink.sh.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
need_python
STEPS=24 EVERY=4
TRAIN_ARGS=(--snapshot-every "$EVERY" --digest-at 12 --optimizer sgd --lr-gamma 0.97 --ddp)
up cpy 4 --spares 1

begin "1. fault-free reference: 4 hosts, 3+1, $STEPS steps"
py_reference ref "$STEPS"
expect_line ref '^model 2 layers .* trainers 4 ddp$' "fault-free run"
ok "fault-free digest $REF"

begin "2. kill -9 the Python trainer of h2 (rank 1) at step 8"
export FT_JOB=pykillrank
launch_held kr "$STEPS" step=8 --job "$FT_JOB" --restarts 1
chaos kr kill-rank 1
finish
expect_rc kr 0 "ft-launch --restarts 1 after kill-rank 1"
grep -q 'kill-rank 1: kill -9 pid [0-9]* on h2' "$WORK/kr.chaos" ||
  { cat "$WORK/kr.chaos"; fail "ft-chaos did not kill rank 1 on h2"; }
expect_line kr '^ft-launch: no host was lost \(a process failed\): relaunching on the same hosts$' "kill-rank"
expect_resumed kr 8 8 "kill-rank"
expect_digest kr "kill-rank"
ok "Python trainer killed: relaunched, resumed from step $RESUMED, digest matches"

begin "3. h3 lost at step 12; the spare s1 replaces it"
export FT_JOB=pykillnode
launch_held kn "$STEPS" step=12 --job "$FT_JOB" --restarts 1 --spares 1
chaos kn kill-node h3
finish
expect_rc kn 0 "kill-node h3: ft-launch --restarts 1 --spares 1"
expect_line kn '^ft-launch: lost host\(s\): *h3 *; replacing them with spare\(s\) s1$' "kill-node h3"
expect_line kn '^ft-restore: lost node 2 \(h3, group 0 position [0-3]\) -> s1$' "kill-node h3"
expect_resumed kn 12 12 "kill-node h3"
# the Python trainer's ft_restore and first snapshot() stamp the recovery
expect_line kn "^ft-launch: recovery 1: training resumed [0-9.]+ s after the failed job's end: .*, until restored [0-9.]+ s$" "kill-node h3: the recovery's account"
expect_line kn "^ft-launch: recovery 1: its first step after the restore took [0-9.]+ s$" "kill-node h3: the first step's"
expect_no_line kn 'ftrt-times' "kill-node h3: the lines ft-launch reads are not shown"
expect_line kn "^digest-at 12 $REF12\$" "kill-node h3: the state restored on s1"
expect_digest kn "kill-node h3"
ok "h3 lost: rebuilt on s1, resumed from step $RESUMED, digest matches"
echo "PASS: the PyTorch example survives a trainer kill and a node loss (spare)"
