/* SPDX-License-Identifier: Apache-2.0
 *
 * The compute-share controller against a simulated GPU (tests/limits/plant.c): the real
 * bucket and the real per-window controller, tenants with saturating kernels of different
 * lengths, in virtual time. Checks the HAMi-core failure modes do not happen here: caps
 * 30/60 and 10/90 are held to +-3 points after <= 2 s, kernel length does not matter,
 * limits can step, an oversubscribed device and a demand-limited app do not wind the
 * controller up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/controller.h"
#include "plant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define US UINT64_C(1000)
#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)
#define WINDOWS 16

static struct plant *new_plant(void)
{
    struct plant *p = calloc(1, sizeof(*p));
    plant_init(p, 100 * MS);
    p->true_up = true;
    return p;
}

/* Runs whole seconds FROM..TO (exclusive), storing each tenant's share per 1 s window. */
static void run_windows(struct plant *p, int from, int to, double share[][WINDOWS])
{
    for (int s = from; s < to; s++) {
        plant_run(p, (uint64_t)(s + 1) * SEC);
        for (int i = 0; i < p->ntenants; i++)
            share[i][s] = plant_take_share(p, i, SEC);
    }
}

static void expect_within(double share[][WINDOWS], int tenant, int from, int to, double want,
                          double tol)
{
    for (int s = from; s < to; s++) {
        if (fabs(share[tenant][s] - want) > tol) {
            char line[512];
            int n = 0;
            for (int k = 0; k < to && n < 400; k++)
                n += snprintf(line + n, sizeof(line) - (size_t)n, " %.3f", share[tenant][k]);
            fail_msg("tenant %d window %d: share %.3f, want %.2f +- %.2f (windows:%s)", tenant, s,
                     share[tenant][s], want, tol, line);
        }
    }
}

static void expect_at_most(double share[][WINDOWS], int tenant, int from, int to, double most)
{
    for (int s = from; s < to; s++)
        if (share[tenant][s] > most)
            fail_msg("tenant %d window %d: share %.3f above %.2f", tenant, s, share[tenant][s],
                     most);
}

static void two_tenants_capped_30_and_60_settle_within_2s(void **state)
{
    struct plant *p = new_plant();
    plant_add(p, 3000, 1 * MS, 4, 1.0);
    plant_add(p, 6000, 1 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 8, sh);
    expect_within(sh, 0, 2, 8, 0.30, 0.03);
    expect_within(sh, 1, 2, 8, 0.60, 0.03);
    free(p);
}

static void microsecond_kernels_are_capped_as_well_as_long_ones(void **state)
{
    struct plant *p = new_plant();
    plant_add(p, 3000, 20 * US, 4, 1.0);
    plant_add(p, 7000, 20 * US, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 6, sh);
    expect_within(sh, 0, 2, 6, 0.30, 0.03);
    expect_within(sh, 1, 2, 6, 0.70, 0.03);
    free(p);
}

static void single_tenant_capped_at_10_and_at_90_percent(void **state)
{
    uint32_t caps[2] = {1000, 9000};
    for (int k = 0; k < 2; k++) {
        struct plant *p = new_plant();
        plant_add(p, caps[k], 1 * MS, 4, 1.0);
        double sh[1][WINDOWS];
        run_windows(p, 0, 8, sh);
        expect_within(sh, 0, 2, 8, caps[k] / 10000.0, 0.03);
        free(p);
    }
}

static void hundred_ms_kernels_hold_their_cap_on_average(void **state)
{
    /* With 100 ms kernels a 1 s window holds only ~3 of the 30 % tenant's kernels, so single
     * windows quantise to +-10 points; the average over time must still be the cap. */
    struct plant *p = new_plant();
    plant_add(p, 3000, 100 * MS, 4, 1.0);
    plant_add(p, 7000, 100 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 14, sh);
    double a = 0, b = 0;
    for (int s = 4; s < 14; s++) {
        a += sh[0][s] / 10;
        b += sh[1][s] / 10;
    }
    assert_true(fabs(a - 0.30) <= 0.03);
    assert_true(fabs(b - 0.70) <= 0.05);
    free(p);
}

