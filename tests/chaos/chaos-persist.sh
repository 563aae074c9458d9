#!/usr/bin/env bash
# The disk tier (issue 17): what erasure coding cannot survive, the job
# survives from FT_PERSIST_DIR (ft-launch --persist), and resumes with the
# digest of a fault-free run (training replays deterministically from the
# persisted step).  The persist directory is one every simulated host sees
# (the hosts share the machine's file system; only /dev/shm is their own).
#   1. The whole cluster lost: a job of 12 steps ends (its SMPs flush the
#      last committed version, step 12, on the way out); every host goes
#      down and a new cluster comes up with empty /dev/shm; the relaunch
#      resumes from step 12 from disk and ends with the fault-free digest
#      of 20 steps.
#   2. More losses than the code rebuilds: 4 hosts, 3+1, 8 steps (the job
#      ends: its SMPs flush step 8 whole on the way out), relaunched and
#      held in the middle of the copy of step 10, before anything newer
#      than step 8 is committed or flushed; h2 and h3 are killed;
#      ft-launch --restarts 1 runs ft-restore, which says it resumes from
#      the disk tier and which steps are lost; the job resumes from step 8
#      on the survivors and the two spares, and ends with the fault-free
#      digest.
#   3. The newest version on disk damaged (one byte of a rank file
#      flipped): the relaunch names the file, resumes from the older
#      version, and ends with the fault-free digest.
#   4. An SMP killed in the middle of a flush (FT_FAULT=flush:3@h2): that
#      version has no MANIFEST; after the whole cluster is lost the version
#      before it is used, with the fault-free digest.
#   6. Onto fewer ranks: a 4-node job's version of step 12 on disk, then a
#      new cluster of 3 hosts: the relaunch re-slices it (global tensors by
#      their place, private buffers from the rank of the same number, the
#      rules of a shrink) and ends with the digest of the same job shrunk
#      to 3 nodes in memory at step 12 (ft-restore --mode shrink).
#   7. A bit flipped in memory (ft-chaos corrupt h2 data) in the version
#      of step 8 after it committed, before the flush at the job's end read
#      it: the flush checks the slot's chunk CRCs after reading, says so,
#      and publishes nothing of it; after the whole cluster is lost the
#      relaunch resumes from step 2 (flushed at the first commit, which
#      the job is held for before the commit of step 4 would end it) with
#      the fault-free digest.
#   8. A host lost while the job restores from disk, before its first
#      commit (the new cluster's first snapshot, step 14, held mid-copy; h2
#      killed): ft-launch --restarts 1 runs ft-restore, which finds no
#      version in memory and hands over to the disk tier again; the job
#      resumes from step 12 on the survivors and the spare with the
#      fault-free digest.
#   9. An SMP killed in the job's final flush (FT_PERSIST_EVERY=1000: the
#      first commit's flush, then the final one): --restarts 1 relaunches
#      from memory at the last step, which commits nothing new and flushes
#      the version it restored as it ends; after the whole cluster is lost
#      the job resumes from step 12, not from step 2.
#  10. Markers (restore.disk) on h1 and h2 only, beside the stores of h3
#      and h4: stale, removed with a warning, and the relaunch resumes from
#      memory (step 8).
#  11. Markers on every node, but every version on disk damaged: the
#      launch is refused saying so, and no store changed (md5 of every
#      file but the control segment, which each launch makes anew).
#   5. The job's persist directory cannot be written (chattr +i): every
#      flush fails and says so in the SMP's log and in ft-status; the job
#      ends well.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=20 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 2)
PERSIST=$WORK/persist
mkdir -m 700 "$PERSIST" || fail "mkdir $PERSIST"
export FT_PERSIST_EVERY=1

# persisted STEP: a version of the job's holding STEP is complete on disk
# (its MANIFEST is there, and says STEP: the u64 at byte 104).
persisted() {
  local m
  for m in "$PERSIST/$FT_JOB"/v*/MANIFEST; do
    [ -f "$m" ] && [ "$(od -An -tu8 -j104 -N8 "$m" | tr -d ' ')" = "$1" ] && return 0
  done
  return 1
}

# complete_versions: "DIRECTORY STEP" of each complete version of $FT_JOB on
# disk, newest first (ft-persist list).
complete_versions() {
  ft-persist --dir "$PERSIST" --job "$FT_JOB" list 2>/dev/null |
    awk '$1 ~ /^v[0-9]+\.e[0-9]+$/ { print $1, $3 }'
}

