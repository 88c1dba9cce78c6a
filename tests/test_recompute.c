/* Select-Attention's recomputed K/V on the CPU: the hidden states and projections are
 * exact in every dtype; the reference's x W is the plain sum; the check of a kernel's
 * K/V passes them as x W gives them and fails one wrong element; the reference over K/V
 * read back (recompute_source) is the selected step's over the cache's keys when they
 * hold the same values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/layouts.h"
#include "../harness/recompute_check.h"
#include "../problem/kv_fill.h"
#include "../problem/recompute.h"
#include "../reference/recompute.h"
#include "test_problem.h"

/* Every value is k/128 times a power of two with |k| <= 127: 8 significant bits at most
 * (fp16 has 11, bf16 8). */
static void assert_exact_8bit(double v, double amplitude)
{
    const double k = v * 128.0 / amplitude;
    assert_true(k == floor(k) && fabs(k) <= 127.0);
}

static void test_inputs_exact(void **state)
{
    (void)state;
    const int hidden = 4096;
    const double a = recompute_w_amplitude(hidden);
    assert_true(a == 1.0 / 64.0); /* a^2 hidden = 1: sums of the cache's spread */
    assert_true(recompute_w_amplitude(512) == 1.0 / 16.0);
    for (int i = 0; i < 1000; ++i) {
        assert_exact_8bit(recompute_x(7, hidden, (uint64_t)i * 31, i % hidden), 1.0);
        assert_exact_8bit(recompute_w(7, 8, hidden, 128, i % 2, i % 8, i % hidden, i % 128), a);
    }
}

/* Tokens: a request's context token is the same for all its streams; decoded ones differ
 * by stream, and through the indirection table are the beam's the cache reads. */
static void test_tokens(void **state)
{
    (void)state;
    problem_t p = test_problem(2, 3, 4, 2, 16, 10, 4);
    p.indirection = true;
    kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    const int streams = problem_streams(&p), L = problem_keys(&p);
    assert_true(recompute_token(&g, NULL, streams, 3, 5) == recompute_token(&g, NULL, streams, 5, 5));
    assert_true(recompute_token(&g, NULL, streams, 3, 5) != recompute_token(&g, NULL, streams, 0, 5));
    assert_true(recompute_token(&g, NULL, streams, 3, 11) != recompute_token(&g, NULL, streams, 4, 11));
    int32_t *ind = calloc((size_t)streams * L, sizeof *ind);
    assert_non_null(ind);
    ind[(size_t)4 * L + 11] = 2; /* stream 4 (request 1, beam 1) reads beam 2's position 11 */
    assert_true(recompute_token(&g, ind, streams, 4, 11) == recompute_token(&g, NULL, streams, 5, 11));
    free(ind);
}

static void test_reference_is_the_sum(void **state)
{
    (void)state;
    const int g = 2, hidden = 24, d = 8;
    float *w = malloc((size_t)2 * g * hidden * d * sizeof *w);
    assert_non_null(w);
    reference_recompute_w(5, g, hidden, d, w);
    double want[8], scale[8];
    reference_recomputed_kv(w, 5, g, hidden, d, 77, 1, 1, want, scale);
    for (int x = 0; x < d; ++x) {
        double sum = 0.0, mag = 0.0;
        for (int e = 0; e < hidden; ++e) {
            const double t = (double)recompute_x(5, hidden, 77, e) * recompute_w(5, g, hidden, d, 1, 1, e, x);
            sum += t;
            mag += fabs(t);
        }
        assert_true(fabs(want[x] - sum) < 1e-12);
        assert_true(fabs(scale[x] - mag) < 1e-12);
    }
    free(w);
}

/* An own_kv_host_t for p: each stream keeps keys 0, 2, 5 and its last (every stream the
 * same positions), its K/V rows from fill(stream, which, head, key, x). */
typedef double (*kv_value_fn)(const problem_t *p, const kv_geometry_t *g, int s, int which, int head, int key, int x);

static void make_own(const problem_t *p, const kv_geometry_t *g, kv_value_fn fill, own_kv_host_t *h)
{
    const int streams = problem_streams(p), keys = problem_keys(p), d = p->head_dim, kvh = p->kv_heads;
    const int kept[] = {0, 2, 5, keys - 1};
    memset(h, 0, sizeof *h);
    h->rows = 4;
    h->kv = malloc((size_t)streams * 2 * kvh * h->rows * d * sizeof *h->kv);
    h->counts = malloc((size_t)streams * sizeof *h->counts);
    h->index = malloc((size_t)streams * keys * sizeof *h->index);
    assert_non_null(h->kv);
    assert_non_null(h->counts);
    assert_non_null(h->index);
    for (int s = 0; s < streams; ++s) {
        h->counts[s] = 4;
        for (int i = 0; i < 4; ++i) h->index[(size_t)s * keys + i] = kept[i];
        for (int which = 0; which < 2; ++which)
            for (int head = 0; head < kvh; ++head)
                for (int i = 0; i < 4; ++i)
                    for (int x = 0; x < d; ++x)
                        h->kv[((((size_t)s * 2 + which) * kvh + head) * h->rows + i) * d + x] =
                            (float)fill(p, g, s, which, head, kept[i], x);
    }
    assert_int_equal(own_kv_shape(h, p, g), 0);
}

