# SPDX-License-Identifier: Apache-2.0
"""The twelve tensor-fusion.ai/v1 kinds (deploy/gen_crds.py): spec and status fields, scope,
status subresource, short names and printer columns.

Each kind is a superset of upstream TensorFusion's CRD for it (the v1 and v2 lines of
github.com/NexusGPU/tensor-fusion): every upstream field with its type, enum and default; upstream's
additionalPrinterColumns as they are; status subresources where upstream has them. Fields of
ours that upstream lacks are optional extras. Required fields: status blocks (written by our
components) require what upstream requires; in specs (written by users) we never require more
than upstream, and less where upstream's requirement would refuse objects with the same
meaning (docs/spec.md, "Custom resources"). Former spellings of ours stay accepted next to
upstream's (computePercent next to compute, isolationModeRules {isolation, nodeSelector} next to
{mode, selector}, manageMode Auto next to AutoSelect, ...): readers take both, writers write
upstream's.
"""
from crd_types import (arr, b, conditions, i, isolation, label_selector, node_affinity,
                       node_selector, obj, phase, q, qos, raw, resource, resource_status,
                       resources, s, smap)

# ---- GPUPool spec (also a TensorFusionCluster's gpuPools[].specTemplate) ----------------------

CAPACITY = obj({"tflops": q(), "vram": q(),
                "cpu": q("CPU, for cloud-vendor provisioning only"),
                "memory": q("memory, for cloud-vendor provisioning only")})

REQUIREMENT = obj({
    "key": s(enum=["node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
                   "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
                   "karpenter.sh/capacity-type", "tensor-fusion.ai/gpu-vendor",
                   "tensor-fusion.ai/gpu-instance-family", "tensor-fusion.ai/gpu-instance-size"]),
    "operator": s(enum=["In", "Exists", "DoesNotExist", "Gt", "Lt"], default="In"),
    "values": arr(s())})
TAINT = obj({"effect": s(enum=["NoSchedule", "NoExecute", "PreferNoSchedule"],
                         default="NoSchedule"), "key": s(), "value": s()})
GROUP_KIND_NAME = obj({"group": s(), "kind": s(), "name": s(), "version": s()},
                      required=["group", "kind", "name", "version"])

NODE_PROVISIONER = obj({
    "nodeClass": s("GPUNodeClass the pool's nodes are requested with (Provisioned pools)"),
    "karpenterNodeClassRef": GROUP_KIND_NAME,
    "gpuRequirements": arr(REQUIREMENT), "gpuTaints": arr(TAINT), "gpuNodeLabels": smap(),
    "gpuNodeAnnotations": smap(),
    "cpuRequirements": arr(REQUIREMENT), "cpuTaints": arr(TAINT), "cpuNodeLabels": smap(),
    "budget": obj({"budgetPerDay": s(default="100"), "budgetPerMonth": s(default="1000"),
                   "budgetPerQuarter": s(default="3000"),
                   "budgetExceedStrategy": s(enum=["AlertOnly", "AlertAndTerminateVM"],
                                             default="AlertOnly")})},
    "how nodes of Provisioned and Karpenter pools are requested")

ISOLATION_RULE = obj({
    "mode": isolation("mode of the nodes the selector matches"),
    "selector": label_selector("node labels"),
    "isolation": isolation("former name of mode, still read"),
    "nodeSelector": label_selector("former name of selector, still read")})

