/* The log-sum-exp merge of partial softmax states, in one place for every kernel that
 * splits a row's keys: `fused`'s split grids (multi-block), `bifurcated`'s context and
 * decode parts, and the CTA bodies' own warps (FlashInfer's cascade.cuh plays this part).
 *
 * A partial state of one query row over a range of keys is its max logit m, the sum l
 * of exp(logit - m) and the unnormalised output acc (d values); it is the identity of
 * the merge when m = -inf. States merge by rescaling each to the largest m:
 *   m = max m_i,  l = sum l_i exp(m_i - m),  acc = sum acc_i exp(m_i - m),
 * and the output is acc / l. The per-row fold, lse_fold (state_merge.h), is plain C
 * compiled for host and device and tested on the CPU (tests/test_state_merge.c); the
 * code here applies it, or its base-2 form on the CTA bodies' log2-domain states, at
 * the three places a step merges:
 *  - in a CTA: combine_and_emit folds the warps' states staged in shared memory and
 *    writes the output or the split's partial; fold_and_emit adds the partials of the
 *    wgmma body's decode tiles;
 *  - in a split grid's last CTA: tail_merge (through combine_and_emit), which saves
 *    the merge launch;
 *  - in a merge launch: attn_merge_kernel and attn_merge_few_kernel, one row each.
 * Partials in the workspace store m in natural-log units; the CTA bodies' staged
 * states keep m in log2 units (their softmax runs on exp2).
 *
 * Part of attn_core.cuh, which includes it after the definitions it uses (the launch
 * parameters, CTA coordinates, dtype traits and PTX wrappers): include attn_core.cuh. */
#ifndef ATTNBENCH_STATE_MERGE_CUH
#define ATTNBENCH_STATE_MERGE_CUH

#include "state_merge.h"

/* ---------------------------------------------------------------- epilogue */

template <typename T>
__device__ __forceinline__ void store4(T *dst, float a, float b, float c, float d)
{
    dst[0] = dt<T>::from_f(a); dst[1] = dt<T>::from_f(b);
    dst[2] = dt<T>::from_f(c); dst[3] = dt<T>::from_f(d);
}

/* The fold of every split's partial of `rows` CTA rows (from CTA row row0 of the unit's
 * group-major rows on) into out, by the last CTA of a split-KV grid. This is the
 * tail of the step, so it is written for latency: each thread fetches a batch of
 * TAIL_MERGE_BATCH slots before folding any, so n slots cost n/16 dependent L2
 * round trips rather than n; and a batch is folded by lse_fold (state_merge.h,
 * CPU-tested) in two passes, not slot after slot through a chain of dependent
 * pairwise merges, whose exponentials wait on each other.
 * Out of line, with its inputs by value, so that the CTA bodies' register allocation
 * does not change with it. A row holds nslots slots, of which the first nused were
 * written (fewer where a ragged batch's unit has fewer splits than the longest). */
#define TAIL_MERGE_BATCH 16
template <typename T>
__device__ __noinline__ void tail_merge(T *out, const float *ws_acc, const float2 *ws_ml, int nslots, int nused,
                                        int d, int rows, int row0, int group, int stream0, int head0, int heads)
{
    const int q4 = d / 4;
    for (int idx = threadIdx.x; idx < rows * q4; idx += blockDim.x) {
        const int r = idx / q4, x = (idx - r * q4) * 4, gr = row0 + r;
        const int64_t row_id = (int64_t)(stream0 + gr / group) * heads + head0 + gr % group;
        float m = -INFINITY, l = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
        for (int s0 = 0; s0 < nused; s0 += TAIL_MERGE_BATCH) {
            float pm[TAIL_MERGE_BATCH], pl[TAIL_MERGE_BATCH], pacc[TAIL_MERGE_BATCH * 4];
#pragma unroll
            for (int j = 0; j < TAIL_MERGE_BATCH; ++j) {
                const int64_t slot = row_id * nslots + s0 + j;
                const bool ok = s0 + j < nused;
                const float2 ml = ok ? __ldcg(ws_ml + slot) : make_float2(-INFINITY, 0.f);
                const float4 a = ok ? __ldcg(reinterpret_cast<const float4 *>(ws_acc + slot * d + x))
                                    : make_float4(0.f, 0.f, 0.f, 0.f);
                pm[j] = ml.x;
                pl[j] = ml.y;
                pacc[4 * j] = a.x; pacc[4 * j + 1] = a.y; pacc[4 * j + 2] = a.z; pacc[4 * j + 3] = a.w;
            }
            lse_fold(&m, &l, acc, 4, pm, pl, pacc, TAIL_MERGE_BATCH);
        }
        const float inv = l > 0.f ? 1.f / l : 0.f;
        store4(out + row_id * d + x, acc[0] * inv, acc[1] * inv, acc[2] * inv, acc[3] * inv);
    }
}

