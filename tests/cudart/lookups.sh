#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The figures docs/sim.md gives for the CUDA runtime's start-up, recounted: runs PROGRAM (a
# program of tests/cudart) with TF_LOG_LEVEL=trace, counts its cuGetProcAddress lookups (one
# log line each, naming the result) and names, prints them as
#   lookups: L of N names; implemented I (IL lookups), stub S (SL lookups), not found F
# and fails unless that line is EXPECTED (the docs' figures) and the program passed.
# Usage: lookups.sh EXPECTED PROGRAM
want=$1
shift
log=$(mktemp "${TMPDIR:-/tmp}/tf-lookups-XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
env ${CUDART_PRELOAD:+LD_PRELOAD=$CUDART_PRELOAD} TF_LOG_LEVEL=trace "$@" >/dev/null 2>"$log" || {
    echo "$(basename "$1") failed:"
    grep -v ' TRACE ' "$log" | tail -20
    exit 1
}
# "... sim cuGetProcAddress: NAME (CUDA V, flags F): RESULT" -> "NAME<TAB>RESULT"
lines=$(grep ' sim cuGetProcAddress: ' "$log" |
    sed -e 's/.* sim cuGetProcAddress: //' -e 's/ (CUDA [0-9]*, flags [0-9]*): /\t/')
count() { # lookups, then names, whose result is $1 (a grep pattern on the result)
    printf '%s\n' "$lines" | grep -c "	$1\$"
}
names() {
    printf '%s\n' "$lines" | sort -u | grep -c "	$1\$"
}
all=$(printf '%s\n' "$lines" | grep -c .)
uniq=$(printf '%s\n' "$lines" | cut -f1 | sort -u | grep -c '')
got="lookups: $all of $uniq names; implemented $(names implemented) ($(count implemented) lookups), stub $(names 'not implemented (stub)') ($(count 'not implemented (stub)') lookups), not found $(names 'not found')"
echo "$got"
if [ "$got" != "$want" ]; then
    echo "docs/sim.md says: $want"
    echo "FAIL: the figures changed; recount them in docs/sim.md and tests/cudart/meson.build"
    exit 1
fi
