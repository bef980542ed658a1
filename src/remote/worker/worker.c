/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker: the state all sessions share (devices, VRAM reservations against the cap or the
 * limit region, the HELLO reply); see session.h.
 */
#include "remote/worker/session_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Device features the remote path does not serve (docs/remote.md "Semantics across the
 * wire"): reported as absent, so the runtime and frameworks that look before they use them
 * (pools in host memory or exported to other processes, managed memory, mapped or registered host
 * memory, virtual memory management) take the path for a device without them instead of failing
 * later. */
static const CUdevice_attribute unserved[] = {
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
    CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
};

static bool is_unserved(int a)
{
    for (size_t i = 0; i < sizeof(unserved) / sizeof(unserved[0]); i++)
        if ((int)unserved[i] == a)
            return true;
    return false;
}

/* ---- shared worker state -------------------------------------------------------------------- */

int tf_worker_vram_reserve(struct tf_worker *w, int i, int64_t bytes)
{
    if (w->region.map.r.lim) {
        if (bytes < 0 || tf_shm_vram_reserve(&w->region.map.r, (unsigned)w->region.entry[i],
                                             w->region.slot, (uint64_t)bytes) != 0)
            return TF_ENOSPC;
        return 0;
    }
    struct tf_worker_dev *d = &w->devs[i];
    int64_t cur = atomic_load(&d->used);
    for (;;) {
        if (bytes < 0 || bytes > d->limit - cur)
            return TF_ENOSPC;
        if (atomic_compare_exchange_weak(&d->used, &cur, cur + bytes))
            return 0;
    }
}

static int blob_try(struct tf_worker *w, int64_t bytes)
{
    int64_t cur = atomic_load(&w->blob_used);
    for (;;) {
        if (bytes < 0 || bytes > w->blob_limit - cur)
            return TF_ENOSPC;
        if (atomic_compare_exchange_weak(&w->blob_used, &cur, cur + bytes))
            return 0;
    }
}

/* Images kept by digest hold budget too: the least recently used one no load is using
 * makes room for an upload. */
int tf_worker_blob_reserve(struct tf_worker *w, int64_t bytes)
{
    int64_t freed;
    while (blob_try(w, bytes) != 0) {
        if (bytes < 0 || (freed = tf_imgcache_evict_one(&w->images)) == 0)
            return TF_ENOSPC;
        tf_worker_blob_release(w, freed);
    }
    return 0;
}

void tf_worker_images_changed(struct tf_worker *w)
{
    if (!w->stats_path)
        return;
    struct tf_imgcache_stats st = tf_imgcache_stats(&w->images);
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", w->stats_path) >= (int)sizeof(tmp))
        return;
    pthread_mutex_lock(&w->stats_mu);
    FILE *f = fopen(tmp, "w");
    int ok = f != NULL;
    if (f) {
        fprintf(f,
                "{\"module_loads_cached\":%llu,\"module_loads_sent\":%llu,"
                "\"module_image_bytes_received\":%llu,\"module_images_held\":%llu,"
                "\"module_image_bytes_held\":%llu,\"module_images_evicted\":%llu}\n",
                (unsigned long long)st.loads_cached, (unsigned long long)st.loads_sent,
                (unsigned long long)st.bytes_sent, (unsigned long long)st.entries,
                (unsigned long long)st.bytes, (unsigned long long)st.evicted);
        ok = fclose(f) == 0 && ok;
    }
    if (!ok || rename(tmp, w->stats_path) != 0)
        tf_log(TF_LOG_WARN, "worker", "--stats-file %s: not written", w->stats_path);
    pthread_mutex_unlock(&w->stats_mu);
}

void tf_worker_blob_release(struct tf_worker *w, int64_t bytes)
{
    int64_t prev = atomic_fetch_sub(&w->blob_used, bytes);
    assert(prev >= bytes);
    (void)prev;
}

void tf_worker_vram_release(struct tf_worker *w, int i, int64_t bytes)
{
    if (w->region.map.r.lim) {
        if (bytes > 0)
            tf_shm_vram_release(&w->region.map.r, (unsigned)w->region.entry[i], w->region.slot,
                                (uint64_t)bytes);
        return;
    }
    struct tf_worker_dev *d = &w->devs[i];
    int64_t cur = atomic_load(&d->used);
    for (;;) {
        int64_t next = cur > bytes ? cur - bytes : 0;
        if (atomic_compare_exchange_weak(&d->used, &cur, next))
            return;
    }
}

/* What device I's clients see as free and total memory, given the driver's figures: the
 * region's view of its live limit, else the flag's cap. */
