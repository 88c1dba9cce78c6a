/* The status a row gets from the error its steps stopped at: a failed device
 * allocation is `oom`, a setup that found the kernel cannot run the problem
 * (ATTN_SETUP_UNSUPPORTED, kernels/registry.h) is `unsupported` like a reason from
 * unsupported(), and only the rest is `error`, the one that fails a command. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../harness/runner.h"

static void test_setup_unsupported_is_an_unsupported_row(void **state)
{
    (void)state;
    assert_string_equal(runner_error_status(ATTN_SETUP_UNSUPPORTED), "unsupported");
    result_row_t row;
    result_row_init(&row);
    snprintf(row.status, sizeof row.status, "%s", runner_error_status(ATTN_SETUP_UNSUPPORTED));
    assert_int_equal(row_failed(&row), 0);
}

static void test_device_allocation_failure_is_oom(void **state)
{
    (void)state;
    assert_string_equal(runner_error_status(cudaErrorMemoryAllocation), "oom");
}

static void test_other_errors_fail_the_row(void **state)
{
    (void)state;
    const cudaError_t errors[] = {cudaErrorInvalidValue, cudaErrorIllegalAddress, cudaErrorUnknown,
                                  cudaErrorLaunchFailure};
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i) {
        assert_string_equal(runner_error_status(errors[i]), "error");
        result_row_t row;
        result_row_init(&row);
        snprintf(row.status, sizeof row.status, "%s", runner_error_status(errors[i]));
        assert_int_equal(row_failed(&row), 1);
    }
}

/* The code is none of the CUDA runtime's own, so no real failure can pass for it. */
static void test_the_code_is_no_cuda_error(void **state)
{
    (void)state;
    assert_int_not_equal(ATTN_SETUP_UNSUPPORTED, cudaSuccess);
    assert_string_equal(cudaGetErrorName(ATTN_SETUP_UNSUPPORTED), "unrecognized error code");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setup_unsupported_is_an_unsupported_row),
        cmocka_unit_test(test_device_allocation_failure_is_oom),
        cmocka_unit_test(test_other_errors_fail_the_row),
        cmocka_unit_test(test_the_code_is_no_cuda_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
