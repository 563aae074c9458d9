#!/usr/bin/env bash
# ft-launch's plan and refusals, before anything of a job starts: the same
# command lines and environments as users give them, and its stdout,
# stderr and exit code compared byte for byte with what is expected
# (tests/cluster/launch-dryrun.expected).  The cases: this host (--nodes,
# --ppn, --one-per-node, --smp and FT_SMP (ft-smp's app contexts), --ec and
# FT_EC_K/M, --persist, --times, the FT_*
# variables passed on, printf %q of odd words), a hostfile (spare and
# domain= lines, --spares, the probe: --probe, FT_PROBE, the rsh agent), a
# Slurm allocation (SLURM_JOB_NODELIST through ft-nodelist), MPICH's
# launcher (--launcher, FT_LAUNCHER, FT_MPIRUN), every usage
# error, and an ft-cluster of the test's own (its spares, an unreachable
# host left out, OMPI_MCA_btl, the yield rule), which needs root: without
# it those cases are skipped, and said so.  Each case runs on one CPU
# (the yield rule counts them) from one directory holding ft-launch and
# copies of the scripts; the test's own paths and names are written
# @WORK@, @BLD@ (the build directory), @CL@ and @PID@ in the expected
# file, the temporary directory ft-launch.XXXXXX.  FTRT_RECORD=PROGRAM writes the expected file anew from
# PROGRAM's answers instead (a change of ft-launch's words: the diff of
# the file shows it whole).
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"

C_LAUNCH=$BLD/ft-launch
[ -x "$C_LAUNCH" ] || fail "$C_LAUNCH is not built (make builds it)"
EXPECTED=$SRC/tests/cluster/launch-dryrun.expected
RECORD=${FTRT_RECORD:-}
command -v taskset >/dev/null || skip "taskset missing (util-linux)"
D=$WORK/bin
mkdir -p "$D" "$WORK/tmp" "$WORK/case" "$WORK/agents"
cp "$SRC/scripts/ft-cluster" "$SRC/scripts/ft-rsh" \
  "$SRC/scripts/ft-nodelist" "$C_LAUNCH" "$D/" || fail "cannot copy the programs"
[ -z "$RECORD" ] || cp "$RECORD" "$D/ft-launch-record" || fail "cannot copy $RECORD"
# The ft-smp next to ft-launch (--smp ft-smp; removed for the last case).
printf '#!/bin/sh\n' >"$D/ft-smp"
chmod +x "$D/ft-smp"
# An agent of ours on PATH, so that "first found on PATH" has one answer.
printf '#!/bin/sh\nexit 0\n' >"$WORK/agents/myrsh"
chmod +x "$WORK/agents/myrsh"
CASE_PATH=$WORK/agents:$PATH
CASES=0 DIFFS=0
: >"$WORK/got"

# run_as PROG VAR=VALUE... -- ARGS...: PROG ARGS in a clean environment
# (PATH, TMPDIR, LANG and the given variables), in $WORK/case, on one CPU;
# its answer, as the expected file holds it, appended to $WORK/got.
run_as() {
  local prog=$1 vars=() out=$WORK/run
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  (cd "$WORK/case" && env -i PATH="$CASE_PATH" TMPDIR="$WORK/tmp" \
    LANG="${LANG:-C.UTF-8}" ${vars[@]+"${vars[@]}"} taskset -c 0 "$prog" "$@" \
    >"$out.out" 2>"$out.err" </dev/null)
  echo "exit $?" >"$out.rc"
  { cat "$out.rc"; echo "-- stdout"; cat "$out.out"; echo "-- stderr"; cat "$out.err"; } |
    sed -E -e "s#$WORK#@WORK@#g" -e "s#$BLD/#@BLD@/#g" \
      -e 's#/ft-launch\.[A-Za-z0-9]{6}#/ft-launch.XXXXXX#g' \
      ${CL:+-e "s#$CL#@CL@#g"} -e "s#nolaunch$$#nolaunch@PID@#g"
}

