#include "reference.h"
#include "reference_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include "../problem/kv_fill.h"
#include "../problem/append.h"

/* Where a source's K/V come from. A source naming only some of its layout's
 * buffers is a caller's mistake; it must not silently fall back to logical data. */
typedef enum { SOURCE_LOGICAL, SOURCE_BUFFERS, SOURCE_INCOMPLETE } source_mode_t;

static source_mode_t source_mode(const ref_source_t *s)
{
    /* a ragged batch's lengths must reach the geometry, or every length would read as the longest */
    if (problem_ragged(s->p) && !s->geom.ctx_lens) return SOURCE_INCOMPLETE;
    if (!s->kv && !s->kv_ctx && !s->kv_dec) return SOURCE_LOGICAL;
    switch (s->geom.layout) {
    case LAYOUT_CONTIGUOUS: return s->kv ? SOURCE_BUFFERS : SOURCE_INCOMPLETE;
    case LAYOUT_PAGED: return s->kv && s->block_table ? SOURCE_BUFFERS : SOURCE_INCOMPLETE;
    case LAYOUT_BIFURCATED: return s->kv_ctx && s->kv_dec ? SOURCE_BUFFERS : SOURCE_INCOMPLETE;
    default: return SOURCE_INCOMPLETE;
    }
}

static void fill_nan(double *out, int d)
{
    for (int x = 0; x < d; ++x) out[x] = NAN;
}

static void copy_row(const float *from, int d, double *row)
{
    for (int x = 0; x < d; ++x) row[x] = from[x];
}

/* An 8-bit cache holds codes (kv_quant.h); what the kernel reads is each code's value
 * times the scale of its tensor and kv head, here in double. Rows of other caches are
 * their values already. */
static void dequantise(const ref_source_t *s, int which, int kv_head, double *row)
{
    if (!s->geom.kv_quant) return;
    const double scale = kv_quant_scale(&s->geom, which, kv_head);
    for (int x = 0; x < s->geom.head_dim; ++x) row[x] *= scale;
}

/* Hot loops built for the CPU's vector width too (AVX-512, AVX2), picked at load time;
 * the arithmetic and its order are the same in each. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define REFERENCE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define REFERENCE_CLONES
#endif

/* A K/V row of plain data (not a key of peaked scores: kv_logical is then logical_value
 * of its tensor at consecutive indices), as one loop the compiler vectorises where the CPU
 * multiplies 64-bit lanes (AVX-512, or AVX2 by parts); generating the cache's values is
 * most of the reference's time. */
REFERENCE_CLONES void reference_plain_row(uint64_t seed, int tensor, uint64_t base, int n, float *row)
{
    for (int x = 0; x < n; ++x) row[x] = logical_value(seed, tensor, base + (uint64_t)x, KV_AMPLITUDE);
}

/* That row as the cache stores it: an 8-bit cache's values mapped through codes (the
 * table of reference_stored_codes of its tensor and kv head), else (NULL) as they are. */
static void stored_row(uint64_t seed, int tensor, uint64_t base, int d, const float *codes, float *row)
{
    reference_plain_row(seed, tensor, base, d, row);
    if (codes) /* row holds k/128 times KV_AMPLITUDE: its code's stored value */
        for (int x = 0; x < d; ++x) row[x] = codes[(int)(row[x] * (128.0f / KV_AMPLITUDE)) + 127];
}

/* The codes table of K or V (which) of kv head `head` in s (ref_source_t.codes). */
static const float *codes_of(const ref_source_t *s, int which, int head)
{
    return s->codes ? s->codes + ((size_t)which * s->geom.kv_heads + head) * 255 : NULL;
}

/* 1 where position pos is the current one of --step append, which the step writes: row
 * is then what it writes for the stream whose K/V `stream` reads there (itself). */
static int load_appended(const ref_source_t *s, int stream, int which, int kv_head, int pos,
                         double *row)
{
    const problem_t *p = s->p;
    if (p->step != STEP_APPEND || pos != append_position(p->ctx, p->gen)) return 0;
    reference_append_kv(s, kv_source_stream(&s->geom, s->indirection, stream, pos), which, kv_head, row);
    return 1;
}

/* K or V row (which) that stream `stream` attends to at position pos, in any layout, as
 * the cache holds it (dequantise: as the kernel reads it). */
