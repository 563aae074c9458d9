#!/usr/bin/env bash
# ft-persist on versions written by persist/'s own writer (persist-write,
# no job and no SMP flush): list (newest first by epoch, then version; an
# interrupted flush counted as incomplete; a damaged MANIFEST counted and
# named), verify (OK for each; one flipped byte names the rank file and
# block, exit 5), export (every byte of every .npy equal to what was
# written: global tensors put together from uneven and overlapping slices
# across a 4 MiB block, private ones per rank, names with '/' and '..' kept
# in index.json; read back by numpy when ft-python has it), export of the
# damaged version refused with nothing left, `export latest` falling back
# to the newest good version, a global tensor missing a slice refused
# naming the missing bytes, and every bad input with its exit status and
# message: usage 2, refused directory 3, nothing there 4, damaged 5,
# uncovered 6, OUTDIR not empty or not writable 7.
set -uo pipefail
B=${FTRT_TOP_BUILDDIR:-$PWD}
WORK=$(mktemp -d /tmp/ftrt-ptool.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }
T=$B/ft-persist
W=$B/tests/mpi/persist-write
[ -x "$T" ] && [ -x "$W" ] || fail "ft-persist or tests/mpi/persist-write not built"
for v in $(compgen -e | grep '^FT_'); do unset "$v"; done
P=$WORK/persist
mkdir -m 700 "$P"
export FT_PERSIST_DIR=$P FT_JOB=pt
OUT=$WORK/out

# run NAME WANT ARGS... : ft-persist ARGS, exit status WANT, output in
# $WORK/NAME.out and .err
run() {
  local name=$1 want=$2 rc
  shift 2
  "$T" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  rc=$?
  [ "$rc" = "$want" ] || { cat "$WORK/$name.out" "$WORK/$name.err"; fail "$name: ft-persist $*: exit $rc, expected $want"; }
}
says() {  # NAME STREAM PATTERN
  grep -q -- "$3" "$WORK/$1.$2" || { cat "$WORK/$1.out" "$WORK/$1.err"; fail "$1: does not say '$3'"; }
}

# ---- usage ----
run help 0 --help
says help out "See ft-persist(1)"
run nocmd 2
says nocmd err "no command"
run badcmd 2 frobnicate
says badcmd err "unknown command 'frobnicate'"
run exportargs 2 export 3
says exportargs err "export takes VERSION OUTDIR"
run listargs 2 list extra
run badjob 2 --job 'a/b' list
says badjob err "bad job name 'a/b'"
FT_PERSIST_DIR= run nodir 2 list
says nodir err "give --dir DIR or set FT_PERSIST_DIR"
note "usage errors: exit 2 with what was wrong"

# ---- nothing there ----
run empty 4 list
says empty err "nothing persisted for job 'pt' under $P"
run nosuchdir 4 --dir "$WORK/nowhere" list
"$W" write "$P" pt 4 2 --partial || fail "persist-write --partial"
run onlypartial 4 list
says onlypartial out "0 complete versions"
says onlypartial out "1 incomplete version directory"
run onlypartial-export 4 export latest "$OUT"
says onlypartial-export err "no complete version"
[ -e "$OUT" ] && fail "a failed export made OUTDIR"
note "no job directory, or only an interrupted flush: exit 4"

# ---- three versions ----
for ve in "1 1" "2 1" "3 2"; do
  "$W" write "$P" pt $ve || fail "persist-write $ve"
done
run list 0 list
grep -o '^v[0-9]*\.e[0-9]*' "$WORK/list.out" | tr '\n' ' ' >"$WORK/order"
[ "$(cat "$WORK/order")" = "v3.e2 v2.e1 v1.e1 " ] || { cat "$WORK/list.out"; fail "list order: $(cat "$WORK/order")"; }
grep -q '^v3.e2 *3 *30 *2 *77 *2 *4 *10.0 MiB$' "$WORK/list.out" || { cat "$WORK/list.out"; fail "list: v3.e2's row"; }
says list out "1 incomplete version directory"
run listjson 0 --json list
says listjson out '"versions":\[{"dir":"v3.e2","version":3,"step":30,"epoch":2,"run":77,"nodes":2,"ranks":4,"bytes":10500933},{"dir":"v2.e1"'
says listjson out '"incomplete":1,"damaged":0'
note "list: $(head -1 "$WORK/list.out")"

