# shellcheck shell=bash
# Sourced by the chaos scripts: a simulated cluster of the script's own
# (ft-cluster, real namespaces, root), ft-train-example launched on it with
# ft-launch, faults injected with ft-chaos / ft-cluster / FT_FAULT, and
# assertions on what a user sees: the final digest against a fault-free
# run's, "resumed from step S", ft-launch's and ft-restore's lines and exit
# codes.  Skips (exit 77) without root, namespaces or mpirun.  The cluster
# is torn down on any exit.
set -uo pipefail

SRC=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BLD=${FTRT_TOP_BUILDDIR:-$SRC}
# The built tools (ft-restore, ft-status, ft-train-example); first the copy
# of ft-train-example make check links without libtool's wrapper script
# (tests/Makefile.inc), unless it is older than the example (a plain make).
export PATH=$BLD:$SRC/scripts:$PATH
[ "$BLD/tests/bin/ft-train-example" -ot "$BLD/ft-train-example" ] || PATH=$BLD/tests/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LIMIT=${FT_CHAOS_LIMIT:-180}   # seconds any one launch / restore may take
KEEP=${FT_CHAOS_KEEP:-}        # FT_CHAOS_KEEP=1 keeps the logs ($WORK)
# ft-launch hands every FT_* variable to the ranks: start from none but
# ft-cluster's own settings, so that a user's FT_FAULT or FT_EC_K stays out.
for v in $(compgen -e | grep '^FT_'); do
  case $v in FT_CLUSTER_RUNDIR|FT_CLUSTER_PROBE) ;; *) unset "$v" ;; esac
done
unset SLURM_JOB_NODELIST   # ft-launch would run on an allocation's nodes
# FTRT_SMP=ft-smp runs the C trainers' tests with ft-smp's SMPs (MPMD).
[ -z "${FTRT_SMP:-}" ] || export FT_SMP=$FTRT_SMP
T_START=$(date +%s.%N)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ftrt-chaos.XXXXXX")
BG_PIDS=()
CL=
HOLD_WHEN=   # the hold point of the last launch_held
export FT_TIMEOUT=30   # ft-launch's watchdog and the runtime's waits

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
CASE_T=$T_START
begin() { CASE_T=$(date +%s.%N); echo "# $*"; }
ok() { printf 'ok %5.1fs (case %5.1fs)  %s\n' "$(elapsed "$T_START")" "$(elapsed "$CASE_T")" "$*"; }
show() {
  echo "--- $WORK/$1:"; grep -v '^step [0-9]* loss' "$WORK/$1" | tail -n "${2:-60}"
  [ ! -s "$WORK/$1.hang" ] || { echo "--- $WORK/$1.hang:"; cat "$WORK/$1.hang"; }
}
die_with() { show "$1"; fail "$2"; }   # die_with LOG MESSAGE

need_cluster() {
  [ "$(id -u)" -eq 0 ] || skip "the simulated cluster needs root (network namespaces)"
  unshare --net --uts --mount true 2>/dev/null ||
    skip "cannot create network/UTS/mount namespaces here"
  command -v ip >/dev/null && command -v nsenter >/dev/null ||
    skip "iproute2 or nsenter missing (scripts/install-deps)"
  command -v mpirun >/dev/null || skip "mpirun not installed (scripts/install-deps)"
  local p
  for p in ft-train-example ft-restore ft-status; do
    [ -x "$BLD/$p" ] || fail "$BLD/$p is not built"
  done
}

# need_python: the PyTorch example's tests run train_gpt.py with ft-python
# (skip, 77, where it lacks torch, mpi4py or numpy), the package from the
# source tree over the library of this build.
need_python() {
  [ -x "$BLD/ft-python" ] || fail "$BLD/ft-python is not built"
  "$BLD/ft-python" -c 'import torch, mpi4py, numpy' 2>/dev/null ||
    skip "$(sed -n 's/^exec "\(.*\)".*/\1/p' "$BLD/ft-python") cannot import torch, mpi4py and numpy (scripts/install-deps)"
  export PYTHONPATH=$SRC/python${PYTHONPATH:+:$PYTHONPATH}
  export FTRT_LIBRARY=$BLD/.libs/libftrt.so.0
  TRAIN_PROGRAM=(python3 "$SRC/examples/python/train_gpt.py")
}

