/* Ragged batches (--ctx-dist): the distribution parser and its lengths, the ragged split
 * planner's balance (problem/ragged_plan.h) and fused's plan of it, the byte model, the
 * layouts and the reference following each request's own length, and verification's
 * strata. */
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
#include "../harness/layouts_internal.h"
#include "../harness/verify.h"
#include "../kernels/bifurcated_internal.h"
#include "../kernels/registry.h"
#include "../problem/ctx_dist.h"
#include "../problem/logical_data.h"
#include "../problem/ragged_plan.h"
#include "../reference/reference.h"
#include "../reference/reference_internal.h"
#include "test_problem.h"

static char tmp_path[] = "/tmp/attnbench_ragged_XXXXXX";

static const char *write_lengths(const char *text)
{
    strcpy(tmp_path, "/tmp/attnbench_ragged_XXXXXX");
    int fd = mkstemp(tmp_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return tmp_path;
}

static ctx_dist_t parsed(const char *spec)
{
    ctx_dist_t d;
    char msg[256];
    if (ctx_dist_parse(spec, &d, msg, sizeof msg) != 0) fail_msg("%s: %s", spec, msg);
    return d;
}

static void test_parse_specs(void **state)
{
    (void)state;
    ctx_dist_t d = parsed("fixed");
    assert_int_equal(d.kind, CTX_DIST_FIXED);
    assert_false(ctx_dist_ragged(&d));
    assert_int_equal(ctx_dist_len(&d, 777, 5), 777);
    d = parsed("uniform:1k:32K");
    assert_int_equal(d.kind, CTX_DIST_UNIFORM);
    assert_int_equal(d.lo, 1024);
    assert_int_equal(d.hi, 32768);
    assert_true(d.seed == 1);
    assert_string_equal(d.spec, "uniform:1k:32K");
    d = parsed("uniform:5:5:7");
    assert_true(d.seed == 7);
    assert_int_equal(ctx_dist_len(&d, 1, 3), 5);
    char spec[128];
    snprintf(spec, sizeof spec, "file:%s", write_lengths("1\n64k\r\n300\n"));
    d = parsed(spec);
    assert_int_equal(d.kind, CTX_DIST_FILE);
    assert_int_equal(d.n, 3);
    assert_int_equal(ctx_dist_len(&d, 9, 0), 1);
    assert_int_equal(ctx_dist_len(&d, 9, 1), 65536);
    assert_int_equal(ctx_dist_len(&d, 9, 2), 300);
    char msg[256];
    assert_int_equal(ctx_dist_check_batch(&d, 3, msg, sizeof msg), 0);
    assert_int_equal(ctx_dist_check_batch(&d, 4, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--batch is 4"));
    ctx_dist_free(&d);
    unlink(tmp_path);
}

/* Every bad spec: -1 and one line naming the option. */
static void test_bad_specs(void **state)
{
    (void)state;
    char bad_file[160], empty_file[160], zero_file[160];
    snprintf(bad_file, sizeof bad_file, "file:%s", write_lengths("12\nabc\n"));
    char bad_path[64];
    strcpy(bad_path, tmp_path);
    snprintf(empty_file, sizeof empty_file, "file:%s", write_lengths(""));
    char empty_path[64];
    strcpy(empty_path, tmp_path);
    snprintf(zero_file, sizeof zero_file, "file:%s", write_lengths("0\n"));
    const char *bad[] = {"", "fixed:", "uniform", "uniform:1k", "uniform:0:8", "uniform:8:4", "uniform:1x:2k",
                         "uniform:1k:2k:-1", "uniform:1k:2k:", "uniform:1k:2k:x", "uniform:k:2k", "normal:1:2",
                         "file:", "file:/nonexistent/lengths.txt", "file:a b", bad_file, empty_file, zero_file,
                         "uniform:3000000000:3000000001", "uniform:1:3000m", "uniform:1:22000000000000000m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        ctx_dist_t d;
        char msg[256] = "";
        if (ctx_dist_parse(bad[i], &d, msg, sizeof msg) != -1) fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(msg, "--ctx-dist"));
        assert_null(strchr(msg, '\n'));
        assert_null(d.lens);
    }
    unlink(bad_path);
    unlink(empty_path);
    unlink(tmp_path);
}

/* Drawn lengths: inside the bounds, the same for the same spec, another batch for another seed. */
static void test_uniform_lengths(void **state)
{
    (void)state;
    ctx_dist_t a = parsed("uniform:1k:32k"), b = parsed("uniform:1k:32k:2");
    int lo = 1 << 30, hi = 0, same = 0;
    for (int r = 0; r < 4096; ++r) {
        const int n = ctx_dist_len(&a, 0, r);
        assert_true(n >= 1024 && n <= 32768);
        assert_int_equal(n, ctx_dist_len(&a, 0, r));
        same += n == ctx_dist_len(&b, 0, r);
        if (n < lo) lo = n;
        if (n > hi) hi = n;
    }
    assert_true(lo < 1024 + 100 && hi > 32768 - 100); /* the whole range is drawn */
    assert_true(same < 10);
    ctx_dist_t one = parsed("uniform:1:64k");
    problem_t p = test_problem(64, 1, 32, 32, 128, 8192, 128);
    problem_set_ctx_dist(&p, &one);
    assert_true(problem_ragged(&p));
    assert_int_equal(p.ctx, problem_ctx_max(&p));
    int64_t total = 0;
    for (int r = 0; r < 64; ++r) total += problem_ctx_len(&p, r);
    assert_true(problem_ctx_total(&p) == total);
    char msg[256];
    assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
    p.ctx = 5; /* a ctx that is not the longest is refused */
    assert_int_equal(problem_validate(&p, msg, sizeof msg), -1);
    char what[256];
    problem_set_ctx_dist(&p, &one);
    problem_describe(&p, what, sizeof what);
    assert_non_null(strstr(what, "ctx-dist=uniform:1:64k"));
    /* fixed: no distribution at all, ctx as given */
    ctx_dist_t fixed = parsed("fixed");
    problem_t q = test_problem(4, 1, 8, 8, 64, 100, 1);
    problem_set_ctx_dist(&q, &fixed);
    assert_false(problem_ragged(&q));
    assert_null(q.ctx_dist);
    assert_int_equal(q.ctx, 100);
    assert_true(problem_ctx_total(&q) == 400);
}

/* ---- the planner ---- */

/* The time of a work list under the hardware's dispatch: each CTA, in list order, to the
 * slot that frees first (each costs its keys and RAGGED_CTA_COST_KEYS). */
static double dispatched_makespan(const int *keys, int units, long per_unit, int chunk, long slots)
{
    const long n = ragged_work_count(keys, units, chunk);
    int32_t *work = malloc((size_t)n * 2 * sizeof *work);
    double *load = calloc((size_t)slots, sizeof *load);
    assert_non_null(work);
    assert_non_null(load);
    assert_int_equal(ragged_work_build(keys, units, chunk, work), 0);
    for (long e = 0; e < n; ++e) {
        const long left = keys[work[2 * e]] - (long)work[2 * e + 1] * chunk;
        const double cost = (double)(left < chunk ? left : chunk) + RAGGED_CTA_COST_KEYS;
        for (long c = 0; c < per_unit; ++c) {
            long best = 0;
            for (long s = 1; s < slots; ++s)
                if (load[s] < load[best]) best = s;
            load[best] += cost;
        }
    }
    double most = 0.0;
    for (long s = 0; s < slots; ++s) most = fmax(most, load[s]);
    free(work);
    free(load);
    return most;
}

typedef struct balance_case {
    const char *what;
    int units, long_units, long_keys, short_keys; /* long_units of long_keys, the rest short_keys */
    int uniform_lo, uniform_hi;                    /* or drawn uniformly (long_units 0) */
    long per_unit;
    int ctas_per_sm;
    double bound;  /* dispatched time over the ideal: the stored keys spread evenly */
} balance_case_t;

/* The ragged planner's balance: the slot that finishes last, against the ideal of every
 * stored key spread evenly over the slots (the per-SM work, max over mean of an even
 * spread), within the bars the GPU measures (ragged uniform 1k..32k at 90% of the read
 * peak, 1/0.9 = 1.11; one 64k request among 63 of 1k within 1.15x its bytes' time). The
 * replay runs each resident CTA at its share of the SM to the end, so it is the
 * pessimistic side of the GPU, where the last CTA on an SM streams faster. */
static void test_planner_balance(void **state)
{
    (void)state;
    /* CTAs of d = 128 as fused runs them: two resident per SM (each at half its SM's
     * bandwidth where both stream), and one */
    const balance_case_t cases[] = {
        {"64k among 63 x 1k, MHA", 64, 1, 65536 + 128, 1024 + 128, 0, 0, 32, 2, 1.15},
        {"64k among 63 x 1k, MHA, one a SM", 64, 1, 65536 + 128, 1024 + 128, 0, 0, 32, 1, 1.15},
        {"64k among 63 x 1k, GQA g8", 64, 1, 65536 + 128, 1024 + 128, 0, 0, 8, 2, 1.15},
        {"64k among 63 x 1k, MHA, four a SM", 64, 1, 65536 + 128, 1024 + 128, 0, 0, 32, 4, 1.15},
        {"64k among 7 x 1k, GQA g8", 8, 1, 65536 + 128, 1024 + 128, 0, 0, 8, 2, 1.15},
        {"uniform 1k..32k, B 64, MHA", 64, 0, 0, 0, 1024 + 128, 32768 + 128, 32, 2, 1.10},
        {"uniform 1k..32k, B 64, GQA g8", 64, 0, 0, 0, 1024 + 128, 32768 + 128, 8, 2, 1.10},
        {"uniform 1..64k, B 16, GQA g8", 16, 0, 0, 0, 2, 65536 + 1, 8, 2, 1.10},
        {"uniform 1..64k, B 16, GQA g8, one a SM", 16, 0, 0, 0, 2, 65536 + 1, 8, 1, 1.10},
    };
    const int sms = 132;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const balance_case_t *c = &cases[i];
        int keys[64];
        double stored = 0.0;
        for (int u = 0; u < c->units; ++u) {
            if (c->long_units) keys[u] = u < c->long_units ? c->long_keys : c->short_keys;
            else keys[u] = c->uniform_lo + (int)(splitmix64(1000 + u) % (uint64_t)(c->uniform_hi - c->uniform_lo + 1));
            stored += (double)keys[u] * c->per_unit;
        }
        const long slots = (long)sms * c->ctas_per_sm;
        split_plan_t s = ragged_plan_auto(keys, c->units, c->per_unit, 64, sms, c->ctas_per_sm, 256);
        assert_int_equal(s.chunk % 64, 0);
        double ideal = stored / (double)slots, got = dispatched_makespan(keys, c->units, c->per_unit, s.chunk, slots);
        if (got > c->bound * ideal)
            fail_msg("%s: chunk %d (%d splits): %.0f keys on the last slot, %.3f x the even spread %.0f", c->what,
                     s.chunk, s.splits, got, got / ideal, ideal);
        if (c->long_units) {
            /* the long request is spread; the short ones stay whole */
            assert_true(s.splits > 1);
            assert_int_equal(ragged_chunks(c->short_keys, s.chunk), 1);
        }
    }
}

/* Without the list's order (units in their own order) the same chunks finish later:
 * the order is what packs them. */
static void test_longest_first_beats_batch_order(void **state)
{
    (void)state;
    int keys[64];
    for (int u = 0; u < 64; ++u) keys[u] = 1024 + (int)(splitmix64(7 + u) % 31745u);
    keys[63] = 32768; /* the longest last in batch order */
    const long slots = 132, per_unit = 32;
    split_plan_t s = ragged_plan_auto(keys, 64, per_unit, 64, 132, 1, 256);
    double lpt = dispatched_makespan(keys, 64, per_unit, s.chunk, slots);
    double *load = calloc((size_t)slots, sizeof *load);
    for (int u = 0; u < 64; ++u)
        for (long c = 0; c < per_unit; ++c) {
            long best = 0;
            for (long k = 1; k < slots; ++k)
                if (load[k] < load[best]) best = k;
            load[best] += (double)keys[u] + RAGGED_CTA_COST_KEYS;
        }
    double in_order = 0.0;
    for (long k = 0; k < slots; ++k) in_order = fmax(in_order, load[k]);
    free(load);
    assert_true(lpt < in_order);
}

/* The list holds every chunk of every unit once, longest first. */
static void test_work_list_covers_every_key(void **state)
{
    (void)state;
    const int keys[] = {1, 64, 65, 1000, 4097, 129, 64, 8000};
    const int units = (int)(sizeof keys / sizeof keys[0]);
    const int chunks[] = {64, 128, 1024, 8192};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; ++c) {
        const int chunk = chunks[c];
        const long n = ragged_work_count(keys, units, chunk);
        int32_t *work = malloc((size_t)n * 2 * sizeof *work);
        assert_int_equal(ragged_work_build(keys, units, chunk, work), 0);
        long covered[8] = {0};
        long prev = 1L << 40;
        for (long e = 0; e < n; ++e) {
            const int u = work[2 * e], s = work[2 * e + 1];
            assert_true(u >= 0 && u < units);
            const long lo = (long)s * chunk, hi = lo + chunk < keys[u] ? lo + chunk : keys[u];
            assert_true(lo < hi);
            covered[u] += hi - lo;
            assert_true(hi - lo <= prev);
            prev = hi - lo;
        }
        for (int u = 0; u < units; ++u) assert_int_equal(covered[u], keys[u]);
        split_plan_t s = ragged_plan_of_chunk(keys, units, chunk);
        assert_int_equal(s.splits, (8000 + chunk - 1) / chunk);
        free(work);
    }
}

