#!/usr/bin/env bash
# A fault during recovery itself (issue 15.2): 4 hosts (3+1) + 2 spares.
# Under ft-launch --restarts 2 --spares 2, h2 is lost at step 8; ft-launch
# finds h2 lost and relaunches onto spare s1, whose SMPs rebuild h2's node
# in ft_init (FT_REBUILD, ft-restore's engine); as the rebuild holds in the
# middle (FT_HOLD="step=8;phase=restore"), s1 is partitioned.  The other
# ranks would wait for s1 forever: ft-launch's watchdog ends the relaunch
# once s1 has been unreachable for --timeout; the rebuild did not end, so
# ft-launch runs ft-restore on its own, which finds s1 lost, rebuilds h2's
# node onto s2, and the job resumes from step 8 with the fault-free digest.
# The same with s1 killed, under --restore-job (ft-restore as a job of its
# own from the start, cut short the same way), and with the partition
# under ft-launch --hostfile on the cluster's head.  And a spare without
# room for the node: the rebuild is refused (FT_ENOSPC), and what it leaves
# lets ft-restore rebuild the node once there is room; with a second
# spare, the one without room is given up and the other takes the node.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=12 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up crecover 4 --spares 2
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS" --nodes 4
ok "fault-free digest $REF"

# spare_lost LOG ACTION WHAT: under --cluster --restarts 2 --spares 2, h2
# killed at step 8, then ACTION (an ft-chaos action) on the spare s1 while
# its ft-restore holds in the middle of the rebuild.  One FT_HOLD, two
# points: the job holds at step 8, the first ft-restore mid-rebuild.  s2
# takes the node; the job resumes from step 8 with the fault-free digest.
spare_lost() {
  local log=$1 action=$2 what=$3
  shift 3
  FT_HOLD="step=8;phase=restore" launch_bg "$log" "$STEPS" --job "$FT_JOB" --nodes 4 --restarts 2 --spares 2 --timeout 10 "$@"
  HOLD_WHEN=step=8
  chaos "$log.first" kill-node h2
  HOLD_WHEN=phase=restore
  chaos "$log" "$action" s1
  finish
  expect_line "$log.chaos" "ft-restore held on s1" "$what"
  expect_line "$log" 'replacing them with spare\(s\) s2' "$what: s2 takes the node"
  expect_rc "$log" 0 "$what, ft-launch --restarts 2 --spares 2"
  expect_line "$log" '^ft-restore: restored version 4 \(step 8\): 1 lost node\(s\)' "$what: the version of step 8 rebuilt onto s2"
  expect_resumed "$log" 8 8 "$what"
  expect_digest "$log" "$what"
}

begin "h2 lost at step 8; the spare being rebuilt partitioned during the rebuild in the relaunch"
export FT_JOB=partition-restore
spare_lost again partition "s1 partitioned during the rebuild"
expect_line again '^ft-launch: host s1 unreachable for [0-9]+ s \(timeout 10 s\): ending the job$' "the watchdog ended the hung relaunch"
expect_line again '^ft-launch: restart 1 of 2: the relaunch ended \(status 124\) before its rebuild was done: running ft-restore on its own$' "ft-restore decides next"
expect_line again '^ft-launch: \[.*\] done: success after 1 restart\(s\): h2 -> s1; s1 -> s2$' "one restart"
ok "s1 partitioned during the rebuild: ended by the watchdog, ft-restore rebuilt onto s2, resumed from step 8, digest matches"

begin "h2 lost at step 8; the spare being rebuilt killed during ft-restore (--restore-job)"
up crecover 4 --spares 2
export FT_JOB=kill-restore
spare_lost killed kill-node "s1 killed during ft-restore" --restore-job
expect_line killed '^ft-launch: \[.*\] running ft-restore --mode replace on 4 node\(s\): h1 s1 h3 h4$' "ft-restore as a job of its own"
expect_no_line killed 'its SMPs rebuild first' "no rebuild in the relaunch"
expect_line killed "^ft-launch: recovery 1: training resumed [0-9.]+ s after the failed job's end: .*, ft-restore [0-9.]+ s \\(start-up .*, try 2\\), relaunch [0-9.]+ s, ft_init [0-9.]+ s, until restored [0-9.]+ s$" "the account of ft-restore's second try"
ok "s1 killed during its ft-restore (--restore-job): rebuilt onto s2, resumed from step 8, digest matches"

