#!/usr/bin/env bash
# ft-launch on this host (no cluster, no root needed): the command line it
# builds, the FT_* variables the ranks see, virtual nodes, exit statuses and
# usage errors.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_mpi
L=$FT_LAUNCH

expect_rc() {  # expect_rc RC MESSAGE-PATTERN ARGS...: ft-launch ARGS fails so
  local want=$1 pat=$2 rc; shift 2
  "$L" "$@" >"$WORK/rc.out" 2>&1; rc=$?
  [ $rc -eq "$want" ] || { cat "$WORK/rc.out"; fail "ft-launch $*: exit $rc, expected $want"; }
  grep -q -- "$pat" "$WORK/rc.out" || { cat "$WORK/rc.out"; fail "ft-launch $*: no '$pat'"; }
}

grep -q -- '--restarts R' <<<"$("$L" --help)" || fail "--help"
expect_rc 2 'no PROGRAM' --nodes 2
expect_rc 2 'expected a number' --restarts x -- true
expect_rc 2 'needs at least 4 nodes' --nodes 2 --ec 3+1 -- true
FT_EC_K=3 FT_EC_M=1 expect_rc 2 'FT_EC_K=3 FT_EC_M=1 needs at least 4 nodes' --nodes 2 -- true
FT_EC_K=0 FT_EC_M=1 expect_rc 2 'expected K >= 1' --nodes 2 -- true
expect_rc 2 'expected K+M' --ec 3 -- true
expect_rc 2 'job name' --job 'a/b' -- true
expect_rc 2 'timeout' --timeout 0 -- true
expect_rc 2 'exclude each other' --cluster --hostfile /dev/null -- true
expect_rc 2 'unknown option' --frobnicate -- true
expect_rc 2 '--ppn' --ppn 0 -- true
ok "usage errors exit 2 with a message"

# A command line whose options cannot all be ft-launch's is refused before
# anything starts: an option of ft-launch's after PROGRAM and before "--"
# (it would reach the program, and ft-launch would do something else than
# asked); --cluster C names the cluster when PROGRAM follows a later "--".
expect_rc 2 "--dry-run comes after PROGRAM 'prog' and before '--'" --nodes 2 prog --dry-run -- x
out=$("$L" --dry-run --nodes 2 prog -- x) || fail "a program's own '--' refused"
[[ $out == *" prog -- x "* ]] || fail "a program's own '--' did not reach it: $out"
expect_rc 1 "no cluster 'nolaunch$$'" --cluster "nolaunch$$" --dry-run -- true
"$L" --dry-run --timeout 1e2 -- x >/dev/null || fail "--timeout 1e2 (a number, as FT_TIMEOUT takes it) refused"
expect_rc 2 "--dry-run takes no value (--dry-run=yes)" --dry-run=yes -- true
expect_rc 2 "--cluster=: no cluster name" --cluster= -- true
# --cluster C: C is the cluster when "--" or an option follows it, else the program
expect_rc 1 "no cluster 'nolaunch$$'" --cluster "nolaunch$$" --nodes 2 prog
FT_CLUSTER=nolaunchb$$ expect_rc 1 "no cluster 'nolaunchb$$'" --cluster python3 train.py -- --lr 1
# ft-chaos checks its words before it touches a host.
for bad in "--when phase=bogus" "--when step=x" "--cluster" "--cluster=Bad_1"; do
  # shellcheck disable=SC2086
  ft-chaos kill-rank 0 --job none $bad >"$WORK/chaos.out" 2>&1; rc=$?
  [ $rc -eq 2 ] || { cat "$WORK/chaos.out"; fail "ft-chaos kill-rank 0 $bad: exit $rc, expected 2"; }
done
"$L" --dry-run --nodes 2 --persist "$WORK/dry-persist" -- x >/dev/null || fail "--dry-run --persist"
[ ! -e "$WORK/dry-persist" ] || fail "--dry-run made the --persist directory"
ok "options after PROGRAM refused (exit 2); --cluster C before '--' names the cluster; a dry run makes nothing"

# A tool run (--one-per-node) on fewer nodes than the job's code needs:
# ft-restore reads the code from the stores.  A 3+1 job of 4 virtual nodes
# (FT_EC_K/FT_EC_M exported, as the README shows), then ft-restore --mode
# shrink --dry-run on 3 of them.
FT_EC_K=3 FT_EC_M=1 FT_STORE_ROOT=$WORK/ecstore "$L" --nodes 4 --job ectool -- \
  ft-train-example --steps 10 --snapshot-every 5 --state-mb 1 >"$WORK/ec4.out" 2>&1 ||
  { cat "$WORK/ec4.out"; fail "a 3+1 job on 4 virtual nodes"; }
