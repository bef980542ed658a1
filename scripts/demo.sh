#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job. For now: the GPU model table.
set -euo pipefail
bdir=${1:-build/release}
"$bdir/src/cli/tfctl" models