# same NAME [VAR=VALUE...] -- ARGS...: ft-launch answers as expected.
same() {
  local name=$1 want
  shift
  CASES=$((CASES + 1))
  if [ -n "$RECORD" ]; then
    { echo "== $name"; run_as "$D/ft-launch-record" "$@"; } >>"$WORK/got"
    printf 'recorded %s\n' "$name"
    return 0
  fi
  run_as "$D/ft-launch" "$@" >"$WORK/case.got"
  want=$(awk -v n="== $name" '$0 == n { on = 1; next } on && /^== / { exit } on' "$EXPECTED")
  if [ "$want" != "$(cat "$WORK/case.got")" ]; then
    echo "DIFF in $name: ${*}"
    diff <(printf '%s\n' "$want") "$WORK/case.got" | head -20
    DIFFS=$((DIFFS + 1))
    return 1
  fi
  printf 'same %s (%s)\n' "$name" "$(head -n 1 "$WORK/case.got")"
}

# ---- this host -----------------------------------------------------------------
same local -- --dry-run -- prog a b
same odd-words -- --dry-run --nodes 3 --ppn 2 -- prog 'a b' '$HOME' "it's" '' '~x' \
  'a=~b' 'a,b' $'tab\there' $'new\nline' 'é' '#c' 'd#' '*?[]' '{x}' '!x' 'x;y|z&'
same ppn-4 -- --dry-run --nodes 1 --ppn 4 -- prog
same one-per-node -- --dry-run --one-per-node --nodes 2 -- ft-restore --mode shrink
same ec -- --dry-run --ec 2+1 --nodes 3 -- prog
same ec-env FT_EC_K=2 FT_EC_M=1 -- --dry-run --nodes 3 -- prog
same ec-env-too-big FT_EC_K=3 FT_EC_M=1 -- --dry-run --nodes 2 -- prog
same ec-too-big -- --dry-run --ec 3+1 --nodes 2 -- prog
same ec-tool FT_EC_K=3 FT_EC_M=1 -- --dry-run --one-per-node --nodes 3 -- ft-restore
same ec-env-k0 FT_EC_K=0 FT_EC_M=1 -- --dry-run --nodes 2 -- prog
same ec-bad -- --dry-run --ec 3 -- prog
same job-timeout-fresh -- --dry-run --job lj --timeout 9 --fresh --nodes 2 -- prog
same env-vars FT_JOB=fromenv FT_TIMEOUT=1e2 FT_ZED=1 FT_A=2 FT_REBUILD=replace 'FT_A-B=3' \
  -- --dry-run -- prog
same timeout-0 -- --dry-run --timeout 0 -- prog
same timeout-big -- --dry-run --timeout 86401 -- prog
same timeout-word FT_TIMEOUT=abc -- --dry-run -- prog
same timeout-dot -- --dry-run --timeout .5 -- prog
same job-slash -- --dry-run --job 'a/b' -- prog
same job-dot -- --dry-run --job .x -- prog
same equals -- --dry-run --nodes=2 --ppn=1 --job=j1 -- prog
same dry-run-equals -- --nodes 2 --dry-run=prog arg
same leading-zero -- --dry-run --nodes 010 --ppn 01 -- prog
same persist-relative -- --dry-run --nodes 2 --persist store/disk -- prog
same persist-absolute -- --dry-run --persist "$WORK/disk" -- prog
same times -- --dry-run --times "$WORK/times.txt" -- prog
ln -sf "$WORK/times.txt" "$WORK/times.link"
same times-link -- --dry-run --times "$WORK/times.link" -- prog
same times-device -- --dry-run --times /dev/null -- prog
# Refused before anything starts, also without --dry-run.
same times-cannot-append -- --times "$WORK/no/such/dir/t" -- prog
same persist-cannot-make -- --persist /proc/ftrt-no/disk -- prog
same python FT_PYTHON=/opt/py/bin/python3 -- --dry-run -- python3 train.py
same python-path -- --dry-run -- python train.py
same mpirun-args -- --dry-run --mpirun-arg --mca --mpirun-arg btl --mpirun-arg self \
  --mpirun-arg --nooversubscribe -- prog