static attn_plan_t fused_plan_of(const problem_t *p)
{
    device_info_t dev = test_h100();
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    attn_kernel_find("fused")->plan(p, &dev, &plan);
    return plan;
}

/* fused plans a ragged batch by tokens, within the tail merge's slots, and reserves its list. */
static void test_fused_plans_ragged_batches(void **state)
{
    (void)state;
    char spec[128];
    ctx_dist_t d;
    {
        char text[64 * 8] = "65536\n";
        for (int r = 1; r < 64; ++r) strcat(text, "1024\n");
        snprintf(spec, sizeof spec, "file:%s", write_lengths(text));
        d = parsed(spec);
        unlink(tmp_path);
    }
    problem_t p = test_problem(64, 1, 32, 32, 128, 1, 128);
    problem_set_ctx_dist(&p, &d);
    assert_int_equal(p.ctx, 65536);
    assert_null(attn_kernel_find("fused")->unsupported(&p));
    attn_plan_t plan = fused_plan_of(&p);
    assert_true(plan.split.splits > 1);
    assert_true(plan.split.chunk >= 1024 + 128);
    assert_true(attn_kernel_find("fused")->private_bytes(&p, &plan) >= (size_t)64 * plan.split.splits * 2 * sizeof(int32_t));
    assert_true(attn_kernel_find("fused")->workspace_bytes(&p, &plan) > 0);
    /* MQA: 32-row tiles, at most ATTN_TAIL_MERGE_MAX / 32 partials a row */
    problem_t mqa = test_problem(64, 1, 32, 1, 128, 1, 128);
    problem_set_ctx_dist(&mqa, &d);
    assert_true(fused_plan_of(&mqa).split.splits <= 256 / 32);
    p.multi_block = MULTI_BLOCK_OFF;
    assert_int_equal(fused_plan_of(&p).split.splits, 1);
    p.multi_block = MULTI_BLOCK_AUTO;
    p.splits = 4;
    assert_int_equal(fused_plan_of(&p).split.splits, 4);
    p.splits = 0;
    /* the kernels that take one length for the batch say so */
    const char *others[] = {"cublas", "cublas-bifurcated"};
    for (size_t i = 0; i < 2; ++i) assert_non_null(attn_kernel_find(others[i])->unsupported(&p));
    assert_null(attn_kernel_find("auto")->unsupported(&p));
    assert_null(attn_kernel_find("bifurcated")->unsupported(&p));
    ctx_dist_free(&d);
}

