#!/usr/bin/env bash
# Killing a host under a running MPI job: every process of the host dies, its
# /dev/shm (its RAM) is gone, its link is gone, and mpirun reports the failure
# and exits instead of hanging -- plain mpirun, and ft-launch --cluster, which
# names the lost host.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_cluster
need_mpi
cluster_up kill 4
X=$FT_CLUSTER_CMD
ID=$(cat "$RUNDIR/$CL/id")

# 1. Plain mpirun across h1..h4 through the agent; kill h4.
"$X" hosts >"$WORK/hostfile"
run_bg plain "$X" exec head mpirun --oversubscribe --hostfile "$WORK/hostfile" \
  --map-by ppr:1:node --mca plm_rsh_agent "$FT_RSH" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,vader,self --mca btl_tcp_if_include eth0 \
  --mca oob_tcp_if_include eth0 "$MPI_NODES" --mb 1 --forever
MPIRUN=$BG
wait_for "$WORK/plain.out" '^mpi_nodes: running' 60 "$BG"
t0=$(date +%s.%N)
"$X" kill h4 >/dev/null || fail "ft-cluster kill h4"
wait_pid "$MPIRUN" 180 || { cat "$WORK/plain.out"; fail "mpirun still runs 180 s after h4 was killed"; }
[ "$RC" -ne 0 ] || fail "mpirun exited 0 after losing h4"
grep -q 'h4' "$WORK/plain.out" || { cat "$WORK/plain.out"; fail "mpirun's report does not name h4"; }
ok "plain mpirun ended (exit $RC) $(elapsed "$t0") s after kill h4, naming h4"

# 2. ft-launch --cluster on h1..h3; h3 holds a file in its /dev/shm; kill h3.
"$X" exec h3 sh -c 'head -c 4194304 /dev/zero >/dev/shm/ftrt-kill-test' ||
  fail "cannot write h3's /dev/shm"
SHMDEV=$("$X" exec h3 awk '$5 == "/dev/shm" { d = $3 } END { print d }' /proc/self/mountinfo)
[[ $SHMDEV =~ ^[0-9]+:[0-9]+$ ]] || fail "no tmpfs on h3's /dev/shm: '$SHMDEV'"
K3=$(keeper_of h3)
INODES=$(ns_inodes "$K3")
run_bg launch "$FT_LAUNCH" --cluster --ppn 1 --timeout 60 -- "$MPI_NODES" --mb 1 --forever
LAUNCH=$BG
wait_for "$WORK/launch.out" '^mpi_nodes: running' 60 "$BG"
grep -qx 'ft-launch: 3 nodes x (1 trainer + 1 SMP) = 6 ranks, job ftrt' "$WORK/launch.out" ||
  { cat "$WORK/launch.out"; fail "ft-launch did not start 3 nodes (h4 is dead)"; }
before=$(pids_in $INODES | wc -l)
[ "$before" -ge 4 ] || fail "h3 runs $before processes, expected keeper, orted and 2 ranks"
# A process outside h3 holding its mount namespace open by a descriptor
# (as nsenter does before it enters): it would keep h3's /dev/shm alive.
sleep 600 7<"/proc/$K3/ns/mnt" &
HOLD=$!
BG_PIDS+=("$HOLD")
t0=$(date +%s.%N)
T0=$(ticks_now)   # before the kill: a namespace made later may reuse an inode
"$X" kill h3 >"$WORK/kill.out" || fail "ft-cluster kill h3: $(cat "$WORK/kill.out")"
left=$(pids_in_before "$T0" $INODES)
[ -z "$left" ] || fail "processes of h3 survive the kill: $left"
dead "$HOLD" || fail "pid $HOLD holds h3's mount namespace open after kill: its /dev/shm lives on"
ok "kill h3 killed its $before processes (keeper, orted, ranks)"

grep -q " $SHMDEV / /dev/shm " /proc/[0-9]*/mountinfo 2>/dev/null &&
  fail "h3's tmpfs $SHMDEV is still mounted somewhere"
"$X" exec h3 cat /dev/shm/ftrt-kill-test >/dev/null 2>&1; rc=$?
[ $rc -eq 255 ] || fail "exec on killed h3: exit $rc, expected 255 (host down)"
[ ! -e /dev/shm/ftrt-kill-test ] || fail "h3's file shows up in the machine's /dev/shm"
ip netns list | grep -q "^ftc-$CL-$ID-h3\b" && fail "h3's namespace is still there"
ip -n "ftc-$CL-$ID-net" link show h3 >/dev/null 2>&1 && fail "h3's link is still on the bridge"
ok "h3's /dev/shm tmpfs, namespace and link are gone"

wait_pid "$LAUNCH" 180 || { cat "$WORK/launch.out"; fail "ft-launch still runs 180 s after h3 was killed"; }
[ "$RC" -eq 125 ] || { cat "$WORK/launch.out"; fail "ft-launch exit $RC, expected 125 (host lost)"; }
grep -q '^ft-launch: job failed; host(s) of the job unreachable (killed or partitioned): h3$' \
  "$WORK/launch.out" || { cat "$WORK/launch.out"; fail "ft-launch does not name h3"; }
ok "ft-launch ended (exit 125) $(elapsed "$t0") s after kill h3, naming h3"

for h in h1 h2; do
  k=$(keeper_of $h)
  left=$(pids_in $(ns_inodes "$k") | grep -vx "$k")
  [ -z "$left" ] || fail "processes of the job left on $h: $left"
done
ok "no process of the job left on the surviving hosts"

# 3. A lost host (its keeper died, a process of it lives on, holding its
# /dev/shm) killed while a process outside holds that process's mount
# namespace: the holder dies too, and with it h2's last /dev/shm.
run_bg h2proc "$X" exec h2 sh -c 'echo kept >/dev/shm/ftrt-lost-test && echo ready && exec sleep 600'
wait_for "$WORK/h2proc.out" '^ready$' 60 "$BG"
P2=$(ps -o pid= --ppid "$BG" | tr -d ' ')
[ -z "$P2" ] && P2=$BG   # exec replaced ft-cluster's shell: the same pid
mapfile -t H2NS < <(ns_inodes "$(keeper_of h2)")
in_h2=$(pids_in "${H2NS[@]}" | tr '\n' ' ')
[[ " $in_h2 " == *" $P2 "* ]] || fail "no process of h2 found to hold (test did not test): $P2 in '$in_h2'"
sleep 600 7<"/proc/$P2/ns/mnt" &
HOLD2=$!
BG_PIDS+=("$HOLD2")
kill -KILL "$(keeper_of h2)"
[ "$("$X" status | awk '$1 == "h2" { print $4 }')" = lost ] || fail "h2 is not lost after its keeper died"
"$X" kill h2 >"$WORK/kill2.out" || fail "ft-cluster kill h2 (lost): $(cat "$WORK/kill2.out")"
dead "$P2" || fail "h2's process $P2 survives the kill"
dead "$HOLD2" || fail "pid $HOLD2 holds lost h2's mount namespace open after kill: its /dev/shm lives on"
ok "a lost host killed: its process and a holder of its mount namespace are gone"