/* The final output of a CTA's rows whose other partials the CTA itself left in the
 * workspace, in the slots after the splits' (slot_base + splits + k, k < fold; m in
 * natural-log units): the wgmma body's decode tiles over an unsplit context, whose
 * CTA then needs no merge launch behind it. The state staged in shared memory is
 * one source per row (m in log2 units, l, o with row stride d+8), as
 * combine_and_emit's with nsrc = 1; each slot is folded into it in place by lse_fold.
 * A warp takes rows warp, warp + nwarps, ... (at most 32 of them), its lanes four
 * columns each, so that a row's m and l are its warp's alone. Written for latency: a
 * slot's partials of all the CTA's rows are fetched at once, the outputs by cp.async
 * into land (rows * d floats of shared memory, each thread's own columns) and each
 * row's m and l by one lane, so a slot costs one L2 round trip (fetched into
 * registers, eight entries a thread, it would take two). */
template <typename T>
__device__ void fold_and_emit(const attn_params_t &P, const cta_coord &c, float *st_o, const float *st_m,
                              const float *st_l, int rows, int d, int nthreads, int fold, float *land)
{
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = nthreads / 32, ostride = d + 8;
    /* lane e holds the output row id (stream * heads + head), m and l of its warp's row e */
    int id = -1;
    float M = -INFINITY, L = 0.f;
    if (warp + nwarps * lane < rows) {
        const int r = warp + nwarps * lane;
        int stream, head;
        if (row_target(P, c, r, &stream, &head)) {
            id = stream * P.heads + head;
            M = st_m[r] * ATTN_LN2; /* natural log, as the slots' */
            L = st_l[r];
        }
    }
    for (int k = 0; k < fold; ++k) {
        const int64_t base = P.slot_base + P.splits + k;
        const float2 ml = id >= 0 ? __ldcg(&P.ws_ml[(int64_t)id * P.nslots + base]) : make_float2(-INFINITY, 0.f);
        for (int r = warp, e = 0; r < rows; r += nwarps, ++e) {
            const int rid = __shfl_sync(all, id, e);
            if (rid < 0) continue;
            const float *src = P.ws_acc + ((int64_t)rid * P.nslots + base) * d;
            for (int x = lane * 4; x < d; x += 128) cp_async16(smem_addr(land + r * d + x), src + x, 16);
        }
        cp_async_commit();
        cp_async_wait<0>();
#pragma unroll 2
        for (int r = warp, e = 0; r < rows; r += nwarps, ++e) {
            const int rid = __shfl_sync(all, id, e);
            const float pm = __shfl_sync(all, ml.x, e), pl = __shfl_sync(all, ml.y, e);
            const float m0 = __shfl_sync(all, M, e), l0 = __shfl_sync(all, L, e);
            if (rid < 0) continue;
            float m = m0, l = l0;
            for (int x = lane * 4; x < d; x += 128) {
                float4 *acc = reinterpret_cast<float4 *>(st_o + r * ostride + x);
                float4 a = *acc;
                const float4 o = *reinterpret_cast<const float4 *>(land + r * d + x);
                m = m0, l = l0;
                lse_fold(&m, &l, &a.x, 4, &pm, &pl, &o.x, 1);
                *acc = a;
            }
            if (lane == e) M = m, L = l;
        }
    }
#pragma unroll 2
    for (int r = warp, e = 0; r < rows; r += nwarps, ++e) {
        const int rid = __shfl_sync(all, id, e);
        const float l = __shfl_sync(all, L, e);
        if (rid < 0) continue;
        const float inv = l > 0.f ? 1.f / l : 0.f;
        for (int x = lane * 4; x < d; x += 128) {
            const float4 a = *reinterpret_cast<const float4 *>(st_o + r * ostride + x);
            store4(static_cast<T *>(P.out) + (int64_t)rid * d + x, a.x * inv, a.y * inv, a.z * inv, a.w * inv);
        }
    }
}

