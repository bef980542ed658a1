#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every benchmark binary of the release build (bench/*/bench_*), each printing
# `name: value unit` lines. Usage: scripts/bench.sh [BUILDDIR]
set -euo pipefail
bdir=${1:-build/release}
status=0
for exe in "$bdir"/bench/*/bench_*; do
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    echo "# ${exe#"$bdir"/}"
    nice "$exe" || { echo "bench ${exe##*/}: FAILED"; status=1; }
done
exit $status
