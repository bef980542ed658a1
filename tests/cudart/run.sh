#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs one program of tests/cudart on the simulated GPU for the test suite: PROGRAM [ARGS...]
# with LD_PRELOAD=$CUDART_PRELOAD (the sanitizer build's ASan runtime, for the program alone),
# failing it, whatever its own verdict, when the simulated driver logged an entry point or
# feature it does not support (CUDA_ERROR_NOT_SUPPORTED, logged once at warn): an ordinary
# runtime program must never meet one. Run with TF_LOG_LEVEL=warn (or more verbose).
log=$(mktemp "${TMPDIR:-/tmp}/tf-cudart-XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
env ${CUDART_PRELOAD:+LD_PRELOAD=$CUDART_PRELOAD} "$@" 2>"$log"
rc=$?
cat "$log" >&2
if grep -Eq 'not (supported|implemented) by the simulated GPU' "$log"; then
    echo "$(basename "$1"): FAIL it called what the simulated GPU does not support:"
    grep -E 'not (supported|implemented) by the simulated GPU' "$log"
    exit 1
fi
exit $rc
