#!/usr/bin/env bash
# Chaos on 4 hosts (k=3, m=1): bit flips in held snapshots.  A job runs 8
# steps and ends; ft-chaos corrupt flips bits in a chunk of the newest
# committed version on one host; the CRC64 of the chunk catches it.
#   6. a data chunk (h2): a relaunch without repair refuses the data;
#      ft-restore (run by hand, one rank per host) reports 1 corrupt chunk and
#      rebuilds it; the relaunch to 12 steps resumes from step 8 and ends with
#      the digest of a fault-free 12-step run.  The same flip under
#      ft-launch --restarts 1 is repaired by the restart loop.
#   7. a parity chunk (h3): ft-restore --verify finds the stripe whose parity
#      does not match; ft-restore reports 1 corrupt chunk and rebuilds it;
#      --verify then finds every stripe whole; the relaunch ends with the
#      fault-free digest.
#   8. one byte of a header field of h3's committed slot (version, step,
#      rank_off[0], state, k, crc[1], epoch: one field per relaunch): the
#      header fails its checksum, so h3's copy counts as erased; the SMP
#      refuses, ft-launch --restarts 1 runs ft-restore, which rebuilds the
#      copy in place from the group; the job resumes with the fault-free
#      digest.
#   9. two damaged headers in one group (h2, h3): more than m=1 erasures;
#      ft-restore exits 3 naming both, and no store changes (by hand and
#      under --restarts).
#  10. one flipped byte of h3's metadata: h3 counts as lost and is rebuilt
#      onto itself; the job resumes with the fault-free digest.
#  11. issue 14.4's reproduction: byte 8 (the format word) of h3's other
#      slot (version 5, never committed) flipped after a finished run: the
#      relaunch resumes at once, warning about the slot.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=12 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 4)
ALL="h1 h2 h3 h4"
up ccorrupt 4
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS"
ok "fault-free digest $REF"

# first_run LOG: the job runs 8 steps (version 4 is the newest) and ends.
first_run() {
  launch "$1" 8 --job "$FT_JOB"
  expect_rc "$1" 0 "first 8 steps"
}
# corrupt LOG HOST data|parity: ft-chaos flips bits of chunk 0 of version 4
corrupt() {
  local before
  before=$(store_md5 "$2")
  ft-chaos corrupt "$2" "$3" --job "$FT_JOB" >"$WORK/$1" 2>&1 || { cat "$WORK/$1"; fail "ft-chaos corrupt $2 $3"; }
  expect_line "$1" "^ft-chaos: .* corrupt $2: flipped 32 bits of $3 chunk 0 at byte [0-9]+ of /dev/shm/ftrt/$FT_JOB/slot[01] \(version 4\)$" "corrupt $2 $3"
  [ "$before" != "$(store_md5 "$2")" ] || fail "corrupt $2 $3: the store of $2 did not change"
}
# repair LOG HOST data|parity: ft-restore by hand finds and rebuilds it
repair() {
  restore "$ALL" "$1"
  expect_rc "$1" 0 "ft-restore after a flipped $3 chunk"
  expect_line "$1" '^ft-restore: 1 chunk\(s\) failed their CRC and will be rebuilt$' "$3 chunk on $2"
  expect_line "$1" "^ft-restore: \[1/1\] group 0 stripe [0-3]: $3 chunk [0-9] of $2 -> $2$" "$3 chunk on $2"
  expect_line "$1" '^ft-restore: restored version 4 \(step 8\): 0 lost node\(s\), 1 corrupt chunk\(s\), ' "$3 chunk on $2"
}
# resume LOG WHAT: relaunch to STEPS; resumes from step 8, fault-free digest
resume() {
  launch "$1" "$STEPS" --job "$FT_JOB"
  expect_rc "$1" 0 "$2: relaunch"
  expect_resumed "$1" 8 8 "$2"
  expect_digest "$1" "$2"
}

