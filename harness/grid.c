#include "grid.h"
#include "grid_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../problem/ctx_dist.h"

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

static bool is_pow2(long x) { return x > 0 && (x & (x - 1)) == 0; }

/* One number with an optional k/m suffix; tok is not NUL-terminated. */
static int parse_value(const char *opt, const char *tok, size_t n, int *out, char *msg, size_t len)
{
    char text[48];
    snprintf(text, sizeof text, "%.*s", (int)(n < 40 ? n : 40), tok);
    if (n == 0) FAIL("%s: empty value in the list", opt);
    size_t i = 0;
    bool negative = tok[0] == '-';
    if (negative) i = 1;
    if (i >= n || tok[i] < '0' || tok[i] > '9') FAIL("%s: '%s' is not a number", opt, text);
    long long v = 0;
    for (; i < n && tok[i] >= '0' && tok[i] <= '9'; ++i) {
        v = v * 10 + (tok[i] - '0');
        if (v > INT_MAX) FAIL("%s: '%s' is too large (limit %d)", opt, text, INT_MAX);
    }
    long long mult = 1;
    if (i < n && (tok[i] == 'k' || tok[i] == 'K')) mult = 1024, ++i;
    else if (i < n && (tok[i] == 'm' || tok[i] == 'M')) mult = 1024 * 1024, ++i;
    if (i != n) FAIL("%s: '%s' is not a number", opt, text);
    if (negative || v == 0) FAIL("%s: values must be positive integers (got '%s')", opt, text);
    if (v * mult > INT_MAX) FAIL("%s: '%s' is too large (limit %d)", opt, text, INT_MAX);
    *out = (int)(v * mult);
    return 0;
}

static int push(const char *opt, int_list_t *out, int v, char *msg, size_t len)
{
    if (out->n >= LIST_MAX) FAIL("%s: more than %d values", opt, LIST_MAX);
    out->v[out->n++] = v;
    return 0;
}

int int_list_parse(const char *opt, const char *s, int_list_t *out, char *msg, size_t len)
{
    out->n = 0;
    if (!s || !*s) FAIL("%s: empty list", opt);
    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        const char *colon = memchr(p, ':', n);
        if (!colon) {
            int v;
            if (parse_value(opt, p, n, &v, msg, len) || push(opt, out, v, msg, len)) return -1;
        } else {
            int lo, hi;
            if (parse_value(opt, p, (size_t)(colon - p), &lo, msg, len) ||
                parse_value(opt, colon + 1, n - (size_t)(colon - p) - 1, &hi, msg, len))
                return -1;
            if (!is_pow2(lo) || !is_pow2(hi))
                FAIL("%s: range %.*s must run between powers of two", opt, (int)n, p);
            if (lo > hi) FAIL("%s: range %.*s runs backwards (%d > %d)", opt, (int)n, p, lo, hi);
            for (long v = lo; v <= hi; v *= 2)
                if (push(opt, out, (int)v, msg, len)) return -1;
        }
        if (!p[n]) break;
        p += n + 1;
    }
    return 0;
}

void grid_default(grid_t *g)
{
    problem_t p = problem_default();
    memset(g, 0, sizeof *g);
    g->batch = (int_list_t){1, {p.batch}};
    g->beam = (int_list_t){1, {p.beam}};
    g->heads = (int_list_t){1, {p.heads}};
    g->kv_heads = (int_list_t){1, {p.kv_heads}};
    g->head_dim = (int_list_t){1, {p.head_dim}};
    g->ctx = (int_list_t){1, {p.ctx}};
    g->gen = (int_list_t){1, {p.gen}};
    g->block_size = (int_list_t){1, {p.block_size}};
    g->splits = (int_list_t){1, {p.splits}};
    g->q_len = (int_list_t){1, {p.q_len}};
    g->dtype[0] = p.dtype, g->n_dtype = 1;
    g->n_kv_dtype = 0;
    g->kv_scale[0] = p.kv_scale, g->n_kv_scale = 1;
    g->cache[0] = p.cache, g->n_cache = 1;
    g->multi_block[0] = p.multi_block, g->n_multi_block = 1;
    g->indirection = p.indirection;
    g->q_scaling = p.q_scaling;
    g->model = p.model;
    g->layers = p.layers;
    g->tp = p.tp;
    g->step = p.step;
    g->rope = p.rope;
    g->rope_base = p.rope_base;
    g->rope_scale = p.rope_scale;
    g->scores = p.scores;
    g->sink_logit = p.sink_logit;
    g->heavy_logit = p.heavy_logit;
    g->recent_logit = p.recent_logit;
    g->share_fraction = p.share_fraction;
    g->top_p = p.top_p;
    g->share_map = p.share_map;
}

