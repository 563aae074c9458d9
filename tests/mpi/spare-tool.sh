#!/usr/bin/env bash
# ft-spare, the tool ft-launch prepares its spares with (no MPI): prepare
# makes ROOT/.spare-JOB/slot0 and slot1 of the size asked, whole and
# allocated; a second prepare of that size keeps them (same files), one of
# another size replaces them; show says what is there; remove removes the
# directory and nothing else.  Refusals, each with its exit status and
# nothing made: a host holding a store of the job (3), a store root
# writable by others (5), a bad size (2), no room (4, as root on a small
# tmpfs of its own: nothing left).  Against a preparation or a removal
# under way (the lock the rebuild takes too, held here by flock(1)): a
# prepare waits for it, then finds the host became a node (exit 3); a
# remove asks it to stop and removes once it may.
. "$(dirname "$0")/lib.sh"
export FT_JOB=spare
S=$B/ft-spare
SP=$FT_STORE_ROOT/.spare-$FT_JOB
MB=$((1024 * 1024))

inodes() { stat -c %i "$SP/slot0" "$SP/slot1" | tr '\n' ' '; }

"$S" --help | grep -q '^usage: ft-spare' || fail "ft-spare --help"
"$S" prepare $((3 * MB)) || fail "prepare: exit $?"
"$S" show >"$LOGDIR/show"
grep -q "slot0 $((3 * MB)) bytes ($((3 * MB)) allocated), slot1 $((3 * MB)) bytes ($((3 * MB)) allocated) in $SP" "$LOGDIR/show" ||
  { log_of show; fail "show after prepare"; }
[ "$(ls -A "$SP" | tr '\n' ' ')" = "slot0 slot1 " ] || fail "prepare left $(ls -A "$SP")"
before=$(inodes)
"$S" prepare $((3 * MB)) || fail "second prepare: exit $?"
[ "$(inodes)" = "$before" ] || fail "a second prepare of the same size made new files"
"$S" prepare $((2 * MB)) || fail "prepare of another size: exit $?"
[ "$(stat -c %s "$SP/slot0")" = $((2 * MB)) ] || fail "prepare of another size kept the old size"
note "prepare, show, kept at the same size, replaced at another"

"$S" remove || fail "remove: exit $?"
[ ! -e "$SP" ] || fail "remove left $SP"
"$S" remove || fail "remove of nothing: exit $?"
"$S" show | grep -q 'nothing prepared' || fail "show after remove"
note "remove: the directory gone; again: exit 0"

expect_exit() {  # WANT NAME PATTERN CMD...: exit WANT, saying PATTERN
  local want=$1 name=$2 pat=$3 rc
  shift 3
  "$@" >"$LOGDIR/$name" 2>&1
  rc=$?
  [ "$rc" = "$want" ] || { log_of "$name"; fail "$name: exit $rc, expected $want"; }
  grep -q -- "$pat" "$LOGDIR/$name" || { log_of "$name"; fail "$name: no '$pat'"; }
  note "$name: exit $rc: $(head -1 "$LOGDIR/$name")"
}
expect_exit 2 bad-size 'expected a size in bytes' "$S" prepare 0
expect_exit 2 bad-size-neg 'expected a size in bytes' "$S" prepare -5
expect_exit 2 no-command 'usage' "$S"
mkdir -m 700 "$FT_STORE_ROOT/$FT_JOB"
expect_exit 3 member 'a node of the job, not a spare; nothing prepared' "$S" prepare $MB
[ ! -e "$SP" ] || fail "prepare on a node of the job left $SP"
rmdir "$FT_STORE_ROOT/$FT_JOB"
chmod 777 "$FT_STORE_ROOT"
expect_exit 5 open-root 'writable by group or others' "$S" prepare $MB
chmod 700 "$FT_STORE_ROOT"
[ ! -e "$SP" ] || fail "a refused prepare made $SP"

