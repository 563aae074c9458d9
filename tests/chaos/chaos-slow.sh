#!/usr/bin/env bash
# Failure means no sign of life (issue 15.1; base/pulse.h).  4 hosts, 3+1,
# FT_TIMEOUT=5:
#  - h2's link limited to 8 Mbit/s each way (ft-cluster slow: tc tbf), 12
#    MiB per rank: snapshots and training steps each take several times
#    FT_TIMEOUT on h2, yet every host is alive.  Every snapshot commits, no
#    failure is declared, and the digest is the fault-free run's.  (Before:
#    "commit: no answer from every SMP in 5 s", the job lost.  Heartbeats
#    over MPI alone arrived 5-10 s late behind the bulk data on the same
#    TCP connections; the datagram heartbeats do not wait behind it.)
#  - h3's SMP stopped with SIGSTOP at step 4 (ft-chaos stop-smp): alive but
#    silent.  It is declared failed by name after FT_TIMEOUT, the job ends,
#    and --restarts 1 resumes it from step 4 with the fault-free digest.
#  - rank 1's trainer stopped with SIGSTOP at step 4 (ft-chaos stop-rank):
#    its SMP, alive, finds it stopped after FT_TIMEOUT and ends the job
#    (heartbeats alone would have hidden it: the job would hang); resumed
#    from step 4 with the fault-free digest.
#  - world rank 1 stopped with SIGSTOP inside ft_init (FT_FAULT=stop:startup):
#    the others, blocked in ft_init's agreements, name it after FT_TIMEOUT
#    and the job ends (before: it hung until killed).
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=6 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
up cslow 4
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS" --nodes 4
ok "fault-free digest $REF"
# The slow-link case trains a larger model (12 MiB a rank), 4 steps.
SLOW_ARGS=(--snapshot-every 2 --state-mb 12)
SAVED=("${TRAIN_ARGS[@]}"); TRAIN_ARGS=("${SLOW_ARGS[@]}")
reference ref-slow 4 --nodes 4
REF_SLOW=$REF; REF=$(digest_of ref); TRAIN_ARGS=("${SAVED[@]}")
ok "fault-free digest of the 12 MiB model: $REF_SLOW"

begin "h2's link at 8 Mbit/s each way, 12 MiB per rank, FT_TIMEOUT=5"
ft-cluster slow h2 8mbit >"$WORK/slow.tc" 2>&1 || { cat "$WORK/slow.tc"; fail "ft-cluster slow h2 8mbit"; }
t0=$(date +%s.%N)
SAVED=("${TRAIN_ARGS[@]}"); TRAIN_ARGS=("${SLOW_ARGS[@]}"); REF_SAVED=$REF; REF=$REF_SLOW
FT_TIMEOUT=5 launch slow 4 --job slow --nodes 4 --timeout 5
took=$(elapsed "$t0")
ft-cluster slow h2 off >/dev/null || fail "ft-cluster slow h2 off"
expect_rc slow 0 "a slow link, every host alive"
expect_no_line slow 'FT_TIMEOUT|recovering|ft-restore' "a slow host is not a failed one"
grep -qx 'fresh start' "$WORK/slow" || die_with slow "the throttled run did not start fresh"
expect_digest slow "with h2 at 8 Mbit/s"
TRAIN_ARGS=("${SAVED[@]}"); REF=$REF_SAVED
# Not a timing assertion: the token bucket alone makes the run at least
# this long on any machine (h2 moves 9 MiB per snapshot and 6 MiB per step
# at 1 MB/s), which is what shows that waits far longer than FT_TIMEOUT
# passed without a failure.
awk -v t="$took" 'BEGIN { exit !(t >= 20) }' ||
  die_with slow "the throttled run took $took s: was h2 throttled at all?"
ok "h2 at 8 Mbit/s: every snapshot committed in $took s with FT_TIMEOUT=5, digest matches"

begin "h3's SMP stopped (SIGSTOP) at step 4, FT_TIMEOUT=5"
export FT_JOB=stopped
FT_TIMEOUT=5 launch_held stop "$STEPS" step=4 --job "$FT_JOB" --nodes 4 --restarts 1 --timeout 5
chaos stop stop-smp h3
finish
expect_line stop "no sign of life from (node [0-9]+ \(h3\)|the SMP of h3) for [0-9]+ s \(FT_TIMEOUT" "the stopped SMP named"
expect_rc stop 0 "an SMP stopped, ft-launch --restarts 1"
expect_resumed stop 4 4 "after a stopped SMP"
expect_digest stop "after a stopped SMP"
ok "h3's SMP stopped: declared silent by name, resumed from step 4, digest matches"
begin "rank 1's trainer (on h2) stopped (SIGSTOP) at step 4, FT_TIMEOUT=5"
# Its SMP lives and beats; nobody waits in ftrt (the other trainers wait in
# their own allreduce): the SMP itself finds its trainer stopped.
export FT_JOB=stopped-trainer
FT_TIMEOUT=5 launch_held stopr "$STEPS" step=4 --job "$FT_JOB" --nodes 4 --restarts 1 --timeout 5
chaos stopr stop-rank 1
finish
expect_line stopr "trainer rank 1 \(pid [0-9]+\) on h2 has been stopped for [0-9]+ s \(FT_TIMEOUT\)" "the stopped trainer named"
expect_rc stopr 0 "a trainer stopped, ft-launch --restarts 1"
expect_resumed stopr 4 4 "after a stopped trainer"
expect_digest stopr "after a stopped trainer"
ok "rank 1's trainer stopped: found by its SMP, resumed from step 4, digest matches"
begin "world rank 1 stopped (SIGSTOP) in ft_init, FT_TIMEOUT=5"
# FT_FAULT=stop:startup@r1: the process stops itself once the configuration
# is agreed; every other one waits for it in ft_init's agreements, which
# block in MPI.  Their heartbeat threads find it silent and end the job.
FT_TIMEOUT=5 FT_FAULT=stop:startup@r1 launch init 4 --job stopped-init --nodes 4 --timeout 5
[ "$RC" -ne 0 ] || die_with init "a process stopped in ft_init: the job succeeded"
expect_line init 'ft_init: no sign of life from rank 1 \(h[0-9]\) for [0-9]+ s \(FT_TIMEOUT 5 s\)' "the stopped process named"
ok "rank 1 stopped in ft_init: named by the others, the job ended (exit $RC) instead of hanging"
echo "PASS: a slow link is no failure; a silent SMP, a stopped trainer or process in ft_init are found and named"