# ft-chaos --when phase=restore holds the job whichever host it targets:
# the rebuild in the relaunch holds on s1, the node it rebuilds, and the
# fault goes to h4, a survivor (before: ft-chaos waited for a hold on h4,
# gave up after its timeout and left the job held on s1).  With 2+2, h2
# and h4 lost are within m: ft-restore, run on its own once the watchdog
# ends the hung relaunch, rebuilds both (h4's node onto s2).
begin "h2 lost at step 8; survivor h4 partitioned while the relaunch's rebuild holds on s1 (2+2)"
up crecover 4 --spares 2
export FT_JOB=other-host
FT_HOLD="step=8;phase=restore" launch_bg other "$STEPS" --job "$FT_JOB" --nodes 4 --ec 2+2 --restarts 2 --timeout 10
HOLD_WHEN=step=8
chaos other.first kill-node h2
HOLD_WHEN=phase=restore
chaos other partition h4
finish
expect_line other.chaos 'ft-restore held on s1$' "the rebuild holds on s1, not on the target"
expect_line other.chaos ' partition h4 ' "h4 partitioned during the rebuild"
expect_rc other 0 "h4 partitioned during s1's rebuild, ft-launch --ec 2+2 --restarts 2"
expect_line other 'replacing them with spare\(s\) s2' "h4 lost: s2 takes its node"
expect_resumed other 8 8 "h2 and h4 lost, 2+2"
expect_digest other "h2 and h4 lost, 2+2"
ok "ft-chaos --when phase=restore against a host that does not decode: held on s1, h4 partitioned, resumed from step 8, digest matches"

# An ft-chaos that gives up lets every hold of the job go, an FT_HOLD of
# the launch's too: the job held at step 8 waits for a rebuild that never
# comes (no fault yet), ft-chaos gives up after --timeout, and the job runs
# on to its end, untouched.
begin "ft-chaos gives up: the job it waited on is let go"
up crecover 4 --spares 2
export FT_JOB=give-up
FT_HOLD=step=8 launch_bg gaveup "$STEPS" --job "$FT_JOB" --nodes 4
# Held at step 8 on every host first, with ft-chaos's own wait: a fault
# that changes nothing (heal of a host that is not cut off), --keep-held.
HOLD_WHEN=step=8
chaos gaveup.held heal h4 --keep-held
ft-chaos kill-node h2 --job "$FT_JOB" --when phase=restore --timeout 2 >"$WORK/gaveup.chaos" 2>&1; rc=$?
[ $rc -eq 4 ] || { cat "$WORK/gaveup.chaos"; fail "ft-chaos without a rebuild to hold: exit $rc, expected 4"; }
expect_line gaveup.chaos " no rebuild of job $FT_JOB held on any host in 2 s" "ft-chaos says why it gave up"
expect_line gaveup.chaos " gave up: every hold of job $FT_JOB let go on " "ft-chaos lets the job go"
finish
expect_rc gaveup 0 "the job ft-chaos gave up on"
expect_digest gaveup "the job ft-chaos gave up on"
ok "ft-chaos gave up (exit 4): the job held at step 8 let go, ran to its end, digest matches"

# fill_s1: s1's /dev/shm filled, 64 KiB left
fill_s1() {
  ft-cluster exec --name "$CL" s1 sh -c \
    'fallocate -l $(($(df -k --output=avail /dev/shm | tail -1) - 64))k /dev/shm/fill' ||
    fail "cannot fill s1's /dev/shm"
}

