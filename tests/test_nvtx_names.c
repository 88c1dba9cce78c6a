/* Names of the NVTX ranges of one configuration (harness/nvtx.c): what a profiler
 * timeline shows, so they must say kernel and shape. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../harness/nvtx.h"

static void test_kernel_and_shape(void **state)
{
    (void)state;
    problem_t p = problem_default();
    p.beam = 16;
    p.kv_heads = 8;
    char buf[256];
    nvtx_config_name(buf, sizeof buf, "fused", &p);
    assert_string_equal(buf, "fused B1 W16 h32 g8 d128 ctx8192 gen128 fp16 contiguous");
}

static void test_paged_bf16_details(void **state)
{
    (void)state;
    problem_t p = problem_default();
    p.batch = 4;
    p.dtype = DTYPE_BF16;
    p.cache = CACHE_PAGED;
    p.block_size = 32;
    p.indirection = true;
    p.splits = 8;
    char buf[256];
    nvtx_config_name(buf, sizeof buf, "fused", &p);
    assert_string_equal(buf, "fused B4 W1 h32 g32 d128 ctx8192 gen128 bf16 paged S32 indirection splits8");
}

static void test_without_kernel(void **state)
{
    (void)state;
    problem_t p = problem_default();
    char buf[256];
    nvtx_config_name(buf, sizeof buf, NULL, &p);
    assert_string_equal(buf, "B1 W1 h32 g32 d128 ctx8192 gen128 fp16 contiguous");
    nvtx_config_name(buf, sizeof buf, "bifurcated", NULL);
    assert_string_equal(buf, "bifurcated");
}

static void test_truncation_stays_terminated(void **state)
{
    (void)state;
    problem_t p = problem_default();
    char buf[12];
    memset(buf, 'z', sizeof buf);
    nvtx_config_name(buf, sizeof buf, "cublas-bifurcated", &p);
    assert_int_equal(strlen(buf), sizeof buf - 1);
    assert_memory_equal(buf, "cublas-bifu", sizeof buf);
    char small[20];
    nvtx_config_name(small, sizeof small, "fused", &p);
    assert_string_equal(small, "fused B1 W1 h32 g32");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_and_shape),
        cmocka_unit_test(test_paged_bf16_details),
        cmocka_unit_test(test_without_kernel),
        cmocka_unit_test(test_truncation_stays_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