begin "1. the whole cluster lost: resumed from disk"
up c1 4
reference ref1 "$STEPS"
REF4=$REF   # 4 hosts, $STEPS steps, no fault
export FT_JOB=whole$$
launch c1.a 12 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c1.a 0 "12 steps with --persist"
persisted 12 || { ls -lR "$PERSIST"; fail "case 1: step 12 is not complete on disk after the job ended"; }
up c1 4   # a new cluster: every host's /dev/shm is new
launch c1.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c1.b 0 "relaunch on a new cluster"
expect_line c1.b 'restoring from the disk tier, version [0-9]+ \(step 12\)' "relaunch"
expect_resumed c1.b 12 12 "relaunch"
expect_digest c1.b "relaunch from disk"
ok "resumed from step 12 on disk, digest $REF"

begin "2. more losses than 3+1 rebuilds: ft-restore hands over to the disk tier"
up c2 4 --spares 2
export FT_JOB=beyond$$
launch c2.0 8 --job "$FT_JOB" --persist "$PERSIST" --spares 2
expect_rc c2.0 0 "8 steps with --persist"
persisted 8 || fail "case 2: step 8 is not complete on disk after the job ended"
launch_held c2.a "$STEPS" phase=snapshot,step=10 --job "$FT_JOB" --persist "$PERSIST" --spares 2 --restarts 1 --timeout 10
kill_two h2 h3 c2.a
finish
expect_rc c2.a 0 "two hosts of one 3+1 group lost, --restarts 1"
expect_line c2.a 'ft-restore: .*cannot be rebuilt.*the disk tier takes over: the relaunch resumes from version [0-9]+ \(step 8\)' "ft-restore"
expect_line c2.a 'restoring from the disk tier, version [0-9]+ \(step 8\)' "relaunch"
expect_resumed c2.a 8 8 "relaunch"
expect_digest c2.a "resumed from disk after two losses"
ok "resumed from step 8 on disk after h2 and h3 were lost, digest $REF"

begin "3. the newest version on disk damaged: the older one is used"
up c3 4
export FT_JOB=damaged$$
launch c3.a 12 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c3.a 0 "12 steps with --persist"
persisted 12 || fail "case 3: step 12 is not complete on disk"
read -r newest _ < <(complete_versions | sed -n 1p)
read -r _ older < <(complete_versions | sed -n 2p)
[ -n "$older" ] || { complete_versions; fail "case 3: no second complete version on disk"; }
newest=$PERSIST/$FT_JOB/$newest
printf '\x5a' | dd of="$newest/rank1" bs=1 seek=1000 conv=notrunc status=none ||
  fail "case 3: cannot damage $newest/rank1"
up c3 4
launch c3.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c3.b 0 "relaunch over a damaged newest version"
expect_line c3.b "persisted version [0-9]+ \\(step 12\\) cannot be restored: .*$(basename "$newest")/rank1: block 0" "the damaged file named"
expect_resumed c3.b "$older" "$older" "relaunch"
expect_digest c3.b "resumed from the older version"
ok "step 12's rank1 damaged: named, resumed from step $RESUMED, digest $REF"

begin "4. an SMP killed in the middle of a flush: the version before is whole and used"
up c4 4
export FT_JOB=midflush$$
FT_FAULT=flush:3@h2 launch c4.a "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
[ "$RC" -ne 0 ] || die_with c4.a "h2's SMP killed in its third flush: the job still ended well"
expect_line c4.a "fault point 'flush'" "the fault fired"
complete=$(ls "$PERSIST/$FT_JOB"/v*/MANIFEST 2>/dev/null | wc -l)
dirs=$(ls -d "$PERSIST/$FT_JOB"/v*.e* | wc -l)
[ "$complete" -ge 1 ] && [ "$dirs" -gt "$complete" ] ||
  { ls -lR "$PERSIST/$FT_JOB"; fail "case 4: expected complete versions and the interrupted one ($complete of $dirs)"; }
read -r _ newest < <(complete_versions | sed -n 1p)
up c4 4
launch c4.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c4.b 0 "relaunch on a new cluster"
expect_line c4.b 'restoring from the disk tier' "relaunch"
expect_resumed c4.b "$newest" "$newest" "relaunch"
expect_digest c4.b "resumed from the version before the interrupted flush"
ok "flush interrupted on h2: resumed from step $RESUMED, digest $REF"

begin "5. a persist directory that cannot be written: reported, training goes on"
up c5 4
export FT_JOB=blocked$$
mkdir -m 700 "$PERSIST/$FT_JOB" || fail "mkdir"
# The job's directory immutable (chattr +i: not even root writes in it):
# every flush fails to make its version's directory.
trap 'chattr -i "$PERSIST/$FT_JOB" 2>/dev/null; cleanup' EXIT
chattr +i "$PERSIST/$FT_JOB" 2>/dev/null ||
  { echo "SKIP case 5: chattr +i is not supported on $PERSIST"; exit 0; }
