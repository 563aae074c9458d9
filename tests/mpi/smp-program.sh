#!/usr/bin/env bash
# ft-smp: the SMPs as a program of their own beside the trainers (MPMD).
# A job whose nodes each run one ft-smp trains, snapshots and resumes with
# the digests of the same job whose first rank of each node is its SMP, and
# the world ranks are the same (an SMP first on each node); a job with
# ft-smp on some nodes only, or two on one, is refused on every rank with a
# message naming the node, before any store is made.  3 virtual nodes of
# 1 SMP + 1 trainer, through mpirun's MPMD form.
. "$(dirname "$0")/lib.sh"
export FT_VIRTUAL_NODE_RANKS=2 FT_JOB=smpprog
SMP=$B/ft-smp
ARGS="--steps 4 --snapshot-every 2 --state-mb 2"
MORE="--steps 8 --snapshot-every 2 --state-mb 2"
mpmd() {  # mpmd NAME SMP-OR-TRAINER... : one app context a rank, in order
  local name=$1 apps=() w; shift
  for w in "$@"; do
    [ ${#apps[@]} -eq 0 ] || apps+=(:)
    case $w in smp) apps+=(-np 1 "$SMP") ;; *) apps+=(-np 1 "$TRAIN_EXE" $MORE) ;; esac
  done
  timeout -k 10 120 mpirun "${apps[@]}" >"$LOGDIR/$name" 2>&1
}

# ft-smp's command line.
"$SMP" --help | grep -q '^usage: ft-smp' || fail "ft-smp --help: no usage"
"$SMP" --bogus >"$LOGDIR/bogus" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "ft-smp: --bogus: unknown argument" "$LOGDIR/bogus" ||
  { cat "$LOGDIR/bogus"; fail "ft-smp --bogus: exit $rc, expected 2 with a message"; }

# The reference: the first rank of each node is its SMP.
FT_JOB=ref train ref 6 $MORE || { log_of ref | tail; fail "the reference run failed"; }
REF=$(digest_of ref)
mpmd mpmd smp trainer smp trainer smp trainer || { log_of mpmd | tail; fail "the job with ft-smp failed"; }
expect_digest mpmd "$REF" "ft-smp's job"
note "ft-smp on each node: digest $REF, the first-rank SMPs' too"
FT_JOB=smpprog "$B/ft-status" --vnode 1 --json | grep -q "\"committed_step\":8" ||
  { FT_JOB=smpprog "$B/ft-status" --vnode 1; fail "ft-smp's job: step 8 not committed on vnode 1"; }

# Resume: the stores ft-smp's SMPs made serve a job of either kind.
mpmd resume smp trainer smp trainer smp trainer || { log_of resume | tail; fail "the resumed job failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/resume" || { log_of resume | head; fail "ft-smp's job did not resume from step 8"; }

# Refusals: a node with no ft-smp, a node with two.
check_refused() {  # NAME WHAT PATTERN
  grep -q "$3" "$LOGDIR/$1" || { log_of "$1" | tail; fail "$2: no message naming the node"; }
  grep -q "^step " "$LOGDIR/$1" && fail "$2: the job trained"
  note "$2: $(grep -m1 -o "node [^ ]* ([^)]*) has [0-9]* process(es) of ft-smp" "$LOGDIR/$1")"
}
FT_JOB=missing mpmd missing smp trainer trainer trainer smp trainer && fail "a node without ft-smp: exited 0"
check_refused missing "a node without ft-smp" "ft_init: node [^ ]* (virtual node 1) has 0 process(es) of ft-smp among its 2: a job started with ft-smp beside its trainers needs exactly one on each node"
FT_JOB=two mpmd two smp trainer smp smp trainer trainer && fail "a node with two ft-smp: exited 0"
check_refused two "a node with two ft-smp" "has 2 process(es) of ft-smp among its 2"
[ ! -e "$FT_STORE_ROOT/vnode0/missing" ] && [ ! -e "$FT_STORE_ROOT/vnode0/two" ] ||
  fail "a refused job made a store"
echo "PASS: ft-smp beside the trainers: the same digests; a node without one, or with two, refused"
