#!/usr/bin/env bash
# An installed ftrt is usable with no environment variable: a program built
# with `mpicc t.c $(pkg-config --cflags --libs ftrt)` and the installed
# ft-train-example start and run under `env -i` (no LD_LIBRARY_PATH, as a
# rank started by a plain ssh login sees it), their libftrt.so.0 resolving to
# the installed one.  Two installs, the two ways a user installs:
#   1. as root into /usr/local (the README's scripts/demo): `make install` of
#      this build, in a private mount namespace whose /usr and /etc are
#      overlays (nothing reaches the host's), /usr/local first emptied of any
#      earlier ftrt and the loader's cache refreshed, as on a fresh machine:
#      the install must refresh the cache itself (ldconfig);
#   2. into a prefix of a user's own, outside the loader's path, configured
#      and built afresh, as an unprivileged user when run as root: rpaths
#      (libtool's for the tools, ftrt.pc's for the user's program), no ldconfig.
set -u
B=${FTRT_TOP_BUILDDIR:-$PWD}
S=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset MAKEFLAGS MFLAGS MAKELEVEL # make install below is not part of make check's jobs
T=$(mktemp -d /tmp/ftrt-install.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"

fail() { echo "FAIL: $*"; exit 1; }
note() { echo "# $*"; }

cat >"$T/t.c" <<'EOF'
#include <ftrt.h>
#include <stdio.h>
int main(void) { puts(ft_strerror(FT_ECORRUPT)); return 0; }
EOF
WANT=$(sed -n 's/.*XX(ECORRUPT, *-[0-9]*, *"\([^"]*\)").*/\1/p' "$S/include/ftrt.h")
[ -n "$WANT" ] || fail "no FT_ECORRUPT message in $S/include/ftrt.h"


# check PREFIX WHO: build t.c against PREFIX's ftrt.pc and run it, and the
# installed example, with an empty environment.  Runs inside the namespace
# (case 1) or as the unprivileged user (case 2).
cat >"$T/check.sh" <<'EOF'
set -u
P=$1 L=$2 T=$3 WANT=$4
fail() { echo "FAIL ($P): $*"; exit 1; }
CLEAN=(env -i PATH=/usr/bin:/bin HOME="$T" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
flags=$(PKG_CONFIG_PATH=$L/pkgconfig pkg-config --cflags --libs ftrt) || fail "pkg-config finds no ftrt.pc"
mpicc "$T/t.c" $flags -o "$T/t-$$" || fail "mpicc t.c $flags failed"
out=$("${CLEAN[@]}" "$T/t-$$" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "a program built with pkg-config's flags ($flags) exits $rc: $out"
[ "$out" = "$WANT" ] || fail "ft_strerror(FT_ECORRUPT) printed '$out', want '$WANT'"
lib=$("${CLEAN[@]}" ldd "$T/t-$$" | sed -n 's/.*libftrt\.so\.0 => \([^ ]*\).*/\1/p')
[ "$lib" = "$L/libftrt.so.0" ] || fail "the program loads libftrt.so.0 from '$lib', not $L"
out=$("${CLEAN[@]}" timeout -k 5 120 mpirun -np 1 "$P/bin/ft-train-example" --no-ftrt \
  --steps 3 --state-mb 1 2>&1); rc=$?
[ $rc -eq 0 ] || fail "the installed ft-train-example exits $rc: $(echo "$out" | tail -3)"
grep -q '^digest [0-9a-f]*$' <<<"$out" || fail "the installed ft-train-example printed no digest: $out"
lib=$("${CLEAN[@]}" ldd "$P/bin/ft-train-example" | sed -n 's/.*libftrt\.so\.0 => \([^ ]*\).*/\1/p')
[ "$lib" = "$L/libftrt.so.0" ] || fail "ft-train-example loads libftrt.so.0 from '$lib', not $L"
# ft-bench's Python figures train these, from share/ftrt beside it.
for f in py-stall.py train_gpt.py plot.gp; do
  [ -r "$P/share/ftrt/$f" ] || fail "$P/share/ftrt/$f not installed (ft-bench looks for it there)"
done
echo "# $P: a pkg-config program and ft-train-example run under env -i, libftrt from $lib"
EOF

# ---- 1. as root into /usr/local, the cache refreshed by make install
mkvar() { sed -n "s/^$1 = //p" "$B/Makefile"; }
usr_local() {
  local prefix libdir searched
  prefix=$(mkvar prefix)
  libdir=$(PKG_CONFIG_PATH=$B pkg-config --variable=libdir ftrt)
  searched=$(mkvar FT_LIBDIR_SEARCHED)
  [ "$prefix" = /usr/local ] || { note "case 1 skipped: this build's prefix is $prefix"; return 0; }
  [ -z "$(mkvar FT_SAN_CFLAGS)" ] || { note "case 1 skipped: a sanitizer build"; return 0; }
  [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    unshare -m --propagation private true 2>/dev/null ||
    { note "case 1 skipped: needs root and a mount namespace (unshare -m)"; return 0; }
  cat >"$T/ns.sh" <<'EOF'
set -u
B=$1 T=$2 L=$4 SEARCHED=$5
# The overlays' upper layers on a tmpfs of the namespace (an upper layer on
# an overlayfs /tmp, as in a container, is refused), the loader's aux-cache
# (/var/cache/ldconfig) on one too: nothing of the install reaches the host.
mkdir -p "$T/ovl" && mount -t tmpfs tmpfs "$T/ovl" || exit 1
for d in usr etc; do
  mkdir -p "$T/ovl/$d-up" "$T/ovl/$d-work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/ovl/$d-up,workdir=$T/ovl/$d-work" "/$d" ||
    { echo "SKIP: no overlay mount of /$d"; exit 77; }
done
[ ! -d /var/cache/ldconfig ] || mount -t tmpfs tmpfs /var/cache/ldconfig || exit 1
# A fresh machine: no ftrt where the loader looks (only /usr is ours to empty).
rm -f /usr/local/lib/pkgconfig/ftrt.pc /usr/local/bin/ft-train-example
for f in $(ldconfig -p | sed -n 's/.*libftrt\.so[.0-9]* .*=> //p') "$L"/libftrt.*; do
  case $f in
    /usr/*) rm -f "$f" ;;
    *) echo "SKIP: an ftrt outside /usr is in the loader's cache: $f"; exit 77 ;;
  esac
done
ldconfig || exit 1
! ldconfig -p | grep -q libftrt || { echo "FAIL: libftrt still in the loader's cache"; exit 1; }
# FT_OTHER_PYTHON= : the package not in another interpreter's tree, nor in
# the virtual environment configure may have picked (outside the overlays):
# into $T/py
(cd "$B" && make -s install FT_OTHER_PYTHON= FT_PYTHONDIR="$T/py" >"$T/install-1.log" 2>&1) ||
  { tail -20 "$T/install-1.log"; echo "FAIL: make install into /usr/local failed"; exit 1; }
bash "$T/check.sh" /usr/local "$L" "$T" "$3" || exit 1
if [ "$SEARCHED" = yes ]; then
  grep -q "^ftrt: refreshed the loader's cache" "$T/install-1.log" ||
    { cat "$T/install-1.log"; echo "FAIL: make install as root did not say it refreshed the cache"; exit 1; }
else
  ! grep -q "^ftrt: refreshed the loader's cache" "$T/install-1.log" ||
    { echo "FAIL: make install ran ldconfig for $L, which the loader does not search"; exit 1; }
fi
EOF
  unshare -m --propagation private bash "$T/ns.sh" "$B" "$T" "$WANT" "$libdir" "$searched"
  local rc=$?
  [ $rc -eq 77 ] && { note "case 1 skipped (above)"; return 0; }
  [ $rc -eq 0 ] || exit 1
}

# ---- 2. a prefix of one's own, configured and built afresh
own_prefix() {
  local as=() who=$(id -un)
  if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 &&
     setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups test -r "$S/configure"; then
    as=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups env HOME="$T")
    who=nobody
    chown nobody "$T"
  fi
  [ -f "$S/configure" ] || fail "$S/configure missing (autoreconf -fi first)"
  mkdir -p "$T/build" || fail "mkdir $T/build"
  [ $who != nobody ] || chown nobody "$T/build"
  ( cd "$T/build" && "${as[@]}" "$S/configure" -q --prefix="$T/prefix" >"$T/conf.log" 2>&1 &&
    "${as[@]}" make -s -j2 >"$T/build.log" 2>&1 &&
    "${as[@]}" make -s install FT_OTHER_PYTHON= >"$T/install-2.log" 2>&1 ) ||
    { tail -20 "$T/conf.log" "$T/build.log" "$T/install-2.log" 2>/dev/null; fail "configure --prefix=$T/prefix, make, make install as $who failed"; }
  ! grep -q "^ftrt: refreshed the loader's cache" "$T/install-2.log" ||
    fail "make install into $T/prefix ran ldconfig (its libdir is not the loader's)"
  note "case 2: built and installed as $who"
  "${as[@]}" bash "$T/check.sh" "$T/prefix" "$T/prefix/lib" "$T" "$WANT" || exit 1
}

usr_local
own_prefix
echo "PASS"
