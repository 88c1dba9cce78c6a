#include "problem.h"
#include "ctx_dist.h"

#include <limits.h>
#include "logical_data.h"
#include "share_map.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

problem_t problem_default(void)
{
    problem_t p = {
        .batch = 1, .beam = 1, .heads = 32, .kv_heads = 32, .head_dim = 128,
        .ctx = 8192, .gen = 128, .q_len = 1, .dtype = DTYPE_FP16, .kv_quant = KV_QUANT_NONE,
        .kv_scale = KV_SCALE_TENSOR, .cache = CACHE_CONTIGUOUS,
        .block_size = 64, .indirection = false, .multi_block = MULTI_BLOCK_AUTO, .splits = 0,
        .q_scaling = 1.0, .layers = 1, .tp = 1, .model = NULL, .ctx_dist = NULL,
        .step = STEP_ATTEND, .rope = ROPE_NEOX, .rope_base = 10000.0, .rope_scale = 1.0,
        .scores = SCORES_FLAT, .sink_logit = 10.0, .heavy_logit = 8.0, .recent_logit = 6.0,
        .share_fraction = 0.3, .share_map = NULL, .top_p = 0.95,
    };
    return p;
}

attn_type_t problem_attn_type(const problem_t *p)
{
    if (p->kv_heads == p->heads) return ATTN_MHA;
    if (p->kv_heads == 1) return ATTN_MQA;
    return ATTN_GQA;
}

int problem_ragged(const problem_t *p) { return ctx_dist_ragged(p->ctx_dist); }

int problem_ctx_len(const problem_t *p, int request) { return ctx_dist_len(p->ctx_dist, p->ctx, request); }

int64_t problem_ctx_total(const problem_t *p)
{
    int64_t total = 0;
    for (int r = 0; r < p->batch; ++r) total += problem_ctx_len(p, r);
    return total;
}

int problem_ctx_max(const problem_t *p)
{
    int longest = 0;
    for (int r = 0; r < p->batch; ++r) {
        int n = problem_ctx_len(p, r);
        if (n > longest) longest = n;
    }
    return longest;
}

void problem_set_ctx_dist(problem_t *p, const struct ctx_dist *d)
{
    p->ctx_dist = ctx_dist_ragged(d) ? d : NULL;
    if (p->ctx_dist && (d->kind != CTX_DIST_FILE || d->n == p->batch)) p->ctx = problem_ctx_max(p);
}

int problem_ctx_lens(const problem_t *p, int32_t **out)
{
    *out = NULL;
    if (!problem_ragged(p)) return 0;
    *out = malloc((size_t)p->batch * sizeof **out);
    if (!*out) return -1;
    for (int r = 0; r < p->batch; ++r) (*out)[r] = problem_ctx_len(p, r);
    return 0;
}

dtype_t problem_kv_dtype(const problem_t *p)
{
    switch (p->kv_quant) {
    case KV_QUANT_FP8: return DTYPE_FP8;
    case KV_QUANT_INT8: return DTYPE_INT8;
    default: return p->dtype;
    }
}

static const char *const dtype_names[] = {"fp16", "bf16", "fp32", "fp8", "int8"};
static const char *const kv_scale_names[] = {"tensor", "head"};
static const char *const scores_names[] = {"flat", "peaked"};
static const char *const cache_names[] = {"contiguous", "paged"};
static const char *const multi_block_names[] = {"auto", "off", "on"};
static const char *const attn_names[] = {"mha", "gqa", "mqa"};
static const char *const step_names[] = {"attend", "append"};
static const char *const rope_names[] = {"neox", "gptj"};

size_t dtype_size(dtype_t t) { return t == DTYPE_FP32 ? 4 : (t == DTYPE_FP8 || t == DTYPE_INT8 ? 1 : 2); }
const char *dtype_name(dtype_t t) { return dtype_names[t]; }
const char *cache_name(cache_kind_t c) { return cache_names[c]; }
const char *multi_block_name(multi_block_t m) { return multi_block_names[m]; }
const char *attn_type_name(attn_type_t a) { return attn_names[a]; }
const char *kv_scale_name(kv_scale_t s) { return kv_scale_names[s]; }
const char *step_name(step_kind_t s) { return step_names[s]; }
const char *rope_name(rope_t r) { return rope_names[r]; }
const char *scores_name(scores_t s) { return scores_names[s]; }

double peak_logit_max(int head_dim, double q_scaling)
{
    return PEAK_CODE_MAX * sqrt((double)head_dim) / (32.0 * q_scaling);
}

int problem_peak_code(const problem_t *p, double logit)
{
    if (p->scores != SCORES_PEAKED) return 0;
    long b = lround(logit * 32.0 * p->q_scaling / sqrt((double)p->head_dim));
    return b < 0 ? 0 : b > PEAK_CODE_MAX ? PEAK_CODE_MAX : (int)b;
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; ++i)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

int dtype_parse(const char *s, dtype_t *out)
{
    int i = lookup(s, dtype_names, 3);
    if (i < 0) return -1;
    *out = (dtype_t)i;
    return 0;
}