run verify 0 verify
[ "$(grep -c ': OK (4 rank files' "$WORK/verify.out")" = 3 ] || { cat "$WORK/verify.out"; fail "verify: not 3 OK lines"; }
note "verify: every version OK"

# ---- export ----
# npy_payload FILE: the data after the .npy header (format 1.0)
npy_payload() {
  local hl
  hl=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
  head -c 8 "$1" | cmp -s - <(printf '\223NUMPY\001\000') || return 1
  tail -c +$((11 + hl)) "$1"
}
# check_export DIR VERSION: every tensor of the layout, byte for byte
check_export() {
  local dir=$1 ver=$2 name rank bytes file n=0
  while IFS=$'\t' read -r name rank bytes; do
    file=$(grep -F "{\"name\": \"$name\", \"rank\": $( [ "$rank" = global ] && echo '"global"' || echo "$rank")," "$dir/index.json" |
      sed -n 's/.*"file": "\([^"]*\)".*/\1/p')
    [ -n "$file" ] || fail "index.json of $dir lacks $name (rank $rank)"
    grep -F "{\"name\": \"$name\", " "$dir/index.json" | grep -q "\"bytes\": $bytes," || fail "index.json: $name rank $rank is not $bytes bytes"
    cmp -s <(npy_payload "$dir/$file") <("$W" expect "$name" "$rank" "$ver") ||
      fail "$dir/$file ($name, rank $rank): not the bytes version $ver holds"
    n=$((n + 1))
  done < <("$W" layout)
  [ "$(grep -c '{"name": ' "$dir/index.json")" = "$n" ] || fail "index.json of $dir lists other tensors than the $n written"
  note "export of version $ver: $n tensors byte for byte ($(du -sh "$dir" | cut -f1))"
}
run export 0 export 3 "$OUT"
says export out "exported v3.e2 (version 3, step 30, epoch 2) of job pt: 20 tensors"
check_export "$OUT" 3
grep -q '"name": "layer/../x", "rank": 2, .*"file": "rank2/layer%2F..%2Fx.npy"' "$OUT/index.json" || fail "index.json: layer/../x"
grep -q '"name": "..", "rank": 3, .*"file": "rank3/%2E..npy"' "$OUT/index.json" || fail "index.json: .."
[ "$(find "$OUT" -name '*.npy' | wc -l)" = 20 ] || fail "not 20 .npy files"
[ -z "$(find "$OUT" -mindepth 2 -type d)" ] || fail "a name made a directory: $(find "$OUT" -mindepth 2 -type d)"
grep -q '"slices": \[{"rank": 0, "global_offset": 0, "bytes": 3000001}, {"rank": 1, "global_offset": 3000001, "bytes": 4499999}' "$OUT/index.json" ||
  fail "index.json: w's slices"

