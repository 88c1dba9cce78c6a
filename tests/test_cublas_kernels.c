/* The cuBLAS kernels' index arithmetic, checked on the CPU: the pipeline description
 * and pointer table that setup() hands to cuBLAS are run through a column-major
 * batched-GEMM emulator (cuBLAS's semantics) and a softmax, on host buffers filled
 * with the logical data, and the result is compared with attention computed
 * directly from the logical data. Also: the kernels' support rules, plan, memory
 * and byte models, and the alignment of every matrix they hand to cuBLAS. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/registry.h"
#include "../kernels/cublas_common.cuh"
#include "../problem/kv_fill.h"
#include "test_problem.h"

extern const attn_kernel_t kernel_cublas;
extern const attn_kernel_t kernel_cublas_bifurcated;

#define SEED 1234u

static problem_t small_problem(int batch, int beam, int heads, int kv_heads, int d, int ctx, int gen)
{
    problem_t p = test_problem(batch, beam, heads, kv_heads, d, ctx, gen);
    p.dtype = DTYPE_FP32;
    return p;
}

static kv_geometry_t geometry(const problem_t *p, kv_layout_t layout)
{
    kv_geometry_t g = {0};
    g.layout = layout;
    g.beam = p->beam;
    g.kv_heads = p->kv_heads;
    g.head_dim = p->head_dim;
    g.ctx = p->ctx;
    g.gen = p->gen;
    return g;
}

static float *nan_buffer(size_t n)
{
    float *b = malloc(n * sizeof *b);
    assert_non_null(b);
    for (size_t i = 0; i < n; ++i) b[i] = quiet_nan();
    return b;
}

/* cuBLAS's batched GEMM on fp32 host data: C = alpha op(A) B + beta C, column-major;
 * C is not read when beta is 0 (as cuBLAS does), so poisoned C stays harmless. */
static void emulate_gemm(const gemm_batch_t *gb, const void **table)
{
    for (int e = 0; e < gb->batch; ++e) {
        const float *A = table[gb->table + e];
        const float *B = table[gb->table + gb->batch + e];
        float *C = (float *)table[gb->table + 2 * (size_t)gb->batch + e];
        for (int col = 0; col < gb->n; ++col)
            for (int r = 0; r < gb->m; ++r) {
                double acc = 0.0;
                for (int l = 0; l < gb->k; ++l) {
                    double a = gb->transa ? A[l + (int64_t)r * gb->lda] : A[r + (int64_t)l * gb->lda];
                    acc += a * B[l + (int64_t)col * gb->ldb];
                }
                double v = gb->alpha * acc;
                if (gb->beta != 0.0f) v += gb->beta * C[r + (int64_t)col * gb->ldc];
                C[r + (int64_t)col * gb->ldc] = (float)v;
            }
    }
}

/* The softmax kernel's contract: rows of two segments, probabilities at the same places. */
static void emulate_softmax(const softmax_rows_t *s, const float *logits, float *probs)
{
    for (int64_t r = 0; r < s->rows; ++r) {
        const float *row = logits + r * s->ld;
        float *out = probs + r * s->ld;
        double m = -INFINITY, l = 0.0;
        for (int k = 0; k < s->n0; ++k) m = fmax(m, row[k]);
        for (int k = 0; k < s->n1; ++k) m = fmax(m, row[s->off1 + k]);
        for (int k = 0; k < s->n0; ++k) l += exp(row[k] - m);
        for (int k = 0; k < s->n1; ++k) l += exp(row[s->off1 + k] - m);
        for (int k = 0; k < s->n0; ++k) out[k] = (float)(exp(row[k] - m) / l);
        for (int k = 0; k < s->n1; ++k) out[s->off1 + k] = (float)(exp(row[s->off1 + k] - m) / l);
    }
}

static void run_pipeline(const cublas_pipeline_t *pl, const cublas_buffers_t *b, const void **table)
{
    for (int i = 0; i < pl->gemms_before_softmax; ++i) emulate_gemm(&pl->gemm[i], table);
    emulate_softmax(&pl->softmax, b->logits, b->probs);
    for (int i = pl->gemms_before_softmax; i < pl->gemms; ++i) emulate_gemm(&pl->gemm[i], table);
}

