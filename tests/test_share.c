/* Share-Attention on the CPU: the JSON map reader (every accepted form, every rule a
 * malformed map breaks), the synthetic maps, the reference of the approximation, the
 * peaked inputs that make heads alike, and the `share` kernel's workspace layout, byte
 * model and CSV columns. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/layouts.h"
#include "../kernels/registry.h"
#include "../kernels/share_internal.h"
#include "../problem/kv_fill.h"
#include "../problem/share_map.h"
#include "../reference/reference.h"
#include "../report/csv.h"
#include "test_problem.h"

static int parse(const char *text, int layer, share_map_t *m, char *msg, size_t len)
{
    return share_map_parse(text, "map.json", layer, m, msg, len);
}

static void test_map_forms(void **state)
{
    (void)state;
    static const char *const forms[] = {
        "{\"layers\": [{\"essential_heads\": [0, 1, 2, 3], \"share_to\": {}},"
        " {\"essential_heads\": [3, 0], \"share_to\": {\"1\": 0, \"2\": 3}}]}",
        "[{\"essential_heads\": [0, 1, 2, 3], \"share_to\": {}},"
        " {\"essential_heads\": [3, 0], \"share_to\": {\"2\": 3, \"1\": 0}}]",
        "{\"1\": {\"share_to\": {\"1\": 0, \"2\": 3}, \"essential_heads\": [0, 3]},"
        " \"0\": {\"essential_heads\": [2, 1, 0, 3], \"share_to\": {}}}",
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; ++i) {
        share_map_t m;
        char msg[256] = "";
        assert_int_equal(parse(forms[i], 1, &m, msg, sizeof msg), 0);
        assert_int_equal(m.heads, 4);
        assert_int_equal(m.essential, 2);
        assert_int_equal(m.layers, 2);
        assert_int_equal(m.layer, 1);
        assert_string_equal(m.path, "map.json");
        const int want[4] = {0, 0, 3, 3};
        for (int h = 0; h < 4; ++h) assert_int_equal(m.share_to[h], want[h]);
        share_map_free(&m);
        assert_int_equal(parse(forms[i], 0, &m, msg, sizeof msg), 0);
        assert_int_equal(m.essential, 4);
        for (int h = 0; h < 4; ++h) assert_int_equal(m.share_to[h], h);
        share_map_free(&m);
    }
}

static void test_map_rejects(void **state)
{
    (void)state;
    static const struct { const char *text; const char *says; } bad[] = {
        {"", "not valid JSON"},
        {"{\"layers\": [", "not valid JSON"},
        {"42", "top level"},
        {"[]", "no layer"},
        {"{\"layers\": {}}", "no layer"},
        {"[3]", "not an object"},
        {"[{\"share_to\": {}}]", "essential_heads must be an array"},
        {"[{\"essential_heads\": [0]}]", "share_to must be an object"},
        {"[{\"essential_heads\": [0], \"share_to\": [1]}]", "share_to must be an object"},
        {"[{\"essential_heads\": [], \"share_to\": {}}]", "essential_heads is empty"},
        {"[{\"essential_heads\": [0, 0], \"share_to\": {}}]", "listed twice"},
        {"[{\"essential_heads\": [0, \"1\"], \"share_to\": {}}]", "essential_heads[1]"},
        {"[{\"essential_heads\": [0, -1], \"share_to\": {}}]", "essential_heads[1]"},
        {"[{\"essential_heads\": [0, 1.5], \"share_to\": {}}]", "essential_heads[1]"},
        {"[{\"essential_heads\": [0, 5], \"share_to\": {\"1\": 0}}]", "essential_heads[1]"},
        {"[{\"essential_heads\": [0], \"share_to\": {\"one\": 0}}]", "share_to key 'one'"},
        {"[{\"essential_heads\": [0], \"share_to\": {\"01\": 0}}]", "share_to key '01'"},
        {"[{\"essential_heads\": [0], \"share_to\": {\"1\": \"0\"}}]", "share_to[1]"},
        {"[{\"essential_heads\": [0, 1], \"share_to\": {\"1\": 0}}]", "essential and shared"},
        {"[{\"essential_heads\": [0, 2], \"share_to\": {\"1\": 0, \"3\": 1}}]", "not essential"},
        {"[{\"essential_heads\": [0], \"share_to\": {\"2\": 0}}]", "share_to key '2'"},
        {"[{\"essential_heads\": [0, 1], \"share_to\": {\"3\": 0, \"2\": 0}}, "
         "{\"essential_heads\": [0], \"share_to\": {\"1\": 0}}]", "layer 1 has 2 heads"},
        {"{\"0\": {\"essential_heads\": [0], \"share_to\": {}}, \"0\": {\"essential_heads\": [0], \"share_to\": {}}}",
         "given twice"},
        {"{\"0\": {\"essential_heads\": [0], \"share_to\": {}}, \"7\": {\"essential_heads\": [0], \"share_to\": {}}}",
         "not a layer number"},
        {"[{\"essential_heads\": [0], \"share_to\": {}}]", "--share-layer 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        share_map_t m;
        char msg[256] = "";
        int layer = strstr(bad[i].says, "--share-layer") ? 1 : 0;
        assert_int_equal(parse(bad[i].text, layer, &m, msg, sizeof msg), -1);
        assert_null(m.share_to);
        if (!strstr(msg, bad[i].says)) fail_msg("map %zu: '%s' does not say '%s'", i, msg, bad[i].says);
        assert_null(strchr(msg, '\n'));
        assert_true(strncmp(msg, "--share-", 8) == 0);
    }
}

static void test_map_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/attnbench_share_map_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"layers\": [{\"essential_heads\": [1], \"share_to\": {\"0\": 1}}]}\n", f);
    fclose(f);
    share_map_t m;
    char msg[256];
    assert_int_equal(share_map_load(path, 0, &m, msg, sizeof msg), 0);
    assert_int_equal(m.share_to[0], 1);
    assert_int_equal(m.share_to[1], 1);
    share_map_free(&m);
    unlink(path);
    assert_int_equal(share_map_load(path, 0, &m, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "cannot read"));
    assert_int_equal(share_map_load("a b.json", 0, &m, msg, sizeof msg), -1);
}

/* Every synthetic map: heads - shared essential heads, each its own target, every
 * other head's target essential and the nearest one before it (or the first). */
