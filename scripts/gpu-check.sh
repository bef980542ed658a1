#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the driver-API host programs of tests/cuda/host on a real NVIDIA GPU (or, with --sim,
# on the simulated one): builds their kernels with nvcc -ptx (the checked-in PTX when nvcc is
# absent) and the programs with the C compiler against the CUDA headers, linked with the
# toolkit's stub libcuda.so so the system's libcuda.so.1 is the one loaded at run time. Then
# the CUDA runtime programs of tests/cudart, built with plain nvcc (static and shared
# runtime; with --sim, the ones BUILD_DIR already built), and on a real GPU a cuBLAS SGEMM.
# Prints one PASS/FAIL line per program and a summary; exits 1 if any program failed, 2 on
# bad usage or a missing toolchain/driver. Then times sgemm and the driver paths of bench/sim
# (docs/sim.md, "Checking on a real GPU").
#
# Usage: scripts/gpu-check.sh [--sim BUILD_DIR] [--compare-sim BUILD_DIR] [--arch sm_XX]
#                             [--remote-bench BUILD_DIR] [--no-bench] [--keep]
#   --sim BUILD_DIR  use BUILD_DIR/src/sim/libcuda.so.1 instead of the system driver
#   --compare-sim BUILD_DIR  also list the device attributes in which device 0 differs from
#                    the simulated model of the same name (BUILD_DIR/src/sim; informational)
#   --arch sm_XX     PTX target (default sm_80; use sm_75 on a Turing GPU)
#   --remote-bench BUILD_DIR  also run the runtime programs through BUILD_DIR's libtf_client
#                    and a tf-worker on this machine's driver, then
#                    BUILD_DIR/bench/remote/bench_remote (--system-driver: tf-worker on the
#                    real GPU; the RTT, bandwidth, launch and runtime-workload figures of
#                    docs/remote.md)
#   --no-bench       skip the timings (the programs' own checks still run)
#   --keep           keep the work directory (programs, PTX, logs)
# Environment: CUDA_HOME (default /usr/local/cuda), CC (default cc), TF_SIM_DEVICES (--sim
# only; default H100).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
cc=${CC:-cc}
sim="" compare="" remote="" arch=sm_80 bench=1 keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --sim) sim=${2:-}; shift 2 || { echo "gpu-check: --sim needs BUILD_DIR" >&2; exit 2; } ;;
    --compare-sim) compare=${2:-}; shift 2 || { echo "gpu-check: --compare-sim needs BUILD_DIR" >&2; exit 2; } ;;
    --arch) arch=${2:-}; shift 2 || { echo "gpu-check: --arch needs sm_XX" >&2; exit 2; } ;;
    --remote-bench) remote=${2:-}; shift 2 || { echo "gpu-check: --remote-bench needs BUILD_DIR" >&2; exit 2; } ;;
    --no-bench) bench=0; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "gpu-check: $*" >&2; exit 2; }
[ -f "$cuda/include/cuda.h" ] || die "no $cuda/include/cuda.h (set CUDA_HOME)"
command -v "$cc" >/dev/null || die "no C compiler ($cc; set CC)"