static float *logical_q_buffer(const problem_t *p)
{
    size_t n = (size_t)problem_streams(p) * p->heads * p->head_dim;
    float *q = malloc(n * sizeof *q);
    assert_non_null(q);
    for (int s = 0; s < problem_streams(p); ++s)
        for (int h = 0; h < p->heads; ++h)
            for (int x = 0; x < p->head_dim; ++x)
                q[((size_t)s * p->heads + h) * p->head_dim + x] = logical_q(SEED, p->heads, p->head_dim, s, h, x);
    return q;
}

/* Attention straight from the logical data, in double; relative L2 error of out. */
static double relative_error_vs_logical(const problem_t *p, const kv_geometry_t *geo, const float *out)
{
    const int L = problem_keys(p), d = p->head_dim, group = problem_group(p);
    double *w = malloc((size_t)L * sizeof *w);
    double err2 = 0.0, ref2 = 0.0;
    for (int s = 0; s < problem_streams(p); ++s)
        for (int h = 0; h < p->heads; ++h) {
            const int j = h / group;
            double m = -INFINITY, l = 0.0;
            for (int t = 0; t < L; ++t) {
                double dot = 0.0;
                for (int x = 0; x < d; ++x)
                    dot += (double)logical_q(SEED, p->heads, d, s, h, x) * kv_logical(geo, SEED, s, 0, j, t, x);
                w[t] = dot * problem_scale(p);
                m = fmax(m, w[t]);
            }
            for (int t = 0; t < L; ++t) l += (w[t] = exp(w[t] - m));
            for (int x = 0; x < d; ++x) {
                double o = 0.0;
                for (int t = 0; t < L; ++t) o += w[t] / l * kv_logical(geo, SEED, s, 1, j, t, x);
                double got = out[((size_t)s * p->heads + h) * d + x];
                if (isnan(got)) { free(w); return INFINITY; }
                err2 += (got - o) * (got - o);
                ref2 += o * o;
            }
        }
    free(w);
    return sqrt(err2 / ref2);
}

static double plain_error(const problem_t *p)
{
    kv_geometry_t geo = geometry(p, LAYOUT_CONTIGUOUS);
    cublas_pipeline_t pl;
    cublas_plain_pipeline(p, &geo, NULL, &pl, NULL);
    size_t kv_n = (size_t)problem_streams(p) * 2 * p->kv_heads * problem_keys(p) * p->head_dim;
    float *kv = malloc(kv_n * sizeof *kv);
    for (size_t e = 0; e < kv_n; ++e) kv[e] = kv_contiguous_value(&geo, SEED, (int64_t)e);
    cublas_buffers_t b = {0};
    b.q = logical_q_buffer(p);
    b.kv = kv;
    b.out = nan_buffer((size_t)problem_streams(p) * p->heads * p->head_dim);
    b.logits = nan_buffer(pl.logits_bytes / sizeof(float));
    b.probs = nan_buffer(pl.probs_bytes / sizeof(float));
    const void **table = malloc(pl.table_entries * sizeof *table);
    cublas_plain_pipeline(p, &geo, &b, &pl, table);
    run_pipeline(&pl, &b, table);
    double err = relative_error_vs_logical(p, &geo, b.out);
    free(table); free((void *)b.q); free(kv); free(b.out); free(b.logits); free(b.probs);
    return err;
}