static void load_row(const ref_source_t *s, source_mode_t mode, int stream, int which,
                     int kv_head, int pos, double *row)
{
    const kv_geometry_t *g = &s->geom;
    if (load_appended(s, stream, which, kv_head, pos, row)) return;
    if (mode == SOURCE_BUFFERS) {
        int in_ctx;
        int64_t off = kv_row_offset(g, s->block_table, s->indirection, stream, which, kv_head,
                                    pos, &in_ctx);
        const float *buf = g->layout == LAYOUT_BIFURCATED ? (in_ctx ? s->kv_ctx : s->kv_dec)
                                                          : s->kv;
        copy_row(buf + off, g->head_dim, row);
        return;
    }
    if (s->ctx_kv && pos < kv_ctx_of(g, stream / g->beam) && stream / g->beam == s->ctx_request && kv_head == s->ctx_head) {
        copy_row(s->ctx_kv + ((size_t)which * g->ctx + pos) * g->head_dim, g->head_dim, row);
        return;
    }
    int from = kv_source_stream(g, s->indirection, stream, pos);
    if (!(g->peaked && which == 0) && (!g->kv_quant || s->codes)) {
        /* plain data: kv_logical's row, the fast way */
        const int d = g->head_dim, ctx = kv_ctx_of(g, from / g->beam);
        const uint64_t base = pos < ctx ? logical_ctx_kv_index(g->kv_heads, g->ctx, d, from / g->beam, kv_head, pos)
                                        : logical_dec_kv_index(g->kv_heads, g->gen, d, from, kv_head, pos - ctx);
        float plain[256];
        stored_row(s->seed, (pos < ctx ? TENSOR_K_CTX : TENSOR_K_DEC) + which, base, d, codes_of(s, which, kv_head),
                   plain);
        copy_row(plain, d, row);
        return;
    }
    for (int x = 0; x < g->head_dim; ++x)
        row[x] = kv_stored(g, s->seed, from, which, kv_head, pos, x);
}

void reference_stored_codes(const kv_geometry_t *g, int which, int head, float table[255])
{
    for (int k = -127; k <= 127; ++k)
        table[k + 127] = kv_store(g, (float)k * (KV_AMPLITUDE / 128.0f) * kv_quant_amplitude(which, head), which, head);
}

void reference_ctx_fill(const ref_source_t *src, int request, int kv_head, float *buf)
{
    const kv_geometry_t *g = &src->geom;
    const int d = g->head_dim;
    /* an 8-bit cache's codes: the source's tables, or this group's own */
    float own[2][255];
    const float *codes[2] = {codes_of(src, 0, kv_head), codes_of(src, 1, kv_head)};
    for (int which = 0; which < 2 && g->kv_quant && !src->codes; ++which) {
        reference_stored_codes(g, which, kv_head, own[which]);
        codes[which] = own[which];
    }
    /* a ragged batch's request: its own context, at the longest's stride */
    const long n = g->ctx_lens ? kv_ctx_of(g, request) : g->ctx;
    /* a position's K and V rows together: with peaked scores its K row costs more */
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (long pos = 0; pos < n; ++pos)
        for (int which = 0; which < 2; ++which) {
            float *row = buf + ((size_t)which * g->ctx + pos) * d;
            if (g->peaked && which == 0) { /* peaked keys; values stay plain */
                for (int x = 0; x < d; ++x)
                    row[x] = kv_store(g, kv_ctx_logical(g, src->seed, request, which, kv_head, (int)pos, x), which,
                                      kv_head);
                continue;
            }
            stored_row(src->seed, TENSOR_K_CTX + which,
                       logical_ctx_kv_index(g->kv_heads, g->ctx, d, request, kv_head, (int)pos), d, codes[which], row);
        }
}

ref_source_t reference_with_ctx(const ref_source_t *src, int request, int kv_head, float *buf)
{
    ref_source_t group = *src;
    reference_ctx_fill(src, request, kv_head, buf);
    group.ctx_kv = buf;
    group.ctx_request = request;
    group.ctx_head = kv_head;
    return group;
}

/* Context row of the request, read the way the bifurcated formulation reads it:
 * by request, never through a stream. */
