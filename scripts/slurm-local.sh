#!/usr/bin/env bash
# A throw-away single-node Slurm cluster on this machine, for testing `uvmsim sweep --backend slurm`
# against real slurmctld + slurmd (Debian's slurm-wlm and munge), without systemd and without
# touching /etc: every file (slurm.conf, munge key, sockets, state, logs) lives in DIR.
#
#   bash scripts/slurm-local.sh start DIR [--owner PID]   # start munged, slurmctld, slurmd; wait
#                                                         # until the node accepts jobs
#   bash scripts/slurm-local.sh stop DIR                  # stop the daemons, keep DIR
#   export SLURM_CONF=DIR/slurm.conf                      # then sbatch/squeue/scancel use it
#
# --owner PID: also stop the cluster when process PID exits (a test that dies cannot leave
# daemons behind). Ports are picked free at start; the node is this host's short name on
# 127.0.0.1 with all its cores. Process tracking is by process group (proctrack/pgid) and there
# is no task/cgroup plugin, so no systemd or cgroup delegation is needed.
set -euo pipefail

die() {
  echo "slurm-local: error: $*" >&2
  exit 1
}

cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || die "usage: slurm-local.sh start|stop DIR [--owner PID]"
shift 2
owner=""
while (($#)); do
  case "$1" in
    --owner)
      owner=${2:?--owner needs a PID}
      shift 2
      ;;
    *) die "unknown option $1" ;;
  esac
done

# Reads a pid file and sends SIGTERM, then SIGKILL if the process outlives a grace period.
stop_pidfile() {
  local f=$1 pid
  [[ -s "$f" ]] || return 0
  pid=$(cat "$f")
  if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

stop_cluster() {
  # slurmd first so running job steps are torn down by their own daemon.
  stop_pidfile "$dir/run/slurmd.pid"
  stop_pidfile "$dir/run/slurmctld.pid"
  stop_pidfile "$dir/run/munged.pid"
  stop_pidfile "$dir/run/watchdog.pid"
  remove_short_dir
}

# Unix sockets (slurmstepd's, munged's) must have paths under 108 bytes, so they live in a short
# directory under /tmp whose name is recorded in DIR/run/short-dir.
remove_short_dir() {
  local f="$dir/run/short-dir" s
  [[ -s "$f" ]] || return 0
  s=$(cat "$f")
  [[ "$s" == /tmp/uvsl.* ]] && rm -rf "$s"
  rm -f "$f"
}

if [[ "$cmd" == stop ]]; then
  [[ -d "$dir" ]] || exit 0
  dir=$(cd "$dir" && pwd)
  stop_cluster
  exit 0
fi
[[ "$cmd" == start ]] || die "unknown command '$cmd' (start|stop)"

for b in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v "$b" >/dev/null 2>&1 || [[ -x "/usr/sbin/$b" ]] ||
    die "'$b' not found: install slurm-wlm and munge (bash scripts/setup.sh --deps-only)"
done
export PATH="$PATH:/usr/sbin"

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# munged refuses world-writable or group-writable directories on its paths.
chmod 0700 "$dir"
mkdir -p "$dir/run" "$dir/log" "$dir/state" "$dir/munge"
chmod 0700 "$dir/run" "$dir/log" "$dir/state"
chmod 0700 "$dir/munge"

# Stop whatever a previous start in this directory left running, and on any failure below.
stop_cluster
trap 'echo "slurm-local: start failed; logs in $dir/log" >&2; stop_cluster' ERR
short=$(mktemp -d /tmp/uvsl.XXXXXX)
echo "$short" >"$dir/run/short-dir"
chmod 0755 "$short" # clients must reach the munge socket
mkdir -p "$short/spool"
chmod 0700 "$short/spool"

# A free TCP port on 127.0.0.1 (the kernel picks it; a tiny race with other programs is
# acceptable in tests, and the daemons fail loudly if it is taken meanwhile).
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [[ "$slurmd_port" == "$ctld_port" ]]; do slurmd_port=$(free_port); done

node=$(hostname -s 2>/dev/null || hostname)
[[ -n "$node" ]] || node=localhost
cpus=$(nproc)
mem_mb=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10))
user=$(id -un)

# --- munge: a private key and socket
key="$dir/munge/munge.key"
if [[ ! -s "$key" ]]; then
  dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chmod 0400 "$key"
sock="$short/munge.socket"
munged --force --key-file="$key" --socket="$sock" --pid-file="$dir/run/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" --num-threads=2 ||
  die "munged did not start (see $dir/log/munged.log)"

# --- slurm.conf
cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm-local.sh: a single-node test cluster, not for production.
ClusterName=uvmsimtest
SlurmctldHost=${node}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=${user}
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=${sock}
CredType=cred/munge
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${short}/spool/%n
SlurmctldPidFile=${dir}/run/slurmctld.pid
SlurmdPidFile=${dir}/run/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
# A tiny test cluster: the main scheduler runs every second, so short array tasks start
# within a second of each other (the default cycle made each wave wait ~3 s).
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MaxArraySize=100001
MaxJobCount=200000
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
Waittime=0
NodeName=${node} NodeAddr=127.0.0.1 NodeHostname=${node} CPUs=${cpus} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$dir/slurm.conf"

# -i: ignore state left by an earlier cluster in this directory.
slurmctld -i -f "$SLURM_CONF" || die "slurmctld did not start (see $dir/log/slurmctld.log)"
slurmd -f "$SLURM_CONF" -N "$node" || die "slurmd did not start (see $dir/log/slurmd.log)"

# Wait until the node is idle, i.e. it accepts jobs.
ok=""
for _ in $(seq 150); do
  state=$(sinfo -h -N -n "$node" -o '%t' 2>/dev/null || true)
  if [[ "$state" == idle* || "$state" == mix* ]]; then
    ok=1
    break
  fi
  sleep 0.2
done
if [[ -z "$ok" ]]; then
  echo "slurm-local: node $node did not become idle (state '${state:-?}')" >&2
  tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
  false
fi
trap - ERR

if [[ -n "$owner" ]]; then
  # A detached watchdog: stops the cluster once the owner process is gone.
  (
    trap '' HUP INT
    while kill -0 "$owner" 2>/dev/null; do sleep 1; done
    stop_pidfile "$dir/run/slurmd.pid"
    stop_pidfile "$dir/run/slurmctld.pid"
    stop_pidfile "$dir/run/munged.pid"
    remove_short_dir
    rm -f "$dir/run/watchdog.pid"
  ) </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/run/watchdog.pid"
  disown || true
fi

echo "slurm-local: cluster up: node $node ($cpus CPUs), slurmctld port $ctld_port, slurmd port $slurmd_port"
echo "export SLURM_CONF=$SLURM_CONF"
