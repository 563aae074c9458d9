#!/usr/bin/env bash
# ftrt in a real Slurm allocation: Debian's slurmctld, slurmd and munged run
# on the simulated cluster (ft-cluster up --slurm), the job is allocated
# with salloc on the head, as on a login node, and ft-launch takes its
# nodes from the allocation and starts mpirun, whose daemons Open MPI
# starts as a job step (srun).  Slurm itself sees each fault: a killed
# host's slurmd stops answering and Slurm marks the node DOWN.
#   1. salloc -N5 --no-kill, --nodes 4 --spares 1: h3 killed at step 8, the
#      allocation's fifth node rebuilds it, the fault-free digest.
#   2. salloc -N4 --no-kill, no spare: h4 killed at step 8, the job shrinks
#      to h1..h3 and ends with the digest of a fault-free shrink there.
#   2b. salloc -N6 --no-kill, two spares: h3 killed at step 8, then s1, the
#      spare rebuilding it, killed in the middle of the rebuild: s2 takes
#      the node, the fault-free digest.
#   2c. As 2b with one spare: the job shrinks to h1 h2 h4 and ends with the
#      digest of a fault-free shrink there.
#   3. slurmd of h2 killed at step 8 (the host lives), the job held until
#      Slurm marks the node DOWN; Slurm then kills the job's step on every
#      node, so mpirun's lost daemon is on any host: Slurm's view names h2,
#      the spare replaces it, the fault-free digest.
#   4. sbatch --wait of tests/chaos/slurm-job.sh (the batch script the docs
#      show; it runs on h1, the allocation's first node): h3 killed at step
#      8, the spare rebuilds it, the fault-free digest.
#   5. sbatch --requeue of tests/chaos/slurm-requeue.sh (4 nodes, no spare,
#      no restart, --persist): h3 killed at step 8 ends ft-launch
#      unrecoverable (125); it requeues the job; the requeued run gets
#      h1 h2 h4 s1, puts s1 in h3's place (the stores' order), ft-restore
#      rebuilds it from memory: the fault-free digest.
#   6. As 5, with h2 and h3 lost at step 8 (more than m=1): the requeued run
#      on h1 s1 s2 h4 resumes from the disk tier: the fault-free digest.
#   A user's end (a signal) and the program's own failure never requeue
#   (tests/unit/test_requeue).
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
for p in slurmctld slurmd munged; do
  [ -x /usr/sbin/$p ] || skip "/usr/sbin/$p missing: Slurm is not installed (scripts/install-deps)"
done
command -v salloc >/dev/null || skip "salloc missing: slurm-client is not installed (scripts/install-deps)"
STEPS=16 EVERY=2   # as in slurm-job.sh
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 4)
# What the user's environment gives mpirun on this cluster's hosts.
export OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0

# slurm_up N S: a cluster of N hosts and S spares running Slurm; every
# node idle (ft-cluster up waits for that).
slurm_up() { up cslurm "$1" --spares "$2" --slurm; }

# salloc_bg LOG "SALLOC ARGS" ARGS...: on the head, salloc SALLOC ARGS
# ft-launch ARGS -- ft-train-example ..., in the background (head_launch_bg).
salloc_bg() {
  local log=$1; shift
  read -ra LAUNCH_WITH <<<"salloc $1"; shift
  head_launch_bg "$log" "$@"
  LAUNCH_WITH=()
}

begin "fault-free reference: salloc -N5 --no-kill, ft-launch --nodes 4 --spares 1"
slurm_up 4 1
salloc_bg ref "-N5 --no-kill" --nodes 4 --spares 1 --job "ref$$"
finish
expect_rc ref 0 "fault-free run in the allocation"
expect_line ref '^salloc: Granted job allocation [0-9]+$' "salloc"
expect_line ref '^ft-launch: on hosts h1 h2 h3 h4 \(Slurm allocation h\[1-4\],s1\); spares: up to 1 of s1$' "the allocation's nodes"
REF=$(digest_of ref)
[ -n "$REF" ] || die_with ref "fault-free run printed no digest"
ok "fault-free digest $REF on h1..h4 of a Slurm allocation, s1 its spare"
FREF=$REF

