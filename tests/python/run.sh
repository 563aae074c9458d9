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
