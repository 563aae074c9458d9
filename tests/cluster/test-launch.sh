#!/usr/bin/env bash
# ft-launch on this host (no cluster, no root needed): the command line it
# builds, the FT_* variables the ranks see, virtual nodes, exit statuses and
# usage errors.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_mpi
L=$FT_LAUNCH

expect_rc() {  # expect_rc RC MESSAGE-PATTERN ARGS...: ft-launch ARGS fails so
  local want=$1 pat=$2 rc; shift 2
  "$L" "$@" >"$WORK/rc.out" 2>&1; rc=$?
  [ $rc -eq "$want" ] || { cat "$WORK/rc.out"; fail "ft-launch $*: exit $rc, expected $want"; }
  grep -q -- "$pat" "$WORK/rc.out" || { cat "$WORK/rc.out"; fail "ft-launch $*: no '$pat'"; }
}

grep -q -- '--restarts R' <<<"$("$L" --help)" || fail "--help"
expect_rc 2 'no PROGRAM' --nodes 2
expect_rc 2 'expected a number' --restarts x -- true
expect_rc 2 'needs at least 4 nodes' --nodes 2 --ec 3+1 -- true
FT_EC_K=3 FT_EC_M=1 expect_rc 2 'FT_EC_K=3 FT_EC_M=1 needs at least 4 nodes' --nodes 2 -- true
FT_EC_K=0 FT_EC_M=1 expect_rc 2 'expected K >= 1' --nodes 2 -- true
expect_rc 2 'expected K+M' --ec 3 -- true
expect_rc 2 'job name' --job 'a/b' -- true
expect_rc 2 'timeout' --timeout 0 -- true
expect_rc 2 'exclude each other' --cluster --hostfile /dev/null -- true
expect_rc 2 'unknown option' --frobnicate -- true
expect_rc 2 '--ppn' --ppn 0 -- true
ok "usage errors exit 2 with a message"
# A failing program is retried: ft-restore runs (and here finds no store).
FT_STORE_ROOT=$WORK/store expect_rc 1 'restart 1 of 1: attempt failed with status 1; recovering' --restarts 1 --job none -- false
grep -q "ft-restore failed" "$WORK/rc.out" || { cat "$WORK/rc.out"; fail "--restarts did not run ft-restore"; }
ok "--restarts: a failed attempt runs ft-restore before relaunching"

out=$("$L" --dry-run --nodes 3 --ppn 2 -- prog a b) || fail "--dry-run"
for w in ' -np 9 ' ' -x FT_VIRTUAL_NODE_RANKS ' ' -x FT_JOB ' ' -x FT_TIMEOUT ' ' --oversubscribe '; do
  [[ " $out " == *"$w"* ]] || fail "local dry run lacks '$w': $out"
done
[[ $out == *" prog a b "* ]] || fail "program not last: $out"
printf 'n1 slots=8\n# comment\n\nn2\nn3 slots=1\n' >"$WORK/hosts"
out=$("$L" --dry-run --hostfile "$WORK/hosts" --nodes 2 --ppn 1 -- prog) || fail "--dry-run --hostfile"
[ "$(grep '^# hostfile:' <<<"$out" | tr '\n' ';')" = "# hostfile: n1 slots=2;# hostfile: n2 slots=2;" ] ||
  fail "hostfile of the job: $out"
for w in ' --map-by ppr:2:node ' ' -np 4 '; do
  [[ " $out " == *"$w"* ]] || fail "hostfile dry run lacks '$w': $out"
done
printf 'localhost slots=2 domain=rack9\n' >"$WORK/racks"
out=$("$L" --hostfile "$WORK/racks" --ppn 1 -- env 2>/dev/null) || fail "hostfile with a domain label"
[ "$(grep -c '^FT_FAILURE_DOMAINS=localhost=rack9$' <<<"$out")" -eq 2 ] ||
  fail "domain=rack9 of the hostfile did not reach both ranks as FT_FAILURE_DOMAINS"
ok "a hostfile's domain= label reaches every rank as FT_FAILURE_DOMAINS"
expect_rc 1 'names 3 hosts' --hostfile "$WORK/hosts" --nodes 4 -- true
ok "mpirun command: -np N*(P+1), ppr:(P+1):node on the first N hosts, -x FT_*"

