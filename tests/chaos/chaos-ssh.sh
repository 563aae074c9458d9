#!/usr/bin/env bash
# The hostfile path over ssh, as on a cluster (issue 15.3): the hosts of an
# ft-cluster run sshd (ft-cluster up --sshd), a hostfile of their names is
# written by hand, and ft-launch runs on the head with nothing of ours
# between it and the hosts: mpirun's default agent (ssh) starts the
# daemons, ft-launch's default probe (ssh HOST true) finds the lost host.
# h2 is killed at step 8; the spare the hostfile marks is rebuilt, the job
# resumes from step 8 with the fault-free digest.  Skips without sshd.
# shellcheck source=tests/chaos/lib.sh
. "$(dirname "$0")/lib.sh"
need_cluster
[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null ||
  skip "openssh-server and openssh-client are not installed (scripts/install-deps)"
STEPS=16 EVERY=2
TRAIN=("$BLD/ft-train-example" --steps "$STEPS" --snapshot-every "$EVERY" --state-mb 4)
unset OMPI_MCA_plm_rsh_agent
export FT_PROBE_TRIES=1   # ssh waits its ConnectTimeout (10 s) for a dead host: once is enough here

ssh_launch_bg() {  # ssh_launch_bg LOG ARGS...: ft-launch ARGS on the head; LPID, LLOG
  local log=$1; shift
  : >"$WORK/$log"
  timeout -s TERM "$LIMIT" ft-cluster exec --name "$CL" head \
    ft-launch "$@" -- "${TRAIN[@]}" >"$WORK/$log" 2>&1 &
  # shellcheck disable=SC2034  # LLOG: read by finish (lib.sh)
  LPID=$! LLOG=$log
  hang_watch "$log" "$LPID" &
  HWPID=$!
  BG_PIDS+=("$LPID" "$HWPID")
}

up cssh 4 --spares 1 --sshd
printf '%s\n' h1 h2 h3 h4 's1 spare' >"$WORK/hostfile"

# The hosts share this machine's files, its user's ~/.bashrc among them, and
# bash runs that file for every ssh session (Debian's bash does when sshd
# starts it).  A host's logins must not: a stale pyenv lock taken there
# made every login wait 60 s, and the probe took every host as lost.  A
# login's HOME is the cluster's (ft-cluster up --sshd), and, as a stand-in
# for such a file, one that says it ran is bound over the user's in h3's
# mount namespace only (an interactive bash on h3 shows that it is there).
RC_HOME=$(getent passwd "$(id -un)" | cut -d: -f6)
ft-cluster exec --name "$CL" head ssh h3 printenv HOME >"$WORK/ssh.home" 2>&1 ||
  { cat "$WORK/ssh.home"; fail "ssh h3 printenv HOME"; }
case $(cat "$WORK/ssh.home") in
  */ssh/home) ;;
  *) cat "$WORK/ssh.home"; fail "an ssh login to h3 has HOME $(cat "$WORK/ssh.home"), not the cluster's ssh/home" ;;
esac
printf '%s\n' 'echo "the machine rc file ran on $(hostname)" >&2' >"$WORK/bashrc"
if [ -f "$RC_HOME/.bashrc" ]; then
  ft-cluster exec --name "$CL" h3 mount --bind "$WORK/bashrc" "$RC_HOME/.bashrc" ||
    fail "cannot bind a test rc file over $RC_HOME/.bashrc on h3"
  ft-cluster exec --name "$CL" h3 bash -ic true 2>&1 | grep -q "machine rc file ran on h3" ||
    fail "the test rc file bound over $RC_HOME/.bashrc on h3 does not run in an interactive bash there"
fi
ft-cluster exec --name "$CL" head ssh h3 hostname >"$WORK/ssh.out" 2>"$WORK/ssh.err" &&
  [ "$(cat "$WORK/ssh.out")" = h3 ] || { cat "$WORK/ssh.out" "$WORK/ssh.err"; fail "ssh h3 hostname from the head"; }
ok "ssh h3 from the head runs on h3"
if grep -q "machine rc file ran" "$WORK/ssh.err"; then
  cat "$WORK/ssh.err"; fail "an ssh login to h3 ran this machine's $RC_HOME/.bashrc"
fi
ok "an ssh login to h3 has the cluster's HOME and runs none of the user's ~/.bashrc"

begin "fault-free reference over ssh"
ssh_launch_bg ref --hostfile "$WORK/hostfile" --job "ref$(od -An -N4 -tu4 /dev/urandom | tr -d " ")"
finish
expect_rc ref 0 "fault-free run over ssh"
REF=$(digest_of ref)
[ -n "$REF" ] || die_with ref "fault-free run printed no digest"
ok "fault-free digest $REF"

begin "h2 killed at step 8: ssh cannot reach it, s1 takes its place"
# --restore-job: ft-restore runs as a job of its own, and h2 is asked
# (ssh) before it does.  --verbose shows mpirun's messages and changes
# nothing else: the recovery's account is said as without it (before: no
# account, and the rebuild always ran as a job of its own).
export FT_JOB=ssh
FT_HOLD=step=8 ssh_launch_bg hf --hostfile "$WORK/hostfile" --restarts 1 --job "$FT_JOB" --verbose --restore-job
# shellcheck disable=SC2034  # read by chaos (lib.sh): where it strikes
HOLD_WHEN=step=8
chaos hf kill-node h2
finish
expect_rc hf 0 "ft-launch --hostfile --restarts 1 over ssh"
# h2 found lost by the probe (ssh), or named by mpirun (its daemon there
# lost: whether mpirun says so before it exits is its own race)
expect_line hf "^ft-launch: \[\+[0-9.]+s\] job failed; (host\(s\) of the job cannot run a command \('ssh -o BatchMode=yes -o ConnectTimeout=10 HOST true' failed once\)|mpirun lost its daemon on host\(s\) of the job \(killed or partitioned\)): h2$" "h2 lost"
expect_line hf '^ft-launch: lost host\(s\): h2; replacing them with spare\(s\) s1$' "s1 replaces h2"
expect_line hf '^ft-restore: lost node 1 \(h2, group 0 position [0-3]\) -> s1$' "ft-restore rebuilds h2 on s1"
expect_resumed hf 8 8 "h2 lost"
expect_digest hf "h2 lost"
expect_line hf '^ft-launch: \+ mpirun ' "--verbose: mpirun's command line"
expect_line hf "^ft-launch: recovery 1: training resumed [0-9.]+ s after the failed job's end: .*, ft-restore [0-9.]+ s \\(.*\\), relaunch [0-9.]+ s, ft_init [0-9.]+ s, until restored [0-9.]+ s$" "--verbose: the recovery's account"
ok "over ssh: h2 lost, s1 rebuilt, resumed from step $RESUMED, digest matches"
