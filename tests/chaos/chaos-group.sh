#!/usr/bin/env bash
# Chaos on 4 hosts (k=3, m=1) + 1 spare: kill each position of the group.
#   3. for each host h1..h4 (one run each, on a fresh cluster): ft-chaos
#      kill-node at step 8 (once its snapshot is committed); ft-launch --restarts 1
#      --spares 1 finds the lost host, puts s1 in its place, runs
#      ft-restore, relaunches; the job resumes from the restored step and
#      ends with the fault-free digest.  Every position 0..3 of group 0 is
#      lost once.  ft-launch says where the recovery's time went (issue
#      18), and --times FILE holds its stamps in the order the recovery
#      passed them; the job's and ft-restore's "ftrt-times:" lines that
#      they come from are not shown.
#   4. h2 killed in the first snapshot, before anything was committed:
#      nothing to restore and nothing lost by starting over; ft-restore
#      (--restore-job) says so and clears the survivors' stores, and the
#      job starts afresh on h1 s1 h3 h4 with the fault-free digest.
#   5. the same with no spare and the rebuild in the relaunch (ft_init):
#      shrunk to 3 hosts, started afresh, with the digest of a fault-free
#      run on 3 hosts.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=32 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 4)
up cgroup 4 --spares 1
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS"
ok "fault-free digest $REF"

# expect_account LOG WHAT: ft-launch's account of the recovery and of the
# first step after it, and their stamps (--times LOG.times: the recovery's
# line, then the first step's) each at or after the one before
S='[0-9]+\.[0-9]{2} s'
expect_account() {
  expect_line "$1" "^ft-launch: recovery 1: training resumed $S after the failed job's end: teardown $S, lost hosts $S, regroup $S, relaunch $S, ft_init $S \\(start-up $S, survey $S, rebuild $S, [0-9.]+ MiB(, [12] slot\\(s\\) prepared on a spare)?\\), until restored $S$" "$2: the recovery's account"
  expect_line "$1" "^ft-launch: recovery 1: its first step after the restore took $S$" "$2: the first step's"
  expect_no_line "$1" 'ftrt-times' "$2: the lines ft-launch reads are not shown"
  local t=$WORK/$1.times k prev=0 v
  [ "$(wc -l <"$t")" -eq 2 ] && [ "$(grep -c '^recovery=1 mode=replace ' "$t")" -eq 2 ] ||
    die_with "$1" "$2: --times holds not the 2 lines of recovery 1: $(cat "$t")"
  for k in fail torn probed regrouped relaunch mpi_ms r_mpi_ms r_survey_ms \
           r_rebuilt_ms init_ms restored_ms step_ms; do
    v=$(tr '\n' ' ' <"$t" | grep -o " $k=[0-9]*" | cut -d= -f2)
    [ -n "$v" ] && [ "$(wc -w <<<"$v")" -eq 1 ] && [ "$v" -ge "$prev" ] ||
      die_with "$1" "$2: --times: $k=${v:-(none)} is not one stamp at or after the one before it ($prev): $(cat "$t")"
    prev=$v
  done
}

positions=
for i in 1 2 3 4; do
  h=h$i
  begin "3. kill $h (node $((i - 1))) at step 8; s1 replaces it"
  [ "$i" -eq 1 ] || up cgroup 4 --spares 1
  export FT_JOB=lose-$h
  log=lose$i
  launch_held "$log" "$STEPS" step=8 --job "$FT_JOB" --restarts 1 --spares 1 \
    --times "$WORK/$log.times"
  chaos "$log" kill-node "$h"
  finish
  expect_rc "$log" 0 "kill $h: ft-launch --restarts 1 --spares 1"
  expect_line "$log" "^ft-launch: job failed; host\(s\) of the job unreachable \(killed or partitioned\): $h$" "kill $h"
  expect_line "$log" "^ft-launch: lost host\(s\): *$h *; replacing them with spare\(s\) s1$" "kill $h"
  line=$(grep -E "^ft-restore: lost node $((i - 1)) \($h, group 0 position [0-3]\) -> s1$" "$WORK/$log") ||
    die_with "$log" "kill $h: ft-restore does not rebuild node $((i - 1)) ($h) onto s1"
  pos=${line##*position }
  pos=${pos%%)*}
  positions="$positions $pos"
  expect_resumed "$log" 8 8 "kill $h"
  expect_line "$log" "^ft-restore: restored version [0-9]+ \(step $RESUMED\): 1 lost node\(s\), 0 corrupt chunk\(s\), [0-9.]+ MiB rebuilt" "kill $h"
  hosts="h1 h2 h3 h4"
  expect_line "$log" "^ft-launch: on cluster $CL: ${hosts/$h/s1};" "kill $h: relaunch with s1 in $h's place"
  expect_digest "$log" "kill $h"
  expect_account "$log" "kill $h"
  ok "$h (group 0 position $pos) lost: rebuilt on s1, resumed from step $RESUMED, digest matches"