static void load_ctx_row(const ref_source_t *s, source_mode_t mode, int stream, int which,
                         int kv_head, int pos, double *row)
{
    const kv_geometry_t *g = &s->geom;
    int request = stream / g->beam;
    if (mode == SOURCE_BUFFERS && g->layout == LAYOUT_BIFURCATED) {
        copy_row(s->kv_ctx + kv_ctx_offset(g, request, which, kv_head, pos), g->head_dim, row);
    } else if (mode == SOURCE_BUFFERS) {
        load_row(s, mode, stream, which, kv_head, pos, row);
    } else {
        for (int x = 0; x < g->head_dim; ++x)
            row[x] = kv_store(g, kv_ctx_logical(g, s->seed, request, which, kv_head, pos, x), which, kv_head);
    }
}

/* Decoded row j (0 = first decoded token) that the stream attends to. */
static void load_dec_row(const ref_source_t *s, source_mode_t mode, int stream, int which,
                         int kv_head, int j, double *row)
{
    const kv_geometry_t *g = &s->geom;
    const int ctx = kv_ctx_of(g, stream / g->beam);
    int from = kv_source_stream(g, s->indirection, stream, ctx + j);
    if (load_appended(s, stream, which, kv_head, ctx + j, row)) return;
    if (mode == SOURCE_BUFFERS && g->layout == LAYOUT_BIFURCATED) {
        copy_row(s->kv_dec + kv_dec_offset(g, from, which, kv_head, j), g->head_dim, row);
    } else if (mode == SOURCE_BUFFERS) {
        load_row(s, mode, stream, which, kv_head, ctx + j, row);
    } else {
        for (int x = 0; x < g->head_dim; ++x)
            row[x] = kv_store(g, kv_dec_logical(g, s->seed, from, which, kv_head, j, x), which, kv_head);
    }
}

static void load_query(const ref_source_t *s, int query, int head, double *q)
{
    const problem_t *p = s->p;
    if (p->step == STEP_APPEND) { /* one query token per stream (problem_validate) */
        reference_append_q(s, query_stream(query, p->q_len), head, q);
        return;
    }
    for (int x = 0; x < p->head_dim; ++x)
        q[x] = kv_query(s->seed, p->scores == SCORES_PEAKED, p->heads, p->kv_heads, p->head_dim, query, head, x);
}

/* <a, b> in four partial sums, each in double: one chain of dependent additions would make
 * the reference wait on the adder's latency at every element. dot reads a row loaded into
 * doubles, dot_float one of the materialised context in place (each float exact in double). */
#define DEFINE_DOT(name, T)                                                                  \
    REFERENCE_CLONES static double name(const double *a, const T *b, int d)                 \
    {                                                                                        \
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;                                       \
        int x = 0;                                                                           \
        for (; x + 4 <= d; x += 4) {                                                         \
            s0 += a[x] * b[x];                                                               \
            s1 += a[x + 1] * b[x + 1];                                                       \
            s2 += a[x + 2] * b[x + 2];                                                       \
            s3 += a[x + 3] * b[x + 3];                                                       \
        }                                                                                    \
        for (; x < d; ++x) s0 += a[x] * b[x];                                                \
        return (s0 + s1) + (s2 + s3);                                                        \
    }
DEFINE_DOT(dot, double)
DEFINE_DOT(dot_float, float)

/* The row of the materialised context (reference_ctx_fill) that load_row would copy, or
 * NULL: read in place, it spares the copy into doubles at every key of the context. */
static const float *ctx_kv_row(const ref_source_t *s, source_mode_t mode, int stream, int which, int kv_head,
                               int pos)
{
    const kv_geometry_t *g = &s->geom;
    const int request = stream / g->beam;
    if (mode == SOURCE_BUFFERS || !s->ctx_kv || request != s->ctx_request || kv_head != s->ctx_head ||
        pos >= kv_ctx_of(g, request))
        return NULL;
    if (s->p->step == STEP_APPEND && pos == append_position(s->p->ctx, s->p->gen)) return NULL;
    return s->ctx_kv + ((size_t)which * g->ctx + pos) * g->head_dim;
}

/* The scaled logits <q, k> of query row `query` and query head q_head against the first
 * L keys of its stream, K read from kv head k_head: max of them returned. */