begin "h3 killed at step 8: Slurm marks it DOWN, the allocation's spare s1 takes its place"
export FT_JOB=sl1
HOLD_WHEN=step=8
FT_HOLD=$HOLD_WHEN salloc_bg sl1 "-N5 --no-kill" --nodes 4 --spares 1 --restarts 1 --job "$FT_JOB"
chaos sl1 kill-node h3
finish
expect_rc sl1 0 "ft-launch --restarts 1 in the allocation"
expect_line sl1 '^ft-launch: lost host\(s\): h3; replacing them with spare\(s\) s1$' "s1 replaces h3"
expect_line sl1 '^ft-restore: lost node 2 \(h3, group 0 position [0-3]\) -> s1$' "the rebuild of h3 on s1"
expect_line sl1 '^ft-launch: on hosts h1 h2 s1 h4 \(Slurm allocation h\[1-4\],s1\)$' "the relaunch in the node order of the snapshot"
expect_resumed sl1 8 8 "h3 lost"
expect_digest sl1 "h3 lost"
ok "h3 lost in the allocation: s1 rebuilt it, resumed from step $RESUMED, digest matches"

begin "no spare in the allocation: h4 killed at step 8, the job shrinks to h1..h3"
slurm_up 4 0
shrunk_reference shref "h1 h2 h3"
export FT_JOB=sl2
HOLD_WHEN=step=8
FT_HOLD=$HOLD_WHEN salloc_bg sl2 "-N4 --no-kill" --restarts 1 --job "$FT_JOB"
chaos sl2 kill-node h4
finish
expect_rc sl2 0 "ft-launch --restarts 1, no spare"
expect_line sl2 '^ft-launch: lost host\(s\): h4; no spare left: shrinking to 3 nodes$' "the shrink"
expect_resumed sl2 8 8 "h4 lost"
expect_digest sl2 "h4 lost, shrunk to h1..h3"
ok "h4 lost, no spare: shrunk to h1..h3 in the allocation, resumed from step $RESUMED, digest of the fault-free shrink"

# spare_killed LOG SALLOC SPARES: salloc SALLOC, --nodes 4 --spares SPARES
# --restarts 2: h3 killed at step 8, then s1, the spare rebuilding it,
# killed while its rebuild holds (one FT_HOLD, two points); s1 replaced h3
# first.  The caller checks what came after.
spare_killed() {
  local log=$1
  FT_HOLD="step=8;phase=restore" salloc_bg "$log" "$2" --nodes 4 --spares "$3" --restarts 2 --job "$FT_JOB"
  HOLD_WHEN=step=8
  chaos "$log.first" kill-node h3
  HOLD_WHEN=phase=restore
  chaos "$log" kill-node s1
  finish
  expect_rc "$log" 0 "ft-launch --restarts 2 --spares $3, s1 lost during the rebuild"
  expect_line "$log.chaos" "ft-restore held on s1" "s1 killed mid-rebuild"
  expect_line "$log" '^ft-launch: lost host\(s\): h3; replacing them with spare\(s\) s1$' "s1 replaces h3"
}

begin "h3 killed at step 8, then the spare s1 killed during its rebuild: the allocation's second spare s2 takes the node"
slurm_up 4 2
REF=$FREF
export FT_JOB=sl3
spare_killed sl3 "-N6 --no-kill" 2
expect_line sl3 'replacing them with spare\(s\) s2$' "then s2 takes the node"
expect_line sl3 '^ft-launch: on hosts h1 h2 s2 h4 \(Slurm allocation h\[1-4\],s\[1-2\]\)$' "the relaunch on h1 h2 s2 h4"
expect_resumed sl3 8 8 "s1 lost during the rebuild"
expect_digest sl3 "s1 lost during the rebuild"
ok "s1 killed during its rebuild: s2 took the node, resumed from step $RESUMED, digest matches"

begin "the allocation's only spare taken, then lost during its rebuild: the job shrinks to h1 h2 h4"
slurm_up 4 1
shrunk_reference shref3 "h1 h2 h4"
export FT_JOB=sl3b
spare_killed sl3b "-N5 --no-kill" 1
expect_line sl3b 'no spare left: shrinking to 3 nodes' "then the shrink"
expect_resumed sl3b 8 8 "the spare lost during the rebuild"
expect_digest sl3b "the spare lost during the rebuild, shrunk"
ok "the only spare lost during its rebuild: shrunk to h1 h2 h4, resumed from step $RESUMED, digest of the fault-free shrink"

