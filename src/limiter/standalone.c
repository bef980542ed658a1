/* SPDX-License-Identifier: Apache-2.0
 *
 * The standalone controller: without a hypervisor (TF_VRAM_LIMIT / TF_COMPUTE_PERCENT and
 * no usable TF_SHM_PATH) the limiter keeps a private region and runs the same limit engine
 * as the hypervisor on one thread of the process, measuring this process's GPU time through
 * the real NVML (resolved privately, so our own NVML hooks are never measured). Without
 * NVML the compute limit still applies, open loop at the feed-forward rate, and says so.
 */
#include "limiter/limiter.h"

#include "common/log.h"
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"

#include <stdlib.h>

static _Atomic(int) started;

static void *resolve_real(void *handle, const char *sym)
{
    return tf__real_dlsym(handle, sym);
}

void tf__standalone_start(void)
{
    int expect = 0;
    if (!tf__L.env_has_compute || !atomic_compare_exchange_strong(&started, &expect, 1))
        return;
    uint32_t period_ms = 100;
    const char *p = getenv("TF_LIMITER_PERIOD_MS");
    if (p && atoi(p) >= 10 && atoi(p) <= 5000)
        period_ms = (uint32_t)atoi(p);
    char err[256] = "";
    const char *lib = getenv("TF_LIMITER_LIBNVML");
    struct tf_nvml *nv;
    if (tf_nvml_open(lib && *lib ? lib : NULL, resolve_real, &nv, err, sizeof(err)) != 0) {
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "compute limit without feedback (%s): enforced open loop at the limit rate", err);
        return;
    }
    struct tf_engine_opts o = {
        .period_ms = period_ms,
        .usage = {.sample = tf_nvml_sample, .ctx = nv},
        .self_owner = tf__L.owner ? tf__L.owner : tf_proc_self_owner(),
        .pidns = tf_proc_pidns(0),
    };
    /* The engine, NVML and the thread live as long as the process. */
    struct tf_engine *e = tf_engine_new(&o);
    struct tf_engine_thread *th;
    if (!e || tf_engine_add(e, tf__L.r, "standalone") < 0 ||
        tf_engine_thread_start(e, "tf-limiter", &th) != 0) {
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "cannot start the compute controller: enforced open loop at the limit rate");
        tf_nvml_close(nv);
        tf_engine_destroy(e);
        return;
    }
    tf_log(TF_LOG_INFO, TF_LIM_SUBSYS, "standalone compute limit %u.%02u%%, controller every %u ms",
           tf__L.env_bp / 100, tf__L.env_bp % 100, period_ms);
}
