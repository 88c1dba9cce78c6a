/* Timing statistics (harness/stats.c) and the GPU key of device names
 * (harness/gpu_key.c): the numbers and names every CSV row carries. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "../harness/stats.h"
#include "../harness/stats_internal.h"
#include "../harness/device.h"
#include "../harness/nvml.h"

#define EPS 1e-12

static void test_odd_count_unsorted(void **state)
{
    (void)state;
    const double samples[] = {5.0, 1.0, 4.0, 2.0, 3.0};
    double copy[5];
    memcpy(copy, samples, sizeof copy);
    sample_summary_t s;
    assert_int_equal(stats_summarize(copy, 5, &s), 0);
    assert_int_equal(s.n, 5);
    assert_true(fabs(s.median - 3.0) < EPS);
    assert_true(fabs(s.min - 1.0) < EPS);
    assert_true(fabs(s.max - 5.0) < EPS);
    /* position (n-1)*q = 0.4 -> 1 + 0.4 * (2 - 1); 3.6 -> 4 + 0.6 * (5 - 4) */
    assert_true(fabs(s.p10 - 1.4) < EPS);
    assert_true(fabs(s.p90 - 4.6) < EPS);
    /* mean 3, sample variance 10 / 4 */
    assert_true(fabs(s.noise - sqrt(2.5) / 3.0) < EPS);
    /* the input keeps its order */
    assert_memory_equal(copy, samples, sizeof copy);
}

static void test_even_count_median_averages_middle(void **state)
{
    (void)state;
    const double samples[] = {10.0, 40.0, 20.0, 30.0};
    sample_summary_t s;
    assert_int_equal(stats_summarize(samples, 4, &s), 0);
    assert_true(fabs(s.median - 25.0) < EPS);
    /* position 0.3 -> 10 + 0.3 * 10; 2.7 -> 30 + 0.7 * 10 */
    assert_true(fabs(s.p10 - 13.0) < EPS);
    assert_true(fabs(s.p90 - 37.0) < EPS);
    assert_true(fabs(s.min - 10.0) < EPS && fabs(s.max - 40.0) < EPS);
}

static void test_single_sample(void **state)
{
    (void)state;
    const double one = 7.25;
    sample_summary_t s;
    assert_int_equal(stats_summarize(&one, 1, &s), 0);
    assert_int_equal(s.n, 1);
    assert_true(s.median == 7.25 && s.p10 == 7.25 && s.p90 == 7.25);
    assert_true(s.min == 7.25 && s.max == 7.25);
    assert_true(s.noise == 0.0);
}

static void test_constant_samples_have_no_noise(void **state)
{
    (void)state;
    double samples[100];
    for (int i = 0; i < 100; ++i) samples[i] = 12.5;
    sample_summary_t s;
    assert_int_equal(stats_summarize(samples, 100, &s), 0);
    assert_true(s.noise == 0.0);
    assert_true(s.median == 12.5 && s.p10 == 12.5 && s.p90 == 12.5);
}

static void test_percentiles_of_a_ramp(void **state)
{
    (void)state;
    /* 0..100 in reverse: the quantile q is exactly 100 q */
    double samples[101];
    for (int i = 0; i <= 100; ++i) samples[i] = 100 - i;
    sample_summary_t s;
    assert_int_equal(stats_summarize(samples, 101, &s), 0);
    assert_true(fabs(s.median - 50.0) < EPS);
    assert_true(fabs(s.p10 - 10.0) < EPS);
    assert_true(fabs(s.p90 - 90.0) < EPS);
    assert_true(samples[0] == 100.0 && samples[100] == 0.0);
}

static void test_outlier_moves_max_not_median(void **state)
{
    (void)state;
    const double samples[] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 1000};
    sample_summary_t s;
    assert_int_equal(stats_summarize(samples, 10, &s), 0);
    assert_true(s.median == 10.0);
    assert_true(s.max == 1000.0);
    assert_true(fabs(s.p90 - 10.0 - 0.1 * 990.0) < 1e-9);  /* position 8.1 */
    assert_true(s.noise > 2.0);
}

