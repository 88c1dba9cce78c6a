/* The logical inputs of one problem as a pure function of a seed and an index, so
 * that the device fills any layout at memory speed and the CPU reference
 * regenerates any element without copying the cache back.
 *
 * Every value is k/128 * amplitude with k an integer in [-127, 127] and the
 * amplitude a power of two: exactly representable in fp16, bf16 and fp32, so the
 * device and the reference see identical inputs whatever the dtype. */
#ifndef ATTNBENCH_LOGICAL_DATA_H
#define ATTNBENCH_LOGICAL_DATA_H

#include <stdint.h>
#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TENSOR_Q = 1, TENSOR_K_CTX = 2, TENSOR_V_CTX = 3, TENSOR_K_DEC = 4, TENSOR_V_DEC = 5,
       TENSOR_PEAK_DIR = 6, TENSOR_HEAVY = 7 };

/* Queries are scaled up so that logits spread over a few units: a peaked softmax
 * that tells a wrong key weighting from a right one. */
#define Q_AMPLITUDE 8.0f
#define KV_AMPLITUDE 1.0f

HD uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* h % 255 by folding, since 2^32, 2^16 and 2^8 are all 1 modulo 255: shifts and adds,
 * which a compiler vectorises where a 64-bit division would stop it (the CPU reference
 * generates most of its inputs this way). */
HD uint32_t logical_mod255(uint64_t h)
{
    uint64_t t = (h & 0xffffffffu) + (h >> 32);
    t = (t & 0xffffu) + (t >> 16);
    t = (t & 0xffu) + (t >> 8);
    t = (t & 0xffu) + (t >> 8);
    return (uint32_t)(t >= 255 ? t - 255 : t);
}

HD float logical_value(uint64_t seed, int tensor, uint64_t index, float amplitude)
{
    uint64_t h = splitmix64(seed ^ ((uint64_t)tensor << 56) ^ splitmix64(index));
    int k = (int)logical_mod255(h) - 127;
    return (float)k * (amplitude / 128.0f);
}

/* Logical shapes: q [B*W, n, h, d] (n = q_len) as [B*W*n, h, d], indexed by the query
 * token query = stream * n + j; context K/V [B, g, m_c, d]; decoded K/V [B*W, g, m_d, d].
 * With n = 1 the query index is the stream. */
HD float logical_q(uint64_t seed, int heads, int d, int query, int head, int x)
{
    return logical_value(seed, TENSOR_Q, ((uint64_t)query * heads + head) * d + x, Q_AMPLITUDE);
}

/* The index of element 0 of a context K/V row (request, kv head, position) of its tensor,
 * and of a decoded one (stream, kv head, decoded position); element x is x further. */
HD uint64_t logical_ctx_kv_index(int kv_heads, int ctx, int d, int request, int head, int pos)
{
    return (((uint64_t)request * kv_heads + head) * ctx + pos) * d;
}
HD uint64_t logical_dec_kv_index(int kv_heads, int gen, int d, int stream, int head, int pos)
{
    return (((uint64_t)stream * kv_heads + head) * gen + pos) * d;
}

/* K (which = 0) or V (which = 1) of request `request`, kv head `head`, context position pos. */
HD float logical_ctx_kv(uint64_t seed, int kv_heads, int ctx, int d, int request, int which,
                        int head, int pos, int x)
{
    uint64_t i = logical_ctx_kv_index(kv_heads, ctx, d, request, head, pos) + x;
    return logical_value(seed, TENSOR_K_CTX + which, i, KV_AMPLITUDE);
}

/* K or V written by stream `stream` at decoded position pos (0 = first decoded token). */
HD float logical_dec_kv(uint64_t seed, int kv_heads, int gen, int d, int stream, int which,
                        int head, int pos, int x)
{
    uint64_t i = logical_dec_kv_index(kv_heads, gen, d, stream, head, pos) + x;
    return logical_value(seed, TENSOR_K_DEC + which, i, KV_AMPLITUDE);
}

