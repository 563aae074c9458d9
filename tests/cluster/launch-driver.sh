#!/usr/bin/env bash
# ft-launch's driver against a launcher, a probe and a terminal that do not
# play along (no cluster, no MPI: a fake mpirun first on PATH, whose
# FAKE_MODE says what it does): a thousand restarts that each fail at
# once on a small stack, and --restarts past 2^31; a signal while the
# probes hang, and during the teardown's wait for a descendant that keeps
# the launcher's stderr open; a standard error whose reader went, and
# closed standard descriptors; no descriptor of ft-launch's own in a
# launcher it starts; HUP and INT ignored on entry (nohup, a background
# job of a script) stay ignored.  Each signal ends ft-launch with 128 +
# its number and "interrupted: ending the job", with nothing of the job
# left and its temporary directory removed.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
L=$FT_LAUNCH
[ -x "$L" ] || fail "$L is not built (make builds it)"
B=$WORK/bin
mkdir -p "$B" "$WORK/tmp" "$WORK/probes" "$WORK/store"
export TMPDIR=$WORK/tmp FT_STORE_ROOT=$WORK/store FAKE_DIR=$WORK
cat >"$B/mpirun" <<'EOS'
#!/usr/bin/env bash
# fail: exit 1 at once; wait: its pid in mpirun.pid, then sleep;
# holder: a descendant without FTRT_LAUNCH_ID keeps stderr open 30 s;
# fds: the numbers of its descriptors in fds.N, its words in args.N, exit 1
case $FAKE_MODE in
  fail) echo "fake mpirun: failing" >&2; exit 1 ;;
  wait) echo $$ >"$FAKE_DIR/mpirun.pid"; exec sleep 300 ;;
  holder)
    env -u FTRT_LAUNCH_ID setsid sleep 30 &
    h=$!
    echo $h >"$FAKE_DIR/holder.pid"
    # until its exec of sleep is done: no FTRT_LAUNCH_ID in it any more
    # (60 s bound a hang)
    for _ in $(seq 600); do
      [ "$(tr '\0' ' ' </proc/$h/cmdline 2>/dev/null)" = "sleep 30 " ] && break
      sleep 0.1
    done
    : >"$FAKE_DIR/mpirun.exited"; exit 3 ;;
  fds)
    n=0; while [ -e "$FAKE_DIR/fds.$n" ]; do n=$((n + 1)); done
    for f in /proc/$$/fd/*; do printf '%s ' "${f##*/}"; done >"$FAKE_DIR/fds.$n"
    echo "$*" >"$FAKE_DIR/args.$n"; exit 1 ;;
esac
exit 1
EOS
cat >"$B/probe-hang" <<'EOS'
#!/bin/sh
: >"$FAKE_DIR/probes/$$"
exec sleep 300
EOS
cat >"$B/fdlist" <<'EOS'
#!/usr/bin/env bash
# into $1 as the fake mpirun lists its own: a glob, no pipe of the shell's
for f in /proc/$$/fd/*; do printf '%s ' "${f##*/}"; done >"$1"
EOS
chmod +x "$B/"*
export PATH=$B:$PATH
printf 'ha slots=2\nhb slots=2\n' >"$WORK/hosts"

# tmp_empty WHAT: no temporary directory of ft-launch's left in $TMPDIR
# (its log, ft-launch.UID.JOB.log, stays there by design).
tmp_empty() {
  local left
  left=$(ls -A "$WORK/tmp" | grep -v '^ft-launch\.[0-9]*\..*\.log$')
  [ -z "$left" ] || fail "$1: its temporary directory is left: $left"
}
interrupted() {  # interrupted NAME RC: exit RC, the line, nothing left
  [ "$RC" -eq "$2" ] || { cat "$WORK/$1.out"; fail "$1: exit $RC, expected $2"; }
  grep -qx 'ft-launch: interrupted: ending the job' "$WORK/$1.out" ||
    { cat "$WORK/$1.out"; fail "$1: no 'interrupted: ending the job'"; }
  tmp_empty "$1"
}