FT_EC_K=3 FT_EC_M=1 FT_STORE_ROOT=$WORK/ecstore "$L" --nodes 3 --one-per-node --job ectool -- \
  ft-restore --job ectool --mode shrink --dry-run >"$WORK/ec3.out" 2>&1 ||
  { cat "$WORK/ec3.out"; fail "ft-restore --mode shrink on 3 nodes of a 3+1 job refused"; }
grep -qx 'ft-restore: dry run, nothing changed' "$WORK/ec3.out" ||
  { cat "$WORK/ec3.out"; fail "ft-restore --dry-run did not run"; }
ok "FT_EC_K=3 FT_EC_M=1: ft-launch --one-per-node on 3 nodes runs ft-restore --mode shrink"
# A failing program is retried: ft-restore runs (and here finds no store).
FT_STORE_ROOT=$WORK/store expect_rc 1 'restart 1 of 1: attempt failed with status 1; recovering' --restarts 1 --job none -- false
grep -q "ft-restore failed" "$WORK/rc.out" || { cat "$WORK/rc.out"; fail "--restarts did not run ft-restore"; }
ok "--restarts: a failed attempt runs ft-restore before relaunching"

out=$("$L" --dry-run --nodes 3 --ppn 2 -- prog a b) || fail "--dry-run"
for w in ' -np 9 ' ' -x FT_VIRTUAL_NODE_RANKS ' ' -x FT_JOB ' ' -x FT_TIMEOUT ' ' --oversubscribe '; do
  [[ " $out " == *"$w"* ]] || fail "local dry run lacks '$w': $out"
done
[[ $out == *" prog a b "* ]] || fail "program not last: $out"
printf 'n1 slots=8\n# comment\n\nn2\nn3 slots=1\n' >"$WORK/hosts"
out=$("$L" --dry-run --hostfile "$WORK/hosts" --nodes 2 --ppn 1 -- prog) || fail "--dry-run --hostfile"
[ "$(grep '^# hostfile:' <<<"$out" | tr '\n' ';')" = "# hostfile: n1 slots=2;# hostfile: n2 slots=2;" ] ||
  fail "hostfile of the job: $out"
for w in ' --map-by ppr:2:node ' ' -np 4 '; do
  [[ " $out " == *"$w"* ]] || fail "hostfile dry run lacks '$w': $out"
done
printf 'localhost slots=2 domain=rack9\n' >"$WORK/racks"
# Each rank writes what it sees to a file of its own: two ranks' env
# output on one stdout can interleave mid-line on a loaded machine.
"$L" --hostfile "$WORK/racks" --ppn 1 -- sh -c \
  'env | grep "^FT_FAILURE_DOMAINS=" >"$0.$OMPI_COMM_WORLD_RANK"' "$WORK/dom" 2>/dev/null ||
  fail "hostfile with a domain label"
[ "$(cat "$WORK/dom.0" "$WORK/dom.1" 2>/dev/null | grep -c '^FT_FAILURE_DOMAINS=localhost=rack9$')" -eq 2 ] ||
  fail "domain=rack9 of the hostfile did not reach both ranks as FT_FAILURE_DOMAINS"
ok "a hostfile's domain= label reaches every rank as FT_FAILURE_DOMAINS"
expect_rc 1 'names 3 hosts' --hostfile "$WORK/hosts" --nodes 4 -- true
ok "mpirun command: -np N*(P+1), ppr:(P+1):node on the first N hosts, -x FT_*"

FT_EXTRA_T=x$$ "$L" --nodes 2 --ppn 1 --job lj --ec 1+1 --timeout 9 -- sh -c \
  'echo "env $OMPI_COMM_WORLD_RANK $FT_VIRTUAL_NODE_RANKS $FT_JOB $FT_EC_K+$FT_EC_M $FT_TIMEOUT $FT_EXTRA_T"' \
  >"$WORK/env.out" 2>&1 || { cat "$WORK/env.out"; fail "local run"; }
grep -qx 'ft-launch: 2 nodes x (1 trainer + 1 SMP) = 4 ranks, job lj' "$WORK/env.out" ||
  { cat "$WORK/env.out"; fail "no summary line"; }
