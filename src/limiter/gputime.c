/* SPDX-License-Identifier: Apache-2.0
 *
 * The launch cost model's view of the real driver (src/limits/costmodel.h): timing events
 * recorded on the app's own streams, queried without waiting, always called with the
 * re-entrancy depth raised (so a driver calling its own exports is not counted) and with the
 * thread in relaxed stream-capture mode (so an app capturing a graph on another thread in
 * global mode is never disturbed by our calls). The same calls on a GPU and on the simulated
 * one.
 */
#include "limiter/pass.h"

#include "limits/costmodel.h"

#include <time.h>

static int ctx_current(void *u, uintptr_t *ctx)
{
    (void)u;
    CUcontext c = NULL;
    CUresult rc;
    TF_CALL(rc, cuCtxGetCurrent, &c);
    *ctx = (uintptr_t)c;
    return rc == CUDA_SUCCESS ? 0 : TF_GPU_FAILED;
}

static int event_create(void *u, uintptr_t *ev)
{
    (void)u;
    if (!tf__L.real.cuEventCreate)
        return TF_GPU_UNSUPPORTED;
    CUevent e = NULL;
    CUresult rc;
    TF_CALL(rc, cuEventCreate, &e, CU_EVENT_DEFAULT);
    *ev = (uintptr_t)e;
    return rc == CUDA_SUCCESS               ? 0
           : rc == CUDA_ERROR_NOT_SUPPORTED ? TF_GPU_UNSUPPORTED
                                            : TF_GPU_FAILED;
}

static void event_destroy(void *u, uintptr_t ev)
{
    (void)u;
    CUresult rc;
    TF_CALL(rc, cuEventDestroy_v2, (CUevent)ev);
    (void)rc;
}

static int record(void *u, uintptr_t ev, uintptr_t stream, int ptsz)
{
    (void)u;
    CUresult rc;
    if (ptsz && tf__L.real.cuEventRecord_ptsz) {
        TF_CALL(rc, cuEventRecord_ptsz, (CUevent)ev, (CUstream)stream);
    } else {
        /* A _ptsz launch on stream 0 meant the per-thread default stream. */
        CUstream s = ptsz && !stream ? CU_STREAM_PER_THREAD : (CUstream)stream;
        TF_CALL(rc, cuEventRecord, (CUevent)ev, s);
    }
    return rc == CUDA_SUCCESS ? 0 : TF_GPU_FAILED;
}

static int query(void *u, uintptr_t ev)
{
    (void)u;
    CUresult rc;
    TF_CALL(rc, cuEventQuery, (CUevent)ev);
    return rc == CUDA_SUCCESS ? 0 : rc == CUDA_ERROR_NOT_READY ? TF_GPU_PENDING : TF_GPU_FAILED;
}

/* cuEventElapsedTime_v2 (CUDA 12.8+), else the original export of that name. */
static CUresult (*elapsed_v1)(float *, CUevent, CUevent);

static int elapsed_ns(void *u, uintptr_t a, uintptr_t b, uint64_t *ns)
{
    (void)u;
    float ms = 0;
    CUresult rc;
    if (tf__L.real.cuEventElapsedTime_v2) {
        TF_CALL(rc, cuEventElapsedTime_v2, &ms, (CUevent)a, (CUevent)b);
    } else if (elapsed_v1) {
        tf__depth++;
        rc = elapsed_v1(&ms, (CUevent)a, (CUevent)b);
        tf__depth--;
    } else {
        return TF_GPU_UNSUPPORTED;
    }
    if (rc != CUDA_SUCCESS || !(ms >= 0))
        return TF_GPU_FAILED;
    *ns = (uint64_t)((double)ms * 1e6 + 0.5);
    return 0;
}

static int capturing(void *u, uintptr_t stream, int ptsz)
{
    (void)u;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc;
    if (ptsz && tf__L.real.cuStreamIsCapturing_ptsz)
        TF_CALL(rc, cuStreamIsCapturing_ptsz, (CUstream)stream, &st);
    else if (tf__L.real.cuStreamIsCapturing)
        TF_CALL(rc, cuStreamIsCapturing, ptsz && !stream ? CU_STREAM_PER_THREAD : (CUstream)stream,
                &st);
    else
        return 0; /* a driver without graphs captures nothing */
    return rc != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void enter(void *u, int *saved)
{
    (void)u;
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult rc;
    TF_CALL(rc, cuThreadExchangeStreamCaptureMode, &m);
    *saved = rc == CUDA_SUCCESS ? (int)m : -1;
}

static void leave(void *u, int saved)
{
    (void)u;
    if (saved < 0)
        return;
    CUstreamCaptureMode m = (CUstreamCaptureMode)saved;
    CUresult rc;
    TF_CALL(rc, cuThreadExchangeStreamCaptureMode, &m);
    (void)rc;
}

static void nap(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

void tf__gpu_timer(struct tf_gpu_timer *t)
{
    if (!tf__L.real.cuEventElapsedTime_v2)
        elapsed_v1 =
            (CUresult(*)(float *, CUevent, CUevent))tf__real_cuda_sym("cuEventElapsedTime");
    *t = (struct tf_gpu_timer){
        .ctx_current = ctx_current,
        .event_create = event_create,
        .event_destroy = event_destroy,
        .record = record,
        .query = query,
        .elapsed_ns = elapsed_ns,
        .capturing = capturing,
        .enter = tf__L.real.cuThreadExchangeStreamCaptureMode ? enter : NULL,
        .leave = tf__L.real.cuThreadExchangeStreamCaptureMode ? leave : NULL,
        .now_ns = tf__now_ns,
        .nap = nap,
    };
}