# Each restart's launch comes back to one loop: the stack does not grow
# with the restarts (a launch nested in the one before took some KB each).
(ulimit -s 1024; FAKE_MODE=fail exec "$L" --nodes 2 --restarts 1000 --job drv -- x) \
  >"$WORK/many.out" 2>&1
RC=$?
[ $RC -eq 1 ] && grep -qx 'ft-launch: \[+[0-9.]*s\] giving up after 1000 restart(s)' "$WORK/many.out" ||
  { tail -5 "$WORK/many.out"; fail "1000 restarts on a 1 MiB stack: exit $RC"; }
tmp_empty many
ok "1000 restarts that each fail at once, on a 1 MiB stack"

# A count past what an int holds is as good as unbounded: --restarts
# 4294967296 restarts (it wrapped to 0), and TERM ends it.
FAKE_MODE=fail run_bg huge "$L" --nodes 2 --restarts 4294967296 --job drv -- x
wait_for "$WORK/huge.out" 'restart 1 of [0-9]*: attempt failed' 60 "$BG"
kill -TERM "$BG"
wait_pid "$BG" 20 || fail "ft-launch --restarts 4294967296 still runs 20 s after TERM"
interrupted huge 143
ok "--restarts 4294967296: it restarts, and TERM ends it"

# A signal while the probes hang (3 tries of 60 s each): ft-launch ends
# them and goes at once.
FT_PROBE=$B/probe-hang FT_PROBE_TRIES=3 FAKE_MODE=fail run_bg probe \
  "$L" --hostfile "$WORK/hosts" --timeout 60 --job drv -- x
wait_for "$WORK/probe.out" 'attempt 1 ended' 60 "$BG"
for i in $(seq 600); do
  live=0
  for f in "$WORK/probes/"*; do [ -e "$f" ] && ! dead "${f##*/}" && live=$((live + 1)); done
  [ $live -ge 2 ] && break
  sleep 0.1
done
[ $live -ge 2 ] || fail "the probes of ha and hb did not start"
kill -HUP "$BG"
wait_pid "$BG" 20 || { cat "$WORK/probe.out"; fail "ft-launch still runs 20 s after HUP, its probes hanging"; }
interrupted probe 129
for f in "$WORK/probes/"*; do dead "${f##*/}" || fail "probe ${f##*/} left running"; done
ok "HUP while the probes hang: exit 129 at once, no probe left"

# A signal during the teardown (a descendant of the launcher keeps its
# stderr open: up to 10 s) is taken before any restart.
FAKE_MODE=holder run_bg teardown "$L" --nodes 2 --restarts 2 --job drv -- x
wait_for "$WORK/teardown.out" 'attempt 1: mpirun started' 60 "$BG"
for i in $(seq 300); do [ -e "$WORK/mpirun.exited" ] && break; sleep 0.1; done
kill -TERM "$BG"
wait_pid "$BG" 30 || fail "ft-launch still runs 30 s after TERM in its teardown"
kill "$(cat "$WORK/holder.pid")" 2>/dev/null
interrupted teardown 143
! grep -q 'attempt 2' "$WORK/teardown.out" ||
  { cat "$WORK/teardown.out"; fail "a relaunch after the TERM in the teardown"; }
ok "TERM during the teardown: exit 143, no relaunch"

