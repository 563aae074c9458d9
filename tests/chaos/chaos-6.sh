#!/usr/bin/env bash
# Chaos on 6 hosts, k=4 m=2 (ft-launch --ec 4+2), + 2 spares.
#   4. kill 2 hosts of the one group (h2 and h5) after step 8 (step 4 is
#      committed); ft-launch --restarts 1 --spares 2 puts s1 and s2 in their
#      places, ft-restore rebuilds both from the 4 survivors, the job
#      resumes and ends with the fault-free digest.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=32 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up csix 6 --spares 2
begin "fault-free reference: 6 hosts, 4+2, $STEPS steps"
reference ref "$STEPS" --ec 4+2
ok "fault-free digest $REF"

begin "4. kill h2 and h5 (2 hosts of one 4+2 group) at step 8"
export FT_JOB=lose-two
# --timeout 10: the watchdog ends the mpirun left waiting on h5 (kill_two).
launch_held two "$STEPS" step=8 --job "$FT_JOB" --ec 4+2 --restarts 1 --spares 2 --timeout 10
kill_two h5 h2 two
finish
expect_rc two 0 "ft-launch --ec 4+2 --restarts 1 --spares 2"
expect_line two '^ft-launch: lost host\(s\): *h2 h5 *; replacing them with spare\(s\) s1 s2$' "kill h2, h5"
expect_line two '^ft-restore: job lose-two, 6 nodes, m=2,' "kill h2, h5"
expect_line two '^ft-restore: lost node 1 \(h2, group 0 position [0-5]\) -> s1$' "kill h2, h5"
expect_line two '^ft-restore: lost node 4 \(h5, group 0 position [0-5]\) -> s2$' "kill h2, h5"
expect_resumed two 8 8 "kill h2, h5"
expect_line two "^ft-restore: restored version [0-9]+ \(step $RESUMED\): 2 lost node\(s\), 0 corrupt chunk\(s\)" "kill h2, h5"
expect_line two "^ft-launch: on cluster $CL: h1 s1 h3 h4 s2 h6;" "kill h2, h5: relaunch with the spares in place"
expect_digest two "kill h2, h5"
ok "2 hosts of a 4+2 group lost: rebuilt on s1 and s2, resumed from step $RESUMED, digest matches"
echo "PASS: chaos on 6 hosts, 4+2"
