/* The CPU reference: every way of feeding it the same inputs (logical data, a
 * contiguous cache, a shuffled paged pool, bifurcated buffers, the paper's
 * bifurcated formulation) gives the same answer; indirection, GQA/MQA and
 * large logits behave as attention must; closed-form numbers; error metrics. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/layouts.h"
#include "../harness/layouts_internal.h"
#include "../problem/kv_fill.h"
#include "../reference/reference.h"
#include "../reference/reference_internal.h"
#include "test_problem.h"

/* A reference source together with the buffers it owns. */
typedef struct built {
    ref_source_t src;
    float *kv, *kv_ctx, *kv_dec;
    paged_map_t map;
} built_t;

static void build(built_t *b, const problem_t *p, kv_layout_t layout, uint64_t seed,
                  const int32_t *history, int materialise)
{
    memset(b, 0, sizeof *b);
    b->src.p = p;
    b->src.geom = kv_geometry_make(p, layout);
    b->src.seed = seed;
    b->src.indirection = history;
    if (!materialise) return;
    if (layout == LAYOUT_PAGED) {
        assert_int_equal(paged_map_build(p, seed + 1, &b->map), 0);
        b->src.block_table = b->map.table;
        b->kv = layout_materialize(&b->src.geom, p, seed, &b->map, 0);
        assert_non_null(b->kv);
    } else if (layout == LAYOUT_BIFURCATED) {
        b->kv_ctx = layout_materialize(&b->src.geom, p, seed, NULL, 0);
        b->kv_dec = layout_materialize(&b->src.geom, p, seed, NULL, 1);
        assert_non_null(b->kv_ctx);
        assert_non_null(b->kv_dec);
    } else {
        b->kv = layout_materialize(&b->src.geom, p, seed, NULL, 0);
        assert_non_null(b->kv);
    }
    b->src.kv = b->kv;
    b->src.kv_ctx = b->kv_ctx;
    b->src.kv_dec = b->kv_dec;
}

static void unbuild(built_t *b)
{
    free(b->kv);
    free(b->kv_ctx);
    free(b->kv_dec);
    paged_map_free(&b->map);
}

typedef void (*ref_fn)(const ref_source_t *, int, int, double *);

/* Largest |a - b| over every (query token, head) row; both outputs must be finite. */
static double max_row_diff(const ref_source_t *a, ref_fn fa, const ref_source_t *b, ref_fn fb)
{
    const problem_t *p = a->p;
    double ra[REF_MAX_HEAD_DIM], rb[REF_MAX_HEAD_DIM], worst = 0.0;
    for (int s = 0; s < problem_queries(p); ++s)
        for (int h = 0; h < p->heads; ++h) {
            fa(a, s, h, ra);
            fb(b, s, h, rb);
            for (int x = 0; x < p->head_dim; ++x) {
                assert_true(isfinite(ra[x]));
                assert_true(isfinite(rb[x]));
                worst = fmax(worst, fabs(ra[x] - rb[x]));
            }
        }
    return worst;
}

static const int agree_cases[][9] = {
    /* batch, beam, heads, kv_heads, head_dim, ctx, gen, block_size, indirection */
    {1, 1, 1, 1, 8, 1, 1, 8, 0},      /* the smallest problem */
    {2, 3, 4, 2, 16, 1, 9, 8, 0},     /* context of one token */
    {2, 3, 4, 2, 16, 5, 7, 16, 1},    /* context shorter than a block */
    {1, 4, 4, 1, 32, 16, 16, 16, 1},  /* context exactly one block */
    {2, 2, 2, 2, 24, 37, 20, 16, 0},  /* partial last context block, MHA */
    {1, 5, 6, 3, 16, 70, 3, 32, 1},   /* GQA, partial last blocks */
    {3, 2, 8, 8, 8, 33, 31, 8, 1},    /* L = 64: no padding */
    {1, 3, 4, 4, 64, 100, 1, 32, 0},  /* one decoded token */
};