/* bifurcated runs a ragged batch on its mma.sync body, and its decode grid spans the
 * most keys any request has after its full context blocks. */
static void test_bifurcated_plans_ragged_batches(void **state)
{
    (void)state;
    char spec[128];
    snprintf(spec, sizeof spec, "file:%s", write_lengths("40\n31\n"));
    ctx_dist_t d = parsed(spec);
    unlink(tmp_path);
    problem_t p = test_paged_problem(2, 4, 32, 8, 128, 40, 9, 16);
    const attn_kernel_t *bif = attn_kernel_find("bifurcated");
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    device_info_t dev = test_h100();
    bif->plan(&p, &dev, &plan);
    assert_true(bifurcated_context_on_wgmma(&plan) > 0); /* fixed lengths: the wgmma body */
    assert_int_equal(bifurcated_decode_keys(&p), 40 + 9 - 32);
    problem_set_ctx_dist(&p, &d);
    assert_null(bif->unsupported(&p));
    bif->plan(&p, &dev, &plan);
    assert_int_equal(bifurcated_context_on_wgmma(&plan), 0);
    assert_int_equal(bifurcated_decode_keys(&p), 31 + 9 - 16); /* the shorter request's */
    p.cache = CACHE_CONTIGUOUS;
    assert_int_equal(bifurcated_decode_keys(&p), 9);
    ctx_dist_free(&d);
}

