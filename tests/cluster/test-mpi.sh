#!/usr/bin/env bash
# MPI across the hosts of an ft-cluster: plain mpirun through the rsh agent,
# then ft-launch --cluster.  MPI_Comm_split_type(SHARED) must find one node
# per host, each node must hold consecutive ranks (P trainers + 1 SMP), an
# allreduce of several MB over TCP must be right, and FT_* variables must
# reach ranks on every host.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_cluster
need_mpi
cluster_up mpi 4
X=$FT_CLUSTER_CMD

"$X" hosts >"$WORK/hostfile" || fail "ft-cluster hosts"
timeout 120 "$X" exec head mpirun --oversubscribe --hostfile "$WORK/hostfile" \
  --map-by ppr:1:node --mca plm_rsh_agent "$FT_RSH" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,self --mca btl_tcp_if_include eth0 \
  --mca oob_tcp_if_include eth0 "$MPI_NODES" --mb 8 --expect-nodes 4 \
  >"$WORK/plain.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/plain.out"; fail "plain mpirun through ft-rsh: exit $rc"; }
grep -q '^mpi_nodes: 4 ranks on 4 nodes: h1\[0-0\] h2\[1-1\] h3\[2-2\] h4\[3-3\]$' "$WORK/plain.out" &&
  grep -q '^mpi_nodes: allreduce of 8 MB ok$' "$WORK/plain.out" ||
  { cat "$WORK/plain.out"; fail "plain mpirun: wrong nodes or data"; }
ok "plain mpirun via ft-rsh: 4 nodes, 8 MB allreduce over TCP"

timeout 120 "$FT_LAUNCH" --cluster --ppn 2 --job clj -- "$MPI_NODES" --mb 4 \
  --expect-nodes 4 --expect-ppn 3 >"$WORK/launch.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/launch.out"; fail "ft-launch --cluster: exit $rc"; }
grep -qx 'ft-launch: 4 nodes x (2 trainers + 1 SMP) = 12 ranks, job clj' "$WORK/launch.out" ||
  { cat "$WORK/launch.out"; fail "ft-launch: no summary line"; }
grep -q '^mpi_nodes: 12 ranks on 4 nodes: h1\[0-2\] h2\[3-5\] h3\[6-8\] h4\[9-11\]$' "$WORK/launch.out" &&
  grep -q '^mpi_nodes: allreduce of 4 MB ok$' "$WORK/launch.out" ||
  { cat "$WORK/launch.out"; fail "ft-launch --cluster: wrong layout or data"; }
ok "ft-launch --cluster --ppn 2: 4 nodes x 3 consecutive ranks, allreduce ok"

# OMPI_MCA_plm=isolated, as a container image may set (the GPU machine
# of stop 30 did): mpirun would start nothing on the hosts ("All nodes
# which are allocated for this job are already filled").
OMPI_MCA_plm=isolated FT_EXTRA_T=x$$ timeout 120 "$FT_LAUNCH" --cluster --nodes 2 --ppn 1 --job envj \
  --ec 1+1 --timeout 9 -- sh -c \
  'echo "env $(hostname) $OMPI_COMM_WORLD_RANK $FT_JOB $FT_EC_K+$FT_EC_M $FT_TIMEOUT $FT_EXTRA_T"' \
  >"$WORK/env.out" 2>&1 || { cat "$WORK/env.out"; fail "ft-launch --nodes 2 with sh"; }
got=$(grep '^env ' "$WORK/env.out" | sort -k3n | tr '\n' ';')
want="env h1 0 envj 1+1 9 x$$;env h1 1 envj 1+1 9 x$$;env h2 2 envj 1+1 9 x$$;env h2 3 envj 1+1 9 x$$;"
[ "$got" = "$want" ] || { cat "$WORK/env.out"; fail "ranks saw: $got"; }
ok "--nodes 2 picks h1 h2 (also with OMPI_MCA_plm=isolated); FT_JOB, FT_EC_K/M, FT_TIMEOUT and other FT_* reach every rank"

