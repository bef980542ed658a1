/* SPDX-License-Identifier: Apache-2.0
 *
 * The export tables (exptab.h; layouts and meanings in docs/internals/exptab.md). Each table
 * is a static array of pointers; a table whose first slot is its size in bytes says so. Slots
 * whose meaning is not known hold a stub that logs its table and index once (warn) and
 * returns CUDA_ERROR_NOT_SUPPORTED, so an unexpected call is visible instead of a jump to
 * NULL. Everything an entry does goes through the public driver API.
 */
#include "exptab/exptab.h"

#include "common/log.h"
#include "exptab/integrity.h"
#include "fatbin/fatbin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SUBSYS "exptab"
#define SLOTS(n) ((const void *)(uintptr_t)((n) * sizeof(void *)))

/* ---- stubs for slots of unknown meaning ------------------------------------------------ */

enum { T_CUDART, T_TOOLS_HOOKS, T_TOOLS_TLS, T_CTX_CHECKS, T_COUNT };
static const char *const table_names[T_COUNT] = {"CUDART_INTERFACE", "TOOLS_RUNTIME_CALLBACK_HOOKS",
                                                 "TOOLS_TLS", "CONTEXT_CHECKS"};
static _Atomic uint32_t unknown_logged[T_COUNT];

static CUresult unknown_slot(int table, int idx)
{
    uint32_t bit = UINT32_C(1) << idx;
    if (!(atomic_fetch_or(&unknown_logged[table], bit) & bit))
        tf_log(TF_LOG_WARN, SUBSYS, "%s entry %d called: not implemented, CUDA_ERROR_NOT_SUPPORTED",
               table_names[table], idx);
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define UNKNOWN(table, idx)                                                                        \
    static CUresult table##_##idx(void)                                                            \
    {                                                                                              \
        return unknown_slot(table, idx);                                                           \
    }
UNKNOWN(T_CUDART, 3)
UNKNOWN(T_CUDART, 4)
UNKNOWN(T_CUDART, 5)
UNKNOWN(T_CUDART, 7)
UNKNOWN(T_CUDART, 9)
UNKNOWN(T_CUDART, 10)
UNKNOWN(T_CUDART, 11)
UNKNOWN(T_TOOLS_HOOKS, 3)
UNKNOWN(T_TOOLS_HOOKS, 5)
UNKNOWN(T_TOOLS_TLS, 1)
UNKNOWN(T_TOOLS_TLS, 3)
UNKNOWN(T_CTX_CHECKS, 1)
#undef UNKNOWN

/* ---- CUDART_INTERFACE: module registration, primary context ---------------------------- */

/* The container a __fatBinC_Wrapper_t record points to (fatbin.h). */
static CUresult wrapper_image(const void *wrapper, const void **image)
{
    if (!wrapper)
        return CUDA_ERROR_INVALID_VALUE;
    uint32_t magic, version;
    memcpy(&magic, wrapper, 4);
    memcpy(&version, (const char *)wrapper + 4, 4);
    memcpy(image, (const char *)wrapper + 8, sizeof(*image));
    if (magic != TF_FATBIN_WRAPPER_MAGIC || (version != 1 && version != 2) || !*image) {
        tf_log(TF_LOG_ERROR, SUBSYS, "fatbin wrapper: magic 0x%08x version %u: not a fatbin record",
               (unsigned)magic, (unsigned)version);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    return CUDA_SUCCESS;
}

/* [1]: loads the fatbin a registration record points to into the current context. */
static CUresult rt_module_from_wrapper(CUmodule *module, const void *wrapper)
{
    const void *image;
    CUresult rc = wrapper_image(wrapper, &image);
    if (rc)
        return rc;
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadFatBinary(module, image);
}

/* [2]: the device's primary context, retained (the runtime releases it at reset/exit). */
static CUresult rt_primary_ctx(CUcontext *pctx, CUdevice dev)
{
    return cuDevicePrimaryCtxRetain(pctx, dev);
}

/* [6]: [1] with three more arguments (seen NULL, NULL, 0 from the CUDA 13 runtime). */
static CUresult rt_module_from_wrapper_ex(CUmodule *module, const void *wrapper, void *a3, void *a4,
                                          unsigned a5)
{
    if (a3 || a4 || a5)
        tf_log(TF_LOG_DEBUG, SUBSYS, "CUDART_INTERFACE[6]: extra arguments %p %p %u ignored", a3,
               a4, a5);
    return rt_module_from_wrapper(module, wrapper);
}

/* [8]: loads a fatbin container given directly. */
static CUresult rt_module_from_fatbin_ex(const void *fatbin, CUmodule *module, void *a3, void *a4,
                                         unsigned a5)
{
    if (a3 || a4 || a5)
        tf_log(TF_LOG_DEBUG, SUBSYS, "CUDART_INTERFACE[8]: extra arguments %p %p %u ignored", a3,
               a4, a5);
    if (!module || !fatbin)
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadFatBinary(module, fatbin);
}

/* [12]: loads the JIT compilers; the PTX engine needs no loading. */
static CUresult rt_load_compilers(void)
{
    return CUDA_SUCCESS;
}

static const void *const cudart_interface[13] = {
    SLOTS(13),
    (const void *)rt_module_from_wrapper,
    (const void *)rt_primary_ctx,
    (const void *)T_CUDART_3,
    (const void *)T_CUDART_4,
    (const void *)T_CUDART_5,
    (const void *)rt_module_from_wrapper_ex,
    (const void *)T_CUDART_7,
    (const void *)rt_module_from_fatbin_ex,
    (const void *)T_CUDART_9,
    (const void *)T_CUDART_10,
    (const void *)T_CUDART_11,
    (const void *)rt_load_compilers,
};

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS, TOOLS_TLS: profiler hooks (no profiler here) --------- */

static void tools_event(unsigned id, void *data)
{
    (void)id;
    (void)data;
}

static void tools_span(void *a, void *b)
{
    (void)a;
    (void)b;
}

/* Buffers the runtime reads its tool callback settings from; all zero = no tool attached.
 * They are larger than the sizes reported, whatever unit the runtime counts in. */
static _Alignas(16) uint8_t tools_buf1[8192];
static _Alignas(16) uint8_t tools_buf2[128];

static void tools_buffer1(void **ptr, size_t *size)
{
    if (ptr)
        *ptr = tools_buf1;
    if (size)
        *size = 1024;
}

static void tools_buffer2(void **ptr, size_t *size)
{
    if (ptr)
        *ptr = tools_buf2;
    if (size)
        *size = 14;
}

static const void *const tools_hooks[7] = {
    SLOTS(7),
    (const void *)tools_event,
    (const void *)tools_buffer1,
    (const void *)T_TOOLS_HOOKS_3,
    (const void *)tools_span,
    (const void *)T_TOOLS_HOOKS_5,
    (const void *)tools_buffer2,
};

static void tools_tls_event(void *record)
{
    (void)record;
}

static const void *const tools_tls[4] = {
    SLOTS(4),
    (const void *)T_TOOLS_TLS_1,
    (const void *)tools_tls_event,
    (const void *)T_TOOLS_TLS_3,
};

/* ---- CONTEXT_LOCAL_STORAGE_INTERFACE_V0301 ---------------------------------------------- */

typedef void (*cls_dtor)(CUcontext ctx, void *key, void *value);

struct cls_entry {
    CUcontext ctx;
    void *key, *value;
    cls_dtor dtor;
};

static pthread_mutex_t cls_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cls_entry *cls; /* guarded by cls_mu */
static size_t ncls, cap_cls;

static CUresult cls_ctx(CUcontext in, CUcontext *out)
{
    if (in) {
        *out = in;
        return CUDA_SUCCESS;
    }
    CUresult rc = cuCtxGetCurrent(out);
    if (rc == CUDA_SUCCESS && !*out)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    return rc;
}

/* Index of (CTX, KEY) or -1; caller holds cls_mu. */
static long cls_find(CUcontext ctx, const void *key)
{
    for (size_t i = 0; i < ncls; i++)
        if (cls[i].ctx == ctx && cls[i].key == key)
            return (long)i;
    return -1;
}

/* [0]: stores VALUE under KEY for CTX (NULL: the current context); DTOR runs when the context
 * goes away. */
static CUresult cls_put(CUcontext ctx, void *key, void *value, cls_dtor dtor)
{
    CUresult rc = cls_ctx(ctx, &ctx);
    if (rc)
        return rc;
    pthread_mutex_lock(&cls_mu);
    long i = cls_find(ctx, key);
    if (i < 0 && ncls == cap_cls) {
        size_t ncap = cap_cls ? cap_cls * 2 : 16;
        struct cls_entry *n = realloc(cls, ncap * sizeof(*n));
        if (!n) {
            pthread_mutex_unlock(&cls_mu);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        cls = n;
        cap_cls = ncap;
    }
    if (i < 0)
        i = (long)ncls++;
    cls[i] = (struct cls_entry){ctx, key, value, dtor};
    pthread_mutex_unlock(&cls_mu);
    return CUDA_SUCCESS;
}

/* [1]: forgets KEY of CTX (its destructor does not run). */
static CUresult cls_delete(CUcontext ctx, void *key)
{
    CUresult rc = cls_ctx(ctx, &ctx);
    if (rc)
        return rc;
    pthread_mutex_lock(&cls_mu);
    long i = cls_find(ctx, key);
    if (i >= 0)
        cls[i] = cls[--ncls];
    pthread_mutex_unlock(&cls_mu);
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* [2]: the value under KEY for CTX (NULL: current); CUDA_ERROR_NOT_FOUND when none. */
static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = cls_ctx(ctx, &ctx);
    if (rc)
        return rc;
    pthread_mutex_lock(&cls_mu);
    long i = cls_find(ctx, key);
    *value = i >= 0 ? cls[i].value : NULL;
    pthread_mutex_unlock(&cls_mu);
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static const void *const cls_table[4] = {
    (const void *)cls_put,
    (const void *)cls_delete,
    (const void *)cls_get,
    NULL,
};

void tf_exptab_ctx_gone(CUcontext ctx)
{
    for (;;) {
        struct cls_entry e = {0};
        pthread_mutex_lock(&cls_mu);
        for (size_t i = 0; i < ncls; i++)
            if (cls[i].ctx == ctx) {
                e = cls[i];
                cls[i] = cls[--ncls];
                break;
            }
        pthread_mutex_unlock(&cls_mu);
        if (!e.ctx)
            return;
        if (e.dtor)
            e.dtor(ctx, e.key, e.value);
    }
}

/* ---- CONTEXT_CHECKS ------------------------------------------------------------------------ */

/* [2]: whether CTX is a wrapper around another context (green contexts): never here. */
static CUresult ctx_check(CUcontext ctx, unsigned *wrapped, void **inner)
{
    (void)ctx;
    if (wrapped)
        *wrapped = 0;
    if (inner)
        *inner = NULL;
    return CUDA_SUCCESS;
}

static unsigned ctx_check_flags(void)
{
    return 0;
}

static const void *const ctx_checks[4] = {
    SLOTS(4),
    (const void *)T_CTX_CHECKS_1,
    (const void *)ctx_check,
    (const void *)ctx_check_flags,
};

/* ---- INTEGRITY_CHECK ---------------------------------------------------------------------- */

static CUresult integrity_check(unsigned version, uint64_t unix_seconds, uint64_t out[2]);

static const void *const integrity_table[3] = {
    SLOTS(3),
    (const void *)integrity_check,
    NULL,
};

/* [1]: the answer the runtime expects from a genuine driver (integrity.h). */
static CUresult integrity_check(unsigned version, uint64_t unix_seconds, uint64_t out[2])
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    int ndev = 0, drv = 0;
    CUresult rc;
    if ((rc = cuDriverGetVersion(&drv)) || (rc = cuDeviceGetCount(&ndev)))
        return rc;
    struct tf_integrity_dev *devs = calloc(ndev > 0 ? (size_t)ndev : 1, sizeof(*devs));
    if (!devs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < ndev && rc == CUDA_SUCCESS; i++) {
        CUuuid u;
        int dom = 0, bus = 0, dev = 0;
        if ((rc = cuDeviceGetUuid(&u, i)) ||
            (rc = cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, i)) ||
            (rc = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i)) ||
            (rc = cuDeviceGetAttribute(&dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, i)))
            break;
        memcpy(devs[i].uuid, u.bytes, 16);
        devs[i].pci_domain = dom;
        devs[i].pci_bus = bus;
        devs[i].pci_device = dev;
    }
    if (rc == CUDA_SUCCESS) {
        struct tf_integrity_in in = {
            .driver_version = (uint32_t)drv,
            .version = version,
            .pid = (uint32_t)getpid(),
            .thread = (uint32_t)(uintptr_t)pthread_self(),
            .cudart_table = (uint64_t)(uintptr_t)cudart_interface,
            .integrity_table = (uint64_t)(uintptr_t)integrity_table,
            .fn = (uint64_t)(uintptr_t)integrity_table[1],
            .unix_seconds = unix_seconds,
        };
        tf_integrity_answer(&in, devs, (size_t)ndev, out);
        if (tf_log_enabled(TF_LOG_DEBUG))
            tf_log(TF_LOG_DEBUG, SUBSYS, "INTEGRITY_CHECK: version %u, %d devices", version, ndev);
    }
    free(devs);
    return rc;
}

/* ---- cuGetExportTable --------------------------------------------------------------------- */

struct table {
    uint8_t id[16];
    const char *name;
    const void *const *table;
};

static const struct table tables[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
      0xf9},
     "CUDART_INTERFACE",
     cudart_interface},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
      0x66},
     "TOOLS_RUNTIME_CALLBACK_HOOKS",
     tools_hooks},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
      0xdc},
     "TOOLS_TLS",
     tools_tls},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
      0x93},
     "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301",
     cls_table},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
      0x7e},
     "CONTEXT_CHECKS",
     ctx_checks},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
      0xf2},
     "INTEGRITY_CHECK",
     integrity_table},
};