/* Marks keys [lo, hi) of a stream as covered; each at most once. */
static void cover(char *seen, int keys, int lo, int hi)
{
    for (int k = lo; k < hi; ++k) {
        assert_true(k >= 0 && k < keys);
        assert_int_equal(seen[k], 0);
        seen[k] = 1;
    }
}

/* The kernels' ranges of a ragged batch (kv_layout.h, what cta_decompose runs): fused's
 * list covers every key of every stream once; bifurcated's dense grids (context splits
 * over the longest context part, decode splits over the most decode keys) cover each
 * stream's keys once between the two parts, the splits past a short request's end empty. */
static void test_grid_ranges_cover_each_stream_once(void **state)
{
    (void)state;
    char spec[128];
    snprintf(spec, sizeof spec, "file:%s", write_lengths("1\n15\n16\n17\n40\n31\n333\n2\n"));
    ctx_dist_t d = parsed(spec);
    unlink(tmp_path);
    const int chunks[] = {64, 128, 1024};
    for (int paged = 0; paged < 2; ++paged)
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; ++c) {
            problem_t p = test_paged_problem(d.n, 3, 4, 2, 16, 1, 9, 16);
            if (!paged) p.cache = CACHE_CONTIGUOUS;
            problem_set_ctx_dist(&p, &d);
            int32_t *lens;
            assert_int_equal(problem_ctx_lens(&p, &lens), 0);
            const int chunk = chunks[c];
            kv_geometry_t fg = kv_geometry_make(&p, paged ? LAYOUT_PAGED : LAYOUT_CONTIGUOUS);
            kv_geometry_t bg = kv_geometry_make(&p, paged ? LAYOUT_PAGED : LAYOUT_BIFURCATED);
            fg.ctx_lens = bg.ctx_lens = lens;
            const int ctx_part = paged ? p.ctx / 16 * 16 : p.ctx;
            const int ctx_splits = (ctx_part + chunk - 1) / chunk;
            const int dec_splits = (bifurcated_decode_keys(&p) + chunk - 1) / chunk;
            for (int s = 0; s < problem_streams(&p); ++s) {
                const int keys = kv_keys_of(&fg, s);
                assert_int_equal(keys, lens[s / p.beam] + p.gen);
                char fused_seen[400] = {0}, bif_seen[400] = {0};
                int lo, hi;
                for (long k = 0; k < ragged_chunks(keys, chunk); ++k) {
                    kv_ragged_stream_range(&fg, s, (int)k, chunk, &lo, &hi);
                    assert_true(lo < hi);
                    cover(fused_seen, keys, lo, hi);
                }
                for (int k = 0; k < ctx_splits; ++k) {
                    kv_ragged_ctx_range(&bg, s / p.beam, k, chunk, &lo, &hi);
                    cover(bif_seen, keys, lo, hi);
                }
                for (int k = 0; k < dec_splits; ++k) {
                    kv_ragged_dec_range(&bg, s, k, chunk, &lo, &hi);
                    cover(bif_seen, keys, lo, hi);
                }
                for (int k = 0; k < keys; ++k) assert_true(fused_seen[k] && bif_seen[k]);
            }
            free(lens);
        }
    ctx_dist_free(&d);
}