done
[ "$(tr ' ' '\n' <<<"$positions" | sort -n | tr -d '\n')" = 0123 ] ||
  fail "the lost hosts covered positions$positions of the group, not 0 1 2 3"

# A host lost before the job's first commit: nothing to restore, and
# nothing lost by starting over.  The survivors' slots are whole and were
# never encoded, so the rebuild (in the relaunch, then in ft-restore as a
# job of its own) clears their stores and the job starts afresh, with the
# digest of a run without faults on the hosts it ends on (before: "no
# surviving node holds a committed version", and ft-launch gave up).
# first_lost LOG WHAT [ARGS...]: h2 killed while the trainers copy the
# first snapshot (step 2), under ft-launch --restarts 1 ARGS.
first_lost() {
  local log=$1 what=$2
  shift 2
  export FT_JOB=first-$log
  launch_held "$log" "$STEPS" "phase=snapshot,step=2" --job "$FT_JOB" --restarts 1 \
    --times "$WORK/$log.times" "$@"
  chaos "$log" kill-node h2
  finish
  expect_rc "$log" 0 "$what"
  expect_line "$log" "^ft-launch: recovery 1: nothing had been committed before the failure: the job starts afresh$" "$what: ft-launch says so"
  expect_no_line "$log" "no account" "$what"
  [ "$(grep -Ec '^recovery=1 mode=(replace|shrink) .*fresh_ms=[0-9]+' "$WORK/$log.times")" -eq 1 ] ||
    die_with "$log" "$what: --times holds not one line of recovery 1 with its fresh start: $(cat "$WORK/$log.times")"
  [ "$(grep -c '^fresh start$' "$WORK/$log")" -eq 2 ] || die_with "$log" "$what: not two fresh starts"
  expect_no_line "$log" '^resumed from step' "$what"
  expect_digest "$log" "$what"
}

begin "4. h2 lost in the first snapshot, before its commit; s1 replaces it, the job starts afresh"
up cgroup 4 --spares 1
first_lost first4 "h2 lost before the first commit, --restore-job" --spares 1 --restore-job
expect_line first4 "^ft-restore: nothing to restore: no version of job '$FT_JOB' was ever committed .*; the next launch starts the job afresh$" "ft-restore says why"
expect_line first4 "^ft-launch: on cluster $CL: h1 s1 h3 h4;" "the relaunch on s1"
ok "h2 lost before the first commit: nothing to restore, started afresh on s1, digest matches"

begin "5. the same with no spare, the rebuild in the relaunch: shrunk to 3 hosts, started afresh"
up cgroup 4
reference ref3 "$STEPS" --nodes 3
first_lost first5 "h2 lost before the first commit, no spare, rebuild in the relaunch"
expect_line first5 "^ft-launch: on cluster $CL: h1 h3 h4;" "the relaunch on the 3 hosts left"
expect_line first5 "^ftrt\\[h[0-9] r[0-9]+ smp\\] warn: the rebuild of the recovery: nothing to restore: no version of job '$FT_JOB' was ever committed .*; the job starts afresh$" "the relaunch's SMPs say why it starts afresh"
ok "h2 lost before the first commit, no spare: started afresh on 3 hosts, digest of a 3-host run"
echo "PASS: every position of a 3+1 group lost and rebuilt; a loss before the first commit starts afresh"
