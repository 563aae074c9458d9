#!/usr/bin/env bash
# One launch per job (issue 14.6): while a job runs, a second launch of the
# same job on the same node, or an ft-restore there, is refused with a clear
# message before it reads or writes the store, and the first launch goes on
# to the fault-free digest.  The first job is held after the commit of step 6 (FT_HOLD) so
# that it is certainly running while the second one starts.
. "$(dirname "$0")/lib.sh"
ARGS="--steps 12 --snapshot-every 3 --state-mb 2"

FT_JOB=ref train ref 3 $ARGS || { log_of ref | tail; fail "fault-free run failed"; }
REF=$(digest_of ref)

export FT_JOB=twice
FT_HOLD=step=6 train_bg first 3 $ARGS
FIRST=$PID
held first
# What the refused launches must not change: the metadata and the slot of
# the committed version (the SMP of the held job may still be preparing the
# other slot for the next version, legitimately).
committed_slot() { "$B/ft-status" --json | grep -o '"slot":[01],"state":"COMMITTED"' | grep -o '[01]' | head -1; }
store() { md5sum "$FT_STORE_ROOT/$FT_JOB/meta" "$FT_STORE_ROOT/$FT_JOB/slot$(committed_slot)"; }
before=$(store)
# A short FT_TIMEOUT: how long the second launch waits for the lock.
FT_TIMEOUT=2 train second 3 $ARGS && { log_of second | tail; fail "a second launch of a running job exited 0"; }
grep -q "another launch of this job holds the store on this node" "$LOGDIR/second" ||
  { log_of second | tail; fail "no clear message for the second launch"; }
[ "$before" = "$(store)" ] || fail "the refused launch changed the store"
note "second launch refused: $(grep -m1 -o 'another launch[^;]*' "$LOGDIR/second")"

# Nor does ft-restore rewrite the store of a running job.
FT_TIMEOUT=2 timeout -k 10 120 mpirun -np 1 "$B/ft-restore" >"$LOGDIR/restore" 2>&1
rc=$?
[ $rc = 1 ] || { log_of restore | tail; fail "ft-restore on a running job: exit $rc, expected 1"; }
grep -q "another launch of this job holds the store on this node" "$LOGDIR/restore" ||
  { log_of restore | tail; fail "ft-restore on a running job: no clear message"; }
[ "$before" = "$(store)" ] || fail "the refused ft-restore changed the store"
note "ft-restore on the running job refused (exit 1), store unchanged"

"$B/ft-hold" --job "$FT_JOB" release >/dev/null || fail "ft-hold release"
wait "$FIRST" || { log_of first | tail; fail "the first launch failed after the second was refused"; }
expect_digest first "$REF" "first launch"

# The lock ends with its process: a relaunch after a crash takes it again.
export FT_JOB=crash
FT_HOLD=step=6 train_bg crashed 3 $ARGS
held crashed
kill -9 "$(smp_pid "$FT_JOB")"
wait "$PID" && fail "mpirun exited 0 after its SMP was killed"
train relaunch 3 $ARGS || { log_of relaunch | tail; fail "relaunch after a crash failed"; }
grep -q '^resumed from step 6$' "$LOGDIR/relaunch" || { log_of relaunch | head; fail "expected resume from step 6"; }
expect_digest relaunch "$REF" "relaunch after the SMP was killed"
echo "PASS: one launch per job"
