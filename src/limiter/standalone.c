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

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

static _Atomic(int) started;

struct ctl {
    struct tf_engine *e;
    struct tf_nvml *nv;
    uint32_t period_ms;
};

static void *controller_main(void *arg)
{
    struct ctl *c = arg;
    uint64_t next = tf__now_ns();
    for (;;) {
        next += (uint64_t)c->period_ms * 1000000u;
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
        tf_engine_step(c->e, tf__now_ns());
    }
    return NULL;
}

static void *resolve_real(void *handle, const char *sym)
{
    return tf__real_dlsym(handle, sym);
}

void tf__standalone_start(void)
{
    int expect = 0;
    if (!tf__L.env_has_compute || !atomic_compare_exchange_strong(&started, &expect, 1))
        return;
    struct ctl *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->period_ms = 100;
    const char *p = getenv("TF_LIMITER_PERIOD_MS");
    if (p && atoi(p) >= 10 && atoi(p) <= 5000)
        c->period_ms = (uint32_t)atoi(p);
    char err[256] = "";
    const char *lib = getenv("TF_LIMITER_LIBNVML");
    if (tf_nvml_open(lib && *lib ? lib : NULL, resolve_real, &c->nv, err, sizeof(err)) != 0) {
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "compute limit without feedback (%s): enforced open loop at the limit rate", err);
        free(c);
        return;
    }
    struct tf_engine_opts o = {
        .period_ms = c->period_ms,
        .usage = {.sample = tf_nvml_sample, .ctx = c->nv},
        .self_owner = tf__L.owner ? tf__L.owner : tf_proc_self_owner(),
        .pidns = tf_proc_pidns(0),
    };
    c->e = tf_engine_new(&o);
    if (!c->e || tf_engine_add(c->e, tf__L.r, "standalone") < 0) {
        tf_nvml_close(c->nv);
        tf_engine_destroy(c->e);
        free(c);
        return;
    }
    /* The app's signal handlers must never run on our thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, controller_main, c);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "cannot start the compute controller thread: enforced open loop");
        return;
    }
    pthread_setname_np(th, "tf-limiter");
    tf_log(TF_LOG_INFO, TF_LIM_SUBSYS, "standalone compute limit %u.%02u%%, controller every %u ms",
           tf__L.env_bp / 100, tf__L.env_bp % 100, c->period_ms);
}
