/* SPDX-License-Identifier: Apache-2.0
 *
 * The compute-share controller against a simulated GPU (tests/limits/plant.c): the real
 * bucket and the real per-window controller, tenants with saturating kernels of different
 * lengths, in virtual time. Checks the HAMi-core failure modes do not happen here: caps
 * 30/60 and 10/90 are held to +-3 points after <= 2 s, kernel length does not matter,
 * limits can step, an oversubscribed device and a demand-limited app do not wind the
 * controller up; launches priced by their launchers' (biased) measurements are calibrated
 * against the driver's accounting, and a tenant below its cap is never throttled.
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
    /* 100 launches took 5 ms of tokens, but the GPU says 30 ms were used: debited at once,
     * in the first window too. */
    struct tf_limit_in in = {.limit_bp = 3000,
                             .window_ns = 100 * MS,
                             .busy_ns = 30 * MS,
                             .launches = 100,
                             .charged = 30 * MS,
                             .throttled = true};
    tf_limit_ctl_step(&c, &in, &out);
    assert_int_equal(out.debit, 0);
    assert_int_equal(out.share_bp, 3000);
    in.charged = 40 * MS; /* over-charged: may be work in flight, no refund */
    struct tf_limit_ctl c1;
    tf_limit_ctl_init(&c1, NULL);
    tf_limit_ctl_step(&c1, &in, &out);
    assert_int_equal(out.debit, 0);
    in.charged = 5 * MS; /* under-charged in a first window: debited */
    tf_limit_ctl_init(&c1, NULL);
    tf_limit_ctl_step(&c1, &in, &out);
    assert_int_equal(out.debit, (int64_t)(25 * MS));
    /* The average cost moves to 300 us per launch (at most 8x per window at first, 2x
     * later). */
    assert_int_equal(out.launch_cost, 300 * US);
    tf_limit_ctl_step(&c, &in, &out);
    assert_int_equal(out.debit, (int64_t)(25 * MS));
    /* Over-charged: what the launches were charged beyond the GPU time seen may be work in
     * flight (running late behind other tenants', or queued), up to the window's charges
     * and one kernel more; only what goes beyond that is refunded. */
    in.charged = 40 * MS;
    for (int k = 0; k < 4; k++) {
        tf_limit_ctl_step(&c, &in, &out);
        assert_int_equal(out.debit, 0);
    }
    tf_limit_ctl_step(&c, &in, &out);
    assert_in_range(-out.debit, 9 * MS, 10 * MS);
    tf_limit_ctl_step(&c, &in, &out);
    assert_in_range(-out.debit, 9900 * US, 10100 * US);
    /* The burst is four average kernels, at least 20 ms of the rate and of GPU time. */
    assert_int_equal(out.capacity, (int64_t)TF_LIMIT_BURST_MIN_NS);
    in.limit_bp = 9000; /* 9 ms kernels: a burst of 36 ms of the rate */
    in.busy_ns = 90 * MS;
    in.charged = 90 * MS;
    in.launches = 10;
    for (int k = 0; k < 40; k++)
        tf_limit_ctl_step(&c, &in, &out);
    int64_t want = (int64_t)(out.rate / 1000 * c.burst_ms);
    assert_true(want > (int64_t)TF_LIMIT_BURST_MIN_NS);
    assert_in_range(out.capacity, want - 1000, want + 1000);
}

static void measurement_bias_is_calibrated_from_the_drivers_accounting(void **state)
{
    /* The launchers' event times read 3x what the driver accounts: the scale converges to
     * a third within a few windows, then holds. */
    struct tf_limit_ctl c;
    tf_limit_ctl_init(&c, NULL);
    struct tf_limit_out out = {0};
    for (int k = 0; k < 20; k++) {
        double sc = out.cost_scale ? out.cost_scale / 65536.0 : 1.0;
        struct tf_limit_in in = {.limit_bp = 5000,
                                 .window_ns = 100 * MS,
                                 .busy_ns = 20 * MS,
                                 .launches = 2000,
                                 .charged = (int64_t)(60 * MS * sc),
                                 .scale = out.cost_scale,
                                 .throttled = false};
        tf_limit_ctl_step(&c, &in, &out);
    }
    assert_true(fabs(out.cost_scale / 65536.0 - 1.0 / 3.0) < 0.01);
    /* Windows the driver's whole-percent samples cannot resolve (the measured charges just
     * as small) leave the scale alone. */
    uint32_t held = out.cost_scale;
    for (int k = 0; k < 20; k++) {
        struct tf_limit_in in = {.limit_bp = 5000,
                                 .window_ns = 100 * MS,
                                 .busy_ns = MS / 4,
                                 .launches = 20,
                                 .charged = MS / 2,
                                 .scale = out.cost_scale};
        tf_limit_ctl_step(&c, &in, &out);
    }
    assert_true(fabs((double)out.cost_scale - (double)held) < 0.02 * held);
}

