/* The problem of SPEC §2: one decode step of one attention layer. */
#ifndef ATTNBENCH_PROBLEM_H
#define ATTNBENCH_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include "query_rows.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FP8 (e4m3) and INT8 store an 8-bit KV cache only (--kv-dtype); --dtype, the queries'
 * and the output's, is one of the first three. */
typedef enum { DTYPE_FP16, DTYPE_BF16, DTYPE_FP32, DTYPE_FP8, DTYPE_INT8 } dtype_t;
typedef enum { CACHE_CONTIGUOUS, CACHE_PAGED } cache_kind_t;
typedef enum { MULTI_BLOCK_AUTO, MULTI_BLOCK_OFF, MULTI_BLOCK_ON } multi_block_t;
typedef enum { ATTN_MHA, ATTN_GQA, ATTN_MQA } attn_type_t;
/* What the KV cache holds: values in --dtype, or 8-bit codes (problem/kv_quant.h) that
 * the kernel dequantises with one scale per tensor or per kv head, for K and for V. */
typedef enum { KV_QUANT_NONE, KV_QUANT_FP8, KV_QUANT_INT8 } kv_quant_t;
typedef enum { KV_SCALE_TENSOR, KV_SCALE_HEAD } kv_scale_t;
/* What one step does (--step): attend to the cache as it is, or first take the current
 * token's packed QKV, rotate q and k (RoPE), store k and v in the cache's slot of the
 * current position and then attend (problem/append.h). */
typedef enum { STEP_ATTEND, STEP_APPEND } step_kind_t;
/* RoPE's pairing of a head's elements (--rope): GPT-NeoX's halves (x, x + d/2) or
 * GPT-J's neighbours (2i, 2i + 1). */
typedef enum { ROPE_NEOX, ROPE_GPTJ } rope_t;
/* --scores: the logical inputs' attention, flat (random q and K), or peaked as a trained
 * model's is (logical_data.h: attention sinks, heavy hitters, a recent window). */
typedef enum { SCORES_FLAT, SCORES_PEAKED } scores_t;
struct share_map;

/* ctx + gen stays below this many keys. */
#define PROBLEM_KEYS_LIMIT (1 << 30)

/* The most splits --splits accepts. */
#define SPLIT_LIMIT 1024

/* The most query tokens per stream --q-len accepts (speculative decoding). */
#define Q_LEN_LIMIT 16
struct ctx_dist;

typedef struct problem {
    int batch;            /* B: independent requests */
    int beam;             /* W: streams per request sharing its context */
    int heads;            /* h: query heads */
    int kv_heads;         /* g: key/value heads, divides h */
    int head_dim;         /* d */
    int ctx;              /* m_c: context length; with ragged lengths the longest */
    int gen;              /* m_d: decoded tokens per stream, current one included */
    int q_len;            /* n: query tokens per stream (--q-len), its last n decoded tokens;
                             token j (0-based) at position L-n+j attends to keys [0, L-n+j] */
    dtype_t dtype;        /* queries and output */
    kv_quant_t kv_quant;  /* the KV cache's storage: NONE = in dtype (--kv-dtype) */
    kv_scale_t kv_scale;  /* an 8-bit cache's scale granularity (--kv-scale) */
    cache_kind_t cache;
    int block_size;       /* S, paged cache only */
    bool indirection;     /* beam search: decoded K/V read through cache_indirection */
    multi_block_t multi_block;
    int splits;           /* 0: planner decides; > 0: forced split count */
    double q_scaling;     /* scale = 1 / (q_scaling * sqrt(d)) */
    int layers;           /* layer count of the model preset (1 without one) */
    int tp;               /* --tp: the heads split over this many GPUs (1: one GPU); a
                             kernel runs one share (tp_share), whose tp is 1 */
    const char *model;    /* preset name, NULL without one */
    step_kind_t step;          /* --step: attend only, or append the current token first */
    rope_t rope;          /* --step append: RoPE's pairing */
    double rope_base;     /* --rope-base: the frequencies are base^(-2i/d) */
    double rope_scale;    /* --rope-scale: linear position scaling, positions divided by it */
    const struct ctx_dist *ctx_dist; /* --ctx-dist: each request's own context length
                                        (problem/ctx_dist.h); NULL: every request has ctx */
    scores_t scores;      /* --scores */
    double sink_logit, heavy_logit, recent_logit;   /* peaked: each class's logit boost */
    /* Share-Attention (the `share` kernel; exact kernels ignore them): the fraction of
     * heads that reuse an essential head's weights (a synthetic map, share_map.h), or the
     * --share-map layer, which then decides. */
    double share_fraction;
    const struct share_map *share_map;
    /* Select-Attention (the `select-filter` kernel): the top-p of the keys' head-averaged
     * weights that each stream keeps (problem/top_p.h), 0 < top_p <= 1. */
    double top_p;
} problem_t;

