#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job. Each step is a separate block; later issues add the local demo
# (simulated GPU, hypervisor, limiter) after these.
set -euo pipefail
bdir=${1:-build/release}
root=$(cd "$(dirname "$0")/.." && pwd)
tfctl="$bdir/src/cli/tfctl"

echo "== GPU model table (tfctl models)"
"$tfctl" models

# ---- step: workload spec (tfctl spec, docs/spec.md) ----------------------------------------
echo
echo "== Seed 001 Deployment, normalised (tfctl spec -f examples/seed-001-deployment.yaml)"
"$tfctl" spec -f "$root/examples/seed-001-deployment.yaml"
echo
echo "== ... merged with the seed's WorkloadProfile, as JSON (--profile ... -o json)"
"$tfctl" spec -f "$root/examples/seed-001-deployment.yaml" \
    --profile "$root/examples/seed-001-workloadprofile.yaml" -o json
echo
echo "== Seed 004 migration and the other examples"
args=()
for f in seed-004-migration seed-004-rightsized pod statefulset job multi-container-pod; do
    args+=(-f "$root/examples/$f.yaml")
done
"$tfctl" spec "${args[@]}"
echo
echo "== An invalid manifest is rejected (exit 2, the key on stderr, nothing on stdout)"
set +e
"$tfctl" spec -f "$root/examples/invalid/request-above-limit.yaml"
rc=$?
set -e
echo "exit code: $rc"
[ "$rc" -eq 2 ] || { echo "demo: expected exit code 2" >&2; exit 1; }
# ---- end of step: workload spec --------------------------------------------------------------
