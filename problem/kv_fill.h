/* What each element of each layout's buffers holds: the logical data of
 * logical_data.h placed by the address arithmetic of kv_layout.h, and in an 8-bit cache
 * quantised (kv_quant.h: the *_value functions give the code's value, in units of the
 * scale). The device fill kernels and the host materialisation (CPU tests) both call
 * these. */
#ifndef ATTNBENCH_KV_FILL_H
#define ATTNBENCH_KV_FILL_H

#include <stdint.h>
#include <string.h>
#include "hd.h"
#include "kv_layout.h"
#include "logical_data.h"
#include "kv_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

HD float quiet_nan(void)
{
    uint32_t bits = 0x7fc00000u;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The peaked code of the keys at logical position pos (0: a flat key). */
HD int kv_peak_code(const kv_geometry_t *g, uint64_t seed, int pos)
{
    if (!g->peaked) return 0;
    if (pos < PEAK_SINKS) return g->peak_sink;
    if (pos >= g->ctx + g->gen - PEAK_RECENT) return g->peak_recent;
    if (pos < g->ctx && logical_heavy_hitter(seed, pos)) return g->peak_heavy;
    return 0;
}

/* The logical context K/V of a request and the decoded K/V of a stream (logical_data.h),
 * in an 8-bit cache at the range of their tensor and kv head (kv_quant_amplitude). */
HD float kv_ctx_logical(const kv_geometry_t *g, uint64_t seed, int request, int which, int head,
                        int pos, int x)
{
    int b = which == 0 ? kv_peak_code(g, seed, pos) : 0;
    float v = which == 0 && g->peaked ? logical_ctx_k_peaked(seed, g->kv_heads, g->ctx, g->head_dim, request, head, pos, x, b)
                : logical_ctx_kv(seed, g->kv_heads, g->ctx, g->head_dim, request, which, head, pos, x);
    return g->kv_quant ? v * kv_quant_amplitude(which, head) : v;
}
HD float kv_dec_logical(const kv_geometry_t *g, uint64_t seed, int stream, int which, int head,
                        int pos, int x)
{
    int b = which == 0 ? kv_peak_code(g, seed, g->ctx + pos) : 0;
    float v = which == 0 && g->peaked ? logical_dec_k_peaked(seed, g->kv_heads, g->gen, g->head_dim, stream, head, pos, x, b)
                : logical_dec_kv(seed, g->kv_heads, g->gen, g->head_dim, stream, which, head, pos, x);
    return g->kv_quant ? v * kv_quant_amplitude(which, head) : v;
}

/* Query element x of (stream, head): logical_q, or with peaked scores logical_q_peaked. */
HD float kv_query(uint64_t seed, int peaked, int heads, int kv_heads, int d, int stream, int head, int x)
{
    return peaked ? logical_q_peaked(seed, heads, kv_heads, d, stream, head, x)
                  : logical_q(seed, heads, d, stream, head, x);
}

/* K/V (which) of stream `stream` at logical position pos, kv head `head`, element x:
 * the context of its request for pos below the request's context length, else what the
 * stream itself decoded. */
HD float kv_logical(const kv_geometry_t *g, uint64_t seed, int stream, int which, int head,
                    int pos, int x)
{
    const int ctx = kv_ctx_of(g, stream / g->beam);
    if (pos < ctx) return kv_ctx_logical(g, seed, stream / g->beam, which, head, pos, x);
    return kv_dec_logical(g, seed, stream, which, head, pos - ctx, x);
}

/* What the cache holds for that element (kv_store): the logical value, or its code's. */
HD float kv_stored(const kv_geometry_t *g, uint64_t seed, int stream, int which, int head,
                   int pos, int x)
{
    return kv_store(g, kv_logical(g, seed, stream, which, head, pos, x), which, head);
}

/* Element e of the contiguous cache [B*W, 2, g, L, d]. A stream of a ragged batch uses
 * its first kv_keys_of positions; the padding after them holds NaN, so that a kernel
 * reading past its stream's keys cannot go unnoticed. */
HD float kv_contiguous_value(const kv_geometry_t *g, uint64_t seed, int64_t e)
{
    int64_t L = (int64_t)g->ctx + g->gen;
    int x = (int)(e % g->head_dim); e /= g->head_dim;
    int pos = (int)(e % L); e /= L;
    int head = (int)(e % g->kv_heads); e /= g->kv_heads;
    int which = (int)(e % 2); e /= 2;
    if (pos >= kv_keys_of(g, (int)e)) return quiet_nan();
    return kv_stored(g, seed, (int)e, which, head, pos, x);
}

/* Element e of the paged pool [blocks, 2, g, S, d]. owner[b] is the stream whose
 * tokens block b holds (for shared context blocks, any stream of the request),
 * first_pos[b] the logical position of its first slot. Slots past the end of a
 * sequence hold NaN, so that a kernel reading beyond L cannot go unnoticed. */
HD float kv_paged_value(const kv_geometry_t *g, uint64_t seed, const int32_t *owner,
                        const int32_t *first_pos, int64_t e)
{
    int x = (int)(e % g->head_dim); e /= g->head_dim;
    int slot = (int)(e % g->block_size); e /= g->block_size;
    int head = (int)(e % g->kv_heads); e /= g->kv_heads;
    int which = (int)(e % 2); e /= 2;
    int block = (int)e;
    int pos = first_pos[block] + slot;
    if (owner[block] < 0 || pos >= kv_keys_of(g, owner[block])) return quiet_nan();
    return kv_stored(g, seed, owner[block], which, head, pos, x);
}

/* Element e of the bifurcated context [B, 2, g, m_c, d]. */
HD float kv_ctx_value(const kv_geometry_t *g, uint64_t seed, int64_t e)
{
    int x = (int)(e % g->head_dim); e /= g->head_dim;
    int pos = (int)(e % g->ctx); e /= g->ctx;
    int head = (int)(e % g->kv_heads); e /= g->kv_heads;
    int which = (int)(e % 2); e /= 2;
    if (pos >= kv_ctx_of(g, (int)e)) return quiet_nan(); /* past a ragged request's context */
    return kv_store(g, kv_ctx_logical(g, seed, (int)e, which, head, pos, x), which, head);
}

/* Element e of the bifurcated decoded part [B*W, 2, g, m_d, d]. */
HD float kv_dec_value(const kv_geometry_t *g, uint64_t seed, int64_t e)
{
    int x = (int)(e % g->head_dim); e /= g->head_dim;
    int pos = (int)(e % g->gen); e /= g->gen;
    int head = (int)(e % g->kv_heads); e /= g->kv_heads;
    int which = (int)(e % 2); e /= 2;
    return kv_store(g, kv_dec_logical(g, seed, (int)e, which, head, pos, x), which, head);
}

#ifdef __cplusplus
}
#endif
#endif