static void test_synthetic_maps(void **state)
{
    (void)state;
    for (int h = 1; h <= 64; ++h)
        for (int shared = 0; shared < h; ++shared) {
            int essential = 0, last = -1, first = -1;
            for (int i = 0; i < h; ++i)
                if (share_synthetic_target(h, shared, i) == i && first < 0) first = i;
            for (int i = 0; i < h; ++i) {
                int t = share_synthetic_target(h, shared, i);
                assert_true(t >= 0 && t < h);
                assert_int_equal(share_synthetic_target(h, shared, t), t);
                if (t == i) {
                    ++essential;
                    last = i;
                } else {
                    assert_int_equal(t, last >= 0 ? last : first);
                }
            }
            assert_int_equal(essential, h - shared);
        }
}

static int groups_without_essential(const problem_t *p)
{
    int n = 0;
    for (int j = 0; j < p->kv_heads; ++j) {
        int any = 0;
        for (int i = j * problem_group(p); i < (j + 1) * problem_group(p); ++i) any |= problem_share_target(p, i) == i;
        n += !any;
    }
    return n;
}

/* 80% shared over GQA groups of 4 leaves groups without an essential head: their K is
 * never read, and the byte model says so. */
static void test_gqa_groups_lose_essential_heads(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 1, 32, 8, 128, 8192, 128);
    p.share_fraction = 0.8;
    assert_int_equal(problem_share_essential(&p), 6);
    assert_int_equal(groups_without_essential(&p), 2);
    const attn_kernel_t *k = attn_kernel_find("share");
    assert_non_null(k);
    assert_int_equal(k->approx, ATTN_APPROX_SHARE);
    assert_null(k->unsupported(&p));
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    device_info_t dev = test_h100();
    k->plan(&p, &dev, &plan);
    attn_io_t io = k->io(&p, &plan);
    const double kv = io_kv_bytes_stored(&p), rest = io_qo_bytes(&p) + io_table_bytes(&p);
    assert_true(fabs(io.bytes - (kv * (6.0 + 8.0) / 16.0 + rest)) < 1.0);
    p.share_fraction = 0.3;
    assert_int_equal(groups_without_essential(&p), 0);
    io = k->io(&p, &plan);
    assert_true(fabs(io.bytes - (kv + rest)) < 1.0);
    /* the FLOPs: Q.K^T of the essential heads, P.V of all */
    assert_true(fabs(io.flops - io_flops(&p) / 2.0 * (1.0 + 22.0 / 32.0)) < 1.0);
}

