/* Row softmax of materialised fp32 logits, written as probabilities in the input
 * dtype (as PyTorch's SDPA math path does), for the cuBLAS kernels.
 *
 * One pass computes each row's max and sum of exponentials together (online
 * softmax: the running sum is rescaled when the max grows), a second pass writes
 * exp(x - max) / sum. Rows are up to 1M keys: short rows get one warp, long rows one
 * CTA. A row may be the concatenation of two segments (context and decoded logits
 * of cublas-bifurcated), each starting 16-byte aligned. */
#ifndef ATTNBENCH_SOFTMAX_CUH
#define ATTNBENCH_SOFTMAX_CUH

#include <stdint.h>
#include <math.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "cublas_common.cuh"

/* Four floats stored as four consecutive elements of T (dst 4-element aligned). */
template <typename T> __device__ __forceinline__ void store4(T *dst, float a, float b, float c, float d);

template <> __device__ __forceinline__ void store4<float>(float *dst, float a, float b, float c, float d)
{
    *reinterpret_cast<float4 *>(dst) = make_float4(a, b, c, d);
}
template <> __device__ __forceinline__ void store4<__half>(__half *dst, float a, float b, float c, float d)
{
    __half2 lo = __floats2half2_rn(a, b), hi = __floats2half2_rn(c, d);
    uint2 u;
    u.x = *reinterpret_cast<const uint32_t *>(&lo);
    u.y = *reinterpret_cast<const uint32_t *>(&hi);
    *reinterpret_cast<uint2 *>(dst) = u;
}
template <> __device__ __forceinline__ void store4<__nv_bfloat16>(__nv_bfloat16 *dst, float a, float b,
                                                                  float c, float d)
{
    __nv_bfloat162 lo = __floats2bfloat162_rn(a, b), hi = __floats2bfloat162_rn(c, d);
    uint2 u;
    u.x = *reinterpret_cast<const uint32_t *>(&lo);
    u.y = *reinterpret_cast<const uint32_t *>(&hi);
    *reinterpret_cast<uint2 *>(dst) = u;
}

template <typename T> __device__ __forceinline__ T float_to(float x);
template <> __device__ __forceinline__ float float_to<float>(float x) { return x; }
template <> __device__ __forceinline__ __half float_to<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 float_to<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* Running (max m, sum of exp(x - m) l) of one thread's share of a row. A NaN logit
 * makes l NaN, so it reaches the output instead of being hidden by fmaxf. */
__device__ __forceinline__ void softmax_push4(float &m, float &l, float4 x)
{
    float mx = fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w));
    if (mx > m) { l *= expf(m - mx); m = mx; }
    if (m == -INFINITY) return; /* only -inf so far: nothing to add */
    l += expf(x.x - m) + expf(x.y - m) + expf(x.z - m) + expf(x.w - m);
}
__device__ __forceinline__ void softmax_push1(float &m, float &l, float x)
{
    if (x > m) { l *= expf(m - x); m = x; }
    if (m == -INFINITY) return;
    l += expf(x - m);
}
__device__ __forceinline__ void softmax_merge(float &m, float &l, float m2, float l2)
{
    float mx = fmaxf(m, m2);
    if (mx == -INFINITY) return;
    l = l * expf(m - mx) + l2 * expf(m2 - mx);
    m = mx;
}

template <int ROW_THREADS>
__device__ __forceinline__ void softmax_scan_segment(const float *seg, int n, int t, float &m, float &l)
{
    const int nv = n >> 2;
    const float4 *v = reinterpret_cast<const float4 *>(seg);
#pragma unroll 4
    for (int k = t; k < nv; k += ROW_THREADS) softmax_push4(m, l, v[k]);
    for (int k = (nv << 2) + t; k < n; k += ROW_THREADS) softmax_push1(m, l, seg[k]);
}

template <typename T, int ROW_THREADS>
__device__ __forceinline__ void softmax_write_segment(const float *seg, T *out, int n, int t, float m,
                                                      float inv_l)
{
    const int nv = n >> 2;
    const float4 *v = reinterpret_cast<const float4 *>(seg);
#pragma unroll 4
    for (int k = t; k < nv; k += ROW_THREADS) {
        float4 x = v[k];
        store4<T>(out + 4 * (int64_t)k, expf(x.x - m) * inv_l, expf(x.y - m) * inv_l,
                  expf(x.z - m) * inv_l, expf(x.w - m) * inv_l);
    }
    for (int k = (nv << 2) + t; k < n; k += ROW_THREADS) out[k] = float_to<T>(expf(seg[k] - m) * inv_l);
}

