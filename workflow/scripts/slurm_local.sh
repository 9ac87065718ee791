#!/usr/bin/env bash
# Start / stop a throwaway single-node SLURM cluster (munged + slurmctld + slurmd) for tests.
#
#   workflow/scripts/slurm_local.sh start  [DIR]   # prints `export SLURM_CONF=DIR/slurm.conf PATH=DIR/bin:$PATH`
#   workflow/scripts/slurm_local.sh status [DIR]   # exit 0 running, 3 stopped, 1 partly running
#   workflow/scripts/slurm_local.sh stop   [DIR]   # cancels its jobs, stops only its own daemons
#   workflow/scripts/slurm_local.sh env    [DIR]   # prints the export line (no start)
#
# DIR (default $NTK_SLURM_DIR, else ${TMPDIR:-/tmp}/ntkslurm-$UID) holds everything: slurm.conf,
# munge key/socket, state, spool, logs and pid files. Keep it short (unix socket paths <= 107).
# Nothing is written outside DIR; the system's /etc/slurm and /run/munge are not touched. Ports
# are chosen free at first start, so several clusters (one per DIR) can run side by side.
#
# `start` is idempotent (a running cluster in DIR is reused), `stop` kills only the pids recorded
# in DIR's pid files, and only if they still are the daemons it started (checked via
# /proc/<pid>/exe). Exit codes: 0 ok, 77 SLURM cannot start here (binaries missing: install with
# .ci/slurm.sh; or a daemon failed -- see DIR/log/*.log), 2 usage.
#
# Config (measured on Debian 12 / SLURM 22.05 in a root container without systemd/cgroups):
# proctrack/linuxproc, task/none, select/cons_tres, no accounting (so use
# `--slurm-status-command squeue`; `sacct` fails and makes snakemake hang), SlurmUser=root.
# The node advertises NTK_SLURM_GPUS (default 1) fake GPUs (gres on empty files in DIR/dev), so
# rules with `resources: gpu=1` schedule on it (their code sees no CUDA device and runs on CPU).
# Partitions: `debug` (default) and, with fake GPUs, `gpu` (same node).
set -u

SKIP=77
cmd=${1:-}
DIR=${2:-${NTK_SLURM_DIR:-${TMPDIR:-/tmp}/ntkslurm-$(id -u)}}
CONF="$DIR/slurm.conf"
NODE=ntknode
PART=debug
FAKE_GPUS=${NTK_SLURM_GPUS:-1}

log() { echo "slurm_local: $*" >&2; }

# pid file -> pid if that process is alive, runs binary $2 (Debian: $2-wlm) and was started with
# this DIR on its command line (so a recycled pid or another cluster's daemon is never touched).
live_pid() {
    local pidf=$1 bin=$2 pid exe args
    [[ -s $pidf ]] || return 1
    pid=$(tr -dc '0-9' <"$pidf")
    [[ -n $pid ]] && alive "$pid" || return 1
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    exe=${exe% (deleted)}
    [[ ${exe##*/} == "$bin" || ${exe##*/} == "$bin-wlm" ]] || return 1
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $args == *"$DIR/"* ]] || return 1
    echo "$pid"
}

alive() {  # pid exists and is not a zombie
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $st && $st != Z ]]
}

