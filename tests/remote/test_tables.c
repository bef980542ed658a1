/* SPDX-License-Identifier: Apache-2.0
 *
 * The worker's per-client tables: handle ids and device-memory ranges, and the shared token
 * check. These decide what a client may touch. And the worker's module images by digest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "remote/auth.h"
#include "remote/htab.h"
#include "remote/rangeset.h"
#include "remote/worker/imgcache.h"
#include "remote/worker/staging.h"
#include "tf/protocol.h"

static void handle_table_survives_heavy_churn(void **state)
{
    enum { N = 5000 };
    static int vals[N];
    static char live[N];
    struct tf_htab h;
    tf_htab_init(&h, SIZE_MAX);
    unsigned seed = 7;
    for (int round = 0; round < 40000; round++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N);
        uint64_t key = TF_PROTO_HANDLE(TF_PROTO_H_STREAM, (uint64_t)i + 1);
        if (live[i]) {
            assert_ptr_equal(tf_htab_del(&h, key), &vals[i]);
            live[i] = 0;
        } else {
            assert_int_equal(tf_htab_put(&h, key, &vals[i]), 0);
            live[i] = 1;
        }
        if (round % 997 == 0) {
            size_t count = 0;
            for (int j = 0; j < N; j++) {
                uint64_t k = TF_PROTO_HANDLE(TF_PROTO_H_STREAM, (uint64_t)j + 1);
                assert_ptr_equal(tf_htab_get(&h, k), live[j] ? &vals[j] : NULL);
                count += live[j];
            }
            assert_int_equal(h.count, count);
        }
    }
    tf_htab_free(&h);
}

static void handle_table_rejects_duplicates_zero_and_overflow(void **state)
{
    struct tf_htab h;
    int v;
    tf_htab_init(&h, 2);
    assert_int_equal(tf_htab_put(&h, 0, &v), TF_EINVAL);
    assert_int_equal(tf_htab_put(&h, 5, NULL), TF_EINVAL);
    assert_int_equal(tf_htab_put(&h, 5, &v), 0);
    assert_int_equal(tf_htab_put(&h, 5, &v), TF_EEXIST);
    assert_int_equal(tf_htab_put(&h, 6, &v), 0);
    assert_int_equal(tf_htab_put(&h, 7, &v), TF_ENOSPC);
    assert_null(tf_htab_del(&h, 8));
    size_t pos = 0, n = 0;
    uint64_t k;
    void *val;
    while (tf_htab_next(&h, &pos, &k, &val))
        n++;
    assert_int_equal(n, 2);
    tf_htab_free(&h);
}

static void device_pointers_are_valid_only_inside_an_allocation(void **state)
{
    struct tf_rangeset rs;
    tf_rangeset_init(&rs, 100);
    assert_int_equal(tf_rangeset_add(&rs, 0x1000, 0x100, 0, 1), 0);
    assert_int_equal(tf_rangeset_add(&rs, 0x3000, 0x100, 0, 1), 0);
    assert_int_equal(tf_rangeset_add(&rs, 0x2000, 0x100, 0, 1), 0);
    assert_non_null(tf_rangeset_find(&rs, 0x1000, 0x100));
    assert_non_null(tf_rangeset_find(&rs, 0x10ff, 1));
    assert_non_null(tf_rangeset_find(&rs, 0x10ff, 0));
    assert_null(tf_rangeset_find(&rs, 0x10ff, 2));         /* runs past the end */
    assert_null(tf_rangeset_find(&rs, 0x1100, 0));         /* one past the end */
    assert_null(tf_rangeset_find(&rs, 0x0fff, 1));         /* before the start */
    assert_null(tf_rangeset_find(&rs, 0x1000, 0x1000));    /* spans into the gap */
    assert_null(tf_rangeset_find(&rs, UINT64_MAX - 1, 8)); /* wraps */
    /* Overlaps are refused; an exact repeat of a global (same owner) is accepted. */
    assert_int_equal(tf_rangeset_add(&rs, 0x10f0, 0x20, 0, 1), TF_EEXIST);
    assert_int_equal(tf_rangeset_add(&rs, 0x0ff0, 0x20, 0, 1), TF_EEXIST);
    assert_int_equal(tf_rangeset_add(&rs, 0x5000, 0, 0, 1), TF_EINVAL);
    assert_int_equal(tf_rangeset_add(&rs, UINT64_MAX - 4, 8, 0, 1), TF_EINVAL);
    assert_int_equal(tf_rangeset_add(&rs, 0x4000, 0x10, 9, 1), 0);
    assert_int_equal(tf_rangeset_add(&rs, 0x4000, 0x10, 9, 1), 0);
    /* Only the exact base of the right owner frees. */
    assert_int_equal(tf_rangeset_del(&rs, 0x1010, 0, NULL), TF_ENOENT);
    assert_int_equal(tf_rangeset_del(&rs, 0x4000, 0, NULL), TF_ENOENT);
    struct tf_range r;
    assert_int_equal(tf_rangeset_del(&rs, 0x2000, 0, &r), 0);
    assert_int_equal(r.size, 0x100);
    assert_null(tf_rangeset_find(&rs, 0x2000, 1));
    assert_int_equal(tf_rangeset_del_owner(&rs, 9), 1);
    assert_int_equal(rs.n, 2);
    tf_rangeset_free(&rs);
}