static double bifurcated_error(const problem_t *p)
{
    kv_geometry_t geo = geometry(p, LAYOUT_BIFURCATED);
    cublas_pipeline_t pl;
    cublas_bifurcated_pipeline(p, &geo, NULL, &pl, NULL);
    const int d = p->head_dim, g = p->kv_heads;
    size_t ctx_n = (size_t)p->batch * 2 * g * p->ctx * d, dec_n = (size_t)problem_streams(p) * 2 * g * p->gen * d;
    float *kv_ctx = malloc(ctx_n * sizeof *kv_ctx), *kv_dec = malloc(dec_n * sizeof *kv_dec);
    for (size_t e = 0; e < ctx_n; ++e) kv_ctx[e] = kv_ctx_value(&geo, SEED, (int64_t)e);
    for (size_t e = 0; e < dec_n; ++e) kv_dec[e] = kv_dec_value(&geo, SEED, (int64_t)e);
    const size_t qo_n = (size_t)problem_streams(p) * p->heads * d;
    float *q = logical_q_buffer(p), *out = nan_buffer(qo_n);
    cublas_buffers_t b = {0};
    b.q = q;
    b.kv_ctx = kv_ctx;
    b.kv_dec = kv_dec;
    b.out = out;
    b.logits = nan_buffer(pl.logits_bytes / sizeof(float));
    b.probs = nan_buffer(pl.probs_bytes / sizeof(float));
    b.q_staged = nan_buffer(pl.q_staged_bytes / sizeof(float));
    b.acc = nan_buffer(pl.acc_bytes / sizeof(float));
    const void **table = malloc(pl.table_entries * sizeof *table);
    cublas_bifurcated_pipeline(p, &geo, &b, &pl, table);

    /* What stage_q_kernel and finish_out_kernel do, through the same row map. */
    float *staged = b.q_staged;
    for (int s = 0; s < problem_streams(p); ++s)
        for (int h = 0; h < p->heads; ++h)
            memcpy(staged + cublas_bif_staged_row(s, h, p->beam, g, problem_group(p)) * d,
                   q + ((size_t)s * p->heads + h) * d, d * sizeof(float));
    run_pipeline(&pl, &b, table);
    for (int s = 0; s < problem_streams(p); ++s)
        for (int h = 0; h < p->heads; ++h)
            memcpy(out + ((size_t)s * p->heads + h) * d,
                   b.acc + cublas_bif_staged_row(s, h, p->beam, g, problem_group(p)) * d, d * sizeof(float));

    double err = relative_error_vs_logical(p, &geo, out);
    free(table); free(q); free(out); free(kv_ctx); free(kv_dec);
    free(b.logits); free(b.probs); free(b.q_staged); free(b.acc);
    return err;
}

static const problem_t *shapes(size_t *n)
{
    static problem_t list[6];
    list[0] = small_problem(2, 3, 6, 2, 16, 5, 4);   /* GQA p = 3, L = 9: padded rows */
    list[1] = small_problem(1, 1, 4, 4, 8, 1, 1);    /* MHA, context of one key */
    list[2] = small_problem(2, 4, 4, 1, 24, 13, 3);  /* MQA, W*p = 16 rows per context GEMM */
    list[3] = small_problem(3, 2, 8, 2, 8, 8, 8);    /* segment lengths already aligned */
    list[4] = small_problem(1, 5, 2, 1, 16, 7, 9);   /* decoded part longer than context */
    list[5] = small_problem(2, 1, 6, 3, 32, 17, 2);  /* W = 1 */
    *n = sizeof list / sizeof list[0];
    return list;
}

static void test_plain_pipeline_matches_attention(void **state)
{
    (void)state;
    size_t n;
    const problem_t *list = shapes(&n);
    for (size_t i = 0; i < n; ++i) {
        double err = plain_error(&list[i]);
        if (!(err <= 1e-6)) fail_msg("cublas shape %zu: relative error %g", i, err);
    }
}

static void test_bifurcated_pipeline_matches_attention(void **state)
{
    (void)state;
    size_t n;
    const problem_t *list = shapes(&n);
    for (size_t i = 0; i < n; ++i) {
        double err = bifurcated_error(&list[i]);
        if (!(err <= 1e-6)) fail_msg("cublas-bifurcated shape %zu: relative error %g", i, err);
    }
}

