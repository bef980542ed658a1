#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every benchmark binary of a build (default build/release), niced, printing their
# `name: value unit` lines. Usage: scripts/bench.sh [BUILDDIR]
set -euo pipefail
bdir=${1:-build/release}
status=0
for exe in "$bdir"/bench/*/bench_*; do
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    nice "$exe" || { echo "bench ${exe##*/}: FAILED" >&2; status=1; }
done
exit $status
