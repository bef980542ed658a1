/* SPDX-License-Identifier: Apache-2.0
 *
 * Device plugin messages ⇄ the slot logic, over the protoc-c code generated from api.proto
 * (dp_codec.h).
 */
#include "hypervisor/deviceplugin/dp_codec.h"
#include "hypervisor/deviceplugin/dp_index.h"

#include "common/err.h"
#include "common/strutil.h"
#include "dp_api.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Packs M into a fresh buffer. */
static int pack(const ProtobufCMessage *m, uint8_t **out, size_t *outlen)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    *out = malloc(n ? n : 1);
    if (!*out)
        return TF_ENOMEM;
    *outlen = protobuf_c_message_pack(m, *out);
    return 0;
}

static int options(bool preferred, uint8_t **out, size_t *outlen)
{
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.pre_start_required = 0;
    o.get_preferred_allocation_available = preferred;
    return pack(&o.base, out, outlen);
}

int tf_dp_encode_options(uint8_t **out, size_t *outlen)
{
    return options(true, out, outlen);
}

static int reg(const char *resource, bool preferred, const char *endpoint, uint8_t **out,
               size_t *outlen)
{
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = preferred;
    V1beta1__RegisterRequest r = V1BETA1__REGISTER_REQUEST__INIT;
    r.version = (char *)TF_DP_API_VERSION;
    r.endpoint = (char *)endpoint;
    r.resource_name = (char *)resource;
    r.options = &o;
    return pack(&r.base, out, outlen);
}

int tf_dp_encode_register(const char *endpoint, uint8_t **out, size_t *outlen)
{
    return reg(TF_DP_RESOURCE, true, endpoint, out, outlen);
}

int tf_dp_encode_list(const struct tf_dp_list *l, uint8_t **out, size_t *outlen)
{
    size_t n = (size_t)l->nslot;
    V1beta1__Device *devs = calloc(n + 1, sizeof(*devs));
    V1beta1__Device **ptrs = calloc(n + 1, sizeof(*ptrs));
    /* One TopologyInfo with one NUMANode per GPU whose node is known, shared by its slots. */
    size_t ng = (size_t)l->ngpu;
    V1beta1__TopologyInfo *topo = calloc(ng + 1, sizeof(*topo));
    V1beta1__NUMANode *nodes = calloc(ng + 1, sizeof(*nodes));
    V1beta1__NUMANode **nptrs = calloc(ng + 1, sizeof(*nptrs));
    int rc = TF_ENOMEM;
    if (!devs || !ptrs || !topo || !nodes || !nptrs)
        goto out;
    for (size_t g = 0; g < ng; g++) {
        v1beta1__topology_info__init(&topo[g]);
        v1beta1__numanode__init(&nodes[g]);
        nodes[g].id = l->numa[g];
        nptrs[g] = &nodes[g];
        topo[g].n_nodes = 1;
        topo[g].nodes = &nptrs[g];
    }
    for (size_t i = 0; i < n; i++) {
        v1beta1__device__init(&devs[i]);
        devs[i].id = (char *)l->slot[i].id;
        devs[i].health = (char *)(l->slot[i].healthy ? TF_DP_HEALTHY : TF_DP_UNHEALTHY);
        int g = l->slot[i].gpu;
        if (g >= 0 && g < l->ngpu && l->numa[g] >= 0)
            devs[i].topology = &topo[g];
        ptrs[i] = &devs[i];
    }
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    r.n_devices = n;
    r.devices = ptrs;
    rc = pack(&r.base, out, outlen);
out:
    free(devs);
    free(ptrs);
    free(topo);
    free(nodes);
    free(nptrs);
    return rc;
}

int tf_dp_decode_empty(const uint8_t *in, size_t inlen, char *err, size_t errlen)
{
    V1beta1__Empty *m = v1beta1__empty__unpack(NULL, inlen, in);
    if (!m) {
        tf_errf(err, errlen, "not a v1beta1.Empty message (%zu bytes)", inlen);
        return TF_EPROTO;
    }
    v1beta1__empty__free_unpacked(m, NULL);
    return 0;
}

/* Checks the size of a request's per-container lists against L. */
static int check_ids(const struct tf_dp_list *l, size_t n, const char *what, char *err,
                     size_t errlen)
{
    if (n > (size_t)l->nslot) {
        tf_errf(err, errlen, "%zu %s but this node advertises %d devices", n, what, l->nslot);
        return TF_ERANGE;
    }
    return 0;
}