/* logical == contiguous == paged == bifurcated buffers == bifurcated formulation */
static void test_all_layouts_agree(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof agree_cases / sizeof agree_cases[0]; ++c) {
        const int *k = agree_cases[c];
        problem_t p = test_paged_problem(k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]);
        const uint64_t seed = 2024 + c;
        int32_t *hist = k[8] ? beam_history_build(&p, seed) : NULL;
        if (k[8]) assert_non_null(hist);
        built_t logical, cont, paged, bif;
        build(&logical, &p, LAYOUT_CONTIGUOUS, seed, hist, 0);
        build(&cont, &p, LAYOUT_CONTIGUOUS, seed, hist, 1);
        build(&paged, &p, LAYOUT_PAGED, seed, hist, 1);
        build(&bif, &p, LAYOUT_BIFURCATED, seed, hist, 1);

        assert_true(max_row_diff(&logical.src, reference_row, &cont.src, reference_row) == 0.0);
        assert_true(max_row_diff(&logical.src, reference_row, &paged.src, reference_row) == 0.0);
        assert_true(max_row_diff(&logical.src, reference_row, &bif.src, reference_row) == 0.0);
        assert_true(max_row_diff(&logical.src, reference_row, &logical.src,
                                 reference_row_bifurcated) < 1e-12);
        assert_true(max_row_diff(&logical.src, reference_row, &bif.src,
                                 reference_row_bifurcated) < 1e-12);
        assert_true(max_row_diff(&logical.src, reference_row, &paged.src,
                                 reference_row_bifurcated) < 1e-12);
        unbuild(&logical);
        unbuild(&cont);
        unbuild(&paged);
        unbuild(&bif);
        free(hist);
    }
}

/* --q-len n: every layout and the bifurcated formulation agree on all n query tokens of
 * every stream, with indirection, partial blocks, MHA/GQA/MQA. */
static void test_q_len_layouts_agree(void **state)
{
    (void)state;
    static const int cases[][10] = {
        /* batch, beam, heads, kv_heads, head_dim, ctx, gen, block_size, indirection, q_len */
        {2, 3, 4, 2, 16, 5, 7, 16, 1, 4},    /* GQA, context shorter than a block */
        {1, 4, 4, 1, 32, 37, 16, 16, 1, 16}, /* MQA, every decoded token a query */
        {2, 2, 2, 2, 24, 70, 20, 32, 0, 2},  /* MHA, partial last blocks */
        {1, 1, 1, 1, 8, 1, 3, 8, 0, 3},      /* context of one token */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const int *k = cases[c];
        problem_t p = test_paged_problem(k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]);
        p.q_len = k[9];
        char msg[256];
        assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
        const uint64_t seed = 77 + c;
        int32_t *hist = k[8] ? beam_history_build(&p, seed) : NULL;
        built_t logical, cont, paged, bif;
        build(&logical, &p, LAYOUT_CONTIGUOUS, seed, hist, 0);
        build(&cont, &p, LAYOUT_CONTIGUOUS, seed, hist, 1);
        build(&paged, &p, LAYOUT_PAGED, seed, hist, 1);
        build(&bif, &p, LAYOUT_BIFURCATED, seed, hist, 1);
        assert_true(max_row_diff(&logical.src, reference_row, &cont.src, reference_row) == 0.0);
        assert_true(max_row_diff(&logical.src, reference_row, &paged.src, reference_row) == 0.0);
        assert_true(max_row_diff(&logical.src, reference_row, &bif.src, reference_row) == 0.0);
        assert_true(max_row_diff(&logical.src, reference_row, &bif.src, reference_row_bifurcated) < 1e-12);
        assert_true(max_row_diff(&logical.src, reference_row, &paged.src, reference_row_bifurcated) < 1e-12);
        unbuild(&logical);
        unbuild(&cont);
        unbuild(&paged);
        unbuild(&bif);
        free(hist);
    }
}

/* The causal mask: query token j of a stream reads keys [0, L - n + j] and nothing
 * after. NaN in every K and V row past that changes nothing; a new K row at its last
 * key changes its output. Token n - 1 reads all L keys. */
