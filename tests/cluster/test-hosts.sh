#!/usr/bin/env bash
# ft-cluster's hosts are separate machines: own hostname, own /dev/shm, own
# address, names that resolve, a link that partition/heal cut and restore;
# exec keeps the environment and the exit status; every command has --help.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_cluster

for c in up down hosts exec kill partition heal status ping watch addr; do
  grep -q "^usage: ft-cluster $c" <<<"$("$FT_CLUSTER_CMD" "$c" --help)" ||
    fail "ft-cluster $c --help prints no usage"
done
grep -q plm_rsh_agent <<<"$("$FT_RSH" --help)" || fail "ft-rsh --help"
ok "--help of every command"

cluster_up hosts 4 --spares 1
X=$FT_CLUSTER_CMD

[ "$("$X" hosts | awk '{ print $1 }' | tr '\n' ' ')" = "h1 h2 h3 h4 " ] ||
  fail "hosts: $("$X" hosts)"
grep -qv ' slots=[0-9]' <<<"$("$X" hosts)" && fail "hosts lines: $("$X" hosts)"
[ "$("$X" hosts --all | awk '{ print $1 }' | tr '\n' ' ')" = "h1 h2 h3 h4 s1 " ] ||
  fail "hosts --all: $("$X" hosts --all)"
ok "hosts lists h1..h4, --all adds spare s1"

# One spelling of the cluster in every tool, --cluster=C (--cluster C and
# ft-cluster's --name C too); a bad name is a usage error, FT_CLUSTER's
# only when no --cluster replaces it.
[ "$(FT_CLUSTER=BAD "$X" hosts --cluster="$CL")" = "$("$X" hosts)" ] &&
  [ "$(FT_CLUSTER=BAD "$X" --cluster "$CL" hosts)" = "$("$X" hosts)" ] ||
  fail "ft-cluster --cluster C / --cluster=C"
FT_CLUSTER=BAD "$X" hosts >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "FT_CLUSTER=BAD ft-cluster hosts: exit $rc, expected 2"
"$X" hosts --cluster=BAD >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "ft-cluster hosts --cluster=BAD: exit $rc, expected 2"
for form in "--cluster=$CL" "--cluster $CL"; do
  # shellcheck disable=SC2086
  out=$(FT_CLUSTER= "$FT_LAUNCH" $form --dry-run -- true) || fail "ft-launch $form --dry-run"
  grep -qx '# spares: up to 1 of s1' <<<"$out" ||
    fail "ft-launch $form: the cluster's spare is not the default (--spares): $out"
done
out=$("$FT_LAUNCH" --cluster="$CL" --spares 0 --dry-run -- true) || fail "--spares 0 --dry-run"
grep -qx '# spares: up to 0 of s1' <<<"$out" || fail "--spares 0 on the cluster: $out"
ok "--cluster=C and --cluster C in every tool; the cluster's spares are ft-launch's default"

for h in h1 h2 h3 h4 s1 head; do
  got=$("$X" exec "$h" hostname) || fail "exec $h hostname"
  [ "$got" = "$h" ] || fail "host $h calls itself '$got'"
done
ok "every host has its own hostname"

"$X" exec h2 sh -c 'exit 7'; rc=$?
[ $rc -eq 7 ] || fail "exec lost the exit status: $rc"
[ "$(FOO_T=bar$$ "$X" exec h3 sh -c 'echo $FOO_T')" = "bar$$" ] || fail "exec lost the environment"
[ "$(cd "$WORK" && "$X" exec h3 pwd)" = "$WORK" ] || fail "exec changed the working directory"
ok "exec keeps exit status, environment, directory"

f=/dev/shm/ftrt-cluster-test-$$
"$X" exec h1 sh -c "echo on-h1 >$f" || fail "write on h1's /dev/shm"
[ "$("$X" exec h1 cat $f)" = on-h1 ] || fail "h1 cannot read its own /dev/shm"
for h in h2 h3 h4; do
  "$X" exec "$h" test -e "$f" && fail "$h sees h1's /dev/shm file"
done
[ -e "$f" ] && fail "the machine's /dev/shm sees h1's file"
d1=$("$X" exec h1 stat -f -c %T /dev/shm)
[ "$d1" = tmpfs ] || fail "h1's /dev/shm is $d1, not tmpfs"
m1=$("$X" exec h1 awk '$5 == "/dev/shm" { d = $3 } END { print d }' /proc/self/mountinfo)
m2=$("$X" exec h2 awk '$5 == "/dev/shm" { d = $3 } END { print d }' /proc/self/mountinfo)
[ -n "$m1" ] && [ "$m1" != "$m2" ] || fail "h1 and h2 share the tmpfs $m1"
ok "/dev/shm is a private tmpfs per host"

