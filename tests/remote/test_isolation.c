/* SPDX-License-Identifier: Apache-2.0
 *
 * Tenants of one tf-worker attacking each other or the worker, on the simulated GPU: reading
 * and overwriting another client's device memory from a kernel, holding VRAM past the hard
 * limit (frees the driver refused, module variables), buffering module
 * images without bound, and filing an image under another image's digest. Each test is written as
 * the attack, by a hand-driven protocol peer (rawconn.h) or a real client program (libtf_client in
 * a forked child, e2e.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e.h"
#include "rawconn.h"
#include "remote/sha256.h"

static struct e2e_worker W;
static uint8_t rep[TF_PROTO_MAX_PAYLOAD];
static char *oob_ptx;

#define MiB (1024ull * 1024ull)

/* ---- device memory of another tenant ----------------------------------------------------------
 */

struct victim {
    int ready[2], done[2];
};

/* Tenant A: fills a buffer, tells the attacker where it is, waits, checks it is unchanged. */
static int c_victim(void *arg)
{
    struct victim *v = arg;
    CUdevice dev;
    CUcontext c;
    CUdeviceptr p;
    E2E_CU(cuInit(0));
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuCtxCreate(&c, NULL, 0, dev));
    int secret[64], back[64];
    for (int i = 0; i < 64; i++)
        secret[i] = i * 7 + 3;
    E2E_CU(cuMemAlloc(&p, sizeof(secret)));
    E2E_CU(cuMemcpyHtoD(p, secret, sizeof(secret)));
    uint64_t addr = p;
    E2E_CHECK(write(v->ready[1], &addr, sizeof(addr)) == sizeof(addr));
    char ch;
    E2E_CHECK(read(v->done[0], &ch, 1) == 1);
    E2E_CU(cuCtxSynchronize()); /* not broken by the attacker's fault */
    E2E_CU(cuMemcpyDtoH(back, p, sizeof(back)));
    E2E_CHECK(memcmp(back, secret, sizeof(secret)) == 0);
    E2E_CU(cuCtxDestroy(c));
    return 0;
}

/* Tenant B: a kernel writing 42 at A's address (known: the first guess was right). */
static int c_attacker(void *arg)
{
    uint64_t target = *(uint64_t *)arg;
    CUdevice dev;
    CUcontext c;
    CUmodule m;
    CUfunction f;
    E2E_CU(cuInit(0));
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuCtxCreate(&c, NULL, 0, dev));
    E2E_CU(cuModuleLoadData(&m, oob_ptx));
    E2E_CU(cuModuleGetFunction(&f, m, "write_oob"));
    CUdeviceptr p = target;
    long long off = 0;
    void *args[] = {&p, &off};
    E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    E2E_CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS, "cuCtxSynchronize");
    return 0;
}

/* The attack: two clients of one tf-worker; B's kernel overwrote A's buffer at an address
 * guessed on the first try, because the simulated GPU's kernels saw every context's memory.
 * Each client has its own context on the worker, and a kernel touching memory its context
 * does not own faults, as on hardware: B's kernel gets CUDA_ERROR_ILLEGAL_ADDRESS, A's data
 * and context are untouched. */
static void a_kernel_cannot_touch_another_clients_memory(void **state)
{
    e2e_start(&W, 0, NULL);
    struct victim v;
    assert_int_equal(pipe(v.ready), 0);
    assert_int_equal(pipe(v.done), 0);
    pid_t p = e2e_spawn(c_victim, &v);
    uint64_t addr = 0;
    assert_int_equal(read(v.ready[0], &addr, sizeof(addr)), (ssize_t)sizeof(addr));
    assert_int_equal(e2e_run(c_attacker, &addr, 30), 0);
    assert_int_equal(write(v.done[1], "x", 1), 1);
    assert_int_equal(e2e_wait(p, 30), 0);
    for (int i = 0; i < 2; i++) {
        close(v.ready[i]);
        close(v.done[i]);
    }
    e2e_stop(&W);
}

/* ---- hard VRAM limit: every byte a tenant holds -----------------------------------------------
 */

/* Breaks the current context with an out-of-bounds write, as a faulting kernel does. */
static int break_context(CUdeviceptr near)
{
    CUmodule mod;
    CUfunction f;
    E2E_CU(cuModuleLoadData(&mod, oob_ptx));
    E2E_CU(cuModuleGetFunction(&f, mod, "write_oob"));
    long long off = 1ll << 40;
    void *args[] = {&near, &off};
    E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    E2E_CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS, "cuCtxSynchronize");
    return 0;
}