# A standard error whose reader went: the TERM still ends the job (a
# SIGPIPE would have ended ft-launch and left mpirun running).
mkfifo "$WORK/err"
cat "$WORK/err" >/dev/null &
READER=$!
rm -f "$WORK/mpirun.pid"
FAKE_MODE=wait "$L" --nodes 2 --job drv -- x 2>"$WORK/err" &
BG=$!
BG_PIDS+=("$BG")
for i in $(seq 600); do [ -s "$WORK/mpirun.pid" ] && break; sleep 0.1; done
M=$(cat "$WORK/mpirun.pid") || fail "the fake mpirun did not start"
kill "$READER"
wait "$READER" 2>/dev/null
kill -TERM "$BG"
wait_pid "$BG" 20 || fail "ft-launch still runs 20 s after TERM, its stderr closed"
[ "$RC" -eq 143 ] || fail "TERM with stderr's reader gone: exit $RC, expected 143"
for i in $(seq 50); do dead "$M" && break; sleep 0.1; done
dead "$M" || { kill "$M"; fail "mpirun left running after TERM with stderr's reader gone"; }
tmp_empty closed-stderr
# Closed standard descriptors: the TERM still counts, and ends the job.
rm -f "$WORK/mpirun.pid"
FAKE_MODE=wait "$L" --nodes 2 --job drv -- x <&- >&- 2>&- &
BG=$!
BG_PIDS+=("$BG")
for i in $(seq 600); do [ -s "$WORK/mpirun.pid" ] && break; sleep 0.1; done
M=$(cat "$WORK/mpirun.pid") || fail "the fake mpirun did not start (descriptors closed)"
kill -TERM "$BG"
wait_pid "$BG" 20 || fail "ft-launch still runs 20 s after TERM, its descriptors closed"
[ "$RC" -eq 143 ] || fail "TERM with descriptors closed: exit $RC, expected 143"
for i in $(seq 50); do dead "$M" && break; sleep 0.1; done
dead "$M" || { kill "$M"; fail "mpirun left running (descriptors closed)"; }
ok "TERM with stderr's reader gone, and with 0-2 closed: exit 143, mpirun ended"

# A signal ignored when ft-launch started stays ignored, as bash left it:
# under nohup (HUP), in the background of a script (INT); TERM still ends
# the job.
rm -f "$WORK/mpirun.pid"
(trap '' HUP INT; FAKE_MODE=wait exec "$L" --nodes 2 --job drv -- x) >"$WORK/ignored.out" 2>&1 &
BG=$!
BG_PIDS+=("$BG")
for i in $(seq 600); do [ -s "$WORK/mpirun.pid" ] && break; sleep 0.1; done
M=$(cat "$WORK/mpirun.pid") || fail "the fake mpirun did not start (HUP ignored)"
kill -HUP "$BG"
kill -INT "$BG"
sleep 1   # time for a handler to act on them, were there one
kill -TERM "$BG"
wait_pid "$BG" 20 || fail "ft-launch still runs 20 s after TERM (HUP and INT ignored)"
interrupted ignored 143
for i in $(seq 50); do dead "$M" && break; sleep 0.1; done
dead "$M" || { kill "$M"; fail "mpirun left running (HUP and INT ignored)"; }
ok "HUP and INT ignored on entry stay ignored (nohup, a script's background); TERM ends the job"

# The launcher has the descriptors ft-launch was given, no more: the
# program's, the relaunch's and ft-restore's.
"$B/fdlist" "$WORK/fds.base" >"$WORK/fdrun.out" 2>&1
base=$(cat "$WORK/fds.base")
FAKE_MODE=fds "$L" --nodes 2 --restarts 1 --job drv -- x >"$WORK/fdrun.out" 2>&1
for f in "$WORK"/fds.[0-9]*; do
  [ "$(cat "$f")" = "$base" ] ||
    fail "descriptors of mpirun $(cat "$WORK/args.${f##*.}"): $(cat "$f"), expected $base"
done
[ "$(ls "$WORK"/fds.[0-9]* | wc -l)" -eq 3 ] && grep -q ft-restore "$WORK"/args.[0-9]* ||
  { cat "$WORK/fdrun.out"; fail "not 3 launches, ft-restore's among them"; }
ok "the launcher has only the descriptors ft-launch was given"