int kv_dtype_parse(const char *s, dtype_t *out)
{
    int i = lookup(s, dtype_names, 5);
    if (i < 0) return -1;
    *out = (dtype_t)i;
    return 0;
}

int kv_scale_parse(const char *s, kv_scale_t *out)
{
    int i = lookup(s, kv_scale_names, 2);
    if (i < 0) return -1;
    *out = (kv_scale_t)i;
    return 0;
}

int scores_parse(const char *s, scores_t *out)
{
    int i = lookup(s, scores_names, 2);
    if (i < 0) return -1;
    *out = (scores_t)i;
    return 0;
}

int cache_parse(const char *s, cache_kind_t *out)
{
    int i = lookup(s, cache_names, 2);
    if (i < 0) return -1;
    *out = (cache_kind_t)i;
    return 0;
}

int multi_block_parse(const char *s, multi_block_t *out)
{
    int i = lookup(s, multi_block_names, 3);
    if (i < 0) return -1;
    *out = (multi_block_t)i;
    return 0;
}

int step_parse(const char *s, step_kind_t *out)
{
    int i = lookup(s, step_names, 2);
    if (i < 0) return -1;
    *out = (step_kind_t)i;
    return 0;
}

int rope_parse(const char *s, rope_t *out)
{
    int i = lookup(s, rope_names, 2);
    if (i < 0) return -1;
    *out = (rope_t)i;
    return 0;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

#define FAIL(...) do { snprintf(msg, msg_len, __VA_ARGS__); return -1; } while (0)

int problem_validate(const problem_t *p, char *msg, size_t msg_len)
{
    const struct { const char *opt; int v; } positive[] = {
        {"--batch", p->batch}, {"--beam", p->beam}, {"--heads", p->heads},
        {"--kv-heads", p->kv_heads}, {"--head-dim", p->head_dim}, {"--ctx", p->ctx},
        {"--gen", p->gen},
    };
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; ++i)
        if (positive[i].v <= 0)
            FAIL("%s must be a positive integer (got %d)", positive[i].opt, positive[i].v);
    if (p->q_len < 1 || p->q_len > Q_LEN_LIMIT)
        FAIL("--q-len must be from 1 to %d (got %d)", Q_LEN_LIMIT, p->q_len);
    if (p->q_len > 1 && p->step == STEP_APPEND)
        FAIL("--q-len %d with --step append: the append step writes one token per stream (use --step attend)",
             p->q_len);
    if (p->gen < p->q_len)
        FAIL("--q-len %d needs --gen >= %d: the query tokens are the last decoded ones (got --gen %d)",
             p->q_len, p->q_len, p->gen);
    if (p->heads % p->kv_heads != 0)
        FAIL("--kv-heads %d must divide --heads %d", p->kv_heads, p->heads);
    if (p->head_dim % 8 != 0 || p->head_dim > 256)
        FAIL("--head-dim %d must be a multiple of 8 and at most 256", p->head_dim);
    if (p->cache == CACHE_PAGED && (!is_pow2(p->block_size) || p->block_size < 8 || p->block_size > 128))
        FAIL("--block-size %d must be a power of two from 8 to 128", p->block_size);
    if (p->splits < 0) FAIL("--splits must be a positive integer (got %d)", p->splits);
    if (p->splits > SPLIT_LIMIT) FAIL("--splits %d is above the limit of %d", p->splits, SPLIT_LIMIT);
    if (p->splits > 0 && p->multi_block == MULTI_BLOCK_OFF)
        FAIL("--splits %d contradicts --multi-block off", p->splits);
    if (!(p->q_scaling > 0.0)) FAIL("--q-scaling must be positive (got %g)", p->q_scaling);
    if (p->layers <= 0) FAIL("--layers must be a positive integer (got %d)", p->layers);
    if (p->tp <= 0) FAIL("--tp must be a positive integer (got %d)", p->tp);
    if (p->heads % p->tp != 0 || p->kv_heads % p->tp != 0)
        FAIL("--tp %d must divide --heads %d and --kv-heads %d (each GPU runs heads/%d and kv-heads/%d)",
             p->tp, p->heads, p->kv_heads, p->tp, p->tp);
    if (p->kv_quant != KV_QUANT_NONE && p->kv_quant != KV_QUANT_FP8 && p->kv_quant != KV_QUANT_INT8)
        FAIL("--kv-dtype: unknown storage (%d)", (int)p->kv_quant);
    if (p->kv_scale != KV_SCALE_TENSOR && p->kv_scale != KV_SCALE_HEAD)
        FAIL("--kv-scale: unknown granularity (%d)", (int)p->kv_scale);
    if (p->step != STEP_ATTEND && p->step != STEP_APPEND)
        FAIL("--step: unknown step (%d)", (int)p->step);
    if (p->rope != ROPE_NEOX && p->rope != ROPE_GPTJ) FAIL("--rope: unknown pairing (%d)", (int)p->rope);
    /* base^(-2i/d) must fall from 1 as i grows, and positions must stay finite */
    if (!(p->rope_base > 1.0) || !isfinite(p->rope_base))
        FAIL("--rope-base must be a finite number above 1 (got %g)", p->rope_base);
    if (!(p->rope_scale > 0.0) || !isfinite(p->rope_scale))
        FAIL("--rope-scale must be a finite positive number (got %g)", p->rope_scale);
    if (ctx_dist_check_batch(p->ctx_dist, p->batch, msg, msg_len) != 0) return -1;
    if (problem_ragged(p) && p->ctx != problem_ctx_max(p))
        FAIL("--ctx %d is not the longest of --ctx-dist %s (%d)", p->ctx, p->ctx_dist->spec, problem_ctx_max(p));
    if (p->step == STEP_APPEND && problem_ragged(p))
        FAIL("--step append takes one context length for every request, not --ctx-dist %s", p->ctx_dist->spec);
    if (p->q_len > 1 && problem_ragged(p))
        FAIL("--q-len %d takes one context length for every request, not --ctx-dist %s", p->q_len,
             p->ctx_dist->spec);
    if (p->scores == SCORES_PEAKED) {
        const struct { const char *opt; double v; } peaks[] = {
            {"--sink-logit", p->sink_logit}, {"--heavy-logit", p->heavy_logit}, {"--recent-logit", p->recent_logit},
        };
        double most = peak_logit_max(p->head_dim, p->q_scaling);
        for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; ++i)
            if (!(peaks[i].v >= 0.0 && peaks[i].v <= most))
                FAIL("%s %g must be from 0 to %.1f (what peaked inputs can express at --head-dim %d)", peaks[i].opt,
                     peaks[i].v, most, p->head_dim);
    }
    if (!(p->share_fraction >= 0.0 && p->share_fraction < 1.0))
        FAIL("--share-fraction %g must be at least 0 and below 1", p->share_fraction);
    if (!p->share_map && share_count(p->heads, p->share_fraction) >= p->heads)
        FAIL("--share-fraction %g shares all %d heads: at least one must be essential", p->share_fraction, p->heads);
    if (!(p->top_p > 0.0 && p->top_p <= 1.0)) FAIL("--top-p %g must be above 0 and at most 1", p->top_p);
    if (p->share_map && p->share_map->heads != p->heads)
        FAIL("--share-map %s: layer %d has %d heads, --heads is %d", p->share_map->path, p->share_map->layer,
             p->share_map->heads, p->heads);
    if ((int64_t)p->ctx + p->gen >= PROBLEM_KEYS_LIMIT)
        FAIL("--ctx %d + --gen %d must stay below 2^30 keys", p->ctx, p->gen);
    if ((int64_t)p->batch * p->beam > INT_MAX)
        FAIL("--batch %d x --beam %d streams must be at most %d", p->batch, p->beam, INT_MAX);
    if ((int64_t)p->batch * p->beam * p->heads > INT_MAX)
        FAIL("--batch x --beam x --heads (%d x %d x %d query rows) must be at most %d", p->batch,
             p->beam, p->heads, INT_MAX);
    if ((int64_t)p->batch * p->beam * p->q_len * p->heads > INT_MAX)
        FAIL("--batch x --beam x --q-len x --heads (%d x %d x %d x %d query rows) must be at most %d",
             p->batch, p->beam, p->q_len, p->heads, INT_MAX);
    return 0;
}