# Each node's SMP a process of ft-smp: by --smp, FT_SMP, or a Python program.
same smp -- --dry-run --smp ft-smp --nodes 2 --ppn 2 -- prog a
same smp-env FT_SMP=ft-smp -- --dry-run --nodes 2 -- prog
same smp-one-node -- --dry-run --smp=ft-smp --nodes 1 -- prog
same smp-first-rank FT_SMP=ft-smp -- --dry-run --smp first-rank -- python3 train.py
same smp-python-one-per-node -- --dry-run --one-per-node --nodes 2 -- python3 tool.py
# Python behind a wrapper: env's words before it, or a script whose "#!"
# line runs it (a path, or found on PATH); a shell script is not Python.
printf '#!/usr/bin/env -S python3 -u\n' >"$WORK/case/train.py"
printf '#!/usr/bin/python3.11\n' >"$WORK/agents/trainpy"
printf '#!/bin/sh\nexec python3 "$@"\n' >"$WORK/case/wrap.sh"
chmod +x "$WORK/case/train.py" "$WORK/agents/trainpy" "$WORK/case/wrap.sh"
same smp-python-env -- --dry-run --nodes 2 -- env -u HOME OMP_NUM_THREADS=1 python3 t.py
same smp-python-script -- --dry-run --nodes 2 -- ./train.py --lr 1
same smp-python-on-path -- --dry-run --nodes 2 -- trainpy
same smp-shell-script -- --dry-run --nodes 2 -- ./wrap.sh t.py
same smp-env-shell -- --dry-run --nodes 2 -- env A=1 ./wrap.sh t.py
# env's -S string (attached, quoted, --split-string=), NAME=VALUE after
# "--"; a script found in the current directory; a FIFO is not read.
printf '#!/usr/bin/env -S "python3" -u\n' >"$WORK/case/split.py"
printf '#!/usr/bin/env -SA=1 python3\n' >"$WORK/case/split2.py"
chmod +x "$WORK/case/split.py" "$WORK/case/split2.py"
rm -f "$WORK/case/fifo"
mkfifo "$WORK/case/fifo" && chmod +x "$WORK/case/fifo"
same smp-env-split -- --dry-run --nodes 2 -- env -S 'OMP_NUM_THREADS=1 python3 -u' t.py
same smp-env-split-attached -- --dry-run --nodes 2 -- env -Spython3 t.py
same smp-env-split-long -- --dry-run --nodes 2 -- env --split-string=python3 t.py
same smp-env-after-dashes -- --dry-run --nodes 2 -- env -- A=1 python3 t.py
same smp-env-path -- --dry-run --nodes 2 -- env PATH=/my/venv/bin python3 t.py
same smp-script-split -- --dry-run --nodes 2 -- ./split.py
same smp-script-split-attached -- --dry-run --nodes 2 -- ./split2.py
same smp-script-in-cwd -- --dry-run --nodes 2 -- split.py
same smp-fifo -- --dry-run --nodes 2 -- ./fifo
same smp-args -- --dry-run --smp ft-smp --nodes 2 --ec 1+1 --mpirun-arg --mca --mpirun-arg btl \
  --mpirun-arg self,tcp -- prog
same smp-ctx-args -- --dry-run --smp ft-smp --nodes 2 --mpirun-arg -x --mpirun-arg FOO=bar \
  --mpirun-arg --mca --mpirun-arg btl --mpirun-arg self,tcp --mpirun-arg --wdir=/tmp \
  --mpirun-arg -x --mpirun-arg BAR -- prog
same smp-ctx-args-mpich -- --dry-run --launcher mpich --smp ft-smp --nodes 2 --ppn 2 \
  --mpirun-arg -env --mpirun-arg FOO --mpirun-arg bar --mpirun-arg -genv --mpirun-arg A \
  --mpirun-arg 1 --mpirun-arg -wdir --mpirun-arg /tmp -- prog
same smp-env-one-per-node FT_SMP=ft-smp -- --dry-run --one-per-node --nodes 2 -- ft-restore
same smp-bad -- --dry-run --smp both -- prog
same smp-env-bad FT_SMP=yes -- --dry-run -- prog
same smp-one-per-node -- --dry-run --smp ft-smp --one-per-node -- ft-restore
same smp-slurm 'SLURM_JOB_NODELIST=n[1-3]' -- --dry-run --smp ft-smp -- prog
same smp-mpich -- --dry-run --launcher mpich --smp ft-smp --nodes 2 --ppn 2 -- prog

# ---- usage ---------------------------------------------------------------------
same help -- --help
same help-short -- --nodes 2 -h --bogus
same help-equals -- --help=x
same no-args --
same no-program -- --nodes 2
same needs-value -- --nodes
same mpirun-arg-needs-value -- --mpirun-arg
# An app context's own option as the last --mpirun-arg, short of its value.
same mpirun-arg-ctx-short -- --dry-run --nodes 2 --mpirun-arg -x -- prog
same mpirun-arg-ctx-short-mpich -- --dry-run --launcher mpich --nodes 2 --mpirun-arg -env \
  --mpirun-arg A -- prog