static void test_share_plan_and_workspace(void **state)
{
    (void)state;
    const attn_kernel_t *k = attn_kernel_find("share");
    device_info_t dev = test_h100();
    const int ctxs[] = {1, 7, 255, 8192, 131072};
    for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; ++i) {
        problem_t p = test_problem(2, 3, 8, 2, 128, ctxs[i], 5);
        attn_plan_t plan;
        memset(&plan, 0, sizeof plan);
        k->plan(&p, &dev, &plan);
        const int keys = problem_keys(&p);
        assert_true(plan.split.splits >= 1 && plan.split.chunk % SHARE_TILE == 0);
        assert_true((long)plan.split.splits * plan.split.chunk >= keys);
        assert_true((long)(plan.split.splits - 1) * plan.split.chunk < keys);
        share_ws_t w = share_ws_layout(6, 8, problem_share_essential(&p), keys, 128, plan.split.splits, 1);
        assert_int_equal(w.stats % SHARE_ALIGN, 0);
        assert_int_equal(w.partials % SHARE_ALIGN, 0);
        assert_true(w.stats >= (size_t)6 * problem_share_essential(&p) * keys * sizeof(float));
        assert_true(w.partials - w.stats >= (size_t)6 * problem_share_essential(&p) * plan.split.splits * 8);
        assert_true(w.bytes - w.partials >= (size_t)plan.split.splits * 6 * 8 * 128 * sizeof(float));
        assert_int_equal(k->workspace_bytes(&p, &plan), w.bytes);
    }
    /* lanes cover every 16-byte vector of a row with at most two each */
    for (int d = 8; d <= 256; d += 8)
        for (int es = 2; es <= 4; es += 2) {
            int v = share_row_vectors(d, es), l = share_lanes_per_row(v);
            assert_int_equal(v * 16, d * es);
            assert_true(l >= 1 && l <= 32 && (l & (l - 1)) == 0);
            assert_true(v <= 2 * l);
            assert_true(l == 32 || l >= v);
            /* one head a CTA: SHARE_WIDE_VECTORS a lane, on the fewest lanes that cover the row */
            int w = share_lanes_per_row_of(v, SHARE_WIDE_VECTORS);
            assert_true(w >= 1 && w <= 32 && (w & (w - 1)) == 0);
            assert_true(v <= SHARE_WIDE_VECTORS * w);
            assert_true(w == 1 || v > SHARE_WIDE_VECTORS * (w / 2));
        }
}

/* The logits launch's parts: about all / busy where few batches have an essential head,
 * none under SHARE_TILE keys, one where every batch has one. */
static void test_logit_parts(void **state)
{
    (void)state;
    const int mha[8] = {0, 0, 0, 0, 4, 4, 4, 4};   /* MHA, two essential heads of eight */
    assert_int_equal(share_busy_batches(mha, 8, 1), 2);
    assert_int_equal(share_logit_parts(8192, 2, 8), 4);
    assert_int_equal(share_logit_parts(8192, 3, 8), 3);
    assert_int_equal(share_logit_parts(128, 1, 32), 2);   /* 64 keys a part at the least */
    assert_int_equal(share_logit_parts(64, 1, 32), 1);
    assert_int_equal(share_logit_parts(8192, 8, 8), 1);
    assert_int_equal(share_logit_parts(8192, 0, 8), 1);
    const int gqa[8] = {0, 0, 0, 0, 0, 0, 0, 0};    /* g = 2 of 4 heads: one group keeps head 0 */
    assert_int_equal(share_busy_batches(gqa, 2, 4), 1);
    for (int chunk = 64; chunk <= 4096; chunk += 64)
        for (int parts = 1; parts <= chunk / 64; ++parts) {
            const int k = share_part_keys(chunk, parts);
            assert_true((long)k * parts >= chunk && (long)k * (parts - 1) < chunk);
        }
}

/* Within one kv head, a shared head's output is its essential head's exact output:
 * the same weights on the same V. The identity map is exact attention. */
