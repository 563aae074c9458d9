#!/usr/bin/env bash
# MPI across the hosts of an ft-cluster: plain mpirun through the rsh agent,
# then ft-launch --cluster.  mpi_nodes must find one node per host (by
# host name, as ftrt does), each node must hold consecutive ranks (P trainers
# + 1 SMP), an allreduce of several MB over TCP must be right, and FT_*
# variables must reach ranks on every host.  ftrt's own node split and a
# BTL of the user's follow.
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
# of an earlier version did): mpirun would start nothing on the hosts ("All nodes
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
for how in none arg env; do
  if [ $how = none ]; then
    out=$(env -u OMPI_MCA_btl "$FT_LAUNCH" --cluster --dry-run -- prog)
  elif [ $how = arg ]; then
    out=$(env -u OMPI_MCA_btl "$FT_LAUNCH" --cluster --dry-run --mpirun-arg --mca --mpirun-arg btl --mpirun-arg tcp,self -- prog)
  else
    out=$(OMPI_MCA_btl=tcp,self "$FT_LAUNCH" --cluster --dry-run -- prog)
    grep -qx '# environment: OMPI_MCA_btl=tcp,self (the BTLs, instead of tcp,vader,self)' <<<"$out" ||
      { echo "$out"; fail "--dry-run does not show OMPI_MCA_btl"; }
  fi || fail "--dry-run with a btl of the user's ($how)"
  n=$(tr -d '\\' <<<"$out" | grep -o -- '--mca btl [^ ]*' | tr '\n' ';')  # %q quoting off
  case $how in none) want='--mca btl tcp,vader,self;' ;; arg) want='--mca btl tcp,self;' ;; env) want= ;; esac
  [ "$n" = "$want" ] || { echo "$out"; fail "btl of the user's by $how: mpirun gets '$n', wants '$want'"; }
done
# warned: a list without tcp (tcpx is another), one that excludes it; not
# warned (-): one with tcp, one that excludes another
for btl in self,vader ^tcp,openib ^^tcp tcpx,self -tcp,self -^openib -tcp; do
  warn=1
  case $btl in -*) btl=${btl#-}; warn=0 ;; esac
  for how in arg env; do
    if [ $how = arg ]; then
      OMPI_MCA_btl=self "$FT_LAUNCH" --cluster --dry-run --mpirun-arg --mca --mpirun-arg btl --mpirun-arg "$btl" -- prog
      src=--mpirun-arg
    else
      OMPI_MCA_btl=$btl "$FT_LAUNCH" --cluster --dry-run -- prog
      src=OMPI_MCA_btl
    fi >/dev/null 2>"$WORK/btl.err" || fail "--dry-run with btl $btl ($how)"
    if [ $warn = 1 ]; then
      grep -qF "ft-launch: warning: the BTLs '$btl' of $src leave out tcp" "$WORK/btl.err" ||
        { cat "$WORK/btl.err"; fail "no warning for btl $btl ($how)"; }
    else
      ! grep -q warning "$WORK/btl.err" || { cat "$WORK/btl.err"; fail "a warning for btl $btl ($how)"; }
    fi
  done
done
ok "a btl of the user's (--mpirun-arg or OMPI_MCA_btl) replaces ft-launch's, the job runs with it; one without tcp is warned of"

# ftrt's node is a host (its name, boot id and the file system of its
# store), not what MPI takes for one: one mpirun on the head starts 4
# ranks that MPI sees on one node; ranks 0-1 enter h1's host name and
# /dev/shm, ranks 2-3 as FT_T_SECOND says (TCP only: MPI's shared memory
# would cross them).  The other way round, Open MPI 4.1 with an external
# PMIx (Ubuntu 24.04's) put ranks of one host on nodes of their own, on
# one host and not another, and ft_init hung (seen on the GPU machine).
k1=$(keeper_of h1) k2=$(keeper_of h2)
cat >"$WORK/enter" <<EOF
#!/bin/sh
[ \$((OMPI_COMM_WORLD_RANK / 2)) = 0 ] && exec nsenter -t $k1 --uts --mount -- "\$@"
case \$FT_T_SECOND in
  h2) exec nsenter -t $k2 --uts --mount -- "\$@" ;;  # h2 itself
  name-h1) exec nsenter --uts=/proc/$k1/ns/uts --mount=/proc/$k2/ns/mnt -- "\$@" ;;  # h1's name, h2's /dev/shm
  bind) exec nsenter -t $k1 --uts --mount -- unshare --mount --propagation private \
    sh -c 'mount --bind /dev/shm/other /dev/shm/ftrt && exec "\$@"' sh "\$@" ;;  # h1, another dir of its /dev/shm
