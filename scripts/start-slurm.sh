#!/usr/bin/env bash
# Starts a real one-node Slurm cluster on this machine (munged, slurmctld, slurmd) for the Slurm
# client tests (and for trying `ixbench run --executor slurm`), and prints the line that tells the
# tests it is there:
#   export IXBENCH_TEST_SLURM=1
# Usage: eval "$(scripts/start-slurm.sh)"      (scripts/test.sh does this before ctest)
#        scripts/start-slurm.sh --stop          (stops slurmd, slurmctld and munged)
# Installs Debian's `slurm-wlm` and `munge` with apt-get when they are missing (as root, or
# through sudo); it needs root for the daemons (SlurmUser=root). Writes /etc/slurm/slurm.conf for
# this host alone: partition `debug`, CPUs=$(nproc), RealMemory a little under what the machine
# (or its cgroup) has, so the node never registers as invalid. Idempotent: with the cluster up and
# the config unchanged it changes nothing. A node left DOWN or DRAINED by an earlier run is
# resumed. Accounting is off (no slurmdbd): `sacct` does not answer; see docs/slurm.md.
# Exits non-zero, saying why, when it cannot; scripts/test.sh then goes on and the Slurm tests skip.
set -euo pipefail

say() { echo "start-slurm: $*" >&2; }

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    say "needs root (or passwordless sudo) to install Slurm and run its daemons as root; run it as root"
    exit 1
  fi
fi
as_root() { $SUDO "$@"; }

host=$(hostname -s)
conf=/etc/slurm/slurm.conf
conf_marker="# Written by ixbench's scripts/start-slurm.sh"
log_dir=/var/log/slurm
ctld_pid=/run/slurmctld.pid
slurmd_pid=/run/slurmd.pid

running() { [[ -f $1 ]] && as_root kill -0 "$(cat "$1")" 2>/dev/null; }
stop_daemon() {  # pid file
  if running "$1"; then
    local pid
    pid=$(cat "$1")
    as_root kill "$pid"
    for _ in $(seq 50); do as_root kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    say "process $pid (from $1) did not stop on SIGTERM"
    return 1
  fi
}

if [[ ${1:-} == --stop ]]; then
  stop_daemon "$slurmd_pid"
  stop_daemon "$ctld_pid"
  stop_daemon /run/munge/munged.pid
  exit 0
fi

install_packages() {
  local missing=()
  for pkg in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  command -v apt-get >/dev/null || { say "Slurm is not installed and there is no apt-get: install ${missing[*]} yourself"; exit 1; }
  say "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq || { say "apt-get update failed: check the network/apt sources"; exit 1; }
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { say "apt-get install failed for: ${missing[*]} (Debian 12 ships slurm-wlm 22.05)"; exit 1; }
}

start_munge() {
  local key=/etc/munge/munge.key
  if ! as_root test -s "$key"; then
    say "creating the munge key $key"
    as_root dd if=/dev/urandom bs=1 count=1024 of="$key" status=none
  fi
  as_root chown munge:munge "$key"
  as_root chmod 400 "$key"
  as_root install -d -o munge -g munge -m 755 /run/munge
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    as_root runuser -u munge -- /usr/sbin/munged --force ||
      { say "munged did not start, see /var/log/munge/munged.log"; exit 1; }
  fi
  munge -n | unmunge >/dev/null 2>&1 || { say "munged runs but 'munge -n | unmunge' fails, see /var/log/munge/munged.log"; exit 1; }
}

# MiB of memory the node may claim: 95% of the least of MemTotal, slurmd's own count and the cgroup
# limit. Claiming more than slurmd finds makes the node invalid (drained "Low RealMemory").
real_memory() {
  local mib slurmd_mib limit
  mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
  slurmd_mib=$(as_root /usr/sbin/slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  [[ -n $slurmd_mib && $slurmd_mib -lt $mib ]] && mib=$slurmd_mib
  limit=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || echo max)
  [[ $limit =~ ^[0-9]+$ && $((limit / 1048576)) -lt $mib ]] && mib=$((limit / 1048576))
  echo $((mib * 95 / 100))
}