# Its pages: 2 MiB (huge=within_size) where the kernel has huge pages for
# tmpfs, as "up" says; a bad --shm-huge is a usage error.
opts=$("$X" exec h1 awk '$5 == "/dev/shm" { o = $NF } END { print o }' /proc/self/mountinfo)
shmem=/sys/kernel/mm/transparent_hugepage/shmem_enabled
if [ -r $shmem ] && ! grep -q '\[deny\]' $shmem; then
  grep -q 'huge=within_size' <<<"$opts" || fail "h1's /dev/shm has no huge=within_size: $opts"
  ok "/dev/shm on 2 MiB pages (huge=within_size)"
else
  ! grep -q 'huge=' <<<"$opts" || fail "h1's /dev/shm: $opts, on a kernel without huge tmpfs pages"
fi
for mode in always advise; do
  "$X" up 1 --name "x$$" --shm-huge $mode >/dev/null 2>"$WORK/huge.err"; rc=$?
  [ $rc -eq 2 ] && grep -q "shm-huge '$mode': expected within_size or never" "$WORK/huge.err" ||
    fail "up --shm-huge $mode: exit $rc, $(cat "$WORK/huge.err")"
done

for h in h1 h4; do
  links=$("$X" exec "$h" ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | tr '\n' ' ')
  [ "$links" = "lo eth0 " ] || fail "$h has links: $links"
  grep -q 'UP' <<<"$("$X" exec "$h" ip -o link show lo)" || fail "$h: loopback is down"
done
[ "$("$X" exec h1 getent hosts h4 | awk '{ print $1 }')" = "$("$X" addr h4)" ] ||
  fail "h1 does not resolve h4 to $("$X" addr h4)"
[ "$("$X" exec h4 getent hosts s1 | awk '{ print $1 }')" = "$("$X" addr s1)" ] ||
  fail "h4 does not resolve s1"
if command -v ping >/dev/null; then
  "$X" exec h1 ping -c 1 -W 2 h4 >/dev/null || fail "h1 cannot ping h4"
  "$X" exec h2 ping -c 1 -W 2 127.0.0.1 >/dev/null || fail "h2: no loopback"
fi
addrs=$(for h in h1 h2 h3 h4 s1; do "$X" addr $h; done | sort -u | wc -l)
[ "$addrs" -eq 5 ] || fail "hosts share addresses"
ok "own addresses, loopback up, names resolve, hosts reach each other"

"$X" ping h1 h2 h3 h4 >/dev/null || fail "ping: not every host answers"
"$X" partition h2 >/dev/null || fail "partition h2"
[ "$("$X" ping h1 h2 h3)" = h2 ] || fail "ping after partition: $("$X" ping h1 h2 h3)"
[ "$(FT_CLUSTER_PROBE=tcp "$X" ping h1 h2 h3)" = h2 ] || fail "TCP probe after partition"
"$X" exec --remote h2 true 2>/dev/null; rc=$?
[ $rc -eq 255 ] || fail "exec --remote to a partitioned host: $rc, expected 255"
grep -q '^h2 .*partitioned' <<<"$("$X" status)" || fail "status: $("$X" status)"
"$X" heal h2 >/dev/null || fail "heal h2"
"$X" ping h2 >/dev/null || fail "h2 unreachable after heal"
ok "partition cuts h2 off, heal brings it back"

# A host being killed is down from the kill's first step, its mark, though
# its network still answers until its processes are gone (a launcher that
# ends the job then must not find it alive): the mark alone, put back.
touch "/run/ftrt-cluster/$CL/killed/h3"
out=$("$X" ping h1 h3 h4); rc=$?
rm -f "/run/ftrt-cluster/$CL/killed/h3"
[ "$out" = h3 ] && [ $rc -eq 1 ] || fail "ping of a host marked killed: '$out' (exit $rc)"
"$X" ping h3 >/dev/null || fail "h3 unreachable once its mark is gone"
ok "ping: a host marked killed is down at once"