got=$(grep '^env ' "$WORK/env.out" | sort -k2n | tr '\n' ';')
want="env 0 2 lj 1+1 9 x$$;env 1 2 lj 1+1 9 x$$;env 2 2 lj 1+1 9 x$$;env 3 2 lj 1+1 9 x$$;"
[ "$got" = "$want" ] || { cat "$WORK/env.out"; fail "ranks saw: $got"; }
ok "virtual nodes: 4 ranks, FT_VIRTUAL_NODE_RANKS=2, FT_* reach every rank"

"$L" --ppn 2 -- "$MPI_NODES" --mb 1 --expect-nodes 1 --expect-ppn 3 >"$WORK/one.out" 2>&1 ||
  { cat "$WORK/one.out"; fail "one node, 2 trainers"; }
grep -q '^mpi_nodes: 3 ranks on 1 nodes' "$WORK/one.out" || { cat "$WORK/one.out"; fail "one node layout"; }
FT_JOB=fromenv "$L" -- true >"$WORK/job.out" 2>&1 || fail "FT_JOB from the environment"
grep -qx 'ft-launch: 1 node x (1 trainer + 1 SMP) = 2 ranks, job fromenv' "$WORK/job.out" ||
  { cat "$WORK/job.out"; fail "FT_JOB from the environment is not the default job"; }
"$L" --ppn 1 -- sh -c 'exit 3' >"$WORK/st.out" 2>&1; rc=$?
[ $rc -eq 3 ] || { cat "$WORK/st.out"; fail "a rank's exit 3 came back as $rc"; }
ok "one node of P+1 ranks; FT_JOB default from the environment; exit status kept"

# Output a person can read (issue 15.5).  mpirun's own banners ("Primary job
# terminated normally, but 1 process returned a non-zero exit code...") are
# hidden unless --verbose; the program's stdout and stderr come through
# whole; ft-launch says what it does with elapsed times.
prog='echo "out $OMPI_COMM_WORLD_RANK"; echo "err $OMPI_COMM_WORLD_RANK" >&2; [ "$OMPI_COMM_WORLD_RANK" != 3 ] || exit 5'
"$L" --nodes 2 --ppn 1 -- sh -c "$prog" >"$WORK/quiet.out" 2>&1; rc=$?
[ $rc -eq 5 ] || { cat "$WORK/quiet.out"; fail "a rank's exit 5 came back as $rc"; }
for r in 0 1 2 3; do
  grep -qx "out $r" "$WORK/quiet.out" && grep -qx "err $r" "$WORK/quiet.out" ||
    { cat "$WORK/quiet.out"; fail "rank $r's stdout or stderr line is missing"; }
done
! grep -Eq 'Primary job|^-{20,}$|mpirun detected' "$WORK/quiet.out" ||
  { cat "$WORK/quiet.out"; fail "mpirun's banner reached the user without --verbose"; }
grep -Eq '^ft-launch: \[\+[0-9]+\.[0-9]s\] attempt 1: mpirun started$' "$WORK/quiet.out" &&
  grep -Eq '^ft-launch: \[\+[0-9]+\.[0-9]s\] attempt 1 ended after [0-9]+\.[0-9] s: exit status 5$' "$WORK/quiet.out" ||
  { cat "$WORK/quiet.out"; fail "no timed 'attempt 1: mpirun started' / 'attempt 1 ended' lines"; }
grep -qx 'ft-launch: job failed: mpirun exit status 5' "$WORK/quiet.out" ||
  { cat "$WORK/quiet.out"; fail "no 'job failed' line"; }
"$L" --verbose --nodes 2 --ppn 1 -- sh -c "$prog" >"$WORK/verbose.out" 2>&1; rc=$?
[ $rc -eq 5 ] || { cat "$WORK/verbose.out"; fail "--verbose: exit $rc, expected 5"; }
grep -q 'Primary job  *terminated normally' "$WORK/verbose.out" && grep -q '^ft-launch: + mpirun ' "$WORK/verbose.out" ||
  { cat "$WORK/verbose.out"; fail "--verbose hides mpirun's banner or its command line"; }
# Shown as mpirun wrote it (between its lines of dashes), every rank's
# lines kept, and not summed up again
[ "$(grep -Ec '^-{74}$' "$WORK/verbose.out")" -ge 2 ] &&
  ! grep -q '^ft-launch: mpirun said:' "$WORK/verbose.out" ||
  { cat "$WORK/verbose.out"; fail "--verbose: the banner not as mpirun wrote it, or summed up again"; }