void problem_describe(const problem_t *p, char *buf, size_t len)
{
    char kv[32] = "";
    if (p->kv_quant != KV_QUANT_NONE)
        snprintf(kv, sizeof kv, " kv-%s/%s", dtype_name(problem_kv_dtype(p)), kv_scale_name(p->kv_scale));
    int n = snprintf(buf, len, "B%d W%d h%d g%d d%d ctx%d gen%d %s%s %s", p->batch, p->beam,
                     p->heads, p->kv_heads, p->head_dim, p->ctx, p->gen, dtype_name(p->dtype), kv,
                     cache_name(p->cache));
    if (n < 0 || (size_t)n >= len) return;
    if (p->cache == CACHE_PAGED) n += snprintf(buf + n, len - n, " S%d", p->block_size);
    if (n < 0 || (size_t)n >= len) return;
    if (p->q_len > 1) n += snprintf(buf + n, len - n, " q%d", p->q_len);
    if (n < 0 || (size_t)n >= len) return;
    if (p->indirection) n += snprintf(buf + n, len - n, " indirection");
    if (n < 0 || (size_t)n >= len) return;
    if (problem_ragged(p)) n += snprintf(buf + n, len - n, " ctx-dist=%s", p->ctx_dist->spec);
    if (n < 0 || (size_t)n >= len) return;
    if (p->splits) n += snprintf(buf + n, len - n, " splits%d", p->splits);
    else if (p->multi_block != MULTI_BLOCK_AUTO)
        n += snprintf(buf + n, len - n, " multi-block-%s", multi_block_name(p->multi_block));
    if (n < 0 || (size_t)n >= len || p->step != STEP_APPEND) return;
    n += snprintf(buf + n, len - n, " append-%s", rope_name(p->rope));
    if (n >= 0 && (size_t)n < len && (p->rope_base != 10000.0 || p->rope_scale != 1.0))
        snprintf(buf + n, len - n, " base%g scale%g", p->rope_base, p->rope_scale);
}
