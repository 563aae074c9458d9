#!/usr/bin/env bash
# ftrt with another ISA-L than the one it was built with: Debian 13's
# libisal2 2.31 (Ubuntu 24.04 ships 2.31 too), loaded in place of this
# machine's through LD_LIBRARY_PATH (same soname, same API).  On a CPU
# where it takes its GFNI kernels (this VM's AMD EPYC, recent Xeons),
# 2.31's ec_init_tables keeps 8 bytes a coefficient where 2.30 and 2.32
# keep 32: code that finds a row's or a source's table inside ISA-L's
# output by its own arithmetic computes wrong parity (an SMP's second parity
# of a 4+2 job) and rebuilds wrong bytes, under CRCs made of them.  With
# such a codec, test_codec failed 73 of its 159 checks with that library, and a
# 4+2 job's parity did not match its data.
# The library is fetched once into the build directory (apt-get download of
# main from the suite trixie of this machine's own Debian sources, into
# private lists; `make clean` removes it); the test is skipped, saying why,
# when it cannot be (no network, not Debian 12) or need not be (the system's
# ISA-L is 2.31 already: the whole suite runs with it).
. "$(dirname "$0")/lib.sh"
OTHER=${FT_ISAL_OTHER:-$B/tests/deps/libisal-2.31}
ORIG_LD=${LD_LIBRARY_PATH-} # the system's ISA-L, and whatever else the user needs
SKIP=77

skip() { echo "SKIP: $*"; exit $SKIP; }

# This machine's first Debian stanza or line of the suite bookworm itself
# (not -updates, -security; not a disabled stanza), with the suite trixie
# and the component main, in the same format (deb822 .sources or one-line
# .list); comments left out.
trixie_sources() {
  local f=/etc/apt/sources.list.d/debian.sources
  if [ -r "$f" ]; then
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         !done { n = split($0, l, "\n"); out = ""; ok = 0; off = 0
           for (i = 1; i <= n; i++) {
             if (l[i] ~ /^#/) continue
             if (l[i] ~ /^Enabled:[ \t]*no/) off = 1
             if (l[i] ~ /^Suites:/ && (" " substr(l[i], 8) " ") ~ /[ \t]bookworm[ \t]/) ok = 1
             if (l[i] ~ /^Types:/) l[i] = "Types: deb"
             if (l[i] ~ /^Suites:/) l[i] = "Suites: trixie"
             if (l[i] ~ /^Components:/) l[i] = "Components: main"
             out = out l[i] "\n" }
           if (ok && !off) { printf "%s\n", out; done = 1 } }' "$f" >"$1/trixie.sources"
    [ -s "$1/trixie.sources" ] && echo "$1/trixie.sources" && return 0
  fi
  f=/etc/apt/sources.list
  [ -r "$f" ] || return 1
  # deb [OPTIONS] URI SUITE COMPONENTS...
  awk '$1 == "deb" && !done { r = substr($0, index($0, "deb") + 3); opt = ""
         if (r ~ /^[ \t]*\[/) { e = index(r, "]"); if (!e) next; opt = substr(r, 1, e) " "; r = substr(r, e + 1) }
         if (split(r, w) >= 2 && w[2] == "bookworm") { print "deb " opt w[1] " trixie main"; done = 1 } }' \
    "$f" >"$1/trixie.list"
  [ -s "$1/trixie.list" ] && echo "$1/trixie.list"
}

# Into a directory of its own, then moved into place whole: a run killed
# midway, or another run beside it, never leaves a part of a library there.
fetch() {
  local d src deb
  mkdir -p "$(dirname "$OTHER")" && d=$(mktemp -d "$OTHER.fetch.XXXXXX") || return 1
  # shellcheck disable=SC2064 # now: d is local, gone when the subshell exits
  trap "rm -rf '$d'" EXIT # fetch runs in a subshell of its own
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial" || return 1
  src=$(trixie_sources "$d") || { echo "no Debian bookworm source to derive trixie's from"; return 1; }
  # The system's apt hooks (appstream, packagekit) stay out of it.
  printf '#clear APT::Update::Pre-Invoke;\n#clear APT::Update::Post-Invoke;\n#clear APT::Update::Post-Invoke-Success;\n' >"$d/apt.conf"
  local apt=(-q -c "$d/apt.conf" -o "Dir::Etc::sourcelist=$src" -o Dir::Etc::sourceparts=-
    -o "Dir::State::lists=$d/lists" -o "Dir::Cache=$d/cache"
    -o Acquire::Retries=1 -o Acquire::http::Timeout=20 -o Acquire::Languages=none
    -o Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false)
  (cd "$d" && timeout 300 apt-get "${apt[@]}" update && timeout 300 apt-get "${apt[@]}" download libisal2/trixie) \
    >"$d/log" 2>&1 || { tail -3 "$d/log"; return 1; }
  deb=$(ls "$d"/libisal2_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { echo "apt-get download left no libisal2 package"; return 1; }
  case $(dpkg-deb -f "$deb" Version) in
    2.31*) ;;
    *) echo "trixie now ships libisal2 $(dpkg-deb -f "$deb" Version), not 2.31"; return 1 ;;
  esac
  dpkg-deb -x "$deb" "$d/x" && mkdir "$d/lib" && cp -P "$d"/x/usr/lib/*/libisal.so.2* "$d/lib"/ &&
    mv -T "$d/lib" "$OTHER" 2>/dev/null || [ -e "$OTHER/libisal.so.2" ] # another run was first
}

command -v python3 >/dev/null || skip "no python3 to probe the library's tables with"
# The system's own ISA-L (the one the build links; ft-restore is never a
# libtool wrapper).
system=$(ldd "$B/ft-restore" | sed -n 's/.*libisal.so.2 => \([^ ]*\).*/\1/p')
case $(readlink -f "$system") in
  *libisal.so.2.0.31) [ -n "${FT_ISAL_OTHER:-}" ] ||
    skip "the system's ISA-L ($(readlink -f "$system")) is 2.31 already: every test of the suite runs with it" ;;