# watch: a line HOST a host's answer (others "-"); it ends with its reader
# even where SIGPIPE is ignored (ping ignores EPIPE then), and leaves no
# ping on the head; a partitioned host does not answer.
if command -v ping >/dev/null; then
  watch_lines() {  # watch_lines N HOST...: the first N answers
    local n=$1; shift
    (trap '' PIPE; timeout 60 "$X" watch "$@"; echo $? >"$WORK/watch.rc") |
      grep --line-buffered -vx -- - | head -n "$n" | sort -u | tr '\n' ' '
  }
  head_left() {
    local k; k=$(keeper_of head)
    pids_in $(ns_inodes "$k") | grep -vx "$k"
  }
  got=$(watch_lines 6 h1 h2)
  [ "$got" = "h1 h2 " ] || fail "watch h1 h2: '$got'"
  [ "$(cat "$WORK/watch.rc")" != 124 ] || fail "watch went on after its reader left (ended by timeout 60)"
  "$X" partition h2 >/dev/null || fail "partition h2"
  got=$(watch_lines 3 h1 h2)
  "$X" heal h2 >/dev/null || fail "heal h2"
  [ "$got" = "h1 " ] || fail "watch with h2 partitioned: '$got', expected h1 only"
  [ "$(cat "$WORK/watch.rc")" != 124 ] || fail "watch went on after its reader left (ended by timeout 60)"
  [ -z "$(head_left)" ] || fail "processes left on the head after watch: $(head_left)"
  "$X" watch h9 >/dev/null 2>"$WORK/watch.err" && fail "watch of an unknown host succeeded"
  grep -q "no host 'h9'" "$WORK/watch.err" || fail "watch h9: $(cat "$WORK/watch.err")"
  ok "watch: answers of h1 and h2, none of h2 partitioned; ends with its reader, nothing left"
fi

"$X" up 2 --name "$CL" >/dev/null 2>&1 && fail "up of a cluster that is up succeeded"
"$X" exec h9 true 2>/dev/null && fail "exec on an unknown host succeeded"
"$X" up 0 --name "x$$" >/dev/null 2>&1; [ $? -eq 2 ] || fail "up 0 is not a usage error"
ok "refuses a second up, unknown hosts, bad counts"

"$X" down --name "$CL" >/dev/null || fail "down"
assert_gone "$CL"
CL=
ok "down leaves nothing"

# --shm-huge never: 4 KiB pages, as a host's own /dev/shm has by default
cluster_up pages 1 --shm-huge never
opts=$("$X" exec h1 awk '$5 == "/dev/shm" { o = $NF } END { print o }' /proc/self/mountinfo)
! grep -q 'huge=' <<<"$opts" || fail "h1's /dev/shm with --shm-huge never: $opts"
"$X" down --name "$CL" >/dev/null || fail "down"
CL=
if grep -q '\[force\]' $shmem 2>/dev/null; then
  ok "--shm-huge never: /dev/shm mounted without huge= (this kernel forces huge pages on every tmpfs all the same)"
else
  ok "--shm-huge never: /dev/shm without huge pages"
fi

# --cpus-per-host: each host's processes on CPUs of their own, in order
mapfile -t mine < <(taskset -c -p $$ | sed 's/.*: //' | tr ',' '\n' |
  awk -F- '{ for (i = $1; i <= ($2 == "" ? $1 : $2); i++) print i }')
if [ ${#mine[@]} -ge 2 ]; then
  cluster_up cpus 1 --spares 1 --cpus-per-host 1
  for i in 0 1; do
    h=$([ $i = 0 ] && echo h1 || echo s1)
    got=$("$X" exec "$h" sh -c 'grep Cpus_allowed_list /proc/self/status') || fail "exec $h"
    [ "${got##*[[:space:]]}" = "${mine[$i]}" ] || fail "$h runs on '$got', expected CPU ${mine[$i]}"
  done
  [ "$("$X" hosts --all)" = "$(printf 'h1 slots=1\ns1 slots=1')" ] ||
    fail "hosts with --cpus-per-host 1: $("$X" hosts --all)"
  # a job's SMP stays on its host's CPU (it chose among the whole
  # machine's and bound itself to s1's before)
  timeout 120 "$FT_LAUNCH" --cluster --nodes 1 --ppn 1 --job cpuj -- \
    ft-train-example --steps 2 --snapshot-every 1 --state-mb 1 >"$WORK/cpuj.out" 2>&1 ||
    { cat "$WORK/cpuj.out"; fail "a job on h1 with one CPU"; }
  got=$("$X" exec h1 ft-status --job cpuj | grep binding)
  grep -q "not bound: .* 1 CPUs this node may use" <<<"$got" ||
    fail "h1's SMP with h1 confined to CPU ${mine[0]}: '$got'"
  "$X" down --name "$CL" >/dev/null || fail "down"
  CL=
  ok "--cpus-per-host 1: h1 on CPU ${mine[0]}, s1 on CPU ${mine[1]}, slots=1; a job's SMP stays on h1's CPU"
fi
"$X" up 1 --name "x$$" --cpus-per-host $((${#mine[@]} + 1)) >/dev/null 2>"$WORK/cpus.err"
rc=$?
[ $rc -eq 1 ] || fail "--cpus-per-host beyond the CPUs: exit $rc, expected 1"
grep -q "needs $((${#mine[@]} + 1)) CPUs for 1 hosts" "$WORK/cpus.err" ||
  fail "--cpus-per-host refusal: $(cat "$WORK/cpus.err")"
assert_gone "x$$"
ok "--cpus-per-host beyond this machine's CPUs refused (exit 1), nothing made"