cleanup() {
  local p
  for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null; done
  for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do wait "$p" 2>/dev/null; done
  if [ -n "$CL" ]; then
    ft-cluster down --name "$CL" >/dev/null || echo "cleanup: ft-cluster down --name $CL failed"
  fi
  if [ -n "$KEEP" ]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# up TAG N [--spares S]: (re)make cluster TAG+pid of N hosts; FT_CLUSTER set.
up() {
  local tag=$1; shift
  [ -z "$CL" ] || ft-cluster down --name "$CL" >/dev/null || fail "ft-cluster down --name $CL"
  CL=$tag$$
  CL=${CL:0:16}
  export FT_CLUSTER=$CL
  ft-cluster up "$@" --name "$CL" >"$WORK/up.log" 2>&1 ||
    { cat "$WORK/up.log"; fail "ft-cluster up $* --name $CL failed"; }
}

# launch LOG STEPS [ARGS...]: ft-launch --cluster=$CL ARGS -- ft-train-example
# --steps STEPS "${TRAIN_ARGS[@]}" (the script's shape: --snapshot-every,
# --state-mb); output in $WORK/LOG; RC = its exit status.  A script sets
# TRAIN_PROGRAM to train with another program (python3 train_gpt.py).
TRAIN_PROGRAM=(ft-train-example)
# shell_clean LOG: no error of our scripts' shell in LOG nor in LOG.chaos
# (bash's "ft-launch: line N: ..."): a command of theirs that failed unseen.
SHELL_ERROR='(^|/)(ft-[a-z-]+|lib\.sh): line [0-9]+: '
shell_clean() {
  local f
  for f in "$WORK/$1" "$WORK/$1.chaos"; do
    [ -e "$f" ] || continue
    ! grep -Eq "$SHELL_ERROR" "$f" ||
      die_with "$1" "a script's shell reported an error: $(grep -Em1 "$SHELL_ERROR" "$f")"
  done
}
# hang_watch LOG PID (in the background): should PID, a launch, still run
# 5 s before LIMIT ends it, what every process is doing then and the
# banners mpirun wrote (ft-launch removes them when it ends) are kept in
# LOG.hang, which show prints: a diagnosis of a hang, no part of a verdict.
hang_watch() {
  local f
  # tail ends when PID does; timeout ends tail 5 s before the limit
  timeout "$((LIMIT - 5))" tail --pid="$2" -f /dev/null && return 0
  { ps -eo pid,ppid,stat,wchan:32,etime,args
    for f in "${TMPDIR:-/tmp}"/ft-launch.*/hidden; do
      [ -s "$f" ] && { echo "== $f"; cat "$f"; }
    done; } >"$WORK/$1.hang" 2>&1
}
launch() {
  local log=$1 steps=$2 hw; shift 2
  timeout -s TERM "$LIMIT" ft-launch --cluster="$CL" "$@" -- \
    "${TRAIN_PROGRAM[@]}" --steps "$steps" "${TRAIN_ARGS[@]}" >"$WORK/$log" 2>&1 &
  RC=$!
  hang_watch "$log" "$RC" &
  hw=$!
  wait "$RC"; RC=$?
  kill "$hw" 2>/dev/null; wait "$hw" 2>/dev/null
  shell_clean "$log"
}
# launch_bg LOG STEPS [ARGS...]: the same in the background; LPID = its pid.
launch_bg() {
  local log=$1 steps=$2; shift 2
  : >"$WORK/$log"
  timeout -s TERM "$LIMIT" ft-launch --cluster="$CL" "$@" -- \
    "${TRAIN_PROGRAM[@]}" --steps "$steps" "${TRAIN_ARGS[@]}" >"$WORK/$log" 2>&1 &
  LPID=$! LLOG=$log
  hang_watch "$log" "$LPID" &
  HWPID=$!
  BG_PIDS+=("$LPID" "$HWPID")
}
# head_launch_bg LOG ARGS...: ft-launch ARGS run on the cluster's head (or
# on host $LAUNCH_ON), as on a real cluster (not --cluster: it knows
# nothing of ft-cluster; the hosts come from a hostfile or Slurm), in the
# background, through the words of the array LAUNCH_WITH if set (salloc
# -N5); LPID.
LAUNCH_WITH=()
head_launch_bg() {
  local log=$1; shift
  : >"$WORK/$log"
  timeout -s TERM "$LIMIT" ft-cluster exec --name "$CL" "${LAUNCH_ON:-head}" \
    ${LAUNCH_WITH[@]+"${LAUNCH_WITH[@]}"} ft-launch "$@" -- ft-train-example --steps "$STEPS" "${TRAIN_ARGS[@]}" >"$WORK/$log" 2>&1 &
  LPID=$! LLOG=$log
  hang_watch "$log" "$LPID" &
  HWPID=$!
  BG_PIDS+=("$LPID" "$HWPID")
}
# finish: wait for the background launch (LPID, its log LLOG); RC = its
# exit status.
finish() {
  wait "$LPID"; RC=$?
  [ -z "${HWPID:-}" ] || { kill "$HWPID" 2>/dev/null; wait "$HWPID" 2>/dev/null; }
  HWPID=
  shell_clean "$LLOG"
}

# launch_held LOG STEPS WHEN [ARGS...]: launch_bg with the hold point WHEN
# armed from the start (FT_HOLD, snapshot/hold.h): the job stops at WHEN
# (step=N: once the snapshot of step N is committed everywhere) and waits
# there until ft-chaos has delivered its fault.  Nothing is timed: however
# slow the machine, the fault lands at WHEN.
launch_held() {
  local log=$1 steps=$2 when=$3; shift 3
  HOLD_WHEN=$when
  FT_HOLD=$when launch_bg "$log" "$steps" "$@"
}

# chaos LOG ARGS...: ft-chaos ARGS --when $HOLD_WHEN against the held
# background launch (output in $WORK/LOG.chaos).
chaos() {
  local log=$1; shift
  ft-chaos "$@" --job "$FT_JOB" --when "$HOLD_WHEN" >"$WORK/$log.chaos" 2>&1 && return 0
  cat "$WORK/$log.chaos"
  show "$log"; fail "ft-chaos $* --when $HOLD_WHEN failed"
}

# rehold HOSTS WHEN: move the job's hold, held now at $HOLD_WHEN (kept held
# with ft-chaos --keep-held), to WHEN on each of HOSTS in one step
# (ft-hold arm --replace): the job goes on from the old point and stops at
# WHEN, never running unheld past it; then chaos strikes at WHEN.
rehold() {
  local h
  for h in $1; do
    ft-cluster exec --name "$CL" "$h" ft-hold --job "$FT_JOB" arm --replace "$2" \
      >>"$WORK/rehold.log" 2>&1 || { cat "$WORK/rehold.log"; fail "ft-hold arm --replace $2 on $h"; }
  done
  HOLD_WHEN=$2
}

digest_of() { sed -n 's/^digest \([0-9a-f]*\)$/\1/p' "$WORK/$1" | tail -1; }
resumed_of() { sed -n 's/^resumed from step \([0-9]*\)$/\1/p' "$WORK/$1" | tail -1; }

# reference LOG STEPS [ft-launch ARGS...]: a fault-free run; REF = its digest
reference() {
  local log=$1 steps=$2; shift 2
  launch "$log" "$steps" --job "ref$(od -An -N4 -tu4 /dev/urandom | tr -d " ")" "$@"
  [ "$RC" -eq 0 ] || die_with "$log" "fault-free run: ft-launch exit $RC"
  grep -qx 'fresh start' "$WORK/$log" || die_with "$log" "fault-free run did not start fresh"
  REF=$(digest_of "$log")
  [ -n "$REF" ] || die_with "$log" "fault-free run printed no digest"
}

# shrunk_reference LOG KEPT [ft-launch ARGS...]: REF = the digest of a job
# that trains 8 steps on the cluster's first hosts (ft-launch ARGS), then
# continues on the hosts KEPT alone ("h1 h4 h5"): ft-restore --mode shrink
# on KEPT (the other hosts left out, their stores unread), and the relaunch
# on KEPT resumes from step 8 and runs to step $STEPS.  No fault.
shrunk_reference() {
  local log=$1 kept=$2 job=ref$(od -An -N4 -tu4 /dev/urandom | tr -d " ")
  shift 2
  FT_JOB=$job launch "$log.1" 8 --job "$job" "$@"
  expect_rc "$log.1" 0 "reference: first 8 steps"
  grep -qx 'fresh start' "$WORK/$log.1" || die_with "$log.1" "reference did not start fresh"
  FT_JOB=$job restore "$kept" "$log.2" --mode shrink
  expect_rc "$log.2" 0 "reference: ft-restore --mode shrink on $kept"
  expect_line "$log.2" '^ft-restore: restored version [0-9]+ \(step 8\)' "reference: shrink"
  FT_JOB=$job on "$kept" 2 "$log.3" ft-train-example --steps "$STEPS" "${TRAIN_ARGS[@]}"
  expect_rc "$log.3" 0 "reference: relaunch on $kept"
  expect_resumed "$log.3" 8 8 "reference: relaunch on $kept"
  REF=$(digest_of "$log.3")
  [ -n "$REF" ] || die_with "$log.3" "reference printed no digest"
}

# py_reference LOG STEPS: reference LOG STEPS of the Python example (run
# with --digest-at 12); REF12 = its digest after step 12.
py_reference() {
  reference "$@"
  REF12=$(sed -n 's/^digest-at 12 \([0-9a-f]*\)$/\1/p' "$WORK/$1")
  [ -n "$REF12" ] || die_with "$1" "fault-free run: no digest-at 12 line"
}

# py_shrink LOG TAG: the Python example on 4 hosts, no spare, h4 killed at
# step 12, run to $STEPS: the job shrinks to 3 trainers (its model line
# ends with TAG), resumes from step 12 with the state of REF12, and its loss
# at $STEPS is below the first step's; FIRST and LAST are those losses.
py_shrink() {
  local log=$1 tag=$2
  launch_held "$log" "$STEPS" step=12 --job "$FT_JOB" --restarts 1
  chaos "$log" kill-node h4
  finish
  expect_rc "$log" 0 "shrink: ft-launch --restarts 1"
  expect_line "$log" '^ft-launch: lost host\(s\): h4; no spare left: shrinking to 3 nodes$' "shrink"
  expect_resumed "$log" 12 12 "shrink"
  expect_line "$log" "^model 2 layers .* trainers 3 $tag\$" "shrink: the relaunch"
  expect_line "$log" "^digest-at 12 $REF12\$" "shrink: the state restored on 3 trainers is the fault-free state of step 12"
  FIRST=$(sed -n 's/^step 1 loss //p' "$WORK/$log" | head -1)
  LAST=$(sed -n "s/^step $STEPS loss //p" "$WORK/$log" | tail -1)
  [ -n "$FIRST" ] && [ -n "$LAST" ] || die_with "$log" "shrink: no loss of step 1 or $STEPS"
  awk -v a="$FIRST" -v b="$LAST" 'BEGIN { exit !(b < a) }' ||
    die_with "$log" "shrink: the loss of step $STEPS ($LAST) is not below step 1's ($FIRST)"
}

expect_rc() {  # expect_rc LOG WANT WHAT
  [ "$RC" -eq "$2" ] || die_with "$1" "$3: exit $RC, expected $2"
  shell_clean "$1"
}
expect_line() {  # expect_line LOG ERE WHAT: LOG has a line matching ERE
  grep -Eq -- "$2" "$WORK/$1" || die_with "$1" "$3: no line matching '$2'"
}
expect_no_line() {
  ! grep -Eq -- "$2" "$WORK/$1" || die_with "$1" "$3: unexpected line matching '$2'"
}
expect_digest() {  # expect_digest LOG WHAT: LOG ends with digest REF
  local got; got=$(digest_of "$1")
  [ -n "$got" ] || die_with "$1" "$2: no digest"
  [ "$got" = "$REF" ] || die_with "$1" "$2: digest $got, the fault-free run gave $REF"
}
# expect_resumed LOG LO HI WHAT: the last relaunch resumed from a step S,
# LO <= S <= HI, a multiple of the snapshot interval; RESUMED = S.
expect_resumed() {
  RESUMED=$(resumed_of "$1")
  [ -n "$RESUMED" ] || die_with "$1" "$4: no 'resumed from step S' line"
  [ "$RESUMED" -ge "$2" ] && [ "$RESUMED" -le "$3" ] ||
    die_with "$1" "$4: resumed from step $RESUMED, expected $2..$3"
  [ $((RESUMED % EVERY)) -eq 0 ] || die_with "$1" "$4: resumed from step $RESUMED, not a snapshot step"
}

# on HOSTS PPR LOG PROGRAM...: run PROGRAM with PPR ranks on each of HOSTS
# (in that order: "h1 s1 h3 h4"), with the mpirun line ft-launch uses on this
# cluster and its environment (taken from ft-launch --dry-run; hostfile,
# --map-by, -np replaced).
# What ft-launch --restarts does internally, for the cases that drive
# recovery by hand.  RC = exit status; output in $WORK/LOG.
on() {
  local hosts=$1 ppr=$2 log=$3 dry line i h n=0 hf
  shift 3
  hf=$WORK/hostfile.$log
  dry=$(ft-launch --cluster="$CL" --smp first-rank --dry-run -- FTRT_CHAOS_PROGRAM 2>/dev/null) ||
    fail "ft-launch --dry-run on $CL failed"
  line=$(grep -v '^#' <<<"$dry")
  local -a cmd out=() envs=()
  eval "cmd=($line)"
  # and its environment ("# launch environment: NAME=VALUE", %q-quoted):
  # MPICH's netmod among them (its UCX one hangs in MPI_Finalize here)
  while IFS= read -r h; do
    eval "envs+=(${h#\# launch environment: })"
  done < <(grep '^# launch environment: ' <<<"$dry")
  # Open MPI's hostfile ("H slots=K", --hostfile, --map-by, -np) or MPICH
  # hydra's ("H:K", -f, -n).
  for h in $hosts; do
    case " ${cmd[*]} " in *" -f "*) echo "$h:$ppr" ;; *) echo "$h slots=$ppr" ;; esac
    n=$((n + 1))
  done >"$hf"
  for ((i = 0; i < ${#cmd[@]}; i++)); do
    case ${cmd[i]} in
      --hostfile|-f) out+=("${cmd[i]}" "$hf"); i=$((i + 1)) ;;
      --map-by) out+=(--map-by "ppr:$ppr:node"); i=$((i + 1)) ;;
      -np|-n) out+=("${cmd[i]}" $((n * ppr))); i=$((i + 1)) ;;
      FTRT_CHAOS_PROGRAM) break ;;
      *) out+=("${cmd[i]}") ;;
    esac
  done
  [ "$i" -lt ${#cmd[@]} ] || fail "ft-launch --dry-run printed no program: $line"
  echo "+ on $hosts: $*" >"$WORK/$log"
  timeout -s TERM "$LIMIT" env "${envs[@]}" "${out[@]}" "$@" </dev/null >>"$WORK/$log" 2>&1
  RC=$?
}

# restore HOSTS LOG [ARGS...]: ft-restore, one rank per host of HOSTS.
restore() { local hosts=$1 log=$2; shift 2; on "$hosts" 1 "$log" ft-restore --job "$FT_JOB" "$@"; }

# store_md5 HOST: md5 of every file of job $FT_JOB in HOST's store
store_md5() {
  ft-cluster exec --name "$CL" "$1" sh -c \
    'cd "/dev/shm/ftrt/$FT_JOB" && for f in *; do [ -f "$f" ] && md5sum "$f"; done' 2>&1
}

# kill_two FIRST SECOND LOG: both hosts die at the hold point before the
# job sees either go.  While the job is held, FIRST is cut off and killed
# (nothing reaches the job: FIRST just stops answering), then SECOND is
# killed (the job fails at once; ft-launch's watchdog ends the mpirun that
# waits on FIRST after its --timeout).  Killing them one after the other
# without the partition would race ft-launch, which may look for lost hosts
# between the two kills.  With a 4th word "cut", SECOND is cut off before
# the kills too: a launcher that ends the job as soon as FIRST's remote
# shell goes (Open MPI 5, MPICH) has ft-launch probe while SECOND still
# lives, and a cut-off host fails the probe as a killed one does.
kill_two() {
  chaos "$3" partition "$1" --keep-held
  [ "${4:-}" != cut ] || ft-cluster partition "$2" --name "$CL" >/dev/null ||
    fail "ft-cluster partition $2"
  ft-cluster kill "$1" --name "$CL" >/dev/null &&
    ft-cluster kill "$2" --name "$CL" >/dev/null || fail "ft-cluster kill $1, $2"
}