/* The axes in expansion order, outermost first (see grid.h). */
enum { AX_DTYPE, AX_KV_DTYPE, AX_KV_SCALE, AX_CACHE, AX_BLOCK, AX_HEADS, AX_KV_HEADS,
       AX_HEAD_DIM, AX_MULTI_BLOCK, AX_SPLITS, AX_CTX, AX_GEN, AX_BATCH, AX_BEAM, AX_Q_LEN, AX_COUNT };

static bool is_8bit(dtype_t t) { return t == DTYPE_FP8 || t == DTYPE_INT8; }

/* The storage of the cache at kv dtype index i: an 8-bit one, or the point's dtype. */
static kv_quant_t kv_quant_at(const grid_t *g, int i)
{
    if (!g->n_kv_dtype) return KV_QUANT_NONE;
    if (g->kv_dtype[i] == DTYPE_FP8) return KV_QUANT_FP8;
    return g->kv_dtype[i] == DTYPE_INT8 ? KV_QUANT_INT8 : KV_QUANT_NONE;
}

/* Values on axis a, given the indices of the axes outside it. */
static int axis_size(const grid_t *g, int a, const int *idx)
{
    switch (a) {
    case AX_DTYPE: return g->n_dtype;
    case AX_KV_DTYPE: return g->n_kv_dtype ? g->n_kv_dtype : 1;
    case AX_KV_SCALE: return kv_quant_at(g, idx[AX_KV_DTYPE]) != KV_QUANT_NONE ? g->n_kv_scale : 1;
    case AX_CACHE: return g->n_cache;
    case AX_BLOCK: return g->cache[idx[AX_CACHE]] == CACHE_PAGED ? g->block_size.n : 1;
    case AX_HEADS: return g->heads.n;
    case AX_KV_HEADS: return g->kv_heads.n;
    case AX_HEAD_DIM: return g->head_dim.n;
    case AX_MULTI_BLOCK: return g->n_multi_block;
    case AX_SPLITS: return g->splits.n;
    case AX_CTX: return g->ctx.n;
    case AX_GEN: return g->gen.n;
    case AX_BATCH: return g->batch.n;
    case AX_BEAM: return g->beam.n;
    default: return g->q_len.n;
    }
}

static void point_at(const grid_t *g, const int *idx, problem_t *p)
{
    *p = problem_default();
    p->dtype = g->dtype[idx[AX_DTYPE]];
    p->kv_quant = kv_quant_at(g, idx[AX_KV_DTYPE]);
    p->kv_scale = p->kv_quant != KV_QUANT_NONE ? g->kv_scale[idx[AX_KV_SCALE]] : KV_SCALE_TENSOR;
    p->cache = g->cache[idx[AX_CACHE]];
    p->block_size = g->block_size.v[idx[AX_BLOCK]];
    p->heads = g->heads.v[idx[AX_HEADS]];
    p->kv_heads = g->kv_heads.v[idx[AX_KV_HEADS]];
    p->head_dim = g->head_dim.v[idx[AX_HEAD_DIM]];
    p->multi_block = g->multi_block[idx[AX_MULTI_BLOCK]];
    p->splits = g->splits.v[idx[AX_SPLITS]];
    p->ctx = g->ctx.v[idx[AX_CTX]];
    p->gen = g->gen.v[idx[AX_GEN]];
    p->batch = g->batch.v[idx[AX_BATCH]];
    p->beam = g->beam.v[idx[AX_BEAM]];
    p->q_len = g->q_len.v[idx[AX_Q_LEN]];
    p->indirection = g->indirection;
    p->q_scaling = g->q_scaling;
    p->layers = g->layers;
    p->tp = g->tp;
    p->model = g->model;
    p->step = g->step;
    p->rope = g->rope;
    p->rope_base = g->rope_base;
    p->rope_scale = g->rope_scale;
    problem_set_ctx_dist(p, g->ctx_dist); /* after batch: a ragged point's ctx is its longest */
    p->scores = g->scores;
    p->sink_logit = g->sink_logit;
    p->heavy_logit = g->heavy_logit;
    p->recent_logit = g->recent_logit;
    p->share_fraction = g->share_fraction;
    p->top_p = g->top_p;
    p->share_map = g->share_map;
}

