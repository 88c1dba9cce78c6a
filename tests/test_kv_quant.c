/* The 8-bit KV cache's numbers and its reference: e4m3 and int8 codes of known values
 * (rounding to nearest even, saturation at 448 and 127), the scales from the data's
 * range, the cache holding codes, the reference dequantising them by the scale of the
 * right tensor and kv head, and every layout agreeing on a quantised cache. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/layouts.h"
#include "../harness/layouts_internal.h"
#include "../problem/kv_fill.h"
#include "../problem/kv_quant.h"
#include "../reference/reference.h"
#include "../reference/reference_internal.h"
#include "test_problem.h"

static problem_t quant_problem(int batch, int beam, int heads, int kv_heads, int head_dim, int ctx, int gen,
                               kv_quant_t quant, kv_scale_t scale)
{
    problem_t p = test_paged_problem(batch, beam, heads, kv_heads, head_dim, ctx, gen, 8);
    p.kv_quant = quant;
    p.kv_scale = scale;
    char msg[256];
    assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
    return p;
}

static void test_e4m3_known_values(void **state)
{
    (void)state;
    const struct { float in; uint8_t bits; float out; } cases[] = {
        {0.0f, 0x00, 0.0f},
        {1.0f, 0x38, 1.0f},              /* exponent 7 (bias 7), mantissa 0 */
        {-1.0f, 0xb8, -1.0f},
        {1.125f, 0x39, 1.125f},
        {1.0625f, 0x38, 1.0f},           /* halfway: to the even mantissa 0 */
        {1.1875f, 0x3a, 1.25f},          /* halfway: to the even mantissa 2 */
        {1.1f, 0x39, 1.125f},
        {240.0f, 0x77, 240.0f},
        {448.0f, 0x7e, 448.0f},          /* the largest finite value */
        {449.0f, 0x7e, 448.0f},          /* saturated, as __NV_SATFINITE */
        {464.0f, 0x7e, 448.0f},
        {1e9f, 0x7e, 448.0f},
        {INFINITY, 0x7e, 448.0f},
        {-500.0f, 0xfe, -448.0f},
        {0.015625f, 0x08, 0.015625f},    /* 2^-6, the smallest normal */
        {0.001953125f, 0x01, 0.001953125f}, /* 2^-9, the smallest subnormal */
        {0.0029296875f, 0x02, 0.00390625f}, /* 1.5 * 2^-9: halfway, to the even 2 */
        {0.013671875f, 0x07, 0.013671875f}, /* 7 * 2^-9, the largest subnormal */
        {0.0009765625f, 0x00, 0.0f},     /* 2^-10: halfway to zero, even */
        {0.0155f, 0x08, 0.015625f},      /* rounds up into the normals */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        uint8_t b = e4m3_from_float(cases[i].in);
        if (b != cases[i].bits) fail_msg("e4m3(%g) = 0x%02x, want 0x%02x", cases[i].in, b, cases[i].bits);
        assert_true(e4m3_to_float(b) == cases[i].out);
    }
    assert_int_equal(e4m3_from_float(NAN), 0x7f);
    assert_true(isnan(e4m3_to_float(0x7f)));
    assert_true(isnan(e4m3_to_float(0xff)));
    assert_true(signbit(e4m3_to_float(0x80)) && e4m3_to_float(0x80) == 0.0f);
}

/* Every finite code decodes to a value that encodes back to it; positive codes grow
 * with their bits. */
static void test_e4m3_round_trip_of_every_code(void **state)
{
    (void)state;
    float last = -1.0f;
    for (int c = 0; c < 256; ++c) {
        if ((c & 0x7f) == 0x7f) continue;
        const float v = e4m3_to_float((uint8_t)c);
        assert_true(isfinite(v));
        assert_int_equal(e4m3_from_float(v), c);
        if (c < 0x80) {
            assert_true(v > last);
            last = v;
        }
    }
    assert_true(last == E4M3_MAX);
}