esac
exit 99
EOF
chmod +x "$WORK/enter"
# split_run JOB SECOND NP [VAR=VALUE...]: ft-train-example under that mpirun
split_run() {
  local job=$1 second=$2 np=$3
  shift 3
  timeout 120 "$X" exec head env FT_JOB="$job" FT_T_SECOND="$second" FT_EC_K=1 FT_EC_M=1 "$@" \
    mpirun --oversubscribe -np "$np" --mca btl tcp,self --mca btl_tcp_if_include eth0 \
    --mca oob_tcp_if_include eth0 -x FT_JOB -x FT_T_SECOND -x FT_EC_K -x FT_EC_M -x FT_FRESH -x PATH \
    "$WORK/enter" ft-train-example --steps 2 --snapshot-every 1 --state-mb 1 >"$WORK/$job.out" 2>&1
}
# split_check JOB HOST N: HOST's store holds node N of 2, version 2 committed
split_check() {
  "$X" exec "$2" ft-status --job "$1" >"$WORK/$1-$2.st" 2>&1 || { cat "$WORK/$1-$2.st"; fail "ft-status on $2"; }
  grep -q "^layout epoch 1: node $3 of 2, .* 1 trainer(s)$" "$WORK/$1-$2.st" &&
    grep -q "^0 *COMMITTED  *2  *2 " "$WORK/$1-$2.st" || { cat "$WORK/$1-$2.st"; fail "$1: no committed store of node $3 on $2"; }
}
split_run splitj h2 4
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/splitj.out"; fail "4 ranks of one mpirun on hosts h1 and h2: exit $rc"; }
grep -q ' ranks 2 ' "$WORK/splitj.out" || { cat "$WORK/splitj.out"; fail "not 2 trainers"; }
split_check splitj h1 0
split_check splitj h2 1
ok "4 ranks of one mpirun, 2 on each of h1 and h2: 2 nodes, a snapshot on each (before: one node, refused)"

# Ranks 2-3 with h1's name but h2's /dev/shm (a container with the host's
# name and a /dev/shm of its own): they cannot share h1's store, so they
# are a node of their own (before: one node with h1's, whose store they
# could not open).
split_run splitn name-h1 4
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/splitn.out"; fail "ranks named h1 on two /dev/shm: exit $rc"; }
split_check splitn h1 0
split_check splitn h2 1
ok "the same host name on two /dev/shm: 2 nodes, a snapshot in each"

# Ranks 2-3 on h1's /dev/shm, but with another directory of it at the store
# root, holding the store of an earlier launch of the job: one node (the
# same file system), and its trainers there find a control segment that is
# not their SMP's.  Refused, naming it (before: they attached to the stale
# segment).
split_run splitb h2 2 FT_EC_M=0 || { cat "$WORK/splitb.out"; fail "splitb on h1 alone"; }
"$X" exec h1 sh -c 'mkdir -p /dev/shm/other && cp -a /dev/shm/ftrt/splitb /dev/shm/other/' || fail "copy the store"
split_run splitb bind 4 FT_EC_M=0 FT_FRESH=1
rc=$?
[ $rc -ne 0 ] && grep -q "the control segment in /dev/shm/ftrt/splitb is another launch's, not this node's SMP's" "$WORK/splitb.out" ||
  { cat "$WORK/splitb.out"; fail "trainers seeing another launch's store: exit $rc, no refusal"; }
ok "trainers that see another launch's control segment where their SMP's should be: refused (exit $rc), naming it"

for h in h1 h2; do
  # shellcheck disable=SC2046  # the inodes are words
  [ -z "$(pids_in $(ns_inodes "$(keeper_of $h)") | grep -vx "$(keeper_of $h)")" ] ||
    fail "processes left on $h after the jobs"
done
ok "no process of the jobs left on the hosts"
