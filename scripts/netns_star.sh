#!/usr/bin/env bash
# netns_star.sh: run a cluster-mode job on a star of Linux network namespaces whose parameter-
# server links are shaped with `tc tbf` (a kernel-level alternative to --server-bandwidth).
#
# OPTIONAL, NOT IN CI, ROOT ONLY. Needs `ip` (iproute2) and `tc` with the tbf qdisc. There is
# no latency/loss emulation: many kernels (this project's VMs included) lack `netem`; inject
# delays in software (--iteration-delays) instead.
#
# Topology (K nodes):
#   namespace flr2sp_sw holds bridge flr2sp_br;
#   node i lives in namespace flr2sp_n<i> with interface flr2sp_v<i> = 10.79.0.<i+1>/24,
#   whose veth peer flr2sp_b<i> sits in flr2sp_sw on the bridge.
#   Rank i runs in node i, so ranks 0..S-1 (the parameter servers) get 10.79.0.1.. and rank 0
#   hosts the rendezvous store at MASTER_ADDR=10.79.0.1.
# Shaping node i at RATE puts a tbf qdisc on flr2sp_v<i> (node i's egress) and on flr2sp_b<i>
# (node i's ingress), so the node's link is capped at RATE in each direction.
# Only names starting with flr2sp_ and private addresses in 10.79.0.0/24 are created, and only
# inside the namespaces this script creates; `down` deletes exactly those.
#
# Usage:
#   scripts/netns_star.sh up K                   create K nodes + switch
#   scripts/netns_star.sh shape I RATE           cap node I's link, e.g. RATE=400mbit
#   scripts/netns_star.sh run K -- CMD [ARG...]  run CMD once per node with RANK=i,
#                                                WORLD_SIZE=K, LOCAL_RANK=0, MASTER_ADDR,
#                                                MASTER_PORT, GLOO_SOCKET_IFNAME; waits for all
#   scripts/netns_star.sh down K                 delete everything the script created
#   scripts/netns_star.sh star K S RATE -- CMD   up, shape nodes 0..S-1, run, down (always)
#
# CMD must initialise torch.distributed from the env:// variables above (as ranks started by
# torchrun do). Each rank's output goes to $FLR2SP_LOGDIR/rank<i>.log (default: a temporary
# folder, printed). Every rank is bounded by $FLR2SP_TIMEOUT seconds (default 600).
# Example: R²SP with 1 PS + 4 workers, the PS link at 200 Mbit/s (25 MB/s) each way; each rank
# is the cluster mode's torchrun entry started by hand (world size = K = S + N):
#   sudo scripts/netns_star.sh star 5 1 200mbit -- env OMP_NUM_THREADS=1 .venv/bin/python \
#       -m fl_r2sp.cluster.rank --scheme r2sp --workers 4 --servers 1 \
#       --model mlp-wide --dataset synthetic --iterations 6 --run-dir runs/netns
# (measured once: pushes of 4.9 MB took 0.20 s, i.e. the 25 MB/s cap).
set -euo pipefail

PREFIX=flr2sp
SUBNET=10.79.0
PORT=${FLR2SP_PORT:-29555}
TIMEOUT_S=${FLR2SP_TIMEOUT:-600}

die() { echo "netns_star: $*" >&2; exit 2; }
need_count() { [[ "${1:-}" =~ ^[0-9]+$ && "$1" -ge 2 && "$1" -le 200 ]] || die "K must be 2..200, got '${1:-}'"; }

check_env() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces)"
    command -v ip >/dev/null || die "ip (iproute2) not found"
    command -v tc >/dev/null || die "tc not found"
}