static void test_reference_same_group(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 2, 4, 1, 64, 300, 9);
    ref_source_t exact = test_logical_source(&p, LAYOUT_CONTIGUOUS, 5), shared = exact;
    int to[4] = {0, 0, 2, 0};
    shared.share_to = to;
    double a[64], b[64];
    for (int s = 0; s < 2; ++s)
        for (int h = 0; h < 4; ++h) {
            reference_row(&shared, s, h, a);
            reference_row(&exact, s, to[h], b);
            for (int x = 0; x < 64; ++x) assert_true(a[x] == b[x]);
        }
    int identity[4] = {0, 1, 2, 3};
    shared.share_to = identity;
    reference_row(&shared, 1, 3, a);
    reference_row(&exact, 1, 3, b);
    for (int x = 0; x < 64; ++x) assert_true(a[x] == b[x]);
}

/* Across kv heads: the weights of the essential head (its query, its K), this head's V. */
static void test_reference_cross_group(void **state)
{
    (void)state;
    const int d = 16, L = 40;
    problem_t p = test_problem(1, 1, 4, 4, d, 33, 7);
    ref_source_t src = test_logical_source(&p, LAYOUT_CONTIGUOUS, 9);
    int to[4] = {0, 0, 3, 3};
    src.share_to = to;
    for (int h = 0; h < 4; ++h) {
        double got[16], want[16] = {0}, w[40], m = -INFINITY, sum = 0;
        reference_row(&src, 0, h, got);
        const int e = to[h];
        for (int t = 0; t < L; ++t) {
            double dot = 0;
            for (int x = 0; x < d; ++x)
                dot += (double)logical_q(9, 4, d, 0, e, x) * kv_logical(&src.geom, 9, 0, 0, e, t, x);
            w[t] = dot * problem_scale(&p);
            m = fmax(m, w[t]);
        }
        for (int t = 0; t < L; ++t) sum += (w[t] = exp(w[t] - m));
        for (int t = 0; t < L; ++t)
            for (int x = 0; x < d; ++x) want[x] += w[t] / sum * kv_logical(&src.geom, 9, 0, 1, h, t, x);
        for (int x = 0; x < d; ++x) assert_true(fabs(got[x] - want[x]) < 1e-12);
    }
}

/* Peaked inputs stay exact in every dtype: k/128 steps of their amplitude, |k| <= 127. */
static void test_peaked_values_exact(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 1, 8, 2, 64, 2000, 70);
    p.scores = SCORES_PEAKED;
    p.sink_logit = peak_logit_max(64, 1.0);
    kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    assert_int_equal(g.peak_sink, PEAK_CODE_MAX);
    assert_int_equal(g.peak_heavy, problem_peak_code(&p, 8.0));
    assert_true(g.peak_heavy > 0 && g.peak_recent > 0);
    int sinks = 0, heavy = 0, recent = 0;
    for (int pos = 0; pos < 2070; ++pos) {
        int b = kv_peak_code(&g, 3, pos);
        sinks += pos < PEAK_SINKS && b == g.peak_sink;
        recent += pos >= 2070 - PEAK_RECENT && b == g.peak_recent;
        heavy += pos >= PEAK_SINKS && pos < 2070 - PEAK_RECENT && b == g.peak_heavy;
        for (int which = 0; which < 2; ++which)
            for (int x = 0; x < 64; x += 7) {
                double k = kv_logical(&g, 3, 0, which, 1, pos, x) * 128.0 / KV_AMPLITUDE;
                assert_true(k == floor(k) && fabs(k) <= 127);
            }
    }
    assert_int_equal(sinks, PEAK_SINKS);
    assert_int_equal(recent, PEAK_RECENT);
    assert_true(heavy > 0 && heavy < 40);
    for (int h = 0; h < 8; ++h)
        for (int x = 0; x < 64; ++x) {
            double k = kv_query(3, 1, 8, 2, 64, 0, h, x) * 128.0 / Q_AMPLITUDE;
            assert_true(k == floor(k) && fabs(k) <= 127);
        }
    /* flat scores: no code anywhere, and the queries are logical_q's */
    p.scores = SCORES_FLAT;
    g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    assert_int_equal(g.peaked + g.peak_sink + g.peak_heavy + g.peak_recent, 0);
    assert_true(kv_query(3, 0, 8, 2, 64, 0, 5, 9) == logical_q(3, 8, 64, 0, 5, 9));
}

