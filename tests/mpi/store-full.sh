#!/usr/bin/env bash
# A store with too little room.  The slot files are shared mappings: on a
# tmpfs with no free page, the first write into an unbacked page of one is a
# SIGBUS in whichever process writes it (a trainer's copy, the SMP's header).
# ftrt reserves a slot's bytes when it makes one, so the job fails with
# FT_ENOSPC and a message naming the store, and the snapshot committed
# before stays whole: with room again, the job resumes from it and ends with
# the digest of a run without faults.  Needs root for a private tmpfs in a
# mount namespace of its own (skips otherwise).
if [ -z "${STORE_FULL_INNER:-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for a tmpfs of its own"; exit 77; }
  unshare --mount --propagation private true 2>/dev/null ||
    { echo "SKIP: cannot make a mount namespace here"; exit 77; }
  STORE_FULL_INNER=1 exec unshare --mount --propagation private "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
export FT_JOB=full
ARGS="--steps 6 --snapshot-every 2 --state-mb 1"
train ref 3 $ARGS || { log_of ref | tail; fail "the run without faults failed"; }
want=$(digest_of ref)

TMP=$(mktemp -d /tmp/ftrt-full.XXXXXX)
REF_ROOT=$FT_STORE_ROOT
trap 'umount "$TMP" 2>/dev/null; rmdir "$TMP"; rm -rf "$REF_ROOT" "$LOGDIR"' EXIT
export FT_STORE_ROOT=$TMP
no_room() {  # NAME WHAT: the SMP's message names the slot, the program's the code
  grep -q "the SMP stopped: $TMP/full/slot[01]: cannot reserve the slot's [0-9]* bytes: No space left on device" "$LOGDIR/$1" &&
    grep -q "ft_snapshot at step [0-9]*: no space left in the store" "$LOGDIR/$1" ||
    { log_of "$1" | tail; fail "$2: no message naming the slot and its lack of room"; }
}

# too_small NAME SIZE WHAT: the job on a store of SIZE fails, and no
# process dies of SIGBUS; the store stays mounted.
too_small() {
  mount -t tmpfs -o "size=$2,mode=700" ftrt-full "$TMP" || fail "cannot mount a tmpfs"
  train "$1" 3 $ARGS && { log_of "$1" | tail; fail "$3: the job exited 0"; }
  ! grep -qi "bus error\|signal 7" "$LOGDIR/$1" || { log_of "$1" | tail; fail "$3: a process died of SIGBUS"; }
}

# Room for 1 page of the control segment's 3: ft_init fails, cleanly.
too_small ctl 4k "a store of 4 KiB"
grep -q "ft_init: .*$TMP/full/ctl.new: cannot reserve [0-9]* bytes: No space left on device" "$LOGDIR/ctl" ||
  { log_of ctl | tail; fail "a store of 4 KiB: no message naming the control segment and its lack of room"; }
note "a store too small for the control segment: ft_init failed with a message, no SIGBUS"
umount "$TMP" || fail "umount"

# Room for no slot at all (2 MiB of state): the first snapshot fails.
too_small none 256k "a store of 256 KiB"
no_room none "a store of 256 KiB"
note "a store too small for one slot: the job failed with a message, no SIGBUS"
umount "$TMP" || fail "umount"

# Room for one slot, not two: version 1 (step 2) commits, the slot for
# version 2 cannot be made.
too_small one 3m "a store with room for one slot"
no_room one "a store with room for one slot"
grep -q "^step 2 " "$LOGDIR/one" || { log_of one | tail; fail "the job did not reach step 2"; }
note "a store with room for one slot: the job failed with a message, no SIGBUS"
mount -o remount,size=64m "$TMP" || fail "cannot give the tmpfs room"
train again 3 $ARGS || { log_of again | tail; fail "the run with room again failed"; }
grep -q "^resumed from step 2$" "$LOGDIR/again" || { log_of again | tail; fail "the snapshot of step 2 was not kept"; }
expect_digest again "$want" "resumed from step 2 after the store filled up"
echo "PASS: a full store fails the job cleanly and keeps what was committed"
