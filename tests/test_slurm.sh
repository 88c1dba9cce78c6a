#!/bin/sh
# bench/slurm-sweep.sh end to end on a one-node Slurm started here: slurmctld and slurmd
# of Debian's slurm-wlm, as root, on localhost, with auth/none (no munge), their config,
# state and ports private to this test. The script queues a job array of --dry-run
# shards and the merge job after them; the joined listing must hold every row of the
# unsharded sweep exactly once. Skipped, with a line saying why, where Slurm is not
# installed or this is not root (slurmd runs jobs as their user, so it needs root).
# Usage: sh tests/test_slurm.sh build/attnbench
bin=${1:-build/attnbench}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
for tool in slurmctld slurmd sbatch squeue; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "slurm: skipped: $tool is not installed (Debian: apt-get install slurm-wlm)"
        exit 0
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    echo "slurm: skipped: slurmd needs root to run jobs, and this is uid $(id -u)"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_slurm.XXXXXX") || exit 1
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# Ends the two daemons this test started (by the pids they wrote), and waits for them.
stop() {
    pids=""
    for f in "$tmp/slurmctld.pid" "$tmp/slurmd.pid"; do
        [ -s "$f" ] && pids="$pids $(cat "$f")"
    done
    for pid in $pids; do kill "$pid" 2>/dev/null; done
    for _ in $(seq 1 20); do
        alive=0
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" -eq 0 ] && break
        sleep 0.5
    done
    rm -rf "$tmp"
}
trap stop EXIT

# Ports of this test's own, away from a real cluster's 6817/6818.
port=$((20000 + ($$ % 5000) * 2))
host=$(hostname -s 2>/dev/null || hostname)
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$tmp/slurm.conf" <<EOF
ClusterName=attnbenchtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -f "$SLURM_CONF" -i >"$tmp/slurmctld.out" 2>&1
slurmd -f "$SLURM_CONF" >"$tmp/slurmd.out" 2>&1
up=0
for _ in $(seq 1 30); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then up=1; break; fi
    sleep 1
done
if [ "$up" -ne 1 ]; then
    echo "FAIL: slurm: the one-node cluster did not come up:" >&2
    tail -n 5 "$tmp/slurmctld.log" "$tmp/slurmd.log" "$tmp/slurmctld.out" "$tmp/slurmd.out" >&2
    exit 1
fi

# sweep N ARGS...: the job array of N --dry-run shards and its merge job, waited for
# (with TASKS set: only those tasks, into the listings already there).
sweep() {
    n=$1
    shift
    out="$tmp/out$n"
    if ! sh bench/slurm-sweep.sh -n "$n" -o "$out" -b "$bin" ${TASKS:+-a "$TASKS"} --dry-run -- "$@" >"$tmp/submit" 2>&1; then
        fail "slurm-sweep.sh -n $n -- $*: $(tail -n 1 "$tmp/submit")"
        return
    fi
    for _ in $(seq 1 120); do
        [ -f "$out/sweep.txt" ] && [ -z "$(squeue -h 2>/dev/null)" ] && break
        sleep 1
    done
    if [ ! -f "$out/sweep.txt" ]; then
        fail "slurm-sweep.sh -n $n -- $*: no merged listing after 120 s ($(squeue -h | head -n 2))"
        return
    fi
    "$bin" sweep "$@" --dry-run | grep -v '^#' | sort > "$tmp/want"
    sort "$out/sweep.txt" > "$tmp/got"
    if cmp -s "$tmp/want" "$tmp/got"; then pass; else fail "slurm-sweep.sh -n $n -- $*: the merged rows differ from the sweep's"; fi
    shards=$(ls "$out"/shard-*.txt | wc -l)
    [ "$shards" -eq "$n" ] && pass || fail "slurm-sweep.sh -n $n: $shards shard listings, not $n"
}

sweep 3 --suite ci
sweep 4 --suite paper6 --kernels fused,bifurcated
# a failed task queued again alone: its shard is listed anew and the merge waits for it
rm -f "$tmp/out3/shard-2.txt" "$tmp/out3/sweep.txt"
TASKS=1 sweep 3 --suite ci

# its own checks, before anything is queued
if sh bench/slurm-sweep.sh -n 2 -o "$tmp/bad" -b "$bin" --dry-run -- --suite ci --out x.csv >/dev/null 2>&1; then
    fail "slurm-sweep.sh took --out among the sweep options"
else
    pass
fi
if sh bench/slurm-sweep.sh -n 0 -o "$tmp/bad" -b "$bin" -- --suite ci >/dev/null 2>&1; then
    fail "slurm-sweep.sh took -n 0"
else
    pass
fi

echo "slurm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