/* Tables the runtime asks for that a driver may lack, answered NOT_FOUND on purpose (logged at
 * debug): the runtime's probe for a bootstrap that bypasses CUDART_INTERFACE. */
static const uint8_t absent_ids[][16] = {
    {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d,
     0xd9},
};

/* UUIDs asked for that we do not provide, each logged once. */
static pthread_mutex_t unknown_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t unknown_ids[32][16];
static size_t nunknown;

static void log_unknown(const CUuuid *id)
{
    pthread_mutex_lock(&unknown_mu);
    for (size_t i = 0; i < nunknown; i++)
        if (memcmp(unknown_ids[i], id->bytes, 16) == 0) {
            pthread_mutex_unlock(&unknown_mu);
            return;
        }
    if (nunknown < sizeof(unknown_ids) / sizeof(unknown_ids[0]))
        memcpy(unknown_ids[nunknown++], id->bytes, 16);
    pthread_mutex_unlock(&unknown_mu);
    const unsigned char *b = (const unsigned char *)id->bytes;
    int expected = 0;
    for (size_t i = 0; i < sizeof(absent_ids) / sizeof(absent_ids[0]); i++)
        expected |= memcmp(absent_ids[i], b, 16) == 0;
    tf_log(expected ? TF_LOG_DEBUG : TF_LOG_INFO, SUBSYS,
           "cuGetExportTable: no table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x (CUDA_ERROR_NOT_FOUND)",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

CUresult tf_exptab_get(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        if (memcmp(tables[i].id, id->bytes, 16) == 0) {
            *table = tables[i].table;
            if (tf_log_enabled(TF_LOG_DEBUG))
                tf_log(TF_LOG_DEBUG, SUBSYS, "cuGetExportTable: %s", tables[i].name);
            return CUDA_SUCCESS;
        }
    *table = NULL;
    log_unknown(id);
    return CUDA_ERROR_NOT_FOUND;
}
