#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The limiter's exported ABI is exactly the CU/NV hooks of hooks.def plus dlsym: nothing of
# ours (tf_*, statics of the linked libraries) leaks into the host process, and no hook is
# missing. Usage: check_exports.sh LIB HOOKS_DEF
set -eu
lib=$1 def=$2
got=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
want=$( (sed -n 's/^\(CU\|NV\)(\([A-Za-z0-9_]*\),.*/\2/p' "$def"; echo dlsym) | sort -u)
if [ "$got" != "$want" ]; then
    echo "exported symbols differ from hooks.def (< exported, > expected):"
    diff <(echo "$got") <(echo "$want") || true
    exit 1
fi
echo "limiter exports: $(echo "$got" | wc -l) symbols, all CUDA/NVML hooks or dlsym"
