#!/usr/bin/env bash
# Chaos on 4 hosts (k=3, m=1) + 2 spares: recovery by hand (what ft-launch
# --restarts does: ft-restore with one rank per host of the new node set,
# then the relaunch), and what must be refused.
#  10. a host is lost; ft-restore onto spare s1 dies in the middle of the
#      rebuild (FT_FAULT=restore@s1, s1 kills its own ft-restore):
#      a. in the middle of a chunk (256K pieces), and ft-restore runs again
#         on the same node set over s1's partly written store: it succeeds;
#         the relaunch resumes from step 8 with the fault-free digest;
#      b. after its first chunk (default 1 MiB pieces), then s1 dies as a
#         host and ft-restore runs again with spare s2 instead: the same.
#  11. m+1 = 2 hosts of the group lost (h1, h2):
#      a. ft-restore on s1 s2 h3 h4 exits 3 naming the group, the lost hosts
#         and the version; the survivors' stores are unchanged byte for byte
#         and nothing was written on the spares;
#      b. the same loss under ft-launch --restarts 1 --spares 2: it gives up
#         with exit 3 and says why;
#      c. only mpirun's daemon on h1 dies (h1 and its store stay) as h2 is
#         lost: mpirun names h1 lost, the relaunch's rebuild is refused (too
#         many losses), but before ft-restore runs on its own ft-launch finds
#         h1 answering, keeps it, rebuilds h2 on s1, and the job resumes from
#         step 8 with the fault-free digest (exit 3 before).
#      d. only mpirun's daemon on h1 dies, under --restore-job: h1 is taken
#         as lost on mpirun's word, then answers before ft-restore runs, and
#         every host is kept: ft-launch says so (before: "no host was lost
#         (a process failed)"), ft-restore finds nothing to rebuild, and the
#         job resumes from step 8 with the fault-free digest.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
STEPS=12 EVERY=2
TRAIN_ARGS=(--snapshot-every "$EVERY" --state-mb 4)
up crestore 4 --spares 2
begin "fault-free reference: 4 hosts, 3+1, $STEPS steps"
reference ref "$STEPS"
ok "fault-free digest $REF"

# killed_restore LOST SET PIECE: the job runs 8 steps and ends, host LOST
# is killed, ft-restore on SET (FT_PIECE_SIZE=PIECE) dies in the middle of
# rebuilding onto s1.  The fault point comes after the middle piece of the
# first chunk: with 256K pieces the 1 MiB chunk is left half written; with
# the default 1 MiB piece, after the first whole chunk of 4.
killed_restore() {
  local log=$FT_JOB
  launch "$log.1" 8 --job "$FT_JOB"
  expect_rc "$log.1" 0 "first 8 steps"
  ft-cluster kill "$1" --name "$CL" >/dev/null || fail "ft-cluster kill $1"
  FT_PIECE_SIZE=$3 FT_FAULT=restore@s1 restore "$2" "$log.2"
  [ "$RC" -ne 0 ] || die_with "$log.2" "ft-restore with FT_FAULT=restore@s1 exited 0"
  expect_line "$log.2" "^ftrt: fault point 'restore' \(FT_FAULT\) kills pid [0-9]+$" "kill during ft-restore"
  expect_line "$log.2" "^ft-restore: lost node [0-3] \($1, group 0 position [0-3]\) -> s1$" "kill during ft-restore"
  expect_no_line "$log.2" '^ft-restore: restored version' "kill during ft-restore"
}
# rerun SET SPARE LOST: ft-restore on SET without the fault rebuilds LOST
# onto SPARE; the relaunch on SET resumes from step 8 with the digest.
rerun() {
  local log=$FT_JOB
  restore "$1" "$log.3"
  expect_rc "$log.3" 0 "ft-restore run again"
  expect_line "$log.3" "^ft-restore: lost node [0-3] \($3, group 0 position [0-3]\) -> $2$" "ft-restore run again"
  expect_line "$log.3" '^ft-restore: restored version 4 \(step 8\): 1 lost node\(s\), 0 corrupt chunk\(s\), ' "ft-restore run again"
  on "$1" 2 "$log.4" ft-train-example --steps "$STEPS" "${TRAIN_ARGS[@]}"
  expect_rc "$log.4" 0 "relaunch on $1"
  expect_resumed "$log.4" 8 8 "relaunch on $1"
  expect_digest "$log.4" "relaunch on $1"
}