# node_state HOST: Slurm's state of node HOST (idle, alloc, down*, ...).
node_state() { ft-cluster exec --name "$CL" head sinfo -h -n "$1" -o %t 2>/dev/null; }
# release_all: let the held job go on every live host of the cluster.
release_all() {
  local h
  for h in $(ft-cluster hosts --all --name "$CL" | awk '{ print $1 }'); do
    ft-cluster exec --name "$CL" "$h" ft-hold --job "$FT_JOB" release >/dev/null 2>&1
  done
}

begin "slurmd of h2 killed at step 8: the host lives, Slurm marks the node DOWN, then the job goes on"
slurm_up 4 1
REF=$FREF
export FT_JOB=sl4
HOLD_WHEN=step=8
FT_HOLD=$HOLD_WHEN salloc_bg sl4 "-N5 --no-kill" --nodes 4 --spares 1 --restarts 1 --job "$FT_JOB"
chaos sl4 kill-slurmd h2 --keep-held
# Held at step 8 until Slurm has given h2 up (600 s only bounds a hang).
for i in $(seq 3000); do
  case $(node_state h2) in down*) break ;; esac
  sleep 0.2
done
case $(node_state h2) in down*) ;; *) die_with sl4 "Slurm never marked h2 down: $(node_state h2)" ;; esac
release_all
finish
expect_rc sl4 0 "ft-launch --restarts 1, slurmd of h2 gone"
# Slurm ended the step on every node: mpirun's lost daemon names no host,
# Slurm's view names h2, and only h2 is replaced.
expect_line sl4 '^ft-launch: \[\+[0-9.]+s\] job failed; Slurm reports host\(s\) of the job down or not responding: h2$' "Slurm's view names h2"
expect_line sl4 '^ft-launch: lost host\(s\): h2; replacing them with spare\(s\) s1$' "s1 replaces h2"
expect_no_line sl4 'shrinking|putting them back' "no shrink, nothing put back"
expect_line sl4 '^ft-launch: on hosts h1 s1 h3 h4 \(Slurm allocation h\[1-4\],s1\)$' "the relaunch on h1 s1 h3 h4"
expect_resumed sl4 8 8 "slurmd of h2 gone"
expect_digest sl4 "slurmd of h2 gone"
ok "slurmd of h2 killed: Slurm marked h2 down, s1 replaced it, resumed from step $RESUMED, digest matches"

begin "sbatch --wait slurm-job.sh: h3 killed at step 8, the spare takes its place"
slurm_up 4 1
export FT_JOB=sl5
HOLD_WHEN=step=8
: >"$WORK/sl5"
FT_HOLD=$HOLD_WHEN timeout -s TERM "$LIMIT" ft-cluster exec --name "$CL" head \
  sbatch --wait --output="$WORK/sl5" "$SRC/tests/chaos/slurm-job.sh" >"$WORK/sl5.sbatch" 2>&1 &
LPID=$! LLOG=sl5
BG_PIDS+=("$LPID")
chaos sl5 kill-node h3
finish
cat "$WORK/sl5.sbatch" >>"$WORK/sl5"
expect_rc sl5 0 "sbatch --wait of slurm-job.sh"
expect_line sl5 '^Submitted batch job [0-9]+$' "sbatch"
expect_line sl5 '^ft-launch: on hosts h1 h2 h3 h4 \(Slurm allocation h\[1-4\],s1\); spares: up to 1 of s1$' "the allocation's nodes"
expect_line sl5 '^ft-launch: lost host\(s\): h3; replacing them with spare\(s\) s1$' "s1 replaces h3"
expect_resumed sl5 8 8 "h3 lost"
expect_digest sl5 "h3 lost, batch job"
ok "sbatch: h3 lost, s1 rebuilt it, resumed from step $RESUMED, digest matches"

