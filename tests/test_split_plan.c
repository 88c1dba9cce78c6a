/* Split-KV planning of problem/split_plan.h: the same code the kernels' hosts and
 * the multi-block kernels run, checked on the CPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/fused_internal.h"
#include "../kernels/registry.h"
#include "../problem/split_plan.h"
#include "test_problem.h"

/* What every plan must satisfy: chunks are whole tiles, cover the keys, and none is empty. */
static void check_plan_shape(split_plan_t s, int keys, int tile)
{
    assert_true(s.splits >= 1);
    assert_true(s.chunk >= tile);
    assert_int_equal(s.chunk % tile, 0);
    assert_true((long)s.splits * s.chunk >= keys);
    assert_true((long)(s.splits - 1) * s.chunk < keys);
}

static void test_fixed_plan_shapes(void **state)
{
    (void)state;
    const int keys[] = {1, 2, 63, 64, 65, 100, 1000, 4097, 32768, 100000};
    const int splits[] = {1, 2, 3, 7, 16, 100, 1024};
    const int tiles[] = {1, 16, 64, 128};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k)
        for (size_t s = 0; s < sizeof splits / sizeof splits[0]; ++s)
            for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; ++t) {
                split_plan_t p = split_plan_fixed(keys[k], splits[s], tiles[t]);
                check_plan_shape(p, keys[k], tiles[t]);
                assert_true(p.splits <= splits[s]);
                assert_true(p.splits <= (keys[k] + tiles[t] - 1) / tiles[t]); /* tiles of work */
            }
}

static void test_fixed_plan_values(void **state)
{
    (void)state;
    split_plan_t p = split_plan_fixed(1, 8, 64); /* one key: one chunk of one tile */
    assert_int_equal(p.splits, 1);
    assert_int_equal(p.chunk, 64);
    p = split_plan_fixed(4096, 16, 64); /* divides evenly: exactly what was asked */
    assert_int_equal(p.splits, 16);
    assert_int_equal(p.chunk, 256);
    p = split_plan_fixed(1000, 4, 64); /* 250 per split rounds up to 256 */
    assert_int_equal(p.splits, 4);
    assert_int_equal(p.chunk, 256);
    p = split_plan_fixed(100, 8, 64); /* only two tiles of keys */
    assert_int_equal(p.splits, 2);
    assert_int_equal(p.chunk, 64);
    p = split_plan_fixed(5000, 1, 64);
    assert_int_equal(p.splits, 1);
    assert_int_equal(p.chunk, 5056);
    p = split_plan_fixed(0, 0, 32); /* degenerate input still gives one chunk */
    assert_int_equal(p.splits, 1);
    assert_int_equal(p.chunk, 32);
}

static void test_wave_efficiency(void **state)
{
    (void)state;
    assert_true(split_wave_efficiency(132, 132, 1) == 1.0);
    assert_true(fabs(split_wave_efficiency(133, 132, 1) - 133.0 / 264.0) < 1e-15);
    assert_true(split_wave_efficiency(264, 132, 2) == 1.0);
    assert_true(fabs(split_wave_efficiency(1, 132, 1) - 1.0 / 132.0) < 1e-15);
    assert_true(fabs(split_wave_efficiency(400, 132, 1) - 400.0 / 528.0) < 1e-15);
    assert_true(split_wave_efficiency(0, 132, 1) == 0.0);
    assert_true(split_wave_efficiency(10, 0, 1) == 0.0);
}

/* One (stream, kv head) on a 132-SM GPU with a long context: split to fill the GPU. */
static void test_auto_few_items_fill_the_gpu(void **state)
{
    (void)state;
    split_plan_t p = split_plan_auto(1, 32768, 64, 132, 1);
    check_plan_shape(p, 32768, 64);
    assert_true(p.splits >= 100);
    assert_true(split_wave_efficiency(p.splits, 132, 1) >= 0.9);
    assert_true(p.chunk >= SPLIT_MIN_KEYS);

    p = split_plan_auto(8, 65536, 64, 132, 2);
    check_plan_shape(p, 65536, 64);
    assert_true(p.splits > 1);
    assert_true(split_wave_efficiency(8L * p.splits, 132, 2) >= 0.9);
}

static void test_auto_many_items_no_split(void **state)
{
    (void)state;
    split_plan_t p = split_plan_auto(132 * 4, 32768, 64, 132, 1); /* whole waves already */
    assert_int_equal(p.splits, 1);
    p = split_plan_auto(100000, 4096, 64, 132, 2);
    assert_int_equal(p.splits, 1);
}

static void test_auto_respects_min_keys(void **state)
{
    (void)state;
    split_plan_t p = split_plan_auto(1, 2 * SPLIT_MIN_KEYS - 1, 64, 132, 1);
    assert_int_equal(p.splits, 1);
    p = split_plan_auto(1, 100, 16, 132, 1);
    assert_int_equal(p.splits, 1);
    p = split_plan_auto(1, 1000, 64, 132, 1);
    assert_true(p.splits > 1);
    assert_true(p.splits <= 1000 / SPLIT_MIN_KEYS);
}