/* --scores peaked: attention that concentrates as a trained model's does. Each kv head
 * has a direction u of +-1 elements; every query of its group leans along u (64 of its
 * 127 steps), and the keys of three classes of positions do too, by a code b of 127
 * steps: the first PEAK_SINKS positions (attention sinks), context positions a hash
 * picks, one in PEAK_HEAVY_EVERY (heavy hitters, the same in every head and request),
 * and the last PEAK_RECENT positions (the recent window). A key of code b adds about
 * d * b / 32 * scale to its logit: b = logit * 32 * q_scaling / sqrt(d). Around that,
 * every key varies by at most +-PEAK_FLAT_SPAN steps and every query by +-PEAK_Q_SPAN, so
 * that the many keys no class favours together weigh less than the few it does, and the
 * heads of a layer, which differ by these variations only, attend alike. The positions
 * are shared by all heads, as the paper observes of trained models' heads, so that
 * heads' weights are alike and top-p selection keeps few tokens. Values stay k/128 *
 * amplitude with |k| <= 127: exact in every dtype. */
#define PEAK_SINKS 4
#define PEAK_RECENT 64
#define PEAK_HEAVY_EVERY 256
#define PEAK_CODE_MAX 120
#define PEAK_FLAT_SPAN 32
#define PEAK_Q_SPAN 15

HD int logical_peak_dir(uint64_t seed, int kv_head, int x)
{
    return (splitmix64(seed ^ ((uint64_t)TENSOR_PEAK_DIR << 56) ^ splitmix64(((uint64_t)kv_head << 20) + x)) & 1)
               ? 1 : -1;
}

HD int logical_heavy_hitter(uint64_t seed, int pos)
{
    return splitmix64(seed ^ ((uint64_t)TENSOR_HEAVY << 56) ^ splitmix64((uint64_t)pos)) % PEAK_HEAVY_EVERY == 0;
}

/* A value b * u + r of 127 steps, r uniform in [-span, span] from the hash, span at most
 * 127 - b. */
HD float logical_leaning(uint64_t seed, int tensor, uint64_t index, int b, int u, int span, float amplitude)
{
    uint64_t h = splitmix64(seed ^ ((uint64_t)tensor << 56) ^ splitmix64(index));
    if (span > 127 - b) span = 127 - b;
    int k = b * u + (int)(h % (uint64_t)(2 * span + 1)) - span;
    return (float)k * (amplitude / 128.0f);
}

/* The query of --scores peaked: logical_q's element index, leaning along its kv head's u. */
HD float logical_q_peaked(uint64_t seed, int heads, int kv_heads, int d, int stream, int head, int x)
{
    uint64_t i = ((uint64_t)stream * heads + head) * d + x;
    return logical_leaning(seed, TENSOR_Q, i, 64, logical_peak_dir(seed, head / (heads / kv_heads), x),
                           PEAK_Q_SPAN, Q_AMPLITUDE);
}

/* K of --scores peaked, of code b (0: a key no class favours), at a context or decoded position, at the element index of
 * logical_ctx_kv / logical_dec_kv. */
HD float logical_ctx_k_peaked(uint64_t seed, int kv_heads, int ctx, int d, int request, int head, int pos,
                              int x, int b)
{
    uint64_t i = (((uint64_t)request * kv_heads + head) * ctx + pos) * d + x;
    return logical_leaning(seed, TENSOR_K_CTX, i, b, logical_peak_dir(seed, head, x), PEAK_FLAT_SPAN, KV_AMPLITUDE);
}
HD float logical_dec_k_peaked(uint64_t seed, int kv_heads, int gen, int d, int stream, int head, int pos,
                              int x, int b)
{
    uint64_t i = (((uint64_t)stream * kv_heads + head) * gen + pos) * d + x;
    return logical_leaning(seed, TENSOR_K_DEC, i, b, logical_peak_dir(seed, head, x), PEAK_FLAT_SPAN, KV_AMPLITUDE);
}

#ifdef __cplusplus
}
#endif
#endif
