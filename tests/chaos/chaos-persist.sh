#!/usr/bin/env bash
# The disk tier (issue 17): what erasure coding cannot survive, the job
# survives from FT_PERSIST_DIR (ft-launch --persist), and resumes with the
# digest of a fault-free run (training replays deterministically from the
# persisted step).  The persist directory is one every simulated host sees
# (the hosts share the machine's file system; only /dev/shm is their own).
#   1. The whole cluster lost: a job of 12 steps ends (its SMPs flush the
#      last committed version, step 12, on the way out); every host goes
#      down and a new cluster comes up with empty /dev/shm; the relaunch
#      resumes from step 12 from disk and ends with the fault-free digest
#      of 20 steps.
#   2. More losses than the code rebuilds: 4 hosts, 3+1, held once step 8
#      is committed and flushed whole (the hold point keeps every newer
#      snapshot out, so the flush of step 8 cannot be abandoned); h2 and h3
#      are killed; ft-launch --restarts 1 runs ft-restore, which says it
#      resumes from the disk tier and which steps are lost; the job resumes
#      from step 8 on the survivors plus the spare and ends with the
#      fault-free digest.
#   3. The newest version on disk damaged (one byte of a rank file
#      flipped): the relaunch names the file, resumes from the older
#      version, and ends with the fault-free digest.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=20 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
PERSIST=$WORK/persist
mkdir -m 700 "$PERSIST" || fail "mkdir $PERSIST"
export FT_PERSIST_EVERY=1

# persisted STEP: a version of the job's holding STEP is complete on disk
# (its MANIFEST is there, and says STEP: the u64 at byte 104).
persisted() {
  local m
  for m in "$PERSIST/$FT_JOB"/v*/MANIFEST; do
    [ -f "$m" ] && [ "$(od -An -tu8 -j104 -N8 "$m" | tr -d ' ')" = "$1" ] && return 0
  done
  return 1
}

# wait_persisted STEP WHAT: while the job is held, its flush of STEP ends.
wait_persisted() {
  local t=0
  until persisted "$1"; do
    t=$((t + 1))
    [ "$t" -le $((LIMIT * 10)) ] || fail "$2: step $1 never complete on disk"
    sleep 0.1
  done
}

begin "1. the whole cluster lost: resumed from disk"
up c1 4
reference ref1 "$STEPS"
export FT_JOB=whole$$
launch c1.a 12 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c1.a 0 "12 steps with --persist"
persisted 12 || { ls -lR "$PERSIST"; fail "case 1: step 12 is not complete on disk after the job ended"; }
up c1 4   # a new cluster: every host's /dev/shm is new
launch c1.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c1.b 0 "relaunch on a new cluster"
expect_line c1.b 'restoring from the disk tier, version [0-9]+ \(step 12\)' "relaunch"
expect_resumed c1.b 12 12 "relaunch"
expect_digest c1.b "relaunch from disk"
ok "resumed from step 12 on disk, digest $REF"
