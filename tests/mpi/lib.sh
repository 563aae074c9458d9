# Helpers for the single-host MPI tests.  Sourced; needs FTRT_TOP_BUILDDIR
# (set by `make check`) or runs from the build directory.
set -u
B=${FTRT_TOP_BUILDDIR:-$PWD}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader,tcp
export FT_STORE_ROOT=${FT_STORE_ROOT:-$(mktemp -d /tmp/ftrt-test.XXXXXX)}
export FT_TIMEOUT=${FT_TIMEOUT:-30}
LOGDIR=$(mktemp -d /tmp/ftrt-log.XXXXXX)
trap 'rm -rf "$FT_STORE_ROOT" "$LOGDIR" ${MPIRUN_DIR:+"$MPIRUN_DIR"}' EXIT

# shellcheck source=tests/mpi/mpirun.sh
. "$(dirname "${BASH_SOURCE[0]}")/mpirun.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }

# The example trainer: the build's tests/bin copy (no libtool wrapper script
# to run in every rank) when make check built it.
TRAIN_EXE=$B/tests/bin/ft-train-example
[ -x "$TRAIN_EXE" ] && ! [ "$TRAIN_EXE" -ot "$B/ft-train-example" ] || TRAIN_EXE=$B/ft-train-example
# train NAME NP ARGS... : run ft-train-example under mpirun, output to $LOGDIR/NAME
train() {
  local name=$1 np=$2; shift 2
  timeout -k 10 120 mpirun -np "$np" "$TRAIN_EXE" "$@" >"$LOGDIR/$name" 2>&1
}
# restore NP ARGS... : ft-restore on NP nodes (one rank a node)
restore() { timeout -k 10 120 mpirun -np "$1" "$B/ft-restore" "${@:2}"; }
# train_bg NAME NP ARGS... : same as train, in the background; sets PID
train_bg() {
  local name=$1 np=$2; shift 2
  : >"$LOGDIR/$name"
  timeout -k 10 120 mpirun -np "$np" "$TRAIN_EXE" "$@" >"$LOGDIR/$name" 2>&1 &
  PID=$!
}
digest_of() { sed -n 's/^digest \([0-9a-f]*\)$/\1/p' "$LOGDIR/$1" | tail -1; }
log_of() { cat "$LOGDIR/$1"; }
# held NAME [--vnode N] : until every process of $FT_JOB (run NAME, started
# by train_bg) that stops at the point FT_HOLD armed is held there, on this
# node or virtual node N: the job cannot run past it meanwhile.  ft-hold
# exits 3 until the job's SMP has made its control segment.
held() {
  local rc=3 name=$1
  shift
  while [ $rc = 3 ] && kill -0 "$PID" 2>/dev/null; do
    "$B/ft-hold" --job "$FT_JOB" "$@" --timeout 300 wait >/dev/null 2>&1
    rc=$?
    [ $rc = 3 ] && sleep 0.05 # poll interval, not a wait for an event
  done
  [ $rc = 0 ] || { log_of "$name" | tail; fail "$name never held at FT_HOLD's point (ft-hold exit $rc)"; }
}
# status_field JOB JQ-LIKE-KEY: crude JSON field pick for pids from ft-status
smp_pid() { FT_JOB=$1 "$B/ft-status" --json | sed -n 's/.*"smp":{"pid":\([0-9]*\).*/\1/p'; }
trainer_pid() {  # JOB INDEX
  FT_JOB=$1 "$B/ft-status" --json | grep -o '"rank":[0-9]*,"pid":[0-9]*' |
    sed -n "$(($2 + 1))s/.*\"pid\":\([0-9]*\)/\1/p"
}
expect_digest() {  # NAME WANT WHAT
  local got; got=$(digest_of "$1")
  [ -n "$got" ] || { log_of "$1" | tail -20; fail "$3: no digest"; }
  [ "$got" = "$2" ] || { log_of "$1" | tail -20; fail "$3: digest $got, fault-free run gave $2"; }
  note "$3: digest $got matches"
}