/* A wrong key order or head mapping must show: swap two kv heads' K in the table. */
static void test_emulation_detects_a_wrong_table(void **state)
{
    (void)state;
    problem_t p = small_problem(1, 2, 4, 2, 8, 6, 2);
    kv_geometry_t geo = geometry(&p, LAYOUT_CONTIGUOUS);
    cublas_pipeline_t pl;
    cublas_plain_pipeline(&p, &geo, NULL, &pl, NULL);
    size_t kv_n = (size_t)problem_streams(&p) * 2 * p.kv_heads * problem_keys(&p) * p.head_dim;
    float *kv = malloc(kv_n * sizeof *kv);
    for (size_t e = 0; e < kv_n; ++e) kv[e] = kv_contiguous_value(&geo, SEED, (int64_t)e);
    cublas_buffers_t b = {0};
    b.q = logical_q_buffer(&p);
    b.kv = kv;
    b.out = nan_buffer((size_t)problem_streams(&p) * p.heads * p.head_dim);
    b.logits = nan_buffer(pl.logits_bytes / sizeof(float));
    b.probs = nan_buffer(pl.probs_bytes / sizeof(float));
    const void **table = malloc(pl.table_entries * sizeof *table);
    cublas_plain_pipeline(&p, &geo, &b, &pl, table);
    const void *k0 = table[0];
    table[0] = table[1];
    table[1] = k0;
    run_pipeline(&pl, &b, table);
    assert_true(relative_error_vs_logical(&p, &geo, b.out) > 1e-2);
    free(table); free((void *)b.q); free(kv); free(b.out); free(b.logits); free(b.probs);
}

/* Every matrix handed to cuBLAS starts 16-byte aligned (bases are), in every dtype,
 * and dtype buffers scale with the element size while fp32 buffers do not. */
static void check_tables(int bifurcated)
{
    static const dtype_t types[] = {DTYPE_FP16, DTYPE_BF16, DTYPE_FP32};
    problem_t p = small_problem(2, 3, 6, 2, 72, 13, 5);
    for (size_t t = 0; t < 3; ++t) {
        p.dtype = types[t];
        kv_geometry_t geo = geometry(&p, bifurcated ? LAYOUT_BIFURCATED : LAYOUT_CONTIGUOUS);
        cublas_buffers_t b;
        b.q = (const void *)(uintptr_t)0x10000000u;
        b.kv = b.kv_ctx = (const void *)(uintptr_t)0x20000000u;
        b.kv_dec = (const void *)(uintptr_t)0x30000000u;
        b.out = (void *)(uintptr_t)0x40000000u;
        b.logits = (float *)(uintptr_t)0x50000000u;
        b.probs = (void *)(uintptr_t)0x60000000u;
        b.q_staged = (void *)(uintptr_t)0x70000000u;
        b.acc = (float *)(uintptr_t)0x80000000u;
        cublas_pipeline_t pl;
        const void **table = NULL;
        if (bifurcated) cublas_bifurcated_pipeline(&p, &geo, NULL, &pl, NULL);
        else cublas_plain_pipeline(&p, &geo, NULL, &pl, NULL);
        table = malloc(pl.table_entries * sizeof *table);
        if (bifurcated) cublas_bifurcated_pipeline(&p, &geo, &b, &pl, table);
        else cublas_plain_pipeline(&p, &geo, &b, &pl, table);
        for (size_t e = 0; e < pl.table_entries; ++e)
            if ((uintptr_t)table[e] % 16 != 0) fail_msg("entry %zu is not 16-byte aligned", e);
        assert_int_equal(pl.softmax.ld % CUBLAS_ROW_ALIGN, 0);
        assert_int_equal(pl.softmax.off1 % CUBLAS_ROW_ALIGN, 0);
        for (int i = 0; i < pl.gemms; ++i) assert_int_equal(pl.gemm[i].c_fp32, bifurcated || i == 0);
        free(table);
    }
}

static void test_tables_are_aligned(void **state)
{
    (void)state;
    check_tables(0);
    check_tables(1);
}

/* The address arithmetic at the suites' largest shapes, without allocating anything:
 * buffers get fake base addresses 2^44 bytes apart, the pipeline fills its pointer
 * table for them, and every matrix handed to cuBLAS must lie inside the buffer it
 * belongs to (column-major extent: (cols - 1) * ld + rows elements) with valid leading
 * dimensions, and every softmax row inside the logits and P buffers. An int overflow
 * or a wrong stride in the table shows as a matrix outside its buffer. */
enum { BUF_Q, BUF_KV, BUF_KV_CTX, BUF_KV_DEC, BUF_OUT, BUF_LOGITS, BUF_PROBS, BUF_QS, BUF_ACC, BUF_COUNT };
#define FAKE_BUFFER_SPACING ((uintptr_t)1 << 44)