static void unseen_launches_are_measured_by_their_launchers(void **state)
{
    struct tf_limit_ctl c;
    tf_limit_ctl_init(&c, NULL);
    struct tf_limit_out out;
    /* Below the driver's resolution (0.5 %): the measured charge stands, no refund, no
     * warning. */
    struct tf_limit_in in = {
        .limit_bp = 5000, .window_ns = 100 * MS, .busy_ns = 0, .launches = 5000, .charged = 500000};
    for (int k = 0; k < TF_LIMIT_BLIND_WINDOWS + 1; k++) {
        tf_limit_ctl_step(&c, &in, &out);
        assert_int_equal(out.debit, 0);
        assert_int_equal(out.share_bp, 50);
    }
    assert_false(tf_limit_ctl_blind(&c));
    /* Visible at the driver's resolution, yet nothing attributed: blind, reported, and
     * still no refund of what the launches measured. */
    in.charged = 30 * MS;
    for (int k = 0; k < TF_LIMIT_BLIND_WINDOWS; k++) {
        tf_limit_ctl_step(&c, &in, &out);
        assert_int_equal(out.debit, 0);
    }
    assert_true(tf_limit_ctl_blind(&c));
    /* Seen running but rounded to 0 %, while its launches were charged 5 %: the charges
     * over-estimate (say a 10x measurement bias at a 5 % cap would hold it at 0.5 % for
     * good); the calibration brings them down to what rounds to 0 at most. */
    tf_limit_ctl_init(&c, NULL);
    struct tf_limit_out o2 = {0};
    for (int k = 0; k < 20; k++) {
        double sc = o2.cost_scale ? o2.cost_scale / 65536.0 : 1.0;
        struct tf_limit_in r = {.limit_bp = 500,
                                .window_ns = 100 * MS,
                                .launches = 5000,
                                .charged = (int64_t)(5 * MS * sc),
                                .scale = o2.cost_scale,
                                .sampled = true};
        tf_limit_ctl_step(&c, &r, &o2);
    }
    assert_false(tf_limit_ctl_blind(&c));
    assert_true(o2.cost_scale / 65536.0 <= 0.11);
}

static void biased_measurements_still_hold_the_caps(void **state)
{
    /* Two tenants priced by their launchers' measurements, one reading 3x long (e.g. its
     * events include other work's time), one reading half; whole-percent samples. */
    struct plant *p = new_plant();
    p->quantize = 0.01;
    int a = plant_add(p, 3000, 50 * US, 4, 1.0);
    int b = plant_add(p, 6000, 1 * MS, 4, 1.0);
    p->t[a].measured_bias = 3.0;
    p->t[b].measured_bias = 0.5;
    double sh[2][WINDOWS];
    run_windows(p, 0, 8, sh);
    expect_within(sh, a, 2, 8, 0.30, 0.03);
    expect_within(sh, b, 2, 8, 0.60, 0.03);
    free(p);
}

static void under_estimated_kernels_barely_overshoot_their_first_second(void **state)
{
    /* Launchers measuring a quarter of what the driver accounts (their kernels look 4x
     * shorter), from a cold start: the first second stays within 5 points of the cap. */
    struct plant *p = new_plant();
    p->quantize = 0.01;
    int a = plant_add(p, 5000, 20 * US, 4, 1.0);
    p->t[a].measured_bias = 0.25;
    double sh[1][WINDOWS];
    run_windows(p, 0, 4, sh);
    expect_at_most(sh, a, 0, 1, 0.55);
    expect_within(sh, a, 1, 4, 0.50, 0.03);
    free(p);
}

