#!/usr/bin/env bash
# Compound faults across a change of layout (issue 14, items 1 and 2): a
# second fault after a shrink, before the smaller job's first snapshot has
# committed, and a loss after a relaunch with another --ec, before a version
# encoded under it has committed.  The only committed version is then one
# encoded under the old layout, and recovery must use that layout: the job
# resumes with exactly the committed bytes, or, beyond m losses in a group,
# is refused with exit 3 and nothing changed (docs/guarantees.md,
# G3).
#
# The first fault and the shrink are two steps (as ft-launch --restarts
# does them: the attempt, then ft-restore --mode shrink on the survivors);
# the relaunch is a new ft-launch whose first attempt carries the hold point
# (ft-launch passes FT_HOLD to its first attempt only), so that the second
# fault lands before the relaunch's first commit however slow the machine.
# Every expected digest is that of a run without the second fault: a job
# that ends on fewer ranks than it started with trains differently, so the
# reference of a shrink case is the same first 8 steps, one shrink from the
# snapshot of step 8 to the final node count, and the rest of the steps.
#   1. 5 hosts, --ec 3+2, no spare: h2 lost at step 8, shrink to 4; in the
#      relaunch, as the SMPs enter the encode of its first snapshot (step
#      10), the host that adopted h2's data (h1 today) is lost.  2 losses
#      <= m=2 of the 3+2 layout of step 8: ft-launch --restarts 1 shrinks to
#      3 and the job resumes from step 8 with the digest of a 5 -> 3 shrink
#      at step 8.
#   2. 4 hosts, 3+1, no spare: h2 lost at step 8, shrink to 3; h3 lost at
#      the encode of the relaunch's first snapshot.  2 losses > m=1 of the
#      group of step 8: ft-restore exits 3 naming the group, h2 and h3 and
#      the version, never says it restored anything; ft-launch --restarts 1
#      gives up with exit 3; the survivors still hold step 8 committed, and
#      ft-restore run again by hand exits 3 and changes no byte of them.
#   3. 4 hosts, 3+1, no spare: h2 lost at step 8, shrink to 3; the SMP of h3
#      killed as the SMPs enter the commit of the relaunch's first snapshot
#      (step 10, encoded on every node: committed by the rule of
#      docs/design.md section 7).  ft-launch --restarts 1 relaunches on the
#      same hosts; the job resumes from step 10 with the digest of a 4 -> 3
#      shrink at step 8.
#   4. 4 hosts + 1 spare: 8 steps committed under 3+1 (the job ends); the
#      same job relaunched with --ec 2+2 for more steps; h3 lost as the SMPs
#      enter the encode of the relaunch's first snapshot (step 10).
#      ft-restore rebuilds h3 onto s1 from version of step 8 with its own
#      layout (m=1), and the job resumes from step 8 with the fault-free
#      digest.
#   5. 5 hosts, --ec 3+2 --restarts 1, no spare: h2 lost at step 8;
#      ft-launch shrinks to 4 nodes, fewer than 3+2 needs, and relaunches
#      with 2+2 (m kept); the job resumes from step 8 with the digest of a
#      5 -> 4 shrink at step 8.
# A new ft-launch refuses --ec K+M on fewer than K+M nodes (a usage error):
# so the relaunch of case 1, a new ft-launch on 4 hosts, runs with the
# default code of 4 nodes.
# Each case runs on a cluster of its own, in a subshell: one that fails is
# reported and the next still runs; the script fails if any did.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=20 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)

