/* The kernels of `share` (share.cu) and of `select-filter` (select_filter.cu), which runs
 * them with every head essential for exact attention whose logits it then ranks: the
 * logits of the essential heads with each split's softmax statistics, the weighted V sums
 * per split, their reduction (share_internal.h has the workspace layout). */
#ifndef ATTNBENCH_SHARE_BODY_CUH
#define ATTNBENCH_SHARE_BODY_CUH

#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "attn_core.cuh"
#include "registry.h"
#include "share_internal.h"
#include "../problem/share_map.h"

namespace {

struct share_params {
    const void *q;
    void *out;
    const void *kv;
    const int32_t *block_table, *indirection;
    kv_geometry_t geom;
    const int *share_to;   /* [h]: the essential head whose weights head i uses */
    const int *rank;       /* [h]: head i's index among the essential heads, -1 if shared */
    float *logits;
    float2 *stats;
    float *partials;
    /* NULL, or the keys of each stream's selected step: index[s * keys + i] for i below
     * counts[s] (select-attend); the logits are stored at i. counts without index: the
     * first counts[s] positions (select-recompute's own K/V) */
    const int *index, *counts;
    int streams, heads, group, batches, keys, d, essential, splits, chunk, lpr, vectors;
    /* the logits launch's parts of a split (share_logit_parts) and keys a part */
    int parts, part_keys;
    float scale;
};

/* 16 bytes of T (8 halves or 4 floats) as floats, and a float back to T. */
template <typename T> __device__ __forceinline__ void to_float(const uint4 &u, float *v)
{
    const T *e = reinterpret_cast<const T *>(&u);
#pragma unroll
    for (int i = 0; i < vec16<T>::N; ++i) v[i] = dt<T>::to_f(e[i]);
}
template <typename T> __device__ __forceinline__ T from_float(float x) { return dt<T>::from_f(x); }

/* The lane's vectors (sub, sub + lpr, ...) of a d-element row starting at element
 * offset off of base; zeros for vectors past the row and for an invalid row. */
template <typename T, int CPL>
__device__ __forceinline__ void load_vectors(const T *base, int64_t off, bool valid, int sub, int lpr,
                                             int vectors, float *v)
{
    constexpr int VEC = 16 / sizeof(T);
    const uint4 *row = reinterpret_cast<const uint4 *>(base + off);
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
        const int vi = sub + c * lpr;
        if (valid && vi < vectors) {
            to_float<T>(row[vi], v + c * VEC);
        } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) v[c * VEC + e] = 0.0f;
        }
    }
}

/* Rows of keys each lane has in flight: a CTA's loads of SHARE_INFLIGHT rows a row group
 * are issued before the first is used, so that an SM holds about 64 KiB of reads in
 * flight (4 CTAs of 4 warps) where one row at a time held an eighth of that. */
#define SHARE_INFLIGHT 8

/* The lane's 16-byte vectors (sub, sub + lpr, ...) of a row at element offset off of base,
 * raw, read once (ldg_once: the read-only path, no L1 line, 256-byte L2 fetches, since 4
 * lanes read 64 bytes of a row an instruction; on the H200, MHA B = 4 at 32k, the logits
 * launch took 274 us this way and 294 us with plain loads); zeros past the row and for an
 * invalid row. */
template <typename T, int CPL>
__device__ __forceinline__ void load_raw(const T *base, int64_t off, bool valid, int sub, int lpr, int vectors,
                                         uint4 (&raw)[CPL])
{
    const uint4 *row = reinterpret_cast<const uint4 *>(base + off);
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
        const int vi = sub + c * lpr;
        raw[c] = valid && vi < vectors ? ldg_once<true>(row + vi) : make_uint4(0u, 0u, 0u, 0u);
    }
}
template <typename T, int CPL>
__device__ __forceinline__ void raw_to_float(const uint4 (&raw)[CPL], float *v)
{
#pragma unroll
    for (int c = 0; c < CPL; ++c) to_float<T>(raw[c], v + c * vec16<T>::N);
}