up() {
    local k=$1 i
    down "$k" 2>/dev/null || true
    ip netns add ${PREFIX}_sw
    ip -n ${PREFIX}_sw link add ${PREFIX}_br type bridge
    ip -n ${PREFIX}_sw link set ${PREFIX}_br up
    ip -n ${PREFIX}_sw link set lo up
    for ((i = 0; i < k; i++)); do
        ip netns add ${PREFIX}_n$i
        ip link add ${PREFIX}_v$i netns ${PREFIX}_n$i type veth peer ${PREFIX}_b$i netns ${PREFIX}_sw
        ip -n ${PREFIX}_sw link set ${PREFIX}_b$i master ${PREFIX}_br up
        ip -n ${PREFIX}_n$i addr add ${SUBNET}.$((i + 1))/24 dev ${PREFIX}_v$i
        ip -n ${PREFIX}_n$i link set ${PREFIX}_v$i up
        ip -n ${PREFIX}_n$i link set lo up
    done
    echo "netns_star: up: $k nodes ${PREFIX}_n0..$((k - 1)), ${SUBNET}.1..$k"
}

shape() {
    local i=$1 rate=$2
    [[ "$i" =~ ^[0-9]+$ ]] || die "node index must be a number, got '$i'"
    [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit)$ ]] || die "RATE like 400mbit, got '$rate'"
    # burst: ~1 ms at the rate but at least 32 KB; latency bounds the queue (drops beyond it).
    local args=(tbf rate "$rate" burst 256kb latency 100ms)
    ip netns exec ${PREFIX}_n$i tc qdisc replace dev ${PREFIX}_v$i root "${args[@]}"
    ip netns exec ${PREFIX}_sw tc qdisc replace dev ${PREFIX}_b$i root "${args[@]}"
    echo "netns_star: node $i shaped to $rate each way"
}

run() {
    local k=$1 i rc=0 pids=()
    shift
    [[ "${1:-}" == "--" ]] && shift
    [[ $# -gt 0 ]] || die "run needs a command after --"
    local logdir=${FLR2SP_LOGDIR:-$(mktemp -d -t ${PREFIX}_logs.XXXX)}
    mkdir -p "$logdir"
    for ((i = 0; i < k; i++)); do
        ip netns exec ${PREFIX}_n$i env RANK=$i WORLD_SIZE=$k LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
            MASTER_ADDR=${SUBNET}.1 MASTER_PORT=$PORT GLOO_SOCKET_IFNAME=${PREFIX}_v$i \
            timeout "$TIMEOUT_S" "$@" >"$logdir/rank$i.log" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        local r=0
        wait "${pids[$i]}" || r=$?
        if [[ $r -ne 0 ]]; then
            echo "netns_star: rank $i exited with $r (log: $logdir/rank$i.log)" >&2
            [[ $rc -ne 0 ]] || rc=$r
        fi
    done
    echo "netns_star: logs in $logdir"
    return $rc
}

down() {
    local k=$1 i
    for ((i = 0; i < k; i++)); do
        ip netns del ${PREFIX}_n$i 2>/dev/null || true  # deleting a netns deletes its veth pair
    done
    ip netns del ${PREFIX}_sw 2>/dev/null || true
}

star() {
    local k=$1 s=$2 rate=$3 i
    shift 3
    need_count "$k"
    [[ "$s" =~ ^[0-9]+$ && "$s" -ge 1 && "$s" -lt "$k" ]] || die "S must be 1..K-1, got '$s'"
    # Expand k now: the trap runs at exit, after this function's locals are gone.
    trap "down $k; echo 'netns_star: down'" EXIT
    up "$k"
    for ((i = 0; i < s; i++)); do shape "$i" "$rate"; done
    run "$k" "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
    up) check_env; need_count "${1:-}"; up "$1" ;;
    shape) check_env; [[ $# -eq 2 ]] || die "usage: shape I RATE"; shape "$1" "$2" ;;
    run) check_env; need_count "${1:-}"; run "$@" ;;
    down) check_env; need_count "${1:-}"; down "$1"; echo "netns_star: down" ;;
    star) check_env; [[ $# -ge 4 ]] || die "usage: star K S RATE -- CMD"; star "$@" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
