/* The per-row verification judgement (harness/verify.c) on host buffers: a correct
 * output passes, one bad row among many fails where a pooled error would pass, a NaN
 * in a row the reference never computed fails, and the stratified row choice. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/layouts.h"
#include "../harness/verify.h"
#include "../problem/logical_data.h"
#include "../reference/reference.h"
#include "test_problem.h"

/* One output computed by the reference for every row, as a kernel would give it. */
typedef struct case_ {
    problem_t p;
    long rows;
    int d;
    double *want;   /* every row, rows * d */
    float *got;     /* every row, rows * d */
} case_t;

static void case_make(case_t *c, int batch, int beam, int heads, int kv_heads)
{
    c->p = test_problem(batch, beam, heads, kv_heads, 64, 9, 3);
    c->d = c->p.head_dim;
    c->rows = (long)problem_streams(&c->p) * heads;
    c->want = malloc((size_t)c->rows * c->d * sizeof *c->want);
    c->got = malloc((size_t)c->rows * c->d * sizeof *c->got);
    assert_non_null(c->want);
    assert_non_null(c->got);
    ref_source_t src = {0};
    src.p = &c->p;
    src.geom = kv_geometry_make(&c->p, LAYOUT_CONTIGUOUS);
    src.seed = 7;
    double norm = 0;
    for (long r = 0; r < c->rows; ++r) {
        reference_row(&src, (int)(r / heads), (int)(r % heads), c->want + r * c->d);
        for (int x = 0; x < c->d; ++x) norm += fabs(c->want[r * c->d + x]);
    }
    assert_true(norm > 0.01 * c->rows * c->d);   /* a real output, not zeros */
    for (long i = 0; i < c->rows * c->d; ++i) c->got[i] = (float)c->want[i];
}

static void case_free(case_t *c)
{
    free(c->want);
    free(c->got);
}

/* The reference of the rows at[0..n), gathered as the runner keeps them. */
static double *gather(const case_t *c, const long *at, long n)
{
    double *w = malloc((size_t)n * c->d * sizeof *w);
    assert_non_null(w);
    for (long i = 0; i < n; ++i) memcpy(w + i * c->d, c->want + at[i] * c->d, c->d * sizeof *w);
    return w;
}

static verify_verdict_t judge_all(const case_t *c, double tol)
{
    long *at = malloc((size_t)c->rows * sizeof *at);
    assert_non_null(at);
    assert_int_equal(verify_pick_rows(&c->p, c->rows, 1, at), c->rows);
    verify_verdict_t v;
    verify_judge(c->got, c->rows, c->d, at, c->want, c->rows, tol, verify_abs_bound(DTYPE_FP16, 1.0), &v);
    free(at);
    return v;
}

static void test_correct_output_passes(void **state)
{
    (void)state;
    case_t c;
    case_make(&c, 2, 4, 8, 2);
    verify_verdict_t v = judge_all(&c, tolerance_for(DTYPE_FP16));
    assert_true(v.ok);
    assert_int_equal(v.checked, c.rows);
    assert_int_equal(v.nonfinite, 0);
    assert_true(v.worst_rel < 1e-6);
    case_free(&c);
}

static void test_one_bad_row_fails(void **state)
{
    (void)state;
    case_t c;
    case_make(&c, 2, 4, 8, 2);
    long bad = 37;
    for (int x = 0; x < c.d; ++x) c.got[bad * c.d + x] *= 1.01f;   /* 1% off, one row of 64 */
    /* pooled over all rows the error is 1% / 8, under fp16's 2e-3: that would pass */
    err_acc_t pooled = {0};
    err_add(&pooled, c.want, c.got, (int)(c.rows * c.d));
    assert_true(err_rel(&pooled) < tolerance_for(DTYPE_FP16));
    verify_verdict_t v = judge_all(&c, tolerance_for(DTYPE_FP16));
    assert_false(v.ok);
    assert_int_equal(v.worst_row, bad);
    assert_true(fabs(v.worst_rel - 0.01) < 1e-4);
    case_free(&c);
}

static void test_nan_in_unchecked_row_fails(void **state)
{
    (void)state;
    case_t c;
    case_make(&c, 2, 4, 8, 2);
    long n = 16, at[16];
    assert_int_equal(verify_pick_rows(&c.p, n, 3, at), n);
    long unchecked = -1;
    for (long r = 0; r < c.rows && unchecked < 0; ++r) {
        int seen = 0;
        for (long i = 0; i < n; ++i) seen |= at[i] == r;
        if (!seen) unchecked = r;
    }
    assert_true(unchecked >= 0);
    double *want = gather(&c, at, n);
    verify_verdict_t v;
    double tol = tolerance_for(DTYPE_FP16), bound = verify_abs_bound(DTYPE_FP16, 1.0);
    verify_judge(c.got, c.rows, c.d, at, want, n, tol, bound, &v);
    assert_true(v.ok);
    c.got[unchecked * c.d + 5] = NAN;
    verify_judge(c.got, c.rows, c.d, at, want, n, tol, bound, &v);
    assert_false(v.ok);
    assert_int_equal(v.nonfinite, 1);
    c.got[unchecked * c.d + 5] = INFINITY;
    verify_judge(c.got, c.rows, c.d, at, want, n, tol, bound, &v);
    assert_false(v.ok);
    free(want);
    case_free(&c);
}