static double row_logits(const ref_source_t *src, source_mode_t mode, int query, int q_head, int L, double *logit)
{
    const problem_t *p = src->p;
    const int stream = query_stream(query, p->q_len), d = p->head_dim, k_head = q_head / problem_group(p);
    double q[REF_MAX_HEAD_DIM], row[REF_MAX_HEAD_DIM];
    const double scale = problem_scale(p);
    load_query(src, query, q_head, q);
    /* an 8-bit cache's scale (dequantise), for the rows read in place */
    const double k_scale = src->geom.kv_quant ? kv_quant_scale(&src->geom, 0, k_head) : 1.0;
    const unsigned char *kept = src->key_mask ? src->key_mask + (size_t)stream * problem_keys(p) : NULL;
    double max_logit = -INFINITY;
    for (int pos = 0; pos < L; ++pos) {
        if (kept && !kept[pos]) { /* left out of the selected step's keys: weight 0 */
            logit[pos] = -INFINITY;
            continue;
        }
        const float *in_place = ctx_kv_row(src, mode, stream, 0, k_head, pos);
        if (in_place) {
            logit[pos] = scale * (k_scale * dot_float(q, in_place, d));
        } else {
            load_row(src, mode, stream, 0, k_head, pos, row);
            dequantise(src, 0, k_head, row);
            logit[pos] = scale * dot(q, row, d);
        }
        if (logit[pos] > max_logit) max_logit = logit[pos];
    }
    return max_logit;
}

/* The keys query row `query` attends to: of the stream's own keys (a ragged batch's
 * request has its own), query token j of n sees the first L - n + 1 + j. */
static int row_keys(const ref_source_t *src, int query)
{
    const problem_t *p = src->p;
    return query_key_end(kv_keys_of(&src->geom, query_stream(query, p->q_len)), p->q_len, query);
}

int reference_probs(const ref_source_t *src, int query, int head, double *prob)
{
    const source_mode_t mode = source_mode(src);
    const int L = row_keys(src, query);
    if (src->p->head_dim > REF_MAX_HEAD_DIM || mode == SOURCE_INCOMPLETE) return -1;
    const double max_logit = row_logits(src, mode, query, head, L, prob);
    double denom = 0.0;
    for (int pos = 0; pos < L; ++pos) denom += prob[pos] = exp(prob[pos] - max_logit);
    for (int pos = 0; pos < L; ++pos) prob[pos] /= denom;
    return L;
}

REFERENCE_CLONES void reference_row(const ref_source_t *src, int query, int head, double *out)
{
    const problem_t *p = src->p;
    const int stream = query_stream(query, p->q_len);
    const int d = p->head_dim, v_head = head / problem_group(p);
    const int q_head = src->share_to ? src->share_to[head] : head;
    const source_mode_t mode = source_mode(src);
    const int L = row_keys(src, query);
    double *logit = d <= REF_MAX_HEAD_DIM && mode != SOURCE_INCOMPLETE
                        ? malloc((size_t)L * sizeof *logit) : NULL;
    if (!logit) {
        fill_nan(out, d);
        return;
    }
    double row[REF_MAX_HEAD_DIM], acc[REF_MAX_HEAD_DIM] = {0};
    const double v_scale = src->geom.kv_quant ? kv_quant_scale(&src->geom, 1, v_head) : 1.0;
    const double max_logit = row_logits(src, mode, query, q_head, L, logit);
    /* Subtracting the maximum keeps every exponent <= 0: no overflow for any logit. */
    double denom = 0.0;
    for (int pos = 0; pos < L; ++pos) {
        double w = exp(logit[pos] - max_logit);
        if (w == 0.0 && logit[pos] == -INFINITY) continue;
        denom += w;
        const float *in_place = ctx_kv_row(src, mode, stream, 1, v_head, pos);
        if (in_place) {
            const double wv = w * v_scale;
            for (int x = 0; x < d; ++x) acc[x] += wv * in_place[x];
            continue;
        }
        load_row(src, mode, stream, 1, v_head, pos, row);
        dequantise(src, 1, v_head, row);
        for (int x = 0; x < d; ++x) acc[x] += w * row[x];
    }
    for (int x = 0; x < d; ++x) out[x] = acc[x] / denom;
    free(logit);
}