void tf__worker_vram_view(const struct tf_worker *w, int i, uint64_t phys_free, uint64_t phys_total,
                          uint64_t *free_out, uint64_t *total_out)
{
    if (w->region.map.r.lim) {
        tf_shm_vram_view(&w->region.map.r, (unsigned)w->region.entry[i], phys_free, phys_total,
                         free_out, total_out);
        return;
    }
    const struct tf_worker_dev *wd = &w->devs[i];
    int64_t used = atomic_load(&wd->used);
    int64_t cap_free = wd->limit - used;
    if (cap_free < 0)
        cap_free = 0;
    *free_out = (uint64_t)((int64_t)phys_free < cap_free ? (int64_t)phys_free : cap_free);
    *total_out = (uint64_t)((int64_t)phys_total < wd->limit ? (int64_t)phys_total : wd->limit);
}

struct dev_list {
    struct tf_worker *w;
    int count;
    char err[128];
};

static int add_device(const char *item, size_t len, void *arg)
{
    struct dev_list *l = arg;
    char buf[16], *end;
    if (len >= sizeof(buf)) {
        snprintf(l->err, sizeof(l->err), "--device: \"%.*s\" is not a device ordinal", (int)len,
                 item);
        return TF_EINVAL;
    }
    memcpy(buf, item, len);
    buf[len] = 0;
    long v = strtol(buf, &end, 10);
    if (*end || v < 0 || v > 1023) {
        snprintf(l->err, sizeof(l->err), "--device: \"%s\" is not a device ordinal", buf);
        return TF_EINVAL;
    }
    if (l->count >= (int)TF_PROTO_MAX_DEVICES) {
        snprintf(l->err, sizeof(l->err), "--device: more than %u devices", TF_PROTO_MAX_DEVICES);
        return TF_ERANGE;
    }
    l->w->devs[l->count++].dev = (CUdevice)v;
    return 0;
}

int tf_worker_init(struct tf_worker *w, const struct tf_worker_config *cfg, char *err,
                   size_t errlen)
{
    memset(w, 0, sizeof(*w));
    tf_imgcache_init(&w->images);
    pthread_mutex_init(&w->stats_mu, NULL);
    w->stats_path = cfg->stats_file;
    tf_buf_init(&w->hello_tail, TF_PROTO_MAX_PAYLOAD);
    w->blob_limit = cfg->module_buffer_limit > 0 ? cfg->module_buffer_limit : (int64_t)1 << 30;
    int rc = tf_drv_open(&w->drv, cfg->driver_path, err, errlen);
    if (rc)
        return rc;
    const struct tf_drv *d = &w->drv;
    char nb[32];
    CUresult r = d->init(0);
    if (r != CUDA_SUCCESS) {
        tf_errf(err, errlen, "cuInit failed: %s", tf_drv_err_name(d, r, nb, sizeof(nb)));
        goto fail;
    }
    d->driverGetVersion(&w->driver_version);
    int count = 0;
    d->deviceGetCount(&count);
    struct dev_list l = {.w = w};
    rc = tf_split_list(cfg->devices ? cfg->devices : "0", add_device, &l);
    if (rc || l.count == 0) {
        tf_errf(err, errlen, "%s", l.count ? l.err : "--device: no device given");
        goto fail;
    }
    w->ndev = l.count;
    struct tf_wcompute_dev cdevs[TF_PROTO_MAX_DEVICES];
    struct tf_wregion_dev rdevs[TF_PROTO_MAX_DEVICES];
    for (int i = 0; i < w->ndev; i++) {
        struct tf_worker_dev *wd = &w->devs[i];
        int ord = wd->dev;
        rdevs[i].ordinal = ord;
        if (ord >= count || d->deviceGet(&wd->dev, ord) != CUDA_SUCCESS) {
            tf_errf(err, errlen, "--device: device %d does not exist (the driver has %d)", ord,
                    count);
            goto fail;
        }
        size_t total = 0;
        char name[256] = "";
        CUuuid uuid;
        memset(&uuid, 0, sizeof(uuid));
        d->deviceTotalMem(&total, wd->dev);
        d->deviceGetName(name, sizeof(name) - 1, wd->dev);
        tf_drv_device_uuid(d, &uuid, wd->dev);
        wd->total = (int64_t)total;
        wd->limit =
            cfg->vram_limit > 0 && cfg->vram_limit < wd->total ? cfg->vram_limit : wd->total;
        atomic_init(&wd->used, 0);
        struct tf_msg_dev_info di = {.total_mem = (uint64_t)wd->limit,
                                     .nattrs = CU_DEVICE_ATTRIBUTE_MAX};
        memcpy(di.uuid, uuid.bytes, 16);
        memcpy(di.name, name, sizeof(di.name));
        memcpy(cdevs[i].uuid, uuid.bytes, 16);
        cdevs[i].mem_total = total;
        memcpy(rdevs[i].uuid, uuid.bytes, 16);
        uint8_t *p = tf_buf_grow(&w->hello_tail, TF_PROTO_SIZE_dev_info);
        if (!p)
            goto nomem;
        tf_msg_dev_info_put(p, &di);
        for (int a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
            int v = 0;
            CUresult ar = a == 0 ? CUDA_ERROR_INVALID_VALUE
                                 : d->deviceGetAttribute(&v, (CUdevice_attribute)a, wd->dev);
            if (ar == CUDA_SUCCESS && is_unserved(a))
                v = 0;
            struct tf_msg_attr_val av = {.status = (uint32_t)ar, .value = (uint32_t)v};
            uint8_t *q = tf_buf_grow(&w->hello_tail, TF_PROTO_SIZE_attr_val);
            if (!q)
                goto nomem;
            tf_msg_attr_val_put(q, &av);
        }
        if (i == 0 && cfg->pinned_staging && d->primaryCtxRetain && d->memHostAlloc &&
            d->memFreeHost && d->primaryCtxRetain(&w->stage_ctx, wd->dev) != CUDA_SUCCESS)
            w->stage_ctx = NULL;
        if (cfg->limits_region)
            tf_log(TF_LOG_INFO, "worker", "device %d = driver device %d: %s, %lld bytes", i, ord,
                   name, (long long)wd->total);
        else
            tf_log(TF_LOG_INFO, "worker",
                   "device %d = driver device %d: %s, %lld bytes (limit %lld)", i, ord, name,
                   (long long)wd->total, (long long)wd->limit);
    }
    if (cfg->limits_region) {
        if (tf_wregion_open(&w->region, cfg->limits_region, cfg->limits_wait_ms, rdevs, w->ndev,
                            err, errlen) != 0)
            goto fail;
        tf_wcompute_attach(&w->compute, d, &w->region.map.r, w->region.slot, w->region.entry,
                           w->ndev, w->region.path);
        return 0;
    }
    if (tf_wcompute_start(&w->compute, d, cfg->compute_bp > 0 ? (uint32_t)cfg->compute_bp : 0,
                          cdevs, w->ndev, err, errlen) != 0)
        goto fail;
    return 0;
nomem:
    tf_errf(err, errlen, "out of memory");
fail:
    tf_worker_fini(w);
    return TF_EINVAL;
}