/* Combines the per-warp states staged in shared memory (source i of CTA row r at
 * index i*rows_per_src + r; m in log2 units, l, o with row stride d+8) and writes
 * either the final output (nslots == 1) or this split's partial, over the CTA's first
 * nthreads threads (0: all of them). */
template <typename T>
__device__ void combine_and_emit(const attn_params_t &P, const cta_coord &c, const float *st_o,
                                 const float *st_m, const float *st_l, int rows, int nsrc,
                                 int rows_per_src, int d, int nthreads = 0)
{
    const int q4 = d / 4;
    const int ostride = d + 8;
    const int nt = nthreads ? nthreads : (int)blockDim.x; /* the threads taking part */
    for (int idx = threadIdx.x; idx < rows * q4; idx += nt) {
        int r = idx / q4, x = (idx - r * q4) * 4;
        int stream, head;
        if (!row_target(P, c, r, &stream, &head)) continue;
        float M = -INFINITY;
        for (int i = 0; i < nsrc; ++i) M = fmaxf(M, st_m[i * rows_per_src + r]);
        float L = 0.f;
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        if (M != -INFINITY) {
            for (int i = 0; i < nsrc; ++i) {
                int s = i * rows_per_src + r;
                float w = exp2f(st_m[s] - M);
                L += st_l[s] * w;
                float4 o = *reinterpret_cast<const float4 *>(st_o + (int64_t)s * ostride + x);
                acc.x += o.x * w; acc.y += o.y * w; acc.z += o.z * w; acc.w += o.w * w;
            }
        }
        int64_t row_id = (int64_t)stream * P.heads + head;
        if (P.nslots == 1) {
            float inv = L > 0.f ? 1.f / L : 0.f;
            store4((T *)P.out + row_id * d + x, acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
        } else {
            int64_t slot = row_id * P.nslots + P.slot_base + c.split;
            *reinterpret_cast<float4 *>(P.ws_acc + slot * d + x) = acc;
            if (x == 0) P.ws_ml[slot] = make_float2(M == -INFINITY ? -INFINITY : M * ATTN_LN2, L);
        }
    }
    if (P.nslots == 1 || !P.counters) return;

    /* Split-KV without a second launch: the last CTA of the (unit, head, row tile)
     * to finish folds every split's partial of its rows (threadfence-reduction
     * pattern; the counter is reset for the next launch, so the workspace needs
     * zeroing only once). The verdict reaches the CTA through the barrier itself
     * (__syncthreads_or): no static shared memory, which would shift the dynamic
     * window off the 1 KiB alignment the wgmma body's swizzled tiles want. */
    __threadfence();
    __syncthreads();
    int last_split = 0;
    if (threadIdx.x == 0) {
        unsigned int *ctr = P.counters + ((int64_t)c.unit * P.kv_heads + c.head) * P.row_tiles + c.row_tile;
        last_split = atomicAdd(ctr, 1u) == (unsigned)(attn_unit_splits(P, c.unit) - 1);
        if (last_split) atomicExch(ctr, 0u);
    }
    if (!__syncthreads_or(last_split)) return;
    __threadfence();
    const int row0 = c.row_tile * P.rows_per_cta;
    /* the slots below slot_base hold an earlier launch's partials (bifurcated's context part) */
    tail_merge<T>(static_cast<T *>(P.out), P.ws_acc, P.ws_ml, P.nslots, P.slot_base + attn_unit_splits(P, c.unit), d,
                  min(rows, P.rows_per_unit - row0),
                  row0, P.group, c.unit * P.streams_per_unit, c.head * P.group, P.heads);
}

/* ---------------------------------------------------------------- merge launch */

/* Folds the nslots partials of each (stream, query head) row and writes the normalised
 * output (lse_fold, state_merge.h, with the slots spread over lanes and warps). A row of
 * more than MERGE_FEW_MAX slots takes a CTA of four warps, each folding every fourth
 * slot, MERGE_BATCH of them a round: a round's (m, l) (a lane each) and accumulators
 * (16-byte loads) are loaded at once, then folded into the warp's running (M, L, acc),
 * rescaled by exp(M_old - M_new); the four warps' states are combined through shared
 * memory. A row of up to 4 * MERGE_BATCH slots (a context in 32 splits and a decode
 * tile) is one round trip, where a two-pass form reads every slot's max before any
 * accumulator: a second round trip, which MQA's rows of many slots at W = 1 feel.
 * Rows of fewer slots take attn_merge_few_kernel, a warp per
 * row. d is a multiple of 8, at most 256. */
#define MERGE_FEW_MAX 15 /* the most slots attn_merge_few_kernel takes (attn_launch_merge) */
#define MERGE_WARPS 4
#define MERGE_BATCH 8
#define MERGE_MAX_D 256
__device__ __forceinline__ void axpy4(float4 &a, float w, const float4 &v)
{
    a.x += w * v.x;
    a.y += w * v.y;
    a.z += w * v.z;
    a.w += w * v.w;
}
/* One round of the merge's fold: up to B slots, lane b holding slot b's (m, l) in v (a
 * slot past the row's, or without keys, as (-inf, 0)) and every lane its share of each
 * slot's accumulator in part[b], folded into the warp's running (M, L, acc), which are
 * rescaled by exp(M_old - M_new). Both merge kernels fold through it. */
template <int B, int VPL>
__device__ __forceinline__ void merge_round(float2 v, const float4 (&part)[B][VPL], float &M, float &L, float4 (&acc)[VPL])
{
    float Mn = fmaxf(M, v.x);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) Mn = fmaxf(Mn, __shfl_xor_sync(0xffffffffu, Mn, o));
    if (Mn == -INFINITY) return; /* no keys in any slot yet (the same in the whole warp) */
    const float scale = M == -INFINITY ? 0.f : expf(M - Mn);
    const float w_lane = v.x == -INFINITY ? 0.f : expf(v.x - Mn); /* the weight of slot b = lane */
    float l = v.y * w_lane;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    L = L * scale + l;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
        acc[i].x *= scale;
        acc[i].y *= scale;
        acc[i].z *= scale;
        acc[i].w *= scale;
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
        const float w = __shfl_sync(0xffffffffu, w_lane, b);
        if (w == 0.f) continue;
#pragma unroll
        for (int i = 0; i < VPL; ++i) axpy4(acc[i], w, part[b][i]);
    }
    M = Mn;
}
template <typename T>
__global__ void __launch_bounds__(32 * MERGE_WARPS) attn_merge_kernel(const float *ws_acc, const float2 *ws_ml, T *out,
                                                                      int nslots, int d)
{
    enum { VPL = MERGE_MAX_D / 128 }; /* float4s per lane */
    __shared__ __align__(16) float part_acc[MERGE_WARPS][MERGE_MAX_D];
    __shared__ float2 part_ml[MERGE_WARPS];
    attn_grid_dependency_wait();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t row = blockIdx.x;
    float M = -INFINITY, L = 0.f;
    float4 acc[VPL];
#pragma unroll
    for (int i = 0; i < VPL; ++i) acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = warp; s0 < nslots; s0 += MERGE_WARPS * MERGE_BATCH) {
        /* this round's slots s0 + MERGE_WARPS * b, b < MERGE_BATCH; lane b holds slot b's (m, l) */
        const int sl = s0 + MERGE_WARPS * lane;
        const float2 v = lane < MERGE_BATCH && sl < nslots ? __ldcg(&ws_ml[row * nslots + sl])
                                                           : make_float2(-INFINITY, 0.f);
        float4 part[MERGE_BATCH][VPL];
#pragma unroll
        for (int b = 0; b < MERGE_BATCH; ++b)
#pragma unroll
            for (int i = 0; i < VPL; ++i) {
                const int s = s0 + MERGE_WARPS * b, x = 4 * lane + 128 * i;
                part[b][i] = s < nslots && x < d
                                 ? __ldcg(reinterpret_cast<const float4 *>(ws_acc + (row * nslots + s) * d + x))
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
            }
        merge_round(v, part, M, L, acc);
    }
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
        const int x = 4 * lane + 128 * i;
        if (x < d) *reinterpret_cast<float4 *>(&part_acc[warp][x]) = acc[i];
    }
    if (lane == 0) part_ml[warp] = make_float2(M, L);
    __syncthreads();
    if (warp != 0) return;
    float Mt = -INFINITY;