for r in 0 1 2 3; do
  grep -qx "out $r" "$WORK/verbose.out" && grep -qx "err $r" "$WORK/verbose.out" ||
    { cat "$WORK/verbose.out"; fail "--verbose: rank $r's stdout or stderr line is missing"; }
done
ok "mpirun's banners hidden (shown with --verbose); every rank's lines and the exit status kept"

# A failed attempt whose banner says why mpirun could not start: one line of it.
printf 'localhost slots=1\n' >"$WORK/one"
"$L" --hostfile "$WORK/one" --mpirun-arg --nooversubscribe -- true >"$WORK/slots.out" 2>&1
[ $? -ne 0 ] || { cat "$WORK/slots.out"; fail "mpirun accepted two mapping policies"; }
grep -Eq '^ft-launch: mpirun said: .+ \(--verbose shows its messages\)$' "$WORK/slots.out" &&
  ! grep -Eq '^-{20,}$' "$WORK/slots.out" ||
  { cat "$WORK/slots.out"; fail "mpirun's refusal not summed up in one line"; }
ok "a refusal of mpirun is summed up in one 'mpirun said:' line"

# The filter neither holds back nor reorders the program's stderr: a line is
# seen while the program still runs (it waits for the test to see it).
run_bg live "$L" --ppn 1 -- sh -c \
  'echo "live $OMPI_COMM_WORLD_RANK" >&2; i=0; while [ ! -e "$0" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; echo "after $OMPI_COMM_WORLD_RANK" >&2' \
  "$WORK/go"
wait_for "$WORK/live.out" '^live 1$' 60 "$BG"
grep -q '^after' "$WORK/live.out" && fail "the program went on before it was let go"
touch "$WORK/go"
wait_pid "$BG" 120 || fail "ft-launch still runs after the program was let go"
[ "$RC" -eq 0 ] || { cat "$WORK/live.out"; fail "exit $RC"; }
[ "$(grep -n '' "$WORK/live.out" | grep -E ':(live|after) 1$' | cut -d: -f2- | tr '\n' ';')" = 'live 1;after 1;' ] ||
  { cat "$WORK/live.out"; fail "rank 1's stderr lines out of order"; }
ok "the program's stderr comes through at once and in order"

# mpirun's standard output goes through ft-launch (read for the launcher's
# messages): a reader that stalls must not stop ft-launch from answering a
# signal, and at a signal's end mpirun's last output still comes through.
# FT_MPIRUN runs FAKE_PROG as the launcher itself.
printf '#!/bin/sh\nexec sh -c "$FAKE_PROG"\n' >"$WORK/fakempi"
chmod +x "$WORK/fakempi"
mkfifo "$WORK/stall"
exec 7<>"$WORK/stall"   # a reader that never reads
FAKE_PROG="head -c 300000 /dev/zero; echo wrote >'$WORK/wrote'; exec sleep 600" \
  FT_MPIRUN=$WORK/fakempi "$L" --one-per-node -- x >"$WORK/stall" 2>"$WORK/stall.err" &
BG=$!; BG_PIDS+=("$BG")
# the program took 300 kB past the stalled reader: ft-launch queued them
wait_for "$WORK/wrote" '^wrote$' 60 "$BG"
kill -TERM "$BG"
wait_pid "$BG" 60 || fail "ft-launch does not answer TERM while its stdout's reader stalls"
exec 7<&-
[ "$RC" -eq 143 ] || { cat "$WORK/stall.err"; fail "TERM with stdout stalled: exit $RC, expected 143"; }
FAKE_PROG="trap 'head -c 200000 /dev/zero | tr \"\\\\0\" y; echo; echo LAST-LINE; exit 1' TERM; echo trapped >'$WORK/trapped'; while :; do sleep 0.1; done" \
  FT_MPIRUN=$WORK/fakempi "$L" --one-per-node -- x >"$WORK/last.out" 2>"$WORK/last.err" &
BG=$!; BG_PIDS+=("$BG")
wait_for "$WORK/trapped" '^trapped$' 60 "$BG"
kill -TERM "$BG"
wait_pid "$BG" 60 || fail "ft-launch still runs after TERM"
[ "$(tail -1 "$WORK/last.out")" = LAST-LINE ] && [ "$(head -1 "$WORK/last.out" | wc -c)" -eq 200001 ] ||
  { cat "$WORK/last.err"; fail "mpirun's output at a signal's end: $(wc -c <"$WORK/last.out") bytes, last line '$(tail -1 "$WORK/last.out" | cut -c1-40)'"; }