NODE_MANAGER = obj({
    "provisioningMode": s(enum=["Provisioned", "AutoSelect", "Karpenter"], default="AutoSelect"),
    "defaultVendor": s("vendor of the pool's nodes (single-vendor pools)", default="NVIDIA"),
    "multiVendorNodeSelector": smap("vendor -> node selector (multi-vendor pools)",
                                    values=node_selector()),
    "nodeProvisioner": NODE_PROVISIONER,
    "nodeSelector": node_selector("the pool's existing GPU nodes (AutoSelect)"),
    "defaultIsolationMode": isolation("nodes no isolationModeRules entry matches"),
    "isolationModeRules": arr(ISOLATION_RULE, "first match decides a node's isolation mode"),
    "nodeCompaction": obj({
        "period": s("how often empty nodes are released", default="5m"),
        "defrag": obj({
            "enabled": b(default=False),
            "schedule": s("5-field cron expression", default="0 3 * * *"),
            "timezone": s("IANA zone of the schedule (ours; default UTC)"),
            "maxDuration": s(default="2h"),
            "utilizationThresholdPercent": i(default=40, minimum=0, maximum=100),
            "evictedPodMarkerTTL": s("accepted; our defrag keeps no markers"),
            "sourceNodeMarkerTTL": s("accepted; our defrag keeps no markers")})}),
    "nodePoolRollingUpdatePolicy": obj({
        "autoUpdateHypervisor": b(), "autoUpdateWorker": b(), "autoUpdateClient": b(),
        "batchPercentage": i(default=100, minimum=0, maximum=100),
        "batchInterval": s(default="1s"), "maxDuration": s(default="10m"),
        "maintenanceWindow": obj({"includes": arr(s(), "cron expressions")})})})

PRICING = obj({
    "qos": qos(),
    "requests": obj({"perFP16TFlopsPerHour": s(default="$0.0069228"),
                     "perGBOfVRAMPerHour": s(default="$0.01548")}),
    "limitsOverRequests": s("price ratio of limits above requests", default="1"),
    "limitsOverRequestsChargingRatio": q("former name of limitsOverRequests (percent), read")})

QOS_CONFIG = obj({
    "defaultQoS": qos(),
    "definitions": arr(obj({"name": qos(), "description": s(), "priority": i(fmt=None)})),
    "pricing": arr(PRICING),
    "evictionProtectionPriceRatio": s(default="1.2")})


def _component(extra):
    props = {"image": s(), "providerImage": smap("vendor -> image"), "podTemplate": raw()}
    props.update(extra)
    return obj(props)


COMPONENT_CONFIG = obj({
    "client": obj({"image": s(), "providerImage": smap("vendor -> image"),
                   "remoteModeImage": s(), "embeddedModeImage": s(), "operatorEndpoint": s(),
                   "patchToPod": raw(), "patchToContainer": raw(),
                   "patchToEmbeddedWorkerContainer": raw(), "patchEmbeddedWorkerToPod": raw()}),
    "hypervisor": _component({"vectorImage": s(), "enableVector": b(),
                              "portNumber": i(default=8000, minimum=0, maximum=65535)}),
    "nodeDiscovery": _component({}),
    "worker": _component({})},
    "images and pod templates of the pool's components", open_=True)

POOL_SPEC = {
    "defaultUsingLocalGPU": b("local GPU mode unless a pod says otherwise (default true)"),
    "capacityConfig": obj({
        "minResources": CAPACITY, "maxResources": CAPACITY, "warmResources": CAPACITY,
        "oversubscription": obj({
            "tflopsOversellRatio": i("virtual TFLOPS in percent of the physical",
                                     default=500, minimum=100, maximum=100000),
            "vramExpandToHostMem": i("percent of VRAM that may spill to host memory",
                                     default=50, minimum=0, maximum=100),
            "vramExpandToHostDisk": i("percent of VRAM that may spill to host disk",
                                      default=70, minimum=0, maximum=100)})}),
    "nodeManagerConfig": NODE_MANAGER,
    "qosConfig": QOS_CONFIG,
    "componentConfig": COMPONENT_CONFIG,
    "schedulingConfigTemplate": s("SchedulingConfigTemplate name"),
}

POOL_PHASES = ["Pending", "Running", "Updating", "Destroying", "Unknown"]