struct step {
    int ready[2], go[2];
};

/* The attack: fault a kernel so the context breaks, then free: the driver refuses the free (the
 * memory stays allocated) but the worker used to give the reservation back, so the tenant
 * could allocate the limit again (3.6 GiB held under a 1 GiB cap). This client breaks its
 * context and frees; a second client of the same worker (the limit is the worker's) checks. */
static int c_break_and_free(void *arg)
{
    struct step *st = arg;
    CUdevice dev;
    CUcontext a;
    CUdeviceptr big;
    E2E_CU(cuInit(0));
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuCtxCreate(&a, NULL, 0, dev));
    E2E_CU(cuMemAlloc(&big, 700 * MiB));
    int rc = break_context(big);
    if (rc)
        return rc;
    (void)cuMemFree(big); /* refused by the broken context */
    (void)cuCtxSynchronize();
    char c;
    E2E_CHECK(write(st->ready[1], "x", 1) == 1);
    E2E_CHECK(read(st->go[0], &c, 1) == 1);
    (void)cuCtxDestroy(a); /* destroying the context frees its memory */
    (void)cuCtxSynchronize();
    E2E_CHECK(write(st->ready[1], "x", 1) == 1);
    E2E_CHECK(read(st->go[0], &c, 1) == 1);
    return 0;
}