static void mixed_kernel_lengths_are_charged_by_gpu_time(void **state)
{
    /* HAMi charged per block count, so a tenant of long kernels ran away. Here one tenant
     * alternates 10 us and 10 ms kernels (same launch count, 1000x the GPU time). */
    struct plant *p = new_plant();
    int a = plant_add(p, 3000, 10 * US, 4, 1.0);
    p->t[a].kernel_ns_alt = 10 * MS;
    plant_add(p, 6000, 1 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 8, sh);
    expect_within(sh, 0, 2, 8, 0.30, 0.03);
    expect_within(sh, 1, 2, 8, 0.60, 0.03);
    free(p);
}

static void autoscaler_raises_a_limit_and_share_follows_within_2s(void **state)
{
    struct plant *p = new_plant();
    plant_add(p, 3000, 1 * MS, 4, 1.0);
    plant_add(p, 3000, 1 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 4, sh);
    p->t[0].limit_bp = 6000;
    run_windows(p, 4, 9, sh);
    expect_within(sh, 0, 2, 4, 0.30, 0.03);
    expect_within(sh, 0, 6, 9, 0.60, 0.03);
    expect_within(sh, 1, 2, 9, 0.30, 0.03);
    /* And back down: no undershoot below the new cap beyond tolerance. */
    p->t[0].limit_bp = 1000;
    run_windows(p, 9, 13, sh);
    expect_within(sh, 0, 11, 13, 0.10, 0.03);
    free(p);
}

static void oversubscribed_device_does_not_wind_the_controller_up(void **state)
{
    /* 70 % + 70 % cannot both be met: the device saturates and both get about half. When
     * one tenant's limit drops, the other must reach its 70 % without a windup overshoot. */
    struct plant *p = new_plant();
    plant_add(p, 7000, 1 * MS, 4, 1.0);
    plant_add(p, 7000, 1 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 5, sh);
    expect_within(sh, 0, 1, 5, 0.50, 0.05);
    expect_within(sh, 1, 1, 5, 0.50, 0.05);
    assert_true(p->t[0].ctl.pi.integ <= 0.05); /* not wound up */
    p->t[1].limit_bp = 2000;
    run_windows(p, 5, 10, sh);
    expect_at_most(sh, 0, 5, 10, 0.73); /* never overshoots past the cap */
    expect_within(sh, 0, 7, 10, 0.70, 0.03);
    expect_within(sh, 1, 7, 10, 0.20, 0.03);
    free(p);
}

static void app_using_less_than_its_limit_does_not_overshoot_later(void **state)
{
    struct plant *p = new_plant();
    int a = plant_add(p, 6000, 1 * MS, 1, 0.2); /* wants 20 %, allowed 60 % */
    plant_add(p, 3000, 1 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 5, sh);
    expect_within(sh, 0, 1, 5, 0.20, 0.03);
    assert_true(p->t[a].ctl.pi.integ <= 0.01);
    /* The app turns saturating. */
    p->t[a].demand = 1.0;
    p->t[a].depth = 4;
    p->t[a].next_try = p->now;
    run_windows(p, 5, 10, sh);
    expect_at_most(sh, 0, 5, 10, 0.63);
    expect_within(sh, 0, 7, 10, 0.60, 0.03);
    expect_within(sh, 1, 5, 10, 0.30, 0.03);
    free(p);
}

static void whole_percent_nvml_samples_still_hold_the_cap(void **state)
{
    struct plant *p = new_plant();
    p->quantize = 0.01;
    plant_add(p, 3000, 300 * US, 4, 1.0);
    plant_add(p, 6000, 2 * MS, 4, 1.0);
    double sh[2][WINDOWS];
    run_windows(p, 0, 8, sh);
    expect_within(sh, 0, 2, 8, 0.30, 0.03);
    expect_within(sh, 1, 2, 8, 0.60, 0.03);
    free(p);
}

/* --- the PI loop alone -------------------------------------------------------------------- */