# lose_and_shrink LOG HOST KEPT [ft-launch ARGS...]: the job $FT_JOB runs on
# the cluster's hosts, held once the snapshot of step 8 has committed, where
# HOST is killed (ft-launch without --restarts fails: 124 or 125); then
# ft-restore --mode shrink on the survivors KEPT, as ft-launch --restarts
# does, adopts HOST's data.
lose_and_shrink() {
  local log=$1 host=$2 kept=$3
  shift 3
  launch_held "$log.a" "$STEPS" step=8 --job "$FT_JOB" "$@"
  chaos "$log.a" kill-node "$host"
  finish
  [ "$RC" -eq 124 ] || [ "$RC" -eq 125 ] ||
    die_with "$log.a" "first fault, $host killed at step 8: ft-launch exit $RC, expected 124 or 125"
  expect_no_line "$log.a" '^digest ' "first fault"
  restore "$kept" "$log.b" --mode shrink
  expect_rc "$log.b" 0 "first fault: ft-restore --mode shrink on $kept"
  expect_line "$log.b" "^ft-restore: lost node [0-9]+ \\($host, group 0 position [0-9]+\\) -> h[0-9]+ \\(adopted" "first fault: $host's data adopted"
  expect_line "$log.b" '^ft-restore: restored version [0-9]+ \(step 8\): 1 lost node\(s\)' "first fault: shrink"
}

