/* SPDX-License-Identifier: Apache-2.0
 *
 * The limiter's pointer -> size table: frees find exactly what allocations stored, a failed
 * free puts the entry back, a destroyed context takes its allocations, the table grows past
 * its first level, and concurrent threads allocating and freeing never lose or double an
 * entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limiter/ptrtab.h"

#include <pthread.h>
#include <stdatomic.h>

static void free_gives_back_exactly_what_alloc_stored(void **state)
{
    static struct tf_ptrtab t;
    memset(&t, 0, sizeof(t));
    assert_true(tf_ptrtab_put(&t, 0x7000, 4096, 1, 0xc1));
    assert_true(tf_ptrtab_put(&t, 0x9000, 100, 0, 0xc1));
    struct tf_ptrtab_val v;
    uintptr_t h = tf_ptrtab_take(&t, 0x7000, &v);
    assert_true(h != 0);
    assert_int_equal(v.bytes, 4096);
    assert_int_equal(v.idx, 1);
    assert_int_equal(v.ctx, 0xc1);
    /* While claimed it is invisible to another free of the same pointer. */
    struct tf_ptrtab_val w;
    assert_int_equal(tf_ptrtab_take(&t, 0x7000, &w), 0);
    /* The driver refused the free: it comes back. */
    tf_ptrtab_restore(h);
    h = tf_ptrtab_take(&t, 0x7000, &v);
    assert_true(h != 0);
    tf_ptrtab_done(h);
    assert_int_equal(tf_ptrtab_take(&t, 0x7000, &v), 0);
    assert_false(tf_ptrtab_get(&t, 0x7000, &v));
    assert_true(tf_ptrtab_get(&t, 0x9000, &v));
    assert_int_equal(v.bytes, 100);
    /* Unknown pointers are not tracked. */
    assert_int_equal(tf_ptrtab_take(&t, 0x1234, &v), 0);
    tf_ptrtab_free(&t);
}

static int64_t swept_bytes;

static void count_swept(const struct tf_ptrtab_val *v, void *arg)
{
    swept_bytes += (int64_t)v->bytes;
}

static void destroyed_context_takes_its_allocations(void **state)
{
    static struct tf_ptrtab t;
    memset(&t, 0, sizeof(t));
    for (uint64_t i = 1; i <= 100; i++)
        assert_true(tf_ptrtab_put(&t, i * 0x1000, i, 0, i % 2 ? 0xaa : 0xbb));
    swept_bytes = 0;
    assert_int_equal(tf_ptrtab_sweep_ctx(&t, 0xaa, count_swept, NULL), 50);
    assert_int_equal(swept_bytes, 2500); /* 1 + 3 + ... + 99 */
    struct tf_ptrtab_val v;
    assert_int_equal(tf_ptrtab_take(&t, 0x1000, &v), 0);
    assert_true(tf_ptrtab_take(&t, 0x2000, &v) != 0);
    tf_ptrtab_free(&t);
}

static void table_grows_beyond_its_first_level(void **state)
{
    static struct tf_ptrtab t;
    memset(&t, 0, sizeof(t));
    const uint64_t n = 50000; /* > 4096 + 8192 + 16384 */
    for (uint64_t i = 1; i <= n; i++)
        assert_true(tf_ptrtab_put(&t, i << 12, i, 0, 0));
    assert_non_null(atomic_load(&t.level[2]));
    for (uint64_t i = 1; i <= n; i++) {
        struct tf_ptrtab_val v;
        uintptr_t h = tf_ptrtab_take(&t, i << 12, &v);
        assert_true(h != 0);
        assert_int_equal(v.bytes, i);
        tf_ptrtab_done(h);
    }
    /* Tombstones are reused. */
    for (uint64_t i = 1; i <= n; i++)
        assert_true(tf_ptrtab_put(&t, (i << 12) + 1, i, 0, 0));
    tf_ptrtab_reset(&t);
    struct tf_ptrtab_val v;
    assert_int_equal(tf_ptrtab_take(&t, (5 << 12) + 1, &v), 0);
    tf_ptrtab_free(&t);
}

struct worker {
    struct tf_ptrtab *t;
    int id;
    _Atomic(long) *errors;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (uint64_t round = 0; round < 200; round++) {
        for (uint64_t i = 0; i < 100; i++) {
            uint64_t key = ((uint64_t)w->id << 40) | (round << 20) | (i << 4) | 1;
            if (!tf_ptrtab_put(w->t, key, key & 0xffff, (uint32_t)w->id, 0))
                atomic_fetch_add(w->errors, 1);
        }
        for (uint64_t i = 0; i < 100; i++) {
            uint64_t key = ((uint64_t)w->id << 40) | (round << 20) | (i << 4) | 1;
            struct tf_ptrtab_val v;
            uintptr_t h = tf_ptrtab_take(w->t, key, &v);
            if (!h || v.bytes != (key & 0xffff) || v.idx != (uint32_t)w->id)
                atomic_fetch_add(w->errors, 1);
            if (h)
                tf_ptrtab_done(h);
        }
    }
    return NULL;
}

static void threads_allocating_and_freeing_never_lose_an_entry(void **state)
{
    static struct tf_ptrtab t;
    memset(&t, 0, sizeof(t));
    _Atomic(long) errors = 0;
    pthread_t th[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.t = &t, .id = i + 1, .errors = &errors};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&errors), 0);
    tf_ptrtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(free_gives_back_exactly_what_alloc_stored),
        cmocka_unit_test(destroyed_context_takes_its_allocations),
        cmocka_unit_test(table_grows_beyond_its_first_level),
        cmocka_unit_test(threads_allocating_and_freeing_never_lose_an_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