void tf_worker_shutdown(struct tf_worker *w)
{
    tf_wcompute_lift(&w->compute);
}

void tf_worker_fini(struct tf_worker *w)
{
    tf_wcompute_stop(&w->compute);
    tf_wregion_close(&w->region);
    if (w->stage_ctx && w->drv.primaryCtxRelease)
        w->drv.primaryCtxRelease(w->devs[0].dev);
    w->stage_ctx = NULL;
    tf_buf_free(&w->hello_tail);
    int64_t held = tf_imgcache_fini(&w->images);
    if (held)
        tf_worker_blob_release(w, held);
    pthread_mutex_destroy(&w->stats_mu);
    tf_drv_close(&w->drv);
}

int tf_worker_hello(void *arg, struct tf_msg_hello_rep *rep, struct tf_buf *tail)
{
    struct tf_worker *w = arg;
    rep->status = CUDA_SUCCESS;
    rep->ndev = (uint32_t)w->ndev;
    rep->driver_version = (uint32_t)w->driver_version;
    size_t base = tail->len;
    int rc = tf_buf_append(tail, w->hello_tail.data, w->hello_tail.len);
    if (rc || !w->region.map.r.lim)
        return rc;
    /* With a region, total memory is its live limit as of now (the client caches it). */
    size_t rec = TF_PROTO_SIZE_dev_info + (size_t)CU_DEVICE_ATTRIBUTE_MAX * TF_PROTO_SIZE_attr_val;
    assert(w->hello_tail.len == (size_t)w->ndev * rec); /* as tf_worker_init built it */
    for (int i = 0; i < w->ndev; i++) {
        uint8_t *p = tail->data + base + (size_t)i * rec;
        struct tf_msg_dev_info di;
        tf_msg_dev_info_get(p, &di);
        uint64_t fr, tot;
        tf__worker_vram_view(w, i, (uint64_t)w->devs[i].total, (uint64_t)w->devs[i].total, &fr,
                             &tot);
        di.total_mem = tot;
        tf_msg_dev_info_put(p, &di);
    }
    return 0;
}