/* The attention mass exact attention puts on the peaked positions, for head h. */
static double peaked_mass(const problem_t *p, uint64_t seed, int h)
{
    ref_source_t src = test_logical_source(p, LAYOUT_CONTIGUOUS, seed);
    kv_geometry_t peaked = src.geom;
    if (!peaked.peaked) {   /* flat inputs: the positions peaked inputs would favour */
        problem_t q = *p;
        q.scores = SCORES_PEAKED;
        peaked = kv_geometry_make(&q, LAYOUT_CONTIGUOUS);
    }
    const int L = problem_keys(p), d = p->head_dim;
    double *w = malloc((size_t)L * sizeof *w), m = -INFINITY, sum = 0, mass = 0;
    for (int t = 0; t < L; ++t) {
        double dot = 0;
        for (int x = 0; x < d; ++x)
            dot += (double)kv_query(seed, p->scores == SCORES_PEAKED, p->heads, p->kv_heads, d, 0, h, x) *
                   kv_logical(&src.geom, seed, 0, 0, h / problem_group(p), t, x);
        w[t] = dot * problem_scale(p);
        m = fmax(m, w[t]);
    }
    for (int t = 0; t < L; ++t) sum += (w[t] = exp(w[t] - m));
    for (int t = 0; t < L; ++t) mass += kv_peak_code(&peaked, seed, t) ? w[t] / sum : 0.0;
    free(w);
    return mass;
}

/* Peaked inputs concentrate attention on the sinks, heavy hitters and recent window;
 * flat ones spread it. Heads are then alike, and sharing costs less accuracy. */
static void test_peaked_concentrates(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 1, 8, 8, 128, 4096, 64);
    p.scores = SCORES_PEAKED;
    for (int h = 0; h < 8; h += 3) {
        double m = peaked_mass(&p, 11, h);
        if (!(m > 0.9)) fail_msg("head %d: peaked mass %.3f", h, m);
    }
    problem_t flat = p;
    flat.scores = SCORES_FLAT;
    for (int h = 0; h < 8; h += 3) assert_true(peaked_mass(&flat, 11, h) < 0.2);

    /* relative L2 distance of a half-shared map from exact attention: peaked < flat */
    double err[2];
    const problem_t *cases[2] = {&p, &flat};
    int to[8];
    for (int i = 0; i < 8; ++i) to[i] = share_synthetic_target(8, 4, i);
    for (int c = 0; c < 2; ++c) {
        ref_source_t exact = test_logical_source(cases[c], LAYOUT_CONTIGUOUS, 11), shared = exact;
        shared.share_to = to;
        double diff2 = 0, ref2 = 0, a[128], b[128];
        for (int h = 0; h < 8; ++h) {
            reference_row(&shared, 0, h, a);
            reference_row(&exact, 0, h, b);
            for (int x = 0; x < 128; ++x) diff2 += (a[x] - b[x]) * (a[x] - b[x]), ref2 += b[x] * b[x];
        }
        err[c] = sqrt(diff2 / ref2);
    }
    if (!(err[0] > 0 && err[0] < err[1])) fail_msg("approx err peaked %.4f, flat %.4f", err[0], err[1]);
}

static void ml_add(float *m, float *l, float m2, float l2)
{
    float M = fmaxf(*m, m2);
    if (M == -INFINITY) return;
    *l = *l * expf(*m - M) + l2 * expf(m2 - M);
    *m = M;
}

/* The share kernel's three launches on the CPU, in fp32 as the GPU computes them, over
 * the same workspace layout and indices (share_internal.h), one CTA after another;
 * k_read[s * g + j] counts the K rows of (stream, kv head) the logits launch reads. */
