#!/usr/bin/env bash
# A store with too little room.  The slot files are shared mappings: on a
# tmpfs with no free page, the first write into an unbacked page of one is a
# SIGBUS in whichever process writes it (a trainer's copy, the SMP's header).
# ftrt reserves the control segment and both slots when the job lays out
# its store (ft_restore, before any training), so a store without room
# fails there with FT_ENOSPC and a message naming the file, and a store
# that fills up once the job runs cannot fail a snapshot: the job ends with
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
  grep -q "ftrt\[.* trainer\] error: $TMP/full/slot[01]: cannot reserve the slot's [0-9]* bytes: No space left on device" "$LOGDIR/$1" &&
    grep -q "^ft-train-example: ft_restore: no space left in the store" "$LOGDIR/$1" ||
    { log_of "$1" | tail; fail "$2: no message naming the slot and its lack of room"; }
  ! grep -q "^step " "$LOGDIR/$1" || { log_of "$1" | tail; fail "$2: steps were trained before the failure"; }
  # the slot that could not be reserved is removed, not left empty
  [ -z "$(find "$TMP/full" -name 'slot*' -size 0)" ] || { ls -l "$TMP/full"; fail "$2: an empty slot file was left"; }
}

# too_small NAME SIZE WHAT: the job on a store of SIZE fails, and no
# process dies of SIGBUS; the store stays mounted.
too_small() {
  mount -t tmpfs -o "size=$2,mode=700" ftrt-full "$TMP" || fail "cannot mount a tmpfs"
  train "$1" 3 $ARGS && { log_of "$1" | tail; fail "$3: the job exited 0"; }
  ! grep -qi "bus error\|signal 7" "$LOGDIR/$1" || { log_of "$1" | tail; fail "$3: a process died of SIGBUS"; }
}

# Room for 1 page of the control segment's 3 (4 KiB pages): ft_init fails.
if [ "$(getconf PAGESIZE)" -le 4096 ]; then
  too_small ctl 4k "a store of 4 KiB"
  grep -q "ft_init: .*$TMP/full/ctl.new: cannot reserve [0-9]* bytes: No space left on device" "$LOGDIR/ctl" ||
    { log_of ctl | tail; fail "a store of 4 KiB: no message naming the control segment and its lack of room"; }
  note "a store too small for the control segment: ft_init failed with a message, no SIGBUS"
  umount "$TMP" || fail "umount"
else
  note "pages of $(getconf PAGESIZE) bytes: one holds the control segment, its case is left out"
fi

# Room for no slot at all (2 MiB of state), then for one slot of the two:
# ft_restore fails, before step 1.
too_small none 256k "a store of 256 KiB"
no_room none "a store of 256 KiB"
note "a store too small for one slot: ft_restore failed with a message, no step trained, no SIGBUS"
umount "$TMP" || fail "umount"
too_small one 3m "a store with room for one slot"
no_room one "a store with room for one slot"
note "a store with room for one slot of two: ft_restore failed with a message, no step trained, no SIGBUS"
umount "$TMP" || fail "umount"

# Room for the job, then none left once step 2 is committed (a file fills
# the rest): every later snapshot goes into the slots reserved at the
# start, and the job ends with the digest of the run without faults.
mount -t tmpfs -o size=8m,mode=700 ftrt-full "$TMP" || fail "cannot mount a tmpfs"
FT_HOLD=step=2 train_bg filled 3 $ARGS
held filled
fallocate -l "$(($(df -k --output=avail "$TMP" | tail -1)))k" "$TMP/fill" 2>/dev/null
[ "$(df -k --output=avail "$TMP" | tail -1)" -lt 8 ] || fail "the store was not filled up"
"$B/ft-hold" --job "$FT_JOB" release >/dev/null || fail "ft-hold release"
wait "$PID" || { log_of filled | tail; fail "the job failed after its store filled up"; }
expect_digest filled "$want" "the store filled up after step 2"
echo "PASS: a store without room fails the job before it trains; one that fills up later fails nothing"