/* Over a grid of shapes: well-formed, bounded, and within 5% of the best
 * wave efficiency any allowed split count reaches. */
static void test_auto_properties(void **state)
{
    (void)state;
    const long items[] = {1, 3, 17, 100, 1000};
    const int keys[] = {1, 255, 256, 1000, 8192, 65536, 1 << 20};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; ++i)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k)
            for (int per_sm = 1; per_sm <= 2; ++per_sm) {
                split_plan_t p = split_plan_auto(items[i], keys[k], 64, 132, per_sm);
                check_plan_shape(p, keys[k], 64);
                int allowed = keys[k] / SPLIT_MIN_KEYS;
                if (allowed < 1) allowed = 1;
                if (allowed > SPLIT_MAX) allowed = SPLIT_MAX;
                assert_true(p.splits <= allowed);
                double best = 0.0;
                for (int s = 1; s <= allowed; ++s) {
                    split_plan_t q = split_plan_fixed(keys[k], s, 64);
                    best = fmax(best, split_wave_efficiency(items[i] * q.splits, 132, per_sm));
                }
                assert_true(split_wave_efficiency(items[i] * p.splits, 132, per_sm)
                            >= 0.95 * best - 1e-12);
            }
}

/* A 132-SM Hopper as the planners see it, and fused's plan on it. */
static device_info_t hopper(void)
{
    device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.cc = 90;
    dev.sm_count = 132;
    dev.smem_per_sm = 228 * 1024;
    return dev;
}
static attn_plan_t fused_plan_of(problem_t p)
{
    device_info_t dev = hopper();
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    attn_kernel_find("fused")->plan(&p, &dev, &plan);
    return plan;
}

/* fused's planner: one CTA per SM for contiguous 16-row tiles, two on a paged cache,
 * whose scattered blocks need more loads in flight. W = 4, g = 32 is 128 (stream,
 * head) items: one split fills the 132 SMs' single slots, a paged cache takes two. */
static void test_fused_plans_two_ctas_per_sm_on_paged_caches(void **state)
{
    (void)state;
    assert_int_equal(fused_plan_of(test_problem(1, 4, 32, 32, 128, 16384, 128)).split.splits, 1);
    assert_int_equal(fused_plan_of(test_paged_problem(1, 4, 32, 32, 128, 16384, 128, 16)).split.splits, 2);
}

/* The deep ring takes the SM's shared memory: only grids of at most one CTA per SM get
 * it, at d = 128 with tiles of 16 rows on a contiguous cache. */
