#!/usr/bin/env bash
# Prepared spares (issue 18): 4 hosts (3+1) + 2 spares.  Once the job has
# committed its first snapshot, ft-launch prepares its free spares
# (ft-spare prepare: two files of a slot's size, their memory allocated
# then); when h2 is lost at step 8, the rebuild onto s1 takes those files as
# h2's slots instead of allocating new ones while the job waits: the very
# same files (inodes) become s1's slots, the recovery's account says so,
# and the job resumes from step 8 with the fault-free digest.  s2's store
# filled first: ft-launch warns that it has no room, and nothing of it is
# left.  When ft-launch ends, nothing prepared is left on any spare.  The
# same through ft-restore as a job of its own (--restore-job), whose
# summary line says so; and with --cold-spares nothing is prepared (and a
# node's files prepared by an earlier launch are dropped at its layout).
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=12 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up cspare 4 --spares 2
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS" --nodes 4
ok "fault-free digest $REF"

on_host() { ft-cluster exec --name "$CL" "$@"; }

# wait_prepared HOST: until ft-spare says both files are whole on HOST (the
# preparation runs beside the held job; 120 s bound a hang, not a speed).
wait_prepared() {
  local out
  for _ in $(seq 1200); do
    out=$(on_host "$1" ft-spare --job "$FT_JOB" show 2>&1)
    [[ $out == *"slot0 "*"slot1 "* ]] && return 0
    sleep 0.1
  done
  fail "$1 was never prepared: $out"
}

# inodes HOST DIR: the inodes of slot0 and slot1 in DIR of HOST's store root
inodes() { on_host "$1" stat -c %i "/dev/shm/ftrt/$2/slot0" "/dev/shm/ftrt/$2/slot1" | tr '\n' ' '; }

# nothing_left LOG: no spare holds anything prepared for the job
nothing_left() {
  local h
  for h in s1 s2; do
    ! on_host "$h" test -e "/dev/shm/ftrt/.spare-$FT_JOB" ||
      die_with "$1" "$h still holds /dev/shm/ftrt/.spare-$FT_JOB after ft-launch ended"
  done
}

begin "h2 lost at step 8; s1 prepared while the job ran, s2 without room"
export FT_JOB=prepared
on_host s2 sh -c 'fallocate -l $(($(df -k --output=avail /dev/shm | tail -1) - 64))k /dev/shm/fill' ||
  fail "cannot fill s2's /dev/shm"
launch_held prep "$STEPS" step=8 --job "$FT_JOB" --nodes 4 --restarts 1 --spares 2
wait_prepared s1
# s2's preparation ends with a warning (no room), from the background.
for _ in $(seq 1200); do grep -q 'warning: spare s2 has no room' "$WORK/prep" && break; sleep 0.1; done
before=$(inodes s1 ".spare-$FT_JOB")
chaos prep kill-node h2
finish
expect_rc prep 0 "ft-launch --restarts 1 --spares 2"
expect_line prep 'ft-launch: warning: spare s2 has no room: .*no room here for 2 slots' "s2 named without room"
expect_line prep 'replacing them with spare\(s\) s1' "s1 takes h2's node"
expect_line prep "^ft-launch: recovery 1: training resumed .*ft_init [0-9.]+ s \\(.*, 2 slot\\(s\\) prepared on a spare\\)" "the account says the spare was prepared"
after=$(inodes s1 "$FT_JOB")
[ "$after" = "$before" ] ||
  die_with prep "s1's slots are not the files prepared on it (inodes $after, prepared $before)"
expect_resumed prep 8 8 "onto the prepared s1"
expect_digest prep "onto the prepared s1"
nothing_left prep
on_host s2 rm /dev/shm/fill || fail "cannot free s2's /dev/shm"
ok "the rebuild took s1's prepared files as its slots (inodes $after), resumed from step 8, digest matches; s2 without room named; nothing left"

begin "the same through ft-restore as a job of its own (--restore-job)"
up cspare 4 --spares 2
export FT_JOB=prepared-job
launch_held rjob "$STEPS" step=8 --job "$FT_JOB" --nodes 4 --restarts 1 --spares 1 --restore-job
wait_prepared s1
chaos rjob kill-node h2
finish
expect_rc rjob 0 "ft-launch --restarts 1 --spares 1 --restore-job"
expect_line rjob '^ft-restore: restored version 4 \(step 8\): 1 lost node\(s\), .*, 2 slot\(s\) prepared on a spare$' "ft-restore says the spare was prepared"
expect_resumed rjob 8 8 "onto the prepared s1 by ft-restore"
expect_digest rjob "onto the prepared s1 by ft-restore"
nothing_left rjob
ok "ft-restore took the prepared files, resumed from step 8, digest matches; nothing left"

begin "--cold-spares: nothing prepared"
up cspare 4 --spares 2
export FT_JOB=cold
# Files prepared on h1 by an earlier launch that never took them: h1 is a
# node of this one, whose layout gives their memory back.
on_host h1 ft-spare --job "$FT_JOB" prepare 1048576 || fail "ft-spare prepare on h1"
launch_held cold "$STEPS" step=8 --job "$FT_JOB" --nodes 4 --restarts 1 --spares 1 --restore-job --cold-spares
chaos cold kill-node h2
finish
expect_rc cold 0 "ft-launch --cold-spares"
expect_line cold '^ft-restore: restored version 4 \(step 8\): 1 lost node\(s\), .*layout epoch [0-9]+$' "ft-restore rebuilt h2's node"
expect_no_line cold 'prepared on a spare' "--cold-spares"
expect_digest cold "--cold-spares"
nothing_left cold
! on_host h1 test -e "/dev/shm/ftrt/.spare-$FT_JOB" || die_with cold "h1, a node of the job, still holds files prepared on it"
ok "--cold-spares: the slots made at the rebuild, digest matches; h1's stale prepared files dropped at its layout"
echo "PASS: prepared spares"
