#!/usr/bin/env bash
# "down" after a crash leaves nothing behind: no namespace, link, keeper or
# process of the cluster.  Three crashes: the shell driving a job is killed
# mid-way (keepers, mpirun, orted and ranks live on); "up" is killed while
# building; the state directory is lost with the keepers still alive.  A
# leftover never breaks the next "up".
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_cluster
need_mpi
X=$FT_CLUSTER_CMD

no_root_links() {  # no link of the cluster in the machine's namespace
  local l
  l=$(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
      grep -Ex 'br0|head|[hs][0-9]+' || true)
  [ -z "$l" ] || fail "links in the machine's namespace: $l"
}

# 1. Kill -9 the shell that brought the cluster up and runs a job on it.
CL=crasha$$
bash -c '"$1" up 3 --name "$2" >/dev/null || exit 1
         "$3" --cluster="$2" --ppn 1 --timeout 60 -- "$4" --mb 1 --forever >"$5" 2>&1 &
         wait' driver "$X" "$CL" "$FT_LAUNCH" "$MPI_NODES" "$WORK/a.out" &
DRIVER=$!
BG_PIDS+=("$DRIVER")
wait_for "$WORK/a.out" '^mpi_nodes: running' 60 "$DRIVER"
LAUNCH=$(ps -o pid= --ppid "$DRIVER" | tr -d ' ')
[ -n "$LAUNCH" ] && BG_PIDS+=("$LAUNCH")
INODES=
for h in head h1 h2 h3; do INODES+=" $(ns_inodes "$(keeper_of $h)" | tr '\n' ' ')"; done
{ kill -KILL "$DRIVER"; wait "$DRIVER"; } 2>/dev/null
n=$(pids_in $INODES | wc -l)
[ "$n" -ge 10 ] || fail "after the crash only $n processes run in the cluster, expected keepers, mpirun, orteds and ranks"
# A process holding the head's network namespace open by a descriptor, as
# nsenter does between opening /proc/PID/ns/net and entering it (the
# orphaned ft-launch's watchdog pings the hosts that way): after down it
# could still enter the namespace, and a process would live in it.
# The same through the namespace's name, as "ip netns exec" opens it.
sleep 600 7<"/proc/$(keeper_of head)/ns/net" &
HOLD=$!
sleep 600 7<"/run/netns/ftc-$CL-$(cat "$RUNDIR/$CL/id")-h1" &
HOLD_NAMED=$!
BG_PIDS+=("$HOLD" "$HOLD_NAMED")
T0=$(ticks_now)   # before down: a namespace made later may reuse an inode
"$X" down --name "$CL" >/dev/null || fail "down after a crashed driver"
left=$(pids_in_before "$T0" $INODES)
[ -z "$left" ] || fail "processes left after down: $left"
dead "$HOLD" || fail "pid $HOLD holds the head's network namespace open after down: it can still be entered"
dead "$HOLD_NAMED" || fail "pid $HOLD_NAMED holds h1's network namespace open (opened by its name) after down"
assert_gone "$CL"
no_root_links
if [ -n "$LAUNCH" ]; then  # an orphan now: it ends once its mpirun is gone
  for i in $(seq 1200); do dead "$LAUNCH" && break; sleep 0.1; done  # bounds a hang
  dead "$LAUNCH" || fail "ft-launch (pid $LAUNCH) still runs after its cluster went down"
fi
CL=
ok "down after a killed driver shell: $n processes, namespaces, keepers and a holder of one gone"

# 2. Kill -9 "up" while it builds the cluster; the next "up" must work.
CL=crashb$$
"$X" up 6 --name "$CL" >/dev/null 2>&1 &
UP=$!
BG_PIDS+=("$UP")
for i in $(seq 6000); do  # until 3 namespaces exist (bounds a hang)
  [ "$(ip netns list 2>/dev/null | grep -c "^ftc-$CL-")" -ge 3 ] && break
  sleep 0.01
done
kill -KILL "$UP" 2>/dev/null
wait "$UP" 2>/dev/null
made=$(ip netns list | grep -c "^ftc-$CL-")
[ "$made" -ge 1 ] || fail "the killed up left no namespace to clean (test did not test)"
"$X" up 2 --name "$CL" >/dev/null || fail "up after a killed up"
[ "$("$X" exec --name "$CL" h2 hostname)" = h2 ] || fail "the new cluster does not work"
[ "$(ip netns list | grep -c "^ftc-$CL-")" -eq 4 ] ||
  fail "leftovers of the killed up survive the next up: $(ip netns list | grep "^ftc-$CL-" | tr '\n' ' ')"
"$X" down --name "$CL" >/dev/null || fail "down"
assert_gone "$CL"
no_root_links
CL=
ok "a killed up ($made namespaces made) breaks neither the next up nor down"

# 3. The state directory is lost while the keepers live.
CL=crashc$$
"$X" up 2 --name "$CL" >/dev/null || fail "up"
K=$(keeper_of h1)
# Run inside a host, "down" would see that host's /run/netns (empty) and
# take the keeper beside it for none: refused, the cluster untouched.
out=$("$X" exec --name "$CL" head "$X" down --name "$CL" 2>&1) && fail "down inside a host succeeded: $out"
grep -q 'inside a host' <<<"$out" || fail "down inside a host, message: $out"
dead "$K" && fail "down inside a host killed h1's keeper"
# In a host's network namespace only (ip netns exec keeps the machine's
# /run/netns and mounts): refused too.
NS=ftc-$CL-$(cat "$RUNDIR/$CL/id")-h1
[ -e "/run/netns/$NS" ] || fail "no network namespace $NS"
out=$(ip netns exec "$NS" "$X" down --name "$CL" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "down in h1's network namespace: exit $rc, not 1: $out"
grep -q "refused: this process is in the network namespace $NS" <<<"$out" ||
  fail "down in h1's network namespace, message: $out"
dead "$K" && fail "down in h1's network namespace killed h1's keeper"
rm -rf "${RUNDIR:?}/$CL"
"$X" down --name "$CL" >/dev/null || fail "down without a state directory"
dead "$K" || fail "keeper $K of h1 survives down"
assert_gone "$CL"
CL=
ok "down finds keepers and namespaces by name when the state is lost"

# 4. A process of another user named like a keeper of cluster C (in
# namespaces of its own, so that a "down" that took it for a keeper kills
# only it) is not a keeper: "down" leaves it alone.
CL=crashd$$
unshare --net --mount setpriv --reuid=65534 --regid=65534 --clear-groups \
  bash -c "exec -a ftrt-keeper/$CL/000000/h1 sleep 600" &
FAKE=$!
BG_PIDS+=("$FAKE")
for i in $(seq 100); do  # until it runs under its name (bounds a hang)
  [ "$(tr '\0' ' ' 2>/dev/null <"/proc/$FAKE/cmdline")" = "ftrt-keeper/$CL/000000/h1 600 " ] && break
  sleep 0.05
done
[ "$(tr '\0' ' ' 2>/dev/null <"/proc/$FAKE/cmdline")" = "ftrt-keeper/$CL/000000/h1 600 " ] ||
  fail "the fake keeper did not start (test did not test)"
"$X" down --name "$CL" >/dev/null || fail "down with another user's process named like a keeper"
dead "$FAKE" && fail "down killed pid $FAKE, another user's process that only bears a keeper's name"
kill "$FAKE" 2>/dev/null
CL=
ok "a process of another user named like a keeper is not taken for one"
