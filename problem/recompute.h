/* Select-Attention's selected step recomputes the K/V of the tokens the filter step
 * kept, in every later layer, from their hidden states: K/V = x W for each kept token's
 * hidden state x (width h * d, the model's) and the layer's stacked K and V projections
 * W. Their logical values, as logical_data.h's: a pure function of the seed and an
 * index, exact in fp16, bf16 and fp32 (k/128 times a power of two), so that the device
 * fills them and the reference regenerates any element. */
#ifndef ATTNBENCH_RECOMPUTE_H
#define ATTNBENCH_RECOMPUTE_H

#include <stdint.h>
#include "hd.h"
#include "kv_layout.h"
#include "logical_data.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TENSOR_HIDDEN = 8, TENSOR_W_KV = 9 };

/* The hidden width: the model's h * d (4096 for the 7B presets). */
HD int recompute_hidden(int heads, int head_dim) { return heads * head_dim; }

/* W's amplitude: the power of two nearest 1/sqrt(hidden), so that a recomputed K/V
 * element, a sum of `hidden` products, keeps the cache's spread (about 1/3). */
HD float recompute_w_amplitude(int hidden)
{
    float a = 1.0f;
    while ((double)a * a * hidden > 2.0) a *= 0.5f;
    return a;
}

/* The token of stream `stream`'s key at position pos, as one index: its request's
 * context token, or a decoded token of the stream the cache reads it from (the stream
 * itself, or through the indirection table another beam of its request). */
HD uint64_t recompute_token(const kv_geometry_t *g, const int32_t *indirection, int streams, int stream, int pos)
{
    const uint64_t L = (uint64_t)g->ctx + g->gen;
    const int request = stream / g->beam;
    if (pos < kv_ctx_of(g, request)) return (uint64_t)request * L + pos;
    return (uint64_t)streams * L + (uint64_t)kv_source_stream(g, indirection, stream, pos) * L + pos;
}

/* Element i of a token's hidden state. */
HD float recompute_x(uint64_t seed, int hidden, uint64_t token, int i)
{
    return logical_value(seed, TENSOR_HIDDEN, token * (uint64_t)hidden + i, 1.0f);
}

/* W[which][head][i][x]: K (which 0) or V (1) of kv head `head`, row i of the hidden
 * width, column x of the head dimension: stored [2 g][hidden][d], one row-major
 * hidden x d matrix for each (which, head). */
HD float recompute_w(uint64_t seed, int kv_heads, int hidden, int d, int which, int head, int i, int x)
{
    const uint64_t at = (((uint64_t)which * kv_heads + head) * hidden + i) * d + x;
    return logical_value(seed, TENSOR_W_KV, at, recompute_w_amplitude(hidden));
}

#ifdef __cplusplus
}
#endif
#endif