/* (m, l) of a softmax over two sets: their maximum, and the sum of exp(x - m). */
__device__ __forceinline__ void ml_combine(float &m, float &l, float m2, float l2)
{
    const float M = fmaxf(m, m2);
    if (M == -INFINITY) return;
    l = l * expf(m - M) + l2 * expf(m2 - M);
    m = M;
}

/* The keys stream s attends to, and the position of its i-th. */
__device__ __forceinline__ int share_keys_of(const share_params &P, int s) { return P.counts ? P.counts[s] : P.keys; }
__device__ __forceinline__ int share_key_pos(const share_params &P, int s, int i)
{
    return P.index ? P.index[(int64_t)s * P.keys + i] : i;
}

__device__ __forceinline__ int rk_of(const share_params &P, int head) { return P.rank[head]; }

/* Element offset of row pos of kv head j's K (which 0) or V (1) for stream s: the
 * kv_layout.h arithmetic specialised per layout (ADDR_CONTIG, ADDR_PAGED), as the fused
 * kernel's kv_row, rather than kv_row_offset's run-time choice among three layouts (with
 * the ragged lengths and the bifurcated split it also serves): each lane of a row computes
 * the row's place, so that its arithmetic counts sixteen times over against the 16 bytes
 * each lane reads. */
template <int ADDR>
__device__ __forceinline__ int64_t share_row(const share_params &P, int s, int which, int j, int pos)
{
    const kv_geometry_t *g = &P.geom;
    /* a contiguous cache read in the stream's own order: its rows follow each other from
     * position 0's, which the compiler computes once, outside the loop over the keys */
    if (ADDR == ADDR_CONTIG && !P.indirection) return kv_contiguous_offset(g, s, which, j, 0) + (int64_t)pos * g->head_dim;
    const int src = P.indirection ? kv_source_stream(g, P.indirection, s, pos) : s;
    if (ADDR == ADDR_PAGED) {
        const int block = __ldg(P.block_table + (int64_t)src * g->max_blocks_per_seq + (pos >> g->block_shift));
        return kv_paged_offset(g, block, which, j, pos & (g->block_size - 1));
    }
    return kv_contiguous_offset(g, src, which, j, pos);
}

/* The key of the lane's u-th row of a loop step from `base`, in the order both kernels
 * walk them: row r of warp w at base + (u * WARPS + w) * rpw + r. */
template <int WARPS>
__device__ __forceinline__ int share_step_key(int base, int u, int warp, int rpw, int row)
{
    return base + (u * WARPS + warp) * rpw + row;
}

/* The lane's U rows of K (which 0) or V (1) of kv head j from key `base` on
 * (share_step_key), raw and all requested before any is used; zeros from k1 on. */
template <typename T, int CPL, int ADDR, int U, int WARPS>
__device__ __forceinline__ void load_rows(const share_params &P, int s, int which, int j, int base, int k1, int warp,
                                          int row, int sub, uint4 (&raw)[U][CPL])
{
    const T *kv = static_cast<const T *>(P.kv);
    const int rpw = 32 / P.lpr;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int key = share_step_key<WARPS>(base, u, warp, rpw, row);
        const bool valid = key < k1;
        load_raw<T, CPL>(kv, valid ? share_row<ADDR>(P, s, which, j, share_key_pos(P, s, key)) : 0, valid, sub,
                         P.lpr, P.vectors, raw[u]);
    }
}

