/* SPDX-License-Identifier: Apache-2.0
 *
 * dlopen of the real CUDA driver for tf-worker; see driver.h.
 */
#include "remote/worker/driver.h"

#include "common/err.h"
#include "common/strutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int tf_drv_open(struct tf_drv *d, const char *path, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    const char *lib = path ? path : "libcuda.so.1";
    d->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!d->dl) {
        const char *e = dlerror();
        tf_errf(err, errlen, "cannot load the CUDA driver %s: %s", lib, e ? e : "?");
        return TF_ENOENT;
    }
#define TF__DRV_RESOLVE(field, sym, type, req)                                                     \
    {                                                                                              \
        void *p = dlsym(d->dl, sym);                                                               \
        memcpy(&d->field, &p, sizeof(p));                                                          \
        if (!p && (req)) {                                                                         \
            tf_errf(err, errlen, "CUDA driver %s lacks %s", lib, sym);                             \
            tf_drv_close(d);                                                                       \
            return TF_ENOENT;                                                                      \
        }                                                                                          \
    }
    TF_DRV_FUNCS(TF__DRV_RESOLVE)
#undef TF__DRV_RESOLVE
    for (int i = 0; i < TF_CALL_COUNT; i++) {
        d->call[i] = dlsym(d->dl, tf_calls[i].name);
        if (!d->call[i] && tf_calls[i].fallback)
            d->call[i] = dlsym(d->dl, tf_calls[i].fallback);
    }
    if (!d->ctxCreate4 && !d->ctxCreate2) {
        tf_errf(err, errlen, "CUDA driver %s lacks cuCtxCreate_v4 and cuCtxCreate_v2", lib);
        tf_drv_close(d);
        return TF_ENOENT;
    }
    if (!d->deviceGetUuid && !d->deviceGetUuid1) {
        tf_errf(err, errlen, "CUDA driver %s lacks cuDeviceGetUuid", lib);
        tf_drv_close(d);
        return TF_ENOENT;
    }
    if (!d->eventElapsedTime2 && !d->eventElapsedTime1) {
        tf_errf(err, errlen, "CUDA driver %s lacks cuEventElapsedTime", lib);
        tf_drv_close(d);
        return TF_ENOENT;
    }
    return 0;
}

void tf_drv_close(struct tf_drv *d)
{
    /* The driver stays mapped: drivers keep threads and atexit state that do not survive
     * dlclose, and leak reports keep their symbols. */
    if (d)
        memset(d, 0, sizeof(*d));
}

CUresult tf_drv_ctx_create(const struct tf_drv *d, CUcontext *ctx, unsigned flags, CUdevice dev)
{
    if (d->ctxCreate4)
        return d->ctxCreate4(ctx, NULL, flags, dev);
    return d->ctxCreate2(ctx, flags, dev);
}

CUresult tf_drv_device_uuid(const struct tf_drv *d, CUuuid *uuid, CUdevice dev)
{
    if (d->deviceGetUuid)
        return d->deviceGetUuid(uuid, dev);
    return d->deviceGetUuid1(uuid, dev);
}

CUresult tf_drv_elapsed(const struct tf_drv *d, float *ms, CUevent start, CUevent end)
{
    if (d->eventElapsedTime2)
        return d->eventElapsedTime2(ms, start, end);
    return d->eventElapsedTime1(ms, start, end);
}

const char *tf_drv_err_name(const struct tf_drv *d, CUresult r, char *buf, size_t len)
{
    const char *s = NULL;
    if (d->getErrorName && d->getErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    snprintf(buf, len, "CUresult %d", (int)r);
    return buf;
}
