#!/usr/bin/env bash
# A host that comes back after it was given up (issue 14.3), on 4 hosts
# (3+1) + 1 spare:
#   1. h2 is partitioned at step 8; ft-launch --restarts 1 --spares 1
#      rebuilds it onto s1 (layout epoch 2) and the job ends at step 16.
#   2. The partition heals: h2 is back with the store of layout epoch 1.  A
#      relaunch of the same job for 32 steps runs on h1..h4 (ft-launch takes
#      the first reachable hosts): it must not take h2's stale store as
#      current, nor start fresh over the committed step 16.  Without
#      --restarts it is refused with a message naming h2 and what to do.
#   3. With --restarts 1, ft-restore counts h2 as a node to rebuild (its
#      stale store is cleared), and the job resumes from step 16 and ends
#      with the digest of a fault-free 32-step run.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up cstale 4 --spares 1
begin "fault-free reference: 4 hosts, 3+1, 32 steps"
reference ref 32
ok "fault-free digest $REF"

export FT_JOB=stale$$
begin "1. partition h2 at step 8; s1 replaces it; the job ends at step 16"
launch_held run1 16 step=8 --job "$FT_JOB" --restarts 1 --spares 1 --timeout 10
chaos run1 partition h2
finish
expect_rc run1 0 "partition h2"
expect_line run1 "^ft-launch: lost host\(s\): *h2 *; replacing them with spare\(s\) s1$" "partition h2"
expect_resumed run1 8 8 "partition h2"
ok "h2 rebuilt onto s1, job ended at step 16"

begin "2. heal h2; relaunch the job on h1..h4 for 32 steps: refused"
ft-cluster heal h2 --name "$CL" >/dev/null || fail "ft-cluster heal h2"
launch run2 32 --job "$FT_JOB"
[ "$RC" -ne 0 ] || die_with run2 "relaunch over h2's stale store exited 0"
expect_no_line run2 "^fresh start$" "relaunch over a stale store"
expect_line run2 "h2.*layout epoch 1.*epoch 2" "relaunch over a stale store: a message naming h2 and the epochs"
expect_line run2 "ft-restore" "relaunch over a stale store: the message says what to do"
ok "refused: $(grep -m1 -o 'h2[^(]*layout epoch 1[^;]*' "$WORK/run2")"

begin "3. the same relaunch with --restarts 1: h2 rebuilt, resumes from step 16"
launch run3 32 --job "$FT_JOB" --restarts 1
expect_rc run3 0 "relaunch with --restarts 1"
expect_no_line run3 "^fresh start$" "relaunch with --restarts 1"
expect_line run3 "^ft-restore: h2 holds a stale store \(layout epoch 1, the newest is 2\)" "h2's store seen as stale"
expect_line run3 "^ft-restore: lost node 1 \(s1, group 0 position [0-3]\) -> h2$" "node 1 (on s1, not in this launch) rebuilt onto h2"
expect_resumed run3 16 16 "relaunch with --restarts 1"
expect_digest run3 "relaunch with --restarts 1"
ok "resumed from step 16, digest matches"
echo "PASS: a stale host never steers a relaunch"