static void test_quantile_edges(void **state)
{
    (void)state;
    const double sorted[] = {1.0, 2.0, 4.0};
    assert_true(stats_quantile_sorted(sorted, 3, 0.0) == 1.0);
    assert_true(stats_quantile_sorted(sorted, 3, 1.0) == 4.0);
    assert_true(fabs(stats_quantile_sorted(sorted, 3, 0.75) - 3.0) < EPS);
    assert_true(stats_quantile_sorted(sorted, 3, -1.0) == 1.0);
    assert_true(stats_quantile_sorted(sorted, 3, 2.0) == 4.0);
}

static void test_bad_input_is_refused(void **state)
{
    (void)state;
    const double one = 1.0;
    sample_summary_t s;
    memset(&s, 0x5a, sizeof s);
    assert_int_equal(stats_summarize(&one, 0, &s), -1);
    assert_int_equal(s.n, 0);
    assert_true(s.median == 0.0);
    assert_int_equal(stats_summarize(NULL, 3, &s), -1);
    assert_int_equal(stats_summarize(&one, 1, NULL), -1);
}

static void test_clock_from_two_readings(void **state)
{
    (void)state;
    /* 1.5e6 cycles in 1 ms: 1500 MHz */
    assert_true(fabs(stats_clock_mhz(1000, 50, 1001000, 1500050) - 1500.0) < 1e-9);
    /* a missing reading (its timer zero), no time passed, or the counter not moved */
    assert_true(isnan(stats_clock_mhz(0, 50, 1001000, 1500050)));
    assert_true(isnan(stats_clock_mhz(1000, 50, 0, 0)));
    assert_true(isnan(stats_clock_mhz(1000, 50, 1000, 1500050)));
    assert_true(isnan(stats_clock_mhz(1000, 50, 1001000, 50)));
}

static void expect_key(const char *name, const char *key)
{
    char buf[32];
    gpu_key_from_name(name, buf, sizeof buf);
    assert_string_equal(buf, key);
}

static void test_gpu_keys(void **state)
{
    (void)state;
    expect_key("NVIDIA H100 80GB HBM3", "h100");
    expect_key("NVIDIA H100 PCIe", "h100");
    expect_key("NVIDIA H200", "h200");
    expect_key("NVIDIA GH200 480GB", "gh200");
    expect_key("NVIDIA A100-SXM4-80GB", "a100");
    expect_key("NVIDIA GeForce RTX 4090", "rtx4090");
    expect_key("NVIDIA RTX A6000", "rtxa6000");
    expect_key("Tesla V100-SXM2-16GB", "v100");
    expect_key("NVIDIA L40S", "l40s");
    expect_key("  NVIDIA   B200  ", "b200");
    expect_key("", "gpu");
    expect_key("NVIDIA", "gpu");
    expect_key(NULL, "gpu");
    expect_key("Weird_Name#7 X", "weirdname7");
}

static void test_gpu_key_truncates(void **state)
{
    (void)state;
    char buf[4];
    gpu_key_from_name("NVIDIA GH200 480GB", buf, sizeof buf);
    assert_string_equal(buf, "gh2");
    char one[1] = {'x'};
    gpu_key_from_name("NVIDIA H100", one, sizeof one);
    assert_int_equal(one[0], '\0');
}

static void test_rel_stderr(void **state)
{
    (void)state;
    const double x[] = {9.0, 11.0, 9.0, 11.0};   /* mean 10, sample stddev sqrt(4/3) */
    assert_true(fabs(stats_rel_stderr(x, 4) - sqrt(4.0 / 3.0) / 10.0 / 2.0) < EPS);
    assert_true(stats_rel_stderr(x, 1) == 0.0);
}

static const noise_rule_t rule = {0.005, 20, 1.0, 100000};

static void test_stopping_rule_minimum_and_target(void **state)
{
    (void)state;
    int capped = 1;
    /* fewer than the minimum: up to it, whatever the noise */
    assert_int_equal(stats_next_batch(&rule, 0, 0.0, 0.0, &capped), 20);
    assert_int_equal(stats_next_batch(&rule, 5, 0.0, 0.001, &capped), 15);
    /* at the target: done, not capped */
    assert_int_equal(stats_next_batch(&rule, 20, 0.005, 0.002, &capped), 0);
    assert_false(capped);
    assert_int_equal(stats_next_batch(&rule, 20, 0.001, 0.002, &capped), 0);
    /* twice the target: four times the launches reach it, at most doubling a step */
    assert_int_equal(stats_next_batch(&rule, 20, 0.010, 0.002, &capped), 20);
    assert_int_equal(stats_next_batch(&rule, 40, 0.006, 0.004, &capped), 18);   /* 40 * 1.44 - 40 */
    assert_false(capped);
}

