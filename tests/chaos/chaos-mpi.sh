#!/usr/bin/env bash
# The core recovery scenarios on the MPI this build was configured with
# (configure --with-mpi: Open MPI 4.1 by default; the matrix stage of
# scripts/run-tests runs it on each other MPI's build too): 4 hosts
# (3+1) + 2 spares, then 6 hosts (4+2) + 2 spares, ft-launch with that
# MPI's launcher (its backend, ft-launch --launcher).  Each ends with the
# fault-free digest of the same MPI:
#   1. h2 killed at step 8: the spare s1 takes its place;
#   2. h2 partitioned at step 8 (it lives, nothing reaches it): the watchdog
#      ends the attempt after --timeout, s1 takes its place;
#   3. no spare (--spares 0): h4 killed at step 8, the job shrinks to
#      h1..h3 and ends with the digest of the fault-free shrink;
#   4. 4+2: h2 and h5 (two of the one group) killed at step 8: s1 and s2.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
MPI=$(ft-launch --dry-run -- x 2>/dev/null | grep -v '^#' | awk '{ print $1; exit }')
echo "# launcher: $MPI (ft-launch's default backend of this build)"
STEPS=16 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up cmpi 4 --spares 2
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS" --nodes 4
ok "fault-free digest $REF"

# lost LOG ACTION HOST [ft-launch ARGS...]: ACTION (an ft-chaos action) on
# HOST at step 8 under --restarts 1; the job ends well and resumed from 8.
lost() {
  local log=$1 action=$2 host=$3
  shift 3
  launch_held "$log" "$STEPS" step=8 --job "$FT_JOB" --nodes 4 --restarts 1 --timeout 10 "$@"
  chaos "$log" "$action" "$host"
  finish
  expect_rc "$log" 0 "$action $host, ft-launch --restarts 1 $*"
  expect_resumed "$log" 8 8 "$action $host"
}

begin "1. h2 killed at step 8: s1 takes its place"
export FT_JOB=mpi-kill
lost kill kill-node h2 --spares 1
expect_line kill '^ft-launch: lost host\(s\): h2; replacing them with spare\(s\) s1$' "h2 killed"
expect_digest kill "h2 killed"
ok "h2 killed: s1 took its place, resumed from step $RESUMED, digest matches"

begin "2. h2 partitioned at step 8: the watchdog ends the attempt, s1 takes its place"
up cmpi 4 --spares 2
export FT_JOB=mpi-part
lost part partition h2 --spares 1
expect_line part '^ft-launch: host h2 unreachable for [0-9]+ s \(timeout 10 s' "h2 partitioned: the watchdog"
expect_line part '^ft-launch: lost host\(s\): h2; replacing them with spare\(s\) s1$' "h2 partitioned"
expect_digest part "h2 partitioned"
ok "h2 partitioned: the watchdog ended the attempt, s1 took its place, resumed from step $RESUMED, digest matches"

begin "3. no spare: h4 killed at step 8, the job shrinks to h1 h2 h3"
up cmpi 4 --spares 2
shrunk_reference shref "h1 h2 h3" --nodes 4
up cmpi 4 --spares 2
export FT_JOB=mpi-shrink
lost shrink kill-node h4 --spares 0
expect_line shrink '^ft-launch: lost host\(s\): h4; no spare left: shrinking to 3 nodes$' "h4 killed, no spare"
expect_digest shrink "h4 killed, no spare"
ok "h4 killed, no spare: shrunk to h1..h3, resumed from step $RESUMED, digest of the fault-free shrink"

begin "4. 6 hosts, 4+2: h2 and h5 killed at step 8, s1 and s2 take their places"
up cmpi 6 --spares 2
reference ref6 "$STEPS" --ec 4+2
export FT_JOB=mpi-two
launch_held two "$STEPS" step=8 --job "$FT_JOB" --ec 4+2 --restarts 1 --spares 2 --timeout 10
kill_two h5 h2 two cut
finish
expect_rc two 0 "ft-launch --ec 4+2 --restarts 1 --spares 2"
# One regroup or two: hydra and PRRTE see the daemon on h5 go as its host is
# killed (its remote shell ends), before h2 is (h2 cut off by then: lost to
# the probe too); Open MPI 4.1's mpirun waits for the watchdog.
expect_line two '^ft-launch: .* done: success after 1 restart\(s\): .*h2 -> s[12]' "h2 killed: a spare in its place"
expect_line two '^ft-launch: .* done: success after 1 restart\(s\): .*h5 -> s[12]' "h5 killed: a spare in its place"
expect_resumed two 8 8 "h2, h5 killed"
expect_digest two "h2, h5 killed"
ok "2 hosts of a 4+2 group lost: rebuilt on s1 and s2, resumed from step $RESUMED, digest matches"
echo "PASS: the core recovery scenarios on $MPI"