begin "h2 lost at step 8; the spare's /dev/shm full: the rebuild refused, nothing lost"
up crecover 4 --spares 2
export FT_JOB=spare-full
# s1 left 64 KiB: no room for h2's slot (2 MiB).  Its rebuild, in the
# relaunch's ft_init and then in ft-restore on its own, fails with
# FT_ENOSPC naming s1's slot (before: a SIGBUS in s1's rebuild), and
# ft-launch gives up at once (exit 5: not another try on the same full
# store); with room made on s1, ft-restore (by hand, as a user
# would) rebuilds h2's node from the stores the refusals left, and the job
# resumes from step 8 with the fault-free digest.
fill_s1
launch_held full "$STEPS" step=8 --job "$FT_JOB" --nodes 4 --restarts 1 --spares 1 --timeout 10
chaos full kill-node h2
finish
expect_rc full 5 "the spare without room, ft-launch --restarts 1 --spares 1"
expect_line full '^ftrt\[h[0-9] r[0-9]+ smp\] error: ft_init: the rebuild of the recovery \(FT_REBUILD=replace\): s1: cannot prepare a store for node 1: /dev/shm/ftrt/spare-full/slot[01]: cannot reserve the slot.s [0-9]+ bytes: No space left on device' "the rebuild in the relaunch refused, naming s1's slot"
expect_line full '^ft-restore: s1: cannot prepare a store for node 1: .*No space left on device.*\(FT_ENOSPC\)$' "ft-restore refused, naming s1"
expect_line full '^ft-launch: ft-restore: a store of the job has no room \(exit 5\): not restarting' "ft-launch gives up"
expect_no_line full 'Bus error|signal 7' "the spare without room"
# Room on s1 for h2's slot but not for the second slot the relaunch lays
# out (version 4 goes into slot0, the next snapshot into slot1): the
# rebuild reserves both, so ft-restore refuses with exit 5 naming slot1
# (before: it rebuilt the node, exit 0, and every relaunch then failed at
# its layout, until ft-launch's restarts were spent).
S=$(sed -n 's/.*slot[01]: cannot reserve the slot.s \([0-9]*\) bytes.*/\1/p' "$WORK/full" | head -1)
[ -n "$S" ] || die_with full "no slot size in the refusal"
ft-cluster exec --name "$CL" s1 sh -c "rm /dev/shm/fill &&
  fallocate -l \$((\$(df -k --output=avail /dev/shm | tail -1) - $S * 3 / 2048))k /dev/shm/fill" ||
  fail "cannot leave s1 room for one slot and a half"
restore "h1 s1 h3 h4" full.one
expect_rc full.one 5 "ft-restore, s1 with room for one slot of two"
expect_line full.one "^ft-restore: s1: cannot prepare a store for node 1: /dev/shm/ftrt/$FT_JOB/slot1: cannot reserve the slot.s $S bytes: No space left on device.*\\(FT_ENOSPC\\)$" "ft-restore refused, naming s1's second slot"
ft-cluster exec --name "$CL" s1 rm /dev/shm/fill || fail "cannot free s1's /dev/shm"
restore "h1 s1 h3 h4" full.restore
expect_rc full.restore 0 "ft-restore after room was made on s1"
expect_line full.restore '^ft-restore: restored version [0-9]+ \(step 8\): 1 lost node\(s\)' "ft-restore after room was made on s1"
FT_JOB=$FT_JOB on "h1 s1 h3 h4" 2 full.resume ft-train-example --steps "$STEPS" "${TRAIN_ARGS[@]}"
expect_rc full.resume 0 "the relaunch after ft-restore"
expect_resumed full.resume 8 8 "the relaunch after ft-restore"
expect_digest full.resume "the relaunch after ft-restore"
ok "s1 without room: refused with FT_ENOSPC naming its slot, no SIGBUS; with room, ft-restore rebuilt h2 onto s1, resumed from step 8, digest matches"

