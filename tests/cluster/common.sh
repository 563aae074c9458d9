# shellcheck shell=bash
# Sourced by the cluster tests: paths, skip rules (exit 77), assertions, and a
# cluster of the test's own that is torn down on any exit.
set -uo pipefail

SRC=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BLD=${FTRT_TOP_BUILDDIR:-$SRC}
FT_CLUSTER_CMD=$SRC/scripts/ft-cluster
FT_LAUNCH=$BLD/ft-launch
FT_RSH=$SRC/scripts/ft-rsh
MPI_NODES=$BLD/tests/cluster/mpi_nodes
RUNDIR=${FT_CLUSTER_RUNDIR:-/run/ftrt-cluster}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The built tools (ft-restore, ft-status, ft-train-example); first the copy
# of ft-train-example make check links without libtool's wrapper script
# (tests/Makefile.inc), unless it is older than the example (a plain make).
export PATH=$BLD:$SRC/scripts:$PATH
[ "$BLD/tests/bin/ft-train-example" -ot "$BLD/ft-train-example" ] || PATH=$BLD/tests/bin:$PATH
unset FT_CLUSTER SLURM_JOB_NODELIST  # ft-launch would run on an allocation's nodes
T_START=$(date +%s.%N)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ftrt-cluster-test.XXXXXX")
BG_PIDS=()
CL=

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { printf 'ok %5.1fs  %s\n' "$(elapsed "$T_START")" "$*"; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

need_mpi() {
  command -v mpirun >/dev/null || skip "mpirun not installed (scripts/install-deps)"
  [ -x "$MPI_NODES" ] || fail "$MPI_NODES is not built (make check builds it)"
}

need_cluster() {
  [ "$(id -u)" -eq 0 ] || skip "the simulated cluster needs root (network namespaces)"
  unshare --net --uts --mount true 2>/dev/null ||
    skip "cannot create network/UTS/mount namespaces here"
  command -v ip >/dev/null && command -v nsenter >/dev/null ||
    skip "iproute2 or nsenter missing (scripts/install-deps)"
}

cleanup() {
  local p
  for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do kill -KILL "$p" 2>/dev/null; done
  if [ -n "$CL" ]; then
    "$FT_CLUSTER_CMD" down --name "$CL" >/dev/null ||
      echo "cleanup: ft-cluster down --name $CL failed"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# cluster_up TAG N [ARGS...]: a cluster named TAG+pid, FT_CLUSTER set to it.
cluster_up() {
  CL=$1$$; shift
  export FT_CLUSTER=$CL
  "$FT_CLUSTER_CMD" up "$@" --name "$CL" >"$WORK/up.log" 2>&1 ||
    { cat "$WORK/up.log"; fail "ft-cluster up $* failed"; }
}

# run_bg NAME CMD...: CMD in the background, output in $WORK/NAME.out; BG=pid
run_bg() {
  local name=$1; shift
  "$@" >"$WORK/$name.out" 2>&1 &
  BG=$!
  BG_PIDS+=("$BG")
}

# wait_for FILE PATTERN SECONDS [PID]: until FILE has a line matching
# PATTERN; fails after SECONDS or once PID has ended without it.
wait_for() {
  local i
  for i in $(seq $(($3 * 10))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    [ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null || break
    sleep 0.1
  done
  echo "--- $1:"; cat "$1"
  fail "no '$2' in $1 after $3 s"
}

# wait_pid PID SECONDS: until PID ended (fails otherwise); RC = its status
wait_pid() {
  local i
  for i in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; RC=$?; return 0; }
    sleep 0.1
  done
  return 1
}

dead() {  # dead PID: gone, or a zombie waiting for its parent to reap it
  local st
  st=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 0
  [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}

keeper_of() { cat "$RUNDIR/$CL/keeper/$1"; }

ns_inodes() {  # net and mnt namespace inodes of a pid
  local t l
  for t in net mnt; do
    l=$(readlink "/proc/$1/ns/$t") || continue
    l=${l#*[}; echo "${l%]}"
  done
}

# Pids of every process in one of these namespaces (by inode).
pids_in() {
  find /proc/[0-9]*/ns -maxdepth 1 \( -name net -o -name mnt \) \
    -printf '%h %l\n' 2>/dev/null |
    awk -v want=" $* " '{ split($1, p, "/"); ino = $2; gsub(/.*\[|\]/, "", ino)
                          if (index(want, " " ino " ")) print p[3] }' | sort -un
}

# The clock ticks since boot at which a process started now would start
# (the start time of this awk).
ticks_now() { awk '{ sub(/.*\) /, ""); print $20 }' /proc/self/stat; }

# pids_in_before TICKS INODES...: pids_in, only the processes that started
# before TICKS.  After "down" the inodes are free, and a namespace another
# test makes may get one of them: its processes are younger.
pids_in_before() {
  local t=$1 p st
  shift
  for p in $(pids_in "$@"); do
    st=$(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$p/stat" 2>/dev/null) || continue
    [ -n "$st" ] && [ "$st" -lt "$t" ] && echo "$p"
  done
  return 0
}

keepers_named() {  # pids of keepers of cluster $1
  local f a
  for f in /proc/[0-9]*/cmdline; do
    a=
    { IFS= read -r -d '' a <"$f"; } 2>/dev/null
    case $a in "ftrt-keeper/$1/"*) f=${f#/proc/}; echo "${f%/cmdline}" ;; esac
  done
}

# Nothing of cluster $1 left: namespace, keeper, state directory.
assert_gone() {
  local n
  n=$(ip netns list | grep -c "^ftc-$1-")
  [ "$n" -eq 0 ] || fail "namespaces of $1 left: $(ip netns list | grep "^ftc-$1-" | tr '\n' ' ')"
  [ -z "$(keepers_named "$1")" ] || fail "keepers of $1 left: $(keepers_named "$1" | tr '\n' ' ')"
  [ ! -e "$RUNDIR/$1" ] || fail "state directory $RUNDIR/$1 left"
  [ ! -e "$RUNDIR/$1.lock" ] || fail "lock file $RUNDIR/$1.lock left"
}