POOL_STATUS = obj({
    "cluster": s(), "phase": phase(POOL_PHASES, "Pending"), "conditions": conditions(),
    "totalNodes": i(), "totalGPUs": i(), "readyNodes": i(), "notReadyNodes": i(),
    "totalTFlops": q(), "totalVRAM": q(), "virtualTFlops": q("TFLOPS after oversubscription"),
    "virtualVRAM": q(), "availableTFlops": q(), "availableVRAM": q(),
    "virtualAvailableTFlops": q(), "virtualAvailableVRAM": q(),
    "allocatedTFlops": q(), "allocatedVRAM": q(), "runningAppsCnt": i(),
    "componentStatus": obj({
        "worker": s(), "workerConfigSynced": b(), "workerUpdateProgress": i(),
        "hypervisor": s(), "hypervisorConfigSynced": b(), "hypervisorUpdateProgress": i(),
        "client": s(), "clientConfigSynced": b(), "clientUpdateProgress": i()}),
    "savedCostsPerMonth": s(), "potentialSavingsPerMonth": s(), "budgetExceeded": s(default=""),
    "provisioningPhase": s(enum=["None", "Initializing", "Provisioning", "Completed"],
                           default="None"),
    "lastCompactionTime": s(format="date-time"), "lastDefragTime": s(format="date-time")},
    required=["availableTFlops", "availableVRAM", "componentStatus", "notReadyNodes", "phase",
              "readyNodes", "totalTFlops", "totalVRAM", "virtualTFlops", "virtualVRAM"])

# ---- workloads --------------------------------------------------------------------------------

CRON_RULE = obj({"enable": b(), "name": s(), "start": s("cron"), "end": s("cron"),
                 "desiredResources": resources()}, open_=True)

AUTO_SET_RESOURCES = obj({
    "enable": b(), "targetResource": s("compute, vram or all (default)"),
    **{k: s() for k in (
        "targetComputePercentile", "lowerBoundComputePercentile", "upperBoundComputePercentile",
        "targetVRAMPercentile", "lowerBoundVRAMPercentile", "upperBoundVRAMPercentile",
        "marginFraction", "updateThreshold", "historyDataPeriod", "minVRAMResourcesRatio",
        "maxVRAMResourcesRatio", "minComputeResourcesRatio", "maxComputeResourcesRatio",
        "initialDelayPeriod", "interval",
        # our spellings, read by the autoscaler (src/core/autoscale.c)
        "targetTflopsPercentile", "lowerBoundTflopsPercentile", "upperBoundTflopsPercentile",
        "targetVramPercentile", "lowerBoundVramPercentile", "upperBoundVramPercentile",
        "requestMarginFraction", "historyLength", "confidenceInterval",
        "histogramDecayHalfLife")}})

AUTOSCALING = obj({
    "autoSetResources": AUTO_SET_RESOURCES,
    "cronScalingRules": arr(CRON_RULE),
    "externalScaler": obj({"enable": b(), "url": s(),
                           "apiKeySecretRef": obj({"name": s(), "namespace": s()},
                                                  x_kubernetes_map_type="atomic"),
                           "initialDelayPeriod": s(), "interval": s()}),
    "autoSetReplicas": raw("ours; enable: true is refused (vertical scaling only)")}, "autoscaling (seed 002)")

WORKLOAD_SPEC = {
    "replicas": i("workers; unset = one per client pod", minimum=0),
    "poolName": s("GPUPool"),
    "resources": resources("per-GPU compute and VRAM"),
    "qos": qos(),
    "isLocalGPU": b("run on the GPU node that hosts the worker"),
    "sidecarWorker": b("local GPU through a hard-isolated worker sidecar"),
    "isolation": isolation(default="soft"),
    "partitionTemplateId": s("partition template (isolation partitioned)"),
    "gpuModel": s("GPU model, e.g. A100"),
    "gpuCount": i("GPUs per worker", minimum=1, maximum=128),
    "gpuIndices": arr(i(minimum=0, maximum=127), "candidate device indices"),
    "vendor": s("GPU vendor"),
    "dedicatedGPU": b("take whole GPUs of gpuModel (ours)"),
    "autoScalingConfig": AUTOSCALING,
    "nodeAffinity": node_affinity("node affinity of the workers"),
    "workerPodTemplate": raw("pod template of remote workers"),
    "gangScheduling": obj({"minMembers": i("members that must fit together (0 = replicas)",
                                           minimum=0),
                           "timeout": s("how long a partial gang waits, e.g. 5m")}),
}