static void pi_removes_a_steady_bias_and_respects_its_clamps(void **state)
{
    /* A plant that delivers only 80 % of the rate asked for (e.g. per-launch overhead). */
    struct tf_ctl c;
    tf_ctl_init(&c, NULL);
    double u = 0.3, meas = 0;
    for (int k = 0; k < 400; k++) {
        struct tf_ctl_sample s = {.limit = 0.3, .measured = meas, .dt = 0.1, .throttled = true};
        double prev = u;
        u = tf_ctl_update(&c, &s);
        if (k > 0)
            assert_true(fabs(u - prev) <= 0.25 * 0.3 + 1e-9); /* rate-change clamp */
        meas = 0.8 * u;
    }
    assert_true(fabs(meas - 0.3) < 0.004);
    assert_true(fabs(u - 0.375) < 0.01);

    /* Within the deadband nothing moves. */
    tf_ctl_init(&c, NULL);
    struct tf_ctl_sample s = {.limit = 0.5, .measured = 0.499, .dt = 0.1, .throttled = true};
    for (int k = 0; k < 50; k++)
        u = tf_ctl_update(&c, &s);
    assert_true(fabs(u - 0.5) < 1e-9);

    /* A plant that never responds: output and integrator stay clamped (anti-windup). */
    tf_ctl_init(&c, NULL);
    s = (struct tf_ctl_sample){.limit = 0.2, .measured = 0.0, .dt = 0.1, .throttled = true};
    for (int k = 0; k < 1000; k++)
        u = tf_ctl_update(&c, &s);
    assert_true(u <= 4.0 * 0.2 + 1e-9);
    assert_true(c.integ <= 3.0 * 0.2 + 1e-9);
    /* ...and it recovers promptly when the plant starts responding. */
    for (int k = 0; k < 40; k++) {
        s.measured = u;
        u = tf_ctl_update(&c, &s);
    }
    assert_true(fabs(u - 0.2) < 0.02);

    /* Garbage measurements do not poison the state. */
    s = (struct tf_ctl_sample){.limit = 0.2, .measured = NAN, .dt = -1, .throttled = true};
    u = tf_ctl_update(&c, &s);
    assert_true(isfinite(u) && u > 0 && u <= 0.8);
}

static void window_true_up_charges_real_gpu_time(void **state)
{
    struct tf_limit_ctl c;
    tf_limit_ctl_init(&c, NULL);
    struct tf_limit_out out;
    /* 10 launches charged the default 500 us, but the GPU says 30 ms were used. */
    struct tf_limit_in in = {.limit_bp = 3000,
                             .window_ns = 100 * MS,
                             .busy_ns = 30 * MS,
                             .launches = 10,
                             .throttled = true};
    tf_limit_ctl_step(&c, &in, &out);
    assert_int_equal(out.debit, (int64_t)(30 * MS - 10 * TF_LIMIT_COST_DEFAULT_NS));
    assert_int_equal(out.share_bp, 3000);
    /* The cost estimate moves towards 3 ms per launch; the next window is charged at it. */
    assert_true(out.launch_cost > 1 * MS && out.launch_cost < 3 * MS);
    uint64_t charged = out.launch_cost;
    in.busy_ns = 5 * charged;
    in.launches = 10;
    tf_limit_ctl_step(&c, &in, &out);
    assert_int_equal(out.debit, -(int64_t)(5 * charged)); /* over-charged: refund */
    assert_int_equal(out.capacity, (int64_t)(out.rate / 50));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_tenants_capped_30_and_60_settle_within_2s),
        cmocka_unit_test(microsecond_kernels_are_capped_as_well_as_long_ones),
        cmocka_unit_test(single_tenant_capped_at_10_and_at_90_percent),
        cmocka_unit_test(hundred_ms_kernels_hold_their_cap_on_average),
        cmocka_unit_test(mixed_kernel_lengths_are_charged_by_gpu_time),
        cmocka_unit_test(autoscaler_raises_a_limit_and_share_follows_within_2s),
        cmocka_unit_test(oversubscribed_device_does_not_wind_the_controller_up),
        cmocka_unit_test(app_using_less_than_its_limit_does_not_overshoot_later),
        cmocka_unit_test(whole_percent_nvml_samples_still_hold_the_cap),
        cmocka_unit_test(pi_removes_a_steady_bias_and_respects_its_clamps),
        cmocka_unit_test(window_true_up_charges_real_gpu_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