static double x_w(const problem_t *p, const kv_geometry_t *g, int s, int which, int head, int key, int x)
{
    const int hidden = recompute_hidden(p->heads, p->head_dim);
    const uint64_t token = recompute_token(g, NULL, problem_streams(p), s, key);
    double sum = 0.0;
    for (int e = 0; e < hidden; ++e)
        sum += (double)recompute_x(3, hidden, token, e) * recompute_w(3, p->kv_heads, hidden, p->head_dim, which, head, e, x);
    return sum;
}

static void test_check_passes_x_w_and_fails_one_element(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 2, 4, 2, 16, 9, 2);
    p.dtype = DTYPE_FP32;
    const kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    own_kv_host_t h;
    make_own(&p, &g, x_w, &h);
    result_row_t row;
    memset(&row, 0, sizeof row);
    snprintf(row.status, sizeof row.status, "ok");
    assert_int_equal(recompute_check(&h, &p, &g, NULL, 3, 1.0, &row), 0);
    assert_string_equal(row.status, "ok");
    /* stream 1's last kept token (always checked), V of kv head 1, element 7 */
    h.kv[((((size_t)1 * 2 + 1) * 2 + 1) * h.rows + 3) * 16 + 7] += 0.01f;
    assert_int_equal(recompute_check(&h, &p, &g, NULL, 3, 1.0, &row), 0);
    assert_string_equal(row.status, "mismatch");
    assert_string_equal(row.verified, "no");
    own_kv_free(&h);
    /* a row never written (NaN, as the kernel poisons them) in a token no draw reaches */
    make_own(&p, &g, x_w, &h);
    h.kv[((((size_t)0 * 2 + 0) * 2 + 1) * h.rows + 1) * 16 + 3] = NAN;
    snprintf(row.status, sizeof row.status, "ok");
    assert_int_equal(recompute_check(&h, &p, &g, NULL, 3, 0.0, &row), 0);
    assert_string_equal(row.status, "mismatch");
    own_kv_free(&h);
}

static void test_bound(void **state)
{
    (void)state;
    /* fp16: half an ulp relative, plus the float sum's rounding */
    assert_true(recompute_bound(DTYPE_FP16, 4096, 1.0, 0.0) == ldexp(1.0, -11));
    assert_true(recompute_bound(DTYPE_BF16, 4096, 1.0, 0.0) == ldexp(1.0, -8));
    assert_true(recompute_bound(DTYPE_FP32, 4096, 0.0, 10.0) == 4096 * ldexp(1.0, -24) * 10.0);
}

static double cache_value(const problem_t *p, const kv_geometry_t *g, int s, int which, int head, int key, int x)
{
    (void)p;
    return kv_stored(g, 11, s, which, head, key, x);
}

/* The reference over K/V read back equals the selected step's over the cache's keys
 * when those rows hold the cache's values: the geometry, the mask and the queries map. */
static void test_source_is_the_selected_step(void **state)
{
    (void)state;
    problem_t p = test_problem(2, 2, 4, 2, 16, 9, 3);
    p.dtype = DTYPE_FP32;
    const kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    const int streams = problem_streams(&p), keys = problem_keys(&p);
    own_kv_host_t h;
    make_own(&p, &g, cache_value, &h);
    ref_source_t own = recompute_source(&h, 11);
    ref_source_t cache = test_logical_source(&p, LAYOUT_CONTIGUOUS, 11);
    unsigned char *mask = calloc((size_t)streams * keys, 1);
    assert_non_null(mask);
    for (int s = 0; s < streams; ++s)
        for (int i = 0; i < 4; ++i) mask[(size_t)s * keys + h.index[(size_t)s * keys + i]] = 1;
    cache.key_mask = mask;
    for (int s = 0; s < streams; ++s)
        for (int head = 0; head < p.heads; ++head) {
            double a[16], b[16];
            reference_row(&own, s, head, a);
            reference_row(&cache, s, head, b);
            for (int x = 0; x < p.head_dim; ++x) assert_true(fabs(a[x] - b[x]) < 1e-12);
        }
    free(mask);
    own_kv_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inputs_exact),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_reference_is_the_sum),
        cmocka_unit_test(test_check_passes_x_w_and_fails_one_element),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_source_is_the_selected_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