/* Bytes count each request's stored tokens, not the padding to the longest. */
static void test_io_counts_stored_tokens(void **state)
{
    (void)state;
    char spec[128];
    snprintf(spec, sizeof spec, "file:%s", write_lengths("100\n1000\n37\n"));
    ctx_dist_t d = parsed(spec);
    unlink(tmp_path);
    problem_t p = test_problem(3, 2, 8, 2, 64, 1, 5);
    problem_set_ctx_dist(&p, &d);
    const double row = 2.0 * 2 * 64 * 2; /* K and V, 2 kv heads, d 64, fp16 */
    assert_true(io_kv_bytes_unique(&p) == (1137.0 + 6 * 5) * row);
    assert_true(io_kv_bytes_replicated(&p) == 2 * (1137.0 + 3 * 5) * row);
    assert_true(io_flops(&p) == 4.0 * 2 * (1137.0 + 3 * 5) * 8 * 64);
    p.cache = CACHE_PAGED;
    p.block_size = 16;
    /* full context blocks once a request (96 + 992 + 32), the rest per stream */
    const double shared = 96 + 992 + 32;
    assert_true(io_kv_bytes_stored(&p) == (shared + 2 * (1137.0 + 15 - shared)) * row);
    ctx_dist_free(&d);
}

/* ---- layouts and the reference ---- */