same unknown -- --frobnicate -- true
same unknown-dash -- - prog
same ppn-0 -- --ppn 0 -- true
same nodes-x -- --nodes x -- true
same spares-neg -- --spares -1 -- true
same restarts-x -- --restarts x -- true
same exclusive -- --cluster --hostfile /dev/null -- true
same probe-tries FT_PROBE_TRIES=0 -- --dry-run -- true
same probe-cluster -- --cluster --probe x -- true
same cluster-name -- --cluster=Bad_Name -- true
same after-program -- --dry-run --nodes 2 prog --nodes 3 -- x
same after-program-equals -- --dry-run prog --ppn=3 -- x
same after-program-empty -- --dry-run prog '' -- x
same program-dashdash -- --dry-run --nodes 2 prog -- x
same after-program-probe -- --dry-run prog --probe p -- x
same after-program-verbose -- --dry-run prog --verbose -- x
same after-program-equals-only -- --dry-run prog =x -- y
# --OPTION=VALUE for an option that takes one; refused for the others.
same flag-equals -- --dry-run=yes -- prog
same verbose-equals -- --dry-run --verbose=1 -- prog
same unknown-equals -- --dry-run --bogus=1 -- prog
same dashdash-equals -- --dry-run --=x prog
same mpirun-arg-equals -- --dry-run --mpirun-arg=--nooversubscribe -- prog
same cluster-equals-empty -- --dry-run --cluster= -- prog
same cluster-name-env FT_CLUSTER=Bad_Name -- --cluster --dry-run -- true
# --cluster C: C is the cluster only when -- or an option of ft-launch's
# follows it; else C starts PROGRAM.
same cluster-not-a-name -- --dry-run --cluster Bad_Name --nodes 2 -- x
same cluster-then-probe -- --dry-run --cluster c1 --probe=p -- x

# ---- a hostfile ----------------------------------------------------------------
printf 'n1 slots=8 domain=rackA\n# a comment\n\n  n2\tdomain=rackB # n9\nn3 spare domain=rackA\nn4 slots=1\ns9 spare\n' \
  >"$WORK/hosts"
printf 'x1 spare\nx2 spare\n' >"$WORK/only-spares"
same hostfile -- --dry-run --hostfile "$WORK/hosts" -- prog
same hostfile-nodes -- --dry-run --hostfile "$WORK/hosts" --nodes 2 --spares 1 --ppn 3 -- prog
same hostfile-spares-01 -- --dry-run --hostfile "$WORK/hosts" --nodes 2 --spares 01 -- prog
same hostfile-too-few -- --dry-run --hostfile "$WORK/hosts" --nodes 4 -- prog
same smp-hostfile -- --dry-run --smp ft-smp --hostfile "$WORK/hosts" --spares 1 --ppn 2 -- prog
same smp-mpich-hostfile -- --dry-run --launcher mpich --hostfile "$WORK/hosts" -- python3 t.py
same smp-ompi5 -- --dry-run --launcher ompi5 --smp ft-smp --hostfile "$WORK/hosts" -- prog
same hostfile-spares-big -- --dry-run --hostfile "$WORK/hosts" --spares 5 -- prog
same hostfile-missing -- --dry-run --hostfile "$WORK/no-such-file" -- prog
same hostfile-only-spares -- --dry-run --hostfile "$WORK/only-spares" -- prog
same probe-given -- --dry-run --hostfile "$WORK/hosts" --probe 'rsh -l me' -- prog
same probe-env FT_PROBE='ssh -p 2222' FT_PROBE_TRIES=1 -- --dry-run --hostfile "$WORK/hosts" -- prog
same probe-blank -- --dry-run --hostfile "$WORK/hosts" --probe '   ' -- prog
same agent-env 'OMPI_MCA_plm_rsh_agent=nosuch -x : myrsh -q' -- --dry-run --hostfile "$WORK/hosts" -- prog
same agent-none 'OMPI_MCA_plm_rsh_agent=nosuch -x : nosuch2' -- --dry-run --hostfile "$WORK/hosts" -- prog
same agent-arg -- --dry-run --hostfile "$WORK/hosts" --mpirun-arg --mca --mpirun-arg plm_rsh_agent \
  --mpirun-arg 'myrsh -v' -- prog