begin "10a. h2 lost; ft-restore onto s1 killed mid-chunk; run again on the same hosts"
export FT_JOB=restore-again
killed_restore h2 "h1 s1 h3 h4" 256K
rerun "h1 s1 h3 h4" s1 h2
ok "ft-restore killed mid-rebuild, run again: restored, resumed from step 8, digest matches"

begin "10b. h3 lost; ft-restore onto s1 killed mid-rebuild, then s1 dies; run again with s2"
up crestore 4 --spares 2
export FT_JOB=restore-spare
killed_restore h3 "h1 h2 s1 h4" 1M
ft-cluster kill s1 --name "$CL" >/dev/null || fail "ft-cluster kill s1"
rerun "h1 h2 s2 h4" s2 h3
ok "spare lost in the middle of ft-restore, run again on s2: restored, resumed from step 8, digest matches"

begin "11a. h1 and h2 lost (m+1 of the group): ft-restore by hand on s1 s2 h3 h4"
up crestore 4 --spares 2
export FT_JOB=too-many
launch tm1 8 --job "$FT_JOB"
expect_rc tm1 0 "first 8 steps"
for h in h1 h2; do ft-cluster kill "$h" --name "$CL" >/dev/null || fail "ft-cluster kill $h"; done
for h in h3 h4; do
  store_md5 "$h" >"$WORK/md5.$h"
  grep -q ' slot[01]$' "$WORK/md5.$h" || { cat "$WORK/md5.$h"; fail "no store of $FT_JOB on $h"; }
done
restore "s1 s2 h3 h4" tm2
expect_rc tm2 3 "ft-restore with 2 of 4 hosts of a 3+1 group lost"
expect_line tm2 '^ft-restore: group 0 lost 2 chunks of stripe [0-3] but m=1: lost hosts \[h1, h2\]; version 4 \(step 8\) cannot be rebuilt; nothing was changed' "too many losses"
expect_no_line tm2 '^ft-restore: \[[0-9]+/[0-9]+\]' "too many losses: no chunk rebuilt"
for h in h3 h4; do
  store_md5 "$h" | diff "$WORK/md5.$h" - >"$WORK/md5.diff" ||
    { cat "$WORK/md5.diff"; fail "the store of survivor $h changed after ft-restore exit 3"; }
done
for h in s1 s2; do
  ft-cluster exec --name "$CL" "$h" test ! -e "/dev/shm/ftrt/$FT_JOB" ||
    fail "ft-restore exit 3 left a store of $FT_JOB on spare $h"
done
ok "2 lost in a 3+1 group: exit 3, group 0 and h1, h2 named, survivors unchanged, spares untouched"

begin "11b. h1 and h2 lost while the job runs: ft-launch --restarts 1 --spares 2 gives up"
up crestore 4 --spares 2
export FT_JOB=too-many-launch
# --timeout 10: the watchdog ends the mpirun left waiting on h1 (kill_two).
launch_held tl 32 step=8 --job "$FT_JOB" --restarts 1 --spares 2 --timeout 10
kill_two h1 h2 tl
finish
expect_rc tl 3 "ft-launch --restarts 1 after losing 2 hosts of a 3+1 group"
expect_line tl '^ft-launch: lost host\(s\): *h1 h2 *; replacing them with spare\(s\) s1 s2$' "too many losses"
expect_line tl '^ft-restore: group 0 lost 2 chunks of stripe [0-3] but m=1: lost hosts \[h1, h2\]; version [0-9]+ \(step [0-9]+\) cannot be rebuilt; nothing was changed' "too many losses"
expect_line tl '^ft-launch: ft-restore: too many losses, the job cannot be recovered \(exit 3\)$' "too many losses"
# The relaunch's SMPs try the rebuild in ft_init first: refused there,
# having changed nothing, it ends the relaunch; ft-restore on its own then
# says why, with exit 3, and nothing runs on.
expect_line tl '^ftrt\[[a-z0-9]+ r[0-9]+ smp\] error: ft_init: the rebuild of the recovery \(FT_REBUILD=replace\): group 0 lost 2 chunks of stripe [0-3] but m=1: lost hosts \[h1, h2\]; .*nothing was changed$' "the rebuild in the relaunch refused"
expect_line tl '^ft-launch: restart 1 of 1: the relaunch ended \(status [0-9]+\) before its rebuild was done: running ft-restore on its own$' "ft-restore decides"
expect_no_line tl '^resumed from step' "too many losses"
expect_no_line tl '^digest ' "too many losses"
ok "ft-launch gave up with exit 3, naming group 0 and h1, h2"