typedef struct ragged_built {
    ref_source_t src;
    float *kv, *kv_ctx, *kv_dec;
    paged_map_t map;
} ragged_built_t;

static void build(ragged_built_t *b, const problem_t *p, kv_layout_t layout, const int32_t *lens, uint64_t seed,
                  const int32_t *hist, int materialise)
{
    memset(b, 0, sizeof *b);
    b->src.p = p;
    b->src.geom = kv_geometry_make(p, layout);
    b->src.geom.ctx_lens = lens;
    b->src.seed = seed;
    b->src.indirection = hist;
    if (!materialise) return;
    if (layout == LAYOUT_PAGED) {
        assert_int_equal(paged_map_build(p, seed + 1, &b->map), 0);
        b->src.block_table = b->map.table;
    }
    b->kv = layout_materialize(&b->src.geom, p, seed, layout == LAYOUT_PAGED ? &b->map : NULL, 0);
    if (layout == LAYOUT_BIFURCATED) {
        b->kv_ctx = b->kv;
        b->kv = NULL;
        b->kv_dec = layout_materialize(&b->src.geom, p, seed, NULL, 1);
    }
    b->src.kv = b->kv;
    b->src.kv_ctx = b->kv_ctx;
    b->src.kv_dec = b->kv_dec;
}

static void unbuild(ragged_built_t *b)
{
    free(b->kv);
    free(b->kv_ctx);
    free(b->kv_dec);
    paged_map_free(&b->map);
}

static double max_diff(const ref_source_t *a, const ref_source_t *b)
{
    const problem_t *p = a->p;
    double ra[REF_MAX_HEAD_DIM], rb[REF_MAX_HEAD_DIM], worst = 0.0;
    for (int s = 0; s < problem_streams(p); ++s)
        for (int h = 0; h < p->heads; ++h) {
            reference_row(a, s, h, ra);
            reference_row(b, s, h, rb);
            for (int x = 0; x < p->head_dim; ++x) {
                assert_true(isfinite(ra[x]) && isfinite(rb[x]));
                worst = fmax(worst, fabs(ra[x] - rb[x]));
            }
        }
    return worst;
}