#pragma unroll
    for (int j = 0; j < MERGE_WARPS; ++j) Mt = fmaxf(Mt, part_ml[j].x);
    float c[MERGE_WARPS], Lt = 0.f;
#pragma unroll
    for (int j = 0; j < MERGE_WARPS; ++j) {
        c[j] = part_ml[j].x == -INFINITY ? 0.f : expf(part_ml[j].x - Mt);
        Lt += c[j] * part_ml[j].y;
    }
    const float inv = Lt > 0.f ? 1.f / Lt : 0.f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
        const int x = 4 * lane + 128 * i;
        if (x >= d) continue;
        float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int j = 0; j < MERGE_WARPS; ++j)
            if (c[j] != 0.f) axpy4(o, c[j], *reinterpret_cast<const float4 *>(&part_acc[j][x]));
        store4(out + row * d + x, o.x * inv, o.y * inv, o.z * inv, o.w * inv);
    }
}

/* A row of at most MERGE_FEW_MAX slots (the common case: a split or two of the context
 * and a decode tile or two), one warp per row and MERGE_WARPS rows per CTA: every load
 * of the row at once, its slots' (m, l) one per lane and their accumulators, folded in
 * one round (merge_round) after one round trip (attn_merge_kernel's CTA per row would
 * leave three of its four warps a slot or two each). A kernel of its own, so that its
 * registers, a float4 per slot and per VPL (d <= 128 * VPL), do not lower
 * attn_merge_kernel's occupancy. */
