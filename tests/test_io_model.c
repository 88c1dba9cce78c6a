/* The byte model's split (SPEC §6): `bytes` is the compulsory DRAM traffic (K, V, Q,
 * O, block and indirection tables), split partials and other scratch traffic are
 * `workspace_bytes`, and the split count moves only the latter. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/registry.h"
#include "test_problem.h"

static attn_io_t io_of(const char *kernel, const problem_t *p, int *splits)
{
    const attn_kernel_t *k = attn_kernel_find(kernel);
    assert_non_null(k);
    device_info_t dev = test_h100();
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    assert_int_equal(k->unsupported(p), 0);
    k->plan(p, &dev, &plan);
    *splits = plan.split.splits;
    return (plan.runs ? plan.runs : k)->io(p, &plan);
}

static void test_fused_partials_are_workspace(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 16, 32, 8, 128, 8192, 64);
    p.multi_block = MULTI_BLOCK_ON;
    p.splits = 8;
    int splits;
    attn_io_t split = io_of("fused", &p, &splits);
    assert_int_equal(splits, 8);
    assert_true(split.workspace_bytes > 0);
    /* compulsory: every replicated K/V once, q and out */
    assert_true(fabs(split.bytes - (io_kv_bytes_stored(&p) + io_qo_bytes(&p))) < 1.0);
    p.multi_block = MULTI_BLOCK_OFF;
    p.splits = 0;
    attn_io_t one = io_of("fused", &p, &splits);
    assert_int_equal(splits, 1);
    assert_true(one.workspace_bytes == 0.0);
    assert_true(one.bytes == split.bytes);   /* splitting moves no compulsory byte */
}

static void test_bifurcated_bytes_are_unique(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 16, 32, 8, 128, 8192, 64);
    p.multi_block = MULTI_BLOCK_ON;
    p.splits = 4;
    int splits;
    attn_io_t io = io_of("bifurcated", &p, &splits);
    assert_true(splits > 1);
    assert_true(io.workspace_bytes > 0);
    /* contiguous bifurcated: the context once per request, nothing more */
    assert_true(fabs(io.bytes - io.unique_bytes) < 1.0);
    assert_true(fabs(io.bytes - (io_kv_bytes_unique(&p) + io_qo_bytes(&p))) < 1.0);
}

static void test_tables_are_compulsory(void **state)
{
    (void)state;
    problem_t p = test_paged_problem(2, 4, 32, 8, 128, 1000, 24, 64);
    p.indirection = true;
    /* 8 streams, ceil(1024 / 64) = 16 block entries each, 24 indirection entries each */
    assert_true(io_table_bytes(&p) == 8.0 * 16 * 4 + 8.0 * 24 * 4);
    int splits;
    attn_io_t io = io_of("fused", &p, &splits);
    assert_true(fabs(io.bytes - (io_kv_bytes_stored(&p) + io_qo_bytes(&p) + io_table_bytes(&p))) < 1.0);
    p.cache = CACHE_CONTIGUOUS;
    p.indirection = false;
    assert_true(io_table_bytes(&p) == 0.0);
}

/* An 8-bit cache moves 1 B per K/V element, plus its scales (two floats, or two per kv
 * head); queries and output stay at --dtype. */
