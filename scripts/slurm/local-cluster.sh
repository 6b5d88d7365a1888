#!/usr/bin/env bash
# A throw-away one-node Slurm cluster on this machine, for trying the sbatch files and for the
# test (scripts/slurm/test-cluster.sh). Nothing under /etc is used or changed: the munge key,
# slurm.conf, state, spool, logs and sockets all live in one directory.
#
#   scripts/slurm/local-cluster.sh start DIR   # prints: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm/local-cluster.sh stop DIR    # stops the daemons started by `start DIR`
#
# Installs munge and Slurm from the distribution (Debian: slurm-wlm, munge) when missing.
# Knobs (environment): SLURM_TEST_CPUS (CPUs the node advertises; default max(nproc, 4), so
# that a learner and two single-CPU workers fit at once even on a 2-core machine),
# SLURM_TEST_PORT (slurmctld port; slurmd uses the next one; default 16817).
set -euo pipefail

die() { echo "local-cluster: $*" >&2; exit 1; }

install_if_missing() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v sbatch >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || die "slurmctld/slurmd/munged not installed and no apt-get to install them"
    echo "local-cluster: installing slurm-wlm and munge" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q slurm-wlm munge >&2
}

# Waits up to $2 seconds for command $1 (a string for eval) to succeed.
wait_for() {
    local what=$1 limit=$2 i
    for ((i = 0; i < limit * 4; i++)); do
        if eval "$what" >/dev/null 2>&1; then return 0; fi
        sleep 0.25
    done
    return 1
}

start() {
    local dir=$1
    install_if_missing
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chmod 700 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"
    local host cpus mem port
    host=$(hostname -s)
    cpus=${SLURM_TEST_CPUS:-$(( $(nproc) > 4 ? $(nproc) : 4 ))}
    # Leave the node some memory of its own; Slurm refuses jobs asking for more than this.
    mem=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) * 9 / 10 ))
    port=${SLURM_TEST_PORT:-16817}

    # munge: its own key and socket, so a system munged (if any) is untouched.
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" \
        || die "munged did not start; see $dir/munge/munged.log"
    wait_for "[ -S '$dir/munge/munge.sock' ]" 10 || die "munged socket did not appear"

    cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm/local-cluster.sh: a one-node test cluster.
ClusterName=yari-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (containers often have none to delegate): processes are tracked by parent pid.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
# The node advertises SLURM_TEST_CPUS CPUs whatever the hardware has.
SlurmdParameters=config_overrides
# scancel: SIGTERM, then SIGKILL after this many seconds.
KillWait=20
MinJobAge=3600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -f "$SLURM_CONF" || die "slurmctld did not start; see $dir/slurmctld.log"
    slurmd -f "$SLURM_CONF" || die "slurmd did not start; see $dir/slurmd.log"
    if ! wait_for "sinfo -h -N -o %t | grep -qx idle" 60; then
        sinfo -N >&2 || true
        tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
        die "node $host did not become idle within 60 s"
    fi
    echo "export SLURM_CONF=$SLURM_CONF"
}

stop_pidfile() {
    local file=$1 pid i
    [ -f "$file" ] || return 0
    pid=$(cat "$file" 2>/dev/null) || return 0
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.25
    done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    local dir=$1
    [ -d "$dir" ] || return 0
    if [ -f "$dir/slurm.conf" ]; then
        # Jobs first, so that no job step outlives its slurmd.
        SLURM_CONF=$dir/slurm.conf timeout 10 scancel --full --user="$(id -un)" 2>/dev/null || true
        sleep 1
    fi
    stop_pidfile "$dir/slurmd.pid"
    stop_pidfile "$dir/slurmctld.pid"
    stop_pidfile "$dir/munge/munged.pid"
}

case "${1:-}" in
start) [ $# -eq 2 ] || die "usage: $0 start DIR"; start "$2" ;;
stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
*) die "usage: $0 start|stop DIR" ;;
esac
