#!/usr/bin/env bash
# A job with a partitioned host must not hang: ft-launch's watchdog ends it
# once the host has been unreachable for longer than --timeout, names the
# host, exits 124 and leaves no process of the job behind, not even on the
# partitioned host.  After heal the cluster runs jobs again.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_cluster
need_mpi
cluster_up part 3
X=$FT_CLUSTER_CMD

run_bg launch "$FT_LAUNCH" --cluster --ppn 1 --timeout 5 -- "$MPI_NODES" --mb 1 --forever
LAUNCH=$BG
wait_for "$WORK/launch.out" '^mpi_nodes: running' 60 "$LAUNCH"
t0=$(date +%s.%N)
"$X" partition h2 >/dev/null || fail "ft-cluster partition h2"
wait_pid "$LAUNCH" 180 || { cat "$WORK/launch.out"; fail "job still runs 180 s after partitioning h2 (timeout 5 s)"; }
took=$(elapsed "$t0")
[ "$RC" -eq 124 ] || { cat "$WORK/launch.out"; fail "ft-launch exit $RC, expected 124"; }
grep -Eq '^ft-launch: host h2 unreachable for [0-9]+ s \(timeout 5 s\): ending the job$' \
  "$WORK/launch.out" || { cat "$WORK/launch.out"; fail "no watchdog message naming h2"; }
# Never before the timeout; how long after depends on the machine (the 180 s
# above only bounds a hang).
awk -v t="$took" 'BEGIN { exit !(t >= 5) }' ||
  { cat "$WORK/launch.out"; fail "job ended $took s after the partition, before the 5 s timeout"; }
ok "ft-launch ended the job $took s after partition h2 (timeout 5 s), exit 124"

for h in head h1 h2 h3; do   # the head: the watchdog's pings too
  k=$(keeper_of $h)
  left=$(pids_in $(ns_inodes "$k") | grep -vx "$k")
  [ -z "$left" ] || fail "processes of the job left on $h: $left"
done
ok "no process of the job left, the partitioned h2 included, nor of the watchdog on the head"

"$X" heal h2 >/dev/null || fail "ft-cluster heal h2"
"$X" ping h2 >/dev/null || fail "h2 unreachable after heal"
timeout 120 "$FT_LAUNCH" --cluster --ppn 1 -- "$MPI_NODES" --mb 1 --expect-nodes 3 \
  >"$WORK/again.out" 2>&1 || { cat "$WORK/again.out"; fail "job after heal failed"; }
ok "after heal h2, a job on h1..h3 runs"