/* Each request reads its own keys in every layout: the padding of the contiguous and
 * bifurcated buffers and the unused slots of the pool hold NaN, so a reference (or a
 * kernel) reading one key past a request's length could not stay finite; the paged pool
 * holds each request's own blocks; all of them, and the bifurcated formulation, agree. */
static void test_layouts_follow_each_length(void **state)
{
    (void)state;
    const char *texts[] = {"1\n37\n16\n", "70\n1\n", "5\n33\n64\n2\n"};
    const int shapes[][5] = {/* beam, heads, kv_heads, gen, indirection */
                             {3, 4, 2, 9, 1}, {2, 2, 2, 20, 0}, {1, 6, 3, 3, 0}};
    for (size_t c = 0; c < 3; ++c) {
        char spec[128];
        snprintf(spec, sizeof spec, "file:%s", write_lengths(texts[c]));
        ctx_dist_t d = parsed(spec);
        unlink(tmp_path);
        problem_t p = test_paged_problem(d.n, shapes[c][0], shapes[c][1], shapes[c][2], 16, 1, shapes[c][3], 16);
        problem_set_ctx_dist(&p, &d);
        char msg[256];
        assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
        int32_t *lens;
        assert_int_equal(problem_ctx_lens(&p, &lens), 0);
        assert_non_null(lens);
        int64_t blocks = 0;
        for (int b = 0; b < p.batch; ++b)
            blocks += lens[b] / 16 + p.beam * (kv_blocks_for(lens[b] + p.gen, 16) - lens[b] / 16);
        assert_true(paged_block_count(&p) == blocks);
        const uint64_t seed = 77 + c;
        int32_t *hist = shapes[c][4] ? beam_history_build(&p, seed) : NULL;
        ragged_built_t logical, cont, paged, bif;
        build(&logical, &p, LAYOUT_CONTIGUOUS, lens, seed, hist, 0);
        build(&cont, &p, LAYOUT_CONTIGUOUS, lens, seed, hist, 1);
        build(&paged, &p, LAYOUT_PAGED, lens, seed, hist, 1);
        build(&bif, &p, LAYOUT_BIFURCATED, lens, seed, hist, 1);
        /* the padding is NaN: past a stream's keys in the contiguous cache */
        const kv_geometry_t *g = &cont.src.geom;
        for (int s = 0; s < problem_streams(&p); ++s) {
            const int keys = lens[s / p.beam] + p.gen;
            if (keys < p.ctx + p.gen) assert_true(isnan(cont.kv[kv_contiguous_offset(g, s, 1, 0, keys)]));
            assert_false(isnan(cont.kv[kv_contiguous_offset(g, s, 1, 0, keys - 1)]));
        }
        assert_true(max_diff(&logical.src, &cont.src) == 0.0);
        assert_true(max_diff(&logical.src, &paged.src) == 0.0);
        assert_true(max_diff(&logical.src, &bif.src) == 0.0);
        double ra[REF_MAX_HEAD_DIM], rb[REF_MAX_HEAD_DIM];
        for (int s = 0; s < problem_streams(&p); ++s) {
            reference_row(&logical.src, s, 1, ra);
            reference_row_bifurcated(&bif.src, s, 1, rb);
            for (int x = 0; x < p.head_dim; ++x) assert_true(fabs(ra[x] - rb[x]) < 1e-12);
        }
        /* the context of one request and kv head materialised as verification does: its
         * own rows only (the rest stays NaN), and the same answers */
        float *ctx_kv = malloc((size_t)2 * p.ctx * p.head_dim * sizeof *ctx_kv);
        assert_non_null(ctx_kv);
        for (long i = 0; i < 2L * p.ctx * p.head_dim; ++i) ctx_kv[i] = NAN;
        for (int b = 0; b < p.batch; ++b) {
            ref_source_t group = logical.src;
            group.ctx_request = b;
            group.ctx_head = 1;
            reference_ctx_fill(&group, b, 1, ctx_kv);
            group.ctx_kv = ctx_kv;
            const int group_heads = p.heads / p.kv_heads;
            for (int w = 0; w < p.beam; ++w)
                for (int h = group_heads; h < 2 * group_heads; ++h) {
                    reference_row(&logical.src, b * p.beam + w, h, ra);
                    reference_row(&group, b * p.beam + w, h, rb);
                    for (int x = 0; x < p.head_dim; ++x) assert_true(ra[x] == rb[x]);
                }
        }
        free(ctx_kv);
        /* a ragged source without its lengths is incomplete, not silently the longest */
        logical.src.geom.ctx_lens = NULL;
        reference_row(&logical.src, 0, 0, ra);
        assert_true(isnan(ra[0]));
        unbuild(&logical);
        unbuild(&cont);
        unbuild(&paged);
        unbuild(&bif);
        free(hist);
        free(lens);
        ctx_dist_free(&d);
    }
}