begin "the same on the hostfile path: the rebuild's heartbeats and the probing watchdog"
# ft-launch --hostfile, run on the cluster's head, knows nothing of the
# cluster: the relaunch bounds itself (FT_TIMEOUT of silence from a rank:
# ft_init's heartbeats end every other rank), ft-launch's watchdog probes
# the hostfile's hosts, and ft-restore, run next on its own, finds s1 lost.
up crecover 4 --spares 2
export OMPI_MCA_plm_rsh_agent=$SRC/scripts/ft-rsh OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
export FT_PROBE_TRIES=2
printf '%s\n' h1 h2 h3 h4 's1 spare' 's2 spare' >"$WORK/hostfile"
export FT_JOB=hf-partition-restore
FT_TIMEOUT=10 FT_HOLD="step=8;phase=restore" head_launch_bg hf --hostfile "$WORK/hostfile" --job "$FT_JOB" --restarts 2 --timeout 10
HOLD_WHEN=step=8
chaos hf.first kill-node h2
HOLD_WHEN=phase=restore
chaos hf partition s1
finish
expect_line hf.chaos "ft-restore held on s1" "partition during the rebuild"
expect_line hf '^ftrt\[h[0-9] r[0-9]+ smp\] error: ft_init: no sign of life from rank [0-9]+ \(s1\) for [0-9]+ s \(FT_TIMEOUT 10 s\)' "the rebuild ended itself, naming s1"
# The relaunch's ranks stop themselves, but mpirun still waits for the
# orted of the partitioned s1: ft-launch's watchdog, probing the hosts of
# the hostfile, ends it.
expect_line hf '^ft-launch: host s1 cannot run a command for [0-9]+ s \(.*timeout 10 s\): ending the job$' "the watchdog ended mpirun"
expect_line hf 'replacing them with spare\(s\) s2' "s1 lost: s2 takes the node"
expect_rc hf 0 "a spare partitioned during the rebuild, ft-launch --hostfile --restarts 2"
expect_resumed hf 8 8 "after a partition during the rebuild (hostfile)"
expect_digest hf "after a partition during the rebuild (hostfile)"
ok "hostfile path: s1 partitioned during the rebuild: its ranks stopped, the watchdog ended mpirun, ft-restore rebuilt onto s2, resumed from step 8, digest matches"

# ft-restore names the host whose store had no room (on ft-launch's
# channel); ft-launch gives that spare up and puts the next one in its
# place, rather than stopping with exit 5 while a spare with room is left
# (before: exit 5, s2 never tried).  Run on h3, a host of the job: mpirun's
# own host gets rank 0, so ft-restore's ranks are not in the hostfile's
# order, and the spare is found by name.  Again under --verbose, which
# changes only what is shown (without the filter, nothing read ft-restore's
# line naming s1, and ft-launch stopped with exit 5).
spare_next() {  # spare_next LOG [ARGS...]
  local log=$1; shift
  up crecover 4 --spares 2
  export FT_JOB=spare-next
  fill_s1
  FT_HOLD=step=8 LAUNCH_ON=h3 head_launch_bg "$log" --hostfile "$WORK/hostfile" --job "$FT_JOB" --restarts 1 --spares 2 --timeout 10 "$@"
  HOLD_WHEN=step=8
  chaos "$log" kill-node h2
  finish
  expect_rc "$log" 0 "s1 without room, s2 with room, ft-launch --hostfile --restarts 1 --spares 2 $* on h3"
  expect_line "$log" '^ft-launch: spare s1 has no room for the store of the node it replaces \(ft-restore exit 5\): given up; s2 takes its place$' "s1 given up for s2"
  expect_line "$log" '^ft-launch: \[.*\] running ft-restore --mode replace on 4 node\(s\): h1 s2 h3 h4$' "ft-restore with s2 in h2's place"
  expect_line "$log" '^ft-restore: restored version 4 \(step 8\): 1 lost node\(s\)' "h2's node rebuilt onto s2"
  expect_resumed "$log" 8 8 "s2 in place of s1"
  expect_digest "$log" "s2 in place of s1"
  expect_line "$log" '^ft-launch: \[.*\] done: success after 1 restart\(s\): h2 -> s2$' "the last line names s2"
}
begin "h2 lost at step 8; the spare s1 without room, s2 with room: s2 takes the node (ft-launch --hostfile on h3)"
spare_next next
ok "s1 without room: given up, s2 took h2's node, resumed from step 8, digest matches"
begin "the same under --verbose"
spare_next vnext --verbose
expect_line vnext '^ft-launch: \+ mpirun ' "--verbose: mpirun's command line shown"
ok "--verbose: s1 given up, s2 took h2's node, resumed from step 8, digest matches"
echo "PASS: a fault during recovery"