PY=$B/ft-python
if [ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null; then
  "$PY" - "$OUT" "$W" 3 <<'EOF' || fail "numpy does not read the export as written"
import json, subprocess, sys
import numpy as np
out, w, ver = sys.argv[1:]
ix = json.load(open(f"{out}/index.json"))
assert ix["version"] == 3 and ix["dtype"] == "uint8", ix
for t in ix["tensors"]:
    a = np.load(f"{out}/{t['file']}")
    want = subprocess.run([w, "expect", t["name"], str(t["rank"]), ver],
                          capture_output=True, check=True).stdout
    assert a.dtype == np.uint8 and a.shape == (t["bytes"],), (t, a.dtype, a.shape)
    assert a.tobytes() == want, t["name"]
print(f"# numpy: {len(ix['tensors'])} tensors load with the bytes written")
EOF
else
  note "SKIP the numpy check: $PY cannot import numpy"
fi

mkdir "$WORK/full" && echo keep >"$WORK/full/mine"
run notempty 7 export 3 "$WORK/full"
says notempty err "$WORK/full exists and is not empty"
[ "$(ls "$WORK/full")" = mine ] || fail "export touched a non-empty OUTDIR"
echo x >"$WORK/afile"
run notwritable 7 export 3 "$WORK/afile/sub"
says notwritable err "$WORK/afile/sub: cannot make it"
run exists 7 export 3 "$OUT"
note "OUTDIR not empty or not makeable: exit 7, nothing changed"

run noversion 4 export 42 "$WORK/o42"
says noversion err "no complete version numbered '42'; the newest is v3.e2"
run noversion-dir 4 verify v2.e9
run badversion 2 export 3x "$WORK/o3x"
says badversion err "version '3x': expected 'latest', a version number or a directory name"
[ -e "$WORK/o42" ] || [ -e "$WORK/o3x" ] && fail "a refused export made OUTDIR"
note "unknown version 4, malformed 2"

# ---- one flipped byte ----
flip() {  # FILE OFFSET
  local b
  b=$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((b ^ 16)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
flip "$P/pt/v3.e2/rank1" 4300000
run verify-bad 5 verify
says verify-bad out "v3.e2: BAD: $P/pt/v3.e2/rank1: block 1 (bytes 4194304..4500755) fails its CRC"
[ "$(grep -c ': OK' "$WORK/verify-bad.out")" = 2 ] || fail "verify: the good versions not OK"
says verify-bad err "1 of 3 versions of job 'pt' damaged"
run verify-bad3 5 verify 3
run verify-good2 0 verify v2.e1
run verify-json 5 --json verify 3
says verify-json out '"ok":false'
note "flipped byte: $(grep BAD "$WORK/verify-bad.out")"
run export-bad 5 export 3 "$WORK/o3"
says export-bad err "$P/pt/v3.e2/rank1: block 1"
says export-bad err "what the export wrote is removed"
[ -e "$WORK/o3" ] && fail "the failed export left $WORK/o3"
run latest 0 export latest "$WORK/latest"
says latest err "v3.e2 skipped: $P/pt/v3.e2/rank1"
says latest out "exported v2.e1 (version 2, step 20, epoch 1)"
check_export "$WORK/latest" 2
note "export latest: v3.e2 skipped, v2.e1 exported"

# ---- a global tensor not covered ----
"$W" write "$P" pt 5 3 --gap || fail "persist-write --gap"
run verify-gap 0 verify 5
run gap 6 export 5 "$WORK/o5"
says gap err "global tensor 'w' (10498104 bytes): bytes 7500000..9000000 are in no rank's slice"
[ -e "$WORK/o5" ] && fail "the refused export made $WORK/o5"
note "a slice missing: $(cut -c1-160 "$WORK/gap.err")..."
rm -rf "$P/pt/v5.e3"

# ---- a damaged MANIFEST ----
flip "$P/pt/v1.e1/MANIFEST" 20
run damaged 0 list
grep -q '^v1.e1' "$WORK/damaged.out" && fail "list shows v1.e1 with a damaged MANIFEST"
says damaged out "1 damaged version directory (its MANIFEST unreadable), the newest: $P/pt/v1.e1/MANIFEST: CRC mismatch"
run damaged-verify 5 verify v1.e1
says damaged-verify err "1 version directory of $P/pt has a damaged MANIFEST; the newest: $P/pt/v1.e1/MANIFEST: CRC mismatch"
note "damaged MANIFEST: counted and named, not listed; verify of it: exit 5, named"

# ---- a directory that is not this user's own ----
chmod 777 "$P"
run refused 3 list
says refused err "refused: FT_PERSIST_DIR: $P: mode 0777"
run refused-export 3 export latest "$WORK/or"
chmod 700 "$P"
note "a world-writable directory: exit 3, nothing read"
echo "PASS: ft-persist list, verify, export"