template <typename T, int CPL, int ADDR, int NH>
__global__ void __launch_bounds__(SHARE_THREADS, SHARE_CTAS_PER_SM) share_logits_kernel(const share_params P)
{
    constexpr int VEC = 16 / sizeof(T);
    constexpr int WARPS = SHARE_THREADS / 32;
    const int cta = blockIdx.x, s = blockIdx.z;   /* part cta % parts of split cta / parts */
    const int j = blockIdx.y / P.batches, b = blockIdx.y % P.batches;
    const int first = share_batch_first(j, b, P.group), nh = share_batch_count(b, P.group);
    int rk[NH];
    unsigned mask = 0;
#pragma unroll
    for (int t = 0; t < NH; ++t) {
        rk[t] = t < nh ? P.rank[first + t] : -1;
        if (rk[t] >= 0) mask |= 1u << t;
    }
    if (!mask) return;   /* no essential head here: this K is not read */

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int lpr = P.lpr, sub = lane & (lpr - 1), rpw = 32 / lpr, row = lane / lpr;
    const T *qbase = static_cast<const T *>(P.q);
    float q[NH][CPL * VEC];
#pragma unroll
    for (int t = 0; t < NH; ++t) {
        load_vectors<T, CPL>(qbase, ((int64_t)s * P.heads + first + t) * P.d, (mask >> t) & 1, sub, lpr,
                             P.vectors, q[t]);
#pragma unroll
        for (int e = 0; e < CPL * VEC; ++e) q[t][e] *= P.scale;
    }
    float m[NH], l[NH];
#pragma unroll
    for (int t = 0; t < NH; ++t) m[t] = -INFINITY, l[t] = 0.0f;

    const int split = cta / P.parts, k0 = split * P.chunk + cta % P.parts * P.part_keys;
    const int k1 = min(min(share_keys_of(P, s), (split + 1) * P.chunk), k0 + P.part_keys);
    constexpr int U = SHARE_INFLIGHT / CPL;
    for (int base = k0; base < k1; base += U * WARPS * rpw) {
        uint4 raw[U][CPL];
        load_rows<T, CPL, ADDR, U, WARPS>(P, s, 0, j, base, k1, warp, row, sub, raw);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int key = share_step_key<WARPS>(base, u, warp, rpw, row);
            const bool valid = key < k1;
            float v[CPL * VEC];
            raw_to_float<T, CPL>(raw[u], v);
#pragma unroll
            for (int t = 0; t < NH; ++t) {
                if (!((mask >> t) & 1)) continue;   /* uniform over the CTA */
                float dot = 0.0f;
#pragma unroll
                for (int e = 0; e < CPL * VEC; ++e) dot = fmaf(q[t][e], v[e], dot);
                for (int off = lpr / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
                if (valid && sub == 0) {
                    P.logits[share_logit_at(s, P.essential, rk[t], P.keys, key)] = dot;
                    ml_combine(m[t], l[t], dot, 1.0f);
                }
            }
        }
    }

    __shared__ float2 red[WARPS][NH];
#pragma unroll
    for (int t = 0; t < NH; ++t) {
        for (int off = 16; off > 0; off /= 2) {
            float m2 = __shfl_xor_sync(0xffffffffu, m[t], off), l2 = __shfl_xor_sync(0xffffffffu, l[t], off);
            ml_combine(m[t], l[t], m2, l2);
        }
        if (lane == 0) red[warp][t] = make_float2(m[t], l[t]);
    }
    __syncthreads();
    if (threadIdx.x < NH && ((mask >> threadIdx.x) & 1)) {
        const int t = threadIdx.x;
        float mm = -INFINITY, ll = 0.0f;
        for (int w = 0; w < WARPS; ++w) ml_combine(mm, ll, red[w][t].x, red[w][t].y);
        P.stats[share_stat_at(s, P.essential, rk_of(P, first + t), P.splits * P.parts, cta)] = make_float2(mm, ll);
    }
}

