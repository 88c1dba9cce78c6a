/* The step of --step append (docs/APPEND.md), shared by the device kernel that performs
 * it, the fill of its input and the CPU reference, so that all of them agree on what it
 * reads and writes.
 *
 * Input: the current token's packed QKV, [B*W, (h + 2g) * d] in --dtype: each stream's q
 * (h heads), then k (g heads), then v (g heads), before RoPE. Its logical values are the
 * query of logical_q and the K/V the stream decoded at the current position
 * (kv_dec_logical, an 8-bit cache's head ranges included): exact in every dtype.
 *
 * The step rotates q and k by the current position, pos = ctx + gen - 1 (gen counts the
 * current token), divided by --rope-scale; pair i of a head turns by the angle
 * pos / scale * base^(-2i/d), whose cos and sin it reads from a table of floats. It writes the rotated q, rounded to --dtype, where the
 * attention reads its query, and the rotated k and the v into the cache's slot of the
 * current position: rounded to the cache's dtype, or an 8-bit cache's codes at its
 * calibrated scales (kv_quant.h). The scales are the data's, set before the step, so a
 * rotated k beyond the range saturates, as in a serving engine with calibrated scales.
 * Then the step attends as --step attend does. */
#ifndef ATTNBENCH_APPEND_H
#define ATTNBENCH_APPEND_H

#include <math.h>
#include <stdint.h>
#include "hd.h"
#include "kv_fill.h"
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The current token's position: the keys before it. */
HD int append_position(int ctx, int gen) { return ctx + gen - 1; }

/* The elements of a head's rotated pair i (0 <= i < d/2): GPT-NeoX's (i, i + d/2),
 * GPT-J's (2i, 2i + 1). */
HD void rope_pair(int style, int d, int i, int *x0, int *x1)
{
    *x0 = style == ROPE_GPTJ ? 2 * i : i;
    *x1 = style == ROPE_GPTJ ? 2 * i + 1 : i + d / 2;
}

/* The angle of pair i at position pos, in double: in float, pos times the frequency
 * would lose the angle's fraction at long contexts (an error near pos * 2^-24 radians). */
HD double rope_angle(double base, double scale, int d, int pos, int i)
{
    return ((double)pos / scale) * pow(base, -2.0 * i / d);
}

/* cos and sin of pair i's angle at position pos, computed in double and rounded to float:
 * entry i of the table [d/2][2] the step's kernel reads, built once outside timing, as
 * engines precompute their cos/sin cache. */
HD void rope_cos_sin(double base, double scale, int d, int pos, int i, float *c, float *s)
{
    const double t = rope_angle(base, scale, d, pos, i);
    *c = (float)cos(t);
    *s = (float)sin(t);
}

/* Pair (a, b) turned by (c, s): (a c - b s, a s + b c). Each product of two floats is
 * exact in double, so the result is the same on the host and on the GPU, contracted
 * into an FMA or not. */
HD void rope_turn(float a, float b, float c, float s, double *y0, double *y1)
{
    *y0 = (double)a * c - (double)b * s;
    *y1 = (double)a * s + (double)b * c;
}

/* Pair (a, b) of a head turned by pair i's angle at position pos (rope_cos_sin, then
 * rope_turn): what the step computes. */
HD void rope_rotate(double base, double scale, int d, int pos, int i, float a, float b, double *y0,
                    double *y1)
{
    float c, s;
    rope_cos_sin(base, scale, d, pos, i, &c, &s);
    rope_turn(a, b, c, s, y0, y1);
}

/* v rounded to the nearest value of dtype t, ties to even, as __float2half_rn and
 * __float2bfloat16_rn round; fp16 beyond its range becomes infinite. fp32 and the 8-bit
 * kinds (stored through kv_store): v itself. */
