#!/usr/bin/env bash
# Chaos on 4 hosts (k=3, m=1), process faults: no host is lost, the stores
# survive, the job resumes from the last committed snapshot on the same hosts
# and ends with the fault-free digest.
#   1. kill a trainer (ft-chaos kill-rank) at step 8, ft-launch --restarts 1
#   2. kill an SMP (ft-chaos kill-smp) at step 8, ft-launch --restarts 1
#   3. kill an SMP when every SMP enters the encode of the snapshot of step
#      8 (ft-chaos --when phase=encode,step=8): that snapshot never commits,
#      the relaunch resumes from step 6
#   8. a trainer dies in the middle of its 3rd snapshot copy (FT_FAULT=copy)
#   9. an SMP dies in the middle of the 3rd encode (FT_FAULT=encode@HOST)
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
up cfour 4
STEPS=32 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 4)
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS"
ok "fault-free digest $REF"

# kill_and_resume LOG CHAOS-ARGS...: a run under ft-launch --restarts 1,
# held once the snapshot of step 8 is committed, that ft-chaos hits there;
# it must relaunch on the same hosts (ft-restore: nothing to rebuild), resume
# from step 8 and end with the fault-free digest.
kill_and_resume() {
  local log=$1; shift
  launch_held "$log" "$STEPS" step=8 --job "$FT_JOB" --restarts 1
  chaos "$log" "$@"
  finish
  expect_rc "$log" 0 "ft-launch --restarts 1 after ft-chaos $1"
  expect_line "$log" '^ft-launch: restart 1 of 1: attempt failed with status [0-9]+; recovering$' "$1"
  expect_line "$log" '^ft-launch: no host was lost \(a process failed\): relaunching on the same hosts$' "$1"
  expect_resumed "$log" 8 8 "$1"
  expect_line "$log" "^ft-restore: every node holds version [0-9]+ \(step $RESUMED\) whole: nothing to do$" "$1"
  expect_no_line "$log" 'lost node' "$1"
  expect_digest "$log" "$1"
}

begin "1. kill a trainer (rank 2, on h3) at step 8"
export FT_JOB=killrank
kill_and_resume kr kill-rank 2
grep -q 'kill-rank 2: kill -9 pid [0-9]* on h3' "$WORK/kr.chaos" ||
  { cat "$WORK/kr.chaos"; fail "ft-chaos did not kill rank 2 on h3"; }
ok "trainer killed: relaunched on the same hosts, resumed from step $RESUMED, digest matches"

begin "2. kill the SMP of h2 at step 8"
export FT_JOB=killsmp
kill_and_resume ks kill-smp h2
grep -q 'kill-smp h2: kill -9 pid' "$WORK/ks.chaos" ||
  { cat "$WORK/ks.chaos"; fail "ft-chaos did not kill h2's SMP"; }
ok "SMP killed: relaunched on the same hosts, resumed from step $RESUMED, digest matches"

begin "3. kill the SMP of h2 as the SMPs enter the encode of the snapshot of step 8"
export FT_JOB=killheldencode
launch_held khe "$STEPS" phase=encode,step=8 --job "$FT_JOB" --restarts 1
chaos khe kill-smp h2
finish
expect_rc khe 0 "kill-smp at phase=encode,step=8"
expect_line khe.chaos '^ft-chaos: .* job killheldencode held at phase=encode,step=8 on h1 h2 h3 h4$' "kill-smp at phase=encode,step=8"
expect_line khe '^ft-launch: no host was lost \(a process failed\): relaunching on the same hosts$' "kill-smp at phase=encode,step=8"
expect_resumed khe 6 6 "kill-smp at phase=encode,step=8: the snapshot of step 8 never committed"
expect_digest khe "kill-smp at phase=encode,step=8"
ok "SMP killed in the encode of step 8: resumed from step 6, digest matches"

# The fault point stays armed in the environment of a relaunch, so the
# faulty attempt runs without --restarts and the recovery is a second
# ft-launch --restarts 1 without FT_FAULT.  Snapshot n is of step n*EVERY,
# so a fault in the 3rd one leaves the 2nd (step 4) as the newest whole one.
# fault_then_resume LOG FAULT WHAT
fault_then_resume() {
  local log=$1 fault=$2 point=${2%%:*}
  FT_FAULT=$fault launch "$log" "$STEPS" --job "$FT_JOB"
  [ "$RC" -ne 0 ] || die_with "$log" "$3: the run with FT_FAULT=$fault exited 0"
  expect_line "$log" "^ftrt: fault point '$point' \(FT_FAULT\) kills pid [0-9]+$" "$3"
  expect_no_line "$log" '^digest ' "$3"
  restore "h1 h2 h3 h4" "$log.verify" --verify
  expect_rc "$log.verify" 0 "$3: ft-restore --verify"
  expect_line "$log.verify" "of version 2: 0 with parity that does not match" "$3: version 2 whole"
  launch "$log.2" "$STEPS" --job "$FT_JOB" --restarts 1
  expect_rc "$log.2" 0 "$3: relaunch"
  expect_resumed "$log.2" 4 4 "$3"
  expect_digest "$log.2" "$3"
}

begin "8. the trainer of rank 3 (world rank, h2) dies in the middle of its 3rd snapshot copy"
export FT_JOB=killcopy
fault_then_resume kc copy:3@r3 "kill during a snapshot"
ok "killed mid-snapshot: version 2 whole, resumed from step 4, digest matches"

begin "9. the SMP of h3 dies in the middle of the 3rd encode"
export FT_JOB=killencode
fault_then_resume ke encode:3@h3 "kill during an encode"
ok "killed mid-encode: version 2 whole, resumed from step 4, digest matches"
echo "PASS: chaos on 4 hosts, process faults"