static int check_containers(size_t n, char *err, size_t errlen)
{
    if (n > TF_DP_MAX_CONTAINERS) {
        tf_errf(err, errlen, "%zu container requests (at most %d)", n, TF_DP_MAX_CONTAINERS);
        return TF_ERANGE;
    }
    return 0;
}

int tf_dp_handle_allocate(const struct tf_dp_list *l, const uint8_t *in, size_t inlen,
                          uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    V1beta1__AllocateRequest *req = v1beta1__allocate_request__unpack(NULL, inlen, in);
    if (!req) {
        tf_errf(err, errlen, "not a v1beta1.AllocateRequest message (%zu bytes)", inlen);
        return TF_EPROTO;
    }
    size_t nc = req->n_container_requests;
    V1beta1__ContainerAllocateResponse *cr = NULL, **crp = NULL;
    V1beta1__ContainerAllocateResponse__EnvsEntry *env = NULL, **envp = NULL;
    char **vals = NULL;
    int rc = check_containers(nc, err, errlen);
    if (rc)
        goto out;
    if (nc == 0) {
        tf_errf(err, errlen, "no container requests");
        rc = TF_EINVAL;
        goto out;
    }
    rc = TF_ENOMEM;
    cr = calloc(nc, sizeof(*cr));
    crp = calloc(nc, sizeof(*crp));
    env = calloc(nc, sizeof(*env));
    envp = calloc(nc, sizeof(*envp));
    vals = calloc(nc, sizeof(*vals));
    if (!cr || !crp || !env || !envp || !vals)
        goto out;
    for (size_t c = 0; c < nc; c++) {
        const V1beta1__ContainerAllocateRequest *q = req->container_requests[c];
        if ((rc = check_ids(l, q->n_devices_ids, "device IDs", err, errlen)))
            goto out;
        size_t cap = q->n_devices_ids * (TF_DP_ID_MAX + 1) + 1;
        rc = TF_ENOMEM;
        if (!(vals[c] = malloc(cap)))
            goto out;
        char why[256];
        rc = tf_dp_allocate(l, (const char *const *)q->devices_ids, q->n_devices_ids, vals[c], cap,
                            why, sizeof(why));
        if (rc) {
            tf_errf(err, errlen, "container request %zu: %s", c, why);
            goto out;
        }
        v1beta1__container_allocate_response__envs_entry__init(&env[c]);
        env[c].key = (char *)TF_DP_ENV_IDS;
        env[c].value = vals[c];
        envp[c] = &env[c];
        v1beta1__container_allocate_response__init(&cr[c]);
        cr[c].n_envs = 1;
        cr[c].envs = &envp[c];
        crp[c] = &cr[c];
    }
    V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
    resp.n_container_responses = nc;
    resp.container_responses = crp;
    rc = pack(&resp.base, out, outlen);
out:
    for (size_t c = 0; vals && c < nc; c++)
        free(vals[c]);
    free(vals);
    free(envp);
    free(env);
    free(crp);
    free(cr);
    v1beta1__allocate_request__free_unpacked(req, NULL);
    return rc;
}