same plm-given -- --dry-run --hostfile "$WORK/hosts" --mpirun-arg --mca --mpirun-arg plm \
  --mpirun-arg isolated -- prog

# ---- a Slurm allocation --------------------------------------------------------
same slurm 'SLURM_JOB_NODELIST=node[01-04]' -- --dry-run --nodes 2 --spares 1 -- prog
same slurm-all 'SLURM_JOB_NODELIST=gpu[1-2],cpu3' -- --dry-run -- prog
same slurm-bad 'SLURM_JOB_NODELIST=node[01-' -- --dry-run -- prog
same slurm-too-few 'SLURM_JOB_NODELIST=n[1-2]' -- --dry-run --nodes 5 -- prog
same slurm-spares-big 'SLURM_JOB_NODELIST=n[1-4]' -- --dry-run --nodes 2 --spares 3 -- prog
same slurm-hostfile-wins 'SLURM_JOB_NODELIST=n[1-4]' -- --dry-run --hostfile "$WORK/hosts" -- prog
same slurm-probe 'SLURM_JOB_NODELIST=n[1-3]' FT_PROBE=myrsh -- --dry-run -- prog
same slurm-rmaps 'SLURM_JOB_NODELIST=n[1-3]' -- --dry-run --mpirun-arg --mca --mpirun-arg rmaps \
  --mpirun-arg round_robin -- prog
same slurm-args-no-overlap 'SLURM_JOB_NODELIST=n[1-3]' -- --dry-run --mpirun-arg --mca \
  --mpirun-arg plm_slurm_args --mpirun-arg '--exclusive' -- prog
same slurm-args-env-no-overlap 'SLURM_JOB_NODELIST=n[1-3]' 'OMPI_MCA_plm_slurm_args=--cpu-bind=none' \
  -- --dry-run -- prog
same slurm-args-overlap 'SLURM_JOB_NODELIST=n[1-3]' 'OMPI_MCA_plm_slurm_args=--overlap --cpu-bind=none' \
  -- --dry-run -- prog
same no-cluster -- --dry-run --cluster "nolaunch$$" -- true
same no-cluster-env "FT_CLUSTER=nolaunch$$" -- --dry-run --cluster -- true
same cluster-then-option -- --dry-run --cluster "nolaunch$$" --nodes=2 -- true
same cluster-then-verbose -- --dry-run --cluster "nolaunch$$" --verbose -- true
same cluster-program-first "FT_CLUSTER=nolaunch$$" -- --dry-run --cluster prog arg -- x
same cluster-then-empty "FT_CLUSTER=nolaunch$$" -- --dry-run --cluster prog '' -- x
same cluster-last-word "FT_CLUSTER=nolaunch$$" -- --dry-run --cluster prog

# ---- another MPI's launcher -----------------------------------------------------
same mpich FT_LAUNCHER=mpich -- --dry-run --nodes 3 --ppn 2 -- prog
same mpich-hostfile -- --dry-run --launcher mpich --hostfile "$WORK/hosts" --spares 1 -- prog
same mpich-agent HYDRA_LAUNCHER_EXEC=${WORK}/agents/myrsh FT_LAUNCHER=mpich -- --dry-run \
  --hostfile "$WORK/hosts" -- prog
same mpich-agent-arg -- --dry-run --launcher=mpich --hostfile "$WORK/hosts" --mpirun-arg \
  -launcher --mpirun-arg rsh -- prog
same mpich-program FT_MPIRUN=/opt/mpich/bin/mpiexec -- --dry-run --launcher mpich -- prog
same mpich-slurm 'SLURM_JOB_NODELIST=n[1-3]' -- --dry-run --launcher mpich -- prog
same ompi5 FT_LAUNCHER=ompi5 -- --dry-run --nodes 3 --ppn 2 -- prog
same ompi5-hostfile -- --dry-run --launcher ompi5 --hostfile "$WORK/hosts" --spares 1 -- prog
same ompi5-agent PRTE_MCA_plm_ssh_agent=${WORK}/agents/myrsh FT_LAUNCHER=ompi5 -- --dry-run \
  --hostfile "$WORK/hosts" -- prog
