/* The register-streaming decode body: bifurcated's decode part for MHA (one query
 * head per kv head) where it streams on the SMs the context part leaves
 * (bifurcated.cu, bif_ctx_sms).
 *
 * The decode part is bound by memory and short per (stream, kv head): gen keys. The
 * KEYSPLIT body (attn_core.cuh) spends most of a CTA's life in serial steps (Q, the
 * tiles through shared memory, the math on 16-row tiles of which one row is a
 * query, a staged cross-warp merge): about 31 GB/s per SM on an H200 however many
 * SMs it has, so SMs given to it return little. This
 * body holds no shared memory and no barrier: each warp takes one (stream, kv head,
 * split) alone, loads its K and V rows straight into registers with 16-byte loads,
 * every load of a batch in flight before the first is used, and does the math on
 * CUDA cores; eight 64-thread CTAs fit on an SM. It streams about 45 GB/s per SM.
 * Persistent bodies with a shared-memory ring per warp (cp.async or cp.async.bulk,
 * the math on CUDA cores or on tensor cores) come to about 4.3 GB/s per warp, at
 * most 34 GB/s per SM: what binds a warp is its own
 * chain from tile to tile, so the SM's rate follows the warps it holds.
 *
 * Warp layout (d = 128): a K or V row is 16 lanes x 8 elements; the two half-warps
 * take alternate keys, so one load instruction covers two rows (512 contiguous
 * bytes). A batch is 2*NL keys. The NL partial dot products of each half-warp are
 * reduced across its 16 lanes by a reduce-scatter (each exchange halves the values
 * a lane holds), which leaves lane c with whole logits of key index c / (16/NL) of
 * its half. Online softmax over the warp in the log2 domain; the probabilities
 * reach the V lanes by shuffle; the two halves' O are summed at the end. */
#ifndef ATTNBENCH_ATTN_STREAM_CUH
#define ATTNBENCH_ATTN_STREAM_CUH

#include "attn_core.cuh"

#define STREAM_D 128
#define STREAM_WARPS 2          /* warps per CTA: small CTAs fill the registers a context CTA leaves */
#define STREAM_THREADS (32 * STREAM_WARPS)
#define STREAM_MINB 8           /* CTAs per SM: caps registers at 128 */
#define STREAM_NL 8             /* loads per lane per batch, of K and of V each: 8 KiB a warp in flight */

template <typename T>
__device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8])
{
    const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = dt<T>::to_f(e[i]);
}