begin "6. flip bits of a data chunk on h2, repair with ft-restore by hand"
export FT_JOB=corrupt-data
first_run cd1
corrupt cd.chaos h2 data
launch cd2 "$STEPS" --job "$FT_JOB"
[ "$RC" -ne 0 ] || die_with cd2 "relaunch on a flipped data chunk exited 0"
expect_line cd2 "^ftrt\[h2 r3 trainer\] error: ft_restore: /dev/shm/ftrt/$FT_JOB/slot[01]: CRC mismatch in data chunk 0 \(version 4\)$" "unrepaired relaunch"
expect_line cd2 '^ft-train-example: ft_restore: data failed an integrity check$' "unrepaired relaunch"
expect_no_line cd2 '^digest ' "unrepaired relaunch"
repair cd3 h2 data
resume cd4 "repaired data chunk"
ok "data chunk flipped: relaunch refused it, ft-restore rebuilt it, resumed from step 8, digest matches"

begin "6. (same flip, ft-launch --restarts 1 repairs it by itself)"
export FT_JOB=corrupt-auto
first_run ca1
corrupt ca.chaos h4 data
launch ca2 "$STEPS" --job "$FT_JOB" --restarts 1
expect_rc ca2 0 "ft-launch --restarts 1 on a flipped data chunk"
expect_line ca2 'CRC mismatch in data chunk 0 \(version 4\)$' "--restarts 1 on a flipped chunk"
expect_line ca2 '^ft-launch: restart 1 of 1: attempt failed with status [0-9]+; recovering$' "--restarts 1 on a flipped chunk"
expect_line ca2 '^ft-restore: restored version 4 \(step 8\): 0 lost node\(s\), 1 corrupt chunk\(s\), ' "--restarts 1 on a flipped chunk"
expect_resumed ca2 8 8 "--restarts 1 on a flipped chunk"
expect_digest ca2 "--restarts 1 on a flipped chunk"
ok "data chunk flipped: the restart loop rebuilt it, resumed from step 8, digest matches"

begin "7. flip bits of a parity chunk on h3, repair with ft-restore by hand"
export FT_JOB=corrupt-parity
first_run cp1
corrupt cp.chaos h3 parity
restore "$ALL" cp2 --verify
[ "$RC" -ne 0 ] || die_with cp2 "ft-restore --verify exited 0 on a flipped parity chunk"
expect_line cp2 '^ft-restore: verified 4 stripes of version 4: 1 with parity that does not match the data' "--verify before the repair"
repair cp3 h3 parity
restore "$ALL" cp4 --verify
expect_rc cp4 0 "ft-restore --verify after the repair"
expect_line cp4 '^ft-restore: verified 4 stripes of version 4: 0 with parity that does not match the data$' "--verify after the repair"
resume cp5 "repaired parity chunk"
ok "parity chunk flipped: --verify found it, ft-restore rebuilt it, stripes whole, resumed from step 8, digest matches"
begin "8. flip one byte of a header field of h3's committed slot, one field per relaunch (--restarts 1)"
export FT_JOB=corrupt-hdr
first_run ch0
n=0 from=8
for field in version step 'rank_off[0]' state k 'crc[1]' epoch; do
  n=$((n + 1))
  ft-chaos corrupt h3 header "$field" --job "$FT_JOB" >"$WORK/ch$n.chaos" 2>&1 ||
    { cat "$WORK/ch$n.chaos"; fail "ft-chaos corrupt h3 header $field"; }
  expect_line ch$n.chaos "^ft-chaos: .* corrupt h3: flipped byte [0-9]+ \\(header field ${field//[/\\[}\\) of /dev/shm/ftrt/$FT_JOB/slot[01] \\(version [0-9]+\\): " "header field $field"
  launch ch$n "$STEPS" --job "$FT_JOB" --restarts 1
  expect_rc ch$n 0 "header field $field, --restarts 1"
  expect_line ch$n 'slot[01]: (header checksum mismatch|invalid slot state word)' "header field $field: the SMP's warning"
  expect_line ch$n '^ft-launch: restart 1 of 1: attempt failed with status [0-9]+; recovering$' "header field $field"
  expect_line ch$n "^ft-restore: damaged copy of version [0-9]+ on h3 \\(node 2, group 0 position [0-3]\\): .*; rebuilt in place$" "header field $field"
  expect_line ch$n '^ft-restore: restored version [0-9]+ \(step [0-9]+\): 0 lost node\(s\), 0 corrupt chunk\(s\), 1 damaged cop' "header field $field"
  expect_resumed ch$n "$from" "$from" "header field $field"
  expect_digest ch$n "header field $field"
  from=$STEPS
  ok "header field $field of h3's committed slot flipped: rebuilt in place, resumed, digest matches"
