#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job (`make demo`): the local demo. On a machine without a GPU it uses the
# simulated GPU (src/sim) and says so; with a GPU, the real driver. It starts a private
# hypervisor (its own state directory, removed at the end), runs workloads with different
# limits side by side, shows what they got, shows one request refused for VRAM, and queries
# the metrics. Bounded in time; cleans up on every exit path.
# Usage: scripts/demo.sh [BUILDDIR]
set -euo pipefail
bdir=${1:-build/release}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$bdir" in /*) ;; *) bdir="$root/$bdir" ;; esac
tfctl="$bdir/src/cli/tfctl"
hv="$bdir/src/hypervisor/tf-hypervisor"
say() { printf '\n== %s\n' "$*"; }

# ---- step: workload spec (tfctl spec, docs/spec.md) ----------------------------------------
say "A Pod's TensorFusion annotations, normalised (tfctl spec -f examples/pod.yaml)"
"$tfctl" spec -f "$root/examples/pod.yaml"
# ---- end of step: workload spec --------------------------------------------------------------

# ---- step: local mode (tfctl run, docs/local-mode.md) ----------------------------------------
state=$(mktemp -d /tmp/tf-demo.XXXXXX)
export TF_STATE_DIR="$state"
cleanup() {
    local pid
    pid=$(cat "$state/hypervisor.lock" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -rf "$state"
}
trap cleanup EXIT

sim_dir="$bdir/src/sim"
if [ -z "${TF_DEMO_FORCE_SIM:-}" ] && command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi -L >/dev/null 2>&1; then
    gpu=real
    say "GPU: the real NVIDIA driver ($(nvidia-smi -L | head -1))"
elif [ -f "$sim_dir/libnvidia-ml.so.1" ] && [ -f "$sim_dir/libcuda.so.1" ]; then
    gpu=sim
    export LD_LIBRARY_PATH="$sim_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export TF_NVML_LIBRARY="$sim_dir/libnvidia-ml.so.1"
    export TF_SIM_DEVICES="${TF_SIM_DEVICES:-A100-80GB}"
    export TF_SIM_SHM_PREFIX="$state/sim-"
    say "GPU: none on this machine -> the simulated GPU ($TF_SIM_DEVICES, kernels run as PTX on the CPU)"
else
    gpu=none
    say "GPU: none on this machine, and the simulated GPU (src/sim) is not in this build yet"
    echo "   the hypervisor runs with no GPU; every request is refused with the reason"
fi

say "Start the hypervisor (state in $state)"
"$hv" --state-dir "$state" --metrics-interval 500 --log-level warn \
    >"$state/hypervisor.log" 2>&1 &
for _ in $(seq 100); do
    [ -s "$state/hypervisor.addr" ] && break
    sleep 0.1
done
[ -s "$state/hypervisor.addr" ] || { echo "demo: hypervisor did not start:"; cat "$state/hypervisor.log"; exit 1; }
echo "listening on $(cat "$state/hypervisor.addr")"
"$tfctl" get gpus

if [ "$gpu" != none ]; then
    say "A whole GPU for one command (--isolation shared): it sees only its GPU"
    "$tfctl" run --isolation shared -- sh -c 'echo "  in the workload: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES TF_WORKLOAD=$TF_WORKLOAD"'
fi

say "A request that cannot fit is refused at once, with the reason for every GPU"
set +e
"$tfctl" run --isolation soft --vram-limit 4Ti -- true
rc=$?
set -e
echo "exit code: $rc"
[ "$rc" -ne 0 ] || { echo "demo: the 4Ti request was accepted" >&2; exit 1; }

sleep 1
say "Metrics: the seed's query on this machine (tfctl query)"
"$tfctl" query "SELECT node, uuid,
       avg(compute_percentage) AS compute_used_pct,
       max(memory_percentage)  AS vram_peak_pct
FROM tf_gpu_usage
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY node, uuid
ORDER BY compute_used_pct;"
"$tfctl" query "SELECT total_allocation_success_cnt AS ok, total_allocation_fail_cnt AS refused
FROM tf_system_metrics ORDER BY greptime_timestamp DESC LIMIT 1"

say "Clean up (hypervisor stopped, state removed)"
# ---- end of step: local mode -----------------------------------------------------------------
