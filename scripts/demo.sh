#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job (`make demo`): the local demo. On a machine without a GPU it uses the
# simulated GPU (src/sim) and says so; with a GPU, the real driver. It starts a private
# hypervisor (its own state directory, removed at the end), runs workloads with different
# limits side by side, shows what they got, shows one request refused for VRAM, and queries
# the metrics, and prints the web console's link (kept open until Enter when run from a
# terminal, at most 10 minutes). Bounded in time; cleans up on every exit path.
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

# The workload: gpu_burn, an ordinary CUDA runtime program built with plain nvcc
# (tests/cudart/gpu_burn.cu: cudaMalloc, a spin kernel launched with <<<>>>); without nvcc at
# build time, its driver-API twin (tests/hypervisor/gpu_burn.c) with the timer.cu PTX.
rt_burn="$bdir/tests/cudart/cudart_gpu_burn_static"
drv_burn="$bdir/tests/hypervisor/gpu_burn"
ptx="$bdir/tests/cuda/timer.ptx"
[ -f "$ptx" ] || ptx="$root/tests/cuda/ptx/timer.ptx"
if [ -x "$rt_burn" ]; then
    burn=("$rt_burn")
    burn_what="a CUDA runtime program (plain nvcc: cudaMalloc, <<<>>>)"
elif [ -x "$drv_burn" ]; then
    burn=("$drv_burn" "$ptx")
    burn_what="a driver-API program (nvcc was not found at build time)"
else
    burn=()
fi
if [ "$gpu" != none ] && [ ${#burn[@]} -gt 0 ]; then
    say "A whole GPU for one real CUDA workload (--isolation shared): gpu_burn, $burn_what,"
    echo "   runs a spin kernel (1 ms per launch) for 3 s with 1 GiB of VRAM; tfctl top shows it live"
    "$tfctl" run --isolation shared --name burn-shared -- \
        "${burn[@]}" 3 1024 1000 burn-shared &
    run_pid=$!
    sleep 1.5
    "$tfctl" top --once
    wait "$run_pid"

    if "$tfctl" run --compute-percent 30 --vram-limit 1Gi -q -- true 2>/dev/null; then
        say "Two workloads side by side on one GPU with different limits (--isolation soft):"
        echo "   burn-30: 30 % compute, 2Gi VRAM (uses 1Gi); burn-60: 60 % compute, 4Gi (uses 3Gi)"
        "$tfctl" run --compute-percent 30 --vram-limit 2Gi --name burn-30 -- \
            "${burn[@]}" 4 1024 1000 burn-30 &
        a=$!
        "$tfctl" run --compute-percent 60 --vram-limit 4Gi --name burn-60 -- \
            "${burn[@]}" 4 3072 1000 burn-60 &
        b=$!
        sleep 2.5
        "$tfctl" top --once
        wait "$a" "$b"
        echo "   (vram_total_mib is what each app's driver reports: its limit; share_pct is the"
        echo "    GPU time its kernels got; the simulated GPU runs PTX on this machine's CPUs)"

        say "Inside its limit an allocation above it fails as on a GPU that size (cudaMalloc: out of memory)"
        set +e
        "$tfctl" run --compute-percent 30 --vram-limit 2Gi --name burn-oom -- \
            "${burn[@]}" 1 3072 1000 burn-oom
        echo "exit code: $?"
        set -e
    else
        say "Fractional vGPUs (--isolation soft: compute and VRAM limits on one GPU)"
        "$tfctl" run --compute-percent 30 --vram-limit 1Gi -q -- true || true
        echo "   (skipped: the soft limiter is not in this build)"
    fi
elif [ "$gpu" != none ]; then
    echo "   (gpu_burn was not built: the CUDA toolkit is missing; skipping the workloads)"
fi

say "A request for more VRAM than any GPU has is refused at once, with the allocator's reason"
set +e
"$tfctl" run --vram-limit 200Gi -- true
rc=$?
set -e
echo "exit code: $rc"
[ "$rc" -ne 0 ] || { echo "demo: the 200Gi request was accepted" >&2; exit 1; }

sleep 1
say "Metrics: the seed's query on this machine (tfctl query)"
"$tfctl" query "SELECT node, uuid,
       avg(compute_percentage) AS compute_used_pct,
       max(memory_percentage)  AS vram_peak_pct
FROM tf_gpu_usage
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY node, uuid
ORDER BY compute_used_pct;"
"$tfctl" query "SELECT workload,
       avg(compute_tflops)             AS tflops_avg,
       max(compute_tflops)             AS tflops_peak,
       max(memory_bytes) / 1073741824  AS vram_peak_gib
FROM tf_worker_usage
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY workload;"
"$tfctl" query "SELECT total_allocation_success_cnt AS ok, total_allocation_fail_cnt AS refused
FROM tf_system_metrics ORDER BY greptime_timestamp DESC LIMIT 1"

say "The web console (docs/console.md): this machine's GPU, workloads and their history"
echo "   open this link in a browser (it signs in with the API token it carries):"
echo "   $("$tfctl" console)"
if [ -t 0 ] && [ -t 1 ]; then
    echo "   the hypervisor stays up until you press Enter (at most 10 minutes)"
    read -r -t 600 _ || true
fi

say "Clean up (hypervisor stopped, state removed)"
# ---- end of step: local mode -----------------------------------------------------------------