template <typename T, int CPL, int ADDR, int NH>
__global__ void __launch_bounds__(SHARE_THREADS, SHARE_CTAS_PER_SM) share_values_kernel(const share_params P)
{
    constexpr int VEC = 16 / sizeof(T);
    constexpr int WARPS = SHARE_THREADS / 32;
    const int split = blockIdx.x, s = blockIdx.z;
    const int j = blockIdx.y / P.batches, b = blockIdx.y % P.batches;
    const int first = share_batch_first(j, b, P.group), nh = share_batch_count(b, P.group);

    /* each head's essential head: the global maximum and 1 / sum over every split */
    __shared__ float row_max[NH], row_inv[NH];
    __shared__ int row_rank[NH];
    if (threadIdx.x < NH) {
        const int t = threadIdx.x;
        float mm = -INFINITY, ll = 0.0f;
        int r = 0;
        if (t < nh) {
            r = P.rank[P.share_to[first + t]];
            const float2 *st = P.stats + share_stat_at(s, P.essential, r, P.splits * P.parts, 0);
            for (int k = 0; k < P.splits * P.parts; ++k) ml_combine(mm, ll, st[k].x, st[k].y);
        }
        row_max[t] = mm;
        row_inv[t] = ll > 0.0f ? 1.0f / ll : 0.0f;
        row_rank[t] = r;
    }
    __syncthreads();

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int lpr = P.lpr, sub = lane & (lpr - 1), rpw = 32 / lpr, row = lane / lpr;
    float acc[NH][CPL * VEC];
#pragma unroll
    for (int t = 0; t < NH; ++t)
#pragma unroll
        for (int e = 0; e < CPL * VEC; ++e) acc[t][e] = 0.0f;

    const int k0 = split * P.chunk, k1 = min(share_keys_of(P, s), k0 + P.chunk);
    constexpr int U = SHARE_INFLIGHT / CPL;
    for (int base = k0; base < k1; base += U * WARPS * rpw) {
        /* the rows' V and their logits, all requested before the first is used */
        uint4 raw[U][CPL];
        float logit[U][NH];
        load_rows<T, CPL, ADDR, U, WARPS>(P, s, 1, j, base, k1, warp, row, sub, raw);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int key = share_step_key<WARPS>(base, u, warp, rpw, row);
            const bool valid = key < k1;
#pragma unroll
            for (int t = 0; t < NH; ++t)
                logit[u][t] = valid && t < nh ? P.logits[share_logit_at(s, P.essential, row_rank[t], P.keys, key)]
                                              : -INFINITY;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float v[CPL * VEC];
            raw_to_float<T, CPL>(raw[u], v);
#pragma unroll
            for (int t = 0; t < NH; ++t) {
                if (t >= nh) continue;
                /* exp(-inf - max) is 0: an invalid row adds nothing */
                const float w = expf(logit[u][t] - row_max[t]) * row_inv[t];
#pragma unroll
                for (int e = 0; e < CPL * VEC; ++e) acc[t][e] = fmaf(w, v[e], acc[t][e]);
            }
        }
    }

    /* rows of a warp, then the warps, summed; one partial row per head and split */
    __shared__ float red[WARPS][NH][256];
#pragma unroll
    for (int t = 0; t < NH; ++t) {
#pragma unroll
        for (int e = 0; e < CPL * VEC; ++e)
            for (int off = lpr; off < 32; off *= 2) acc[t][e] += __shfl_xor_sync(0xffffffffu, acc[t][e], off);
        if (row == 0)
#pragma unroll
            for (int c = 0; c < CPL; ++c) {
                const int vi = sub + c * lpr;
                if (vi < P.vectors)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) red[warp][t][vi * VEC + e] = acc[t][c * VEC + e];
            }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nh * P.d; i += SHARE_THREADS) {
        const int t = i / P.d, x = i % P.d;
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) sum += red[w][t][x];
        P.partials[share_partial_at(split, P.streams, s, P.heads, first + t, P.d, x)] = sum;
    }
}

template <typename T>
__global__ void share_reduce_kernel(const float *partials, T *out, int64_t n, int splits)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float sum = 0.0f;
        for (int k = 0; k < splits; ++k) sum += partials[(int64_t)k * n + i];
        out[i] = from_float<T>(sum);
    }
}