free_port() {  # a TCP port nothing listens on (best effort; bound by the daemon right after)
    local p _
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

need_bins() {
    local b missing=()
    for b in munged slurmctld slurmd sbatch squeue sinfo scontrol scancel; do
        command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] || missing+=("$b")
    done
    if ((${#missing[@]})); then
        log "SLURM not installed (missing: ${missing[*]}); install with: .ci/slurm.sh"
        return 1
    fi
}

bin() { command -v "$1" 2>/dev/null || echo "/usr/sbin/$1"; }

write_conf() {
    local cpus mem ctl_port d_port
    cpus=$(nproc)
    # Advertise 90% of RAM so rules' mem_mb requests (sbatch --mem) fit.
    mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    ctl_port=$(free_port) || { log "no free port"; return 1; }
    d_port=$(free_port) || { log "no free port"; return 1; }
    while ((d_port == ctl_port)); do d_port=$(free_port) || return 1; done
    mkdir -p "$DIR"/{state,spool,log,run,munge}
    chmod 700 "$DIR/munge"
    if [[ ! -s $DIR/munge/munge.key ]]; then
        (umask 077 && head -c 1024 /dev/urandom >"$DIR/munge/munge.key")
    fi
    # Fake GPU device files: slurmd counts a gpu gres by its File= entries.
    mkdir -p "$DIR/dev"
    : >"$DIR/gres.conf"
    local g
    for ((g = 0; g < FAKE_GPUS; g++)); do
        : >"$DIR/dev/fakegpu$g"
        echo "NodeName=$NODE Name=gpu File=$DIR/dev/fakegpu$g" >>"$DIR/gres.conf"
    done
    local gres_line="" node_gres="" gpu_part=""
    if ((FAKE_GPUS > 0)); then
        gres_line="GresTypes=gpu"
        node_gres="Gres=gpu:$FAKE_GPUS"
        # A second partition on the same node, for testing GPU-partition routing.
        gpu_part="PartitionName=gpu Nodes=$NODE MaxTime=INFINITE State=UP"
    fi
    cat >"$CONF" <<EOF
# Written by workflow/scripts/slurm_local.sh: a one-node test cluster. Do not use in production.
ClusterName=ntktest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MinJobAge=600
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
$gres_line
NodeName=$NODE NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem $node_gres State=UNKNOWN
PartitionName=$PART Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
$gpu_part
EOF
}

status() {
    local n=0 pm pc pd
    pm=$(live_pid "$DIR/run/munged.pid" munged) && n=$((n + 1))
    pc=$(live_pid "$DIR/run/slurmctld.pid" slurmctld) && n=$((n + 1))
    pd=$(live_pid "$DIR/run/slurmd.pid" slurmd) && n=$((n + 1))
    echo "munged=${pm:-stopped} slurmctld=${pc:-stopped} slurmd=${pd:-stopped} dir=$DIR"
    ((n == 3)) && return 0
    ((n == 0)) && return 3
    return 1
}

print_env() { echo "export SLURM_CONF=$CONF PATH=$DIR/bin:\$PATH"; }

# DIR/bin/srun: snakemake-executor-plugin-slurm-jobstep (0.6.1) strips every SLURM_* variable,
# SLURM_CONF included, before the `srun` it runs inside each job. A real cluster finds its config
# at /etc/slurm or via configless slurmd; this cluster lives in DIR, so put SLURM_CONF back.
write_shims() {
    mkdir -p "$DIR/bin"
    local real
    real=$(command -v srun) || return 1
    cat >"$DIR/bin/srun" <<EOF
#!/bin/sh
# Written by workflow/scripts/slurm_local.sh (see write_shims there).
SLURM_CONF="\${SLURM_CONF:-$CONF}"
export SLURM_CONF
exec $real "\$@"
EOF
    chmod +x "$DIR/bin/srun"
}

wait_idle() {  # until the node accepts jobs (or timeout)
    local _ state
    for _ in $(seq 1 60); do
        state=$(SLURM_CONF=$CONF timeout 5 sinfo -h -n "$NODE" -o %t 2>/dev/null)
        case $state in idle*|mix*|alloc*) return 0 ;; esac
        sleep 0.5
    done
    log "node never became idle (state '${state:-?}'); see $DIR/log/"
    return 1
}

start() {
    need_bins || exit $SKIP
    write_shims || exit $SKIP
    if status >/dev/null; then
        log "already running in $DIR"
        print_env
        return 0
    fi
    # Partial leftovers (a daemon died): stop what is ours, then start fresh.
    stop_daemons quiet
    [[ -s $CONF ]] || write_conf || exit $SKIP
    export SLURM_CONF=$CONF
    "$(bin munged)" --force --socket="$DIR/munge/munge.socket" \
        --key-file="$DIR/munge/munge.key" --pid-file="$DIR/run/munged.pid" \
        --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" \
        >>"$DIR/log/start.log" 2>&1 || { log "munged failed; see $DIR/log/munged.log"; exit $SKIP; }
    "$(bin slurmctld)" -f "$CONF" -c >>"$DIR/log/start.log" 2>&1 \
        || { log "slurmctld failed; see $DIR/log/slurmctld.log"; stop_daemons quiet; exit $SKIP; }
    "$(bin slurmd)" -f "$CONF" -N "$NODE" >>"$DIR/log/start.log" 2>&1 \
        || { log "slurmd failed; see $DIR/log/slurmd.log"; stop_daemons quiet; exit $SKIP; }
    if ! wait_idle; then
        tail -n 5 "$DIR"/log/slurm*.log >&2
        stop_daemons quiet
        exit $SKIP
    fi
    log "running in $DIR ($(status))"
    print_env
}

# kill the daemons recorded in DIR's pid files (slurmd first), waiting for each to exit
stop_daemons() {
    local quiet=${1:-} name pid _
    for name in slurmd slurmctld munged; do
        pid=$(live_pid "$DIR/run/$name.pid" "$name") || { rm -f "$DIR/run/$name.pid"; continue; }
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.2; done
        if alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null
            sleep 0.2
        fi
        rm -f "$DIR/run/$name.pid"
        [[ -n $quiet ]] || log "stopped $name ($pid)"
    done
}

stop() {
    [[ -d $DIR ]] || { log "nothing to stop in $DIR"; return 0; }
    if live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null; then
        # Cancel this cluster's jobs so their job steps end before slurmd goes away.
        SLURM_CONF=$CONF timeout 10 scancel -u "$(id -un)" 2>/dev/null
        local _
        for _ in $(seq 1 25); do
            [[ -z $(SLURM_CONF=$CONF timeout 5 squeue -h -t R,CG,PD 2>/dev/null) ]] && break
            sleep 0.4
        done
    fi
    stop_daemons
}

case $cmd in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) print_env ;;
    *) sed -n '2,7p' "$0" >&2; exit 2 ;;
esac