# The lock, held by this shell while the tool waits for it.
# waiting PID DIR: until process PID tries the lock on DIR (it holds DIR
# open twice then: the directory, and the descriptor it locks through,
# snapshot/dir.c ft__store_lock); 60 s bound a hang, not a speed.
waiting() {
  local _
  for _ in $(seq 600); do
    [ "$(find "/proc/$1/fd" -lname "$2" 2>/dev/null | wc -l)" -ge 2 ] && return 0
    sleep 0.1
  done
  fail "process $1 never tried the lock on $2"
}
"$S" prepare $MB || fail "prepare: exit $?"
exec {lk}<"$SP"
flock -x "$lk"
"$S" prepare $((2 * MB)) >"$LOGDIR/waiting" 2>&1 {lk}<&- &
waiter=$!
waiting "$waiter" "$SP"
# Meanwhile a rebuild made the host a node: its store, the files taken,
# the rest removed with the directory (what ft__spare_release does).
mkdir -m 700 "$FT_STORE_ROOT/$FT_JOB"
mv "$SP/slot0" "$SP/slot1" "$FT_STORE_ROOT/$FT_JOB/"
rmdir "$SP"
exec {lk}<&-
wait "$waiter"
rc=$?
[ "$rc" = 0 ] || { log_of waiting; fail "prepare waiting for the rebuild's lock: exit $rc, expected 0"; }
[ ! -e "$SP" ] || fail "a prepare that found the host a node made $SP again"
[ "$(stat -c %s "$FT_STORE_ROOT/$FT_JOB/slot0")" = "$MB" ] || fail "a prepare changed the files the rebuild took"
note "a prepare waiting for the rebuild's lock: the host a node by then, nothing made"
rm -r "${FT_STORE_ROOT:?}/$FT_JOB"
"$S" prepare $MB || fail "prepare: exit $?"

exec {lk}<"$SP"
flock -x "$lk"
"$S" remove >"$LOGDIR/remove" 2>&1 {lk}<&- &
remover=$!
for _ in $(seq 600); do [ -e "$SP/stop" ] && break; sleep 0.1; done   # bounds a hang
[ -e "$SP/stop" ] || fail "remove did not ask the preparation to stop"
exec {lk}<&-
wait "$remover" || { log_of remove; fail "remove waiting for the lock: exit $?"; }
[ ! -e "$SP" ] || fail "remove left $SP"
note "a remove during a preparation: asked it to stop, removed once it could"

"$S" prepare $MB || fail "prepare: exit $?"
echo $$ >"$SP/stop"   # a removal waiting for the lock (this shell is alive)
"$S" prepare $MB || fail "prepare with a removal pending: exit $?"
[ ! -e "$SP" ] || fail "a prepare with a removal pending left $SP"
note "a prepare with a removal pending: it removes instead"
"$S" prepare $MB || fail "prepare: exit $?"
true & dead=$!
wait "$dead"
echo "$dead" >"$SP/stop"   # a removal killed before it took the lock
"$S" prepare $((2 * MB)) || fail "prepare with a dead removal's request: exit $?"
[ "$(ls -A "$SP" | tr '\n' ' ')" = "slot0 slot1 " ] && [ "$(stat -c %s "$SP/slot1")" = $((2 * MB)) ] ||
  fail "a prepare with a dead removal's request: $(ls -A "$SP")"
note "a prepare with a dead removal's request: the request dropped, prepared"
"$S" remove || fail "remove: exit $?"

# --until-eof: a preparation whose input ends after its first byte (the
# launch that holds it open ended) stops and removes what it made; one
# whose input ends before any byte (a command that passes no input on,
# ssh -n) is refused: it could never last.
# A file of one byte: its end is there from the start (a pipe's writer
# might still be running when ft-spare looks, and the test would race it).
echo >"$LOGDIR/one-byte"
"$S" --until-eof prepare $MB <"$LOGDIR/one-byte" || fail "prepare --until-eof: exit $?"
[ ! -e "$SP" ] || fail "prepare --until-eof with its input ended left $SP"
expect_exit 1 no-input 'passes no input on' "$S" --until-eof prepare $MB </dev/null
[ ! -e "$SP" ] || fail "prepare --until-eof without input left $SP"
note "prepare --until-eof: input ended, nothing left"

if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  expect_exit 4 no-room 'no room here for 2 slots' unshare -m sh -c \
    "mount -t tmpfs -o size=3m,mode=700 tmpfs '$FT_STORE_ROOT' && '$S' prepare $((2 * MB)); rc=\$?; ls -A '$FT_STORE_ROOT' > '$LOGDIR/left'; exit \$rc"
  [ ! -s "$LOGDIR/left" ] || fail "no room: left $(cat "$LOGDIR/left")"
else
  note "no room: skipped (needs root and a mount namespace)"
fi
echo "PASS: ft-spare"