WORKLOAD_COLUMNS = [("Pool Name", ".spec.poolName"), ("QoS", ".spec.qos"),
                    ("Is Local GPU", ".spec.isLocalGPU"), ("GPU Number", ".spec.gpuCount"),
                    ("Replicas", ".spec.replicas")]

# ---- GPUs ------------------------------------------------------------------------------------

POD_GPU_INFO = obj({"name": s(), "namespace": s(), "uid": s(), "qos": qos(),
                    "requests": resource_status(), "limits": resource_status(),
                    "isExternal": b("held through a native device plugin")})

RUNNING_APP = obj({"name": s("workload"), "namespace": s(), "count": i(fmt=None),
                   "pods": arr(POD_GPU_INFO)}, required=["count"])

GPU_STATUS = obj({
    "phase": phase(["Pending", "Provisioning", "Running", "Unknown", "Destroying", "Migrating"],
                   "Pending"),
    "uuid": s("device UUID"), "gpuModel": s("model, as upstream names the board, e.g. A100_SXM_80G"), "model": s(),
    "vendor": s(default="NVIDIA"), "index": i(), "numaNode": i("-1: no NUMA node"),
    "nodeSelector": smap("kubernetes.io/hostname of the node"),
    "capacity": resource_status(), "available": resource_status(),
    "isolationMode": isolation(default="soft"),
    "isolationPolicy": s(enum=["Static", "Dynamic"]),
    "activeIsolationMode": s(enum=["shared", "soft", "hard"]),
    "dynamicIsolationConflict": b(),
    "usedBy": s(enum=["tensor-fusion", "nvidia-device-plugin"]),
    "partitionTemplates": arr(obj({"templateId": s(), "name": s()},
                                  required=["name", "templateId"])),
    "allocatedPartitions": smap("partition UUID -> allocation", values=obj({
        "templateId": s(), "podUid": s(), "podName": s(), "namespace": s(),
        "allocatedAt": s(format="date-time"), "allocatedSlotStart": i(),
        "allocatedSlotEnd": i(), "isolationGroupId": i()},
        required=["allocatedAt", "namespace", "podName", "podUid", "templateId"])),
    "runningApps": arr(RUNNING_APP),
    "nvLink": obj({"peerCount": i(), "totalLinkCount": i(), "totalBandwidthMBps": i(fmt="int64"),
                   "peers": arr(obj({"peerUUID": s(), "linkCount": i(), "linkVersion": i(),
                                     "bandwidthMBps": i(fmt="int64")}, required=["peerUUID"]))}),
    "topology": obj({"peers": arr(obj({"peerGPUUUID": s(), "tier": i(), "linkType": s(),
                                       "bandwidth": i(fmt="int64")},
                                      required=["peerGPUUUID", "tier"]))}),
    "message": s()},
    required=["available", "capacity", "gpuModel", "message", "nodeSelector", "phase", "uuid",
              "vendor"])

GPUNODE_STATUS = obj({
    "phase": phase(["Pending", "Provisioning", "Migrating", "Running", "Succeeded", "Failed",
                    "Unknown", "Destroying"], "Pending"),
    "conditions": conditions(),
    "totalTFlops": q(), "totalVRAM": q(), "virtualTFlops": q(), "virtualVRAM": q(),
    "availableTFlops": q(), "availableVRAM": q(), "virtualAvailableTFlops": q(),
    "virtualAvailableVRAM": q(),
    "hypervisorStatus": obj({"hypervisorState": s(), "hypervisorVersion": s(),
                             "lastHeartbeatTime": s(format="date-time")}, open_=True),
    "nodeInfo": obj({k: s() for k in (
        "instanceID", "region", "hostname", "ip", "kernelVersion", "osImage",
        "gpuDriverVersion", "gpuModel", "operatingSystem", "architecture",
        "os", "driverVersion", "cudaVersion")} | {
        "gpuCount": i(), "ramSize": q(), "dataDiskSize": q()}, open_=True),
    "loadedModels": arr(s()),
    "totalGPUs": i(), "managedGPUs": i(), "managedGPUDeviceIDs": arr(s()),
    "totalGPUPods": i(), "observedGeneration": i(fmt="int64"),
    "allocationInfo": arr(RUNNING_APP),
    "allocatedPods": smap("GPU UUID -> pods allocated on it", values=arr(POD_GPU_INFO)),
    "message": s()},
    required=["managedGPUs", "phase", "totalGPUs", "totalTFlops", "totalVRAM"])