/* The buffers of A, B and C of each GEMM, in pipeline order. */
static const int plain_operands[][3] = {{BUF_KV, BUF_Q, BUF_LOGITS}, {BUF_KV, BUF_PROBS, BUF_OUT}};
static const int bif_operands[][3] = {{BUF_KV_CTX, BUF_QS, BUF_LOGITS},
                                      {BUF_KV_DEC, BUF_QS, BUF_LOGITS},
                                      {BUF_KV_CTX, BUF_PROBS, BUF_ACC},
                                      {BUF_KV_DEC, BUF_PROBS, BUF_ACC}};

static void check_extent(const char *what, int gemm, int64_t e, const void *ptr, int buf,
                         const uint64_t *sizes, int64_t rows, int64_t cols, int64_t ld, size_t es)
{
    const uintptr_t base = (uintptr_t)(buf + 1) * FAKE_BUFFER_SPACING, at = (uintptr_t)ptr;
    if (ld < rows) fail_msg("gemm %d %s: leading dimension %lld < %lld rows", gemm, what, (long long)ld, (long long)rows);
    const uint64_t end = (uint64_t)((cols - 1) * ld + rows) * es;
    if (at < base || (at - base) % es != 0 || at - base + end > sizes[buf])
        fail_msg("gemm %d entry %lld: %s [%llu, +%llu) outside its buffer of %llu bytes", gemm, (long long)e,
                 what, (unsigned long long)(at - base), (unsigned long long)end, (unsigned long long)sizes[buf]);
}

static void check_address_arithmetic(const problem_t *p, int bifurcated)
{
    const kv_geometry_t geo = geometry(p, bifurcated ? LAYOUT_BIFURCATED : LAYOUT_CONTIGUOUS);
    const size_t es = dtype_size(p->dtype);
    const uint64_t streams = (uint64_t)problem_streams(p), kv_row = 2ull * p->kv_heads * p->head_dim;
    const int64_t rows = (int64_t)streams * p->heads;
    cublas_pipeline_t pl;
    if (bifurcated) cublas_bifurcated_pipeline(p, &geo, NULL, &pl, NULL);
    else cublas_plain_pipeline(p, &geo, NULL, &pl, NULL);

    uint64_t sizes[BUF_COUNT] = {0};
    sizes[BUF_Q] = sizes[BUF_OUT] = (uint64_t)rows * p->head_dim * es;
    sizes[BUF_KV] = streams * (uint64_t)problem_keys(p) * kv_row * es;
    sizes[BUF_KV_CTX] = (uint64_t)p->batch * p->ctx * kv_row * es;
    sizes[BUF_KV_DEC] = streams * (uint64_t)p->gen * kv_row * es;
    sizes[BUF_LOGITS] = pl.logits_bytes;
    sizes[BUF_PROBS] = pl.probs_bytes;
    sizes[BUF_QS] = pl.q_staged_bytes;
    sizes[BUF_ACC] = pl.acc_bytes;
    for (int i = 0; i < BUF_COUNT; ++i) assert_true(sizes[i] < FAKE_BUFFER_SPACING);
#define FAKE(buf) ((void *)((uintptr_t)((buf) + 1) * FAKE_BUFFER_SPACING))
    cublas_buffers_t b = {FAKE(BUF_Q), FAKE(BUF_KV), FAKE(BUF_KV_CTX), FAKE(BUF_KV_DEC), FAKE(BUF_OUT),
                          FAKE(BUF_LOGITS), FAKE(BUF_PROBS), FAKE(BUF_QS), FAKE(BUF_ACC)};
#undef FAKE
    const void **table = calloc(pl.table_entries, sizeof *table);
    assert_non_null(table);
    if (bifurcated) cublas_bifurcated_pipeline(p, &geo, &b, &pl, table);
    else cublas_plain_pipeline(p, &geo, &b, &pl, table);

    /* The softmax rows: both segments inside a row of ld, all rows inside the buffers,
     * and a grid of one CTA (or an eighth of one) per row. */
    const softmax_rows_t *s = &pl.softmax;
    assert_int_equal(s->rows, rows);
    assert_true(s->n0 >= 1 && s->n0 + s->n1 == problem_keys(p));
    assert_true(s->n1 == 0 || (s->off1 >= s->n0 && s->off1 + s->n1 <= s->ld));
    assert_true(s->n0 <= s->ld);
    assert_true((uint64_t)rows * s->ld * sizeof(float) <= pl.logits_bytes);
    assert_true((uint64_t)rows * s->ld * es <= pl.probs_bytes);
    assert_true(rows <= 0x7fffffff);

    const int (*operands)[3] = bifurcated ? bif_operands : plain_operands;
    assert_int_equal(pl.gemms, bifurcated ? 4 : 2);
    for (int i = 0; i < pl.gemms; ++i) {
        const gemm_batch_t *gb = &pl.gemm[i];
        assert_true(gb->m >= 1 && gb->n >= 1 && gb->k >= 1 && gb->batch >= 1);
        assert_true(gb->table + 3 * (size_t)gb->batch <= pl.table_entries);
        /* an ld that is the padded row length must be it exactly, not truncated */
        if (operands[i][2] == BUF_LOGITS) assert_int_equal(gb->ldc, s->ld);
        if (operands[i][1] == BUF_PROBS) assert_int_equal(gb->ldb, s->ld);
        const size_t c_es = gb->c_fp32 ? sizeof(float) : es;
        for (int64_t e = 0; e < gb->batch; ++e) {
            const void *A = table[gb->table + e], *B = table[gb->table + gb->batch + e];
            const void *C = table[gb->table + 2 * (size_t)gb->batch + e];
            check_extent("A", i, e, A, operands[i][0], sizes, gb->transa ? gb->k : gb->m,
                         gb->transa ? gb->m : gb->k, gb->lda, es);
            check_extent("B", i, e, B, operands[i][1], sizes, gb->k, gb->n, gb->ldb, es);
            check_extent("C", i, e, C, operands[i][2], sizes, gb->m, gb->n, gb->ldc, c_es);
        }
    }
    if (bifurcated) { /* the staging map covers exactly the rows */
        assert_int_equal(cublas_bif_staged_row(0, 0, p->beam, p->kv_heads, problem_group(p)), 0);
        assert_int_equal(cublas_bif_staged_row(problem_streams(p) - 1, p->heads - 1, p->beam, p->kv_heads,
                                               problem_group(p)), rows - 1);
    }
    free(table);
}

