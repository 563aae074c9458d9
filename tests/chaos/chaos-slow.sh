#!/usr/bin/env bash
# Failure means no sign of life (issue 15.1; base/pulse.h).  4 hosts, 3+1,
# FT_TIMEOUT=5:
#  - h3's SMP stopped with SIGSTOP at step 4 (ft-chaos stop-smp): alive but
#    silent.  It is declared failed by name after FT_TIMEOUT, the job ends,
#    and --restarts 1 resumes it from step 4 with the fault-free digest.
#  - rank 1's trainer stopped with SIGSTOP at step 4 (ft-chaos stop-rank):
#    its SMP, alive, finds it stopped after FT_TIMEOUT and ends the job
#    (heartbeats alone would have hidden it: the job would hang); resumed
#    from step 4 with the fault-free digest.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=6 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up cslow 4
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS" --nodes 4
ok "fault-free digest $REF"

begin "h3's SMP stopped (SIGSTOP) at step 4, FT_TIMEOUT=5"
export FT_JOB=stopped
FT_TIMEOUT=5 launch_held stop "$STEPS" step=4 --job "$FT_JOB" --nodes 4 --restarts 1 --timeout 5
chaos stop stop-smp h3
finish
expect_line stop "no sign of life from (node [0-9]+ \(h3\)|the SMP of h3) for [0-9]+ s \(FT_TIMEOUT" "the stopped SMP named"
expect_rc stop 0 "an SMP stopped, ft-launch --restarts 1"
expect_resumed stop 4 4 "after a stopped SMP"
expect_digest stop "after a stopped SMP"
ok "h3's SMP stopped: declared silent by name, resumed from step 4, digest matches"
begin "rank 1's trainer (on h2) stopped (SIGSTOP) at step 4, FT_TIMEOUT=5"
# Its SMP lives and beats; nobody waits in ftrt (the other trainers wait in
# their own allreduce): the SMP itself finds its trainer stopped.
export FT_JOB=stopped-trainer
FT_TIMEOUT=5 launch_held stopr "$STEPS" step=4 --job "$FT_JOB" --nodes 4 --restarts 1 --timeout 5
chaos stopr stop-rank 1
finish
expect_line stopr "trainer rank 1 \(pid [0-9]+\) on h2 has been stopped for [0-9]+ s \(FT_TIMEOUT\)" "the stopped trainer named"
expect_rc stopr 0 "a trainer stopped, ft-launch --restarts 1"
expect_resumed stopr 4 4 "after a stopped trainer"
expect_digest stopr "after a stopped trainer"
ok "rank 1's trainer stopped: found by its SMP, resumed from step 4, digest matches"
echo "PASS: a silent SMP, a stopped trainer: found and named"
