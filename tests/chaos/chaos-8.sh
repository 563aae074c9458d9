#!/usr/bin/env bash
# Chaos on 8 hosts, k=3 m=1 (two groups of 4), + 2 spares.
#   5. kill 1 host in each group (h2 in group 0, h6 in group 1) at step 8
#      (once its snapshot is committed); ft-launch --restarts 1 --spares 2 puts s1
#      and s2 in their places, ft-restore rebuilds each from its own group,
#      the job resumes and ends with the fault-free digest.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=32 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up ceight 8 --spares 2
begin "fault-free reference: 8 hosts, 3+1, $STEPS steps"
reference ref "$STEPS"
ok "fault-free digest $REF"

begin "5. kill h2 (group 0) and h6 (group 1) at step 8"
export FT_JOB=lose-each
# --timeout 10: the watchdog ends the mpirun left waiting on h6 (kill_two).
launch_held each "$STEPS" step=8 --job "$FT_JOB" --restarts 1 --spares 2 --timeout 10
kill_two h6 h2 each
finish
expect_rc each 0 "ft-launch --restarts 1 --spares 2"
expect_line each '^ft-launch: lost host\(s\): *h2 h6 *; replacing them with spare\(s\) s1 s2$' "kill h2, h6"
expect_line each '^ft-restore: job lose-each, 8 nodes, m=1,' "kill h2, h6"
expect_line each '^ft-restore: lost node 1 \(h2, group 0 position [0-3]\) -> s1$' "kill h2, h6"
expect_line each '^ft-restore: lost node 5 \(h6, group 1 position [0-3]\) -> s2$' "kill h2, h6"
expect_resumed each 8 8 "kill h2, h6"
expect_line each "^ft-restore: restored version [0-9]+ \(step $RESUMED\): 2 lost node\(s\), 0 corrupt chunk\(s\)" "kill h2, h6"
expect_line each "^ft-launch: on cluster $CL: h1 s1 h3 h4 h5 s2 h7 h8;" "kill h2, h6: relaunch with the spares in place"
expect_digest each "kill h2, h6"
ok "1 host lost in each of 2 groups: rebuilt on s1 and s2, resumed from step $RESUMED, digest matches"
echo "PASS: chaos on 8 hosts, two 3+1 groups"