static void test_fused_deep_ring_only_for_one_cta_per_sm(void **state)
{
    (void)state;
    struct { problem_t p; int deep; } cases[] = {
        {test_problem(1, 4, 32, 32, 128, 8192, 128), 1},   /* 128 items, no split: 128 CTAs */
        {test_problem(1, 16, 32, 8, 128, 8192, 128), 1},   /* GQA-4: 16 rows per CTA */
        {test_problem(1, 8, 32, 32, 128, 8192, 128), 0},   /* 256 CTAs */
        {test_problem(1, 1, 32, 1, 128, 8192, 128), 0},    /* MQA: 32-row tiles, two per SM */
        {test_problem(1, 1, 32, 32, 64, 8192, 128), 0},    /* d = 64: no deep instantiation */
        {test_paged_problem(1, 1, 32, 32, 128, 8192, 128, 64), 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        attn_plan_t plan = fused_plan_of(cases[i].p);
        assert_int_equal(fused_plan_deep_ring(&plan), cases[i].deep);
    }
    /* forced splits: the deep ring only while the grid still fits one CTA per SM */
    problem_t p = test_problem(1, 1, 32, 32, 128, 8192, 128);
    p.multi_block = MULTI_BLOCK_ON;
    p.splits = 4;
    attn_plan_t plan = fused_plan_of(p);
    assert_true(fused_plan_deep_ring(&plan));
    p.splits = 8;
    plan = fused_plan_of(p);
    assert_false(fused_plan_deep_ring(&plan));
}

/* Split grids of long chunks plan with two CTAs per SM (and lose the deep ring) where
 * the partials of a row stay within one tail-merge batch; short chunks, grids that do
 * not split and forced split counts keep one per SM. */
static void test_fused_long_chunks_plan_two_ctas_per_sm(void **state)
{
    (void)state;
    struct { problem_t p; int splits, deep; } cases[] = {
        {test_problem(1, 1, 32, 32, 128, 32768, 128), 8, 0},   /* 32 items: 4 chunks of 8256 keys at one per SM */
        {test_problem(1, 4, 32, 8, 128, 32768, 128), 8, 0},
        {test_problem(1, 2, 32, 32, 128, 131072, 128), 4, 0},
        {test_problem(1, 1, 32, 32, 128, 8192, 128), 8, 0},    /* 4 chunks of 2112 keys at one per SM */
        {test_problem(1, 2, 32, 8, 128, 32768, 128), 16, 0},   /* 8 of 4160 keys */
        {test_problem(1, 2, 32, 8, 128, 8192, 128), 8, 1},     /* 8 of 1088 keys: short */
        {test_problem(1, 1, 32, 8, 128, 131072, 128), 16, 1},  /* two per SM would take 32 splits */
        {test_problem(1, 4, 32, 32, 128, 32768, 128), 1, 1},   /* 128 items: no split */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        attn_plan_t plan = fused_plan_of(cases[i].p);
        assert_int_equal(plan.split.splits, cases[i].splits);
        assert_int_equal(fused_plan_deep_ring(&plan), cases[i].deep);
    }
    problem_t p = test_problem(1, 1, 32, 32, 128, 32768, 128);
    p.splits = 4;
    attn_plan_t plan = fused_plan_of(p);
    assert_int_equal(plan.split.splits, 4);
    assert_true(fused_plan_deep_ring(&plan));
}

/* The SM split of two parts side by side (sm_split_plan): 256 items of 149 us of
 * tensor-core work against 2.15 GB of memory-bound work on 132 SMs, rates in bytes/us. */
static void test_sm_split_when_a_streaming_sm_beats_its_share(void **state)
{
    (void)state;
    const double full = 4180e3, share = full / 132;
    sm_split_t s = sm_split_plan(256, 149.0, 2.15e9, 1.3 * share, full, 132, 0.0);
    /* the fewest rounds (two, on 128 SMs) leave the decode part 4 SMs: about the sum */
    double sum = sm_split_us(256, 149.0, 2.15e9, 1.3 * share, full, 132, 2);
    assert_true(s.sms > 0 && s.sms < 128);
    assert_true(s.us < sum);
    assert_int_equal(s.sms, (256 + 3) / 4); /* four rounds on 64 SMs */
    /* a split's own cost can outweigh what it saves */
    assert_int_equal(sm_split_plan(256, 149.0, 2.15e9, 1.3 * share, full, 132, sum - s.us + 1.0).sms, 0);
    assert_true(sm_split_plan(256, 149.0, 2.15e9, 1.3 * share, full, 132, 0.5 * (sum - s.us)).sms > 0);
    /* a candidate is always ceil(items / rounds) */
    long rounds = (256 + s.sms - 1) / s.sms;
    assert_int_equal(s.sms, (256 + rounds - 1) / rounds);
}

static void test_sm_split_none_where_an_sm_streams_only_its_share(void **state)
{
    (void)state;
    const double full = 4180e3, share = full / 132;
    /* SMs given to the memory-bound part return no more than the other part loses */
    assert_int_equal(sm_split_plan(256, 149.0, 2.15e9, share, full, 132, 0.0).sms, 0);
    assert_int_equal(sm_split_plan(256, 149.0, 2.15e9, 0.9 * share, full, 132, 0.0).sms, 0);
    /* a small memory-bound part hides behind the first round anyway */
    assert_int_equal(sm_split_plan(128, 298.0, 0.13e9, 1.3 * share, full, 132, 0.0).sms, 0);
    /* one item, or no work */
    assert_int_equal(sm_split_plan(1, 100.0, 1e9, 1.3 * share, full, 132, 0.0).sms, 0);
    assert_int_equal(sm_split_plan(0, 100.0, 1e9, 1.3 * share, full, 132, 0.0).sms, 0);
}

static void test_sm_split_prediction(void **state)
{
    (void)state;
    /* 4 items of 10 us on 4 SMs, 100 bytes at 1 byte/us per SM, 2 in all: on 2 SMs
     * the items take 20 us, the other 2 SMs stream 40 bytes meanwhile, 60 are left at 2 */
    assert_true(fabs(sm_split_us(4, 10.0, 100.0, 1.0, 2.0, 4, 2) - 50.0) < 1e-9);
    /* all 4 SMs: 10 us with nothing streaming, then 50 us */
    assert_true(fabs(sm_split_us(4, 10.0, 100.0, 1.0, 2.0, 4, 1) - 60.0) < 1e-9);
    sm_split_t s = sm_split_plan(4, 10.0, 100.0, 1.0, 2.0, 4, 0.0);
    /* two SMs: 50 us; one SM takes as long (40 us, 80 bytes streamed at the cap, 20
     * left), and a tie keeps the count found first */
    assert_int_equal(s.sms, 2);
    assert_true(fabs(s.us - 50.0) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_plan_shapes),
        cmocka_unit_test(test_fixed_plan_values),
        cmocka_unit_test(test_wave_efficiency),
        cmocka_unit_test(test_auto_few_items_fill_the_gpu),
        cmocka_unit_test(test_auto_many_items_no_split),
        cmocka_unit_test(test_auto_respects_min_keys),
        cmocka_unit_test(test_auto_properties),
        cmocka_unit_test(test_fused_plans_two_ctas_per_sm_on_paged_caches),
        cmocka_unit_test(test_fused_deep_ring_only_for_one_cta_per_sm),
        cmocka_unit_test(test_fused_long_chunks_plan_two_ctas_per_sm),
        cmocka_unit_test(test_sm_split_when_a_streaming_sm_beats_its_share),
        cmocka_unit_test(test_sm_split_none_where_an_sm_streams_only_its_share),
        cmocka_unit_test(test_sm_split_prediction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