static void test_q_len_causal(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 2, 4, 2, 16, 9, 6);
    p.q_len = 4;
    const int L = problem_keys(&p), d = p.head_dim;
    assert_int_equal(problem_keys_of_token(&p, 0), L - 3);
    assert_int_equal(problem_keys_of_token(&p, 3), L);
    /* query row 6 of [B*W*n, h, d] is stream 1's token 2 (query_rows.h) */
    assert_int_equal(query_stream(6, p.q_len), 1);
    assert_int_equal(query_token(6, p.q_len), 2);
    assert_int_equal(query_key_end(L, p.q_len, 6), L - 1);
    for (int s = 0; s < problem_streams(&p); ++s)
        for (int j = 0; j < p.q_len; ++j) {
            built_t b;
            build(&b, &p, LAYOUT_CONTIGUOUS, 5, NULL, 1);
            const int query = s * p.q_len + j, end = problem_keys_of_token(&p, j);
            double before[16], after[16], moved[16];
            reference_row(&b.src, query, 1, before);
            for (int which = 0; which < 2; ++which)
                for (int h = 0; h < p.kv_heads; ++h)
                    for (int pos = end; pos < L; ++pos)
                        for (int x = 0; x < d; ++x)
                            b.kv[kv_contiguous_offset(&b.src.geom, s, which, h, pos) + x] = NAN;
            reference_row(&b.src, query, 1, after);
            for (int x = 0; x < d; ++x) assert_true(before[x] == after[x]);
            /* head 1 reads kv head 0; its last key, negated and scaled up, takes another
             * weight whatever its logit was (a far negative one becomes the largest) */
            for (int x = 0; x < d; ++x) b.kv[kv_contiguous_offset(&b.src.geom, s, 0, 0, end - 1) + x] *= -4.0f;
            reference_row(&b.src, query, 1, moved);
            double diff = 0.0;
            for (int x = 0; x < d; ++x) diff = fmax(diff, fabs(moved[x] - before[x]));
            assert_true(diff > 1e-6);
            unbuild(&b);
        }
}

/* Different seeds give different answers: the comparisons above are not vacuous. */
static void test_outputs_depend_on_inputs(void **state)
{
    (void)state;
    problem_t p = test_paged_problem(1, 2, 2, 1, 16, 10, 5, 8);
    built_t a, b;
    build(&a, &p, LAYOUT_CONTIGUOUS, 1, NULL, 0);
    build(&b, &p, LAYOUT_CONTIGUOUS, 2, NULL, 0);
    assert_true(max_row_diff(&a.src, reference_row, &b.src, reference_row) > 1e-3);
    /* streams of one request share the context but not the decoded tokens */
    double r0[16], r1[16], diff = 0.0;
    reference_row(&a.src, 0, 0, r0);
    reference_row(&a.src, 1, 0, r1);
    for (int x = 0; x < 16; ++x) diff = fmax(diff, fabs(r0[x] - r1[x]));
    assert_true(diff > 1e-6);
}

/* With a history, stream w's output equals the output over a contiguous cache
 * built by hand, whose decoded rows are copied from the source streams. */
static void test_indirection_equals_copied_rows(void **state)
{
    (void)state;
    const int B = 2, W = 3, g = 1, d = 16, ctx = 5, gen = 7, L = ctx + gen;
    const uint64_t seed = 77;
    problem_t p = test_paged_problem(B, W, 2, g, d, ctx, gen, 8);
    int32_t *hist = beam_history_build(&p, seed);
    assert_non_null(hist);
    kv_geometry_t geom = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);

    float *cache = malloc((size_t)B * W * 2 * g * L * d * sizeof *cache);
    assert_non_null(cache);
    int foreign = 0;
    for (int s = 0; s < B * W; ++s)
        for (int which = 0; which < 2; ++which)
            for (int h = 0; h < g; ++h)
                for (int pos = 0; pos < L; ++pos) {
                    int from = s;
                    if (pos >= ctx) from = (s / W) * W + hist[s * L + pos];
                    foreign += which == 0 && h == 0 && from != s;
                    for (int x = 0; x < d; ++x)
                        cache[((((int64_t)s * 2 + which) * g + h) * L + pos) * d + x] =
                            kv_logical(&geom, seed, from, which, h, pos, x);
                }
    assert_true(foreign > 0);

    built_t with_history, copied, plain;
    build(&with_history, &p, LAYOUT_CONTIGUOUS, seed, hist, 0);
    build(&copied, &p, LAYOUT_CONTIGUOUS, seed, NULL, 0);
    copied.src.kv = cache;
    build(&plain, &p, LAYOUT_CONTIGUOUS, seed, NULL, 0);
    assert_true(max_row_diff(&with_history.src, reference_row, &copied.src, reference_row) == 0.0);
    assert_true(max_row_diff(&with_history.src, reference_row_bifurcated, &copied.src,
                             reference_row) < 1e-12);
    /* and the history matters */
    assert_true(max_row_diff(&with_history.src, reference_row, &plain.src, reference_row) > 1e-6);
    free(cache);
    free(hist);
}