static void test_address_arithmetic_at_large_shapes(void **state)
{
    (void)state;
    /* B, W, h, g, ctx, gen: the verify-full shape that crashed on an H100 (and its W16
     * twin), then the largest shapes of the suites and beyond: W up to 2048, contexts up
     * to 128k, h up to 64, g from 1 to 64, more batch entries than one cuBLAS call takes. */
    static const int shapes[][6] = {
        {1, 64, 32, 32, 32767, 129}, {1, 16, 32, 32, 32767, 129}, {1, 64, 32, 1, 32767, 129},
        {1, 1024, 32, 8, 1000, 2},   {2, 4, 32, 8, 131071, 33},    {1, 1024, 32, 1, 32768, 128},
        {1, 2048, 32, 32, 32768, 128}, {2, 1024, 64, 64, 131072, 129}, {2, 1024, 64, 1, 131072, 129},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        problem_t p = small_problem(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], 128,
                                    shapes[i][4], shapes[i][5]);
        p.dtype = DTYPE_FP16;
        check_address_arithmetic(&p, 0);
        check_address_arithmetic(&p, 1);
    }
}

static void test_support_rules(void **state)
{
    (void)state;
    const attn_kernel_t *ks[] = {&kernel_cublas, &kernel_cublas_bifurcated};
    for (int i = 0; i < 2; ++i) {
        const attn_kernel_t *k = ks[i];
        problem_t p = problem_default();
        assert_null(k->unsupported(&p));
        p.dtype = DTYPE_BF16;
        p.head_dim = 256;
        p.heads = 12;
        p.kv_heads = 4;
        assert_null(k->unsupported(&p));

        problem_t paged = problem_default();
        paged.cache = CACHE_PAGED;
        problem_t ind = problem_default();
        ind.indirection = true;
        problem_t split = problem_default();
        split.splits = 4;
        const problem_t *bad[] = {&paged, &ind, &split};
        for (int j = 0; j < 3; ++j) {
            const char *why = k->unsupported(bad[j]);
            assert_non_null(why);
            assert_true(strlen(why) > 10);
            assert_null(strchr(why, '\n'));
        }
        assert_int_equal(k->layout(&p), i == 0 ? LAYOUT_CONTIGUOUS : LAYOUT_BIFURCATED);
    }
}