# ---- provider configs ------------------------------------------------------------------------

DEVICE_MOUNT = obj({"deviceMountRule": s("CEL expression"),
                    "partitionedDeviceMountRule": s("CEL expression"),
                    "sharedDevices": arr(s(), "paths or globs mounted always")})

PROVIDER_SPEC = {
    "vendor": s("hardware vendor, e.g. NVIDIA"),
    "images": obj({"middleware": s("hypervisor/middleware image of GPU nodes"),
                   "remoteClient": s(), "remoteWorker": s()}, required=["middleware"]),
    "devicePluginDetection": obj({
        "resourceNamePrefixes": arr(s(), "resource names of the vendor's device plugin"),
        "usedBySystemName": s()}),
    "inUseResourceNames": arr(s(), "native resource names TensorFusion takes over from pods"),
    "hardwareMetadata": arr(obj({
        "model": s(), "fullModelName": s(), "fp16TFlops": q(), "costPerHour": s(),
        "maxPartitions": i(), "maxPlacementSlots": i(), "maxIsolationGroups": i(),
        "partitionTemplateRefs": arr(s()),
        "totalExtendedResources": smap(values=i()), "deviceMount": DEVICE_MOUNT},
        required=["fp16TFlops", "fullModelName", "model"])),
    "hypervisor": obj({
        "deviceMount": DEVICE_MOUNT,
        "extraEnv": arr(obj({"name": s(), "value": s()}, required=["name"])),
        "hostPathMounts": arr(obj({"name": s(), "hostPath": s(), "mountPath": s(),
                                   "readOnly": b()},
                                  required=["hostPath", "mountPath", "name"])),
        "ldLibraryPath": s(), "privilegedHypervisor": b()}),
    "virtualizationTemplates": arr(obj({
        "id": s(), "name": s(), "description": s(), "computePercent": s(),
        "memoryGigabytes": i(fmt="int64"), "extendedResources": smap(values=i()),
        "isolationGroupSharing": s(enum=["exclusive", "shared"], default="exclusive"),
        "isolationGroupSlots": i(), "maxInstances": i(), "maxPartitionsPerIsolationGroup": i(),
        "placementLimit": arr(i()), "placementOffset": i()},
        required=["computePercent", "id", "memoryGigabytes", "name"])),
}

# ---- node provisioning -------------------------------------------------------------------------

SELECTOR_TERM = obj({"id": s(), "name": s(), "tags": smap()})

NODE_CLASS_SPEC = {
    "osImageType": s(enum=["Private", "Public", "System"], default="Private"),
    "osImageSelectorTerms": arr(SELECTOR_TERM),
    "instanceProfile": s(), "launchTemplate": SELECTOR_TERM,
    "subnetSelectorTerms": arr(SELECTOR_TERM), "securityGroupSelectorTerms": arr(SELECTOR_TERM),
    "blockDeviceMappings": arr(obj({"deviceName": s(), "ebs": obj({
        "deleteOnTermination": b(default=True), "encrypted": b(default=True),
        "volumeSize": s(), "volumeType": s()})})),
    "metadataOptions": obj({"httpEndpoint": b(default=True), "httpProtocolIPv6": b(default=False),
                            "httpPutResponseHopLimit": i(fmt=None, default=1),
                            "httpTokens": s(default="required")}),
    "tags": smap(), "userData": s(),
}

NODE_CLAIM_SPEC = obj({
    "nodeName": s("name of the node to create"), "region": s(), "zone": s(),
    "instanceType": s(), "capacityType": s("OnDemand, Reserved or Spot"),
    "nodeClassRef": obj({"group": s(), "kind": s(), "name": s(), "version": s()},
                        required=["group", "kind", "name"]),
    "tflopsOffered": q(), "vramOffered": q(), "gpuDeviceOffered": i(),
    "extraParams": smap()},
    "one node requested for a Provisioned pool",
    required=["gpuDeviceOffered", "tflopsOffered", "vramOffered"])

