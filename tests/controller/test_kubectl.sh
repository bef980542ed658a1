#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Proves the in-memory API server (fakeapi.py) honest against the real kubectl binary:
# apply (create, then update through kubectl's patch), get -o json, merge/JSON/strategic patch,
# optimistic locking (409), status subresource, pods/binding, pods/eviction against a
# PodDisruptionBudget, chunked list (limit/continue),
# watch events, CRD objects of tensor-fusion.ai/v1 with the CRDs' schemas (422 Invalid with
# field paths, pruning, strict field validation and warnings, status subresource, printer
# columns, CRDs applied and deleted), delete and NotFound. The controller tests
# rely on these semantics, so if kubectl disagrees with the fake, this test fails.
# Exit 77 (meson: SKIP) when kubectl or python3 is missing.
set -uo pipefail
src=${TF_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v kubectl >/dev/null || { echo "SKIP: kubectl not installed"; exit 77; }
PY=${TF_PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
work=$(mktemp -d)
cleanup() { [ -n "${fpid:-}" ] && kill "$fpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$PY" "$src/tests/controller/fakeapi.py" --port 0 --port-file "$work/port" >/dev/null 2>&1 &
fpid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { echo "FAIL: fake API server did not start"; exit 1; }
export KUBECONFIG=$work/none   # never touch a real cluster
K="kubectl --server=http://127.0.0.1:$(cat "$work/port") --request-timeout=10s --cache-dir=$work/cache"
pass=0 fail=0
check() { # name expected actual
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL $1: expected [$2] got [$3]"; fi
}
jq_py() { "$PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

cat >"$work/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
  annotations:
    tensor-fusion.ai/vram-limit: 4Gi
spec:
  containers:
  - {name: app, image: busybox}
  - {name: side, image: busybox}
EOF
check "apply creates" "pod/web created" "$($K apply --validate=false -f "$work/pod.yaml" 2>&1)"
rv1=$($K get pod web -o json | jq_py 'd["metadata"]["resourceVersion"]')
sed -i 's/app: web}/app: web2}/' "$work/pod.yaml"
check "apply updates via patch" "pod/web configured" \
    "$($K apply --validate=false -f "$work/pod.yaml" 2>&1)"
out=$($K get pod web -o json)
check "get -o json shows applied label" "web2" "$(echo "$out" | jq_py 'd["metadata"]["labels"]["app"]')"
check "annotation with slash survives" "4Gi" \
    "$(echo "$out" | jq_py 'd["metadata"]["annotations"]["tensor-fusion.ai/vram-limit"]')"
check "resourceVersion advances" "True" \
    "$(echo "$out" | jq_py "int(d['metadata']['resourceVersion']) > $rv1")"
check "uid and creationTimestamp set" "True" \
    "$(echo "$out" | jq_py 'bool(d["metadata"]["uid"] and d["metadata"]["creationTimestamp"])')"

$K patch pod web --type=merge -p '{"metadata":{"annotations":{"a.io/x":"1"}}}' >/dev/null
$K patch pod web --type=json -p '[{"op":"add","path":"/metadata/annotations/b.io~1y","value":"2"}]' >/dev/null
$K patch pod web -p '{"spec":{"containers":[{"name":"side","image":"alpine"}]}}' >/dev/null
out=$($K get pod web -o json)
check "merge patch" "1" "$(echo "$out" | jq_py 'd["metadata"]["annotations"]["a.io/x"]')"
check "json patch with ~1" "2" "$(echo "$out" | jq_py 'd["metadata"]["annotations"]["b.io/y"]')"
check "strategic patch merges containers by name" "busybox,alpine" \
    "$(echo "$out" | jq_py '",".join(c["image"] for c in d["spec"]["containers"])')"
$K patch pod web --type=merge -p '{"metadata":{"annotations":{"a.io/x":null}}}' >/dev/null
check "merge patch null deletes" "False" \
    "$($K get pod web -o json | jq_py '"a.io/x" in d["metadata"]["annotations"]')"

msg=$($K patch pod web --type=merge -p '{"metadata":{"resourceVersion":"1","labels":{"q":"r"}}}' 2>&1)
check "stale resourceVersion is a conflict" "Conflict" \
    "$(echo "$msg" | grep -o 'Conflict' | head -1)"
rv=$($K get pod web -o json | jq_py 'd["metadata"]["resourceVersion"]')
check "current resourceVersion patch succeeds" "pod/web patched" \
    "$($K patch pod web --type=merge -p "{\"metadata\":{\"resourceVersion\":\"$rv\",\"labels\":{\"q\":\"r\"}}}" 2>&1)"

$K patch pod web --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null
check "main resource ignores status" "Pending" "$($K get pod web -o jsonpath='{.status.phase}')"
$K patch pod web --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null
check "status subresource" "Running" "$($K get pod web -o jsonpath='{.status.phase}')"

echo '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"kind":"Node","name":"gpu-1"}}' >"$work/b.json"
$K create --raw /api/v1/namespaces/default/pods/web/binding -f "$work/b.json" >/dev/null
check "binding sets nodeName" "gpu-1" "$($K get pod web -o jsonpath='{.spec.nodeName}')"
check "second binding conflicts" "Conflict" \
    "$($K create --raw /api/v1/namespaces/default/pods/web/binding -f "$work/b.json" 2>&1 | grep -o Conflict | head -1)"

for i in 1 2 3 4 5; do
    sed "s/name: web$/name: w$i/" "$work/pod.yaml" | $K create --validate=false -f - >/dev/null
done
check "chunked list sees every pod" "6" "$($K get pods --chunk-size=2 -o name | wc -l)"
check "label selector" "pod/w3" "$($K get pods -l 'app=web2,!q' -o name --chunk-size=1 | grep w3)"
check "field selector" "pod/web" "$($K get pods --field-selector spec.nodeName=gpu-1 -o name)"

timeout 4 $K get pods -w --output-watch-events >"$work/watch.txt" 2>&1 &
wpid=$!
sleep 1.5
$K delete pod w1 >/dev/null
wait $wpid
check "watch sees the delete" "DELETED w1" "$(grep -o "DELETED *w1" "$work/watch.txt" | tr -s " ")"
check "get after delete is NotFound" 'Error from server (NotFound): pods "w1" not found' \
    "$($K get pod w1 2>&1)"

cat >"$work/pdb.yaml" <<'EOF'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: web2}}
EOF
check "apply a PodDisruptionBudget" "poddisruptionbudget.policy/web-pdb created" \
    "$($K apply --validate=false -f "$work/pdb.yaml" 2>&1)"
check "pdb short name and policy group" "poddisruptionbudget.policy/web-pdb" "$($K get pdb -o name)"
$K patch pod w2 --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null
echo '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"w2","namespace":"default"}}' >"$work/ev.json"
check "eviction refused by the budget" "TooManyRequests" \
    "$($K create --raw /api/v1/namespaces/default/pods/w2/eviction -f "$work/ev.json" 2>&1 | grep -o TooManyRequests | head -1)"
$K patch pdb web-pdb --type=merge -p '{"spec":{"maxUnavailable":null,"minAvailable":0}}' >/dev/null
$K create --raw /api/v1/namespaces/default/pods/w2/eviction -f "$work/ev.json" >/dev/null 2>&1
check "eviction allowed by the budget deletes the pod" 'Error from server (NotFound): pods "w2" not found' \
    "$($K get pod w2 2>&1)"

cat >"$work/pool.yaml" <<'EOF'
apiVersion: tensor-fusion.ai/v1
kind: GPUPool
metadata:
  name: default-pool
spec:
  capacityConfig:
    oversubscription: {tflopsOversellRatio: 500}
---
apiVersion: tensor-fusion.ai/v1
kind: WorkloadProfile
metadata:
  name: example-workload-profile
spec:
  resources:
    requests: {tflops: "5", vram: 3Gi}
    limits: {tflops: "15", vram: 3Gi}
EOF
check "apply CRD objects" "gpupool.tensor-fusion.ai/default-pool created
workloadprofile.tensor-fusion.ai/example-workload-profile created" \
    "$($K apply --validate=false -f "$work/pool.yaml" 2>&1)"
check "cluster-scoped CRD get" "500" \
    "$($K get gpupool default-pool -o jsonpath='{.spec.capacityConfig.oversubscription.tflopsOversellRatio}')"
check "namespaced CRD get" "3Gi" \
    "$($K get workloadprofile example-workload-profile -o jsonpath='{.spec.resources.limits.vram}')"
$K patch gpupool default-pool --type=merge --subresource=status -p '{"status":{"phase":"Running","readyNodes":0,"notReadyNodes":0,"totalTFlops":"0","totalVRAM":"0","virtualTFlops":"0","virtualVRAM":"0","availableTFlops":"0","availableVRAM":"0","componentStatus":{}}}' >/dev/null
check "CRD status subresource" "Running" "$($K get gpupool default-pool -o jsonpath='{.status.phase}')"
check "delete CRD object" 'gpupool.tensor-fusion.ai "default-pool" deleted' \
    "$($K delete gpupool default-pool 2>&1)"

# Custom resources get kube-apiserver's structural-schema treatment (fakecrd.py).
cat >"$work/bad.yaml" <<'EOF'
apiVersion: tensor-fusion.ai/v1
kind: WorkloadProfile
metadata: {name: bad}
spec:
  qos: ultra
  gpuCount: "2"
  resources: {requests: {tflops: 1.5}}
EOF
msg=$($K apply -f "$work/bad.yaml" 2>&1)
check "invalid custom resource is 422 with every field" "3" \
    "$(echo "$msg" | grep -c -e 'spec.qos: Unsupported value: "ultra": supported values: "low", "medium", "high", "critical"' \
        -e 'spec.gpuCount: Invalid value: "string": spec.gpuCount in body must be of type integer: "string"' \
        -e 'spec.resources.requests.tflops: Invalid value: "number": spec.resources.requests.tflops in body must be of type integer,string: "number"')"
check "kubectl names the object" 'The WorkloadProfile "bad" is invalid: ' "$(echo "$msg" | head -1)"
printf 'apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: p2}\nspec: {bogus: 1}\n' >"$work/unk.yaml"
check "strict validation (kubectl's default) refuses unknown fields" 'unknown field "spec.bogus"' \
    "$($K apply -f "$work/unk.yaml" 2>&1 | grep -o 'unknown field "spec.bogus"')"
check "--validate=warn warns" 'Warning: unknown field "spec.bogus"' \
    "$($K apply --validate=warn -f "$work/unk.yaml" 2>&1 | grep Warning)"
check "unknown fields are pruned" '{}' "$($K get gpupool p2 -o jsonpath='{.spec}')"
$K patch gpupool p2 --type=merge -p '{"spec":{"schedulingConfigTemplate":"t"},"status":{"phase":"Running"}}' >/dev/null
check "main resource ignores a CR's status" "t|" \
    "$($K get gpupool p2 -o jsonpath='{.spec.schedulingConfigTemplate}|{.status.phase}')"
check "status must hold what the CRD requires" 'status.availableTFlops: Required value' \
    "$($K patch gpupool p2 --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' 2>&1 | grep -o 'status.availableTFlops: Required value')"
$K patch gpupool p2 --subresource=status --type=merge -p '{"spec":{"schedulingConfigTemplate":"u"},"status":{"phase":"Running","readyNodes":0,"notReadyNodes":0,"totalTFlops":"0","totalVRAM":"0","virtualTFlops":"0","virtualVRAM":"0","availableTFlops":"0","availableVRAM":"0","componentStatus":{}}}' >/dev/null
check "status subresource ignores a CR's spec" "t|Running" \
    "$($K get gpupool p2 -o jsonpath='{.spec.schedulingConfigTemplate}|{.status.phase}')"
printf 'apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: p3}\nstatus: {phase: Running}\n' >"$work/st.yaml"
$K apply -f "$work/st.yaml" >/dev/null
check "status is dropped on create" "" "$($K get gpupool p3 -o jsonpath='{.status}')"
cols=$("$PY" -c "import sys, yaml; v = yaml.safe_load(open(sys.argv[1]))['spec']['versions'][0]; print(' '.join(['NAME'] + [c['name'].upper() for c in v['additionalPrinterColumns']]))" \
    "$src/deploy/helm/tensor-fusion/crds/gpupools.tensor-fusion.ai.yaml")
check "kubectl get prints the CRD's printer columns" "$cols" \
    "$($K get gpupool p2 | head -1 | tr -s ' ' | sed 's/ $//')"
printf 'apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: Bad_Name}\n' >"$work/bn.yaml"
check "a CR name must be a DNS subdomain" "metadata.name: Invalid value: \"Bad_Name\"" \
    "$($K create --validate=false -f "$work/bn.yaml" 2>&1 | grep -o 'metadata.name: Invalid value: "Bad_Name"')"
$K delete crd gpupools.tensor-fusion.ai >/dev/null
check "deleting a CRD removes its kind" "the server could not find the requested resource" \
    "$($K get gpupools 2>&1 | grep -o 'the server could not find the requested resource')"
check "kubectl apply registers a CRD" \
    "customresourcedefinition.apiextensions.k8s.io/gpupools.tensor-fusion.ai created" \
    "$($K apply --validate=false -f "$src/deploy/helm/tensor-fusion/crds/gpupools.tensor-fusion.ai.yaml" 2>&1)"
check "the applied CRD serves its kind, without the old objects" "gpupool.tensor-fusion.ai/p2 created" \
    "$($K apply -f "$work/unk.yaml" --validate=false 2>&1)"
check "missing namespace is NotFound" "NotFound" \
    "$($K -n nope create --validate=false -f "$work/pod.yaml" 2>&1 | grep -o NotFound | head -1)"

echo "kubectl honesty: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
