#!/usr/bin/env bash
# ft-train-example on plain MPI (--no-ftrt), 2 ranks, small model: the loss
# at the last step is below the first; two runs print the same lines and the
# same digest; another seed gives another digest; --timing-skip K adds the
# 'steady' line; bad flags exit 2, --help 0.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BUILD=${FTRT_TOP_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PROG=$BUILD/ft-train-example
STEPS=12

fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=tests/mpi/mpirun.sh
. "$(dirname "$0")/mpirun.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
[ -x "$PROG" ] || fail "$PROG is not built"
TMP=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$TMP" ${MPIRUN_DIR:+"$MPIRUN_DIR"}' EXIT

# run NAME ARGS...: 2 ranks; stdout in $TMP/NAME, stderr in $TMP/NAME.err
run() {
  local name=$1 rc
  shift
  timeout -k 10 120 mpirun -np 2 --oversubscribe "$PROG" --no-ftrt \
    --steps $STEPS --state-mb 1 "$@" >"$TMP/$name" 2>"$TMP/$name.err"
  rc=$?
  [ $rc -eq 0 ] || { cat "$TMP/$name" "$TMP/$name.err"; fail "$name: exit $rc"; }
}

loss_at() { awk -v s="$2" '$1 == "step" && $2 == s { print $4 }' "$TMP/$1"; }

digest_of() {
  local d
  d=$(sed -n 's/^digest \([0-9a-f]\{16\}\)$/\1/p' "$TMP/$1")
  [ "$(printf '%s\n' "$d" | grep -c .)" -eq 1 ] ||
    { cat "$TMP/$1"; fail "$1: not exactly one 'digest <16 hex>' line"; }
  echo "$d"
}

check_run() {
  local name=$1 n first last
  grep -qx 'fresh start' "$TMP/$name" || fail "$name: no 'fresh start'"
  n=$(grep -cE '^step [0-9]+ loss [0-9]+\.[0-9]{6}$' "$TMP/$name")
  [ "$n" -eq $STEPS ] || { cat "$TMP/$name"; fail "$name: $n step lines, not $STEPS"; }
  first=$(loss_at "$name" 1)
  last=$(loss_at "$name" $STEPS)
  awk -v a="$last" -v b="$first" 'BEGIN { exit !(a + 0 < b + 0) }' ||
    fail "$name: loss did not go down (step 1: $first, step $STEPS: $last)"
  echo "$name: loss $first -> $last, digest $(digest_of "$name")"
}

run a --seed 5
run b --seed 5 --timing-skip 4
run c --seed 6
check_run a
check_run b
check_run c

# --timing-skip 4: one more line, over the steps after the first 4.
grep -Eq "^time $STEPS steps [0-9.]+ s [0-9.]+ ms/step\$" "$TMP/b" ||
  { cat "$TMP/b"; fail "b: no 'time $STEPS steps' line"; }
grep -Eq "^steady $((STEPS - 4)) steps [0-9.]+ s [0-9.]+ ms/step\$" "$TMP/b" ||
  { cat "$TMP/b"; fail "b: no 'steady $((STEPS - 4)) steps' line with --timing-skip 4"; }
! grep -q '^steady ' "$TMP/a" || fail "a: a 'steady' line without --timing-skip"

# Everything but the timing lines must be the same bits, run after run.
diff <(grep -Ev '^(time|steady) ' "$TMP/a") <(grep -Ev '^(time|steady) ' "$TMP/b") ||
  fail "two runs with the same flags differ"
[ "$(digest_of a)" != "$(digest_of c)" ] ||
  fail "seeds 5 and 6 print the same digest"

# Usage: no MPI needed, exit 2 with a message naming the flag; --help exits 0.
"$PROG" --help >"$TMP/help" 2>&1 || fail "--help: exit $?"
grep -q -- '--snapshot-every' "$TMP/help" || fail "--help does not list the flags"
usage() { # usage FLAG-THE-MESSAGE-NAMES ARGS...
  local flag=$1 rc
  shift
  "$PROG" "$@" >"$TMP/usage" 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, not 2"
  grep -q -- "$flag" "$TMP/usage" ||
    { cat "$TMP/usage"; fail "'$*': message does not name $flag"; }
}
usage --steps --steps x --state-mb 1
usage --state-mb --state-mb 0 --steps 3
usage --bogus --bogus --steps 3 --state-mb 1
usage --state-mb --steps 3
usage --timing-skip --timing-skip -1 --steps 3 --state-mb 1
usage --timing-skip --timing-skip 0 --steps 3 --state-mb 1
echo "PASS"