static int c_alloc_700(void *arg)
{
    CUdevice dev;
    CUcontext c;
    CUdeviceptr p;
    E2E_CU(cuInit(0));
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuCtxCreate(&c, NULL, 0, dev));
    if (arg) { /* expected to fail: the 700 MiB are still held */
        E2E_CHECK_CU(cuMemAlloc(&p, 700 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
        size_t fr, tot;
        E2E_CU(cuMemGetInfo(&fr, &tot));
        E2E_CHECK(tot == 1024 * MiB && fr <= 324 * MiB);
    } else {
        /* A destroy is fire-and-forget (docs/remote.md): the other tenant's memory comes back
         * once the worker has run it, not when its cuCtxDestroy returned. */
        CUresult r;
        int tries = 0;
        while ((r = cuMemAlloc(&p, 700 * MiB)) == CUDA_ERROR_OUT_OF_MEMORY && ++tries < 500)
            usleep(10 * 1000);
        E2E_CHECK_CU(r, CUDA_SUCCESS, "cuMemAlloc after the other context's destroy");
        E2E_CU(cuMemFree(p));
    }
    E2E_CU(cuCtxDestroy(c));
    return 0;
}

static void a_free_the_driver_refused_keeps_its_charge(void **state)
{
    const char *const extra[] = {"--vram-limit", "1Gi", NULL};
    e2e_start(&W, 0, extra);
    struct step st;
    assert_int_equal(pipe(st.ready), 0);
    assert_int_equal(pipe(st.go), 0);
    pid_t p = e2e_spawn(c_break_and_free, &st);
    char c;
    assert_int_equal(read(st.ready[0], &c, 1), 1);
    assert_int_equal(e2e_run(c_alloc_700, (void *)1, 30), 0);
    assert_int_equal(write(st.go[1], "x", 1), 1);
    assert_int_equal(read(st.ready[0], &c, 1), 1);
    assert_int_equal(e2e_run(c_alloc_700, NULL, 30), 0);
    assert_int_equal(write(st.go[1], "x", 1), 1);
    assert_int_equal(e2e_wait(p, 30), 0);
    for (int i = 0; i < 2; i++) {
        close(st.ready[i]);
        close(st.go[i]);
    }
    e2e_stop(&W);
}

/* A module whose only content is one __device__ array of N bytes. */
static char *module_with_array(uint64_t n)
{
    static char ptx[256];
    snprintf(ptx, sizeof(ptx),
             ".version 8.0\n.target sm_80\n.address_size 64\n"
             ".visible .global .align 4 .b8 big[%llu];\n",
             (unsigned long long)n);
    return ptx;
}

/* The attack: module .global arrays were never charged: 7 GiB held under a 1 GiB cap while
 * cuMemGetInfo reported 1 GiB free. Now a module's variables are charged when it loads. */
static int c_module_variables_are_charged(void *arg)
{
    (void)arg;
    CUdevice dev;
    CUcontext c;
    CUmodule m1, m2;
    CUdeviceptr p;
    E2E_CU(cuInit(0));
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuCtxCreate(&c, NULL, 0, dev));
    E2E_CHECK_CU(cuModuleLoadData(&m1, module_with_array(2048 * MiB)), CUDA_ERROR_OUT_OF_MEMORY,
                 "cuModuleLoadData (2 GiB of variables)");
    E2E_CU(cuModuleLoadData(&m1, module_with_array(600 * MiB)));
    size_t fr, tot;
    E2E_CU(cuMemGetInfo(&fr, &tot));
    E2E_CHECK(tot == 1024 * MiB && fr <= 424 * MiB);
    E2E_CHECK_CU(cuMemAlloc(&p, 600 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
    E2E_CHECK_CU(cuModuleLoadData(&m2, module_with_array(600 * MiB)), CUDA_ERROR_OUT_OF_MEMORY,
                 "cuModuleLoadData (a second 600 MiB)");
    E2E_CU(cuModuleUnload(m1));
    E2E_CU(cuMemAlloc(&p, 600 * MiB));
    E2E_CU(cuMemFree(p));
    E2E_CU(cuCtxDestroy(c));
    return 0;
}

static void module_variables_count_against_the_limit(void **state)
{
    const char *const extra[] = {"--vram-limit", "1Gi", NULL};
    e2e_start(&W, 0, extra);
    assert_int_equal(e2e_run(c_module_variables_are_charged, NULL, 60), 0);
    e2e_stop(&W);
}

/* ---- module image buffering ----------------------------------------------------------------- */

static int connect_authed(void)
{
    int fd = raw_connect(W.addr);
    assert_true(fd >= 0);
    assert_int_equal(raw_hello(fd, E2E_TOKEN), CUDA_SUCCESS);
    return fd;
}

/* Uploads N bytes of (not even valid) module image, as BLOB_APPEND frames. */
static void upload(int fd, size_t n)
{
    static uint8_t junk[512 * 1024];
    memset(junk, 'x', sizeof(junk));
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof(junk) ? n - done : sizeof(junk);
        assert_int_equal(raw_send(fd, TF_OP_BLOB_APPEND, 0, NULL, 0, junk, k), 0);
        done += k;
    }
}

/* MODULE_LOAD of the image named DIGEST (FLAGS: TF_PROTO_LOAD_BY_DIGEST or 0). */
static int load_named(int fd, uint64_t ctx, unsigned serial, unsigned flags,
                      const uint8_t digest[TF_SHA256_LEN])
{
    uint8_t p[TF_PROTO_SIZE_module_load_req];
    struct tf_msg_module_load_req m = {
        .ctx = ctx, .module = TF_PROTO_HANDLE(TF_PROTO_H_MODULE, serial), .flags = flags};
    memcpy(m.digest, digest, TF_SHA256_LEN);
    tf_msg_module_load_req_put(p, &m);
    return raw_call(fd, TF_OP_MODULE_LOAD, p, sizeof(p), NULL, 0, rep, sizeof(rep));
}

/* MODULE_LOAD of what upload(N) sent, named by its true digest. */
static int load(int fd, uint64_t ctx, unsigned serial, size_t n)
{
    uint8_t *junk = malloc(n), d[TF_SHA256_LEN];
    assert_non_null(junk);
    memset(junk, 'x', n);
    tf_sha256(junk, n, d);
    free(junk);
    return load_named(fd, ctx, serial, 0, d);
}

/* The attack: every client could buffer 512 MiB of module image with no bound for the worker
 * as a whole (~32 GiB at 64 clients). With --module-buffer-limit 2Mi, one client's upload in
 * progress leaves the others only the rest: a second upload that does not fit is dropped and
 * its load fails with CUDA_ERROR_OUT_OF_MEMORY, and the budget comes back when the first
 * client goes. */
static void module_uploads_share_one_worker_wide_budget(void **state)
{
    const char *const extra[] = {"--module-buffer-limit", "2Mi", NULL};
    e2e_start(&W, 0, extra);
    int hog = connect_authed(), other = connect_authed();
    uint64_t hctx = raw_ctx(hog), octx = raw_ctx(other);
    assert_true(hctx && octx);
    upload(hog, 700 * 1024); /* held: 1 MiB of buffer */
    assert_int_equal(raw_call(hog, TF_OP_FLUSH, NULL, 0, NULL, 0, rep, sizeof(rep)), 0);
    upload(other, 700 * 1024);
    assert_int_equal(load(other, octx, 1, 700 * 1024), CUDA_ERROR_OUT_OF_MEMORY);
    /* a small image still fits next to the hog's */
    upload(other, 1000);
    int r = load(other, octx, 2, 1000);
    assert_true(r != CUDA_ERROR_OUT_OF_MEMORY && r != CUDA_SUCCESS); /* (junk: the driver's no) */
    close(hog);
    /* the hog's budget comes back with its connection */
    for (int tries = 0; tries < 100; tries++) {
        upload(other, 700 * 1024);
        r = load(other, octx, (unsigned)(3 + tries), 700 * 1024);
        if (r != CUDA_ERROR_OUT_OF_MEMORY)
            break;
        usleep(20000);
    }
    assert_true(r != CUDA_ERROR_OUT_OF_MEMORY && r != -1);
    close(other);
    e2e_stop(&W);
}

/* The attack: poisoning the worker's images by content. A client uploads its own image
 * under the digest of an image others load (oob.ptx here), hoping the worker keeps it under
 * that name and serves it to them. The worker hashes what it received: the load fails with
 * CUDA_ERROR_INVALID_IMAGE and nothing is kept (a load by that digest still asks for the
 * image); the true image, once sent, is what a load by digest gets, from any connection. */
static void an_image_is_kept_only_under_its_own_digest(void **state)
{
    (void)state;
    e2e_start(&W, 0, NULL);
    int evil = connect_authed(), user = connect_authed();
    uint64_t ectx = raw_ctx(evil), uctx = raw_ctx(user);
    assert_true(ectx && uctx);
    uint8_t d[TF_SHA256_LEN];
    size_t len = strlen(oob_ptx);
    tf_sha256(oob_ptx, len, d);
    upload(evil, 1000);
    assert_int_equal(load_named(evil, ectx, 1, 0, d), CUDA_ERROR_INVALID_IMAGE);
    struct tf_msg_module_load_rep mr;
    assert_int_equal(load_named(user, uctx, 1, TF_PROTO_LOAD_BY_DIGEST, d), CUDA_ERROR_NOT_FOUND);
    tf_msg_module_load_rep_get(rep, &mr);
    assert_int_equal(mr.need_image, 1);
    assert_int_equal(mr.nfuncs, 0);
    /* the true image: sent once, then named by any client */
    for (size_t off = 0; off < len;) {
        size_t k = len - off < 65536 ? len - off : 65536;
        assert_int_equal(raw_send(user, TF_OP_BLOB_APPEND, 0, NULL, 0, oob_ptx + off, k), 0);
        off += k;
    }
    assert_int_equal(load_named(user, uctx, 2, 0, d), CUDA_SUCCESS);
    tf_msg_module_load_rep_get(rep, &mr);
    uint32_t nfuncs = mr.nfuncs;
    assert_true(nfuncs > 0);
    assert_int_equal(load_named(evil, ectx, 2, TF_PROTO_LOAD_BY_DIGEST, d), CUDA_SUCCESS);
    tf_msg_module_load_rep_get(rep, &mr);
    assert_int_equal(mr.nfuncs, nfuncs);
    assert_int_equal(mr.need_image, 0);
    /* a load by digest with an upload pending drops the upload (its budget with it) */
    upload(evil, 1000);
    assert_int_equal(load_named(evil, ectx, 3, TF_PROTO_LOAD_BY_DIGEST, d), CUDA_SUCCESS);
    close(evil);
    close(user);
    e2e_stop(&W);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !(oob_ptx = e2e_slurp(argv[1]))) {
        fprintf(stderr, "usage: test_isolation OOB.ptx\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_kernel_cannot_touch_another_clients_memory),
        cmocka_unit_test(a_free_the_driver_refused_keeps_its_charge),
        cmocka_unit_test(module_variables_count_against_the_limit),
        cmocka_unit_test(module_uploads_share_one_worker_wide_budget),
        cmocka_unit_test(an_image_is_kept_only_under_its_own_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