done

begin "9. two damaged headers in one group (h2, h3): ft-restore exits 3, nothing changed"
export FT_JOB=corrupt-two
first_run ct0
for h in h2 h3; do
  ft-chaos corrupt $h header version --job "$FT_JOB" >"$WORK/ct.$h.chaos" 2>&1 ||
    { cat "$WORK/ct.$h.chaos"; fail "ft-chaos corrupt $h header version"; }
done
# every store file but ctl (the control segment, made anew by each launch)
all_md5() { local h; for h in $ALL; do echo "$h"; store_md5 "$h" | grep -v ' ctl$'; done; }
before=$(all_md5)
restore "$ALL" ct1
expect_rc ct1 3 "ft-restore with two damaged copies in one group"
expect_line ct1 '^ft-restore: group 0 lost 2 chunks of stripe [0-3] but m=1: damaged copies on \[h2, h3\]; version 4 \(step 8\) cannot be rebuilt; nothing was changed' "two damaged copies"
[ "$before" = "$(all_md5)" ] || fail "two damaged copies: a refused ft-restore changed a store"
launch ct2 "$STEPS" --job "$FT_JOB" --restarts 1
expect_rc ct2 3 "two damaged copies, --restarts 1"
expect_line ct2 '^ft-launch: ft-restore: too many losses, the job cannot be recovered \(exit 3\)$' "two damaged copies, --restarts 1"
expect_no_line ct2 '^resumed from' "two damaged copies, --restarts 1"
expect_no_line ct2 '^fresh start' "two damaged copies, --restarts 1"
[ "$before" = "$(all_md5)" ] || fail "two damaged copies: the restart loop changed a store"
ok "two damaged copies in one group: exit 3 by hand and under --restarts, stores unchanged"

begin "10. flip a byte of h3's metadata, relaunch with --restarts 1"
export FT_JOB=corrupt-meta
first_run cm0
ft-chaos corrupt h3 meta --job "$FT_JOB" >"$WORK/cm.chaos" 2>&1 || { cat "$WORK/cm.chaos"; fail "ft-chaos corrupt h3 meta"; }
expect_line cm.chaos "^ft-chaos: .* corrupt h3: flipped byte [0-9]+ of /dev/shm/ftrt/$FT_JOB/meta " "corrupt h3 meta"
launch cm1 "$STEPS" --job "$FT_JOB" --restarts 1
expect_rc cm1 0 "corrupt metadata, --restarts 1"
expect_line cm1 "^ft-restore: h3: unreadable metadata \\(.*/meta: .*\\): its node counts as lost$" "corrupt metadata"
expect_line cm1 '^ft-restore: lost node 2 \(h3, group 0 position [0-3]\) -> h3$' "corrupt metadata"
expect_line cm1 '^ft-restore: restored version 4 \(step 8\): 1 lost node\(s\), 0 corrupt chunk\(s\), ' "corrupt metadata"
expect_resumed cm1 8 8 "corrupt metadata"
expect_digest cm1 "corrupt metadata"
ok "h3's metadata flipped: counted as lost, rebuilt onto h3, resumed from step 8, digest matches"

begin "11. issue 14.4: byte 8 of h3's slot of version 5 (never committed) flipped after a finished run"
export FT_JOB=corrupt-other
first_run co0
ft-cluster exec --name "$CL" h3 sh -c "printf '\\375' | dd of=/dev/shm/ftrt/$FT_JOB/slot1 bs=1 seek=8 conv=notrunc status=none" ||
  fail "flip byte 8 of h3's slot1"
launch co1 "$STEPS" --job "$FT_JOB" --restarts 1
expect_rc co1 0 "flipped format word of an uncommitted slot"
expect_line co1 'slot1: header checksum mismatch.*treating the slot as empty' "flipped format word of an uncommitted slot"
expect_no_line co1 '^ft-launch: restart' "flipped format word of an uncommitted slot"
expect_resumed co1 8 8 "flipped format word of an uncommitted slot"
expect_digest co1 "flipped format word of an uncommitted slot"
ok "format word of h3's uncommitted slot flipped: the relaunch resumed at once, digest matches"
echo "PASS: chaos on 4 hosts, flipped chunks, headers and metadata"