/* reference_rows (many rows, each (request, kv head) group's context materialised once
 * and read in place) gives each row what reference_row gives it alone, in both of its
 * orders (a group per thread, or each group's rows across threads), for caches in the
 * dtype and 8-bit ones (whose scales it applies to the rows it reads in place). */
static void test_rows_equal_single_rows(void **state)
{
    (void)state;
    const kv_quant_t quants[] = {KV_QUANT_NONE, KV_QUANT_FP8, KV_QUANT_INT8};
    const int threads[] = {1, 16};
    for (int qi = 0; qi < 3; ++qi)
        for (int ti = 0; ti < 2; ++ti) {
            problem_t p = test_problem(2, 3, 8, 2, 16, 37, 5);
            p.kv_quant = quants[qi];
            p.kv_scale = KV_SCALE_HEAD;
            built_t b;
            build(&b, &p, LAYOUT_CONTIGUOUS, 31, NULL, 0);
            const long rows = (long)problem_queries(&p) * p.heads;
            long *at = malloc((size_t)rows * sizeof *at);
            double *want = malloc((size_t)rows * p.head_dim * sizeof *want), one[16];
            assert_non_null(at);
            assert_non_null(want);
            for (long r = 0; r < rows; ++r) at[r] = (r * 7) % rows; /* a permutation: 7 and 48 coprime */
            omp_set_num_threads(threads[ti]);
            assert_int_equal(reference_rows(&b.src, at, 0, rows, want), 0);
            double worst = 0.0;
            for (long r = 0; r < rows; ++r) {
                reference_row(&b.src, (int)(at[r] / p.heads), (int)(at[r] % p.heads), one);
                for (int x = 0; x < p.head_dim; ++x) {
                    const double e = fabs(one[x] - want[r * p.head_dim + x]);
                    worst = e > worst ? e : worst;
                }
            }
            assert_true(worst < 1e-12);
            free(at);
            free(want);
        }
    omp_set_num_threads(omp_get_num_procs());
}

/* A problem with g kv heads equals MHA whose kv head i holds kv head i/(h/g):
 * this pins down the query-head -> kv-head mapping for MQA, GQA and MHA. */
static void test_grouped_heads_equal_expanded_mha(void **state)
{
    (void)state;
    const int B = 1, W = 2, h = 4, d = 16, ctx = 9, gen = 4, L = ctx + gen;
    const uint64_t seed = 5;
    const int groups[] = {1, 2, 4};
    problem_t mha = test_paged_problem(B, W, h, h, d, ctx, gen, 8);
    for (int gi = 0; gi < 3; ++gi) {
        const int g = groups[gi];
        problem_t grouped = test_paged_problem(B, W, h, g, d, ctx, gen, 8);
        built_t src;
        build(&src, &grouped, LAYOUT_CONTIGUOUS, seed, NULL, 1);
        float *expanded = malloc((size_t)B * W * 2 * h * L * d * sizeof *expanded);
        assert_non_null(expanded);
        for (int s = 0; s < B * W; ++s)
            for (int which = 0; which < 2; ++which)
                for (int i = 0; i < h; ++i)
                    memcpy(expanded + ((((int64_t)s * 2 + which) * h + i) * L) * d,
                           src.kv + kv_contiguous_offset(&src.src.geom, s, which, i / (h / g), 0),
                           (size_t)L * d * sizeof *expanded);
        built_t as_mha;
        build(&as_mha, &mha, LAYOUT_CONTIGUOUS, seed, NULL, 0);
        as_mha.src.kv = expanded;
        assert_true(max_row_diff(&src.src, reference_row, &as_mha.src, reference_row) == 0.0);
        assert_true(max_row_diff(&src.src, reference_row_bifurcated, &as_mha.src,
                                 reference_row) < 1e-12);
        if (g < h) {
            /* MHA on its own K/V differs: the test sees the head mapping. */
            built_t own;
            build(&own, &mha, LAYOUT_CONTIGUOUS, seed, NULL, 0);
            assert_true(max_row_diff(&src.src, reference_row, &own.src, reference_row) > 1e-6);
        }
        free(expanded);
        unbuild(&src);
    }
}

