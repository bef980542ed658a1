/* SPDX-License-Identifier: Apache-2.0
 *
 * The device plugin's pure logic (dp_slots.h) and its protobuf codec (dp_codec.h), as the
 * kubelet exercises them: the slot list and IDs it is shown, Allocate and
 * GetPreferredAllocation answers and refusals, malformed requests. Requests are packed and
 * answers unpacked with the same protoc-c code the plugin uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "dp_api.pb-c.h"
#include "hypervisor/deviceplugin/dp_codec.h"
#include "hypervisor/deviceplugin/dp_slots.h"

#define UA "GPU-aaaaaaaa-1111-2222-3333-444444444444"
#define UB "GPU-bbbbbbbb-1111-2222-3333-444444444444"
#define UC "GPU-cccccccc-1111-2222-3333-444444444444"

static void build(struct tf_dp_list *l, int slots, bool b_healthy)
{
    struct tf_dp_gpu g[] = {{UA, true, -1}, {UB, b_healthy, 1}}; /* B's NUMA node is known */
    assert_int_equal(tf_dp_list_build(g, 2, slots, l), 0);
}

static void node_advertises_slots_per_gpu_with_ids_from_the_uuid(void **state)
{
    struct tf_dp_list l;
    build(&l, 16, true);
    assert_int_equal(l.nslot, 32);
    assert_int_equal(l.ngpu, 2);
    assert_int_equal(l.skipped, 0);
    assert_string_equal(l.slot[0].id, UA "::0");
    assert_string_equal(l.slot[15].id, UA "::15");
    assert_string_equal(l.slot[16].id, UB "::0");
    assert_int_equal(l.slot[17].gpu, 1);
    assert_int_equal(l.slot[17].k, 1);
    assert_int_equal(tf_dp_list_healthy(&l), 32);
    for (int i = 0; i < l.nslot; i++)
        assert_true(strlen(l.slot[i].id) <= TF_DP_ID_MAX);
    assert_int_equal(tf_dp_list_find(&l, UB "::3"), 19);
    assert_int_equal(tf_dp_list_find(&l, UB "::16"), -1);
    assert_int_equal(tf_dp_list_find(&l, UB "::03"), -1);
    assert_int_equal(tf_dp_list_find(&l, UB "::+3"), -1);
    assert_int_equal(tf_dp_list_find(&l, UB "::"), -1);
    assert_int_equal(tf_dp_list_find(&l, UB), -1);
    assert_int_equal(tf_dp_list_find(&l, UC "::0"), -1);
    tf_dp_list_free(&l);
}

static void vanished_gpu_makes_its_slots_unhealthy(void **state)
{
    struct tf_dp_list a, b, c;
    build(&a, 4, true);
    build(&b, 4, false);
    build(&c, 4, true);
    assert_int_equal(tf_dp_list_healthy(&b), 4);
    assert_false(b.slot[4].healthy);
    assert_true(b.slot[3].healthy);
    assert_false(tf_dp_list_equal(&a, &b));
    assert_true(tf_dp_list_equal(&a, &c));
    struct tf_dp_gpu three[] = {{UA, true, -1}, {UB, true, 1}, {UC, true, 0}};
    struct tf_dp_list d;
    assert_int_equal(tf_dp_list_build(three, 3, 4, &d), 0);
    assert_false(tf_dp_list_equal(&a, &d));
    /* A GPU whose NUMA node changes (or becomes known) is a new list for the kubelet. */
    struct tf_dp_gpu moved[] = {{UA, true, 0}, {UB, true, 1}};
    struct tf_dp_list e;
    assert_int_equal(tf_dp_list_build(moved, 2, 4, &e), 0);
    assert_false(tf_dp_list_equal(&a, &e));
    tf_dp_list_free(&e);
    tf_dp_list_free(&a);
    tf_dp_list_free(&b);
    tf_dp_list_free(&c);
    tf_dp_list_free(&d);
}

static void gpus_that_cannot_be_named_are_left_out(void **state)
{
    char longu[80];
    memset(longu, 'x', sizeof(longu) - 1);
    longu[sizeof(longu) - 1] = '\0';
    struct tf_dp_gpu g[] = {
        {UA, true, -1}, {longu, true, -1}, {"", true, -1}, {UA, true, -1}, {NULL, true, -1}};
    struct tf_dp_list l;
    assert_int_equal(tf_dp_list_build(g, 5, 2, &l), 0);
    assert_int_equal(l.ngpu, 1);
    assert_int_equal(l.skipped, 4);
    tf_dp_list_free(&l);
    longu[TF_DP_UUID_MAX] = '\0'; /* the longest that fits 63 characters with "::255" */
    char id[TF_DP_ID_MAX + 1];
    assert_int_equal(tf_dp_slot_id(longu, 255, id, sizeof(id)), 0);
    assert_int_equal(strlen(id), TF_DP_ID_MAX);
    assert_int_equal(tf_dp_slot_id(longu, 256, id, sizeof(id)), TF_ERANGE);
    assert_int_equal(tf_dp_list_build(g, 1, 0, &l), TF_EINVAL);
    assert_int_equal(tf_dp_list_build(g, 1, TF_DP_MAX_SLOTS + 1, &l), TF_EINVAL);
    assert_int_equal(tf_dp_list_build(NULL, 0, 1, &l), 0);
    assert_int_equal(l.nslot, 0);
    tf_dp_list_free(&l);
}