void reference_row_bifurcated(const ref_source_t *src, int query, int head, double *out)
{
    const problem_t *p = src->p;
    /* the context precedes every query token; the causal mask cuts decoded keys only */
    const int stream = query_stream(query, p->q_len), m_d = query_key_end(p->gen, p->q_len, query);
    const int d = p->head_dim, kv_head = head / problem_group(p);
    const source_mode_t mode = source_mode(src);
    const int m_c = mode == SOURCE_INCOMPLETE ? 0 : kv_ctx_of(&src->geom, stream / p->beam);
    double *logit_c = NULL, *logit_d = NULL;
    if (d <= REF_MAX_HEAD_DIM && mode != SOURCE_INCOMPLETE) {
        logit_c = malloc((size_t)m_c * sizeof *logit_c);
        logit_d = malloc((size_t)m_d * sizeof *logit_d);
    }
    if (!logit_c || !logit_d) {
        free(logit_c);
        free(logit_d);
        fill_nan(out, d);
        return;
    }
    double q[REF_MAX_HEAD_DIM], row[REF_MAX_HEAD_DIM];
    double out_c[REF_MAX_HEAD_DIM] = {0}, out_d[REF_MAX_HEAD_DIM] = {0};
    const double scale = problem_scale(p);
    load_query(src, query, head, q);

    /* <q, K_c> and <q, K_d> separately (Eq. 3) ... */
    for (int pos = 0; pos < m_c; ++pos) {
        load_ctx_row(src, mode, stream, 0, kv_head, pos, row);
        dequantise(src, 0, kv_head, row);
        logit_c[pos] = scale * dot(q, row, d);
    }
    for (int j = 0; j < m_d; ++j) {
        load_dec_row(src, mode, stream, 0, kv_head, j, row);
        dequantise(src, 0, kv_head, row);
        logit_d[j] = scale * dot(q, row, d);
    }
    /* ... one softmax over their concatenation ... */
    double max_logit = -INFINITY, denom = 0.0;
    for (int pos = 0; pos < m_c; ++pos) max_logit = fmax(max_logit, logit_c[pos]);
    for (int j = 0; j < m_d; ++j) max_logit = fmax(max_logit, logit_d[j]);
    for (int pos = 0; pos < m_c; ++pos) denom += exp(logit_c[pos] - max_logit);
    for (int j = 0; j < m_d; ++j) denom += exp(logit_d[j] - max_logit);
    /* ... and <w_c, V_c> + <w_d, V_d> (Eq. 4). */
    for (int pos = 0; pos < m_c; ++pos) {
        double w = exp(logit_c[pos] - max_logit) / denom;
        load_ctx_row(src, mode, stream, 1, kv_head, pos, row);
        dequantise(src, 1, kv_head, row);
        for (int x = 0; x < d; ++x) out_c[x] += w * row[x];
    }
    for (int j = 0; j < m_d; ++j) {
        double w = exp(logit_d[j] - max_logit) / denom;
        load_dec_row(src, mode, stream, 1, kv_head, j, row);
        dequantise(src, 1, kv_head, row);
        for (int x = 0; x < d; ++x) out_d[x] += w * row[x];
    }
    for (int x = 0; x < d; ++x) out[x] = out_c[x] + out_d[x];
    free(logit_c);
    free(logit_d);
}

void err_add(err_acc_t *e, const double *ref, const float *got, int d)
{
    for (int x = 0; x < d; ++x) {
        e->n++;
        if (!isfinite(ref[x]) || !isfinite(got[x])) {
            e->nonfinite++;
            continue;
        }
        double diff = (double)got[x] - ref[x];
        e->diff2 += diff * diff;
        e->ref2 += ref[x] * ref[x];
        if (fabs(diff) > e->max_abs) e->max_abs = fabs(diff);
    }
}

double err_rel(const err_acc_t *e)
{
    if (e->nonfinite > 0) return INFINITY;
    if (e->diff2 == 0.0) return 0.0;
    if (e->ref2 == 0.0) return INFINITY;
    return sqrt(e->diff2 / e->ref2);
}

double tolerance_for(dtype_t t)
{
    switch (t) {
    case DTYPE_FP32: return 1e-5;
    case DTYPE_FP16: return 2e-3;
    case DTYPE_BF16: return 1.6e-2;
    default: return 0.0; /* no query dtype */
    }
}
