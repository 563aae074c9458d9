#!/usr/bin/env bash
# Where the hosts of a hostfile or a Slurm allocation come from (no root, no
# MPI run): ft-nodelist expands SLURM_JOB_NODELIST's compressed syntax (many
# good lists, and bad ones refused with a message naming the bad part);
# ft-launch --dry-run shows the hosts, spares and probe it would use for a
# hostfile with "spare" lines and inside a Slurm allocation.
# shellcheck source=tests/cluster/common.sh
. "$(dirname "$0")/common.sh"
NL=$SRC/scripts/ft-nodelist
L=$FT_LAUNCH
unset SLURM_JOB_NODELIST OMPI_MCA_plm_rsh_agent FT_PROBE FT_PROBE_TRIES

good() {  # good LIST EXPECTED (space separated)
  local got rc
  got=$("$NL" "$1" 2>&1 | tr '\n' ' '); rc=${PIPESTATUS[0]}
  [ $rc -eq 0 ] && [ "$got" = "$2 " ] || fail "ft-nodelist '$1': exit $rc, '$got', expected '$2'"
}
bad() {  # bad LIST MESSAGE-PATTERN
  local out rc
  out=$("$NL" "$1" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "ft-nodelist '$1': exit $rc ($out), expected 2"
  grep -q -- "^ft-nodelist: '.*': $2" <<<"$out" || fail "ft-nodelist '$1': message '$out' lacks '$2'"
  [ "$(wc -l <<<"$out")" -eq 1 ] || fail "ft-nodelist '$1': more than one line: $out"
}

good 'node01' 'node01'
good 'a,b,c' 'a b c'
good 'node[01-04,07],gpu[1-2]' 'node01 node02 node03 node04 node07 gpu1 gpu2'
good 'n[1-3]' 'n1 n2 n3'
good 'n[8-10]' 'n8 n9 n10'
good 'n[08-10]' 'n08 n09 n10'
good 'n[098-101]' 'n098 n099 n100 n101'
good 'n[000-002]' 'n000 n001 n002'
good 'n[5]' 'n5'
good 'n[7,3,5]' 'n7 n3 n5'
good 'x[1-2]-ib' 'x1-ib x2-ib'
good 'rack[1-2]-n[01-02]' 'rack1-n01 rack1-n02 rack2-n01 rack2-n02'
good 'a.b-c_d[1-2],e' 'a.b-c_d1 a.b-c_d2 e'
good '[1-2]' '1 2'
good 'n1,n1' 'n1 n1'
good "$(printf 'n[1-%d]' 1000)" "$(seq -f 'n%g' 1000 | tr '\n' ' ' | sed 's/ $//')"
ok "good node lists: ranges, lists, zero padding kept, several groups, suffixes"

bad '' 'empty node list'
bad 'n[3-1]' "range '3-1' in \[3-1\] runs backwards"
bad 'n[1-' "'\[' not closed"
bad 'n1]' "'\]' without '\[' at character 3"
bad 'n[[1]]' "'\[' inside brackets at character 3"
bad 'a,,b' 'empty name before the comma at character 3'
bad ',a' 'empty name before the comma at character 1'
bad 'a,' 'empty name at the end'
bad 'n[]' 'empty brackets'
bad 'n[1,]' 'empty range in \[1,\]'
bad 'n[,1]' 'empty range in \[,1\]'
bad 'n[a-b]' "'a-b' in \[a-b\] is not a number or LO-HI range"
bad 'n[1-2-3]' "'1-2-3' in \[1-2-3\] is not a number"
bad 'n[-1]' "'-1' in \[-1\] is not a number"
bad 'n[ 1]' "' 1' in \[ 1\] is not a number"
bad 'bad host' "'bad host' has a character not allowed in a host name"
bad 'n[1-2]x/y' "'x/y' has a character not allowed"
bad 'n[1-9999999999]' "'1-9999999999' in \[1-9999999999\]: number too large"
bad 'n[1-70000]' 'more than 65536 hosts'
out=$("$NL" 2>&1); [ $? -eq 2 ] && grep -q 'SLURM_JOB_NODELIST is not set' <<<"$out" ||
  fail "ft-nodelist without a list or SLURM_JOB_NODELIST: $out"
got=$(SLURM_JOB_NODELIST='c[1-2]' "$NL" | tr '\n' ' ')
[ "$got" = 'c1 c2 ' ] || fail "ft-nodelist reads SLURM_JOB_NODELIST: '$got'"
ok "bad node lists: exit 2, one line naming the bad part"

# ft-launch inside an allocation (no --hostfile): the nodes of the list.
out=$(SLURM_JOB_NODELIST='node[01-03],gpu7' "$L" --dry-run --nodes 3 --spares 1 -- prog) ||
  fail "--dry-run in a Slurm allocation: $out"
# In the sequential mapper's hostfile: a line a rank, in the job's order.
[ "$(grep '^# hostfile:' <<<"$out" | tr '\n' ';')" = '# hostfile: node01;# hostfile: node01;# hostfile: node02;# hostfile: node02;# hostfile: node03;# hostfile: node03;' ] ||
  fail "Slurm hosts: $out"
grep -qx '# spares: up to 1 of gpu7' <<<"$out" || fail "Slurm spare: $out"
grep -qx '# probe: srun -N1 -n1 --overlap -w HOST true (3 tries)' <<<"$out" || fail "Slurm probe: $out"
[[ $out == *" -np 6 "* ]] || fail "Slurm -np: $out"
SLURM_JOB_NODELIST='node[2-1]' "$L" --dry-run -- prog >"$WORK/sl.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "^ft-launch: SLURM_JOB_NODELIST: 'node\[2-1\]': range '2-1' in \[2-1\] runs backwards$" "$WORK/sl.out" ||
  { cat "$WORK/sl.out"; fail "a bad SLURM_JOB_NODELIST: exit $rc"; }
out=$(SLURM_JOB_NODELIST='x[1-2]' "$L" --dry-run --hostfile /dev/null -- prog 2>&1)
grep -q 'names no host' <<<"$out" || fail "--hostfile does not win over SLURM_JOB_NODELIST: $out"
ok "inside Slurm: the allocation's nodes, the ones beyond --nodes as spares; a bad list exits 2"

# A hostfile: "spare" lines are spares, never nodes of the first attempt.
printf '%s\n' 'a slots=4 domain=r1' 'b spare domain=r2' '# c spare' 'c' 'd' 'e spare' >"$WORK/hf"
out=$("$L" --dry-run --hostfile "$WORK/hf" -- prog) || fail "--dry-run, hostfile with spares: $out"
[ "$(grep '^# hostfile:' <<<"$out" | tr '\n' ';')" = '# hostfile: a slots=2;# hostfile: c slots=2;# hostfile: d slots=2;' ] ||
  fail "hostfile with spares, job hosts: $out"
grep -qx '# spares: up to 2 of b e' <<<"$out" || fail "hostfile spares (default: the marked ones): $out"
grep -qx '# probe: ssh -o BatchMode=yes -o ConnectTimeout=10 HOST true (3 tries)' <<<"$out" ||
  fail "default probe: $out"
out=$("$L" --dry-run --hostfile "$WORK/hf" --nodes 2 --spares 3 -- prog) || fail "--nodes 2 --spares 3: $out"
grep -qx '# spares: up to 3 of d b e' <<<"$out" || fail "hosts beyond --nodes are spares too: $out"
out=$(OMPI_MCA_plm_rsh_agent="nosuchagent : $FT_RSH -q" FT_PROBE_TRIES=5 "$L" --dry-run --hostfile "$WORK/hf" -- prog) ||
  fail "probe from OMPI_MCA_plm_rsh_agent: $out"
grep -qx "# probe: $FT_RSH -q HOST true (5 tries)" <<<"$out" || fail "probe from the rsh agent list: $out"
out=$("$L" --dry-run --hostfile "$WORK/hf" --mpirun-arg --mca --mpirun-arg plm_rsh_agent --mpirun-arg "$FT_RSH" -- prog) ||
  fail "probe from --mca plm_rsh_agent: $out"
grep -qx "# probe: $FT_RSH HOST true (3 tries)" <<<"$out" || fail "probe from --mca plm_rsh_agent: $out"
# A hostfile's hosts are reached with the rsh agent (--mca plm rsh), unless
# the user names a launcher with any of mpirun's spellings for it.
out=$("$L" --dry-run --hostfile "$WORK/hf" -- prog) || fail "--dry-run: $out"
grep -q '^mpirun .* --mca plm rsh ' <<<"$out" || fail "no --mca plm rsh for a hostfile: $out"
for opt in --mca -mca --gmca -gmca --prtemca -prtemca; do
  out=$("$L" --dry-run --hostfile "$WORK/hf" --mpirun-arg "$opt" --mpirun-arg plm --mpirun-arg slurm -- prog) ||
    fail "--mpirun-arg $opt plm slurm: $out"
  grep -q -- '--mca plm rsh' <<<"$out" && fail "$opt plm slurm given, ft-launch still adds --mca plm rsh: $out"
done
out=$(FT_PROBE='myprobe -x' "$L" --dry-run --hostfile "$WORK/hf" --probe 'other -y' -- prog) || fail "--probe: $out"
grep -qx '# probe: other -y HOST true (3 tries)' <<<"$out" || fail "--probe wins over FT_PROBE: $out"
"$L" --dry-run --hostfile "$WORK/hf" --spares 3 -- prog >"$WORK/sp.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q '^ft-launch: --spares 3: hostfile .* has 2 host(s) to spare' "$WORK/sp.out" ||
  { cat "$WORK/sp.out"; fail "--spares beyond the hostfile's: exit $rc"; }
FT_PROBE_TRIES=0 "$L" --dry-run --hostfile "$WORK/hf" -- prog >"$WORK/pt.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'FT_PROBE_TRIES=0' "$WORK/pt.out" || { cat "$WORK/pt.out"; fail "FT_PROBE_TRIES=0: exit $rc"; }
"$L" --dry-run --cluster --probe true -- prog >"$WORK/pc.out" 2>&1; rc=$?
[ $rc -eq 2 ] || { cat "$WORK/pc.out"; fail "--probe with --cluster: exit $rc"; }
ok "hostfile: spare lines and hosts beyond --nodes are spares; the probe is the rsh agent, FT_PROBE or --probe"