static void emulate_share(const problem_t *p, const split_plan_t *sp, uint64_t seed, float *out, long *k_read)
{
    const int S = problem_streams(p), h = p->heads, g = p->kv_heads, group = problem_group(p), d = p->head_dim;
    const int keys = problem_keys(p), E = problem_share_essential(p), batches = share_batches(group);
    kv_geometry_t geo = kv_geometry_make(p, LAYOUT_CONTIGUOUS);
    int *to = malloc((size_t)h * sizeof *to), *rank = malloc((size_t)h * sizeof *rank);
    for (int i = 0, r = 0; i < h; ++i) {
        to[i] = problem_share_target(p, i);
        rank[i] = to[i] == i ? r++ : -1;
    }
    const int parts = share_logit_parts(sp->chunk, share_busy_batches(to, g, group), (long)g * batches);
    const int part_keys = share_part_keys(sp->chunk, parts), ctas = sp->splits * parts;
    share_ws_t ws = share_ws_layout(S, h, E, keys, d, sp->splits, parts);
    char *w = calloc(1, ws.bytes);
    float *logits = (float *)(w + ws.logits), *stats = (float *)(w + ws.stats), *partials = (float *)(w + ws.partials);
    const float scale = (float)problem_scale(p);
    for (int s = 0; s < S; ++s)
        for (int j = 0; j < g; ++j)
            for (int b = 0; b < batches; ++b)
                for (int cta = 0; cta < ctas; ++cta) {
                    const int first = share_batch_first(j, b, group), nh = share_batch_count(b, group);
                    const int split = cta / parts, k0 = split * sp->chunk + cta % parts * part_keys;
                    int k1 = (split + 1) * sp->chunk < keys ? (split + 1) * sp->chunk : keys;
                    k1 = k0 + part_keys < k1 ? k0 + part_keys : k1;
                    for (int t = 0; t < nh; ++t) {
                        const int e = first + t;
                        if (rank[e] < 0) continue;
                        float m = -INFINITY, l = 0.0f;
                        for (int key = k0; key < k1; ++key) {
                            float dot = 0.0f;
                            for (int x = 0; x < d; ++x)
                                dot = fmaf(scale * kv_query(seed, p->scores == SCORES_PEAKED, h, g, d, s, e, x),
                                           kv_logical(&geo, seed, s, 0, j, key, x), dot);
                            logits[share_logit_at(s, E, rank[e], keys, key)] = dot;
                            ml_add(&m, &l, dot, 1.0f);
                            k_read[s * g + j]++;
                        }
                        stats[2 * share_stat_at(s, E, rank[e], ctas, cta)] = m;
                        stats[2 * share_stat_at(s, E, rank[e], ctas, cta) + 1] = l;
                    }
                }
    for (int s = 0; s < S; ++s)
        for (int j = 0; j < g; ++j)
            for (int b = 0; b < batches; ++b)
                for (int split = 0; split < sp->splits; ++split) {
                    const int first = share_batch_first(j, b, group), nh = share_batch_count(b, group);
                    const int k0 = split * sp->chunk, k1 = k0 + sp->chunk < keys ? k0 + sp->chunk : keys;
                    for (int t = 0; t < nh; ++t) {
                        const int r = rank[to[first + t]];
                        float m = -INFINITY, l = 0.0f;
                        for (int k = 0; k < ctas; ++k) {
                            const int64_t at = 2 * share_stat_at(s, E, r, ctas, k);
                            ml_add(&m, &l, stats[at], stats[at + 1]);
                        }
                        for (int x = 0; x < d; ++x) {
                            float acc = 0.0f;
                            for (int key = k0; key < k1; ++key)
                                acc = fmaf(expf(logits[share_logit_at(s, E, r, keys, key)] - m) / l,
                                           kv_logical(&geo, seed, s, 1, j, key, x), acc);
                            partials[share_partial_at(split, S, s, h, first + t, d, x)] = acc;
                        }
                    }
                }
    const int64_t n = (int64_t)S * h * d;
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int k = 0; k < sp->splits; ++k) sum += partials[(int64_t)k * n + i];
        out[i] = sum;
    }
    free(w);
    free(to);
    free(rank);
}

/* The kernel's decomposition (split statistics, exact normalisation, partial sums over
 * splits, batches of heads) matches the reference of the approximation, and reads K
 * only for kv heads with an essential head. */
