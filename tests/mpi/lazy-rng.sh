#!/usr/bin/env bash
# Lazy snapshots never capture torn state (issue 14.8).  With FT_CAPTURE=lazy
# a training script changes its RNG at once after ft_snapshot, before
# ft_fence (ft-train-example --rng-in-place): RNG and OTHER buffers must be
# captured before ft_snapshot returns.  The snapshot of step 12 (the last
# one of a 14-step run) is held in the middle of its copy (FT_HOLD=
# phase=snapshot) while the trainers go on into step 13, then let go; a
# relaunch resumes from step 12 and must end with the digest of a
# fault-free run.  A torn capture restores a generator that is already one
# step ahead: another digest.
. "$(dirname "$0")/lib.sh"
export FT_CAPTURE=lazy
ARGS="--steps 14 --snapshot-every 4 --state-mb 4 --rng-in-place"

FT_JOB=ref train ref 3 $ARGS || { log_of ref | tail; fail "fault-free run failed"; }
REF=$(digest_of ref)
FT_JOB=ref-sync FT_CAPTURE=sync train ref-sync 3 $ARGS || fail "sync run failed"
expect_digest ref-sync "$REF" "--rng-in-place, sync capture, fault-free"

export FT_JOB=lazy-rng
FT_HOLD=phase=snapshot,step=12 train_bg held 3 $ARGS
held held
"$B/ft-hold" --job "$FT_JOB" release >/dev/null || fail "ft-hold release"
wait "$PID" || { log_of held | tail; fail "the held run failed"; }
train again 3 $ARGS || { log_of again | tail; fail "relaunch failed"; }
grep -q '^resumed from step 12$' "$LOGDIR/again" || { log_of again | head; fail "expected resume from step 12"; }
expect_digest again "$REF" "lazy capture held mid-copy while the RNG moved on, resumed from step 12"
echo "PASS: lazy capture of RNG state"