static void tokens_compare_exactly(void **state)
{
    const uint8_t *a = (const uint8_t *)"s3cret-token";
    assert_true(tf_auth_token_equal(a, 12, (const uint8_t *)"s3cret-token", 12));
    assert_false(tf_auth_token_equal(a, 12, (const uint8_t *)"s3cret-tokex", 12));
    assert_false(tf_auth_token_equal(a, 12, (const uint8_t *)"s3cret-toke", 11));
    assert_false(tf_auth_token_equal(a, 12, (const uint8_t *)"s3cret-token!", 13));
    assert_false(tf_auth_token_equal(a, 12, NULL, 0));
    assert_false(tf_auth_token_equal(a, 0, a, 0));
}

static void token_files_lose_their_trailing_newline_and_must_not_be_empty(void **state)
{
    char path[] = "/tmp/tf-token-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "abc123\n", 7), 7);
    close(fd);
    uint8_t buf[TF_PROTO_MAX_TOKEN];
    size_t len = 0;
    char err[256];
    assert_int_equal(tf_auth_token_file(path, buf, sizeof(buf), &len, err, sizeof(err)), 0);
    assert_int_equal(len, 6);
    assert_memory_equal(buf, "abc123", 6);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, " \n", 2), 2);
    close(fd);
    assert_int_equal(tf_auth_token_file(path, buf, sizeof(buf), &len, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "token is empty"));
    unlink(path);
    assert_int_equal(tf_auth_token_file(path, buf, sizeof(buf), &len, err, sizeof(err)), TF_EIO);
    assert_non_null(strstr(err, path));
}

static void client_token_comes_from_the_environment(void **state)
{
    uint8_t buf[TF_PROTO_MAX_TOKEN];
    size_t len;
    char err[256];
    unsetenv("TF_TOKEN");
    unsetenv("TF_TOKEN_FILE");
    assert_int_equal(tf_auth_token_env(buf, sizeof(buf), &len, err, sizeof(err)), TF_ENOENT);
    setenv("TF_TOKEN", "from-env", 1);
    assert_int_equal(tf_auth_token_env(buf, sizeof(buf), &len, err, sizeof(err)), 0);
    assert_int_equal(len, 8);
    unsetenv("TF_TOKEN");
}

static void staging_regions_are_fifo_and_never_overlap(void **state)
{
    enum { CAP = 1000, MAXE = 8 };
    static uint8_t owner[CAP];
    struct tf_stage st;
    assert_int_equal(tf_stage_init(&st, (uint8_t *)0x1000, CAP, MAXE), 0);
    unsigned seed = 1;
    int tag = 1, live = 0;
    for (int round = 0; round < 20000; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 8) % 400;
        size_t charge;
        long off = tf_stage_place(&st, n, &charge);
        if (off < 0 || (seed & 0x10)) {
            /* Full (or by chance): return the oldest region. */
            struct tf_stage_ent *e = tf_stage_oldest(&st);
            if (!e) {
                assert_true(off >= 0); /* an empty ring always has room */
                continue;
            }
            for (size_t i = 0; i < e->len; i++)
                assert_int_equal(owner[e->off + i], (uint8_t)(uintptr_t)e->ev);
            memset(owner + e->off, 0, e->len);
            tf_stage_pop(&st);
            live--;
            continue;
        }
        assert_true((size_t)off + n <= CAP);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(owner[off + i], 0); /* never overlaps a live region */
        uint8_t t = (uint8_t)(tag++ % 250 + 1);
        memset(owner + off, t, n);
        tf_stage_push(&st, (size_t)off, n, charge, (void *)(uintptr_t)t, 0);
        live++;
        assert_true(live <= MAXE);
        assert_true(st.used <= CAP);
    }
    tf_stage_free(&st);
}

