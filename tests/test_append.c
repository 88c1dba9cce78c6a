/* --step append (problem/append.h, reference/append.c): RoPE's pairs and angles, the
 * rounding to fp16 and bf16, the packed QKV's columns, what the step writes (rotated and
 * rounded q and k, v unchanged, an 8-bit cache's codes), the reference attending to it
 * in both source modes and both formulations, and the kernels, bytes and memory of the
 * step. */
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
#include "../harness/memplan.h"
#include "../kernels/registry.h"
#include "../problem/append.h"
#include "../reference/reference.h"
#include "../reference/reference_internal.h"
#include "test_problem.h"

static problem_t append_problem(int beam, int heads, int kv_heads, int head_dim, int ctx, int gen, rope_t rope)
{
    problem_t p = test_problem(2, beam, heads, kv_heads, head_dim, ctx, gen);
    p.step = STEP_APPEND;
    p.rope = rope;
    char msg[256];
    assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
    return p;
}

static void test_rope_pairs(void **state)
{
    (void)state;
    int x0, x1;
    rope_pair(ROPE_NEOX, 128, 0, &x0, &x1);
    assert_true(x0 == 0 && x1 == 64);
    rope_pair(ROPE_NEOX, 72, 35, &x0, &x1);
    assert_true(x0 == 35 && x1 == 71);
    rope_pair(ROPE_GPTJ, 128, 0, &x0, &x1);
    assert_true(x0 == 0 && x1 == 1);
    rope_pair(ROPE_GPTJ, 128, 63, &x0, &x1);
    assert_true(x0 == 126 && x1 == 127);
    /* every element in exactly one pair */
    for (int style = ROPE_NEOX; style <= ROPE_GPTJ; ++style) {
        int seen[256] = {0};
        for (int i = 0; i < 48; ++i) {
            rope_pair(style, 96, i, &x0, &x1);
            seen[x0]++;
            seen[x1]++;
        }
        for (int x = 0; x < 96; ++x) assert_int_equal(seen[x], 1);
    }
}

static void test_rope_angles_and_rotation(void **state)
{
    (void)state;
    /* pair 0 turns by the position itself, pair d/4 by position / sqrt(base) */
    assert_true(rope_angle(10000.0, 1.0, 128, 7, 0) == 7.0);
    assert_true(fabs(rope_angle(10000.0, 1.0, 128, 300, 32) - 3.0) < 1e-12);
    /* linear scaling divides the position */
    assert_true(fabs(rope_angle(10000.0, 4.0, 128, 300, 32) - 0.75) < 1e-12);
    assert_true(fabs(rope_angle(500000.0, 1.0, 64, 1000, 16) - 1000.0 / sqrt(500000.0)) < 1e-9);
    double y0, y1;
    /* position 0: no rotation */
    rope_rotate(10000.0, 1.0, 128, 0, 5, 0.75, -0.5, &y0, &y1);
    assert_true(y0 == 0.75 && y1 == -0.5);
    /* pair 0 at position 1: a turn of one radian, by cos and sin rounded to float */
    rope_rotate(10000.0, 1.0, 128, 1, 0, 1.0f, 0.0f, &y0, &y1);
    assert_true(y0 == (float)cos(1.0) && y1 == (float)sin(1.0));
    rope_rotate(10000.0, 1.0, 128, 1, 0, 0.0f, 1.0f, &y0, &y1);
    assert_true(y0 == -(float)sin(1.0) && y1 == (float)cos(1.0));
    float c, sn;
    rope_cos_sin(10000.0, 2.0, 64, 1000, 7, &c, &sn);
    assert_true(c == (float)cos(500.0 * pow(10000.0, -14.0 / 64)) && sn == (float)sin(500.0 * pow(10000.0, -14.0 / 64)));
    /* the products are exact in double: (a c - b s) rounded once */
    rope_turn(0.75f, -0.5f, c, sn, &y0, &y1);
    assert_true(y0 == 0.75 * (double)c + 0.5 * (double)sn && y1 == 0.75 * (double)sn - 0.5 * (double)c);
    /* a rotation keeps the pair's length, at long positions too (to float's cos/sin) */
    rope_rotate(10000.0, 1.0, 128, 1 << 20, 3, 0.3f, -0.4f, &y0, &y1);
    assert_true(fabs(hypot(y0, y1) - hypot(0.3f, -0.4f)) < 1e-7);
}