int tf_dp_handle_preferred(const struct tf_dp_list *l, const uint8_t *in, size_t inlen,
                           uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    V1beta1__PreferredAllocationRequest *req =
        v1beta1__preferred_allocation_request__unpack(NULL, inlen, in);
    if (!req) {
        tf_errf(err, errlen, "not a v1beta1.PreferredAllocationRequest message (%zu bytes)", inlen);
        return TF_EPROTO;
    }
    size_t nc = req->n_container_requests;
    V1beta1__ContainerPreferredAllocationResponse *cr = NULL, **crp = NULL;
    char ***ids = NULL;
    int *idx = calloc((size_t)l->nslot + 1, sizeof(*idx));
    int rc = check_containers(nc, err, errlen);
    if (rc)
        goto out;
    rc = TF_ENOMEM;
    cr = calloc(nc + 1, sizeof(*cr));
    crp = calloc(nc + 1, sizeof(*crp));
    ids = calloc(nc + 1, sizeof(*ids));
    if (!idx || !cr || !crp || !ids)
        goto out;
    for (size_t c = 0; c < nc; c++) {
        const V1beta1__ContainerPreferredAllocationRequest *q = req->container_requests[c];
        if ((rc = check_ids(l, q->n_available_deviceids, "available device IDs", err, errlen)) ||
            (rc =
                 check_ids(l, q->n_must_include_deviceids, "must-include device IDs", err, errlen)))
            goto out;
        if (q->allocation_size < 0) {
            tf_errf(err, errlen, "container request %zu: allocation_size %d", c,
                    (int)q->allocation_size);
            rc = TF_EINVAL;
            goto out;
        }
        int n = 0;
        rc = tf_dp_preferred(l, (const char *const *)q->available_deviceids,
                             q->n_available_deviceids,
                             (const char *const *)q->must_include_deviceids,
                             q->n_must_include_deviceids, q->allocation_size, idx, &n);
        if (rc)
            goto out;
        rc = TF_ENOMEM;
        if (!(ids[c] = calloc((size_t)n + 1, sizeof(char *))))
            goto out;
        for (int k = 0; k < n; k++)
            ids[c][k] = (char *)l->slot[idx[k]].id;
        v1beta1__container_preferred_allocation_response__init(&cr[c]);
        cr[c].n_deviceids = (size_t)n;
        cr[c].deviceids = ids[c];
        crp[c] = &cr[c];
    }
    V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    resp.n_container_responses = nc;
    resp.container_responses = crp;
    rc = pack(&resp.base, out, outlen);
out:
    for (size_t c = 0; ids && c < nc; c++)
        free(ids[c]);
    free(ids);
    free(crp);
    free(cr);
    free(idx);
    v1beta1__preferred_allocation_request__free_unpacked(req, NULL);
    return rc;
}

int tf_dp_handle_prestart(const struct tf_dp_list *l, const uint8_t *in, size_t inlen,
                          uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    V1beta1__PreStartContainerRequest *req =
        v1beta1__pre_start_container_request__unpack(NULL, inlen, in);
    if (!req) {
        tf_errf(err, errlen, "not a v1beta1.PreStartContainerRequest message (%zu bytes)", inlen);
        return TF_EPROTO;
    }
    int rc = check_ids(l, req->n_devices_ids, "device IDs", err, errlen);
    for (size_t i = 0; !rc && i < req->n_devices_ids; i++) {
        if (tf_dp_list_find(l, req->devices_ids[i]) < 0) {
            tf_errf(err, errlen, "unknown device ID \"%.80s\"", req->devices_ids[i]);
            rc = TF_ENOENT;
        }
    }
    if (!rc) {
        V1beta1__PreStartContainerResponse resp = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
        rc = pack(&resp.base, out, outlen);
    }
    v1beta1__pre_start_container_request__free_unpacked(req, NULL);
    return rc;
}

/* ---- pod-index plugins (dp_index.h) -------------------------------------------------------- */

int tf_dp_encode_index_options(uint8_t **out, size_t *outlen)
{
    return options(false, out, outlen);
}

int tf_dp_encode_index_register(int k, const char *endpoint, uint8_t **out, size_t *outlen)
{
    char res[40];
    if (tf_podidx_resource(k, res, sizeof(res)))
        return TF_ERANGE;
    return reg(res, false, endpoint, out, outlen);
}

int tf_dp_encode_index_list(int k, uint8_t **out, size_t *outlen)
{
    V1beta1__Device devs[TF_PODIDX_DEVICES], *ptrs[TF_PODIDX_DEVICES];
    char ids[TF_PODIDX_DEVICES][16];
    for (int j = 0; j < TF_PODIDX_DEVICES; j++) {
        if (tf_podidx_device_id(k, j + 1, ids[j], sizeof(ids[j])))
            return TF_ERANGE;
        v1beta1__device__init(&devs[j]);
        devs[j].id = ids[j];
        devs[j].health = (char *)TF_DP_HEALTHY;
        ptrs[j] = &devs[j];
    }
    V1beta1__ListAndWatchResponse r = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    r.n_devices = TF_PODIDX_DEVICES;
    r.devices = ptrs;
    return pack(&r.base, out, outlen);
}