template <typename T, int CPL, int ADDR, int NH>
cudaError_t launch_typed(const share_params &P, cudaStream_t stream)
{
    const dim3 grid(P.splits, P.geom.kv_heads * P.batches, P.streams);
    const dim3 logit_grid(P.splits * P.parts, grid.y, grid.z);
    share_logits_kernel<T, CPL, ADDR, NH><<<logit_grid, SHARE_THREADS, 0, stream>>>(P);
    share_values_kernel<T, CPL, ADDR, NH><<<grid, SHARE_THREADS, 0, stream>>>(P);
    const int64_t n = (int64_t)P.streams * P.heads * P.d;
    const int64_t blocks = (n + 255) / 256;
    share_reduce_kernel<T><<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(
        P.partials, static_cast<T *>(P.out), n, P.splits);
    return cudaGetLastError();
}

/* A kv head with one head (MHA) has a CTA to itself: each lane takes SHARE_WIDE_VECTORS
 * 16-byte vectors of a row, so that a row's place, logit and weight, which every lane of
 * the row works out, cost a quarter of the lanes; a group's four heads a CTA would hold
 * four times the accumulators, and keep one or two vectors a lane. */
template <typename T, int ADDR>
cudaError_t launch_layout(const share_params &P, cudaStream_t stream)
{
    if (P.group == 1) {
        share_params one = P;
        one.lpr = share_lanes_per_row_of(P.vectors, SHARE_WIDE_VECTORS);
        return launch_typed<T, SHARE_WIDE_VECTORS, ADDR, 1>(one, stream);
    }
    return P.vectors > P.lpr ? launch_typed<T, 2, ADDR, SHARE_HEADS>(P, stream)
                             : launch_typed<T, 1, ADDR, SHARE_HEADS>(P, stream);
}

template <typename T>
cudaError_t launch_dtype(const share_params &P, cudaStream_t stream)
{
    return P.geom.layout == LAYOUT_PAGED ? launch_layout<T, ADDR_PAGED>(P, stream)
                                         : launch_layout<T, ADDR_CONTIG>(P, stream);
}

/* The logits launch's parts of a split (share_logit_parts) for a step whose essential
 * heads are the problem's map's, or every head (essential == heads: select's). */
static int share_parts_of(const problem_t *p, int essential, const attn_plan_t *plan)
{
    if (essential >= p->heads) return 1;   /* every batch has an essential head */
    int *to = (int *)malloc((size_t)p->heads * sizeof(int));
    if (!to) return 1;   /* one part a split: correct, only slower */
    for (int i = 0; i < p->heads; ++i) to[i] = problem_share_target(p, i);
    const int group = problem_group(p);
    const int parts = share_logit_parts(plan->split.chunk, share_busy_batches(to, p->kv_heads, group),
                                        (long)p->kv_heads * share_batches(group));
    free(to);
    return parts;
}

/* The kernels' parameters for a step: the map is share_to then rank, h ints each on the
 * device; the workspace is share_ws_layout's of `essential` heads (its first bytes). */
share_params share_params_make(const attn_args_t *a, const int *map, int essential)
{
    const problem_t *p = &a->problem;
    const int parts = share_parts_of(p, essential, &a->plan);
    const share_ws_t ws = share_ws_layout(problem_streams(p), p->heads, essential, problem_keys(p), p->head_dim,
                                          a->plan.split.splits, parts);
    share_params P;
    P.q = a->q;
    P.out = a->out;
    P.kv = a->kv;
    P.block_table = a->block_table;
    P.indirection = a->indirection;
    P.geom = a->geom;
    P.share_to = map;
    P.rank = map + p->heads;
    P.logits = (float *)((char *)a->workspace + ws.logits);
    P.stats = (float2 *)((char *)a->workspace + ws.stats);
    P.partials = (float *)((char *)a->workspace + ws.partials);
    P.index = P.counts = NULL;
    P.streams = problem_streams(p);
    P.heads = p->heads;
    P.group = problem_group(p);
    P.batches = share_batches(P.group);
    P.keys = problem_keys(p);
    P.d = p->head_dim;
    P.essential = essential;
    P.splits = a->plan.split.splits;
    P.chunk = a->plan.split.chunk;
    P.parts = parts;
    P.part_keys = share_part_keys(P.chunk, parts);
    P.vectors = share_row_vectors(p->head_dim, (int)dtype_size(p->dtype));
    P.lpr = share_lanes_per_row(P.vectors);
    P.scale = (float)problem_scale(p);
    return P;
}

