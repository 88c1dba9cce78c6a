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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
