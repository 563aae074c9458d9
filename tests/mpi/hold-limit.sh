#!/usr/bin/env bash
# A hold nobody releases lets go by itself after FT_HOLD_LIMIT and says so:
# a job launched with FT_HOLD (as ft-chaos would, from a tool that then
# died) runs on to its end with the fault-free digest.  At a trainer point
# (step=N) and at an SMP point (phase=encode); with FT_HOLD_LIMIT=0 the
# hold stays until released.
. "$(dirname "$0")/lib.sh"
ARGS="--steps 8 --snapshot-every 2 --state-mb 1"

FT_JOB=ref train ref 2 $ARGS || { log_of ref | tail; fail "fault-free run failed"; }
REF=$(digest_of ref)

# The default bound, as ft-hold shows it.
export FT_JOB=default-bound
FT_HOLD=step=4 train_bg dflt 2 $ARGS
held dflt
out=$("$B/ft-hold" --job "$FT_JOB" show) || fail "ft-hold show: $out"
[[ $out == *", lets go after 600 s" ]] || fail "the default FT_HOLD_LIMIT is not 600 s: $out"
"$B/ft-hold" --job "$FT_JOB" release >/dev/null || fail "ft-hold release"
wait "$PID" || { log_of dflt | tail; fail "the released run failed"; }
unset FT_JOB

for when in step=4 phase=encode,step=4; do
  FT_JOB=lim-${when%%[=,]*} FT_HOLD=$when FT_HOLD_LIMIT=1 train "lim-$when" 2 $ARGS ||
    { log_of "lim-$when" | tail; fail "FT_HOLD=$when FT_HOLD_LIMIT=1: the job did not end by itself"; }
  grep -q "FT_HOLD: held at $when for 1 s and nobody let it go: going on (FT_HOLD_LIMIT)" "$LOGDIR/lim-$when" ||
    { log_of "lim-$when" | tail; fail "FT_HOLD=$when: no line saying the hold let go by itself"; }
  expect_digest "lim-$when" "$REF" "FT_HOLD=$when let go after FT_HOLD_LIMIT=1"
done

# FT_HOLD_LIMIT=0: no bound; the job waits at step 4 until released.
export FT_JOB=nolimit
FT_HOLD=step=4 FT_HOLD_LIMIT=0 train_bg nolimit 2 $ARGS
held nolimit
# ft-hold's options go anywhere on its command line (--job after the command).
out=$(FT_JOB=other "$B/ft-hold" show --job "$FT_JOB" 2>&1) || fail "ft-hold show --job $FT_JOB: $out"
[[ $out == *"armed step=4, held 1/1 "* ]] || fail "ft-hold show --job after the command: $out"
[[ $out == *", no bound" ]] || fail "FT_HOLD_LIMIT=0: the hold has a bound: $out"
"$B/ft-hold" release --job "$FT_JOB" >/dev/null || fail "ft-hold release --job"
wait "$PID" || { log_of nolimit | tail; fail "the released run failed"; }
! grep -q 'nobody let it go' "$LOGDIR/nolimit" || { log_of nolimit | tail; fail "FT_HOLD_LIMIT=0 let go by itself"; }
expect_digest nolimit "$REF" "FT_HOLD_LIMIT=0, released by ft-hold"
echo "PASS: a hold nobody releases lets go after FT_HOLD_LIMIT"