static void test_plan_and_workspace(void **state)
{
    (void)state;
    const attn_kernel_t *ks[] = {&kernel_cublas, &kernel_cublas_bifurcated};
    for (int i = 0; i < 2; ++i) {
        problem_t p = problem_default();
        p.ctx = 1000;
        p.gen = 37;
        device_info_t dev = {0};
        dev.sm_count = 132;
        attn_plan_t plan;
        memset(&plan, 0, sizeof plan);
        ks[i]->plan(&p, &dev, &plan);
        assert_ptr_equal(plan.runs, ks[i]);
        assert_int_equal(plan.split.splits, 1);
        assert_int_equal(plan.split.chunk, 1037);
        assert_int_equal(ks[i]->workspace_bytes(&p, &plan), 0);
    }
}

/* private_bytes covers the logits, P, staging and tables setup() allocates, plus
 * cuBLAS's workspace; it grows with the keys. */
static void test_private_bytes(void **state)
{
    (void)state;
    problem_t p = problem_default();
    p.batch = 2;
    p.beam = 4;
    p.ctx = 4000;
    p.gen = 100;
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    const double rows = 2.0 * 4 * 32, keys = 4100;
    size_t plain = kernel_cublas.private_bytes(&p, &plan);
    assert_true((double)plain >= rows * keys * (4 + 2) + 6.0 * 2 * 4 * 32 * 8 + CUBLAS_WORKSPACE_BYTES);
    size_t bif = kernel_cublas_bifurcated.private_bytes(&p, &plan);
    assert_true((double)bif >= rows * keys * (4 + 2) + rows * 128 * (2 + 4) + CUBLAS_WORKSPACE_BYTES);
    p.ctx *= 4;
    assert_true(kernel_cublas.private_bytes(&p, &plan) > plain);
    assert_true(kernel_cublas_bifurcated.private_bytes(&p, &plan) > bif);
}

static void test_io_model(void **state)
{
    (void)state;
    problem_t p = problem_default();
    p.batch = 2;
    p.beam = 8;
    p.ctx = 2048;
    p.gen = 64;
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    const double scores = 2.0 * 8 * 32 * (2048 + 64);
    attn_io_t a = kernel_cublas.io(&p, &plan);
    /* the logits and probabilities are workspace traffic, not compulsory bytes */
    assert_true(fabs(a.bytes - (io_kv_bytes_replicated(&p) + io_qo_bytes(&p))) < 1.0);
    assert_true(fabs(a.workspace_bytes - 2 * scores * (4 + 2)) < 1.0);
    assert_true(fabs(a.flops - io_flops(&p)) < 1.0);
    attn_io_t b = kernel_cublas_bifurcated.io(&p, &plan);
    assert_true(fabs(b.bytes - (io_kv_bytes_unique(&p) + io_qo_bytes(&p))) < 1.0);
    assert_true(fabs(b.workspace_bytes - a.workspace_bytes) < 1.0);
    assert_true(b.bytes < a.bytes); /* W = 8 streams share the context */
    assert_true(fabs(a.unique_bytes - b.unique_bytes) < 1.0);
    assert_true(a.unique_bytes <= b.bytes);
    assert_true(fabs(b.unique_bytes - b.bytes) < 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_pipeline_matches_attention),
        cmocka_unit_test(test_bifurcated_pipeline_matches_attention),
        cmocka_unit_test(test_emulation_detects_a_wrong_table),
        cmocka_unit_test(test_tables_are_aligned),
        cmocka_unit_test(test_address_arithmetic_at_large_shapes),
        cmocka_unit_test(test_support_rules),
        cmocka_unit_test(test_plan_and_workspace),
        cmocka_unit_test(test_private_bytes),
        cmocka_unit_test(test_io_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
