#!/usr/bin/env bash
# The man pages against the tools.  For every program and script that make
# install puts in bindir (bin_PROGRAMS, bin_SCRIPTS): its page
# is man/TOOL.1 (man/ft-bench.1 for the ft-bench-* helpers) and make
# install installs it (dist_man_MANS); TOOL --help exits 0 and every long
# flag it prints (--name), and every flag of each COMMAND --help when it
# lists commands, is in that page; every page parses without a warning
# (groff -man -ww, else man --warnings) and keeps to 80 columns; and no
# page is left without its tool.  Each failure names the tool and what is
# missing.  Needs FTRT_TOP_BUILDDIR and FTRT_TOP_SRCDIR (make check sets
# them) or runs from the build directory; no MPI job is started (the MPI
# programs answer --help as singletons).
set -u
B=${FTRT_TOP_BUILDDIR:-$PWD}
S=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/man-drift.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

BAD=0
fail() { echo "FAIL: $*" >&2; BAD=$((BAD + 1)); }

# What make install installs: from make check's environment
# (tests/docs/Makefile.inc), else from the build's Makefile.
if [ -z "${FTRT_BIN_PROGRAMS+set}" ]; then
  vars=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make -s --no-print-directory -C "$B" ft-installed-tools) ||
    { echo "FAIL: cannot ask $B/Makefile what make install installs" >&2; exit 1; }
  FTRT_BIN_PROGRAMS=$(sed -n 's/^FTRT_BIN_PROGRAMS=//p' <<<"$vars")
  FTRT_BIN_SCRIPTS=$(sed -n 's/^FTRT_BIN_SCRIPTS=//p' <<<"$vars")
  FTRT_MAN_PAGES=$(sed -n 's/^FTRT_MAN_PAGES=//p' <<<"$vars")
fi
[ -n "$FTRT_BIN_PROGRAMS" ] && [ -n "$FTRT_MAN_PAGES" ] ||
  { echo "FAIL: no bin_PROGRAMS or dist_man_MANS to check" >&2; exit 1; }

# page_text PAGE: the page's source as its reader sees the words
# (\- as -, no font changes), one file per page.
page_text() {
  local f=$TMP/${1##*/}.txt
  [ -e "$f" ] ||
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\[&%]//g' "$1" >"$f"
  echo "$f"
}

# help_of TOOL PATH [WORDS...]: PATH WORDS... --help into $TMP/help, its
# status; an MPI program that cannot start as a singleton is run once
# more under mpirun -np 1.
help_of() {
  local tool=$1 path=$2 rc
  shift 2
  timeout 60 "$path" "$@" --help </dev/null >"$TMP/help" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ -n "${PROGRAM_OF[$tool]:-}" ] && command -v mpirun >/dev/null; then
    timeout 60 mpirun -np 1 "$path" "$@" --help </dev/null >"$TMP/help" 2>&1
    rc=$?
  fi
  return $rc
}

# check_flags TOOL PAGE WHAT: every --flag of $TMP/help is in PAGE
FLAGS=0
check_flags() {
  local tool=$1 page=$2 what=$3 text flag
  text=$(page_text "$page")
  for flag in $(grep -oE -- '--[a-z0-9][a-z0-9-]*' "$TMP/help" | sort -u); do
    FLAGS=$((FLAGS + 1))
    grep -qE -- "$flag([^a-z0-9-]|\$)" "$text" ||
      fail "$tool: $flag (in '$what') is not in man/${page##*/}"
  done
}

# The page parses without a warning, and its lines fit 80 columns.
check_page() {
  local page=$1 out
  if command -v groff >/dev/null; then
    out=$(groff -man -ww -z "$page" 2>&1)
    [ -z "$out" ] || fail "man/${page##*/} does not parse cleanly: $out"
    out=$(groff -man -Tascii -rLL=78n "$page" 2>/dev/null | sed 's/.\x08//g' |
          awk 'length > 80' | head -n 3)
    [ -z "$out" ] || fail "man/${page##*/} has lines over 80 columns: $out"
  elif command -v man >/dev/null; then
    out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$out" ] || fail "man/${page##*/} does not parse cleanly: $out"
  else
    echo "# neither groff nor man here: the pages' syntax is not checked"
  fi
}

declare -A PROGRAM_OF=() PAGE_USED=()
TOOLS=0
for entry in $FTRT_BIN_PROGRAMS $FTRT_BIN_SCRIPTS; do
  name=${entry##*/}
  case " $FTRT_BIN_PROGRAMS " in *" $entry "*) PROGRAM_OF[$name]=1 ;; esac
  case $name in ft-bench-*) page=ft-bench.1 ;; *) page=$name.1 ;; esac
  if [ -x "$B/$entry" ]; then path=$B/$entry
  elif [ -x "$S/$entry" ]; then path=$S/$entry
  else fail "$name: installed by make install but not built ($B/$entry)"; continue
  fi
  TOOLS=$((TOOLS + 1))
  [ -r "$S/man/$page" ] || { fail "$name: no man page (man/$page)"; continue; }
  case " $FTRT_MAN_PAGES " in
    *" man/$page "*) PAGE_USED[$page]=1 ;;
    *) fail "$name: man/$page is not installed (not in dist_man_MANS, man/Makefile.inc)" ;;
  esac
  help_of "$name" "$path"
  rc=$?
  [ $rc -eq 0 ] || { fail "$name --help: exit $rc ($(head -c 300 "$TMP/help"))"; continue; }
  check_flags "$name" "$S/man/$page" "$name --help"
  # A tool of commands (ft-cluster): each command's --help too.
  if grep -q '^commands' "$TMP/help"; then
    cmds=$(sed -n '/^commands/,/^[a-z]/{/^  [a-z]/s/^  \([a-z][a-z-]*\).*/\1/p}' "$TMP/help" | sort -u)
    for c in $cmds; do
      if help_of "$name" "$path" "$c"; then
        check_flags "$name" "$S/man/$page" "$name $c --help"
      else
        fail "$name $c --help: exit $?"
      fi
    done
  fi
done

for page in $FTRT_MAN_PAGES; do
  [ -r "$S/$page" ] || { fail "$page: listed in dist_man_MANS but missing"; continue; }
  check_page "$S/$page"
  [ -n "${PAGE_USED[${page##*/}]:-}" ] || fail "$page: no installed tool of that name"
done

if [ "$BAD" -gt 0 ]; then
  echo "FAIL: $BAD problem(s) between the tools and their man pages" >&2
  exit 1
fi
echo "PASS: $TOOLS tools, $FLAGS flags of their --help, all in their man pages"