static void test_8bit_cache_at_one_byte_an_element(void **state)
{
    (void)state;
    const int B = 8, h = 32, g = 8, d = 128, ctx = 8192, gen = 128;
    problem_t p = test_problem(B, 1, h, g, d, ctx, gen);
    int splits;
    attn_io_t wide = io_of("fused", &p, &splits);
    const double elements = (double)B * (ctx + gen) * 2 * g * d;
    assert_true(io_kv_bytes_stored(&p) == 2.0 * elements);
    const dtype_t kinds[] = {DTYPE_FP8, DTYPE_INT8};
    for (int k = 0; k < 2; ++k) {
        p.kv_quant = kinds[k] == DTYPE_FP8 ? KV_QUANT_FP8 : KV_QUANT_INT8;
        p.kv_scale = KV_SCALE_TENSOR;
        assert_int_equal(problem_kv_dtype(&p), kinds[k]);
        assert_int_equal(dtype_size(problem_kv_dtype(&p)), 1);
        assert_true(io_kv_row_bytes(&p) == 2.0 * g * d);
        assert_true(io_kv_bytes_stored(&p) == elements);
        assert_true(io_scale_bytes(&p) == 2 * sizeof(float));
        attn_io_t io = io_of("fused", &p, &splits);
        assert_true(io.bytes == elements + io_qo_bytes(&p) + 2 * sizeof(float));
        assert_true(io_qo_bytes(&p) == 2.0 * B * h * d * 2); /* fp16 q and out */
        assert_true(io.unique_bytes == io.bytes);            /* W = 1: nothing shared */
        assert_true(io.flops == wide.flops);
        assert_true(wide.bytes - io.bytes == elements - 2 * sizeof(float)); /* half the cache, and scales */
        p.kv_scale = KV_SCALE_HEAD;
        assert_true(io_scale_bytes(&p) == 2.0 * g * sizeof(float));
        assert_true(io_table_bytes(&p) == 2.0 * g * sizeof(float));
        attn_io_t by_head = io_of("auto", &p, &splits);
        assert_true(by_head.bytes == elements + io_qo_bytes(&p) + 2.0 * g * sizeof(float));
    }
    /* the kernels that cannot read it say so */
    assert_non_null(attn_kernel_find("cublas")->unsupported(&p));
    assert_non_null(attn_kernel_find("cublas-bifurcated")->unsupported(&p));
    assert_null(attn_kernel_find("fused")->unsupported(&p));
    assert_null(attn_kernel_find("bifurcated")->unsupported(&p));
    assert_null(attn_kernel_find("auto")->unsupported(&p));
    p.kv_quant = KV_QUANT_NONE;
    assert_true(io_scale_bytes(&p) == 0.0);
}

/* bifurcated on an 8-bit cache: the context once per request and each stream's decoded
 * keys, at 1 B an element (on a paged cache, the per-stream copies of a partly filled last
 * context block too), plus the scales; against the 16-bit cache, half the K/V bytes. */
static void test_bifurcated_8bit_bytes_at_the_stored_width(void **state)
{
    (void)state;
    const int B = 2, W = 4, h = 32, g = 8, d = 128, ctx = 1000, gen = 40;
    problem_t caches[2] = {test_problem(B, W, h, g, d, ctx, gen), test_paged_problem(B, W, h, g, d, ctx, gen, 64)};
    for (int c = 0; c < 2; ++c) {
        problem_t p = caches[c];
        int splits;
        const attn_io_t wide = io_of("bifurcated", &p, &splits);
        const double shared = c == 0 ? ctx : (double)(ctx / 64 * 64);
        const double rows = (double)B * shared + (double)B * W * (ctx + gen - shared);
        const double tables = c == 0 ? 0.0 : (double)B * W * ((ctx + gen + 63) / 64) * 4;
        assert_true(fabs(wide.bytes - (rows * 2 * g * d * 2 + io_qo_bytes(&p) + tables)) < 1.0);
        const kv_quant_t quants[] = {KV_QUANT_FP8, KV_QUANT_INT8};
        for (int q = 0; q < 2; ++q) {
            p.kv_quant = quants[q];
            p.kv_scale = q ? KV_SCALE_HEAD : KV_SCALE_TENSOR;
            const double scales = 2.0 * (q ? g : 1) * sizeof(float);
            const attn_io_t io = io_of("bifurcated", &p, &splits);
            assert_true(fabs(io.bytes - (rows * 2 * g * d + io_qo_bytes(&p) + tables + scales)) < 1.0);
            assert_true(fabs((wide.bytes - io.bytes) - (rows * 2 * g * d - scales)) < 1.0);
            assert_true(io.flops == wide.flops);
            /* contiguous: every byte once */
            if (c == 0) assert_true(fabs(io.bytes - io.unique_bytes) < 1.0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_partials_are_workspace),
        cmocka_unit_test(test_bifurcated_bytes_are_unique),
        cmocka_unit_test(test_tables_are_compulsory),
        cmocka_unit_test(test_8bit_cache_at_one_byte_an_element),
        cmocka_unit_test(test_bifurcated_8bit_bytes_at_the_stored_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