/* The three launches of a step in the problem's dtype. */
cudaError_t share_launch_body(const share_params &P, dtype_t dtype, cudaStream_t stream)
{
    if (P.vectors > 2 * P.lpr || P.splits < 1 || P.chunk < 1) return cudaErrorInvalidValue;
    switch (dtype) {
    case DTYPE_FP16: return launch_dtype<__half>(P, stream);
    case DTYPE_BF16: return launch_dtype<__nv_bfloat16>(P, stream);
    case DTYPE_FP32: return launch_dtype<float>(P, stream);
    default: return cudaErrorInvalidValue;
    }
}

/* Host side of both kernels' tables. Device copies of the map: share_to then rank, h
 * ints each. */
struct share_state {
    int *map;
};

/* What share's launches cannot run, each reason in the words of the kernel that runs
 * them: an 8-bit cache, --tp, ragged lengths, --q-len > 1, more CTA rows (streams, or kv
 * heads times batches of 4 heads) than a grid dimension holds. */
struct share_limit_reasons {
    const char *kv_quant, *tp, *ragged, *q_len, *grid;
};
static const char *share_launch_limits(const problem_t *p, const share_limit_reasons &why)
{
    if (p->kv_quant != KV_QUANT_NONE) return why.kv_quant;
    if (p->tp > 1) return why.tp;
    if (problem_ragged(p)) return why.ragged;
    if (p->q_len > 1) return why.q_len;
    if (problem_streams(p) > 65535 || (long)p->kv_heads * share_batches(problem_group(p)) > 65535) return why.grid;
    return NULL;
}

static kv_layout_t share_layout(const problem_t *p)
{
    return p->cache == CACHE_PAGED ? LAYOUT_PAGED : LAYOUT_CONTIGUOUS;
}

static void share_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    const int keys = problem_keys(p);
    const long items = (long)problem_streams(p) * p->kv_heads * share_batches(problem_group(p));
    if (p->splits > 0) plan->split = split_plan_fixed(keys, p->splits, SHARE_TILE);
    else if (p->multi_block == MULTI_BLOCK_OFF) plan->split = split_plan_fixed(keys, 1, SHARE_TILE);
    else plan->split = split_plan_auto(items, keys, SHARE_TILE, dev->sm_count, SHARE_CTAS_PER_SM);
}

static size_t share_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    return ((size_t)2 * p->heads * sizeof(int) + ((size_t)2 << 20) - 1) / ((size_t)2 << 20) * ((size_t)2 << 20);
}

/* The map on the device: the problem's (problem_share_target, and each essential head's
 * rank), or with every head essential, its own (all_essential). */
static cudaError_t share_setup_map(attn_args_t *a, bool all_essential)
{
    const problem_t *p = &a->problem;
    const int h = p->heads;
    int *host = (int *)malloc((size_t)2 * h * sizeof(int));
    share_state *st = (share_state *)calloc(1, sizeof *st);
    if (!host || !st) {
        free(host);
        free(st);
        return cudaErrorMemoryAllocation;
    }
    int rank = 0;
    for (int i = 0; i < h; ++i) {
        host[i] = all_essential ? i : problem_share_target(p, i);
        host[h + i] = host[i] == i ? rank++ : -1;
    }
    cudaError_t e = cudaMalloc((void **)&st->map, (size_t)2 * h * sizeof(int));
    if (e == cudaSuccess) e = cudaMemcpy(st->map, host, (size_t)2 * h * sizeof(int), cudaMemcpyHostToDevice);
    free(host);
    if (e != cudaSuccess) {
        cudaFree(st->map);
        free(st);
        return e;
    }
    a->state = st;
    return cudaSuccess;
}

static void share_teardown(attn_args_t *a)
{
    share_state *st = (share_state *)a->state;
    if (!st) return;
    cudaFree(st->map);
    free(st);
    a->state = NULL;
}

} // namespace

#endif