template <typename T, int VPL>
__global__ void __launch_bounds__(32 * MERGE_WARPS) attn_merge_few_kernel(const float *ws_acc, const float2 *ws_ml, T *out,
                                                             int64_t rows, int nslots, int d)
{
    constexpr int SLOTS = MERGE_FEW_MAX;
    static_assert(SLOTS <= 32, "a slot's (m, l) per lane");
    attn_grid_dependency_wait();
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * MERGE_WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float2 v = lane < nslots ? __ldcg(&ws_ml[row * nslots + lane]) : make_float2(-INFINITY, 0.f);
    float4 part[SLOTS][VPL];
#pragma unroll
    for (int s = 0; s < SLOTS; ++s)
#pragma unroll
        for (int i = 0; i < VPL; ++i) {
            const int x = 4 * lane + 128 * i;
            part[s][i] = s < nslots && x < d ? __ldcg(reinterpret_cast<const float4 *>(ws_acc + (row * nslots + s) * d + x))
                                             : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    float M = -INFINITY, L = 0.f;
    float4 acc[VPL];
#pragma unroll
    for (int i = 0; i < VPL; ++i) acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    merge_round(v, part, M, L, acc);
    const float inv = L > 0.f ? 1.f / L : 0.f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
        const int x = 4 * lane + 128 * i;
        if (x < d) store4(out + row * d + x, acc[i].x * inv, acc[i].y * inv, acc[i].z * inv, acc[i].w * inv);
    }
}

#endif