static void allocate_passes_the_slot_ids_and_refuses_bad_ones(void **state)
{
    struct tf_dp_list l;
    build(&l, 4, false);
    char env[256], err[256];
    const char *ok[] = {UA "::0", UA "::2"};
    assert_int_equal(tf_dp_allocate(&l, ok, 2, env, sizeof(env), err, sizeof(err)), 0);
    assert_string_equal(env, UA "::0," UA "::2");
    const char *unknown[] = {UA "::0", UC "::1"};
    assert_int_equal(tf_dp_allocate(&l, unknown, 2, env, sizeof(env), err, sizeof(err)), TF_ENOENT);
    assert_non_null(strstr(err, UC "::1"));
    const char *sick[] = {UB "::1"};
    assert_int_equal(tf_dp_allocate(&l, sick, 1, env, sizeof(env), err, sizeof(err)), TF_ESTATE);
    assert_non_null(strstr(err, "unhealthy"));
    const char *twice[] = {UA "::1", UA "::1"};
    assert_int_equal(tf_dp_allocate(&l, twice, 2, env, sizeof(env), err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_dp_allocate(&l, ok, 0, env, sizeof(env), err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_dp_allocate(&l, ok, 2, env, 50, err, sizeof(err)), TF_ERANGE);
    tf_dp_list_free(&l);
}

static void preferred_allocation_spreads_over_gpus(void **state)
{
    struct tf_dp_gpu g[] = {{UA, true, -1}, {UB, true, -1}, {UC, true, -1}};
    struct tf_dp_list l;
    assert_int_equal(tf_dp_list_build(g, 3, 4, &l), 0);
    const char *all[12];
    for (int i = 0; i < 12; i++)
        all[i] = l.slot[i].id;
    int out[12], n;
    assert_int_equal(tf_dp_preferred(&l, all, 12, NULL, 0, 3, out, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 0); /* A::0, B::0, C::0 */
    assert_int_equal(out[1], 4);
    assert_int_equal(out[2], 8);
    /* must-include first; the GPU with the most free slots wins ties */
    const char *must[] = {UB "::2"};
    const char *avail[] = {UA "::0", UA "::1", UB "::0", UB "::1", UB "::3", UC "::3"};
    assert_int_equal(tf_dp_preferred(&l, avail, 6, must, 1, 4, out, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], 6);  /* B::2 */
    assert_int_equal(out[1], 0);  /* A (2 free) before C (1 free) */
    assert_int_equal(out[2], 11); /* C::3: C has none chosen */
    assert_int_equal(out[3], 4);  /* B (3 free left) before A (1) */
    /* not enough: as many as there are; unknown and repeated IDs ignored */
    const char *few[] = {UA "::1", "GPU-zz::0", UA "::1"};
    assert_int_equal(tf_dp_preferred(&l, few, 3, NULL, 0, 5, out, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 1);
    assert_int_equal(tf_dp_preferred(&l, few, 3, NULL, 0, -1, out, &n), TF_EINVAL);
    tf_dp_list_free(&l);
    /* unhealthy slots are never preferred */
    build(&l, 2, false);
    const char *mixed[] = {UB "::0", UB "::1", UA "::1"};
    assert_int_equal(tf_dp_preferred(&l, mixed, 3, NULL, 0, 2, out, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 1);
    tf_dp_list_free(&l);
}

/* ---- codec ------------------------------------------------------------------------------- */

static uint8_t *pack_allocate(const char *const *const *ids, const size_t *n, size_t nc,
                              size_t *len)
{
    V1beta1__AllocateRequest r = V1BETA1__ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest c[4], *cp[4];
    for (size_t i = 0; i < nc; i++) {
        v1beta1__container_allocate_request__init(&c[i]);
        c[i].n_devices_ids = n[i];
        c[i].devices_ids = (char **)ids[i];
        cp[i] = &c[i];
    }
    r.n_container_requests = nc;
    r.container_requests = cp;
    *len = v1beta1__allocate_request__get_packed_size(&r);
    uint8_t *buf = malloc(*len + 1);
    assert_non_null(buf);
    v1beta1__allocate_request__pack(&r, buf);
    return buf;
}

static void kubelet_allocate_gets_one_env_per_container(void **state)
{
    struct tf_dp_list l;
    build(&l, 4, true);
    const char *c0[] = {UA "::0", UB "::3"}, *c1[] = {UA "::1"};
    const char *const *ids[] = {c0, c1};
    size_t n[] = {2, 1}, len, outlen;
    uint8_t *in = pack_allocate(ids, n, 2, &len), *out;
    char err[256];
    assert_int_equal(tf_dp_handle_allocate(&l, in, len, &out, &outlen, err, sizeof(err)), 0);
    V1beta1__AllocateResponse *r = v1beta1__allocate_response__unpack(NULL, outlen, out);
    assert_non_null(r);
    assert_int_equal(r->n_container_responses, 2);
    V1beta1__ContainerAllocateResponse *a = r->container_responses[0];
    assert_int_equal(a->n_envs, 1);
    assert_string_equal(a->envs[0]->key, "TF_VGPU_IDS");
    assert_string_equal(a->envs[0]->value, UA "::0," UB "::3");
    assert_int_equal(a->n_mounts, 0);
    assert_int_equal(a->n_devices, 0);
    assert_int_equal(a->n_cdi_devices, 0);
    assert_string_equal(r->container_responses[1]->envs[0]->value, UA "::1");
    v1beta1__allocate_response__free_unpacked(r, NULL);
    free(out);
    free(in);
    /* one bad container fails the whole request, naming it */
    const char *bad[] = {UA "::9"};
    const char *const *ids2[] = {c1, bad};
    size_t n2[] = {1, 1};
    in = pack_allocate(ids2, n2, 2, &len);
    out = NULL;
    assert_int_equal(tf_dp_handle_allocate(&l, in, len, &out, &outlen, err, sizeof(err)),
                     TF_ENOENT);
    assert_null(out);
    assert_non_null(strstr(err, "container request 1"));
    free(in);
    in = pack_allocate(NULL, NULL, 0, &len);
    assert_int_equal(tf_dp_handle_allocate(&l, in, len, &out, &outlen, err, sizeof(err)),
                     TF_EINVAL);
    free(in);
    tf_dp_list_free(&l);
}

static void malformed_requests_are_protocol_errors(void **state)
{
    struct tf_dp_list l;
    build(&l, 2, true);
    uint8_t *out = NULL;
    size_t outlen;
    char err[256];
    /* field 1, length 5, only 1 byte follows */
    static const uint8_t trunc[] = {0x0a, 0x05, 0x0a};
    assert_int_equal(
        tf_dp_handle_allocate(&l, trunc, sizeof(trunc), &out, &outlen, err, sizeof(err)),
        TF_EPROTO);
    assert_int_equal(
        tf_dp_handle_preferred(&l, trunc, sizeof(trunc), &out, &outlen, err, sizeof(err)),
        TF_EPROTO);
    assert_int_equal(
        tf_dp_handle_prestart(&l, trunc, sizeof(trunc), &out, &outlen, err, sizeof(err)),
        TF_EPROTO);
    assert_int_equal(tf_dp_decode_empty(trunc, sizeof(trunc), err, sizeof(err)), TF_EPROTO);
    assert_null(out);
    assert_int_equal(tf_dp_decode_empty((const uint8_t *)"", 0, err, sizeof(err)), 0);
    /* more IDs than the node has devices */
    const char *many[] = {UA "::0", UA "::1", UB "::0", UB "::1", UA "::0"};
    const char *const *ids[] = {many};
    size_t n[] = {5}, len;
    uint8_t *in = pack_allocate(ids, n, 1, &len);
    assert_int_equal(tf_dp_handle_allocate(&l, in, len, &out, &outlen, err, sizeof(err)),
                     TF_ERANGE);
    free(in);
    tf_dp_list_free(&l);
}

static void list_options_and_register_encode_as_the_api_says(void **state)
{
    struct tf_dp_list l;
    build(&l, 2, false);
    uint8_t *out;
    size_t len;
    assert_int_equal(tf_dp_encode_list(&l, &out, &len), 0);
    V1beta1__ListAndWatchResponse *w = v1beta1__list_and_watch_response__unpack(NULL, len, out);
    assert_non_null(w);
    assert_int_equal(w->n_devices, 4);
    assert_string_equal(w->devices[1]->id, UA "::1");
    assert_string_equal(w->devices[1]->health, "Healthy");
    assert_string_equal(w->devices[2]->health, "Unhealthy");
    /* TopologyInfo only where the GPU's NUMA node is known: B's slots, node 1. */
    assert_null(w->devices[0]->topology);
    for (int i = 2; i < 4; i++) {
        assert_non_null(w->devices[i]->topology);
        assert_int_equal(w->devices[i]->topology->n_nodes, 1);
        assert_int_equal(w->devices[i]->topology->nodes[0]->id, 1);
    }
    v1beta1__list_and_watch_response__free_unpacked(w, NULL);
    free(out);
    assert_int_equal(tf_dp_encode_options(&out, &len), 0);
    V1beta1__DevicePluginOptions *o = v1beta1__device_plugin_options__unpack(NULL, len, out);
    assert_non_null(o);
    assert_true(o->get_preferred_allocation_available);
    assert_false(o->pre_start_required);
    v1beta1__device_plugin_options__free_unpacked(o, NULL);
    free(out);
    assert_int_equal(tf_dp_encode_register("tensor-fusion-vgpu.sock", &out, &len), 0);
    V1beta1__RegisterRequest *r = v1beta1__register_request__unpack(NULL, len, out);
    assert_non_null(r);
    assert_string_equal(r->version, "v1beta1");
    assert_string_equal(r->endpoint, "tensor-fusion-vgpu.sock");
    assert_string_equal(r->resource_name, "tensor-fusion.ai/vgpu");
    assert_non_null(r->options);
    assert_true(r->options->get_preferred_allocation_available);
    v1beta1__register_request__free_unpacked(r, NULL);
    free(out);
    tf_dp_list_free(&l);
}

static void preferred_and_prestart_over_the_wire(void **state)
{
    struct tf_dp_list l;
    build(&l, 2, true);
    const char *avail[] = {UA "::0", UA "::1", UB "::0", UB "::1"};
    V1beta1__ContainerPreferredAllocationRequest
        c = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT,
        *cp = &c;
    c.n_available_deviceids = 4;
    c.available_deviceids = (char **)avail;
    c.allocation_size = 2;
    V1beta1__PreferredAllocationRequest r = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    r.n_container_requests = 1;
    r.container_requests = &cp;
    uint8_t in[512], *out;
    size_t len = v1beta1__preferred_allocation_request__pack(&r, in), outlen;
    char err[256];
    assert_int_equal(tf_dp_handle_preferred(&l, in, len, &out, &outlen, err, sizeof(err)), 0);
    V1beta1__PreferredAllocationResponse *p =
        v1beta1__preferred_allocation_response__unpack(NULL, outlen, out);
    assert_non_null(p);
    assert_int_equal(p->n_container_responses, 1);
    assert_int_equal(p->container_responses[0]->n_deviceids, 2);
    assert_string_equal(p->container_responses[0]->deviceids[0], UA "::0");
    assert_string_equal(p->container_responses[0]->deviceids[1], UB "::0");
    v1beta1__preferred_allocation_response__free_unpacked(p, NULL);
    free(out);
    c.allocation_size = -2;
    len = v1beta1__preferred_allocation_request__pack(&r, in);
    assert_int_equal(tf_dp_handle_preferred(&l, in, len, &out, &outlen, err, sizeof(err)),
                     TF_EINVAL);

    V1beta1__PreStartContainerRequest s = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;
    s.n_devices_ids = 2;
    s.devices_ids = (char **)avail;
    len = v1beta1__pre_start_container_request__pack(&s, in);
    assert_int_equal(tf_dp_handle_prestart(&l, in, len, &out, &outlen, err, sizeof(err)), 0);
    free(out);
    const char *unknown[] = {UC "::0"};
    s.n_devices_ids = 1;
    s.devices_ids = (char **)unknown;
    len = v1beta1__pre_start_container_request__pack(&s, in);
    assert_int_equal(tf_dp_handle_prestart(&l, in, len, &out, &outlen, err, sizeof(err)),
                     TF_ENOENT);
    tf_dp_list_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_advertises_slots_per_gpu_with_ids_from_the_uuid),
        cmocka_unit_test(vanished_gpu_makes_its_slots_unhealthy),
        cmocka_unit_test(gpus_that_cannot_be_named_are_left_out),
        cmocka_unit_test(allocate_passes_the_slot_ids_and_refuses_bad_ones),
        cmocka_unit_test(preferred_allocation_spreads_over_gpus),
        cmocka_unit_test(kubelet_allocate_gets_one_env_per_container),
        cmocka_unit_test(malformed_requests_are_protocol_errors),
        cmocka_unit_test(list_options_and_register_encode_as_the_api_says),
        cmocka_unit_test(preferred_and_prestart_over_the_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
