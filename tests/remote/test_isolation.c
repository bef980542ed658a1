/* SPDX-License-Identifier: Apache-2.0
 *
 * Tenants of one tf-worker attacking each other or the worker, on the simulated GPU: buffering
 * module images without bound. Each test is written as the attack, by a hand-driven protocol
 * peer (rawconn.h) or a real client program (libtf_client in a forked child, e2e.h).
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

static struct e2e_worker W;
static uint8_t rep[TF_PROTO_MAX_PAYLOAD];

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

static int load(int fd, uint64_t ctx, unsigned serial)
{
    uint8_t p[TF_PROTO_SIZE_module_load_req];
    struct tf_msg_module_load_req m = {.ctx = ctx,
                                       .module = TF_PROTO_HANDLE(TF_PROTO_H_MODULE, serial)};
    tf_msg_module_load_req_put(p, &m);
    return raw_call(fd, TF_OP_MODULE_LOAD, p, sizeof(p), NULL, 0, rep, sizeof(rep));
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
    assert_int_equal(load(other, octx, 1), CUDA_ERROR_OUT_OF_MEMORY);
    /* a small image still fits next to the hog's */
    upload(other, 1000);
    int r = load(other, octx, 2);
    assert_true(r != CUDA_ERROR_OUT_OF_MEMORY && r != CUDA_SUCCESS); /* (junk: the driver's no) */
    close(hog);
    /* the hog's budget comes back with its connection */
    for (int tries = 0; tries < 100; tries++) {
        upload(other, 700 * 1024);
        r = load(other, octx, (unsigned)(3 + tries));
        if (r != CUDA_ERROR_OUT_OF_MEMORY)
            break;
        usleep(20000);
    }
    assert_true(r != CUDA_ERROR_OUT_OF_MEMORY && r != -1);
    close(other);
    e2e_stop(&W);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_uploads_share_one_worker_wide_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