/* L = 2, d = 8 with hand-written K/V: o = v0 + sigmoid(s1 - s0) (v1 - v0). */
static void test_tiny_closed_form(void **state)
{
    (void)state;
    const int d = 8, L = 2;
    problem_t p = test_paged_problem(1, 1, 1, 1, d, 1, 1, 8);
    const uint64_t seed = 3;
    float cache[2 * 2 * 8] = {0}; /* [stream 1][K,V][g 1][L 2][d 8] */
    float *k0 = cache, *k1 = cache + d, *v0 = cache + L * d, *v1 = cache + L * d + d;
    k1[0] = 0.5f;
    k1[1] = -0.25f;
    k1[7] = 1.0f;
    for (int x = 0; x < d; ++x) {
        k0[x] = 0.0f;
        v0[x] = (float)(x + 1) / 8.0f;
        v1[x] = -(float)(2 * x) / 8.0f + 0.5f;
    }
    double q[8];
    for (int x = 0; x < d; ++x) q[x] = logical_q(seed, 1, d, 0, 0, x);
    const double s1 = (0.5 * q[0] - 0.25 * q[1] + q[7]) / sqrt(8.0); /* s0 = 0 */
    const double w1 = 1.0 / (1.0 + exp(-s1));
    assert_true(w1 > 0.02 && w1 < 0.98); /* both keys matter */

    built_t b;
    build(&b, &p, LAYOUT_CONTIGUOUS, seed, NULL, 0);
    b.src.kv = cache;
    double out[8], out_bif[8];
    reference_row(&b.src, 0, 0, out);
    reference_row_bifurcated(&b.src, 0, 0, out_bif);
    for (int x = 0; x < d; ++x) {
        double want = (1.0 - w1) * v0[x] + w1 * v1[x];
        assert_true(fabs(out[x] - want) < 1e-14);
        assert_true(fabs(out_bif[x] - want) < 1e-14);
    }

    /* q_scaling divides the scale: q_scaling 2 halves s1. */
    p.q_scaling = 2.0;
    const double w1_half = 1.0 / (1.0 + exp(-s1 / 2.0));
    reference_row(&b.src, 0, 0, out);
    for (int x = 0; x < d; ++x)
        assert_true(fabs(out[x] - ((1.0 - w1_half) * v0[x] + w1_half * v1[x])) < 1e-14);
}

/* q_scaling 1e-3 makes logits of thousands: exp would overflow without max
 * subtraction; the answer is (almost exactly) V of the best key. */
static void test_large_logits_stay_finite(void **state)
{
    (void)state;
    const int W = 2, h = 2, d = 64, ctx = 40, gen = 9, L = ctx + gen;
    const uint64_t seed = 8;
    problem_t p = test_paged_problem(1, W, h, 1, d, ctx, gen, 8);
    p.q_scaling = 1e-3;
    built_t b;
    build(&b, &p, LAYOUT_CONTIGUOUS, seed, NULL, 0);
    const kv_geometry_t *g = &b.src.geom;
    int checked = 0;
    for (int s = 0; s < W; ++s)
        for (int head = 0; head < h; ++head) {
            double out[64], out_bif[64], best = -INFINITY, second = -INFINITY;
            int best_pos = -1;
            for (int pos = 0; pos < L; ++pos) {
                double logit = 0.0;
                for (int x = 0; x < d; ++x)
                    logit += (double)logical_q(seed, h, d, s, head, x)
                             * kv_logical(g, seed, s, 0, 0, pos, x);
                logit *= problem_scale(&p);
                if (logit > best) { second = best; best = logit; best_pos = pos; }
                else if (logit > second) second = logit;
            }
            assert_true(best > 1000.0); /* exp(best) alone would be +inf */
            reference_row(&b.src, s, head, out);
            reference_row_bifurcated(&b.src, s, head, out_bif);
            for (int x = 0; x < d; ++x) {
                assert_true(isfinite(out[x]));
                assert_true(isfinite(out_bif[x]));
            }
            if (best - second < 40.0) continue; /* exp(-40) < 1e-17: one-hot below that */
            ++checked;
            for (int x = 0; x < d; ++x) {
                double v = kv_logical(g, seed, s, 1, 0, best_pos, x);
                assert_true(fabs(out[x] - v) < 1e-12);
                assert_true(fabs(out_bif[x] - v) < 1e-12);
            }
        }
    assert_true(checked >= 2);
}