HD float dtype_round(float v, int t)
{
    if ((t != DTYPE_FP16 && t != DTYPE_BF16) || v != v || v == 0.0f || isinf(v)) return v;
    int e;
    (void)frexpf(v, &e);                                  /* |v| in [2^(e-1), 2^e) */
    int quantum = e - (t == DTYPE_FP16 ? 11 : 8);         /* the last significant bit's */
    if (t == DTYPE_FP16 && quantum < -24) quantum = -24;  /* fp16's subnormals */
    if (t == DTYPE_BF16 && quantum < -133) quantum = -133;
    const float r = ldexpf(rintf(ldexpf(v, -quantum)), quantum);
    return t == DTYPE_FP16 && fabsf(r) > 65504.0f ? copysignf(INFINITY, v) : r;
}

/* One thread's work in the step's kernel: pair t of its grid, t from 0 to
 * B*W * (h + 2g) * d/2 (each head row of the packed QKV, then its pairs), tells the row it
 * reads and where its two elements go. */
typedef struct append_pair {
    int64_t src;       /* the packed QKV head row (element offset) */
    int x0, x1;        /* the pair's elements in its row */
    int i;             /* the pair's index: its RoPE frequency */
    int rotate;        /* q and k turn by RoPE; v is copied */
    int to_cache;      /* 0: a query row of [B*W, h, d]; 1: the cache's current slot */
    int which, head;   /* in the cache: K (0) or V (1), and the kv head (its scale) */
    int64_t dst;       /* the destination row (element offset in the query buffer or the
                          cache buffer of g's layout that holds the current position) */
} append_pair_t;

/* a / b (a >= 0, b > 0) in 32 bits where a fits: the GPU's 64-bit division is a long
 * instruction sequence, and every thread of the step divides twice. */
HD int64_t append_div(int64_t a, int b)
{
    return a <= 0x7fffffff ? (int64_t)((uint32_t)a / (uint32_t)b) : a / b;
}

HD append_pair_t append_pair_at(const kv_geometry_t *g, const int32_t *block_table, int heads, int rope,
                                int64_t t)
{
    append_pair_t a;
    const int d = g->head_dim, rows = heads + 2 * g->kv_heads;
    const int64_t r = append_div(t, d / 2), stream64 = append_div(r, rows);
    a.i = (int)(t - r * (d / 2));
    const int row = (int)(r - stream64 * rows), stream = (int)stream64;
    a.src = r * d;
    rope_pair(rope, d, a.i, &a.x0, &a.x1);
    a.which = row >= heads + g->kv_heads;
    a.rotate = !a.which;
    a.to_cache = row >= heads;
    a.head = a.to_cache ? row - heads - a.which * g->kv_heads : row;
    if (!a.to_cache) {
        a.dst = ((int64_t)stream * heads + row) * d;
    } else {
        /* the current position is always the stream's own slot (no indirection) */
        int in_ctx;
        a.dst = kv_row_offset(g, block_table, NULL, stream, a.which, a.head,
                              append_position(g->ctx, g->gen), &in_ctx);
    }
    return a;
}

/* Column col of stream `stream`'s packed QKV row ((h + 2g) * d columns), before RoPE. */
HD float append_qkv_logical(const kv_geometry_t *g, uint64_t seed, int heads, int stream, int col)
{
    const int d = g->head_dim, x = col % d;
    int row = col / d;
    if (row < heads) return logical_q(seed, heads, d, stream, row, x);
    row -= heads;
    return kv_dec_logical(g, seed, stream, row / g->kv_heads, row % g->kv_heads, g->gen - 1, x);
}

/* What the cache of geometry g, stored as kv_dtype, holds after the step for value v of
 * K (rotated) or V (which) of kv head `head`: an 8-bit cache's code's value in units of
 * its scale (kv_store), else v rounded to kv_dtype. */
HD float append_store(const kv_geometry_t *g, int kv_dtype, float v, int which, int head)
{
    return g->kv_quant ? kv_store(g, v, which, head) : dtype_round(v, kv_dtype);
}

#ifdef __cplusplus
}
#endif
#endif