static uint8_t *image(size_t n)
{
    uint8_t *p = malloc(n);
    assert_non_null(p);
    memset(p, 'i', n);
    return p;
}

static void kept_images_go_least_recently_used_first_and_never_while_in_use(void **state)
{
    (void)state;
    struct tf_imgcache c;
    tf_imgcache_init(&c);
    uint8_t d[3][TF_IMG_DIGEST_LEN];
    int64_t freed;
    struct tf_img *e[3];
    for (int i = 0; i < 3; i++) {
        memset(d[i], i + 1, TF_IMG_DIGEST_LEN);
        e[i] = tf_imgcache_put(&c, d[i], image(100), 100, 128, &freed);
        assert_non_null(e[i]);
        assert_int_equal(freed, 0);
    }
    tf_imgcache_unref(&c, e[0]);
    tf_imgcache_unref(&c, e[2]);
    /* 1 is in use; 0 was used before 2 */
    assert_int_equal(tf_imgcache_evict_one(&c), 128);
    assert_null(tf_imgcache_get(&c, d[0]));
    struct tf_img *again = tf_imgcache_get(&c, d[2]);
    assert_ptr_equal(again, e[2]);
    tf_imgcache_unref(&c, again);
    assert_int_equal(tf_imgcache_evict_one(&c), 128); /* 2, the only one not in use */
    assert_int_equal(tf_imgcache_evict_one(&c), 0);
    tf_imgcache_unref(&c, e[1]);
    struct tf_imgcache_stats st = tf_imgcache_stats(&c);
    assert_int_equal(st.loads_sent, 3);
    assert_int_equal(st.loads_cached, 1);
    assert_int_equal(st.bytes_sent, 3 * 99); /* without the loader's NUL */
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.evicted, 2);
    assert_int_equal(tf_imgcache_fini(&c), 128);
}

static void an_image_two_clients_raced_to_send_is_kept_once(void **state)
{
    (void)state;
    struct tf_imgcache c;
    tf_imgcache_init(&c);
    uint8_t d[TF_IMG_DIGEST_LEN] = {7};
    int64_t freed;
    struct tf_img *a = tf_imgcache_put(&c, d, image(10), 10, 16, &freed);
    struct tf_img *b = tf_imgcache_put(&c, d, image(10), 10, 16, &freed);
    assert_ptr_equal(a, b);
    assert_int_equal(freed, 16); /* the second copy's budget goes back */
    assert_int_equal(a->refs, 2);
    tf_imgcache_unref(&c, a);
    tf_imgcache_unref(&c, b);
    assert_int_equal(tf_imgcache_stats(&c).entries, 1);
    assert_int_equal(tf_imgcache_fini(&c), 16);
}

static void the_entry_count_is_bounded(void **state)
{
    (void)state;
    struct tf_imgcache c;
    tf_imgcache_init(&c);
    int64_t freed, total = 0;
    for (uint32_t i = 0; i < TF_IMGCACHE_MAX_ENTRIES + 10; i++) {
        uint8_t d[TF_IMG_DIGEST_LEN] = {0};
        memcpy(d, &i, sizeof(i));
        struct tf_img *e = tf_imgcache_put(&c, d, image(2), 2, 2, &freed);
        assert_non_null(e);
        tf_imgcache_unref(&c, e);
        total += freed;
    }
    assert_int_equal(tf_imgcache_stats(&c).entries, TF_IMGCACHE_MAX_ENTRIES);
    assert_int_equal(total, 2 * 10);
    uint8_t first[TF_IMG_DIGEST_LEN] = {0};
    assert_null(tf_imgcache_get(&c, first)); /* the oldest went */
    assert_int_equal(tf_imgcache_fini(&c), 2 * TF_IMGCACHE_MAX_ENTRIES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handle_table_survives_heavy_churn),
        cmocka_unit_test(handle_table_rejects_duplicates_zero_and_overflow),
        cmocka_unit_test(device_pointers_are_valid_only_inside_an_allocation),
        cmocka_unit_test(tokens_compare_exactly),
        cmocka_unit_test(token_files_lose_their_trailing_newline_and_must_not_be_empty),
        cmocka_unit_test(client_token_comes_from_the_environment),
        cmocka_unit_test(staging_regions_are_fifo_and_never_overlap),
        cmocka_unit_test(kept_images_go_least_recently_used_first_and_never_while_in_use),
        cmocka_unit_test(an_image_two_clients_raced_to_send_is_kept_once),
        cmocka_unit_test(the_entry_count_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