/* Odometer step, innermost axis fastest. An inner axis's size may depend on outer
 * indices only, and an outer step resets every inner index, so sizes stay consistent. */
static bool next_point(const grid_t *g, int *idx)
{
    for (int a = AX_COUNT - 1; a >= 0; --a) {
        if (++idx[a] < axis_size(g, a, idx)) return true;
        idx[a] = 0;
    }
    return false;
}

long grid_count(const grid_t *g)
{
    double caches = 0, kv = g->n_kv_dtype ? 0 : 1;
    for (int c = 0; c < g->n_cache; ++c) caches += g->cache[c] == CACHE_PAGED ? g->block_size.n : 1;
    for (int i = 0; i < g->n_kv_dtype; ++i) kv += is_8bit(g->kv_dtype[i]) ? g->n_kv_scale : 1;
    double n = (double)g->n_dtype * kv * caches * g->heads.n * g->kv_heads.n * g->head_dim.n *
               g->n_multi_block * g->splits.n * g->ctx.n * g->gen.n * g->batch.n * g->beam.n * g->q_len.n;
    return n > GRID_POINTS_MAX ? GRID_POINTS_MAX + 1L : (long)n;
}

static int check_axes(const grid_t *g, char *msg, size_t len)
{
    const struct { const char *opt; int n, max; } axes[] = {
        {"--dtype", g->n_dtype, 3}, {"--cache", g->n_cache, 2},
        {"--block-size", g->block_size.n, LIST_MAX}, {"--heads", g->heads.n, LIST_MAX},
        {"--kv-heads", g->kv_heads.n, LIST_MAX}, {"--head-dim", g->head_dim.n, LIST_MAX},
        {"--multi-block", g->n_multi_block, 3}, {"--splits", g->splits.n, LIST_MAX},
        {"--ctx", g->ctx.n, LIST_MAX}, {"--gen", g->gen.n, LIST_MAX},
        {"--batch", g->batch.n, LIST_MAX}, {"--beam", g->beam.n, LIST_MAX},
        {"--q-len", g->q_len.n, LIST_MAX},
    };
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; ++i) {
        if (axes[i].n < 1) FAIL("%s: empty list", axes[i].opt);
        if (axes[i].n > axes[i].max) FAIL("%s: more than %d values", axes[i].opt, axes[i].max);
    }
    /* none listed is the default (the cache in --dtype) */
    if (g->n_kv_dtype < 0 || g->n_kv_dtype > 5) FAIL("--kv-dtype: more than %d values", 5);
    if (g->n_kv_scale < 1) FAIL("--kv-scale: empty list");
    if (g->n_kv_scale > 2) FAIL("--kv-scale: more than %d values", 2);
    if (ctx_dist_ragged(g->ctx_dist) && g->ctx.n > 1)
        FAIL("--ctx lists %d values but --ctx-dist %s gives every context length", g->ctx.n, g->ctx_dist->spec);
    long n = grid_count(g);
    if (n > GRID_POINTS_MAX)
        FAIL("the grid has more than %d points; split it into suite lines", GRID_POINTS_MAX);
    return 0;
}

int grid_validate(const grid_t *g, char *msg, size_t len)
{
    if (check_axes(g, msg, len)) return -1;
    /* A listed block size is checked even where no point is paged: a bad value is a
     * mistake whether or not this grid happens to use it. */
    for (int i = 0; i < g->block_size.n; ++i) {
        problem_t p = problem_default();
        p.cache = CACHE_PAGED;
        p.block_size = g->block_size.v[i];
        if (problem_validate(&p, msg, len)) return -1;
    }
    int idx[AX_COUNT] = {0};
    problem_t p;
    do {
        point_at(g, idx, &p);
        /* a 16/32-bit cache is one in the queries' dtype: no mixed 16-bit pairs */
        if (g->n_kv_dtype && !is_8bit(g->kv_dtype[idx[AX_KV_DTYPE]]) && g->kv_dtype[idx[AX_KV_DTYPE]] != p.dtype)
            FAIL("--kv-dtype %s must be --dtype (%s) or an 8-bit storage (fp8, int8)",
                 dtype_name(g->kv_dtype[idx[AX_KV_DTYPE]]), dtype_name(p.dtype));
        if (problem_validate(&p, msg, len)) return -1;
    } while (next_point(g, idx));
    return 0;
}

