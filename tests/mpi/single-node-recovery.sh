#!/usr/bin/env bash
# Snapshots survive any process crash on one node (2 trainers + 1 SMP):
# kill -9 a trainer at a step, a trainer in the middle of a snapshot copy,
# the SMP, the SMP before a commit; each relaunch resumes from the last
# committed step and ends with the fault-free digest.  Both capture modes.
. "$(dirname "$0")/lib.sh"
ARGS="--steps 40 --snapshot-every 3 --state-mb 4"

for mode in sync lazy; do
  export FT_CAPTURE=$mode
  FT_JOB=ref-$mode train ref 3 $ARGS || { log_of ref | tail; fail "fault-free run failed"; }
  REF=$(digest_of ref)
  grep -q '^fresh start' "$LOGDIR/ref" || fail "fault-free run did not start fresh"
  note "$mode: fault-free digest $REF"

  # 1. kill -9 trainer rank 1 while the job is held after the commit of
  #    step 12 (FT_HOLD): the relaunch resumes from exactly there
  export FT_JOB=kill-trainer-$mode
  FT_HOLD=step=12 train_bg run1 3 $ARGS
  held run1
  pid=$(trainer_pid "$FT_JOB" 1)
  [ -n "$pid" ] || fail "no trainer pid in ft-status"
  kill -9 "$pid"
  wait $PID && fail "mpirun exited 0 after a trainer was killed"
  train run1b 3 $ARGS || { log_of run1b | tail; fail "relaunch failed"; }
  grep -q '^resumed from step 12$' "$LOGDIR/run1b" || { log_of run1b | head; fail "expected resume from step 12"; }
  expect_digest run1b "$REF" "$mode: trainer killed at step 12, resumed from step 12"

  # 2. a trainer dies in the middle of the copy of the 4th snapshot (step 12):
  #    the relaunch must resume from step 9, the previous committed one
  export FT_JOB=kill-copy-$mode
  FT_FAULT=copy:4@r1 train run2 3 $ARGS && fail "run with a copy fault exited 0"
  grep -q "fault point 'copy'" "$LOGDIR/run2" || fail "copy fault did not fire"
  train run2b 3 $ARGS || { log_of run2b | tail; fail "relaunch failed"; }
  grep -q '^resumed from step 9$' "$LOGDIR/run2b" || { log_of run2b | head; fail "expected resume from step 9"; }
  expect_digest run2b "$REF" "$mode: trainer killed mid-copy, resumed from step 9"

  # 3. kill -9 the SMP while the job is held after the commit of step 12
  export FT_JOB=kill-smp-$mode
  FT_HOLD=step=12 train_bg run3 3 $ARGS
  held run3
  pid=$(smp_pid "$FT_JOB")
  [ -n "$pid" ] || fail "no SMP pid in ft-status"
  kill -9 "$pid"
  wait $PID && fail "mpirun exited 0 after the SMP was killed"
  train run3b 3 $ARGS || { log_of run3b | tail; fail "relaunch failed"; }
  grep -q '^resumed from step 12$' "$LOGDIR/run3b" || { log_of run3b | head; fail "expected resume from step 12"; }
  expect_digest run3b "$REF" "$mode: SMP killed at step 12, resumed from step 12"

  # 4. the SMP dies after encoding the 3rd snapshot, before its commit
  export FT_JOB=kill-commit-$mode
  FT_FAULT=commit:3@r0 train run4 3 $ARGS && fail "run with a commit fault exited 0"
  train run4b 3 $ARGS || { log_of run4b | tail; fail "relaunch failed"; }
  grep -qE '^resumed from step (6|9)$' "$LOGDIR/run4b" || { log_of run4b | head; fail "expected resume from step 6 or 9"; }
  expect_digest run4b "$REF" "$mode: SMP killed before a commit, $(grep resumed "$LOGDIR/run4b")"
done

# A relaunch with a different number of trainers is refused, store untouched.
export FT_JOB=kill-smp-sync
before=$(md5sum "$FT_STORE_ROOT/$FT_JOB/slot0" "$FT_STORE_ROOT/$FT_JOB/slot1")
train mismatch 4 $ARGS && fail "relaunch with 3 trainers instead of 2 exited 0"
grep -q "written by a job of 1 node(s) x 2 trainer(s); this launch has 1 x 3" "$LOGDIR/mismatch" ||
  { log_of mismatch | tail; fail "no clear mismatch message"; }
[ "$before" = "$(md5sum "$FT_STORE_ROOT/$FT_JOB/slot0" "$FT_STORE_ROOT/$FT_JOB/slot1")" ] ||
  fail "the refused relaunch changed the store"
note "relaunch with 3 trainers refused with a clear message, store unchanged"
# Two jobs on one host never touch each other's store.
a=$(md5sum "$FT_STORE_ROOT"/kill-smp-sync/slot* "$FT_STORE_ROOT"/kill-smp-sync/meta)
FT_JOB=other-job train other 3 --steps 6 --snapshot-every 2 --state-mb 1 || fail "second job failed"
[ "$a" = "$(md5sum "$FT_STORE_ROOT"/kill-smp-sync/slot* "$FT_STORE_ROOT"/kill-smp-sync/meta)" ] ||
  fail "job other-job changed job kill-smp-sync's store"
note "a second job name leaves the first job's store untouched"

# The SMP binds where FT_SMP_CPUSET says, and ft-status shows it.
FT_JOB=bound FT_SMP_CPUSET=0 train bound 3 --steps 2 --snapshot-every 1 --state-mb 1 || fail "bound run failed"
FT_JOB=bound "$B/ft-status" | grep -q "binding: bound to CPUs 0 (FT_SMP_CPUSET)" ||
  { FT_JOB=bound "$B/ft-status"; fail "FT_SMP_CPUSET not applied"; }
note "FT_SMP_CPUSET=0: $(FT_JOB=bound "$B/ft-status" | grep binding)"
echo "PASS: single-node recovery"