same ompi5-agent-arg OMPI_MCA_plm_rsh_agent=nosuch -- --dry-run --launcher=ompi5 --hostfile "$WORK/hosts" \
  --mpirun-arg --prtemca --mpirun-arg plm_ssh_agent --mpirun-arg "${WORK}/agents/myrsh -x" -- prog
same ompi5-slurm 'SLURM_JOB_NODELIST=n[1-3]' -- --dry-run --launcher ompi5 -- prog
# The daemons' grace before SIGKILL: 0 unless the user set it.
same grace-arg -- --dry-run --nodes 2 --mpirun-arg --mca --mpirun-arg odls_base_sigkill_timeout \
  --mpirun-arg 5 -- prog
same grace-env OMPI_MCA_odls_base_sigkill_timeout=5 -- --dry-run --nodes 2 -- prog
same launcher-bad -- --dry-run --launcher lam -- prog
same launcher-bad-env FT_LAUNCHER=mpich4 -- --dry-run -- prog
same launcher-empty -- --dry-run --launcher '' -- prog

# ---- an ft-cluster (root) ------------------------------------------------------
if [ "$(id -u)" -ne 0 ] || ! unshare --net --uts --mount true 2>/dev/null ||
  ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
  echo "SKIP: the --cluster cases need root and network namespaces"
else
  cluster_up ldry 3 --spares 2
  same cluster -- --dry-run --cluster "$CL" -- prog
  same cluster-env "FT_CLUSTER=$CL" -- --dry-run --cluster --nodes 2 --spares 1 --ppn 2 -- prog
  same cluster-one -- --dry-run --cluster "$CL" --nodes 1 --one-per-node -- ft-restore
  same cluster-btl-env OMPI_MCA_btl=self,vader -- --dry-run --cluster="$CL" -- prog
  same cluster-btl-arg -- --dry-run --cluster="$CL" --mpirun-arg --mca --mpirun-arg btl \
    --mpirun-arg '^tcp' -- prog
  same cluster-pml OMPI_MCA_pml=ucx OMPI_MCA_mpi_yield_when_idle=0 -- --dry-run --cluster="$CL" -- prog
  same cluster-too-few -- --dry-run --cluster "$CL" --nodes 9 -- prog
  same cluster-program-named -- --cluster "$CL" --dry-run -- prog
  same cluster-then-verbose-up -- --cluster "$CL" --verbose --dry-run -- prog
  same cluster-env-program "FT_CLUSTER=$CL" -- --dry-run --cluster prog arg -- x
  "$FT_CLUSTER_CMD" partition h2 --name "$CL" >/dev/null || fail "ft-cluster partition h2"
  same cluster-unreachable -- --dry-run --cluster "$CL" -- prog
  "$FT_CLUSTER_CMD" heal h2 --name "$CL" >/dev/null || fail "ft-cluster heal h2"
  same cluster-mpich -- --dry-run --cluster "$CL" --launcher mpich --ppn 2 -- prog
  same cluster-mpich-ucx UCX_TLS=tcp -- --dry-run --cluster "$CL" --launcher mpich -- prog
  same cluster-ompi5 -- --dry-run --cluster "$CL" --launcher ompi5 --ppn 2 -- prog
  same cluster-ompi5-btl OMPI_MCA_btl=self,tcp -- --dry-run --cluster "$CL" --launcher ompi5 -- prog
  same cluster-smp -- --dry-run --cluster "$CL" --smp ft-smp --ppn 2 -- prog
  same cluster-smp-mpich -- --dry-run --cluster "$CL" --launcher mpich -- python3 t.py
fi

# The ft-python next to ft-launch (the build's), after the rest: both see it.
printf '#!/bin/sh\n' >"$D/ft-python"
chmod +x "$D/ft-python"
same python-here -- --dry-run -- python3 train.py
# No ft-smp next to ft-launch nor on PATH.
rm -f "$D/ft-smp"
same smp-missing PATH=/usr/bin:/bin -- --dry-run -- python3 train.py

if [ -n "$RECORD" ]; then
  cp "$WORK/got" "$EXPECTED" || fail "cannot write $EXPECTED"
  ok "$CASES cases recorded into $EXPECTED from $RECORD"
  exit 0
fi
[ "$DIFFS" -eq 0 ] || fail "$DIFFS of $CASES cases differ from $EXPECTED"
ok "$CASES cases: ft-launch prints, says and exits as expected"