/* The defaults of every option: the 7B model's attention, one request, one stream. */
problem_t problem_default(void);

static inline int problem_streams(const problem_t *p) { return p->batch * p->beam; }
static inline int problem_group(const problem_t *p) { return p->heads / p->kv_heads; }
/* Query tokens of the step: streams x q_len. Q and O are [streams, q_len, h, d], so query
 * token j of stream s is row s * q_len + j of [queries, h, d] (a "query index"). */
static inline int problem_queries(const problem_t *p) { return problem_streams(p) * p->q_len; }
/* Query rows that read one kv head of one stream: q_len x p. */
static inline int problem_stream_rows(const problem_t *p) { return p->q_len * problem_group(p); }
static inline int problem_keys(const problem_t *p) { return p->ctx + p->gen; }
/* Keys query token j of a stream attends to: L - q_len + 1 + j (causal among the q_len;
 * query_rows.h's query_key_end, for query rows). */
static inline int problem_keys_of_token(const problem_t *p, int j) { return query_key_end(problem_keys(p), p->q_len, j); }
static inline double problem_scale(const problem_t *p)
{
    return 1.0 / (p->q_scaling * sqrt((double)p->head_dim));
}
attn_type_t problem_attn_type(const problem_t *p);

/* Ragged batches (--ctx-dist): whether requests differ in context length, request r's
 * length (ctx where they do not), the sum and the longest over the batch. */
int problem_ragged(const problem_t *p);
int problem_ctx_len(const problem_t *p, int request);
int64_t problem_ctx_total(const problem_t *p);
int problem_ctx_max(const problem_t *p);
/* Gives p the distribution d (NULL or fixed: every request has p->ctx) and sets p->ctx
 * to its longest length, which sizes every layout. */
void problem_set_ctx_dist(problem_t *p, const struct ctx_dist *d);
/* Each request's context length, malloc'd [B], into *out; *out NULL where they do not
 * differ. 0, or -1 when memory runs out. */
int problem_ctx_lens(const problem_t *p, int32_t **out);
/* The dtype the KV cache is stored in: dtype, DTYPE_FP8 or DTYPE_INT8. */
dtype_t problem_kv_dtype(const problem_t *p);

size_t dtype_size(dtype_t t);
const char *dtype_name(dtype_t t);
const char *cache_name(cache_kind_t c);
const char *multi_block_name(multi_block_t m);
const char *attn_type_name(attn_type_t a);
const char *kv_scale_name(kv_scale_t s);
const char *step_name(step_kind_t s);
const char *rope_name(rope_t r);
const char *scores_name(scores_t s);
int scores_parse(const char *s, scores_t *out);
/* The most a peaked class's logit boost may be at head dimension d and q_scaling: what
 * the logical data can express (logical_data.h PEAK_CODE_MAX). */
double peak_logit_max(int head_dim, double q_scaling);
/* The key code (logical_data.h) of a peaked class of logit boost `logit`; 0 for flat scores. */
int problem_peak_code(const problem_t *p, double logit);
/* Name -> enum; return 0 on success, -1 for an unknown name. dtype_parse takes the
 * three query dtypes, kv_dtype_parse those and the two 8-bit ones. */
int dtype_parse(const char *s, dtype_t *out);
int kv_dtype_parse(const char *s, dtype_t *out);
int kv_scale_parse(const char *s, kv_scale_t *out);
int cache_parse(const char *s, cache_kind_t *out);
int multi_block_parse(const char *s, multi_block_t *out);
int step_parse(const char *s, step_kind_t *out);
int rope_parse(const char *s, rope_t *out);

/* Checks the rules of SPEC §5. Returns 0 when valid; otherwise writes one line
 * naming the option and the rule it breaks into msg and returns -1. */
int problem_validate(const problem_t *p, char *msg, size_t msg_len);

/* A short readable name ("B1 W16 h32 g8 d128 ctx8192 gen128 fp16 contiguous"; an 8-bit
 * cache adds its storage and scales after the dtype: "fp16 kv-fp8/head"; --step append
 * adds "append-neox" and, where they are not the defaults, the RoPE base and scale). */
void problem_describe(const problem_t *p, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