# A BTL of the user's (--mpirun-arg, or OMPI_MCA_btl) replaces ft-launch's
# tcp,vader,self: mpirun refuses a parameter given twice, and its command
# line would override the variable.
timeout 120 "$FT_LAUNCH" --cluster --nodes 2 --ppn 1 --job btlj \
  --mpirun-arg --mca --mpirun-arg btl --mpirun-arg tcp,self -- "$MPI_NODES" --mb 1 \
  --expect-nodes 2 --expect-ppn 2 >"$WORK/btl.out" 2>&1 ||
  { cat "$WORK/btl.out"; fail "ft-launch --cluster --mpirun-arg --mca btl tcp,self"; }
grep -q '^mpi_nodes: allreduce of 1 MB ok$' "$WORK/btl.out" || { cat "$WORK/btl.out"; fail "btl tcp,self: no allreduce"; }
for how in arg env; do
  if [ $how = arg ]; then
    out=$("$FT_LAUNCH" --cluster --dry-run --mpirun-arg --mca --mpirun-arg btl --mpirun-arg tcp,self -- prog)
  else
    out=$(OMPI_MCA_btl=tcp,self "$FT_LAUNCH" --cluster --dry-run -- prog)
  fi || fail "--dry-run with a btl of the user's ($how)"
  n=$(tr -d '\\' <<<"$out" | grep -o -- '--mca btl [^ ]*' | tr '\n' ';')  # %q quoting off
  want='--mca btl tcp,self;'
  [ $how = arg ] || want=
  [ "$n" = "$want" ] || { echo "$out"; fail "btl of the user's by $how: mpirun gets '$n', wants '$want'"; }
done
ok "a btl of the user's (--mpirun-arg or OMPI_MCA_btl) replaces ft-launch's; the job runs with it"

# ftrt's node is a host (its name and boot id), not what MPI takes for
# one: one mpirun on the head starts 4 ranks that MPI sees on one node,
# and ranks 0-1 enter h1's host name and /dev/shm, ranks 2-3 h2's (TCP
# only: MPI's shared memory would cross them).  Two nodes, each with its
# SMP, trainer and store (before: one node of 4 ranks, whose SMP on h1 the
# trainers on h2 could not reach).  The other way round, Open MPI 4.1 with
# an external PMIx (Ubuntu 24.04's) put ranks of one host on nodes of
# their own, on one host and not another, and ft_init hung (the GPU
# machine, stop 39).
cat >"$WORK/enter" <<EOF
#!/bin/sh
case \$((OMPI_COMM_WORLD_RANK / 2)) in 0) k=$(keeper_of h1) ;; *) k=$(keeper_of h2) ;; esac
exec nsenter -t "\$k" --uts --mount -- "\$@"
EOF
chmod +x "$WORK/enter"
timeout 120 "$X" exec head env FT_JOB=splitj FT_EC_K=1 FT_EC_M=1 mpirun --oversubscribe -np 4 \
  --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
  -x FT_JOB -x FT_EC_K -x FT_EC_M -x PATH "$WORK/enter" \
  ft-train-example --steps 2 --snapshot-every 1 --state-mb 1 >"$WORK/split.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/split.out"; fail "4 ranks of one mpirun on hosts h1 and h2: exit $rc"; }
grep -q ' ranks 2 ' "$WORK/split.out" || { cat "$WORK/split.out"; fail "not 2 trainers"; }
for n in 0 1; do
  h=h$((n + 1))
  "$X" exec "$h" ft-status --job splitj >"$WORK/split-$h.st" 2>&1 ||
    { cat "$WORK/split-$h.st"; fail "ft-status on $h"; }
  grep -q "^job splitj on $h," "$WORK/split-$h.st" && grep -q "^layout epoch 1: node $n of 2, .* 1 trainer(s)$" "$WORK/split-$h.st" &&
    grep -q "^0 *COMMITTED  *2  *2 " "$WORK/split-$h.st" || { cat "$WORK/split-$h.st"; fail "no committed store of node $n on $h"; }
done
ok "4 ranks of one mpirun, 2 on each of h1 and h2: 2 nodes (one a host), a snapshot on each"

[ -z "$(pids_in $(ns_inodes "$(keeper_of h1)") | grep -vx "$(keeper_of h1)")" ] ||
  fail "processes left on h1 after the jobs"
ok "no process of the jobs left on the hosts"