launch c5.a 12 --job "$FT_JOB" --persist "$PERSIST"
chattr -i "$PERSIST/$FT_JOB"
expect_rc c5.a 0 "12 steps while no flush can be written"
expect_line c5.a "flush of version 1 failed: .*$PERSIST/$FT_JOB/v1\\.e1: mkdir: Operation not permitted; training goes on" "the SMP's log"
[ "$(grep -c 'flush of version [0-9]* failed' "$WORK/c5.a")" -eq 4 ] ||
  die_with c5.a "case 5: one warning per SMP expected, the same failure again only counted"
ft-cluster exec --name "$CL" h1 ft-status --job "$FT_JOB" >"$WORK/c5.status" 2>&1 ||
  { cat "$WORK/c5.status"; fail "case 5: ft-status on h1"; }
expect_line c5.status '^disk tier: 0 flush\(es\) \(0 abandoned, [1-9][0-9]* failed\)' "ft-status"
expect_line c5.status '^disk tier: flush of version [0-9]+ failed: ' "ft-status's message"
ok "every flush failed, each reported in the log and ft-status; the job ended well"

begin "6. a 4-node job's version on disk restored onto 3 nodes"
up c6 4
# The reference: 12 steps on 4 nodes, shrunk in memory to h1 h2 h3
# (ft-restore --mode shrink, h4 left out), 8 more steps there.
export FT_JOB=ref6$$
launch c6.r1 12 --job "$FT_JOB"
expect_rc c6.r1 0 "reference: 12 steps on 4 nodes"
restore "h1 h2 h3" c6.r2 --mode shrink
expect_rc c6.r2 0 "reference: ft-restore --mode shrink on h1 h2 h3"
on "h1 h2 h3" 2 c6.r3 ft-train-example --steps "$STEPS" "${TRAIN_ARGS[@]}"
expect_rc c6.r3 0 "reference: relaunch on h1 h2 h3"
expect_resumed c6.r3 12 12 "reference"
REF=$(digest_of c6.r3)
[ -n "$REF" ] || die_with c6.r3 "reference printed no digest"
export FT_JOB=fewer$$
launch c6.a 12 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c6.a 0 "12 steps on 4 nodes with --persist"
persisted 12 || fail "case 6: step 12 is not complete on disk"
up c6 3
launch c6.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c6.b 0 "relaunch on 3 nodes"
expect_line c6.b 'restoring from the disk tier, version [0-9]+ \(step 12\)' "relaunch"
expect_resumed c6.b 12 12 "relaunch"
expect_digest c6.b "4 -> 3 nodes from disk"
ok "re-sliced from disk onto 3 nodes: the digest of the in-memory shrink, $REF"

begin "7. a bit flipped in memory before the final flush: never published"
up c7 4
REF=$REF4
export FT_JOB=flip$$ FT_PERSIST_EVERY=1000   # the first commit, then the end
# Held before the commit of step 4, which would take the slot of step 2
# (and cancel its flush), until step 2 is on disk, however slow the
# machine; then held at step 8 for the fault.
launch_held c7.a 8 phase=commit,step=4 --job "$FT_JOB" --persist "$PERSIST"
chaos c7.a.held heal h4 --keep-held
deadline=$((SECONDS + LIMIT))
until persisted 2; do
  [ $SECONDS -lt $deadline ] || { ls -lR "$PERSIST/$FT_JOB"; fail "case 7: the version of step 2 is not on disk in $LIMIT s"; }
  sleep 0.2
done
rehold "h1 h2 h3 h4" step=8
chaos c7.a corrupt h2 data
finish
expect_rc c7.a 0 "8 steps, a data chunk of step 8 flipped on h2"
expect_line c7.a 'slot[01]: data chunk 0 of version 4 fails its CRC in memory' "the final flush on h2"
! persisted 8 || { ls -lR "$PERSIST/$FT_JOB"; fail "case 7: the flipped version of step 8 was published"; }
persisted 2 || { ls -lR "$PERSIST/$FT_JOB"; fail "case 7: the version of step 2 is not on disk"; }
up c7 4
launch c7.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c7.b 0 "relaunch on a new cluster"
expect_line c7.b 'restoring from the disk tier, version 1 \(step 2\)' "relaunch"
expect_resumed c7.b 2 2 "relaunch"
expect_digest c7.b "resumed from step 2"
export FT_PERSIST_EVERY=1
ok "the flipped version was not published; resumed from step 2, digest $REF"