write_config() {  # prints "changed" when it wrote a new slurm.conf
  local want
  want=$(cat <<EOF
$conf_marker: a one-node cluster for tests.
ClusterName=ixbench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$ctld_pid
SlurmdPidFile=$slurmd_pid
SlurmctldLogFile=$log_dir/slurmctld.log
SlurmdLogFile=$log_dir/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$(real_memory) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
  if [[ -f $conf && $(cat "$conf") == "$want" ]]; then return 0; fi
  if [[ -f $conf ]] && ! head -1 "$conf" | grep -q "$conf_marker"; then
    say "$conf exists and was not written by this script (a real cluster's?): leaving it alone; move it away to let this script write a one-node config"
    exit 1
  fi
  as_root install -d /etc/slurm
  printf '%s\n' "$want" | as_root tee "$conf" >/dev/null
  echo changed
}

start_daemons() {  # $1: "changed" restarts running daemons on the new config
  as_root install -d "$log_dir" /var/spool/slurmctld /var/spool/slurmd
  if [[ ${1:-} == changed ]]; then
    stop_daemon "$slurmd_pid"
    stop_daemon "$ctld_pid"
  fi
  if ! running "$ctld_pid"; then
    as_root /usr/sbin/slurmctld || { say "slurmctld did not start, see $log_dir/slurmctld.log"; exit 1; }
  fi
  for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.1; done
  scontrol ping 2>/dev/null | grep -q UP ||
    { say "slurmctld does not answer 'scontrol ping', see $log_dir/slurmctld.log"; exit 1; }
  if ! running "$slurmd_pid"; then
    as_root /usr/sbin/slurmd || { say "slurmd did not start, see $log_dir/slurmd.log"; exit 1; }
  fi
}

node_state() { sinfo -h -N -n "$host" -o %T 2>/dev/null | head -1; }

# Waits until the node takes jobs; resumes it once when an earlier run left it DOWN or DRAINED.
resumed=0
wait_for_node() {
  local state
  for _ in $(seq 300); do
    state=$(node_state)
    case $state in
      idle | mixed | allocated | completing) return 0 ;;
      down* | drain* | fail*)
        if [[ $resumed -eq 0 ]]; then
          say "node $host is $state ($(sinfo -h -N -n "$host" -o %E)): resuming it"
          as_root scontrol update nodename="$host" state=resume 2>/dev/null || true
          resumed=1
        fi ;;
    esac
    sleep 0.1
  done
  say "node $host is not taking jobs: state '${state:-none}', reason '$(sinfo -h -N -n "$host" -o %E 2>/dev/null)'; see $log_dir/slurmd.log and $log_dir/slurmctld.log"
  exit 1
}

smoke_job() {
  local dir out
  dir=$(mktemp -d /tmp/ixbench-slurm-check.XXXXXX)
  out=$(cd "$dir" && timeout 60 sbatch --wait --parsable -J ixbench-check -o "$dir/out" --wrap 'echo ok' 2>&1) ||
    { say "a trivial job did not succeed (sbatch --wait: $out); see $log_dir/slurmctld.log"; rm -rf "$dir"; exit 1; }
  [[ $(cat "$dir/out" 2>/dev/null) == ok ]] ||
    { say "the trivial job $out ran but wrote no output to $dir/out"; exit 1; }
  rm -rf "$dir"
}

install_packages
start_munge
changed=$(write_config)
was_up=0
if [[ -z $changed ]] && running "$ctld_pid" && running "$slurmd_pid"; then was_up=1; fi
start_daemons "$changed"
wait_for_node
# A cluster found up, unchanged and taking jobs was checked by the run that started it.
if [[ $was_up -eq 0 || $resumed -eq 1 ]]; then smoke_job; fi
say "Slurm running: node $host ($(nproc) CPUs), partition debug; logs in $log_dir"
echo "export IXBENCH_TEST_SLURM=1"
