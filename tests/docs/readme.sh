#!/usr/bin/env bash
# The user docs stay true and readable: README.md's C and Python examples
# are the files examples/minimal.c and examples/python/minimal.py (each
# block a run of the file's lines), and both run: on 2 virtual nodes under
# ft-launch a fresh run ends at step 100 and a relaunch resumes from step
# 100 (the Python one skipped, saying so, without torch and mpi4py).
# README.md has no line over 200 characters outside code blocks; no user
# doc tells the project's history ("stop N", a commit hash); every relative
# link in them names a file of the tree.
set -u
S=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${FTRT_TOP_BUILDDIR:-$S}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in $(compgen -e | grep '^FT_'); do unset "$v"; done
T=$(mktemp -d /tmp/ftrt-readme.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }
cd "$S" || exit 1
DOCS=(README.md CONTRIBUTING.md docs/*.md tests/README.md man/*.1)

# block LANG: README.md's first ```LANG block
block() { awk -v l="$1" '$0 == "```" l { on = 1; next } on && /^```/ { exit } on' README.md; }
# contained BLOCK FILE: the block's lines are consecutive lines of FILE
contained() {
  python3 -c 'import sys
b = open(sys.argv[1]).read().splitlines(); f = open(sys.argv[2]).read().splitlines()
sys.exit(0 if b and any(f[i:i + len(b)] == b for i in range(len(f))) else 1)' "$1" "$2"
}
block c >"$T/c"
contained "$T/c" examples/minimal.c || fail "README.md's C example is not examples/minimal.c's text"
block python >"$T/py"
contained "$T/py" examples/python/minimal.py || fail "README.md's Python example is not examples/python/minimal.py's text"

awk '/^```/ { c = !c; next } !c && length > 200 { print FILENAME ":" NR ": " length " characters" }' \
  README.md >"$T/long"
[ ! -s "$T/long" ] || fail "README.md lines over 200 characters: $(cat "$T/long")"
grep -nE '\b[Ss]top [0-9]+\b|\b[0-9a-f]{7,12}\b \(|commit [0-9a-f]{7,}' "${DOCS[@]}" >"$T/hist"
[ ! -s "$T/hist" ] || fail "history in the user docs: $(head -5 "$T/hist")"
for f in README.md CONTRIBUTING.md docs/*.md tests/README.md; do
  for l in $(grep -oE '\]\([^)#]+' "$f" | sed 's/^](//' | grep -v '^[a-z]*:'); do
    [ -e "$(dirname "$f")/$l" ] || fail "$f links to $l, which is not in the tree"
  done
done

# launched NAME RUN PROGRAM...: on 2 virtual nodes, one trainer each; each
# rank's stdout in a file of its own (mpirun --output-filename), since two
# ranks' lines on one stdout can interleave mid-line on a loaded machine;
# prints every rank's output, one file after the other.
launched() {
  local name=$1 run=$2 dir=$T/out-$1-$2; shift 2
  PATH=$B:$S/scripts:$PATH timeout -k 10 120 ft-launch --nodes 2 --ppn 1 --job "readme-$name" \
    --mpirun-arg --output-filename --mpirun-arg "$dir" -- "$@" >"$dir.log" 2>&1 ||
    { cat "$dir.log"; return 1; }
  find "$dir" -name stdout -exec cat {} +
}

# runs NAME PROGRAM...: twice
runs() {
  local name=$1 out; shift
  export FT_STORE_ROOT=$T/store-$name
  out=$(launched "$name" 1 "$@")
  [ "$(grep -c '^done at step 100' <<<"$out")" = 2 ] ||
    { fail "$name: a fresh run did not end at step 100 on both trainers"; echo "$out" | tail; return; }
  ! grep -q '^resumed' <<<"$out" || fail "$name: a fresh run resumed"
  out=$(launched "$name" 2 "$@")
  [ "$(grep -c '^resumed from step 100' <<<"$out")" = 2 ] ||
    { fail "$name: the relaunch did not resume from step 100 on both trainers"; echo "$out" | tail; }
  echo "# $name: ran, and resumed from step 100"
}
runs c "$B/examples/minimal"
if "$B/ft-python" -c 'import torch, mpi4py, numpy' 2>/dev/null; then
  PYTHONPATH=$S/python FTRT_LIBRARY=$B/.libs/libftrt.so.0 FT_PYTHON=$B/ft-python \
    runs python python3 "$S/examples/python/minimal.py"
else
  echo "# the Python example not run: ft-python cannot import torch, mpi4py and numpy"
fi
[ $bad -eq 0 ] && echo PASS
exit $bad