begin "11c. mpirun's daemon on h1 killed (h1 alive) and h2 lost: h1 kept, h2 rebuilt on s1"
up crestore 4 --spares 2
export FT_JOB=daemon-lost
# h2 is cut off first, the job held at step 8: mpirun cannot end the job
# before h2 is killed (it waits for h2's daemon, until the watchdog), so
# that both losses are of the same failure, whatever the machine's speed.
launch_held dl "$STEPS" step=8 --job "$FT_JOB" --restarts 1 --spares 2 --timeout 10
chaos dl partition h2 --keep-held
ft-chaos kill-daemon h1 --job "$FT_JOB" >"$WORK/dl.daemon" 2>&1 || { cat "$WORK/dl.daemon"; fail "ft-chaos kill-daemon h1"; }
ft-cluster kill h2 --name "$CL" >/dev/null || fail "ft-cluster kill h2"
finish
expect_rc dl 0 "ft-launch --restarts 1 after h1's daemon and h2 were lost"
expect_line dl '^ft-launch: lost host\(s\): *h1 h2 *; replacing them with spare\(s\) s1 s2$' "both taken as lost first"
expect_line dl '^ft-launch: \[\+[0-9.]+s\] mpirun lost its daemon on h1, but 1 host\(s\) answer a ping from the head now: putting them back in the job$' "h1 answers"
expect_line dl '^ft-launch: lost host\(s\): *h2 *; replacing them with spare\(s\) s1$' "h1 kept"
expect_line dl '^ft-restore: lost node 1 \(h2, group 0 position [0-3]\) -> s1$' "h2 rebuilt on s1"
expect_no_line dl 'cannot be recovered \(exit 3\)' "h1 kept"
expect_no_line dl '^ft-restore: group 0 lost 2 chunks' "h1 kept before ft-restore ran on its own"
expect_resumed dl 8 8 "h1 kept, h2 rebuilt on s1"
expect_digest dl "h1 kept, h2 rebuilt on s1"
ok "h1's daemon lost but h1 alive: kept; h2 rebuilt on s1, resumed from step 8, digest matches"

begin "11d. only mpirun's daemon on h1 killed, --restore-job: every host kept"
up crestore 4 --spares 2
export FT_JOB=daemon-only
launch_held dd "$STEPS" step=8 --job "$FT_JOB" --restarts 1 --spares 2 --restore-job
# Held until mpirun ends the job (it lost h1's daemon): the job cannot go
# past step 8 meanwhile, however fast the machine.
chaos dd kill-daemon h1 --keep-held
finish
expect_rc dd 0 "ft-launch --restarts 1 --restore-job after h1's daemon was killed"
expect_line dd '^ft-launch: lost host\(s\): *h1 *; replacing them with spare\(s\) s1$' "h1 taken as lost first"
expect_line dd '^ft-launch: \[\+[0-9.]+s\] mpirun lost its daemon on h1, but 1 host\(s\) answer a ping from the head now: putting them back in the job$' "h1 answers"
expect_line dd '^ft-launch: every host taken as lost answers: relaunching on the same hosts$' "every host kept"
expect_no_line dd 'no host was lost \(a process failed\)' "every host kept"
expect_line dd '^ft-restore: every node holds version [0-9]+ \(step 8\) whole: nothing to do$' "nothing rebuilt"
expect_line dd '^ft-launch: \[\+[0-9.]+s\] done: success after 1 restart\(s\): relaunched on the same hosts \(h1 put back\)$' "the last line"
expect_resumed dd 8 8 "every host kept"
expect_digest dd "every host kept"
ok "only h1's daemon lost: h1 put back, every host kept, nothing rebuilt, resumed from step 8, digest matches"
echo "PASS: chaos on 4 hosts, recovery by hand and refusal"