esac

if ! [ -e "$OTHER/libisal.so.2" ]; then
  [ -n "${FT_ISAL_OTHER:-}" ] && fail "FT_ISAL_OTHER=$OTHER holds no libisal.so.2"
  why=$(fetch 2>&1); rc=$?
  [ $rc = 0 ] || skip "could not fetch Debian 13's libisal2 2.31: $why"
fi
export LD_LIBRARY_PATH=$OTHER${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LIB=$(readlink -f "$OTHER/libisal.so.2")

# The library the programs load is that one (test_codec: where Check is).
for p in "$TRAIN_EXE" "$B/ft-restore" "$B/tests/unit/test_codec"; do
  [ -x "$p" ] || [ "$p" = "$B/tests/unit/test_codec" ] || fail "$p is missing"
  [ -x "$p" ] || continue
  ldd "$p" | grep -qF "libisal.so.2 => $OTHER/" || { ldd "$p"; fail "$p does not load $OTHER's libisal"; }
done

# Its table layout on this CPU: where the second coefficient's table starts
# in ec_init_tables(2, 1, {c1, c2}).
layout=$(python3 - "$LIB" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
def tables(coefs):
    out = ctypes.create_string_buffer(32 * len(coefs))
    lib.ec_init_tables(len(coefs), 1, (ctypes.c_ubyte * len(coefs))(*coefs), out)
    return out.raw
one, two = tables([7]), tables([5, 7])
print(8 if two[8:16] == one[:8] else 32 if two[32:64] == one else 0)
EOF
) || fail "could not call ec_init_tables of $LIB"
# ISA-L 2.31 takes its GFNI kernels (8 bytes) only with GFNI, VAES and
# VPCLMULQDQ and AVX2, or AVX-512 with its VBMI2, VNNI, BITALG and VPOPCNTDQ
# extensions: a CPU or VM without them gets the 32-byte tables.
case $layout in
  8) note "$(basename "$LIB") on this CPU: 8 bytes a coefficient in ec_init_tables' output (GFNI kernels; 2.30 and 2.32: 32)" ;;
  32) note "$(basename "$LIB") on this CPU: 32 bytes a coefficient (its GFNI kernels not taken here: $(grep -q -w gfni /proc/cpuinfo && echo "GFNI, but not every extension they need" || echo "no GFNI")), as 2.30 and 2.32; this run shows only that ftrt runs with this library" ;;
  *) fail "ec_init_tables of $LIB keeps neither 8 nor 32 bytes a coefficient" ;;