static void test_int8_known_values(void **state)
{
    (void)state;
    const struct { float in; int code; } cases[] = {
        {0.0f, 0}, {1.0f, 1}, {-1.0f, -1}, {2.5f, 2}, {3.5f, 4}, {-2.5f, -2},
        {126.5f, 126}, {127.0f, 127}, {127.5f, 127}, {300.0f, 127}, {-127.0f, -127},
        {-300.0f, -127}, /* symmetric: never -128 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        uint8_t b = int8_from_float(cases[i].in);
        if ((int8_t)b != cases[i].code) fail_msg("int8(%g) = %d, want %d", cases[i].in, (int8_t)b, cases[i].code);
        assert_true(int8_to_float(b) == (float)cases[i].code);
    }
    assert_int_equal(int8_from_float(NAN), INT8_CODE_UNUSED);
    assert_true(int8_to_float(INT8_CODE_UNUSED) == -128.0f);
}

/* amax / 448 and amax / 127 of the tensor's widest head (per tensor) or of the head. */
static void test_scales_follow_the_range(void **state)
{
    (void)state;
    kv_geometry_t g;
    memset(&g, 0, sizeof g);
    g.kv_heads = 8;
    g.kv_quant = KV_QUANT_FP8;
    const float widest = 127.0f / 128.0f;
    assert_true(kv_quant_scale(&g, 0, 3) == widest / 448.0f);  /* per tensor: K of head 0 */
    assert_true(kv_quant_scale(&g, 1, 0) == widest / 448.0f);  /* V of head 2 */
    g.kv_scale_per_head = 1;
    for (int which = 0; which < 2; ++which)
        for (int h = 0; h < 8; ++h) {
            const float amp = kv_quant_amplitude(which, h);
            assert_true(kv_quant_scale(&g, which, h) == widest * amp / 448.0f);
        }
    /* the ranges differ by head, and V's from K's */
    assert_true(kv_quant_amplitude(0, 1) == 0.5f && kv_quant_amplitude(0, 3) == 0.125f);
    assert_true(kv_quant_amplitude(1, 0) == 0.25f && kv_quant_amplitude(1, 2) == 1.0f);
    g.kv_quant = KV_QUANT_INT8;
    assert_true(kv_quant_scale(&g, 0, 3) == 1.0f / 1024.0f); /* (127/128)/8/127, exact */
    /* per tensor with one kv head: that head's range */
    g.kv_scale_per_head = 0;
    g.kv_heads = 1;
    assert_true(kv_quant_scale(&g, 1, 0) == 0.25f / 128.0f);
    assert_int_equal(kv_scale_entries(&g), 1);
    g.kv_scale_per_head = 1;
    g.kv_heads = 6;
    assert_int_equal(kv_scale_entries(&g), 6);
}

/* The cache holds the code of logical / scale: codes span the format's range (the
 * widest head reaches +-448 or +-127), int8 of a head at the tensor's full range is
 * lossless, e4m3 is not, and a dequantised value is within half a code step of its
 * logical one. */
static void test_cache_holds_codes(void **state)
{
    (void)state;
    const kv_quant_t quants[] = {KV_QUANT_FP8, KV_QUANT_INT8};
    for (int qi = 0; qi < 2; ++qi) {
        problem_t p = quant_problem(1, 1, 4, 4, 64, 300, 4, quants[qi], KV_SCALE_TENSOR);
        kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
        const float top = quants[qi] == KV_QUANT_FP8 ? E4M3_MAX : (float)INT8_CODE_MAX;
        float widest = 0.0f;
        int lossy = 0;
        for (int h = 0; h < 4; ++h)
            for (int pos = 0; pos < 304; ++pos)
                for (int x = 0; x < 64; ++x) {
                    const float v = kv_logical(&g, 11, 0, 0, h, pos, x), c = kv_stored(&g, 11, 0, 0, h, pos, x);
                    const double scale = kv_quant_scale(&g, 0, h), back = c * scale;
                    assert_true(fabsf(c) <= top);
                    assert_true(kv_quant_code_value(g.kv_quant, kv_quant_code(g.kv_quant, c)) == c);
                    widest = fmaxf(widest, fabsf(c));
                    lossy += back != v;
                    /* e4m3: 3 mantissa bits, half a step <= 1/16 relative; int8: half a code */
                    const double tol = quants[qi] == KV_QUANT_FP8 ? fabs(v) / 16.0 + scale / 2 : scale / 2;
                    assert_true(fabs(back - v) <= tol + 1e-12);
                    if (h == 0 && quants[qi] == KV_QUANT_INT8) assert_true(back == v);
                }
        assert_true(widest == top);
        assert_true(lossy > 0); /* int8's narrow heads and every e4m3 head round */
    }
}

/* L = 2, d = 8 over a hand-made 8-bit cache of two kv heads, per-head scales: each
 * head's output is the softmax of q.k * scale_K(head) * scale over V's codes times
 * scale_V(head), the kv head of query head i being i / (h/g). */
static void test_reference_dequantises_by_the_right_head(void **state)
{
    (void)state;
    const int d = 8, L = 2, g = 2, h = 4;
    problem_t p = quant_problem(1, 1, h, g, d, 1, 1, KV_QUANT_FP8, KV_SCALE_HEAD);
    ref_source_t src;
    memset(&src, 0, sizeof src);
    src.p = &p;
    src.geom = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    src.seed = 4;
    /* [stream 1][K, V][g 2][L 2][d 8], codes' values, the same in both kv heads */
    float cache[2 * 2 * 2 * 8];
    for (int which = 0; which < 2; ++which)
        for (int kvh = 0; kvh < g; ++kvh)
            for (int pos = 0; pos < L; ++pos)
                for (int x = 0; x < d; ++x) {
                    float code = which == 0 ? (pos == 0 ? 0.0f : (x == 0 ? 448.0f : (x == 7 ? -96.0f : 13.0f)))
                                            : (float)(pos == 0 ? x + 1 : -(2 * x)) * 4.0f;
                    cache[((which * g + kvh) * L + pos) * d + x] = code;
                }
    src.kv = cache;
    for (int head = 0; head < h; ++head) {
        const int kvh = head / (h / g);
        const double sk = kv_quant_scale(&src.geom, 0, kvh), sv = kv_quant_scale(&src.geom, 1, kvh);
        double q[8], s1 = 0.0;
        for (int x = 0; x < d; ++x) q[x] = logical_q(src.seed, h, d, 0, head, x);
        for (int x = 0; x < d; ++x) s1 += q[x] * cache[((0 * g + kvh) * L + 1) * d + x] * sk;
        s1 *= problem_scale(&p); /* s0 = 0: key 0's codes are zero */
        const double w1 = 1.0 / (1.0 + exp(-s1));
        double out[8], out_bif[8];
        reference_row(&src, 0, head, out);
        reference_row_bifurcated(&src, 0, head, out_bif);
        for (int x = 0; x < d; ++x) {
            const double v0 = cache[((1 * g + kvh) * L + 0) * d + x] * sv;
            const double v1 = cache[((1 * g + kvh) * L + 1) * d + x] * sv;
            const double want = (1.0 - w1) * v0 + w1 * v1;
            assert_true(fabs(out[x] - want) < 1e-12 * (1.0 + fabs(want)));
            assert_true(fabs(out_bif[x] - want) < 1e-12 * (1.0 + fabs(want)));
        }
    }
    /* the heads' scales differ, so the test sees which one the reference took */
    assert_true(kv_quant_scale(&src.geom, 0, 0) != kv_quant_scale(&src.geom, 0, 1));
    assert_true(kv_quant_scale(&src.geom, 1, 0) != kv_quant_scale(&src.geom, 1, 1));
    assert_true(kv_quant_scale(&src.geom, 0, 0) != kv_quant_scale(&src.geom, 1, 0));
}

typedef void (*ref_fn)(const ref_source_t *, int, int, double *);

static double max_row_diff(const ref_source_t *a, ref_fn fa, const ref_source_t *b, ref_fn fb)
{
    const problem_t *p = a->p;
    double ra[REF_MAX_HEAD_DIM], rb[REF_MAX_HEAD_DIM], worst = 0.0;
    for (int s = 0; s < problem_streams(p); ++s)
        for (int h = 0; h < p->heads; ++h) {
            fa(a, s, h, ra);
            fb(b, s, h, rb);
            for (int x = 0; x < p->head_dim; ++x) {
                assert_true(isfinite(ra[x]) && isfinite(rb[x]));
                worst = fmax(worst, fabs(ra[x] - rb[x]));
            }
        }
    return worst;
}

/* logical == contiguous == paged == bifurcated buffers, on 8-bit caches of both kinds
 * and both scale granularities, with indirection; and the quantised answer differs a
 * little from attention over the exact values (int8 with per-head scales excepted: this
 * data's values are whole codes there). */
static void test_layouts_agree_on_quantised_caches(void **state)
{
    (void)state;
    const kv_quant_t quants[] = {KV_QUANT_FP8, KV_QUANT_INT8};
    const kv_scale_t scales[] = {KV_SCALE_TENSOR, KV_SCALE_HEAD};
    for (int qi = 0; qi < 2; ++qi)
        for (int si = 0; si < 2; ++si) {
            problem_t p = quant_problem(2, 3, 8, 4, 16, 21, 6, quants[qi], scales[si]);
            const uint64_t seed = 900 + 2 * qi + si;
            int32_t *hist = beam_history_build(&p, seed);
            assert_non_null(hist);
            ref_source_t logical, cont, paged, bif;
            memset(&logical, 0, sizeof logical);
            logical.p = &p;
            logical.seed = seed;
            logical.indirection = hist;
            cont = paged = bif = logical;
            logical.geom = cont.geom = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
            paged.geom = kv_geometry_make(&p, LAYOUT_PAGED);
            bif.geom = kv_geometry_make(&p, LAYOUT_BIFURCATED);
            paged_map_t map;
            assert_int_equal(paged_map_build(&p, seed + 1, &map), 0);
            float *c = layout_materialize(&cont.geom, &p, seed, NULL, 0);
            float *pool = layout_materialize(&paged.geom, &p, seed, &map, 0);
            float *bc = layout_materialize(&bif.geom, &p, seed, NULL, 0);
            float *bd = layout_materialize(&bif.geom, &p, seed, NULL, 1);
            assert_true(c && pool && bc && bd);
            cont.kv = c;
            paged.kv = pool;
            paged.block_table = map.table;
            bif.kv_ctx = bc;
            bif.kv_dec = bd;
            assert_true(max_row_diff(&logical, reference_row, &cont, reference_row) == 0.0);
            assert_true(max_row_diff(&logical, reference_row, &paged, reference_row) == 0.0);
            assert_true(max_row_diff(&logical, reference_row, &bif, reference_row) == 0.0);
            assert_true(max_row_diff(&logical, reference_row, &logical, reference_row_bifurcated) < 1e-12);
            assert_true(max_row_diff(&logical, reference_row, &paged, reference_row_bifurcated) < 1e-12);

            /* the cache holds codes: attention over the exact logical values (a cache of
             * them, read unquantised) answers differently, but close */
            const int L = p.ctx + p.gen, d = p.head_dim;
            const int64_t n = layout_elements(&cont.geom, &p, 0);
            float *exact = malloc((size_t)n * sizeof *exact);
            assert_non_null(exact);
            for (int64_t e = 0; e < n; ++e) { /* [B*W, 2, g, L, d] */
                const int64_t row = e / d;
                const int pos = (int)(row % L), head = (int)(row / L % p.kv_heads);
                const int which = (int)(row / L / p.kv_heads % 2), stream = (int)(row / L / p.kv_heads / 2);
                exact[e] = kv_logical(&cont.geom, seed, stream, which, head, pos, (int)(e % d));
            }
            problem_t plain = p;
            plain.kv_quant = KV_QUANT_NONE;
            ref_source_t unq = cont;
            unq.p = &plain;
            unq.geom.kv_quant = KV_QUANT_NONE;
            unq.kv = exact;
            double ra[16], rq[16], diff = 0.0, norm = 0.0;
            reference_row(&logical, 1, 5, rq);
            reference_row(&unq, 1, 5, ra);
            for (int x = 0; x < d; ++x) {
                diff = fmax(diff, fabs(ra[x] - rq[x]));
                norm = fmax(norm, fabs(ra[x]));
            }
            if (quants[qi] == KV_QUANT_INT8 && scales[si] == KV_SCALE_HEAD)
                assert_true(diff == 0.0); /* every head's values are its codes times its scale */
            else
                assert_true(diff > 0.0 && diff < 0.25 * norm);
            free(exact);

            free(c);
            free(pool);
            free(bc);
            free(bd);
            paged_map_free(&map);
            free(hist);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_known_values),
        cmocka_unit_test(test_e4m3_round_trip_of_every_code),
        cmocka_unit_test(test_int8_known_values),
        cmocka_unit_test(test_scales_follow_the_range),
        cmocka_unit_test(test_cache_holds_codes),
        cmocka_unit_test(test_reference_dequantises_by_the_right_head),
        cmocka_unit_test(test_layouts_agree_on_quantised_caches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
