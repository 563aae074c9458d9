#!/usr/bin/env bash
# The layers point one way (docs/design.md section 10): a file includes
# ftrt headers only from its own layer or a lower one, and no two modules
# (a .c/.h pair) include each other, directly or around a circle.
#   base -> (nothing of ftrt but include/ftrt.h)
#   ec, cuda -> base
#   snapshot -> ec, base
#   persist -> snapshot, ec, base
#   recovery -> persist, snapshot, ec, base
#   runtime -> recovery (its engine: the rebuild inside a relaunch), persist,
#              snapshot, ec, cuda, base
#   launch -> runtime and below (ft-launch's supervisor)
#   tools (scripts, bench, examples, tests) -> anything
set -u
SRC=${FTRT_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$SRC" || exit 1
rank() {
  case $1 in
    base) echo 0 ;; ec|cuda) echo 1 ;; snapshot) echo 2 ;; persist) echo 3 ;;
    recovery) echo 4 ;; runtime) echo 5 ;; launch) echo 6 ;; *) echo 9 ;;
  esac
}
bad=0 edges=
for f in base/*.[ch] ec/*.[ch] cuda/*.[ch] snapshot/*.[ch] persist/*.[ch] runtime/*.[ch] recovery/*.[ch] launch/*.[ch]; do
  from=${f%%/*}
  for inc in $(sed -n 's/^#include "\([a-z]*\/[^"]*\)\.h"/\1/p' "$f"); do
    to=${inc%%/*}
    edges+="${f%.*} $inc"$'\n'
    [ "$to" = "$from" ] && continue
    if [ "$(rank "$to")" -ge "$(rank "$from")" ]; then
      echo "FAIL: $f includes $inc.h: $from may not depend on $to"
      bad=1
    fi
  done
done
if ! printf '%s' "$edges" | tsort >/dev/null 2>"${TMPDIR:-/tmp}/layers.$$"; then
  echo "FAIL: modules include each other in a circle:"
  cat "${TMPDIR:-/tmp}/layers.$$"
  bad=1
fi
rm -f "${TMPDIR:-/tmp}/layers.$$"
[ $bad = 0 ] && echo "PASS: $(printf '%s' "$edges" | wc -l) includes, every one points down, no circle"
exit $bad
