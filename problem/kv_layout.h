/* Address arithmetic of the KV-cache layouts of SPEC §3, shared by the device
 * fill, the kernels, the host layout builders and the CPU reference, so that all
 * of them agree on where logical element (stream, kv head, position) lives. */
#ifndef ATTNBENCH_KV_LAYOUT_H
#define ATTNBENCH_KV_LAYOUT_H

#include <stdint.h>
#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { LAYOUT_CONTIGUOUS, LAYOUT_PAGED, LAYOUT_BIFURCATED } kv_layout_t;

/* Everything needed to find a K or V row of d elements; element offsets, not bytes. */
typedef struct kv_geometry {
    int layout;                 /* kv_layout_t */
    int beam;                   /* W */
    int kv_heads;               /* g */
    int head_dim;               /* d */
    int ctx;                    /* m_c; with ragged lengths the longest, which sizes the layouts */
    int gen;                    /* m_d */
    int block_size;             /* S (paged) */
    int block_shift;            /* log2 S (paged) */
    int max_blocks_per_seq;     /* paged block table row length */
    int kv_quant;               /* kv_quant_t: an 8-bit cache holds codes (kv_quant.h) */
    int kv_scale_per_head;      /* its scales: one per kv head (1) or per tensor (0) */
    const int32_t *ctx_lens;    /* ragged batches: each request's context length [B], in the
                                   memory of whoever addresses through this geometry (host or
                                   device); NULL: every request's is ctx */
    /* --scores peaked (peaked 1): the code of the keys of sinks, heavy hitters and the
     * recent window (logical_data.h); all 0 for flat scores */
    int peaked, peak_sink, peak_heavy, peak_recent;
} kv_geometry_t;

/* Request r's context length, and the keys of a stream (its request's context and the
 * stream's decoded tokens). Positions from there to ctx + gen are unused padding. */
HD int kv_ctx_of(const kv_geometry_t *g, int request) { return g->ctx_lens ? g->ctx_lens[request] : g->ctx; }
HD int kv_keys_of(const kv_geometry_t *g, int stream) { return kv_ctx_of(g, stream / g->beam) + g->gen; }

/* which: 0 = K, 1 = V. */

/* contiguous [B*W, 2, g, L, d] */
HD int64_t kv_contiguous_offset(const kv_geometry_t *g, int stream, int which, int head, int pos)
{
    int64_t L = (int64_t)g->ctx + g->gen;
    return ((((int64_t)stream * 2 + which) * g->kv_heads + head) * L + pos) * g->head_dim;
}

/* paged pool [num_blocks, 2, g, S, d] */
HD int64_t kv_paged_offset(const kv_geometry_t *g, int block, int which, int head, int pos_in_block)
{
    return ((((int64_t)block * 2 + which) * g->kv_heads + head) * g->block_size + pos_in_block)
           * g->head_dim;
}

/* bifurcated context [B, 2, g, m_c, d] */
HD int64_t kv_ctx_offset(const kv_geometry_t *g, int request, int which, int head, int pos)
{
    return ((((int64_t)request * 2 + which) * g->kv_heads + head) * g->ctx + pos) * g->head_dim;
}

/* bifurcated decoded [B*W, 2, g, m_d, d]; pos counts from the first decoded token */
HD int64_t kv_dec_offset(const kv_geometry_t *g, int stream, int which, int head, int pos)
{
    return ((((int64_t)stream * 2 + which) * g->kv_heads + head) * g->gen + pos) * g->head_dim;
}

/* The stream whose K/V stream `stream` reads at position pos: itself for context
 * positions and without indirection, else cache_indirection[b][w][pos] of its request.
 * indirection is [B, W, L]. */
HD int kv_source_stream(const kv_geometry_t *g, const int32_t *indirection, int stream, int pos)
{
    if (!indirection || pos < kv_ctx_of(g, stream / g->beam)) return stream;
    int64_t L = (int64_t)g->ctx + g->gen;
    int request = stream / g->beam;
    return request * g->beam + indirection[(int64_t)stream * L + pos];
}

/* Offset of the row (stream, which, head, pos) in whichever buffer holds it.
 * For LAYOUT_BIFURCATED *in_ctx tells which of the two tensors it is in. */
HD int64_t kv_row_offset(const kv_geometry_t *g, const int32_t *block_table,
                         const int32_t *indirection, int stream, int which, int head, int pos,
                         int *in_ctx)
{
    int src = kv_source_stream(g, indirection, stream, pos);
    *in_ctx = 0;
    if (g->layout == LAYOUT_PAGED) {
        int block = block_table[(int64_t)src * g->max_blocks_per_seq + (pos >> g->block_shift)];
        return kv_paged_offset(g, block, which, head, pos & (g->block_size - 1));
    }
    if (g->layout == LAYOUT_BIFURCATED) {
        const int ctx = kv_ctx_of(g, src / g->beam);
        if (pos < ctx) { *in_ctx = 1; return kv_ctx_offset(g, src / g->beam, which, head, pos); }
        return kv_dec_offset(g, src, which, head, pos - ctx);
    }
    return kv_contiguous_offset(g, src, which, head, pos);
}

/* A ragged batch's key ranges (kernels' grids, CPU-tested): split `split` of `chunk` keys
 * of a stream's keys [0, kv_keys_of) (fused); of a request's context part, its context or
 * on a paged cache its full context blocks (bifurcated); of a stream's decode part, from
 * its request's context part's end to its own keys' end. An empty range (*hi <= *lo) is a
 * split past the unit's end. */
HD int kv_ctx_part_of(const kv_geometry_t *g, int request)
{
    const int ctx = kv_ctx_of(g, request);
    return g->layout == LAYOUT_PAGED ? ctx / g->block_size * g->block_size : ctx;
}
HD void kv_ragged_stream_range(const kv_geometry_t *g, int stream, int split, int chunk, int *lo, int *hi)
{
    const int end = kv_keys_of(g, stream);
    *lo = split * chunk;
    *hi = *lo + chunk < end ? *lo + chunk : end;
}
HD void kv_ragged_ctx_range(const kv_geometry_t *g, int request, int split, int chunk, int *lo, int *hi)
{
    const int end = kv_ctx_part_of(g, request);
    *lo = split * chunk;
    *hi = *lo + chunk < end ? *lo + chunk : end;
}
HD void kv_ragged_dec_range(const kv_geometry_t *g, int stream, int split, int chunk, int *lo, int *hi)
{
    const int end = kv_keys_of(g, stream);
    *lo = kv_ctx_part_of(g, stream / g->beam) + split * chunk;
    *hi = *lo + chunk < end ? *lo + chunk : end;
}

/* Blocks of S tokens needed to hold n tokens. */
HD int kv_blocks_for(int tokens, int block_size) { return (tokens + block_size - 1) / block_size; }

#ifdef __cplusplus
}
#endif
#endif