template <typename T, int ADDR>
__global__ void __launch_bounds__(STREAM_THREADS, STREAM_MINB) attn_stream_kernel(const attn_params_t P)
{
    constexpr int NL = STREAM_NL;
    static_assert(NL >= 1 && NL <= 16 && (NL & (NL - 1)) == 0, "loads per lane: a power of two up to 16");
    constexpr int DUP = 16 / NL; /* lanes of a half-warp that end up holding the same logit */
    const int lane = threadIdx.x & 31, half = lane >> 4, c = lane & 15;
    const int64_t item = (int64_t)blockIdx.x * STREAM_WARPS + (threadIdx.x >> 5);
    if (item >= attn_items(P)) return;
    const cta_coord cc = cta_decompose(P, item);
    const T *kv = static_cast<const T *>(P.kv);
    int stream, head;
    row_target(P, cc, 0, &stream, &head); /* one row per item: the group is one head */
    const int64_t row_id = (int64_t)stream * P.heads + head;

    /* q: this lane's 8 elements, scaled into the log2 domain */
    float q[8];
    unpack8<T>(ldg_once(static_cast<const T *>(P.q) + row_id * STREAM_D + 8 * c), q);
#pragma unroll
    for (int e = 0; e < 8; ++e) q[e] *= P.scale_log2;

    float m = -INFINITY, l = 0.f, o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = 0.f;

    for (int base = cc.k_lo; base < cc.k_hi; base += 2 * NL) {
        /* every load of the batch in flight before the first is used */
        uint4 kr[NL], vr[NL];
#pragma unroll
        for (int i = 0; i < NL; ++i) {
            const int pos = base + 2 * i + half;
            if (pos < cc.k_hi) {
                const T *row = kv + kv_row<ADDR>(P, cc.unit, cc.head, pos) + 8 * c;
                kr[i] = ldg_once(row);
                vr[i] = ldg_once(row + P.vstride);
            } else {
                kr[i] = make_uint4(0, 0, 0, 0);
                vr[i] = make_uint4(0, 0, 0, 0);
            }
        }
        /* partial logits over this lane's 8 elements */
        float s[NL];
#pragma unroll
        for (int i = 0; i < NL; ++i) {
            float k[8];
            unpack8<T>(kr[i], k);
            float acc = 0.f;
#pragma unroll
            for (int e = 0; e < 8; ++e) acc = fmaf(q[e], k[e], acc);
            s[i] = acc;
        }
        /* reduce-scatter over the 16 lanes of the half-warp: lane c keeps the half of
         * its values that bit `bit` of c selects and adds its partner's of the same keys */
#pragma unroll
        for (int bit = 8, n = NL; bit >= 1; bit >>= 1) {
            if (n > 1) {
                const bool upper = (c & bit) != 0;
#pragma unroll
                for (int j = 0; j < n / 2; ++j) {
                    const float keep = upper ? s[j + n / 2] : s[j];
                    const float give = upper ? s[j] : s[j + n / 2];
                    s[j] = keep + __shfl_xor_sync(0xffffffffu, give, bit);
                }
                n /= 2;
            } else {
                s[0] += __shfl_xor_sync(0xffffffffu, s[0], bit);
            }
        }
        /* lane c holds key base + 2*(c / DUP) + half; online softmax over the warp */
        const float v = base + 2 * (c / DUP) + half < cc.k_hi ? s[0] : -INFINITY;
        const float m_new = fmaxf(m, warp_max(v));
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        const float alpha = exp2f(m - m_use);
        const float p = exp2f(v - m_use);
        l = l * alpha + warp_sum(c % DUP == 0 ? p : 0.f); /* each logit is held by DUP lanes */
        m = m_new;
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] *= alpha;
        /* O += p V: row i of this half is key base + 2i + half, whose p sits in lane
         * half*16 + i*DUP */
#pragma unroll
        for (int i = 0; i < NL; ++i) {
            float vv[8];
            unpack8<T>(vr[i], vv);
            const float pk = __shfl_sync(0xffffffffu, p, half * 16 + i * DUP);
#pragma unroll
            for (int e = 0; e < 8; ++e) o[e] = fmaf(pk, vv[e], o[e]);
        }
    }

    /* the two halves took alternate keys: sum their O; the lanes of half 0 write */
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] += __shfl_xor_sync(0xffffffffu, o[e], 16);
    if (half) return;
    if (P.nslots == 1) {
        const float inv = l > 0.f ? 1.f / l : 0.f;
        T *dst = static_cast<T *>(P.out) + row_id * STREAM_D + 8 * c;
        store4(dst, o[0] * inv, o[1] * inv, o[2] * inv, o[3] * inv);
        store4(dst + 4, o[4] * inv, o[5] * inv, o[6] * inv, o[7] * inv);
    } else {
        const int64_t slot = row_id * P.nslots + P.slot_base + cc.split;
        float4 *acc = reinterpret_cast<float4 *>(P.ws_acc + slot * STREAM_D + 8 * c);
        acc[0] = make_float4(o[0], o[1], o[2], o[3]);
        acc[1] = make_float4(o[4], o[5], o[6], o[7]);
        if (c == 0) P.ws_ml[slot] = make_float2(m == -INFINITY ? -INFINITY : m * ATTN_LN2, l);
    }
}

#endif
