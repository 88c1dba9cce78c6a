/* The `cudnn` peer's static side, which needs neither a GPU nor libcudnn: it is
 * registered with its package; where the frontend was there to build it, it takes
 * fp16/bf16 decode on both caches and turns away what cuDNN's SDPA cannot run, and its
 * bytes are the cache's K/V, q, out and the tables. Built without the frontend, every
 * row is unsupported, naming `make peers`. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "../kernels/registry.h"
#include "test_problem.h"

static const attn_kernel_t *cudnn_kernel(void)
{
    const attn_kernel_t *k = attn_kernel_find("cudnn");
    assert_non_null(k);
    assert_non_null(k->peer);
    assert_non_null(strstr(k->peer, "cuDNN frontend 1.32.0"));
    return k;
}

static int cudnn_built(const attn_kernel_t *k) { return strstr(k->peer, "not built") == NULL; }

static void test_stub_names_make_peers(void **state)
{
    (void)state;
    const attn_kernel_t *k = cudnn_kernel();
    if (cudnn_built(k)) skip();
    problem_t p = test_problem(1, 1, 32, 8, 128, 2048, 128);
    const char *why = k->unsupported(&p);
    assert_non_null(why);
    assert_non_null(strstr(why, "make peers"));
}

static void test_decode_shapes_are_taken(void **state)
{
    (void)state;
    const attn_kernel_t *k = cudnn_kernel();
    if (!cudnn_built(k)) skip();
    const int kv_heads[] = {32, 8, 1};
    const int head_dims[] = {64, 128};
    for (int dt = 0; dt < 2; ++dt)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 2; ++j) {
                problem_t c = test_problem(4, 2, 32, kv_heads[i], head_dims[j], 2048, 128);
                c.dtype = dt ? DTYPE_BF16 : DTYPE_FP16;
                assert_null(k->unsupported(&c));
                assert_int_equal(k->layout(&c), LAYOUT_CONTIGUOUS);
                problem_t pg = test_paged_problem(4, 2, 32, kv_heads[i], head_dims[j], 2048, 128, 64);
                pg.dtype = c.dtype;
                assert_null(k->unsupported(&pg));
                assert_int_equal(k->layout(&pg), LAYOUT_PAGED);
            }
}

static void test_what_cudnn_cannot_run_is_turned_away(void **state)
{
    (void)state;
    const attn_kernel_t *k = cudnn_kernel();
    if (!cudnn_built(k)) skip();
    problem_t p = test_problem(1, 4, 32, 8, 128, 2048, 128);
    p.dtype = DTYPE_FP32;
    assert_non_null(k->unsupported(&p));
    p = test_problem(1, 4, 32, 8, 128, 2048, 128);
    p.indirection = true;
    assert_non_null(k->unsupported(&p));
    p = test_problem(1, 4, 32, 8, 128, 2048, 128);
    p.splits = 4;
    assert_non_null(k->unsupported(&p));
    p = test_problem(1, 4, 32, 8, 128, 2048, 128);
    p.multi_block = MULTI_BLOCK_ON;
    assert_non_null(k->unsupported(&p));
}

static attn_io_t io_of(const attn_kernel_t *k, const problem_t *p)
{
    device_info_t dev = test_h100();
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    k->plan(p, &dev, &plan);
    assert_ptr_equal(plan.runs, k);
    assert_int_equal(plan.split.splits, 1);
    assert_int_equal(k->workspace_bytes(p, &plan), 0);
    assert_true(k->private_bytes(p, &plan) > 0);
    return k->io(p, &plan);
}

static void test_bytes_are_the_cache_and_tables(void **state)
{
    (void)state;
    const attn_kernel_t *k = cudnn_kernel();
    if (!cudnn_built(k)) skip();
    problem_t c = test_problem(2, 4, 32, 8, 128, 2048, 128);
    attn_io_t io = io_of(k, &c);
    assert_true(fabs(io.bytes - (io_kv_bytes_replicated(&c) + io_qo_bytes(&c))) < 1.0);
    assert_true(fabs(io.flops - io_flops(&c)) < 1.0);
    /* paged: the shared context blocks once, the page table and both length arrays */
    problem_t pg = test_paged_problem(2, 4, 32, 8, 128, 2048, 128, 64);
    io = io_of(k, &pg);
    double lens = 2.0 * problem_streams(&pg) * sizeof(int32_t);
    assert_true(fabs(io.bytes - (io_kv_bytes_stored(&pg) + io_qo_bytes(&pg) + io_table_bytes(&pg) + lens)) < 1.0);
    assert_true(io.bytes < io_kv_bytes_replicated(&pg));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stub_names_make_peers),
        cmocka_unit_test(test_decode_shapes_are_taken),
        cmocka_unit_test(test_what_cudnn_cannot_run_is_turned_away),
        cmocka_unit_test(test_bytes_are_the_cache_and_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