int grid_expand(const grid_t *g, problem_t **out, int *n, char *msg, size_t len)
{
    *out = NULL;
    *n = 0;
    if (grid_validate(g, msg, len)) return -1;
    long count = grid_count(g);
    problem_t *points = malloc((size_t)count * sizeof *points);
    if (!points) FAIL("out of host memory for %ld grid points", count);
    int idx[AX_COUNT] = {0};
    int k = 0;
    do point_at(g, idx, &points[k++]);
    while (next_point(g, idx));
    *out = points;
    *n = k;
    return 0;
}

void grid_override(grid_t *dst, const grid_t *src, unsigned fields)
{
    if (fields & GRID_FIELD_BATCH) dst->batch = src->batch;
    if (fields & GRID_FIELD_BEAM) dst->beam = src->beam;
    if (fields & GRID_FIELD_HEADS) dst->heads = src->heads;
    if (fields & GRID_FIELD_KV_HEADS) dst->kv_heads = src->kv_heads;
    if (fields & GRID_FIELD_HEAD_DIM) dst->head_dim = src->head_dim;
    if (fields & GRID_FIELD_CTX) dst->ctx = src->ctx;
    if (fields & GRID_FIELD_GEN) dst->gen = src->gen;
    if (fields & GRID_FIELD_BLOCK_SIZE) dst->block_size = src->block_size;
    if (fields & GRID_FIELD_SPLITS) dst->splits = src->splits;
    if (fields & GRID_FIELD_Q_LEN) dst->q_len = src->q_len;
    if (fields & GRID_FIELD_DTYPE) {
        memcpy(dst->dtype, src->dtype, sizeof dst->dtype);
        dst->n_dtype = src->n_dtype;
    }
    if (fields & GRID_FIELD_CACHE) {
        memcpy(dst->cache, src->cache, sizeof dst->cache);
        dst->n_cache = src->n_cache;
    }
    if (fields & GRID_FIELD_KV_DTYPE) {
        memcpy(dst->kv_dtype, src->kv_dtype, sizeof dst->kv_dtype);
        dst->n_kv_dtype = src->n_kv_dtype;
    }
    if (fields & GRID_FIELD_KV_SCALE) {
        memcpy(dst->kv_scale, src->kv_scale, sizeof dst->kv_scale);
        dst->n_kv_scale = src->n_kv_scale;
    }
    if (fields & GRID_FIELD_MULTI_BLOCK) {
        memcpy(dst->multi_block, src->multi_block, sizeof dst->multi_block);
        dst->n_multi_block = src->n_multi_block;
    }
    if (fields & GRID_FIELD_INDIRECTION) dst->indirection = src->indirection;
    if (fields & GRID_FIELD_Q_SCALING) dst->q_scaling = src->q_scaling;
    if (fields & GRID_FIELD_MODEL) dst->model = src->model;
    if (fields & GRID_FIELD_LAYERS) dst->layers = src->layers;
    if (fields & GRID_FIELD_TP) dst->tp = src->tp;
    if (fields & GRID_FIELD_STEP) dst->step = src->step;
    if (fields & GRID_FIELD_ROPE) dst->rope = src->rope;
    if (fields & GRID_FIELD_ROPE_BASE) dst->rope_base = src->rope_base;
    if (fields & GRID_FIELD_ROPE_SCALE) dst->rope_scale = src->rope_scale;
    if (fields & GRID_FIELD_CTX_DIST) dst->ctx_dist = src->ctx_dist;
    if (fields & GRID_FIELD_SCORES) dst->scores = src->scores;
    if (fields & GRID_FIELD_SINK_LOGIT) dst->sink_logit = src->sink_logit;
    if (fields & GRID_FIELD_HEAVY_LOGIT) dst->heavy_logit = src->heavy_logit;
    if (fields & GRID_FIELD_RECENT_LOGIT) dst->recent_logit = src->recent_logit;
    if (fields & GRID_FIELD_SHARE_FRACTION) dst->share_fraction = src->share_fraction;
    if (fields & GRID_FIELD_TOP_P) dst->top_p = src->top_p;
    if (fields & GRID_FIELD_SHARE_MAP) dst->share_map = src->share_map;
}
