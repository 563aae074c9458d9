#!/usr/bin/env bash
# Failure domains shape the erasure-coding groups: 6 hosts in 3 racks (h1 h2
# in r1, h3 h4 in r2, h5 h6 in r3), k=2 m=1: the two groups of 3 must each
# take one host of every rack (without domains they would be h1-h3 and
# h4-h6, two hosts of a rack in one group).  ft-status on every host shows
# its group; the job ends with the stripes verified by ft-restore --verify.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
need_cluster
need_mpi
cluster_up dom 6
X=$FT_CLUSTER_CMD
export FT_FAILURE_DOMAINS=h1=r1,h2=r1,h3=r2,h4=r2,h5=r3,h6=r3
timeout 180 "$FT_LAUNCH" --cluster --ppn 1 --ec 2+1 --job dom -- \
  "$BLD/ft-train-example" --steps 4 --snapshot-every 2 --state-mb 1 >"$WORK/run.out" 2>&1 ||
  { cat "$WORK/run.out"; fail "6-host job with domains"; }
declare -A rack_of=([h1]=r1 [h2]=r1 [h3]=r2 [h4]=r2 [h5]=r3 [h6]=r3) seen=()
for h in h1 h2 h3 h4 h5 h6; do
  g=$("$X" exec "$h" env FT_JOB=dom "$BLD/ft-status" --json |
      sed -n 's/.*"meta":{[^}]*"group":\([0-9]*\).*/\1/p')
  [ -n "$g" ] || fail "no group in ft-status on $h"
  key=$g/${rack_of[$h]}
  [ -z "${seen[$key]:-}" ] || fail "group $g holds ${seen[$key]} and $h, both in rack ${rack_of[$h]}"
  seen[$key]=$h
done
[ ${#seen[@]} -eq 6 ] || fail "expected 2 groups x 3 racks, got ${!seen[*]}"
ok "2 groups of 3 hosts, each with one host of every rack: ${!seen[*]}"
timeout 120 "$FT_LAUNCH" --cluster --one-per-node --job dom -- "$BLD/ft-restore" --verify \
  >"$WORK/verify.out" 2>&1 || { cat "$WORK/verify.out"; fail "verify"; }
grep -q "verified 6 stripes of version 2: 0 with parity that does not match" "$WORK/verify.out" ||
  { cat "$WORK/verify.out"; fail "stripes of the rack-aware layout"; }
ok "every stripe of the rack-aware layout verifies over TCP"
