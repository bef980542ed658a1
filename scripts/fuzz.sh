#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target in BUILDDIR for SECONDS each, starting from fuzz/corpus/<name>.
# New inputs go to a scratch corpus under BUILDDIR so the checked-in seeds stay small.
# Usage: scripts/fuzz.sh BUILDDIR SECONDS
set -euo pipefail
bdir=$1 secs=$2
root=$(cd "$(dirname "$0")/.." && pwd)
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
for exe in "$bdir"/fuzz/fuzz_*; do
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    name=${exe##*/fuzz_}
    work="$bdir/fuzz-corpus/$name"
    mkdir -p "$work"
    seeds="$root/fuzz/corpus/$name"
    [ -d "$seeds" ] || seeds=""
    if "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
        -artifact_prefix="$bdir/fuzz-$name-" \
        "$work" $seeds >"$bdir/fuzz-$name.log" 2>&1; then
        echo "fuzz $name: ok (${secs}s, $(ls "$work" | wc -l) corpus entries)"
    else
        echo "fuzz $name: FAILED, see $bdir/fuzz-$name.log"; tail -40 "$bdir/fuzz-$name.log"
        status=1
    fi
done
exit $status