work=$(mktemp -d /tmp/tf-gpu-check-XXXXXX)
cleanup() { if [ "$keep" = 1 ]; then echo "gpu-check: kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

# --- the driver the programs will load ------------------------------------------------------
if [ -n "$sim" ]; then
    simlib=$(cd "$sim" 2>/dev/null && pwd)/src/sim
    [ -f "$simlib/libcuda.so.1" ] || die "no $sim/src/sim/libcuda.so.1 (build first)"
    export LD_LIBRARY_PATH=$simlib
    export TF_SIM_DEVICES=${TF_SIM_DEVICES:-H100}
    export TF_SIM_SHM_PREFIX=$work/shm-
    # A sanitized build of the simulator loads into these uninstrumented programs.
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
    mode="simulated GPU ($TF_SIM_DEVICES, $simlib)"
else
    # Never the simulator (or the toolkit's stubs) by accident: drop such entries.
    keep_path=""
    IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
    for d in "${dirs[@]}"; do
        [ -n "$d" ] || continue
        if [ -f "$d/libtfsimcommon.a" ] || [[ $d == */src/sim ]] || [[ $d == */stubs ]]; then
            echo "gpu-check: ignoring LD_LIBRARY_PATH entry $d"
            continue
        fi
        keep_path=${keep_path:+$keep_path:}$d
    done
    if [ -n "$keep_path" ]; then export LD_LIBRARY_PATH=$keep_path; else unset LD_LIBRARY_PATH; fi
    unset TF_SIM_DEVICES TF_SIM_CONFIG
    mode="real GPU"
fi

# --- kernels ----------------------------------------------------------------------------------
nvcc=""
if command -v nvcc >/dev/null; then nvcc=nvcc; elif [ -x "$cuda/bin/nvcc" ]; then nvcc=$cuda/bin/nvcc; fi
kernels="vecadd sgemm reduce timer oob isa"
for k in $kernels; do
    if [ -n "$nvcc" ]; then
        "$nvcc" -ptx -arch="$arch" "$root/tests/cuda/kernels/$k.cu" -o "$work/$k.ptx" \
            >"$work/nvcc-$k.log" 2>&1 || { cat "$work/nvcc-$k.log"; die "nvcc failed on $k.cu"; }
    else
        [ "$arch" = sm_80 ] || die "no nvcc: only the checked-in sm_80 PTX is available"
        cp "$root/tests/cuda/ptx/$k.ptx" "$work/$k.ptx"
    fi
done
ptx_from=${nvcc:+"nvcc -ptx -arch=$arch"}

# --- host programs ------------------------------------------------------------------------------
if [ -f "$cuda/lib64/stubs/libcuda.so" ]; then
    link=(-L"$cuda/lib64/stubs" -lcuda)
elif [ -n "$sim" ]; then
    link=("$simlib/libcuda.so.1")
else
    die "no $cuda/lib64/stubs/libcuda.so to link against"
fi
programs="vecadd saxpy sgemm reduce spin oob isa visible mempool hostmem managed graph"
for p in $programs attrs; do
    "$cc" -O2 -std=gnu11 -Wall -I"$cuda/include" "$root/tests/cuda/host/$p.c" -o "$work/$p" \
        "${link[@]}" -lm >"$work/cc-$p.log" 2>&1 || { cat "$work/cc-$p.log"; die "cannot build $p"; }
done
"$cc" -O2 -std=gnu11 -Wall -I"$cuda/include" -DTF_SIM_HAVE_PTX=1 -DTF_PTX_DIR="\"$work\"" \
    "$root/bench/sim/bench_sim.c" -o "$work/bench_sim" "${link[@]}" >"$work/cc-bench.log" 2>&1 ||
    { cat "$work/cc-bench.log"; die "cannot build bench_sim"; }

lib=$(ldd "$work/vecadd" | awk '/libcuda\.so\.1/ {print $3}')
if [ -z "$lib" ] || [ "$lib" = "not" ]; then
    die "libcuda.so.1 is not found at run time (is the NVIDIA driver installed?)"
fi
if [ -z "$sim" ] && [[ $lib == "$root"/* ]]; then
    die "libcuda.so.1 resolves to $lib, inside this tree (the simulator?)"
fi
echo "gpu-check: $mode"
echo "gpu-check: driver $lib, kernels from ${ptx_from:-the checked-in PTX (sm_80)}"
if [ -z "$sim" ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>/dev/null | sed 's/^/gpu-check: /'
    nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 |
        sed 's/^/gpu-check: driver version /'
fi

# --- run ----------------------------------------------------------------------------------------
declare -A kernel_of=([vecadd]=vecadd [saxpy]=vecadd [sgemm]=sgemm [reduce]=reduce [spin]=timer
    [oob]=oob [isa]=isa [visible]="" [mempool]=vecadd [hostmem]=vecadd
    [managed]=vecadd [graph]=vecadd)
pass=0 fail=0 failed=""
for p in $programs; do
    args=()
    [ -n "${kernel_of[$p]}" ] && args=("$work/${kernel_of[$p]}.ptx")
    timeout 300 "$work/$p" "${args[@]}" >"$work/$p.log" 2>&1
    rc=$?
    line=$(grep -E "^$p: (PASS|FAIL)" "$work/$p.log" | tail -1)
    if [ $rc -eq 0 ] && [[ $line == "$p: PASS"* ]]; then
        echo "PASS $line"
        pass=$((pass + 1))
    else
        [ $rc -eq 124 ] && line="$p: FAIL timed out after 300 s"
        echo "FAIL ${line:-$p: FAIL exit status $rc}"
        grep -vE "^$p: (PASS|FAIL)" "$work/$p.log" | tail -20 | sed 's/^/    /'
        fail=$((fail + 1))
        failed="$failed $p"
    fi
done

# --- CUDA runtime programs (tests/cudart): plain nvcc, static and shared runtime ----------------
# PROGRAM KIND -> runs it and counts PASS/FAIL ("<name>: PASS" as its last result line).
run_rt() {
    local p=$1 exe=$2 tag=$3 rc line
    timeout 300 env ${rt_preload:+LD_PRELOAD="$rt_preload"} \
        LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda/lib64" "$exe" \
        >"$work/$tag.log" 2>&1
    rc=$?
    line=$(grep -E "^$p: (PASS|FAIL)" "$work/$tag.log" | tail -1)
    if [ $rc -eq 0 ] && [[ $line == "$p: PASS"* ]]; then
        echo "PASS [$tag] $line"
        pass=$((pass + 1))
    else
        [ $rc -eq 124 ] && line="$p: FAIL timed out after 300 s"
        echo "FAIL [$tag] ${line:-$p: FAIL exit status $rc}"
        grep -vE "^$p: (PASS|FAIL)" "$work/$tag.log" | tail -20 | sed 's/^/    /'
        fail=$((fail + 1))
        failed="$failed $tag"
    fi
}
rt_programs="vecadd matmul pitched streams symbols launch errors nvrtc mempool managed graph graphnodes half printf async fp8"
declare -A rt_libs=([nvrtc]="-lnvrtc -lcuda" [cublas_sgemm]="-lcublas" [half]="-arch=sm_80" [async]="-arch=sm_80" [fp8]="-arch=sm_89")
rt_preload=""
prebuilt=""
declare -A rt_built=() # tag -> the program, for the remote runs
if [ -n "$sim" ]; then
    # The sanitizer build's simulator carries ASan; the programs dlopen it, so ASan's runtime
    # must be preloaded. The build's own nvcc builds of the programs are used.
    rt_preload=$(ldd "$simlib/libcuda.so.1" | awk '/libasan\.so/ {print $3}')
    [ -x "$sim/tests/cudart/cudart_vecadd_static" ] && prebuilt="$sim/tests/cudart"
fi
if [ -z "$nvcc" ] && [ -z "$prebuilt" ]; then
    echo "SKIP runtime programs: nvcc not found (set CUDA_HOME)"
else
    for p in $rt_programs cublas_sgemm; do
        if [ $p = cublas_sgemm ] && [ -n "$sim" ]; then
            echo "SKIP cublas_sgemm: real GPUs only (cuBLAS's PTX needs instructions the simulated GPU lacks)"
            continue
        fi
        for kind in static shared; do
            [ $p = cublas_sgemm ] && [ $kind = shared ] && continue
            tag="rt-$p-$kind"
            if [ -n "$prebuilt" ]; then
                exe="$prebuilt/cudart_${p}_$kind"
            else
                exe="$work/$tag"
                # shellcheck disable=SC2086 # rt_libs holds several words
                "$nvcc" "$root/tests/cudart/$p.cu" -o "$exe" ${rt_libs[$p]:-} \
                    $([ $kind = shared ] && echo -cudart shared) >"$work/nvcc-$tag.log" 2>&1 || {
                    echo "FAIL [$tag] $p: nvcc failed"
                    tail -20 "$work/nvcc-$tag.log" | sed 's/^/    /'
                    fail=$((fail + 1))
                    failed="$failed $tag"
                    continue
                }
            fi
            run_rt "$p" "$exe" "$tag"
            rt_built[$tag]=$exe
        done
    done
fi

# --- the same runtime programs through libtf_client -> tf-worker (--remote-bench) ---------------
# BUILD_DIR's tf-worker on this machine's driver (the simulated one with --sim), on a private
# unix socket; each program unmodified with BUILD_DIR's client as its libcuda.so.1.
if [ -n "$remote" ] && [ ${#rt_built[@]} -gt 0 ]; then
    rworker="$remote/src/remote/worker/tf-worker" rclient="$remote/src/remote/client"
    if [ ! -x "$rworker" ] || [ ! -f "$rclient/libcuda.so.1" ]; then
        echo "FAIL [remote] no $rworker or $rclient/libcuda.so.1 (build BUILD_DIR first)"
        fail=$((fail + 1))
        failed="$failed remote"
    else
        echo "gpu-check-token-0123456789" >"$work/token"
        env ${sim:+LD_LIBRARY_PATH="$simlib"} "$rworker" --listen "unix://$work/worker.sock" \
            --token-file "$work/token" --ready-file "$work/worker.ready" --pinned-staging \
            --log-level error >"$work/worker.log" 2>&1 &
        wpid=$!
        for _ in $(seq 100); do [ -s "$work/worker.ready" ] && break; sleep 0.1; done
        saved_path=${LD_LIBRARY_PATH:-} saved_preload=$rt_preload
        export LD_LIBRARY_PATH=$rclient TF_REMOTE="unix://$work/worker.sock"
        export TF_TOKEN=gpu-check-token-0123456789
        rt_preload=$(ldd "$rclient/libcuda.so.1" | awk '/libasan\.so/ {print $3}')
        for tag in $(printf '%s\n' "${!rt_built[@]}" | sort); do
            p=${tag#rt-}
            p=${p%-*}
            # not servable remotely (docs/remote.md): managed memory; host copies and a host
            # function in a capture; device printf (the worker prints it, on its machine)
            case $p in managed | graph | printf) echo "SKIP [remote-$tag] not served remotely"; continue ;; esac
            run_rt "$p" "${rt_built[$tag]}" "remote-$tag"
        done
        export LD_LIBRARY_PATH=$saved_path
        unset TF_REMOTE TF_TOKEN
        rt_preload=$saved_preload
        kill "$wpid" 2>/dev/null
        wait "$wpid" 2>/dev/null
    fi
fi

# --- the attribute table against the simulated model of the same name ---------------------------
if [ -n "$compare" ]; then
    cmplib=$(cd "$compare" 2>/dev/null && pwd)/src/sim
    [ -f "$cmplib/libcuda.so.1" ] || die "no $compare/src/sim/libcuda.so.1 (build first)"
    if "$work/attrs" >"$work/attrs.here" 2>&1; then
        here=$(sed -n 's/^name //p' "$work/attrs.here")
        model=""
        for m in $(sed -n 's/^    {"\([^"]*\)", CC.*/\1/p' "$root/src/sim/hwspec.c"); do
            env -u CUDA_VISIBLE_DEVICES -u TF_SIM_CONFIG LD_LIBRARY_PATH="$cmplib" \
                TF_SIM_DEVICES="$m" TF_SIM_SHM_PREFIX="$work/cmp-" \
                ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0" \
                "$work/attrs" \
                >"$work/attrs.sim" 2>/dev/null || continue
            [ "$(sed -n 's/^name //p' "$work/attrs.sim")" = "$here" ] && { model=$m; break; }
        done
        if [ -z "$model" ]; then
            echo "attrs: \"$here\" is no simulated model (src/sim/hwspec.c)"
        else
            declare -A attrname real simulated
            # attribute id -> its cuda.h name (the first name of a value; later ones are aliases)
            while read -r v n; do
                [ -n "${attrname[$v]:-}" ] || attrname[$v]=$n
            done < <(sed -n 's/^ *\(CU_DEVICE_ATTRIBUTE_[A-Z0-9_]*\) *= *\([0-9]*\),.*/\2 \1/p' \
                "$cuda/include/cuda.h")
            load() { # FILE ARRAY: "attr ID VALUE" -> [ID]=VALUE, "KEY VALUE" -> [KEY]=VALUE
                local -n into=$2
                local a b c
                while read -r a b c; do
                    # shellcheck disable=SC2034,SC2004 # into: a nameref to an associative array
                    if [ "$a" = attr ]; then into[$b]=$c; else into[$a]="$b${c:+ $c}"; fi
                done <"$1"
            }
            load "$work/attrs.here" real
            load "$work/attrs.sim" simulated
            ndiff=0
            for k in $(printf '%s\n' "${!real[@]}" | sort -n); do
                [ "${real[$k]}" = "${simulated[$k]:-}" ] && continue
                echo "attrs: ${attrname[$k]:-$k} differs: real ${real[$k]}, simulated ${simulated[$k]:-(none)}"
                ndiff=$((ndiff + 1))
            done
            echo "attrs: device 0 (\"$here\") against the simulated $model: $ndiff of ${#real[@]} values differ"
        fi
    else
        echo "attrs: FAILED"
        sed 's/^/    /' "$work/attrs.here" | tail -20
        fail=$((fail + 1))
        failed="$failed attrs"
    fi
fi

# --- timings ------------------------------------------------------------------------------------
if [ "$bench" = 1 ]; then
    # A GPU does 1024^3 in milliseconds; the simulator interprets every instruction (its own
    # figures come from bench/ptx and bench/sim), so there the timing only keeps this working.
    if [ -n "$sim" ]; then n=64; else n=1024; fi
    if out=$(timeout 300 "$work/sgemm" "$work/sgemm.ptx" $n $n $n 2>&1) &&
        ms=$(sed -n 's/.* kernel \([0-9.]*\) ms.*/\1/p' <<<"$out") && [ -n "$ms" ]; then
        echo "bench gpu_check_sgemm_${n}_ms: $ms ms"
        awk -v n=$n -v ms="$ms" 'BEGIN { if (ms > 0) printf "bench gpu_check_sgemm_%d_gflops: %.2f GFLOP/s\n", n, 2 * n * n * n / (ms * 1e6) }'
    else
        echo "bench sgemm $n: FAILED: $out"
        fail=$((fail + 1))
        failed="$failed bench-sgemm"
    fi
    # bench/sim/bench_sim.c is plain driver API: its launch, call and copy figures (names kept
    # from the simulator's bench) measure whichever driver is loaded.
    if timeout 300 "$work/bench_sim" "$work" >"$work/bench.log" 2>&1; then
        sed 's/^/bench /' "$work/bench.log"
    else
        echo "bench bench_sim: FAILED"
        sed 's/^/    /' "$work/bench.log" | tail -20
        fail=$((fail + 1))
        failed="$failed bench_sim"
    fi
fi
if [ -n "$remote" ]; then
    rb="$remote/bench/remote/bench_remote"
    [ -n "$sim" ] && rb_args=() || rb_args=(--system-driver)
    if [ -x "$rb" ] && timeout 600 "$rb" "${rb_args[@]}" >"$work/bench-remote.log" 2>&1; then
        sed 's/^/bench /' "$work/bench-remote.log"
    else
        echo "bench bench_remote: FAILED (${rb})"
        sed 's/^/    /' "$work/bench-remote.log" 2>/dev/null | tail -20
        fail=$((fail + 1))
        failed="$failed bench_remote"
    fi
fi

echo "gpu-check: $pass passed, $fail failed on the $mode${failed:+ (failed:$failed)}"
[ $fail -eq 0 ]