# requeue_bg LOG: sbatch --wait --requeue of slurm-requeue.sh on the head, in
# the background, every run's output appended to LOG; the persist directory
# a fresh one every host sees.
requeue_bg() {
  local log=$1
  PERSIST=$WORK/$log.persist
  mkdir -m 700 "$PERSIST" || fail "mkdir $PERSIST"
  : >"$WORK/$log"
  FT_HOLD=$HOLD_WHEN FT_PERSIST_DIR=$PERSIST FT_PERSIST_EVERY=1 \
    timeout -s TERM "$LIMIT" ft-cluster exec --name "$CL" head \
    sbatch --wait --open-mode=append --output="$WORK/$log" \
    "$SRC/tests/chaos/slurm-requeue.sh" >"$WORK/$log.sbatch" 2>&1 &
  LPID=$! LLOG=$log
  BG_PIDS+=("$LPID")
  hurry_requeued &
  HURRY=$!
  BG_PIDS+=("$HURRY")
}

# hurry_requeued: Slurm holds a requeued job until a begin time two minutes
# on (Reason=BeginTime); as an administrator may, let it start at once
# (scontrol update StartTime=now), the first time one is seen.  It waits
# for that state, not for a time; LIMIT bounds it.
hurry_requeued() {
  local i id
  for i in $(seq $((LIMIT * 5))); do
    id=$(ft-cluster exec --name "$CL" head squeue -h -t PD -o '%i %r' 2>/dev/null |
      awk '$2 == "BeginTime" { print $1; exit }')
    if [ -n "$id" ]; then
      ft-cluster exec --name "$CL" head scontrol update JobId="$id" StartTime=now
      return
    fi
    sleep 0.2
  done
}

# requeue_end LOG: the job's end; the requeue hurried, its output in LOG.
requeue_end() {
  finish
  kill "$HURRY" 2>/dev/null; wait "$HURRY" 2>/dev/null
  cat "$WORK/$1.sbatch" >>"$WORK/$1"
}

begin "sbatch --requeue: h3 killed at step 8, no spare, no restart: Slurm requeues the job, its new node takes h3's place"
slurm_up 4 1
export FT_JOB=sl6
HOLD_WHEN=step=8
requeue_bg sl6
chaos sl6 kill-node h3
requeue_end sl6
expect_rc sl6 0 "sbatch --wait --requeue of slurm-requeue.sh"
expect_line sl6 '^run 0 of Slurm job [0-9]+ on h\[1-4\]$' "the first run on h1..h4"
expect_line sl6 '^ft-launch: exit 125: unrecoverable in this allocation: Slurm job [0-9]+ requeued \(it is requeueable: Requeue=1\)' "ft-launch requeues the job"
expect_line sl6 '^run 1 of Slurm job [0-9]+ on h\[1-2,4\],s1$' "the requeued run on h1 h2 h4 s1"
expect_line sl6 "^ft-launch: run 1 of Slurm job [0-9]+ \\(requeued\\): the job's stores put its nodes in order: h1 h2 s1 h4; " "the stores' order"
expect_line sl6 '^ft-restore: lost node 2 \(h3, group 0 position [0-3]\) -> s1$' "the rebuild of h3 on s1, from memory"
expect_no_line sl6 'disk tier takes over' "no disk tier"
expect_resumed sl6 8 8 "requeued after h3 lost"
expect_digest sl6 "requeued after h3 lost"
ok "requeued: s1 rebuilt h3 from memory in the new allocation, resumed from step $RESUMED, digest matches"

begin "sbatch --requeue: h2 and h3 lost at step 8 (m=1): the requeued run resumes from the disk tier"
slurm_up 4 2
export FT_JOB=sl7
HOLD_WHEN=step=8
requeue_bg sl7
kill_two h2 h3 sl7
requeue_end sl7
expect_rc sl7 0 "sbatch --wait --requeue, two hosts lost"
expect_line sl7 '^ft-launch: exit 125: unrecoverable in this allocation: Slurm job [0-9]+ requeued' "ft-launch requeues the job"
expect_line sl7 "^ft-launch: run 1 of Slurm job [0-9]+ \\(requeued\\): the job's stores put its nodes in order: h1 s1 s2 h4; " "the stores' order"
expect_line sl7 '^ft-restore: .*cannot be rebuilt; nothing was changed; the disk tier takes over' "ft-restore hands over to the disk tier"
expect_line sl7 'restoring from the disk tier' "the relaunch reads the disk tier"
expect_resumed sl7 2 8 "requeued after h2, h3 lost"
expect_digest sl7 "requeued after h2, h3 lost"
ok "requeued after two losses: resumed from step $RESUMED of the disk tier on h1 s1 s2 h4, digest matches"