static void a_long_first_window_does_not_wind_the_controller_up(void **state)
{
    /* A workload starts on a device the engine last sampled 30 s ago: its first window is
     * 30 s long and reads a low share. The rate stays near the limit. */
    struct tf_limit_ctl c;
    tf_limit_ctl_init(&c, NULL);
    struct tf_limit_out out;
    struct tf_limit_in in = {.limit_bp = 6000,
                             .window_ns = 30000 * MS,
                             .busy_ns = 60 * MS,
                             .launches = 60,
                             .charged = 60 * MS,
                             .throttled = true};
    tf_limit_ctl_step(&c, &in, &out);
    assert_true(out.rate_bp <= 6300);
    in.window_ns = 100 * MS;
    in.busy_ns = 60 * MS;
    for (int k = 0; k < 5; k++) {
        tf_limit_ctl_step(&c, &in, &out);
        assert_true(out.rate_bp <= 6300);
    }
}

static void tenant_below_its_cap_is_never_throttled(void **state)
{
    /* Wants 20 % in 20 us kernels, allowed 50 %, priced by measurement: it gets all 20 %
     * and never waits for tokens, next to a saturating neighbour capped at 40 %. */
    struct plant *p = new_plant();
    int a = plant_add(p, 5000, 20 * US, 1, 0.2);
    int b = plant_add(p, 4000, 1 * MS, 4, 1.0);
    p->t[a].measured_bias = 1.0;
    p->t[b].measured_bias = 1.0;
    double sh[2][WINDOWS];
    run_windows(p, 0, 5, sh);
    expect_within(sh, a, 0, 5, 0.20, 0.02);
    expect_within(sh, b, 1, 5, 0.40, 0.03);
    assert_int_equal(p->t[a].throttles, 0);
    free(p);
}

static void long_kernels_below_the_cap_are_not_held_between_two(void **state)
{
    /* 100 ms kernels, one at a time, 25 % of the device, allowed 50 %: the bucket holds four
     * of them, so none waits for tokens once the cost is known. */
    struct plant *p = new_plant();
    int a = plant_add(p, 5000, 100 * MS, 1, 0.25);
    p->t[a].measured_bias = 1.0;
    double sh[1][WINDOWS], sum = 0;
    run_windows(p, 0, 8, sh);
    for (int s = 0; s < 8; s++)
        sum += sh[a][s]; /* single windows hold 2 or 3 kernels */
    assert_true(fabs(sum / 8 - 0.25) < 0.02);
    assert_int_equal(p->t[a].throttles, 0);
    free(p);
}

/* Starts tenant I of P at OFFSET (the engine's windows keep their phase), then runs N whole
 * seconds from there, storing its share per 1 s window. */
static void run_from(struct plant *p, int i, uint64_t offset, int n, double share[][WINDOWS])
{
    p->t[i].next_try = offset;
    plant_run(p, offset);
    plant_take_share(p, i, SEC);
    for (int s = 0; s < n; s++) {
        plant_run(p, offset + (uint64_t)(s + 1) * SEC);
        share[i][s] = plant_take_share(p, i, SEC);
    }
}

static void hundred_ms_kernels_from_a_cold_start_hold_their_cap_after_one_second(void **state)
{
    /* A stream of 100 ms kernels (two in flight) priced by the launch cost model from a cold
     * start: the first launch is charged the engine's 500 us guess, the second waits for its
     * measurement. Whatever the phase of the engine's windows, the first second stays within
     * 5 points above the cap and 10 below it; every later one is within 3 points. */
    for (uint64_t off = 0; off < 100 * MS; off += 20 * MS) {
        struct plant *p = new_plant();
        p->quantize = 0.01;
        int a = plant_add(p, 5000, 100 * MS, 2, 1.0);
        p->t[a].cost_model = true;
        double sh[1][WINDOWS];
        run_from(p, a, off, 8, sh);
        expect_within(sh, a, 0, 1, 0.475, 0.075);
        expect_within(sh, a, 1, 8, 0.50, 0.03);
        free(p);
    }
}