static void test_emulated_kernel_matches_reference(void **state)
{
    (void)state;
    share_map_t irregular;
    char msg[256];
    assert_int_equal(share_map_load("bench/suites/share-maps/irregular-h32.json", 2, &irregular, msg, sizeof msg), 0);
    static const struct { int h, g, d, ctx, gen, splits; double f; int map, peaked; } cases[] = {
        {8, 2, 16, 300, 5, 3, 0.5, 0, 0},  {12, 2, 16, 200, 3, 1, 0.3, 0, 1}, {9, 1, 8, 150, 2, 4, 0.8, 0, 0},
        {32, 8, 8, 100, 1, 2, 0.0, 1, 1},  {4, 4, 32, 1, 1, 1, 0.5, 0, 0},   {8, 8, 16, 129, 64, 5, 0.0, 0, 1},
        /* MHA with most heads shared: the logits launch cuts its splits into parts */
        {8, 8, 8, 1000, 5, 1, 0.8, 0, 0},  {12, 12, 8, 700, 9, 2, 0.7, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        problem_t p = test_problem(2, 1, cases[c].h, cases[c].g, cases[c].d, cases[c].ctx, cases[c].gen);
        p.share_fraction = cases[c].f;
        p.share_map = cases[c].map ? &irregular : NULL;
        p.scores = cases[c].peaked ? SCORES_PEAKED : SCORES_FLAT;
        const split_plan_t sp = split_plan_fixed(problem_keys(&p), cases[c].splits, SHARE_TILE);
        const int S = problem_streams(&p), d = p.head_dim;
        float *out = malloc((size_t)S * p.heads * d * sizeof *out);
        long *k_read = calloc((size_t)S * p.kv_heads, sizeof *k_read);
        emulate_share(&p, &sp, 77, out, k_read);
        int to[64];
        for (int i = 0; i < p.heads; ++i) to[i] = problem_share_target(&p, i);
        ref_source_t src = test_logical_source(&p, LAYOUT_CONTIGUOUS, 77);
        src.share_to = to;
        for (int s = 0; s < S; ++s)
            for (int i = 0; i < p.heads; ++i) {
                double want[64];
                reference_row(&src, s, i, want);
                err_acc_t e = {0};
                err_add(&e, want, out + ((size_t)s * p.heads + i) * d, d);
                if (!(err_rel(&e) < 1e-5)) fail_msg("case %zu stream %d head %d: rel err %.3e", c, s, i, err_rel(&e));
            }
        for (int s = 0; s < S; ++s)
            for (int j = 0; j < p.kv_heads; ++j) {
                int essential = 0;
                for (int i = j * problem_group(&p); i < (j + 1) * problem_group(&p); ++i) essential += to[i] == i;
                assert_int_equal(k_read[s * p.kv_heads + j], (long)essential * problem_keys(&p));
            }
        free(out);
        free(k_read);
    }
    share_map_free(&irregular);
}

/* approx_err and kept are the last two columns; rows with other --share-fraction or
 * --scores are other rows. */
static void test_csv_columns_and_keys(void **state)
{
    (void)state;
    assert_string_equal(csv_column_name(csv_column_count - 3), "approx_err");
    assert_string_equal(csv_column_name(csv_column_count - 2), "kept");
    result_row_t a, b;
    result_row_init(&a);
    assert_true(isnan(a.approx_err) && isnan(a.kept));
    snprintf(a.args, sizeof a.args, "--kernel share --share-fraction 0.2");
    b = a;
    snprintf(b.args, sizeof b.args, "--kernel share --share-fraction 0.8");
    char ka[1024], kb[1024];
    csv_row_key(&a, ka, sizeof ka);
    csv_row_key(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
    snprintf(b.args, sizeof b.args, "--kernel share --share-fraction 0.2 --scores peaked --sink-logit 10");
    csv_row_key(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
    snprintf(b.args, sizeof b.args, "--kernel share --share-fraction 0.2");
    csv_row_key(&b, kb, sizeof kb);
    assert_string_equal(ka, kb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_forms),
        cmocka_unit_test(test_map_rejects),
        cmocka_unit_test(test_map_load_file),
        cmocka_unit_test(test_synthetic_maps),
        cmocka_unit_test(test_gqa_groups_lose_essential_heads),
        cmocka_unit_test(test_share_plan_and_workspace),
        cmocka_unit_test(test_logit_parts),
        cmocka_unit_test(test_reference_same_group),
        cmocka_unit_test(test_reference_cross_group),
        cmocka_unit_test(test_peaked_values_exact),
        cmocka_unit_test(test_peaked_concentrates),
        cmocka_unit_test(test_emulated_kernel_matches_reference),
        cmocka_unit_test(test_csv_columns_and_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