esac

# 1. The codec's unit tests.
if [ -x "$B/tests/unit/test_codec" ]; then
  "$B/tests/unit/test_codec" >"$LOGDIR/unit" 2>&1 || { grep -v '^\.\.' "$LOGDIR/unit"; head -5 "$LOGDIR/unit"; fail "test_codec with $(basename "$LIB")"; }
  note "test_codec with $(basename "$LIB"): $(grep -o '[0-9]*%: Checks.*' "$LOGDIR/unit")"
fi

# 2. A 4+2 job on 6 virtual nodes: its parity matches its data and every loss
#    set decodes (ft-restore --verify, with this library and with the
#    system's); two nodes lost are rebuilt and the job ends with the digest
#    of the same job run with the system's library.
export FT_VIRTUAL_NODE_RANKS=2 FT_EC_K=4 FT_EC_M=2
ARGS="--steps 12 --snapshot-every 2 --state-mb 2"
verified() {  # LOG WHAT
  grep -q " 0 with parity that does not match" "$LOGDIR/$1" && grep -qE "[1-9][0-9]* loss sets of <= m=2 nodes decoded, 0 chunks wrong" "$LOGDIR/$1" ||
    { cat "$LOGDIR/$1"; fail "$2"; }
}
FT_JOB=ref LD_LIBRARY_PATH=$ORIG_LD train ref 12 $ARGS || { log_of ref | tail; fail "the run with the system's ISA-L failed"; }
REF=$(digest_of ref)
export FT_JOB=other
train run 12 --steps 8 --snapshot-every 2 --state-mb 2 || { log_of run | tail; fail "the run with $(basename "$LIB") failed"; }
restore 6 --verify --verify-losses >"$LOGDIR/v1" 2>&1 || { cat "$LOGDIR/v1"; fail "ft-restore --verify with $(basename "$LIB")"; }
verified v1 "the parity $(basename "$LIB") made does not match its data"
LD_LIBRARY_PATH=$ORIG_LD restore 6 --verify --verify-losses >"$LOGDIR/v2" 2>&1 || { cat "$LOGDIR/v2"; fail "ft-restore --verify with the system's ISA-L"; }
verified v2 "the system's ISA-L finds the parity $(basename "$LIB") made wrong"
note "4+2 on 6 nodes with $(basename "$LIB"): $(sed -n 's/^ft-restore: //p' "$LOGDIR/v1" | tail -1)"
rm -rf "$FT_STORE_ROOT/vnode1/$FT_JOB" "$FT_STORE_ROOT/vnode4/$FT_JOB"
restore 6 >"$LOGDIR/r" 2>&1 || { cat "$LOGDIR/r"; fail "ft-restore of 2 lost nodes with $(basename "$LIB")"; }
grep -q "2 lost node(s), 0 corrupt chunk(s)" "$LOGDIR/r" || { cat "$LOGDIR/r"; fail "restore summary"; }
LD_LIBRARY_PATH=$ORIG_LD restore 6 --verify >"$LOGDIR/v3" 2>&1 || { cat "$LOGDIR/v3"; fail "the rebuilt stores, checked with the system's ISA-L"; }
grep -q " 0 with parity that does not match" "$LOGDIR/v3" || { cat "$LOGDIR/v3"; fail "the rebuilt parity does not match"; }
train resumed 12 $ARGS || { log_of resumed | tail; fail "the relaunch failed"; }
grep -q '^resumed from step 8$' "$LOGDIR/resumed" || { log_of resumed | tail; fail "expected resume from step 8"; }
expect_digest resumed "$REF" "2 of 6 nodes lost and rebuilt with $(basename "$LIB")"
echo "PASS"