/* A source naming a paged pool but no block table is a mistake: NaN, not a guess. */
static void test_incomplete_source_gives_nan(void **state)
{
    (void)state;
    problem_t p = test_paged_problem(1, 1, 2, 1, 8, 4, 4, 8);
    built_t b;
    build(&b, &p, LAYOUT_PAGED, 1, NULL, 1);
    b.src.block_table = NULL;
    double out[8];
    reference_row(&b.src, 0, 0, out);
    for (int x = 0; x < 8; ++x) assert_true(isnan(out[x]));
    reference_row_bifurcated(&b.src, 0, 1, out);
    for (int x = 0; x < 8; ++x) assert_true(isnan(out[x]));
    unbuild(&b);
}

static void test_error_metrics(void **state)
{
    (void)state;
    const double ref[4] = {1.0, 2.0, 3.0, 4.0};
    const float exact[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float off[4] = {1.0f, 2.0f, 3.0f, 5.0f};
    err_acc_t e = {0};
    assert_true(err_rel(&e) == 0.0);
    err_add(&e, ref, exact, 4);
    assert_true(err_rel(&e) == 0.0);
    assert_int_equal(e.n, 4);
    err_add(&e, ref, off, 4);
    assert_int_equal(e.n, 8);
    assert_true(fabs(e.diff2 - 1.0) < 1e-15);
    assert_true(fabs(e.ref2 - 60.0) < 1e-12);
    assert_true(fabs(e.max_abs - 1.0) < 1e-15);
    assert_true(fabs(err_rel(&e) - sqrt(1.0 / 60.0)) < 1e-15);
    assert_int_equal(e.nonfinite, 0);

    const float bad[4] = {NAN, 2.5f, INFINITY, 4.0f};
    err_add(&e, ref, bad, 4);
    assert_int_equal(e.nonfinite, 2);
    assert_int_equal(e.n, 12);
    assert_true(fabs(e.diff2 - 1.25) < 1e-15); /* the finite ones still count */
    assert_true(fabs(e.max_abs - 1.0) < 1e-15);
    assert_true(isinf(err_rel(&e)));            /* NaN can never pass */

    err_acc_t z = {0};
    const double zeros[2] = {0.0, 0.0};
    const float small[2] = {1e-3f, 0.0f};
    err_add(&z, zeros, small, 2);
    assert_true(isinf(err_rel(&z)));

    assert_true(tolerance_for(DTYPE_FP32) == 1e-5);
    assert_true(tolerance_for(DTYPE_FP16) == 2e-3);
    assert_true(tolerance_for(DTYPE_BF16) == 1.6e-2);
}

/* fp16-sized perturbation of a reference row is within fp16 tolerance, and
 * swapping two heads' outputs is far outside any tolerance. */
static void test_error_scale_separates_right_from_wrong(void **state)
{
    (void)state;
    problem_t p = test_paged_problem(1, 1, 2, 2, 64, 50, 5, 8);
    built_t b;
    build(&b, &p, LAYOUT_CONTIGUOUS, 9, NULL, 0);
    double r0[64], r1[64];
    float near[64], wrong[64];
    reference_row(&b.src, 0, 0, r0);
    reference_row(&b.src, 0, 1, r1);
    for (int x = 0; x < 64; ++x) {
        near[x] = (float)(r0[x] * (1.0 + ((x & 1) ? 4e-4 : -4e-4)));
        wrong[x] = (float)r1[x];
    }
    err_acc_t e_near = {0}, e_wrong = {0};
    err_add(&e_near, r0, near, 64);
    err_add(&e_wrong, r0, wrong, 64);
    assert_true(err_rel(&e_near) < tolerance_for(DTYPE_FP16));
    assert_true(err_rel(&e_wrong) > 10 * tolerance_for(DTYPE_BF16));
}

/* The k of logical_value by the definition's division: h % 255 of its hash. */
static float logical_value_by_division(uint64_t seed, int tensor, uint64_t index)
{
    const uint64_t h = splitmix64(seed ^ ((uint64_t)tensor << 56) ^ splitmix64(index));
    return (float)((int)(h % 255u) - 127) * (KV_AMPLITUDE / 128.0f);
}

/* logical_value's folded modulo is h % 255 (on edge values and random ones), and the
 * fast fill of plain K/V rows gives exactly the values of the division: every tensor,
 * seeds and indices across the 64-bit range, row lengths up to 256 (the vector loop's
 * body and its tail). */
static void test_plain_rows_equal_logical_values(void **state)
{
    (void)state;
    const uint64_t edges[] = {0, 1, 254, 255, 256, 65535, 65536, 0xffffffffull, 0x100000000ull,
                              255ull * 0x0101010101010101ull, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i)
        assert_int_equal(logical_mod255(edges[i]), edges[i] % 255u);
    float row[256];
    uint64_t r = 12345;
    for (int trial = 0; trial < 4000; ++trial) {
        r = splitmix64(r);
        assert_int_equal(logical_mod255(r), r % 255u);
        const uint64_t seed = r, base = splitmix64(r ^ 1) >> (trial % 64);
        const int tensor = TENSOR_K_CTX + trial % 4, n = 1 + (int)(splitmix64(r ^ 2) % 256);
        reference_plain_row(seed, tensor, base, n, row);
        for (int x = 0; x < n; ++x)
            if (row[x] != logical_value_by_division(seed, tensor, base + (uint64_t)x))
                fail_msg("trial %d, element %d: %g, by division %g", trial, x, row[x],
                         logical_value_by_division(seed, tensor, base + (uint64_t)x));
    }
}

/* An 8-bit cache's rows from the logical definition: reference_rows, which maps each
 * logical code to its stored value (ref_source_t.codes, in the materialised context and
 * in rows read one by one), equals reference_row quantising every element: MHA with one
 * row a group (rows read one by one), GQA (the context materialised). */
static void test_coded_rows_equal_quantised(void **state)
{
    (void)state;
    const kv_quant_t quants[] = {KV_QUANT_FP8, KV_QUANT_INT8};
    const int kv_heads[] = {8, 2};
    for (int qi = 0; qi < 2; ++qi)
        for (int gi = 0; gi < 2; ++gi) {
            problem_t p = test_problem(2, 1, 8, kv_heads[gi], 32, 300, 7);
            p.kv_quant = quants[qi];
            p.kv_scale = gi ? KV_SCALE_TENSOR : KV_SCALE_HEAD;
            test_validate(&p);
            const ref_source_t src = test_logical_source(&p, LAYOUT_CONTIGUOUS, 77);
            const long rows = (long)problem_queries(&p) * p.heads;
            long *at = malloc((size_t)rows * sizeof *at);
            double *want = malloc((size_t)rows * p.head_dim * sizeof *want), one[32];
            assert_non_null(at);
            assert_non_null(want);
            for (long r = 0; r < rows; ++r) at[r] = r;
            assert_int_equal(reference_rows(&src, at, 0, rows, want), 0);
            /* read alike (MHA: one by one) the values are the same bits; the GQA group's
             * context read in place scales its dot products in another order */
            for (long r = 0; r < rows; ++r) {
                reference_row(&src, (int)(at[r] / p.heads), (int)(at[r] % p.heads), one);
                for (int x = 0; x < p.head_dim; ++x) {
                    const double got = want[r * p.head_dim + x];
                    if (p.kv_heads == p.heads) assert_true(one[x] == got);
                    else assert_true(fabs(one[x] - got) <= 1e-12 * (1.0 + fabs(one[x])));
                }
            }
            free(at);
            free(want);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_rows_equal_logical_values),
        cmocka_unit_test(test_coded_rows_equal_quantised),
        cmocka_unit_test(test_all_layouts_agree),
        cmocka_unit_test(test_q_len_layouts_agree),
        cmocka_unit_test(test_q_len_causal),
        cmocka_unit_test(test_outputs_depend_on_inputs),
        cmocka_unit_test(test_indirection_equals_copied_rows),
        cmocka_unit_test(test_rows_equal_single_rows),
        cmocka_unit_test(test_grouped_heads_equal_expanded_mha),
        cmocka_unit_test(test_tiny_closed_form),
        cmocka_unit_test(test_large_logits_stay_finite),
        cmocka_unit_test(test_incomplete_source_gives_nan),
        cmocka_unit_test(test_error_metrics),
        cmocka_unit_test(test_error_scale_separates_right_from_wrong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
