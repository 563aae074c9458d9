#!/usr/bin/env bash
# The Python package's tests (pytest): tests/python/test_units.py and
# test_persist.py without MPI, then tests/python/test_mpi.py under mpirun
# -np 2 (an SMP and a trainer on a private store) in sync and in lazy
# capture.  They run on the interpreter ftrt was configured with (ft-python:
# the virtual environment of scripts/install-deps, torch 2.x), then again on
# Debian's /usr/bin/python3 (torch 1.13) when that is another interpreter
# with torch, mpi4py, numpy and pytest.  Skips (77) when ft-python lacks
# one of them.
set -uo pipefail
SRC=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BLD=${FTRT_TOP_BUILDDIR:-$SRC}
PY=$BLD/ft-python
[ -x "$PY" ] || { echo "FAIL: $PY is not built"; exit 1; }
"$PY" -c 'import torch, mpi4py, numpy, pytest' 2>/dev/null ||
  { echo "SKIP: $PY cannot import torch, mpi4py, numpy and pytest (scripts/install-deps)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export PYTHONPATH=$SRC/python${PYTHONPATH:+:$PYTHONPATH}
export FTRT_LIBRARY=$BLD/.libs/libftrt.so.0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in $(compgen -e | grep '^FT_'); do unset "$v"; done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ftrt-py.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export FT_TIMEOUT=60
PYTEST=(-m pytest -q -p no:cacheprovider)
rc=0
# mpi_pytest NP FILE [WHAT]: pytest on tests/python/FILE under mpirun -np
# NP with $PY.  Rank 0 becomes the SMP inside the fixture: its pytest
# output is not the report, rank 1's is (the others' shown on a failure).
mpi_pytest() {
  local np=$1 file=$2 what=${3:-} r
  FT_CAPTURE=${FT_CAPTURE:-sync} timeout 300 mpirun --oversubscribe --bind-to none -np "$np" \
    -x PYTHONPATH -x FTRT_LIBRARY -x FT_STORE_ROOT -x FT_TIMEOUT -x FT_CAPTURE -x FT_JOB \
    sh -c 'exec "$0" "$@" >"'"$WORK"'/out.$OMPI_COMM_WORLD_RANK" 2>&1' \
    "$PY" "${PYTEST[@]}" "$SRC/tests/python/$file"
  r=$?
  cat "$WORK/out.1"
  [ $r -eq 0 ] || { echo "FAIL: $file${what:+ with $what}: mpirun exit $r"; cat "$WORK"/out.[02]; rc=1; }
}
# suite PY NAME: every case on interpreter PY, in store NAME.
suite() {
  local PY=$1
  # a store of its own: the other interpreter's snapshots are not this one's
  export FT_STORE_ROOT=$WORK/store-$2
  mkdir -m 700 "$FT_STORE_ROOT"
  timeout 300 "$PY" "${PYTEST[@]}" "$SRC/tests/python/test_units.py" || rc=1
  # ftrt.load_persisted, on versions tests/mpi/persist-write makes
  FTRT_TOP_BUILDDIR=$BLD timeout 300 "$PY" "${PYTEST[@]}" "$SRC/tests/python/test_persist.py" || rc=1
  for mode in sync lazy; do
    echo "# test_mpi.py, FT_CAPTURE=$mode"
    FT_CAPTURE=$mode FT_JOB=py-$mode mpi_pytest 2 test_mpi.py "FT_CAPTURE=$mode"
  done
  # DCP through ftrt's storage, 2 trainers (FSDP2 shards saved, loaded
  # resharded): on a torch with torch.distributed.checkpoint and FSDP2
  if "$PY" -c 'import torch.distributed.checkpoint.state_dict, torch.distributed.fsdp as f; f.fully_shard' 2>/dev/null; then
    echo "# test_dcp.py"
    FT_JOB=py-dcp mpi_pytest 3 test_dcp.py
  else
    echo "# test_dcp.py skipped on $PY: no torch.distributed.checkpoint with FSDP2"
  fi
  # ft-smp beside Python trainers (ft-launch's default for a Python
  # PROGRAM): torch imported first, ftrt.init() late; the code before it ran
  # on the 2 trainers only, each node's SMP is ft-smp's process without
  # torch, and a second launch resumes from what the first committed.
  echo "# ft-smp beside the trainers, torch imported first"
  local mp=$WORK/mpmd-$2 r
  # The second launch exports a variable with mpirun's -x: every trainer,
  # on either node, has it (an app context's own option, given to each).
  for run in first again; do
    mkdir -p "$mp/$run"
    local more=() mark=unset want="restored step 1"
    [ $run = again ] && { more=(--mpirun-arg -x --mpirun-arg FTRT_TEST_MARK=given); mark=given; want="resumed from step 1"; }
    FT_JOB=py-mpmd-$2 timeout -k 10 180 "$BLD/ft-launch" --nodes 2 --job "py-mpmd-$2" "${more[@]}" -- \
      "$PY" "$SRC/tests/python/mpmd_job.py" "$mp/$run" "$BLD/ft-status" >"$WORK/mpmd-$run" 2>&1
    r=$?
    [ $r -eq 0 ] || { echo "FAIL: ft-smp's job ($run): ft-launch exit $r"; cat "$WORK/mpmd-$run"; rc=1; continue; }
    for t in 0 1; do
      printf 'rank %d: smp ft-smp, torch not loaded, FTRT_TEST_MARK %s\nrank %d: a child importing ftrt: exit 0\nrank %d: %s, bytes equal\n' \
        $t $mark $t $t "$want" |
        cmp -s - "$mp/$run/rank.$t" ||
        { echo "FAIL: ft-smp's job ($run), trainer $t wrote:"; cat "$mp/$run/rank.$t"; cat "$WORK/mpmd-$run"; rc=1; }
    done
  done
  n=$(find "$mp" -name 'before.*' | wc -l)
  [ "$n" -eq 4 ] || { echo "FAIL: the code before ftrt.init() ran in $n processes over two launches of 2 trainers, expected 4"; rc=1; }
  # A trainer that ends without calling ftrt.init() (sys.exit(0) with MPI
  # initialised, as a --help might) ends the job, saying why, instead of
  # leaving its node's ft-smp waiting for it, even when ft-launch was run by
  # a Python program that imported ftrt (its FTRT_TRAINER_PID, the mark of
  # the process that imported it first, is not the trainers' own).
  # timeout only bounds a hang.
  mkdir "$mp/early"
  FTRT_TRAINER_PID=1 FT_JOB=py-early-$2 timeout -k 10 120 "$BLD/ft-launch" --nodes 2 --job "py-early-$2" -- \
    "$PY" "$SRC/tests/python/mpmd_job.py" "$mp/early" "$BLD/ft-status" exit-before-init >"$WORK/mpmd-early" 2>&1
  r=$?
  [ $r -eq 1 ] && grep -q "^ftrt: rank 3 of the job (host .*) is ending without having called ftrt.init(), and its node's SMP (a process of ft-smp) waits in ft_init for every trainer (call ftrt.init() on every trainer, or launch with ft-launch --smp first-rank): ending the job$" "$WORK/mpmd-early" ||
    { echo "FAIL: a trainer ending before ftrt.init(): ft-launch exit $r (expected 1, the job ended with the reason)"; cat "$WORK/mpmd-early"; rc=1; }
  # FT_SMP=ft-smp left in a shell: a script that imports ftrt outside any
  # job ends as it would without it (it is no trainer of an ft-smp job).
  local out
  out=$(FT_SMP=ft-smp timeout -k 10 60 "$PY" -c 'import ftrt; print("ended")' 2>&1); r=$?
  [ $r -eq 0 ] && [ "$out" = ended ] ||
    { echo "FAIL: FT_SMP=ft-smp outside a job: import ftrt exited $r, said: $out (expected exit 0, \"ended\")"; rc=1; }
  # Every trainer ending without ctx.finalize(): the same.
  mkdir "$mp/nofin"
  FT_JOB=py-nofin-$2 timeout -k 10 120 "$BLD/ft-launch" --nodes 2 --job "py-nofin-$2" -- \
    "$PY" "$SRC/tests/python/mpmd_job.py" "$mp/nofin" "$BLD/ft-status" no-finalize >"$WORK/mpmd-nofin" 2>&1
  r=$?
  [ $r -eq 1 ] && grep -q "^ftrt: rank [13] of the job (host .*) is ending without ctx.finalize() (or a \`with ftrt.init() as ctx:\` block), and its node's SMP serves until every trainer finalizes: ending the job$" "$WORK/mpmd-nofin" ||
    { echo "FAIL: trainers ending without ctx.finalize(): ft-launch exit $r (expected 1, the job ended with the reason)"; cat "$WORK/mpmd-nofin"; rc=1; }
  # An exception no trainer catches ends the job (an MPI abort) instead of
  # leaving it waiting in MPI_Finalize for an SMP that serves until every
  # trainer finalizes; the traceback is shown.  timeout only bounds a hang.
  echo "# an uncaught exception after ftrt.init()"
  FT_JOB=py-raise timeout -k 10 120 mpirun --oversubscribe --bind-to none -np 2 \
    -x PYTHONPATH -x FTRT_LIBRARY -x FT_STORE_ROOT -x FT_TIMEOUT -x FT_JOB \
    "$PY" -c 'import ftrt; ctx = ftrt.init(); raise RuntimeError("raised on purpose")' >"$WORK/raise" 2>&1
  r=$?
  if [ $r -eq 124 ] || [ $r -eq 137 ]; then
    echo "FAIL: a trainer's uncaught exception left the job hanging (ended by timeout, exit $r)"; rc=1
  elif [ $r -eq 0 ]; then
    echo "FAIL: a job whose trainer raised exited 0"; rc=1
  elif ! grep -q 'RuntimeError: raised on purpose' "$WORK/raise"; then
    echo "FAIL: the traceback was not shown:"; cat "$WORK/raise"; rc=1
  else
    echo "# the job ended with exit $r, the traceback shown"
  fi
  # train_gpt.py's GPU path refuses, before any MPI, what it cannot run
  # (the GPU run itself is bench/device-run's python stage).
  local gpt=$SRC/examples/python/train_gpt.py
  out=$("$PY" "$gpt" --backend nccl 2>&1); r=$?
  [ $r -eq 2 ] && grep -q -- "--backend nccl reduces CUDA tensors: give --device cuda" <<<"$out" ||
    { echo "FAIL: train_gpt.py --backend nccl on the CPU: exit $r, said: $out"; rc=1; }
  if ! "$PY" -c 'import torch, sys; sys.exit(torch.cuda.is_available())' 2>/dev/null; then
    :  # a GPU here: nothing to refuse
  else
    out=$("$PY" "$gpt" --device cuda 2>&1); r=$?
    [ $r -eq 2 ] && grep -q -- "--device cuda: torch .* sees no CUDA device" <<<"$out" ||
      { echo "FAIL: train_gpt.py --device cuda without a GPU: exit $r, said: $out"; rc=1; }
  fi
  torchft_case "$PY"
}
# torchft_case PY: train_gpt.py --torchft (what ft-bench's
# downtime_vs_torchft runs under torchft) with 2 replica groups on
# loopback, each its own torchrun, and torchft's lighthouse: both train 6
# steps with 2 replicas and end with the same digest.
torchft_case() {
  local PY=$1 bin ports lh r i pids=() d
  if ! "$PY" -c 'import torchft' 2>/dev/null; then
    echo "# train_gpt.py --torchft skipped on $PY: no torchft"
    return
  fi
  echo "# train_gpt.py --torchft: 2 replica groups and a lighthouse on loopback"
  bin=$("$PY" -c 'import os, sys; print(os.path.dirname(sys.executable))')
  # three free ports of loopback: the lighthouse's, each replica's store
  read -ra ports < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  timeout -k 10 180 "$bin/torchft_lighthouse" --min_replicas 2 --quorum_tick_ms 100 \
    --join_timeout_ms 10000 --bind "127.0.0.1:${ports[0]}" >"$WORK/tft-lh" 2>&1 &
  lh=$!
  for i in 0 1; do
    REPLICA_GROUP_ID=$i NUM_REPLICA_GROUPS=2 TORCHFT_LIGHTHOUSE="http://127.0.0.1:${ports[0]}" \
      timeout -k 10 150 "$bin/torchrun" --nnodes=1 --nproc-per-node=1 --master-addr=127.0.0.1 \
      --master-port="${ports[i + 1]}" "$SRC/examples/python/train_gpt.py" --torchft --steps 6 \
      >"$WORK/tft-$i" 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do
    wait "${pids[i]}"
    r=$?
    [ $r -eq 0 ] || { echo "FAIL: train_gpt.py --torchft, replica group $i: exit $r"; cat "$WORK/tft-$i"; rc=1; }
  done
  kill "$lh" 2>/dev/null
  wait "$lh" 2>/dev/null
  for i in 0 1; do
    [ "$(grep -c '^step [1-6] loss [0-9.]* replicas 2$' "$WORK/tft-$i")" -eq 6 ] ||
      { echo "FAIL: train_gpt.py --torchft, replica group $i: not 6 steps with 2 replicas:"; grep '^step' "$WORK/tft-$i"; rc=1; }
  done
  d=$(sed -n 's/^digest \([0-9a-f]\{64\}\)$/\1/p' "$WORK/tft-0")
  [ -n "$d" ] && [ "$(sed -n 's/^digest //p' "$WORK/tft-1")" = "$d" ] ||
    { echo "FAIL: train_gpt.py --torchft: the replica groups' digests differ:"; grep -h '^digest' "$WORK"/tft-[01]; rc=1; }
}
prefix_of() { "$1" -c 'import sys; print(sys.prefix)' 2>/dev/null; }
echo "# on $("$PY" -c 'import torch; print("torch", torch.__version__)') ($PY)"
suite "$PY" configured
SYS=/usr/bin/python3
if [ "$(prefix_of "$SYS")" != "$(prefix_of "$PY")" ] &&
   "$SYS" -c 'import torch, mpi4py, numpy, pytest' 2>/dev/null; then
  echo "# on $("$SYS" -c 'import torch; print("torch", torch.__version__)') ($SYS)"
  suite "$SYS" debian
fi
exit $rc