static void test_dtype_round(void **state)
{
    (void)state;
    const struct { float in; int t; float out; } cases[] = {
        {1.0f, DTYPE_FP16, 1.0f},
        {1.0f + 0x1p-11f, DTYPE_FP16, 1.0f},                  /* halfway: to even */
        {1.0f + 3 * 0x1p-11f, DTYPE_FP16, 1.0f + 0x1p-9f},    /* halfway: to even */
        {1.0f + 0x1p-11f + 0x1p-20f, DTYPE_FP16, 1.0f + 0x1p-10f},
        {-3.14159265f, DTYPE_FP16, -3.140625f},
        {0x1p-25f, DTYPE_FP16, 0.0f},                         /* half the smallest subnormal */
        {3 * 0x1p-25f, DTYPE_FP16, 0x1p-23f},
        {65519.0f, DTYPE_FP16, 65504.0f},
        {65520.0f, DTYPE_FP16, INFINITY},
        {1.0f + 0x1p-8f, DTYPE_BF16, 1.0f},
        {1.0f + 3 * 0x1p-8f, DTYPE_BF16, 1.0f + 0x1p-6f},
        {-3.14159265f, DTYPE_BF16, -3.140625f},
        {1.0f / 3.0f, DTYPE_BF16, 0.333984375f},
        {1.0f / 3.0f, DTYPE_FP16, 0.333251953125f},
        {1.2345678f, DTYPE_FP32, 1.2345678f},
        {0.0f, DTYPE_FP16, 0.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        float got = dtype_round(cases[i].in, cases[i].t);
        if (got != cases[i].out) fail_msg("case %zu: %.9g -> %.9g, want %.9g", i, cases[i].in, got, cases[i].out);
    }
    /* the logical data is exact: unchanged */
    for (int k = -127; k <= 127; ++k) {
        assert_true(dtype_round(k / 128.0f * 8.0f, DTYPE_FP16) == k / 128.0f * 8.0f);
        assert_true(dtype_round(k / 128.0f / 8.0f, DTYPE_BF16) == k / 128.0f / 8.0f);
    }
}

/* The packed QKV row: q's heads, then the current position's K, then its V. */
static void test_packed_qkv_columns(void **state)
{
    (void)state;
    problem_t p = append_problem(3, 8, 2, 64, 100, 5, ROPE_NEOX);
    p.kv_quant = KV_QUANT_INT8;
    kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    const uint64_t seed = 77;
    const int d = 64, stream = 4;
    for (int x = 0; x < d; x += 7) {
        assert_true(append_qkv_logical(&g, seed, 8, stream, 3 * d + x) == logical_q(seed, 8, d, stream, 3, x));
        for (int head = 0; head < 2; ++head)
            for (int which = 0; which < 2; ++which)
                assert_true(append_qkv_logical(&g, seed, 8, stream, (8 + which * 2 + head) * d + x) ==
                            kv_dec_logical(&g, seed, stream, which, head, p.gen - 1, x));
    }
}

/* What the step writes: q and k turned, rounded as stored; v as attend's cache holds it. */
static void test_step_writes(void **state)
{
    (void)state;
    const uint64_t seed = 5;
    for (int rope = ROPE_NEOX; rope <= ROPE_GPTJ; ++rope) {
        problem_t p = append_problem(2, 4, 2, 128, 1000, 3, (rope_t)rope);
        p.dtype = DTYPE_BF16;
        ref_source_t s = test_logical_source(&p, LAYOUT_CONTIGUOUS, seed);
        const int d = 128, pos = 1002, stream = 3;
        double q[128], k[128], v[128];
        reference_append_q(&s, stream, 1, q);
        reference_append_kv(&s, stream, 0, 1, k);
        reference_append_kv(&s, stream, 1, 1, v);
        double turned = 0;
        for (int i = 0; i < d / 2; ++i) {
            int x0, x1;
            rope_pair(rope, d, i, &x0, &x1);
            double y0, y1;
            rope_rotate(10000.0, 1.0, d, pos, i, logical_q(seed, 4, d, stream, 1, x0),
                        logical_q(seed, 4, d, stream, 1, x1), &y0, &y1);
            assert_true(q[x0] == dtype_round((float)y0, DTYPE_BF16));
            assert_true(q[x1] == dtype_round((float)y1, DTYPE_BF16));
            rope_rotate(10000.0, 1.0, d, pos, i, kv_dec_logical(&s.geom, seed, stream, 0, 1, 2, x0),
                        kv_dec_logical(&s.geom, seed, stream, 0, 1, 2, x1), &y0, &y1);
            assert_true(k[x0] == dtype_round((float)y0, DTYPE_BF16));
            assert_true(k[x1] == dtype_round((float)y1, DTYPE_BF16));
            turned += fabs(k[x0] - kv_stored(&s.geom, seed, stream, 0, 1, pos, x0));
        }
        /* RoPE moves k: a step that skips it is told apart */
        assert_true(turned > 1.0);
        for (int x = 0; x < d; ++x) assert_true(v[x] == kv_stored(&s.geom, seed, stream, 1, 1, pos, x));
    }
}

/* An 8-bit cache holds the codes of the rotated k and of v at the calibrated scales:
 * int8 codes are whole numbers within +-127, e4m3 values within +-448 (a rotated k past
 * the range saturates). */
static void test_step_writes_codes(void **state)
{
    (void)state;
    for (int quant = KV_QUANT_FP8; quant <= KV_QUANT_INT8; ++quant)
        for (int scale = KV_SCALE_TENSOR; scale <= KV_SCALE_HEAD; ++scale) {
            problem_t p = append_problem(1, 8, 4, 64, 50, 2, ROPE_GPTJ);
            p.kv_quant = (kv_quant_t)quant;
            p.kv_scale = (kv_scale_t)scale;
            ref_source_t s = test_logical_source(&p, LAYOUT_CONTIGUOUS, 9);
            for (int head = 0; head < 4; ++head)
                for (int which = 0; which < 2; ++which) {
                    double row[64], rotated[64];
                    reference_append_kv(&s, 1, which, head, row);
                    for (int x = 0; x < 64; ++x) {
                        const double limit = quant == KV_QUANT_INT8 ? 127.0 : 448.0;
                        assert_true(fabs(row[x]) <= limit);
                        if (quant == KV_QUANT_INT8) assert_true(row[x] == rint(row[x]));
                    }
                    /* the codes' values are kv_store's of the rotated (k) or plain (v) value */
                    const int d = 64, pos = 51;
                    for (int i = 0; i < d / 2; ++i) {
                        int x0, x1;
                        rope_pair(ROPE_GPTJ, d, i, &x0, &x1);
                        double a = kv_dec_logical(&s.geom, 9, 1, which, head, 1, x0);
                        double b = kv_dec_logical(&s.geom, 9, 1, which, head, 1, x1);
                        double y0 = a, y1 = b;
                        if (which == 0) rope_rotate(10000.0, 1.0, d, pos, i, a, b, &y0, &y1);
                        rotated[x0] = (float)y0;
                        rotated[x1] = (float)y1;
                    }
                    for (int x = 0; x < 64; ++x)
                        assert_true(row[x] == kv_store(&s.geom, (float)rotated[x], which, head));
                }
        }
}

/* A plain attention over the step's inputs, written out here: the query and the current
 * slot from reference_append_*, every other position as attend's cache holds it. */
static void naive_append_row(const ref_source_t *s, int stream, int head, double *out)
{
    const problem_t *p = s->p;
    const int d = p->head_dim, L = problem_keys(p), kv = head / problem_group(p);
    double q[REF_MAX_HEAD_DIM], k[REF_MAX_HEAD_DIM], v[REF_MAX_HEAD_DIM], acc[REF_MAX_HEAD_DIM] = {0};
    double *logit = malloc((size_t)L * sizeof *logit), max = -INFINITY, sum = 0;
    assert_non_null(logit);
    reference_append_q(s, stream, head, q);
    for (int pos = 0; pos < L; ++pos) {
        if (pos == L - 1) reference_append_kv(s, stream, 0, kv, k);
        else
            for (int x = 0; x < d; ++x) k[x] = kv_stored(&s->geom, s->seed, stream, 0, kv, pos, x);
        double dot = 0;
        for (int x = 0; x < d; ++x)
            dot += q[x] * k[x] * (s->geom.kv_quant ? kv_quant_scale(&s->geom, 0, kv) : 1.0);
        logit[pos] = dot * problem_scale(p);
        if (logit[pos] > max) max = logit[pos];
    }
    for (int pos = 0; pos < L; ++pos) {
        if (pos == L - 1) reference_append_kv(s, stream, 1, kv, v);
        else
            for (int x = 0; x < d; ++x) v[x] = kv_stored(&s->geom, s->seed, stream, 1, kv, pos, x);
        double w = exp(logit[pos] - max);
        sum += w;
        for (int x = 0; x < d; ++x)
            acc[x] += w * v[x] * (s->geom.kv_quant ? kv_quant_scale(&s->geom, 1, kv) : 1.0);
    }
    for (int x = 0; x < d; ++x) out[x] = acc[x] / sum;
    free(logit);
}

static double max_diff(const double *a, const double *b, int d)
{
    double m = 0;
    for (int x = 0; x < d; ++x) m = fmax(m, fabs(a[x] - b[x]));
    return m;
}

/* reference_row attends to what the step wrote: from the logical definition, from the
 * materialised buffers of the cache before the step (contiguous, paged, bifurcated) and
 * in the bifurcated formulation, for both pairings and an 8-bit cache. */
static void test_reference_attends_to_step(void **state)
{
    (void)state;
    const uint64_t seed = 21;
    for (int rope = ROPE_NEOX; rope <= ROPE_GPTJ; ++rope)
        for (int quant = KV_QUANT_NONE; quant <= KV_QUANT_INT8; quant += 2) {
            problem_t p = append_problem(2, 8, 2, 64, 37, 4, (rope_t)rope);
            p.kv_quant = (kv_quant_t)quant;
            p.cache = CACHE_PAGED;
            p.block_size = 8;
            p.rope_base = 500000.0;
            p.rope_scale = 2.0;
            ref_source_t logical = test_logical_source(&p, LAYOUT_CONTIGUOUS, seed);
            paged_map_t map;
            assert_int_equal(paged_map_build(&p, seed, &map), 0);
            ref_source_t cont = test_logical_source(&p, LAYOUT_CONTIGUOUS, seed);
            cont.kv = layout_materialize(&cont.geom, &p, seed, NULL, 0);
            ref_source_t paged = test_logical_source(&p, LAYOUT_PAGED, seed);
            paged.kv = layout_materialize(&paged.geom, &p, seed, &map, 0);
            paged.block_table = map.table;
            ref_source_t bif = test_logical_source(&p, LAYOUT_BIFURCATED, seed);
            bif.kv_ctx = layout_materialize(&bif.geom, &p, seed, NULL, 0);
            bif.kv_dec = layout_materialize(&bif.geom, &p, seed, NULL, 1);
            assert_true(cont.kv && paged.kv && bif.kv_ctx && bif.kv_dec);
            for (int stream = 0; stream < problem_streams(&p); stream += 3)
                for (int head = 0; head < 8; head += 3) {
                    double want[64], got[64];
                    naive_append_row(&logical, stream, head, want);
                    const ref_source_t *sources[] = {&logical, &cont, &paged, &bif};
                    for (int i = 0; i < 4; ++i) {
                        reference_row(sources[i], stream, head, got);
                        assert_true(max_diff(want, got, 64) < 1e-12);
                        reference_row_bifurcated(sources[i], stream, head, got);
                        assert_true(max_diff(want, got, 64) < 1e-12);
                    }
                    /* attend over the same cache is another result: the step acts */
                    problem_t attend = p;
                    attend.step = STEP_ATTEND;
                    ref_source_t a = test_logical_source(&attend, LAYOUT_CONTIGUOUS, seed);
                    reference_row(&a, stream, head, got);
                    assert_true(max_diff(want, got, 64) > 1e-3);
                }
            free((void *)cont.kv);
            free((void *)paged.kv);
            free((void *)bif.kv_ctx);
            free((void *)bif.kv_dec);
            paged_map_free(&map);
        }
}

/* The step's kernel, run on the CPU over float buffers as append_step.cu runs it on the
 * GPU, thread by thread through append_pair_at: every query row and every current slot
 * gets what the reference says the step writes, in every layout, and nothing else in the
 * cache changes. */
static void emulate_step(const problem_t *p, const kv_geometry_t *g, const int32_t *table, uint64_t seed,
                         float *q, float *cache)
{
    const int d = p->head_dim, width = (p->heads + 2 * p->kv_heads) * d;
    const int64_t pairs = (int64_t)problem_streams(p) * (p->heads + 2 * p->kv_heads) * (d / 2);
    float cs[REF_MAX_HEAD_DIM];   /* the table the runner uploads */
    for (int i = 0; i < d / 2; ++i)
        rope_cos_sin(p->rope_base, p->rope_scale, d, append_position(p->ctx, p->gen), i, &cs[2 * i], &cs[2 * i + 1]);
    for (int64_t t = 0; t < pairs; ++t) {
        const append_pair_t w = append_pair_at(g, table, p->heads, p->rope, t);
        const int stream = (int)(w.src / width);
        const int col = (int)(w.src % width);
        const float a = append_qkv_logical(g, seed, p->heads, stream, col + w.x0);
        const float b = append_qkv_logical(g, seed, p->heads, stream, col + w.x1);
        double y0 = a, y1 = b;
        if (w.rotate) rope_turn(a, b, cs[2 * w.i], cs[2 * w.i + 1], &y0, &y1);
        float *row = w.to_cache ? cache + w.dst : q + w.dst;
        row[w.x0] = w.to_cache ? append_store(g, problem_kv_dtype(p), (float)y0, w.which, w.head)
                               : dtype_round((float)y0, p->dtype);
        row[w.x1] = w.to_cache ? append_store(g, problem_kv_dtype(p), (float)y1, w.which, w.head)
                               : dtype_round((float)y1, p->dtype);
    }
}

/* Pairs beyond 2^31 (the step's 64-bit division path) land where the 32-bit ones do. */
static void test_pair_index_beyond_32_bits(void **state)
{
    (void)state;
    assert_int_equal(append_div(0x7fffffff, 64), 0x7fffffff / 64);
    assert_true(append_div(0x100000000LL * 3 + 5, 7) == (0x100000000LL * 3 + 5) / 7);
    problem_t p = append_problem(1, 32, 8, 128, 1000, 3, ROPE_GPTJ);
    p.batch = 700000;
    kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    const int64_t per_stream = (32 + 16) * 64;
    const int64_t t = per_stream * 699999 + 47 * 64 + 63;
    assert_true(t > 0x7fffffffLL);
    append_pair_t w = append_pair_at(&g, NULL, 32, ROPE_GPTJ, t);
    assert_int_equal(w.i, 63);
    assert_true(w.x0 == 126 && w.x1 == 127);
    assert_true(w.src == (per_stream * 699999 / 64 + 47) * 128);
    assert_true(w.to_cache && w.which == 1 && w.head == 7 && !w.rotate);
    assert_true(w.dst == kv_contiguous_offset(&g, 699999, 1, 7, 1002));
    w = append_pair_at(&g, NULL, 32, ROPE_GPTJ, per_stream * 123456 + 5 * 64 + 1);
    assert_true(!w.to_cache && w.rotate && w.head == 5 && w.i == 1);
    assert_true(w.dst == ((int64_t)123456 * 32 + 5) * 128);
}

static void test_kernel_writes_every_slot_once(void **state)
{
    (void)state;
    const uint64_t seed = 3;
    const kv_layout_t layouts[] = {LAYOUT_CONTIGUOUS, LAYOUT_PAGED, LAYOUT_BIFURCATED};
    for (int rope = ROPE_NEOX; rope <= ROPE_GPTJ; ++rope)
        for (int li = 0; li < 3; ++li) {
            problem_t p = append_problem(3, 6, 3, 72, 21, 6, (rope_t)rope);
            p.cache = layouts[li] == LAYOUT_PAGED ? CACHE_PAGED : CACHE_CONTIGUOUS;
            p.block_size = 8;
            p.kv_quant = li == 1 ? KV_QUANT_INT8 : KV_QUANT_NONE;
            p.kv_scale = KV_SCALE_HEAD;
            ref_source_t src = test_logical_source(&p, layouts[li], seed);
            paged_map_t map = {0};
            if (layouts[li] == LAYOUT_PAGED) assert_int_equal(paged_map_build(&p, seed, &map), 0);
            const int part = layouts[li] == LAYOUT_BIFURCATED;   /* the buffer of the current slot */
            float *cache = layout_materialize(&src.geom, &p, seed, &map, part);
            float *before = layout_materialize(&src.geom, &p, seed, &map, part);
            const int64_t n = layout_elements(&src.geom, &p, part);
            const int d = 72, streams = problem_streams(&p), L = problem_keys(&p);
            float *q = malloc((size_t)streams * p.heads * d * sizeof *q);
            assert_true(cache && before && q);
            /* the slots poisoned, as the runner does before a launch */
            for (int s = 0; s < streams; ++s)
                for (int which = 0; which < 2; ++which)
                    for (int h = 0; h < p.kv_heads; ++h) {
                        int in_ctx;
                        int64_t off = kv_row_offset(&src.geom, map.table, NULL, s, which, h, L - 1, &in_ctx);
                        for (int x = 0; x < d; ++x) cache[off + x] = NAN;
                    }
            for (int64_t e = 0; e < (int64_t)streams * p.heads * d; ++e) q[e] = NAN;
            emulate_step(&p, &src.geom, map.table, seed, q, cache);
            double want[72];
            for (int s = 0; s < streams; ++s) {
                for (int h = 0; h < p.heads; ++h) {
                    reference_append_q(&src, s, h, want);
                    for (int x = 0; x < d; ++x) assert_true(q[((int64_t)s * p.heads + h) * d + x] == want[x]);
                }
                for (int which = 0; which < 2; ++which)
                    for (int h = 0; h < p.kv_heads; ++h) {
                        int in_ctx;
                        int64_t off = kv_row_offset(&src.geom, map.table, NULL, s, which, h, L - 1, &in_ctx);
                        reference_append_kv(&src, s, which, h, want);
                        for (int x = 0; x < d; ++x) {
                            assert_true(cache[off + x] == want[x]);
                            before[off + x] = cache[off + x];   /* the slot, as the step leaves it */
                        }
                    }
            }
            /* nothing else written: every other element as the fill left it (NaN: unused) */
            for (int64_t e = 0; e < n; ++e)
                assert_true(cache[e] == before[e] || (isnan(cache[e]) && isnan(before[e])));
            free(cache);
            free(before);
            free(q);
            if (layouts[li] == LAYOUT_PAGED) paged_map_free(&map);
        }
}

/* fused, bifurcated and auto run the step; the others say why not. Its bytes: the packed
 * QKV read and the current K/V written; its memory: the packed QKV. */
static void test_kernels_bytes_memory(void **state)
{
    (void)state;
    problem_t p = append_problem(4, 32, 8, 128, 8192, 16, ROPE_NEOX);
    const char *runs[] = {"fused", "bifurcated", "auto"};
    for (int i = 0; i < 3; ++i) assert_null(attn_kernel_unsupported(attn_kernel_find(runs[i]), &p));
    const char *not_runs[] = {"cublas", "cublas-bifurcated", "flashinfer", "xqa", "flashinfer-cascade", "cudnn"};
    for (int i = 0; i < 6; ++i) {
        const char *why = attn_kernel_unsupported(attn_kernel_find(not_runs[i]), &p);
        assert_non_null(why);
        assert_non_null(strstr(why, "--step append"));
    }
    const double streams = 2 * 4;
    assert_true(io_append_bytes(&p) == streams * (32 + 16) * 128 * 2 + streams * 2 * 8 * 128 * 2);
    p.kv_quant = KV_QUANT_FP8;
    assert_true(io_append_bytes(&p) == streams * (32 + 16) * 128 * 2 + streams * 2 * 8 * 128 * 1);
    mem_plan_t m;
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    const device_info_t h100 = test_h100();
    const attn_kernel_t *fused = attn_kernel_find("fused");
    fused->plan(&p, &h100, &plan);
    mem_plan_make(&p, fused, &plan, &m);
    assert_true(m.qkv >= streams * (32 + 16) * 128 * 2);
    p.step = STEP_ATTEND;
    p.kv_quant = KV_QUANT_NONE;
    assert_true(io_append_bytes(&p) == 0.0);
    assert_null(attn_kernel_unsupported(attn_kernel_find("cublas"), &p));
    mem_plan_make(&p, fused, &plan, &m);
    assert_true(m.qkv == 0);
}

static void test_validate_and_describe(void **state)
{
    (void)state;
    problem_t p = append_problem(1, 32, 8, 128, 100, 1, ROPE_GPTJ);
    char msg[256], what[200];
    problem_describe(&p, what, sizeof what);
    assert_non_null(strstr(what, "append-gptj"));
    assert_null(strstr(what, "base"));
    p.rope_base = 1.0;
    assert_int_equal(problem_validate(&p, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--rope-base"));
    p.rope_base = 1e6;
    p.rope_scale = 0.0;
    assert_int_equal(problem_validate(&p, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--rope-scale"));
    p.rope_scale = 4.0;
    assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
    problem_describe(&p, what, sizeof what);
    assert_non_null(strstr(what, "base1e+06 scale4"));
    /* the current token's position: every key before it */
    assert_int_equal(append_position(100, 1), 100);
    assert_int_equal(append_position(1, 7), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rope_pairs),
        cmocka_unit_test(test_rope_angles_and_rotation),
        cmocka_unit_test(test_dtype_round),
        cmocka_unit_test(test_packed_qkv_columns),
        cmocka_unit_test(test_step_writes),
        cmocka_unit_test(test_step_writes_codes),
        cmocka_unit_test(test_reference_attends_to_step),
        cmocka_unit_test(test_kernel_writes_every_slot_once),
        cmocka_unit_test(test_pair_index_beyond_32_bits),
        cmocka_unit_test(test_kernels_bytes_memory),
        cmocka_unit_test(test_validate_and_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