# ---- the kinds ---------------------------------------------------------------------------------
# columns: (name, jsonPath[, type]); None = no additionalPrinterColumns (kubectl shows Name, Age).

CRDS = [
    dict(kind="TensorFusionCluster", plural="tensorfusionclusters", short=["tfc"],
         scope="Cluster", status_sub=True,
         spec={"gpuPools": arr(obj({
             "name": s("pool name; the derived GPUPool is <cluster>-<name>"),
             "isDefault": b("the pool pods use when they name none"),
             "specTemplate": obj(POOL_SPEC)})),
             "computingVendor": obj({
                 "name": s(), "type": s(enum=[
                     "aws", "lambda-labs", "gcp", "azure", "oracle-oci", "ibm", "openshift",
                     "vultr", "together-ai", "alibaba", "nvidia", "tencent", "runpod",
                     "karpenter", "mock"]),
                 "authType": s(enum=["accessKey", "serviceAccountRole"]),
                 "enable": b(default=True),
                 "params": obj({"defaultRegion": s(), "accessKeyPath": s(), "secretKeyPath": s(),
                                "iamRole": s(), "configFile": s(), "extraParams": smap()},
                               open_=True)}),
             "storageVendor": raw("ours"), "dataPipelines": raw("ours")},
         status=obj({
             "phase": phase(POOL_PHASES, "Pending"), "conditions": conditions(),
             "totalPools": i(), "totalNodes": i(), "totalGPUs": i(),
             "totalTFlops": q(), "totalVRAM": q(), "virtualTFlops": q(), "virtualVRAM": q(),
             "availableTFlops": q(), "availableVRAM": q(), "virtualAvailableTFlops": q(),
             "virtualAvailableVRAM": q(), "readyGPUPools": arr(s()),
             "notReadyGPUPools": arr(s()), "retryCount": i(fmt="int64", default=0),
             **{k: s() for k in ("utilizedTFlopsPercent", "utilizedVRAMPercent",
                                 "allocatedTFlopsPercent", "allocatedVRAMPercent",
                                 "savedCostsPerMonth", "potentialSavingsPerMonth",
                                 "cloudVendorConfigHash")}},
             required=["availableTFlops", "availableVRAM", "retryCount", "totalGPUs",
                       "totalNodes", "totalPools", "totalTFlops", "totalVRAM", "virtualTFlops",
                       "virtualVRAM"]),
         columns=[("Phase", ".status.phase"), ("Total Pools", ".status.totalPools"),
                  ("Total Nodes", ".status.totalNodes"), ("Total GPU", ".status.totalGPUs"),
                  ("Total Tflops", ".status.totalTFlops"), ("Total VRAM", ".status.totalVRAM"),
                  ("Available Tflops", ".status.availableTFlops"),
                  ("Available VRAM", ".status.availableVRAM")]),
    dict(kind="GPUPool", plural="gpupools", short=["gp"], scope="Cluster", status_sub=True,
         spec=POOL_SPEC, status=POOL_STATUS,
         columns=[("Phase", ".status.phase"),
                  ("TFlops Oversubscription",
                   ".spec.capacityConfig.oversubscription.tflopsOversellRatio"),
                  ("Mode", ".status.mode"),
                  ("Default Scheduling Strategy", ".spec.schedulingConfigTemplate"),
                  ("Total Nodes", ".status.totalNodes"), ("Total GPU", ".status.totalGPUs"),
                  ("Total Tflops", ".status.totalTFlops"), ("Total VRAM", ".status.totalVRAM"),
                  ("Available Tflops", ".status.availableTFlops"),
                  ("Available VRAM", ".status.availableVRAM")]),
    dict(kind="GPUNode", plural="gpunodes", short=["gn"], scope="Cluster", status_sub=True,
         spec={"manageMode": s("AutoSelect (Auto: our former spelling), Manual or Provisioned",
                               enum=["Manual", "AutoSelect", "Provisioned", "Auto"],
                               default="AutoSelect"),
               "costPerHour": s(), "gpuCardIndices": arr(i(fmt=None)),
               "cloudVendorParam": s(),
               "instanceType": s("ours"), "region": s("ours"), "zone": s("ours")},
         status=GPUNODE_STATUS,
         columns=[("Phase", ".status.phase"), ("Total TFlops", ".status.totalTFlops"),
                  ("Total VRAM", ".status.totalVRAM"),
                  ("Virtual TFlops", ".status.virtualTFlops"),
                  ("Virtual VRAM", ".status.virtualVRAM"),
                  ("Available TFlops", ".status.availableTFlops"),
                  ("Available VRAM", ".status.availableVRAM"),
                  ("GPU Count", ".status.totalGPUs", "integer")]),
    dict(kind="GPU", plural="gpus", short=[], scope="Cluster", status_sub=True, spec=None,
         status=GPU_STATUS,
         columns=[("GPU Model", ".status.gpuModel"), ("Phase", ".status.phase"),
                  ("Total TFlops", ".status.capacity.tflops"),
                  ("Total VRAM", ".status.capacity.vram"),
                  ("Available TFlops", ".status.available.tflops"),
                  ("Available VRAM", ".status.available.vram"),
                  ("Device UUID", ".status.uuid"), ("Used By", ".status.usedBy"),
                  ("Node", ".status.nodeSelector")]),
    dict(kind="TensorFusionWorkload", plural="tensorfusionworkloads", short=["tfw"],
         scope="Namespaced", status_sub=True, spec=WORKLOAD_SPEC,
         status=obj({
             "phase": phase(["Pending", "Running", "Failed", "Unknown"], "Pending"),
             "conditions": conditions(), "workerCount": i(), "readyWorkers": i(),
             "podTemplateHash": s(), "recommendation": resources("autoscaler recommendation"),
             "activeCronScalingRule": CRON_RULE, "appliedRecommendedReplicas": i(),
             "workerStatuses": arr(raw())},
             required=["workerCount"]),
         columns=[("Phase", ".status.phase"), ("Worker Count", ".status.workerCount"),
                  ("Ready Workers", ".status.readyWorkers"),
                  ("Pod Template Hash", ".status.podTemplateHash")] + WORKLOAD_COLUMNS),
    dict(kind="TensorFusionConnection", plural="tensorfusionconnections", short=["tfconn"],
         scope="Namespaced", status_sub=True,
         spec={"workloadName": s("TensorFusionWorkload the client belongs to"),
               "clientPod": s("the remote client pod")},
         spec_required=["clientPod", "workloadName"],
         status=obj({"phase": s(), "workerName": s("worker pod paired with the client"),
                     "connectionURL": s("tcp://host:port the client dials"),
                     "resourceVersion": s("ours"), "conditions": conditions()},
                    required=["connectionURL", "phase", "workerName"]),
         columns=[("Phase", ".status.phase"), ("Connection URL", ".status.connectionURL"),
                  ("Worker Name", ".status.workerName"),
                  ("Workload Name", ".spec.workloadName"), ("Client Pod", ".spec.clientPod")]),
    dict(kind="WorkloadProfile", plural="workloadprofiles", short=["wp"], scope="Namespaced",
         status_sub=True, spec=WORKLOAD_SPEC, status=obj(), columns=WORKLOAD_COLUMNS),
    dict(kind="SchedulingConfigTemplate", plural="schedulingconfigtemplates", short=["sct"],
         scope="Cluster", status_sub=True,
         spec={"placement": obj({
             "mode": s(enum=["CompactFirst", "LowLoadFirst", "NodeCompactGPULowLoad"],
                       default="NodeCompactGPULowLoad"),
             "allowUsingLocalGPU": b(default=True),
             "gpuFilters": arr(obj({"type": s(), "params": raw()})),
             "vramWeight": s("score weight of VRAM (ours; default 0.7)"),
             "tflopsWeight": s("score weight of TFLOPS (ours; default 0.3)")},
             required=["mode"]),
             "verticalScalingRules": arr(obj({"name": s(), "selector": label_selector(),
                                              "autoScaling": AUTOSCALING})),
             "reBalancer": obj({"enable": b(), "interval": s(), "reBalanceCoolDownTime": s(),
                                "threshold": obj({"matchAny": raw()})}),
             "hypervisor": obj({
                 "autoFreezeAndResume": obj({
                     "autoFreeze": arr(obj({"qos": qos(), "freezeToMemTTL": s(),
                                            "freezeToDiskTTL": s(), "enable": b()})),
                     "intelligenceWarmup": obj({"enable": b(), "model": s(),
                                                "historyDataPeriod": s(),
                                                "predictionPeriod": s()})}),
                 "elasticRateLimitParameters": obj({k: s() for k in (
                     "maxRefillRate", "minRefillRate", "filterAlpha", "ki", "kd", "kp",
                     "burstWindow", "capacityMin", "capacityMax", "integralDecayFactor")}),
                 "multiProcessQueuingParameters": obj({k: s() for k in (
                     "computingThresholdForPreempt", "triggerPreemptDuration",
                     "computingThresholdForResume", "triggerResumeDuration", "coefficientLow",
                     "coefficientMedium", "coefficientHigh", "slowStartRatio")})})},
         status=obj(),
         columns=[("Mode", ".spec.placement.mode"),
                  ("Allow Local GPU", ".spec.placement.allowLocalGPU"),
                  ("AutoFreeze", ".spec.hypervisor.autoFreezeAndResume.autoFreeze.enable")]),
    dict(kind="GPUResourceQuota", plural="gpuresourcequotas", short=["gq"],
         scope="Namespaced", status_sub=True,
         spec={"total": obj({"requests": resource(), "limits": resource(),
                             "maxWorkers": i(default=32768, minimum=0),
                             "alertThresholdPercent": i(default=95, minimum=0, maximum=100)}),
               "single": obj({"maxRequests": resource(), "maxLimits": resource(),
                              "minRequests": resource("ours"),
                              "defaultRequests": resource(), "defaultLimits": resource(),
                              "maxGPUCount": i(minimum=1)})},
         status=obj({
             "used": obj({"requests": resource_status(), "limits": resource_status(),
                          "workers": i()}),
             "availablePercent": obj({k: s() for k in (
                 "requests.tflops", "requests.vram", "limits.tflops", "limits.vram", "workers",
                 "requestsTFlops", "requestsVRAM", "limitsTFlops", "limitsVRAM")}),
             "conditions": conditions(), "lastUpdateTime": s(format="date-time")}),
         columns=[("Requests TFlops Used", '.status.used["requests.tflops"]'),
                  ("Requests VRAM Used", '.status.used["requests.vram"]'),
                  ("Workers Used", ".status.used.workers", "integer"),
                  ("Alert Threshold", ".spec.total.alertThresholdPercent", "integer"),
                  ("Age", ".metadata.creationTimestamp", "date")]),
    dict(kind="ProviderConfig", plural="providerconfigs", short=["pc"], scope="Cluster",
         status_sub=False, spec=PROVIDER_SPEC, spec_required=["images", "vendor"],
         status=obj(),
         columns=[("Vendor", ".spec.vendor"), ("Age", ".metadata.creationTimestamp", "date")]),
    dict(kind="GPUNodeClass", plural="gpunodeclasses", short=["gnc"], scope="Cluster",
         status_sub=True, spec=NODE_CLASS_SPEC, status=obj(), columns=None),
    dict(kind="GPUNodeClaim", plural="gpunodeclaims", short=["gncl"], scope="Cluster",
         status_sub=True, spec=NODE_CLAIM_SPEC,
         status=obj({"phase": s("Pending until a node serves the claim, then Bound",
                                default="Pending"),
                     "instanceID": s("the node (or cloud instance) serving the claim"),
                     "message": s("why the claim is still pending (ours)")},
                    required=["phase"]),
         root_required=["metadata"],
         columns=[("Phase", ".status.phase")]),
]