/* A request shorter than the longest reads fewer keys: its output differs from the same
 * request's at the longest length (the lengths are not ignored). */
static void test_length_changes_the_output(void **state)
{
    (void)state;
    char spec[128];
    snprintf(spec, sizeof spec, "file:%s", write_lengths("40\n80\n"));
    ctx_dist_t d = parsed(spec);
    unlink(tmp_path);
    problem_t p = test_problem(2, 1, 2, 2, 16, 1, 4);
    problem_set_ctx_dist(&p, &d);
    int32_t lens[2] = {40, 80}, longest[2] = {80, 80};
    ragged_built_t a, b;
    build(&a, &p, LAYOUT_CONTIGUOUS, lens, 5, NULL, 0);
    build(&b, &p, LAYOUT_CONTIGUOUS, longest, 5, NULL, 0);
    double ra[REF_MAX_HEAD_DIM], rb[REF_MAX_HEAD_DIM];
    reference_row(&a.src, 0, 0, ra);
    reference_row(&b.src, 0, 0, rb);
    assert_true(fabs(ra[0] - rb[0]) > 1e-6);
    reference_row(&a.src, 1, 0, ra); /* the longest request: the same either way */
    reference_row(&b.src, 1, 0, rb);
    assert_true(ra[0] == rb[0]);
    ctx_dist_free(&d);
}

/* Verification's strata take the longest and the shortest request. */
static void test_verify_picks_longest_and_shortest(void **state)
{
    (void)state;
    char text[64 * 8] = "";
    for (int r = 0; r < 64; ++r) strcat(text, r == 37 ? "65536\n" : r == 20 ? "1\n" : "1024\n");
    char spec[128];
    snprintf(spec, sizeof spec, "file:%s", write_lengths(text));
    ctx_dist_t d = parsed(spec);
    unlink(tmp_path);
    problem_t p = test_problem(64, 2, 32, 8, 128, 1, 128);
    problem_set_ctx_dist(&p, &d);
    long at[64];
    assert_int_equal(verify_pick_rows(&p, 64, 9, at), 64);
    int longest = 0, shortest = 0;
    for (int i = 0; i < 64; ++i) {
        longest += at[i] / p.heads / p.beam == 37;
        shortest += at[i] / p.heads / p.beam == 20;
    }
    assert_true(longest >= 4 && shortest >= 4);
    ctx_dist_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_specs),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_uniform_lengths),
        cmocka_unit_test(test_planner_balance),
        cmocka_unit_test(test_longest_first_beats_batch_order),
        cmocka_unit_test(test_work_list_covers_every_key),
        cmocka_unit_test(test_fused_plans_ragged_batches),
        cmocka_unit_test(test_bifurcated_plans_ragged_batches),
        cmocka_unit_test(test_grid_ranges_cover_each_stream_once),
        cmocka_unit_test(test_io_counts_stored_tokens),
        cmocka_unit_test(test_layouts_follow_each_length),
        cmocka_unit_test(test_length_changes_the_output),
        cmocka_unit_test(test_verify_picks_longest_and_shortest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