begin "8. a host lost during a restore from disk, before the first commit"
up c8 4
REF=$REF4
export FT_JOB=again$$
launch c8.a 12 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c8.a 0 "12 steps with --persist"
persisted 12 || fail "case 8: step 12 is not complete on disk"
up c8 4 --spares 1
launch_held c8.b "$STEPS" phase=snapshot,step=14 --job "$FT_JOB" --persist "$PERSIST" --spares 1 --restarts 1
chaos c8.b kill-node h2
finish
expect_rc c8.b 0 "h2 lost before the first commit of a restore from disk, --restarts 1"
expect_line c8.b 'ft-restore: .*the disk tier takes over: the relaunch resumes from version [0-9]+ \(step 12\)' "ft-restore"
[ "$(grep -c 'restoring from the disk tier, version [0-9]* (step 12)' "$WORK/c8.b")" -eq 2 ] ||
  die_with c8.b "case 8: expected two restores from disk (the first launch and the relaunch)"
expect_resumed c8.b 12 12 "relaunch"
expect_digest c8.b "resumed from disk twice"
ok "h2 lost during the restore from disk: restored from disk again, digest $REF"

begin "9. an SMP killed in the final flush: the relaunch flushes the version it restored"
up c9 4
REF=$REF4
export FT_JOB=final$$ FT_PERSIST_EVERY=1000
FT_FAULT=flush:2@h2 launch c9.a 12 --job "$FT_JOB" --persist "$PERSIST" --restarts 1
expect_rc c9.a 0 "h2's SMP killed in its final flush, --restarts 1"
expect_line c9.a "fault point 'flush'" "the fault fired"
expect_resumed c9.a 12 12 "relaunch from memory"
persisted 12 || { complete_versions; fail "case 9: the relaunch did not flush the version of step 12 it restored"; }
up c9 4
launch c9.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c9.b 0 "relaunch on a new cluster"
expect_resumed c9.b 12 12 "relaunch from disk"
expect_digest c9.b "resumed from step 12 on disk"
export FT_PERSIST_EVERY=1
ok "the final flush redone by the relaunch; resumed from step 12, digest $REF"

# mark HOSTS: ft-restore's marker (restore.disk) in the store of each host
mark() {
  local h
  for h in $1; do
    # shellcheck disable=SC2016 # expands on the host
    ft-cluster exec --name "$CL" "$h" sh -c 'printf %s "$0" >"/dev/shm/ftrt/$FT_JOB/restore.disk"' "$PERSIST" ||
      fail "cannot mark $h"
  done
}

begin "10. stale markers beside held stores: removed, memory decides"
up c10 4
REF=$REF4
export FT_JOB=stale$$
launch c10.a 8 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c10.a 0 "8 steps"
mark "h1 h2"
launch c10.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
expect_rc c10.b 0 "relaunch with markers on h1 and h2"
expect_line c10.b 'restore.disk: ignored and removed, another node holds a store' "the stale marker"
expect_no_line c10.b 'restoring from the disk tier' "relaunch"
expect_resumed c10.b 8 8 "relaunch from memory"
expect_digest c10.b "resumed from memory"
ok "markers on h1 and h2 only: removed; resumed from step 8 in memory, digest $REF"

begin "11. markers everywhere, every version on disk damaged: refused, nothing changed"
up c11 4
export FT_JOB=nodisk$$
launch c11.a 8 --job "$FT_JOB" --persist "$PERSIST"
expect_rc c11.a 0 "8 steps"
for f in "$PERSIST/$FT_JOB"/v*/rank0; do
  printf '\x5a' | dd of="$f" bs=1 seek=100 conv=notrunc status=none || fail "damage $f"
done
mark "h1 h2 h3 h4"
# what a later recovery needs: every file but the control segment (ctl,
# ctl.bufs<i>), which each launch makes anew
kept_md5() { store_md5 "$1" | grep -v '  ctl'; }
for h in h1 h2 h3 h4; do kept_md5 "$h" >"$WORK/c11.md5.$h"; done
launch c11.b "$STEPS" --job "$FT_JOB" --persist "$PERSIST"
[ "$RC" -ne 0 ] || die_with c11.b "every version on disk damaged: the relaunch did not refuse"
expect_line c11.b "every persisted version under .* is damaged .* Nothing was started, nothing changed" "the refusal"
expect_no_line c11.b '^resumed from step|^fresh start' "the refused launch"
for h in h1 h2 h3 h4; do
  [ "$(kept_md5 "$h")" = "$(cat "$WORK/c11.md5.$h")" ] ||
    fail "case 11: the store of $h changed though the launch was refused"
done
ok "refused; the stores of every host unchanged"