static void test_abs_bound_catches_one_element(void **state)
{
    (void)state;
    case_t c;
    case_make(&c, 1, 2, 4, 4);
    /* a relative tolerance loose enough that only the absolute bound can fail */
    c.got[3 * c.d + 10] += 3e-3f;
    verify_verdict_t v = judge_all(&c, 1.0);
    assert_false(v.ok);
    assert_true(v.max_abs > verify_abs_bound(DTYPE_FP16, 1.0));
    c.got[3 * c.d + 10] = (float)c.want[3 * c.d + 10] + 1e-3f;
    v = judge_all(&c, 1.0);
    assert_true(v.ok);
    assert_true(verify_abs_bound(DTYPE_FP16, KV_AMPLITUDE) == 2e-3);
    assert_true(verify_abs_bound(DTYPE_BF16, KV_AMPLITUDE) == 1.6e-2);
    case_free(&c);
}

static void test_pick_rows_stratified(void **state)
{
    (void)state;
    problem_t p = test_problem(3, 5, 8, 2, 64, 9, 3);
    long rows = 3 * 5 * 8;
    long at[120];
    long n = verify_pick_rows(&p, 20, 11, at);
    assert_int_equal(n, 20);
    unsigned char seen[120] = {0};
    for (long i = 0; i < n; ++i) {
        assert_true(at[i] >= 0 && at[i] < rows);
        assert_false(seen[at[i]]);   /* distinct */
        seen[at[i]] = 1;
    }
    /* first and last request, stream of a request and head, crossed */
    int requests[2] = {0, 2}, beams[2] = {0, 4}, heads[2] = {0, 7};
    for (int b = 0; b < 2; ++b)
        for (int w = 0; w < 2; ++w)
            for (int h = 0; h < 2; ++h)
                assert_true(seen[(requests[b] * 5 + beams[w]) * 8 + heads[h]]);
    /* asking for all (or more) gives all, in order */
    assert_int_equal(verify_pick_rows(&p, 1000, 11, at), rows);
    for (long i = 0; i < rows; ++i) assert_int_equal(at[i], i);
    /* a larger choice continues a smaller one with the same seed */
    long small[10], large[40];
    assert_int_equal(verify_pick_rows(&p, 10, 5, small), 10);
    assert_int_equal(verify_pick_rows(&p, 40, 5, large), 40);
    assert_memory_equal(small, large, sizeof small);
}

/* A row whose context comes from a materialised group equals one computed from the
 * logical definition, and a cache of another group is not used. */
static void test_context_cache_same_result(void **state)
{
    (void)state;
    problem_t p = test_problem(2, 3, 8, 2, 64, 37, 4);
    p.indirection = true;
    ref_source_t src = {0};
    src.p = &p;
    src.geom = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    src.seed = 5;
    float *ctx = malloc((size_t)2 * p.ctx * p.head_dim * sizeof *ctx);
    assert_non_null(ctx);
    reference_ctx_fill(&src, 1, 1, ctx);
    ref_source_t cached = src;
    cached.ctx_kv = ctx;
    cached.ctx_request = 1;
    cached.ctx_head = 1;
    double a[64], b[64], own[64];
    reference_row(&src, 4, 5, own);    /* request 1 (stream 4 of beam 3), kv head 1 */
    reference_row(&cached, 4, 5, b);
    assert_memory_equal(own, b, sizeof b);
    for (long i = 0; i < 2L * p.ctx * p.head_dim; ++i) ctx[i] = 0.5f;   /* not this group's */
    reference_row(&src, 0, 5, a);      /* request 0 */
    reference_row(&cached, 0, 5, b);
    assert_memory_equal(a, b, sizeof a);
    reference_row(&cached, 4, 5, b);   /* its group reads the (now wrong) cache */
    assert_memory_not_equal(own, b, sizeof b);
    free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_output_passes),
        cmocka_unit_test(test_one_bad_row_fails),
        cmocka_unit_test(test_nan_in_unchecked_row_fails),
        cmocka_unit_test(test_abs_bound_catches_one_element),
        cmocka_unit_test(test_pick_rows_stratified),
        cmocka_unit_test(test_context_cache_same_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
