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

enum { TENSOR_Q = 1, TENSOR_K_CTX = 2, TENSOR_V_CTX = 3, TENSOR_K_DEC = 4, TENSOR_V_DEC = 5 };

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

HD float logical_value(uint64_t seed, int tensor, uint64_t index, float amplitude)
{
    uint64_t h = splitmix64(seed ^ ((uint64_t)tensor << 56) ^ splitmix64(index));
    int k = (int)(h % 255u) - 127;
    return (float)k * (amplitude / 128.0f);
}

/* Logical shapes: q [B*W, n, h, d] (n = q_len) as [B*W*n, h, d], indexed by the query
 * token query = stream * n + j; context K/V [B, g, m_c, d]; decoded K/V [B*W, g, m_d, d].
 * With n = 1 the query index is the stream. */
HD float logical_q(uint64_t seed, int heads, int d, int query, int head, int x)
{
    return logical_value(seed, TENSOR_Q, ((uint64_t)query * heads + head) * d + x, Q_AMPLITUDE);
}

/* K (which = 0) or V (which = 1) of request `request`, kv head `head`, context position pos. */
HD float logical_ctx_kv(uint64_t seed, int kv_heads, int ctx, int d, int request, int which,
                        int head, int pos, int x)
{
    uint64_t i = (((uint64_t)request * kv_heads + head) * ctx + pos) * d + x;
    return logical_value(seed, TENSOR_K_CTX + which, i, KV_AMPLITUDE);
}

/* K or V written by stream `stream` at decoded position pos (0 = first decoded token). */
HD float logical_dec_kv(uint64_t seed, int kv_heads, int gen, int d, int stream, int which,
                        int head, int pos, int x)
{
    uint64_t i = (((uint64_t)stream * kv_heads + head) * gen + pos) * d + x;
    return logical_value(seed, TENSOR_K_DEC + which, i, KV_AMPLITUDE);
}

#ifdef __cplusplus
}
#endif
#endif