static void test_stopping_rule_cap(void **state)
{
    (void)state;
    int capped = 0;
    /* the time cap reached above the target: done, capped */
    assert_int_equal(stats_next_batch(&rule, 400, 0.02, 1.0, &capped), 0);
    assert_true(capped);
    /* close to the cap: no more launches than the time left holds (0.1 s of 2.5 ms) */
    assert_int_equal(stats_next_batch(&rule, 360, 0.02, 0.9, &capped), 40);
    assert_false(capped);
    /* the launch cap */
    noise_rule_t few = rule;
    few.max_iters = 30;
    assert_int_equal(stats_next_batch(&few, 20, 0.02, 0.001, &capped), 10);
    assert_int_equal(stats_next_batch(&few, 30, 0.02, 0.0015, &capped), 0);
    assert_true(capped);
    /* a fixed count (--iters 50): min = max = 50 */
    noise_rule_t fixed = {0.005, 50, 1.0, 50};
    assert_int_equal(stats_next_batch(&fixed, 0, 0.0, 0.0, &capped), 50);
    assert_int_equal(stats_next_batch(&fixed, 50, 0.001, 0.01, &capped), 0);
    assert_false(capped);
}

static void test_flags(void **state)
{
    (void)state;
    sample_summary_t s = {0};
    s.p10 = 100.0;
    s.p90 = 114.0;
    char buf[24];
    stats_flags(&s, 0, 1980.0, 1980.0, buf, sizeof buf);
    assert_string_equal(buf, "");
    stats_flags(&s, 1, 1980.0, 1980.0, buf, sizeof buf);
    assert_string_equal(buf, "noisy");
    s.p90 = 116.0;   /* p90/p10 over 1.15 */
    stats_flags(&s, 0, 1980.0, 1980.0, buf, sizeof buf);
    assert_string_equal(buf, "noisy");
    stats_flags(&s, 0, 1700.0, 1980.0, buf, sizeof buf);   /* under 90% of 1980 = 1782 */
    assert_string_equal(buf, "noisy;throttled");
    s.p90 = 110.0;
    stats_flags(&s, 0, 1790.0, 1980.0, buf, sizeof buf);
    assert_string_equal(buf, "");
    stats_flags(&s, 0, 1314.0, 1980.0, buf, sizeof buf);
    assert_string_equal(buf, "throttled");
    /* unknown clocks flag nothing */
    stats_flags(&s, 0, NAN, 1980.0, buf, sizeof buf);
    assert_string_equal(buf, "");
    stats_flags(&s, 0, 1314.0, 0.0, buf, sizeof buf);
    assert_string_equal(buf, "");
}

static void test_spec_bandwidth(void **state)
{
    (void)state;
    /* H100 SXM: HBM3 at 2619 MHz on 5120 bits, 3352 GB/s */
    assert_true(fabs(nvml_spec_gbps(2619.0, 5120) - 3352.32) < 1e-6);
    assert_true(nvml_spec_gbps(0.0, 5120) == 0.0);
    assert_true(nvml_spec_gbps(2619.0, 0) == 0.0);
    nvml_info_t info;
    if (nvml_query(0, &info) != 0)   /* no driver: zeros */
        assert_true(info.spec_gbps == 0.0 && info.max_sm_mhz == 0.0 && info.bus_bits == 0);
    else
        assert_true(info.spec_gbps > 0.0 && info.max_sm_mhz > 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odd_count_unsorted),
        cmocka_unit_test(test_even_count_median_averages_middle),
        cmocka_unit_test(test_single_sample),
        cmocka_unit_test(test_constant_samples_have_no_noise),
        cmocka_unit_test(test_percentiles_of_a_ramp),
        cmocka_unit_test(test_outlier_moves_max_not_median),
        cmocka_unit_test(test_quantile_edges),
        cmocka_unit_test(test_bad_input_is_refused),
        cmocka_unit_test(test_clock_from_two_readings),
        cmocka_unit_test(test_gpu_keys),
        cmocka_unit_test(test_gpu_key_truncates),
        cmocka_unit_test(test_rel_stderr),
        cmocka_unit_test(test_stopping_rule_minimum_and_target),
        cmocka_unit_test(test_stopping_rule_cap),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_spec_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
