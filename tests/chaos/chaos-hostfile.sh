#!/usr/bin/env bash
# The hostfile path is the real path (issue 15.3): ft-launch --hostfile F
# --restarts R, run where mpirun runs (the head of an ft-cluster), given
# the rsh agent the way a user gives it to Open MPI (OMPI_MCA_plm_rsh_agent;
# here ft-rsh, on a cluster ssh).  A host is killed at step 8; ft-launch
# takes it as lost since mpirun says it lost its daemon (the probe, the
# same agent, "AGENT HOST true", asks the others), takes the spare the
# hostfile marks, relaunches with the rebuild in the SMPs' ft_init, and
# the job ends with the fault-free digest.  (A real Slurm allocation:
# chaos-slurm.sh.)
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=16 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 4)
unset SLURM_JOB_NODELIST
export OMPI_MCA_plm_rsh_agent=$SRC/scripts/ft-rsh OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
export FT_PROBE_TRIES=2   # a lost host: 2 failed probes, 1 s apart

up chost 4 --spares 1
printf '%s\n' '# the job: h1..h4; s1 stands by' 'h1 slots=2' 'h2' 'h3 slots=2' 'h4' 's1 spare' \
  >"$WORK/hostfile"

begin "fault-free reference on the hostfile's hosts"
head_launch_bg ref --hostfile "$WORK/hostfile" --job "ref$(od -An -N4 -tu4 /dev/urandom | tr -d " ")"
finish
expect_rc ref 0 "fault-free run on the hostfile"
expect_line ref "^ft-launch: on hosts h1 h2 h3 h4 \(hostfile $WORK/hostfile\); spares: up to 1 of s1$" "fault-free run"
REF=$(digest_of ref)
[ -n "$REF" ] || die_with ref "fault-free run printed no digest"
ok "fault-free digest $REF on h1..h4, s1 left as the spare"

begin "hostfile: h2 killed at step 8, named lost by mpirun, s1 takes its place"
export FT_JOB=hf
FT_HOLD=step=8 head_launch_bg hf --hostfile "$WORK/hostfile" --restarts 1 --job "$FT_JOB"
# shellcheck disable=SC2034  # read by chaos (lib.sh): where it strikes
HOLD_WHEN=step=8
chaos hf kill-node h2
finish
expect_rc hf 0 "ft-launch --hostfile --restarts 1"
expect_line hf "^ft-launch: \[\+[0-9.]+s\] job failed; mpirun lost its daemon on host\(s\) of the job \(killed or partitioned\): h2$" "h2 lost"
expect_line hf '^ft-launch: lost host\(s\): h2; replacing them with spare\(s\) s1$' "s1 replaces h2"
expect_line hf '^ft-launch: \[\+[0-9.]+s\] relaunching on 4 node\(s\): h1 s1 h3 h4; its SMPs rebuild first \(ft-restore --mode replace.s engine, in ft_init\)$' "the rebuild inside the relaunch"
expect_line hf '^ft-restore: lost node 1 \(h2, group 0 position [0-3]\) -> s1$' "ft-restore rebuilds h2 on s1"
expect_line hf '^ft-launch: on hosts h1 s1 h3 h4 \(hostfile ' "relaunch with s1 in h2's place"
expect_resumed hf 8 8 "h2 lost"
expect_digest hf "h2 lost"
expect_line hf '^ft-launch: \[\+[0-9.]+s\] done: success after 1 restart\(s\): h2 -> s1$' "the last line"
ok "h2 lost: mpirun named it, s1 from the hostfile rebuilt, resumed from step $RESUMED, digest matches"