static void long_kernel_bursts_below_the_cap_are_not_throttled_from_a_cold_start(void **state)
{
    /* Bursts of two 100 ms kernels, each followed by a synchronise and 570 ms idle (about
     * 25 % of the device), under a 55 % cap, priced by the launch cost model from a cold
     * start, whatever the phase of the engine's windows: no launch ever waits for tokens,
     * and the bursts come as often as uncapped. */
    for (uint64_t off = 0; off < 100 * MS; off += 20 * MS) {
        uint64_t launched[2];
        for (int capped = 0; capped < 2; capped++) {
            struct plant *p = new_plant();
            p->quantize = 0.01;
            int a = plant_add(p, capped ? 5500 : 10000, 100 * MS, 2, 1.0);
            p->t[a].cost_model = true;
            p->t[a].burst = 2;
            p->t[a].gap_ns = 570 * MS;
            if (!capped)
                atomic_store(&p->t[a].bucket_limit.rate, 4 * SEC); /* never binds */
            double sh[1][WINDOWS];
            run_from(p, a, off, 6, sh);
            launched[capped] = p->t[a].nlaunch;
            if (capped && p->t[a].throttles)
                fail_msg("start at %llu ms: %llu launches waited %.1f ms for tokens",
                         (unsigned long long)(off / MS), (unsigned long long)p->t[a].throttles,
                         p->t[a].waited_ns / 1e6);
            free(p);
        }
        assert_int_equal(launched[1], launched[0]);
    }
}

static void four_tenants_priced_by_measurement_from_a_cold_start_get_25_percent_each(void **state)
{
    /* Four saturating tenants of 1 ms kernels capped at 25 %, priced by the launch cost
     * model from a cold start: on a device time-sliced between them each kernel's events
     * span up to four times its own GPU time, which the calibration removes. */
    struct plant *p = new_plant();
    p->quantize = 0.01;
    for (int i = 0; i < 4; i++)
        p->t[plant_add(p, 2500, 1 * MS, 4, 1.0)].cost_model = true;
    double sh[4][WINDOWS];
    run_windows(p, 0, 6, sh);
    for (int i = 0; i < 4; i++) {
        expect_at_most(sh, i, 0, 1, 0.30);
        expect_within(sh, i, 1, 6, 0.25, 0.03);
    }
    free(p);
}

static void pair_of_short_and_long_kernels_priced_by_measurement_hold_30_and_60(void **state)
{
    /* 1 ms kernels capped at 30 % next to 20 ms kernels capped at 60 %, both priced by the
     * launch cost model from a cold start. */
    struct plant *p = new_plant();
    p->quantize = 0.01;
    int a = plant_add(p, 3000, 1 * MS, 4, 1.0);
    int b = plant_add(p, 6000, 20 * MS, 4, 1.0);
    p->t[a].cost_model = p->t[b].cost_model = true;
    double sh[2][WINDOWS];
    run_windows(p, 0, 6, sh);
    expect_at_most(sh, a, 0, 1, 0.35);
    expect_at_most(sh, b, 0, 1, 0.65);
    expect_within(sh, a, 1, 6, 0.30, 0.03);
    expect_within(sh, b, 1, 6, 0.60, 0.03);
    free(p);
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
        cmocka_unit_test(measurement_bias_is_calibrated_from_the_drivers_accounting),
        cmocka_unit_test(unseen_launches_are_measured_by_their_launchers),
        cmocka_unit_test(biased_measurements_still_hold_the_caps),
        cmocka_unit_test(under_estimated_kernels_barely_overshoot_their_first_second),
        cmocka_unit_test(a_long_first_window_does_not_wind_the_controller_up),
        cmocka_unit_test(tenant_below_its_cap_is_never_throttled),
        cmocka_unit_test(long_kernels_below_the_cap_are_not_held_between_two),
        cmocka_unit_test(hundred_ms_kernels_from_a_cold_start_hold_their_cap_after_one_second),
        cmocka_unit_test(long_kernel_bursts_below_the_cap_are_not_throttled_from_a_cold_start),
        cmocka_unit_test(four_tenants_priced_by_measurement_from_a_cold_start_get_25_percent_each),
        cmocka_unit_test(pair_of_short_and_long_kernels_priced_by_measurement_hold_30_and_60),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
