#!/usr/bin/env bash
# The store on a shared machine (issue 14.5).  As an unprivileged user: a
# job runs, its directories are 0700 and its files 0600; a store root owned
# by another user, or writable by others, is refused with a message naming
# it and nothing is created there.  Needs root to become that user (skips
# otherwise).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to run as another user"; exit 77; }
command -v runuser >/dev/null || { echo "SKIP: runuser missing"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user 'nobody'"; exit 77; }
# The build's MPI must be one that user can run (a prefix under root's home
# is not).
MPI_PROG=$(command -v "${FTRT_MPIRUN:-mpirun}")
runuser -u nobody -- test -x "$MPI_PROG" ||
  { echo "SKIP: the build's MPI ($MPI_PROG) cannot be run by user nobody"; exit 77; }
HOMEDIR=$(mktemp -d /tmp/ftrt-user.XXXXXX)
trap 'rm -rf "$FT_STORE_ROOT" "$LOGDIR" ${MPIRUN_DIR:+"$MPIRUN_DIR"} "$HOMEDIR"' EXIT
chown nobody "$HOMEDIR" && chmod 700 "$HOMEDIR" || fail "cannot prepare $HOMEDIR"
ARGS="--steps 6 --snapshot-every 2 --state-mb 1"
as_nobody() {  # as_nobody NAME ROOT: a 1-node job as user nobody
  local name=$1 root=$2
  timeout -k 10 120 runuser -u nobody -- env HOME="$HOMEDIR" FT_STORE_ROOT="$root" \
    FT_JOB=private OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader,tcp \
    mpirun -np 3 "$B/ft-train-example" $ARGS >"$LOGDIR/$name" 2>&1
}

as_nobody own "$HOMEDIR/store" || { log_of own | tail; fail "a job of an unprivileged user failed"; }
grep -q '^digest ' "$LOGDIR/own" || fail "no digest"
bad=$(find "$HOMEDIR/store" \( -type d ! -perm 700 \) -o \( -type f ! -perm 600 \) -o ! -user nobody)
[ -z "$bad" ] || fail "not private: $bad"
note "an unprivileged user's job ran; its store is 0700/0600, all its own"

# A root owned by another user (root), and one writable by everybody.
foreign=$(mktemp -d /tmp/ftrt-foreign.XXXXXX)
as_nobody foreign "$foreign" && { rm -rf "$foreign"; fail "a store root owned by root was accepted"; }
grep -q "$foreign: owned by uid 0, not by this user" "$LOGDIR/foreign" ||
  { log_of foreign | tail; rm -rf "$foreign"; fail "no clear message for a foreign root"; }
[ -z "$(ls -A "$foreign")" ] || { rm -rf "$foreign"; fail "something was created in a foreign root"; }
rm -rf "$foreign"
open_root="$HOMEDIR/open"
mkdir "$open_root" && chown nobody "$open_root" && chmod 777 "$open_root"
as_nobody open "$open_root" && fail "a world-writable store root was accepted"
grep -q "$open_root: mode 0777, writable by group or others" "$LOGDIR/open" ||
  { log_of open | tail; fail "no clear message for a world-writable root"; }
[ -z "$(ls -A "$open_root")" ] || fail "something was created in a world-writable root"
note "a foreign root and a world-writable root: refused, nothing created"
echo "PASS: private store"
