#!/usr/bin/env bash
# ft-status and ft-hold trust a store no more than the job does (issue
# 14.5): they open it as every process of the job does (ft__store_open_dir,
# through scripts/storeopt.c) and refuse one that is not this user's
# private directory -- ft-status exit 3, ft-hold exit 5 -- with a message
# that names the directory and says what is wrong; nothing of the store is
# read or changed (ft-hold release, which would bump the control segment's
# counter, leaves it as it was).  Cases: the store root made writable by
# others, the job directory writable by its group, the job directory
# replaced by a symbolic link to a store (never followed), and as root a
# store root owned by another user.
. "$(dirname "$0")/lib.sh"
export FT_JOB=tools
JOBDIR=$FT_STORE_ROOT/$FT_JOB
train run 3 --steps 4 --snapshot-every 2 --state-mb 1 ||
  { log_of run | tail; fail "the job failed"; }
"$B/ft-status" >"$LOGDIR/status" 2>&1 || { log_of status; fail "ft-status on a private store: exit $?"; }
"$B/ft-hold" show >"$LOGDIR/hold" 2>&1 || { log_of hold; fail "ft-hold show on a private store: exit $?"; }
note "a private store: ft-status and ft-hold read it (exit 0)"

STORE=$JOBDIR # the real job directory, wherever the case put it
sums() { cat "$STORE/ctl" "$STORE/meta" "$STORE/slot0" "$STORE/slot1" | md5sum; }

# refused CASE PATTERN: both tools refuse the store, say PATTERN, change nothing.
refused() {
  local case=$1 pat=$2 before rc
  before=$(sums)
  "$B/ft-status" >"$LOGDIR/status-$case" 2>&1
  rc=$?
  [ $rc = 3 ] || { log_of "status-$case"; fail "$case: ft-status exit $rc, expected 3 (refused)"; }
  grep -q -- "$pat" "$LOGDIR/status-$case" ||
    { log_of "status-$case"; fail "$case: ft-status does not say '$pat'"; }
  grep -q 'COMMITTED' "$LOGDIR/status-$case" && fail "$case: ft-status showed the refused store"
  "$B/ft-hold" release >"$LOGDIR/hold-$case" 2>&1
  rc=$?
  [ $rc = 5 ] || { log_of "hold-$case"; fail "$case: ft-hold exit $rc, expected 5 (refused)"; }
  grep -q -- "$pat" "$LOGDIR/hold-$case" ||
    { log_of "hold-$case"; fail "$case: ft-hold does not say '$pat'"; }
  [ "$before" = "$(sums)" ] || fail "$case: the refused store was changed"
  note "$case: refused, unchanged: $(head -1 "$LOGDIR/status-$case")"
}

chmod 777 "$FT_STORE_ROOT"
refused "world-writable root" "$FT_STORE_ROOT: mode 0777, writable by group or others"
chmod 700 "$FT_STORE_ROOT"
chmod 770 "$JOBDIR"
refused "group-writable job directory" "$JOBDIR: mode 0770, writable by group or others"
chmod 700 "$JOBDIR"
# The job directory moved away and a link to it put in its place.
STORE=$FT_STORE_ROOT/moved
mv "$JOBDIR" "$STORE" && ln -s "$STORE" "$JOBDIR" || fail "cannot plant the link"
refused "job directory a symbolic link" "$JOBDIR: a symbolic link"
rm "$JOBDIR" && mv "$STORE" "$JOBDIR" || fail "cannot undo the link"
STORE=$JOBDIR
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
  chown nobody "$FT_STORE_ROOT"
  refused "root owned by another user" "$FT_STORE_ROOT: owned by uid $(id -u nobody), not by this user"
  chown 0 "$FT_STORE_ROOT"
else
  note "not root: the case of a root owned by another user is left out"
fi
"$B/ft-status" >"$LOGDIR/status-after" 2>&1 ||
  { log_of status-after; fail "the private store again: ft-status exit $?"; }
echo "PASS: tools refuse a store that is not private"