# adopter HOSTS: ADOPTER = the host of HOSTS whose store of $FT_JOB holds
# adopted data (an adopt<N> directory, docs/design.md section 7), or empty
# when none does (a shrink that keeps adopted data some other way).
adopter() {
  local h found=()
  for h in $1; do
    # shellcheck disable=SC2016 # $FT_JOB expands on the host
    ft-cluster exec --name "$CL" "$h" sh -c 'ls -d "/dev/shm/ftrt/$FT_JOB"/adopt* >/dev/null 2>&1' &&
      found+=("$h")
  done
  [ ${#found[@]} -le 1 ] || fail "one lost node, but ${#found[@]} hosts hold adopted data of $FT_JOB: ${found[*]}"
  ADOPTER=${found[0]:-}
}

# committed_step_8 HOST WHAT: HOST's store still holds a committed version
# of step 8 (ft-status).
committed_step_8() {
  ft-cluster exec --name "$CL" "$1" ft-status --job "$FT_JOB" >"$WORK/status.$1" 2>&1 ||
    { cat "$WORK/status.$1"; fail "$2: ft-status on $1 failed"; }
  grep -Eq '^[01] +COMMITTED +[0-9]+ +8 ' "$WORK/status.$1" ||
    { cat "$WORK/status.$1"; fail "$2: $1 no longer holds the committed version of step 8"; }
}

# run_case NAME FUNCTION: FUNCTION in a subshell, so that a failed case (fail
# exits) is reported and the next one still runs; its background launch, if
# any, is ended.  FAILED lists the cases that failed.
FAILED=()
run_case() {
  if ! (
    trap 'for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done' EXIT
    "$2"
  ); then
    FAILED+=("$1")
  fi
}

up clayout 5
begin "references: 4 hosts 3+1 for $STEPS steps; 8 steps then a shrink to 3 (5 hosts 3+2, and 4 hosts 3+1)"
reference ref4 "$STEPS" --nodes 4
REF4=$REF
shrunk_reference ref53 "h1 h4 h5" --ec 3+2
REF53=$REF
shrunk_reference ref43 "h1 h3 h4" --nodes 4
REF43=$REF
shrunk_reference ref54 "h1 h3 h4 h5" --ec 3+2
REF54=$REF
ok "fault-free $REF4; 5 -> 3 at step 8: $REF53; 4 -> 3 at step 8: $REF43; 5 -> 4 at step 8: $REF54"

case1() {
  begin "1. 5 hosts 3+2: h2 lost at step 8, shrink to 4; the adopter of h2's data lost before the relaunch's first commit"
  export FT_JOB=second-loss
  REF=$REF53
  lose_and_shrink c1 h2 "h1 h3 h4 h5" --ec 3+2
  # The second victim is the host holding h2's adopted data (no parity
  # protects it in the shrunk layout; the 3+2 stripes of step 8 do).
  adopter "h1 h3 h4 h5"
  victim=${ADOPTER:-h3}
  [ -n "$ADOPTER" ] || echo "# no host holds adopted data of $FT_JOB: the second victim is h3"
  # The relaunch runs without --ec: 3+2 needs 5 nodes (ft-launch refuses
  # --ec 3+2 on 4, and on 3 when its restart shrinks again).
  launch_held c1.c "$STEPS" phase=encode,step=10 --job "$FT_JOB" --restarts 1
  chaos c1.c kill-node "$victim"
  finish
  expect_line c1.c.chaos "held at phase=encode,step=10 on h1 h3 h4 h5$" "second loss"
  expect_line c1.c "^ft-launch: lost host\\(s\\): *$victim *; no spare left: shrinking to 3 nodes$" "second loss: $victim"
  expect_no_line c1.c '^ft-restore: .*\(FT_E[A-Z]+\)$' "second loss: ft-restore failed"
  expect_rc c1.c 0 "second loss ($victim) after a shrink, 2 <= m=2: ft-launch --restarts 1"
  expect_line c1.c '^ft-restore: restored version [0-9]+ \(step 8\)' "second loss: the version of step 8 restored"
  expect_resumed c1.c 8 8 "second loss"
  expect_digest c1.c "second loss ($victim) after a shrink"
  ok "h2 then $victim lost, 2 <= m=2: resumed from step 8, digest matches a 5 -> 3 shrink"
}

case2() {
  begin "2. 4 hosts 3+1: h2 lost at step 8, shrink to 3; h3 lost before the relaunch's first commit"
  export FT_JOB=too-many-after-shrink
  lose_and_shrink c2 h2 "h1 h3 h4"
  launch_held c2.c "$STEPS" phase=encode,step=10 --job "$FT_JOB" --restarts 1
  chaos c2.c kill-node h3
  finish
  too_many='^ft-restore: group [0-9]+ lost [0-9]+ chunks of stripe [0-9]+ but m=1: lost hosts \[(h2, h3|h3, h2)\]; version [0-9]+ \(step 8\) cannot be rebuilt; nothing was changed'
  expect_line c2.c "^ft-launch: lost host\\(s\\): *h3 *; no spare left: shrinking to 2 nodes$" "second loss"
  expect_no_line c2.c '^ft-restore: restored version' "second loss, 2 > m=1: ft-restore must not report a restore"
  expect_no_line c2.c '^ft-restore: \[[0-9]+/[0-9]+\]' "second loss, 2 > m=1: no chunk rebuilt"
  expect_line c2.c "$too_many" "second loss, 2 > m=1: the group, h2 and h3, the version of step 8"
  expect_line c2.c '^ft-launch: ft-restore: too many losses, the job cannot be recovered \(exit 3\)$' "second loss"
  expect_rc c2.c 3 "second loss, 2 > m=1: ft-launch --restarts 1"
  # refused first by the rebuild in the relaunch's ft_init, changing nothing
  expect_line c2.c '^ftrt\[h[14] r[0-9]+ smp\] error: ft_init: the rebuild of the recovery \(FT_REBUILD=shrink\): group 0 lost 2 chunks .*nothing was changed$' "second loss: the rebuild in the relaunch refused"
  expect_no_line c2.c '^digest ' "second loss"
  for h in h1 h4; do
    committed_step_8 "$h" "after ft-restore exit 3"
    store_md5 "$h" >"$WORK/md5.$h"
  done
  restore "h1 h4" c2.d --mode shrink
  expect_rc c2.d 3 "ft-restore run again by hand on h1 h4"
  expect_line c2.d "$too_many" "ft-restore run again"
  expect_no_line c2.d '^ft-restore: restored version' "ft-restore run again"
  for h in h1 h4; do
    store_md5 "$h" | diff "$WORK/md5.$h" - >"$WORK/md5.diff" ||
      { cat "$WORK/md5.diff"; fail "the store of survivor $h changed after ft-restore exit 3"; }
  done
  ok "h2 then h3 lost, 2 > m=1: exit 3, nothing restored, survivors hold step 8, unchanged"
}

case3() {
  begin "3. 4 hosts 3+1: h2 lost at step 8, shrink to 3; an SMP killed at the commit of the relaunch's first snapshot"
  export FT_JOB=fault-after-shrink
  REF=$REF43
  lose_and_shrink c3 h2 "h1 h3 h4"
  launch_held c3.c "$STEPS" phase=commit,step=10 --job "$FT_JOB" --restarts 1
  chaos c3.c kill-smp h3
  finish
  expect_line c3.c.chaos "held at phase=commit,step=10 on h1 h3 h4$" "SMP killed at the commit"
  expect_line c3.c '^ft-launch: no host was lost \(a process failed\): relaunching on the same hosts$' "SMP killed at the commit"
  expect_no_line c3.c '^ft-restore: .*\(FT_E[A-Z]+\)$' "SMP killed at the commit: ft-restore failed"
  expect_rc c3.c 0 "SMP killed at the commit of the first snapshot after a shrink: ft-launch --restarts 1"
  expect_resumed c3.c 10 10 "SMP killed at the commit of step 10 (encoded on every node)"
  expect_digest c3.c "SMP killed at the commit of the first snapshot after a shrink"
  ok "SMP killed at the first commit after a shrink: resumed from step 10, digest matches a 4 -> 3 shrink"
}

case4() {
  begin "4. 4 hosts: step 8 committed under 3+1; relaunched with --ec 2+2; h3 lost before its first commit"
  export FT_JOB=ec-change
  REF=$REF4
  launch c4.a 8 --job "$FT_JOB"
  expect_rc c4.a 0 "8 steps under 3+1"
  launch_held c4.b "$STEPS" phase=encode,step=10 --job "$FT_JOB" --ec 2+2 --restarts 1 --spares 1
  chaos c4.b kill-node h3
  finish
  expect_line c4.b.chaos "held at phase=encode,step=10 on h1 h2 h3 h4$" "relaunch with --ec 2+2"
  expect_line c4.b '^ft-launch: lost host\(s\): *h3 *; replacing them with spare\(s\) s1$' "relaunch with --ec 2+2"
  expect_line c4.b "^ft-restore: job $FT_JOB, 4 nodes, m=1, layout epoch [0-9]+, version [0-9]+ \\(step 8\\)" "relaunch with --ec 2+2: the version of step 8 in its own layout (3+1)"
  expect_no_line c4.b '^ft-restore: .*\(FT_E[A-Z]+\)$' "relaunch with --ec 2+2: ft-restore failed"
  expect_rc c4.b 0 "relaunch with --ec 2+2, h3 lost before its first commit: ft-launch --restarts 1 --spares 1"
  expect_line c4.b '^ft-restore: restored version [0-9]+ \(step 8\): 1 lost node\(s\)' "relaunch with --ec 2+2"
  expect_resumed c4.b 8 8 "relaunch with --ec 2+2"
  expect_digest c4.b "relaunch with --ec 2+2, h3 lost before its first commit"
  ok "--ec 3+1 -> 2+2, h3 lost before the first commit: rebuilt from step 8 under 3+1, digest matches"
}

case5() {
  begin "5. 5 hosts --ec 3+2 --restarts 1: h2 lost at step 8; the shrink to 4 relaunches with 2+2"
  export FT_JOB=ec-shrink
  REF=$REF54
  launch_held c5 "$STEPS" step=8 --job "$FT_JOB" --ec 3+2 --restarts 1
  chaos c5 kill-node h2
  finish
  expect_line c5 '^ft-launch: lost host\(s\): *h2 *; no spare left: shrinking to 4 nodes$' "shrink under --ec 3+2"
  expect_line c5 '^ft-launch: --ec 3\+2 needs 5 nodes, 4 are left: the relaunch encodes with 2\+2$' "shrink under --ec 3+2"
  expect_rc c5 0 "h2 lost under --ec 3+2: ft-launch --restarts 1"
  expect_resumed c5 8 8 "shrink under --ec 3+2"
  expect_digest c5 "shrink under --ec 3+2"
  ok "--ec 3+2 on 5 hosts, h2 lost: shrunk to 4, relaunched with 2+2, digest matches a 5 -> 4 shrink"
}

run_case 1 case1
up clayout 5
run_case 5 case5
up clayout 4
run_case 2 case2
up clayout 4
run_case 3 case3
up clayout 4 --spares 1
run_case 4 case4
[ ${#FAILED[@]} -eq 0 ] || fail "case(s) ${FAILED[*]} failed"
echo "PASS: compound faults across a change of layout"