/* The pod index container request Q names on plugin K, or a negative code with ERR. */
static int index_of(int k, const V1beta1__ContainerAllocateRequest *q, char *err, size_t errlen)
{
    size_t n = q->n_devices_ids;
    if (n < 1 || n > TF_PODIDX_MOD) {
        tf_errf(err, errlen,
                "%zu devices of tensor-fusion.ai/index_%x (a pod index asks for 1..%d)", n,
                (unsigned)k, TF_PODIDX_MOD);
        return TF_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!tf_podidx_is_device(k, q->devices_ids[i])) {
            tf_errf(err, errlen, "unknown device ID \"%.80s\"", q->devices_ids[i]);
            return TF_ENOENT;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->devices_ids[i], q->devices_ids[j]) == 0) {
                tf_errf(err, errlen, "device ID \"%.80s\" repeated", q->devices_ids[i]);
                return TF_EINVAL;
            }
    }
    return tf_podidx_decode(k, (int)n);
}

int tf_dp_handle_index_allocate(int k, tf_dp_resolve_fn resolve, void *arg, const uint8_t *in,
                                size_t inlen, uint8_t **out, size_t *outlen, char *err,
                                size_t errlen)
{
    V1beta1__AllocateRequest *req = v1beta1__allocate_request__unpack(NULL, inlen, in);
    if (!req) {
        tf_errf(err, errlen, "not a v1beta1.AllocateRequest message (%zu bytes)", inlen);
        return TF_EPROTO;
    }
    size_t nc = req->n_container_requests;
    V1beta1__ContainerAllocateResponse *cr = NULL, **crp = NULL;
    V1beta1__ContainerAllocateResponse__EnvsEntry *env = NULL, **envp = NULL;
    struct tf_dp_env *vals = NULL;
    int rc = check_containers(nc, err, errlen);
    if (rc)
        goto out;
    if (nc == 0) {
        tf_errf(err, errlen, "no container requests");
        rc = TF_EINVAL;
        goto out;
    }
    rc = TF_ENOMEM;
    cr = calloc(nc, sizeof(*cr));
    crp = calloc(nc, sizeof(*crp));
    env = calloc(nc * TF_DP_MAX_ENV, sizeof(*env));
    envp = calloc(nc * TF_DP_MAX_ENV, sizeof(*envp));
    vals = calloc(nc * TF_DP_MAX_ENV, sizeof(*vals));
    if (!cr || !crp || !env || !envp || !vals)
        goto out;
    for (size_t c = 0; c < nc; c++) {
        char why[512];
        int idx = index_of(k, req->container_requests[c], why, sizeof(why)), ne = 0;
        struct tf_dp_env *v = &vals[c * TF_DP_MAX_ENV];
        rc = idx < 0 ? idx : resolve(arg, idx, v, &ne, why, sizeof(why));
        if (!rc && (ne < 0 || ne > TF_DP_MAX_ENV))
            rc = TF_ERANGE;
        if (rc) {
            tf_errf(err, errlen, "container request %zu: %s", c, why);
            goto out;
        }
        v1beta1__container_allocate_response__init(&cr[c]);
        for (int e = 0; e < ne; e++) {
            size_t at = c * TF_DP_MAX_ENV + (size_t)e;
            v1beta1__container_allocate_response__envs_entry__init(&env[at]);
            env[at].key = v[e].key;
            env[at].value = v[e].value;
            envp[at] = &env[at];
        }
        cr[c].n_envs = (size_t)ne;
        cr[c].envs = &envp[c * TF_DP_MAX_ENV];
        crp[c] = &cr[c];
    }
    V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
    resp.n_container_responses = nc;
    resp.container_responses = crp;
    rc = pack(&resp.base, out, outlen);
out:
    free(vals);
    free(envp);
    free(env);
    free(crp);
    free(cr);
    v1beta1__allocate_request__free_unpacked(req, NULL);
    return rc;
}

int tf_dp_handle_index_prestart(int k, const uint8_t *in, size_t inlen, uint8_t **out,
                                size_t *outlen, char *err, size_t errlen)
{
    V1beta1__PreStartContainerRequest *req =
        v1beta1__pre_start_container_request__unpack(NULL, inlen, in);
    if (!req) {
        tf_errf(err, errlen, "not a v1beta1.PreStartContainerRequest message (%zu bytes)", inlen);
        return TF_EPROTO;
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < req->n_devices_ids; i++) {
        if (!tf_podidx_is_device(k, req->devices_ids[i])) {
            tf_errf(err, errlen, "unknown device ID \"%.80s\"", req->devices_ids[i]);
            rc = TF_ENOENT;
        }
    }
    if (!rc) {
        V1beta1__PreStartContainerResponse resp = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
        rc = pack(&resp.base, out, outlen);
    }
    v1beta1__pre_start_container_request__free_unpacked(req, NULL);
    return rc;
}
