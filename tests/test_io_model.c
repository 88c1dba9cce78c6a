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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_partials_are_workspace),
        cmocka_unit_test(test_bifurcated_bytes_are_unique),
        cmocka_unit_test(test_tables_are_compulsory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
