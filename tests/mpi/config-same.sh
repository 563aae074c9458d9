#!/usr/bin/env bash
# The FT_* settings a job's processes must share (runtime/config.h
# ft__config_same) are checked when they start: one process with another
# FT_PIECE_SIZE or FT_JOB (a per-host profile, a hand-made launch) is
# refused everywhere with a message naming the variable and the values,
# before any store is touched.  Before: the snapshot's exchange sent pieces
# of two sizes, and the job died in MPI (MPI_ERR_TRUNCATE) at its first
# snapshot; ft-restore likewise.  3 virtual nodes, vnode0 set apart with
# mpirun's MPMD form.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2 FT_JOB=same
ARGS="--steps 4 --snapshot-every 2 --state-mb 8"
MORE="--steps 8 --snapshot-every 2 --state-mb 8"   # past the stored step 4: snapshots again
apart() {  # apart NAME VAR=VALUE PROGRAM ARGS...: vnode0 with VAR=VALUE
  local name=$1 set=$2; shift 2
  timeout -k 10 120 mpirun -np 2 env "$set" "$@" : -np 4 "$@" >"$LOGDIR/$name" 2>&1
}

train first 6 $ARGS || { log_of first | tail; fail "a run with every setting the same failed"; }
before=$(md5sum "$FT_STORE_ROOT"/vnode*/"$FT_JOB"/*)

apart piece FT_PIECE_SIZE=262144 "$B/ft-train-example" $MORE && { log_of piece | tail; fail "FT_PIECE_SIZE apart: exited 0"; }
grep -q "ft_init: FT_PIECE_SIZE is not the same on every process of the job (262144 on rank 0, [^;]*; 1048576 on rank 2, [^)]*)" "$LOGDIR/piece" ||
  { log_of piece | tail; fail "FT_PIECE_SIZE apart: no message naming it"; }
grep -q "^step " "$LOGDIR/piece" && fail "FT_PIECE_SIZE apart: the job trained"
note "FT_PIECE_SIZE apart: $(grep -m1 -o 'FT_PIECE_SIZE is not[^;]*' "$LOGDIR/piece")"

apart job FT_JOB=other "$B/ft-train-example" $MORE && { log_of job | tail; fail "FT_JOB apart: exited 0"; }
grep -q "ft_init: FT_JOB is not the same on every process of the job" "$LOGDIR/job" ||
  { log_of job | tail; fail "FT_JOB apart: no message naming it"; }
note "FT_JOB apart: $(grep -m1 -o 'FT_JOB is not[^;]*' "$LOGDIR/job")"
[ ! -e "$FT_STORE_ROOT/vnode0/other" ] || fail "FT_JOB apart: a store of job 'other' was made"

# Modes by name; the disk tier's directory too (its collectives run only
# where it is set).
apart capture FT_CAPTURE=lazy "$B/ft-train-example" $MORE && fail "FT_CAPTURE apart: exited 0"
grep -q "ft_init: FT_CAPTURE is not the same on every process of the job (lazy on rank 0, [^;]*; sync on rank 2, [^)]*)" "$LOGDIR/capture" ||
  { log_of capture | tail; fail "FT_CAPTURE apart: no message naming it"; }
apart persist FT_PERSIST_DIR="$LOGDIR/persist" "$B/ft-train-example" $MORE && fail "FT_PERSIST_DIR apart: exited 0"
grep -q "ft_init: FT_PERSIST_DIR is not the same on every process of the job ('$LOGDIR/persist' on rank 0, [^;]*; '' on rank 2, [^)]*)" "$LOGDIR/persist" ||
  { log_of persist | tail; fail "FT_PERSIST_DIR apart: no message naming it"; }
note "FT_CAPTURE, FT_PERSIST_DIR apart: refused, named"

apart restore FT_PIECE_SIZE=262144 "$B/ft-restore"
rc=$?
[ $rc = 2 ] || { log_of restore | tail; fail "ft-restore with FT_PIECE_SIZE apart: exit $rc, expected 2"; }
grep -q "ft-restore: FT_PIECE_SIZE is not the same on every process of the job (262144 on rank 0, [^;]*; 1048576 on rank 2, [^)]*)" "$LOGDIR/restore" ||
  { log_of restore | tail; fail "ft-restore with FT_PIECE_SIZE apart: no message naming it"; }
note "ft-restore with FT_PIECE_SIZE apart: exit 2"
# A bad variable on some ranks only: every rank says so and ends (the
# others waited in the comparison before).
apart restore-bad FT_LOG=bogus "$B/ft-restore"
rc=$?
[ $rc = 2 ] || { log_of restore-bad | tail; fail "ft-restore with a bad FT_LOG on one node: exit $rc, expected 2"; }
grep -q "ft-restore: .*FT_LOG=bogus" "$LOGDIR/restore-bad" || { log_of restore-bad | tail; fail "ft-restore with a bad FT_LOG on one node: no message"; }
note "ft-restore with a bad FT_LOG on one node: exit 2"

[ "$before" = "$(md5sum "$FT_STORE_ROOT"/vnode*/"$FT_JOB"/*)" ] || fail "a refused launch changed the stores"
train again 6 $ARGS || { log_of again | tail; fail "the relaunch with every setting the same failed"; }
grep -q '^resumed from step 4$' "$LOGDIR/again" || { log_of again | head; fail "expected resume from step 4"; }
echo "PASS: settings a job shares are checked"