FT_EXTRA_T=x$$ "$L" --nodes 2 --ppn 1 --job lj --ec 1+1 --timeout 9 -- sh -c \
  'echo "env $OMPI_COMM_WORLD_RANK $FT_VIRTUAL_NODE_RANKS $FT_JOB $FT_EC_K+$FT_EC_M $FT_TIMEOUT $FT_EXTRA_T"' \
  >"$WORK/env.out" 2>&1 || { cat "$WORK/env.out"; fail "local run"; }
grep -qx 'ft-launch: 2 nodes x (1 trainer + 1 SMP) = 4 ranks, job lj' "$WORK/env.out" ||
  { cat "$WORK/env.out"; fail "no summary line"; }
got=$(grep '^env ' "$WORK/env.out" | sort -k2n | tr '\n' ';')
want="env 0 2 lj 1+1 9 x$$;env 1 2 lj 1+1 9 x$$;env 2 2 lj 1+1 9 x$$;env 3 2 lj 1+1 9 x$$;"
[ "$got" = "$want" ] || { cat "$WORK/env.out"; fail "ranks saw: $got"; }
ok "virtual nodes: 4 ranks, FT_VIRTUAL_NODE_RANKS=2, FT_* reach every rank"

"$L" --ppn 2 -- "$MPI_NODES" --mb 1 --expect-nodes 1 --expect-ppn 3 >"$WORK/one.out" 2>&1 ||
  { cat "$WORK/one.out"; fail "one node, 2 trainers"; }
grep -q '^mpi_nodes: 3 ranks on 1 nodes' "$WORK/one.out" || { cat "$WORK/one.out"; fail "one node layout"; }
FT_JOB=fromenv "$L" -- true >"$WORK/job.out" 2>&1 || fail "FT_JOB from the environment"
grep -qx 'ft-launch: 1 node x (1 trainer + 1 SMP) = 2 ranks, job fromenv' "$WORK/job.out" ||
  { cat "$WORK/job.out"; fail "FT_JOB from the environment is not the default job"; }
"$L" --ppn 1 -- sh -c 'exit 3' >"$WORK/st.out" 2>&1; rc=$?
[ $rc -eq 3 ] || { cat "$WORK/st.out"; fail "a rank's exit 3 came back as $rc"; }
ok "one node of P+1 ranks; FT_JOB default from the environment; exit status kept"

# scripts/install-deps: one line per step; apt's output only when a step fails.
mkdir -p "$WORK/fakebin"
printf '#!/bin/sh\nexit 1\n' >"$WORK/fakebin/dpkg-query"
printf '#!/bin/sh\nexec "$@"\n' >"$WORK/fakebin/sudo"
cat >"$WORK/fakebin/apt-get" <<'EOS'
#!/bin/sh
i=0; while [ $i -lt 50 ]; do echo "apt noise $i: $*"; i=$((i + 1)); done
[ -z "${FAKE_APT_FAIL:-}" ] || case "$*" in *install*) echo "E: Unable to locate package x" >&2; exit 100 ;; esac
EOS
chmod +x "$WORK/fakebin/"*
PATH=$WORK/fakebin:$PATH "$SRC/scripts/install-deps" >"$WORK/deps.out" 2>&1 ||
  { cat "$WORK/deps.out"; fail "install-deps with a working (fake) apt-get failed"; }
! grep -q 'apt noise' "$WORK/deps.out" && [ "$(wc -l <"$WORK/deps.out")" -le 5 ] &&
  [ "$(grep -vc '^install-deps: ' "$WORK/deps.out")" -eq 0 ] ||
  { cat "$WORK/deps.out"; fail "install-deps is not one line per step"; }
FAKE_APT_FAIL=1 PATH=$WORK/fakebin:$PATH "$SRC/scripts/install-deps" >"$WORK/deps.out" 2>&1 &&
  { cat "$WORK/deps.out"; fail "install-deps succeeded although apt-get install failed"; }
grep -q '^E: Unable to locate package x$' "$WORK/deps.out" && grep -q 'apt noise 49: .*install' "$WORK/deps.out" &&
  grep -q '^install-deps: .*failed' "$WORK/deps.out" ||
  { cat "$WORK/deps.out"; fail "a failed step does not show apt-get's full output"; }
ok "install-deps: one line per step, apt-get's whole output when a step fails"