/* ROW_THREADS threads per row, BLOCK / ROW_THREADS rows per CTA. With ROW_THREADS == 32
 * a row is one warp and needs no CTA barrier; otherwise ROW_THREADS == BLOCK. */
template <typename T, int ROW_THREADS, int BLOCK>
static __global__ void __launch_bounds__(BLOCK)
softmax_rows_kernel(const float *__restrict__ logits, T *__restrict__ probs, softmax_rows_t shape)
{
    static_assert(ROW_THREADS == 32 || ROW_THREADS == BLOCK, "a row is one warp or one CTA");
    const int t = threadIdx.x % ROW_THREADS;
    const int64_t row = (int64_t)blockIdx.x * (BLOCK / ROW_THREADS) + threadIdx.x / ROW_THREADS;
    if (row >= shape.rows) return; /* whole warps (warp rows) or whole CTAs (CTA rows) */

    const float *s = logits + row * shape.ld;
    T *pr = probs + row * shape.ld;
    float m = -INFINITY, l = 0.0f;
    softmax_scan_segment<ROW_THREADS>(s, shape.n0, t, m, l);
    softmax_scan_segment<ROW_THREADS>(s + shape.off1, shape.n1, t, m, l);

#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        float l2 = __shfl_xor_sync(0xffffffffu, l, off);
        softmax_merge(m, l, m2, l2);
    }
    if constexpr (ROW_THREADS > 32) {
        constexpr int WARPS = ROW_THREADS / 32;
        __shared__ float warp_m[WARPS], warp_l[WARPS];
        if (t % 32 == 0) { warp_m[t / 32] = m; warp_l[t / 32] = l; }
        __syncthreads();
        m = warp_m[0];
        l = warp_l[0];
        for (int w = 1; w < WARPS; ++w) softmax_merge(m, l, warp_m[w], warp_l[w]);
    }

    const float inv_l = 1.0f / l;
    softmax_write_segment<T, ROW_THREADS>(s, pr, shape.n0, t, m, inv_l);
    softmax_write_segment<T, ROW_THREADS>(s + shape.off1, pr + shape.off1, shape.n1, t, m, inv_l);
}

template <typename T>
static inline cudaError_t softmax_rows_launch_t(const float *logits, void *probs, const softmax_rows_t *shape,
                                                cudaStream_t stream)
{
    int64_t cols = (int64_t)shape->n0 + shape->n1;
    T *out = static_cast<T *>(probs);
    if (cols <= 1024) {
        int64_t blocks = (shape->rows + 7) / 8;
        if (blocks > 0x7fffffff) return cudaErrorInvalidConfiguration;
        softmax_rows_kernel<T, 32, 256><<<(unsigned)blocks, 256, 0, stream>>>(logits, out, *shape);
    } else {
        if (shape->rows > 0x7fffffff) return cudaErrorInvalidConfiguration;
        if (cols <= 16384)
            softmax_rows_kernel<T, 256, 256><<<(unsigned)shape->rows, 256, 0, stream>>>(logits, out, *shape);
        else
            softmax_rows_kernel<T, 1024, 1024><<<(unsigned)shape->rows, 1024, 0, stream>>>(logits, out, *shape);
    }
    return cudaGetLastError();
}

/* Enqueue the softmax of `shape`: fp32 logits -> probabilities in dtype. */
static inline cudaError_t softmax_rows_launch(dtype_t dtype, const float *logits, void *probs,
                                              const softmax_rows_t *shape, cudaStream_t stream)
{
    switch (dtype) {
    case DTYPE_FP16: return softmax_rows_launch_t<__half>(logits, probs, shape, stream);
    case DTYPE_BF16: return softmax_rows_launch_t<__nv_bfloat16>(logits, probs, shape, stream);
    default: return softmax_rows_launch_t<float>(logits, probs, shape, stream);
    }
}

#endif