ok "mpirun's stdout: a stalled reader leaves ft-launch answering signals; its last output at a signal's end comes through"

# Under --verbose nothing is held back, not even inside what looks like one
# of mpirun's banners (a line of 74 dashes opens one): rank 1's line after
# such a line is seen while it still waits.
D=$(printf '%74s' '' | tr ' ' -)
run_bg vlive "$L" --verbose --ppn 1 -- sh -c \
  'r=$OMPI_COMM_WORLD_RANK; [ "$r" != 1 ] || echo "$1" >&2; echo "vlive $r" >&2; i=0; while [ ! -e "$0" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; [ "$r" != 1 ] || echo "$1" >&2' \
  "$WORK/vgo" "$D"
wait_for "$WORK/vlive.out" '^vlive 1$' 60 "$BG"
touch "$WORK/vgo"
wait_pid "$BG" 120 || fail "ft-launch --verbose still runs after the program was let go"
[ "$RC" -eq 0 ] && [ "$(grep -c -- "^$D\$" "$WORK/vlive.out")" -eq 2 ] ||
  { cat "$WORK/vlive.out"; fail "--verbose: exit $RC, or the lines of dashes not both shown"; }
ok "--verbose: the program's lines come through at once, inside a banner's dashes too"

# The restart loop says what it does, with times: ft-restore's own lines stay.
FT_STORE_ROOT=$WORK/store "$L" --restarts 1 --job none -- false >"$WORK/rs.out" 2>&1
for pat in '^ft-launch: \[\+[0-9]+\.[0-9]s\] running ft-restore --mode replace on 1 node\(s\)' \
           '^ft-restore: no node holds a store' \
           '^ft-launch: \[\+[0-9]+\.[0-9]s\] ft-restore ended after [0-9]+\.[0-9] s: exit status 1$' \
           '^ft-launch: \[\+[0-9]+\.[0-9]s\] giving up after 1 restart\(s\)$'; do
  grep -Eq -- "$pat" "$WORK/rs.out" || { cat "$WORK/rs.out"; fail "--restarts output: no line matching '$pat'"; }
done
! grep -Eq 'Primary job|mpirun detected' "$WORK/rs.out" || { cat "$WORK/rs.out"; fail "mpirun banners in --restarts output"; }
ok "--restarts: timed lines for ft-restore and the outcome, ft-restore's lines kept"

# scripts/install-deps: one line per step; apt's output only when a step fails.
mkdir -p "$WORK/fakebin"
printf '#!/bin/sh\nexit 1\n' >"$WORK/fakebin/dpkg-query"
printf '#!/bin/sh\nexec "$@"\n' >"$WORK/fakebin/sudo"
cat >"$WORK/fakebin/apt-get" <<'EOS'
#!/bin/sh
i=0; while [ $i -lt 50 ]; do echo "apt noise $i: $*"; i=$((i + 1)); done
[ -z "${FAKE_APT_FAIL:-}" ] || case "$*" in *install*) echo "E: Unable to locate package x" >&2; exit 100 ;; esac
EOS
chmod +x "$WORK/fakebin/"*
PATH=$WORK/fakebin:$PATH "$SRC/scripts/install-deps" >"$WORK/deps.out" 2>&1 ||
  { cat "$WORK/deps.out"; fail "install-deps with a working (fake) apt-get failed"; }
# (apt-get update, install, each MPI of the matrix, the environment, done)
! grep -q 'apt noise' "$WORK/deps.out" && [ "$(wc -l <"$WORK/deps.out")" -le 6 ] &&
  [ "$(grep -vc '^install-deps: ' "$WORK/deps.out")" -eq 0 ] ||
  { cat "$WORK/deps.out"; fail "install-deps is not one line per step"; }
FAKE_APT_FAIL=1 PATH=$WORK/fakebin:$PATH "$SRC/scripts/install-deps" >"$WORK/deps.out" 2>&1 &&
  { cat "$WORK/deps.out"; fail "install-deps succeeded although apt-get install failed"; }
grep -q '^E: Unable to locate package x$' "$WORK/deps.out" && grep -q 'apt noise 49: .*install' "$WORK/deps.out" &&
  grep -q '^install-deps: .*failed' "$WORK/deps.out" ||
  { cat "$WORK/deps.out"; fail "a failed step does not show apt-get's full output"; }
ok "install-deps: one line per step, apt-get's whole output when a step fails"
