/* Fill kernels: one thread writes 16 bytes per iteration (16 fp8/int8, 8 fp16/bf16 or
 * 4 fp32 elements). d is a multiple of 8, so the elements of one 16-byte vector share
 * their (stream, which, head, pos) and the index is decomposed once per vector;
 * the logical_data.h hash per element is then the main cost. Elements that do not
 * fill a whole vector (or an unaligned buffer) go through the per-element
 * functions of kv_fill.h. */
#include "fill.h"

#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "../problem/kv_fill.h"
#include "../problem/append.h"

namespace {

constexpr int FILL_THREADS = 256;
constexpr int FILL_CTAS_PER_SM = 8;   /* a full SM of 256-thread CTAs: the hash needs the lanes */

/* 64-bit division is a long software sequence on the GPU; nearly every quotient
 * here fits in 32 bits, where the hardware sequence is short. */
__device__ __forceinline__ uint64_t div_u64(uint64_t a, uint32_t b)
{
    return a <= 0xffffffffull ? (uint64_t)((uint32_t)a / b) : a / b;
}

/* Each source gives N consecutive elements starting at e (all in one row of d,
 * used with e % N == 0 and N dividing d), and any single element. */

struct q_source {
    uint64_t seed;
    int heads, d, kv_heads, peaked;
    template <int N> __device__ void values(int64_t e, float *v) const
    {
        uint64_t row = div_u64((uint64_t)e, (uint32_t)d);
        int x = (int)((uint64_t)e - row * d);
        uint64_t query = div_u64(row, (uint32_t)heads);
        int head = (int)(row - query * heads);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = kv_query(seed, peaked, heads, kv_heads, d, (int)query, head, x + i);
    }
    __device__ float scalar(int64_t e) const
    {
        float v;
        values<1>(e, &v);
        return v;
    }
};

/* --step append's packed QKV [B*W, (h + 2g) * d] (problem/append.h); d divides every
 * section, so a vector's elements share one stream and one head. */
struct qkv_source {
    kv_geometry_t g;
    uint64_t seed;
    int heads;
    template <int N> __device__ void values(int64_t e, float *v) const
    {
        const uint32_t width = (uint32_t)(heads + 2 * g.kv_heads) * g.head_dim;
        uint64_t stream = div_u64((uint64_t)e, width);
        int col = (int)((uint64_t)e - stream * width);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = append_qkv_logical(&g, seed, heads, (int)stream, col + i);
    }
    __device__ float scalar(int64_t e) const
    {
        float v;
        values<1>(e, &v);
        return v;
    }
};

/* Splits a row index of a [outer, 2, g, len] tensor into (outer, which, head, pos). */
struct row_coords { int outer, which, head, pos; };

__device__ __forceinline__ row_coords split_row(uint64_t row, uint32_t len, uint32_t kv_heads)
{
    row_coords c;
    uint64_t r = div_u64(row, len);
    c.pos = (int)(row - r * len);
    uint64_t r2 = div_u64(r, kv_heads);
    c.head = (int)(r - r2 * kv_heads);
    c.which = (int)(r2 & 1);
    c.outer = (int)(r2 >> 1);
    return c;
}

struct contiguous_source {
    kv_geometry_t g;
    uint64_t seed;
    template <int N> __device__ void values(int64_t e, float *v) const
    {
        uint64_t row = div_u64((uint64_t)e, (uint32_t)g.head_dim);
        int x = (int)((uint64_t)e - row * g.head_dim);
        row_coords c = split_row(row, (uint32_t)(g.ctx + g.gen), (uint32_t)g.kv_heads);
        const bool padding = c.pos >= kv_keys_of(&g, c.outer); /* past a ragged stream's keys */
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = padding ? quiet_nan() : kv_stored(&g, seed, c.outer, c.which, c.head, c.pos, x + i);
    }
    __device__ float scalar(int64_t e) const { return kv_contiguous_value(&g, seed, e); }
};

struct paged_source {
    kv_geometry_t g;
    uint64_t seed;
    const int32_t *owner, *first_pos;
    template <int N> __device__ void values(int64_t e, float *v) const
    {
        uint64_t row = div_u64((uint64_t)e, (uint32_t)g.head_dim);
        int x = (int)((uint64_t)e - row * g.head_dim);
        row_coords c = split_row(row, (uint32_t)g.block_size, (uint32_t)g.kv_heads);
        int block = c.outer, slot = c.pos;
        int stream = owner[block];
        int pos = first_pos[block] + slot;
        if (stream < 0 || pos >= kv_keys_of(&g, stream)) {
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] = quiet_nan();
            return;
        }
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = kv_stored(&g, seed, stream, c.which, c.head, pos, x + i);
    }
    __device__ float scalar(int64_t e) const { return kv_paged_value(&g, seed, owner, first_pos, e); }
};

struct ctx_source {
    kv_geometry_t g;
    uint64_t seed;
    template <int N> __device__ void values(int64_t e, float *v) const
    {
        uint64_t row = div_u64((uint64_t)e, (uint32_t)g.head_dim);
        int x = (int)((uint64_t)e - row * g.head_dim);
        row_coords c = split_row(row, (uint32_t)g.ctx, (uint32_t)g.kv_heads);
        const bool padding = c.pos >= kv_ctx_of(&g, c.outer); /* past a ragged request's context */
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = padding ? quiet_nan() : kv_store(&g, kv_ctx_logical(&g, seed, c.outer, c.which, c.head, c.pos, x + i), c.which, c.head);
    }
    __device__ float scalar(int64_t e) const { return kv_ctx_value(&g, seed, e); }
};

struct dec_source {
    kv_geometry_t g;
    uint64_t seed;
    template <int N> __device__ void values(int64_t e, float *v) const
    {
        uint64_t row = div_u64((uint64_t)e, (uint32_t)g.head_dim);
        int x = (int)((uint64_t)e - row * g.head_dim);
        row_coords c = split_row(row, (uint32_t)g.gen, (uint32_t)g.kv_heads);
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = kv_store(&g, kv_dec_logical(&g, seed, c.outer, c.which, c.head, c.pos, x + i), c.which, c.head);
    }
    __device__ float scalar(int64_t e) const { return kv_dec_value(&g, seed, e); }
};

/* Storage of one dtype: elements per 16-byte vector and the bits of one element.
 * Every logical value is exactly representable (an 8-bit cache's sources give its
 * codes' values, kv_store), so the rounding mode never acts. */
template <dtype_t DT> struct storage;
template <> struct storage<DTYPE_FP16> {
    static constexpr int vec = 8;
    static __device__ uint32_t bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
template <> struct storage<DTYPE_BF16> {
    static constexpr int vec = 8;
    static __device__ uint32_t bits(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <> struct storage<DTYPE_FP32> {
    static constexpr int vec = 4;
    static __device__ uint32_t bits(float f) { return __float_as_uint(f); }
};
/* The 8-bit caches' NaN slots (the paged pool's unused ones) become e4m3's NaN and
 * int8's INT8_CODE_UNUSED. */
template <> struct storage<DTYPE_FP8> {
    static constexpr int vec = 16;
    static __device__ uint32_t bits(float f) { return e4m3_from_float(f); }
};
template <> struct storage<DTYPE_INT8> {
    static constexpr int vec = 16;
    static __device__ uint32_t bits(float f) { return int8_from_float(f); }
};

template <dtype_t DT> __device__ __forceinline__ uint4 pack(const float *v)
{
    constexpr int PER_WORD = storage<DT>::vec / 4, BITS = 32 / PER_WORD;
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        w[i] = 0;
#pragma unroll
        for (int j = 0; j < PER_WORD; ++j) w[i] |= storage<DT>::bits(v[PER_WORD * i + j]) << (BITS * j);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <dtype_t DT, typename Src>
__global__ void fill_vectors(uint4 *out, int64_t n_vec, Src src)
{
    constexpr int N = storage<DT>::vec;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < n_vec; v += stride) {
        float f[N];
        src.template values<N>(v * N, f);
        out[v] = pack<DT>(f);
    }
}

template <dtype_t DT, typename Src>
__global__ void fill_scalars(void *out, int64_t begin, int64_t end, Src src)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < end; e += stride) {
        uint32_t b = storage<DT>::bits(src.scalar(e));
        if (storage<DT>::vec == 16) ((uint8_t *)out)[e] = (uint8_t)b;
        else if (storage<DT>::vec == 8) ((uint16_t *)out)[e] = (uint16_t)b;
        else ((uint32_t *)out)[e] = b;
    }
}

cudaError_t grid_for(int64_t work, int *grid)
{
    int dev = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err != cudaSuccess) return err;
    int64_t blocks = (work + FILL_THREADS - 1) / FILL_THREADS;
    int64_t cap = (int64_t)sms * FILL_CTAS_PER_SM;
    *grid = (int)(blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
    return cudaSuccess;
}

/* Fills elements [0, elements) of buf; row_len is the length of the rows whose
 * index the sources decompose (d). */
template <dtype_t DT, typename Src>
cudaError_t launch_fill(void *buf, int64_t elements, int row_len, Src src, cudaStream_t s)
{
    constexpr int N = storage<DT>::vec;
    bool vectors_ok = row_len % N == 0 && (uintptr_t)buf % 16 == 0;
    int64_t n_vec = vectors_ok ? elements / N : 0;
    int grid = 0;
    cudaError_t err;
    if (n_vec > 0) {
        if ((err = grid_for(n_vec, &grid)) != cudaSuccess) return err;
        fill_vectors<DT, Src><<<grid, FILL_THREADS, 0, s>>>((uint4 *)buf, n_vec, src);
        if ((err = cudaGetLastError()) != cudaSuccess) return err;
    }
    int64_t done = n_vec * N;
    if (done < elements) {
        if ((err = grid_for(elements - done, &grid)) != cudaSuccess) return err;
        fill_scalars<DT, Src><<<grid, FILL_THREADS, 0, s>>>(buf, done, elements, src);
        if ((err = cudaGetLastError()) != cudaSuccess) return err;
    }
    return cudaSuccess;
}

template <typename Src>
cudaError_t launch_fill_dtype(void *buf, int64_t elements, dtype_t t, int row_len, Src src,
                              cudaStream_t s)
{
    switch (t) {
    case DTYPE_FP16: return launch_fill<DTYPE_FP16>(buf, elements, row_len, src, s);
    case DTYPE_BF16: return launch_fill<DTYPE_BF16>(buf, elements, row_len, src, s);
    case DTYPE_FP32: return launch_fill<DTYPE_FP32>(buf, elements, row_len, src, s);
    case DTYPE_FP8: return launch_fill<DTYPE_FP8>(buf, elements, row_len, src, s);
    case DTYPE_INT8: return launch_fill<DTYPE_INT8>(buf, elements, row_len, src, s);
    }
    return cudaErrorInvalidValue;
}

/* Host conversions of the stored bits; the raw structs make them independent of
 * which intrinsics the toolkit offers on the host. */
float fp16_bits_to_float(uint16_t b)
{
    __half_raw r;
    r.x = b;
    return __half2float(__half(r));
}

float bf16_bits_to_float(uint16_t b)
{
    __nv_bfloat16_raw r;
    r.x = b;
    return __bfloat162float(__nv_bfloat16(r));
}

} // namespace

extern "C" cudaError_t fill_q(void *q, const problem_t *p, uint64_t seed, cudaStream_t s)
{
    if (!q || !p || p->heads <= 0 || p->head_dim <= 0 || p->batch <= 0 || p->beam <= 0)
        return cudaErrorInvalidValue;
    int64_t elements = (int64_t)problem_queries(p) * p->heads * p->head_dim;
    if (p->dtype != DTYPE_FP16 && p->dtype != DTYPE_BF16 && p->dtype != DTYPE_FP32) return cudaErrorInvalidValue;
    q_source src = {seed, p->heads, p->head_dim, p->kv_heads, p->scores == SCORES_PEAKED};
    return launch_fill_dtype(q, elements, p->dtype, p->head_dim, src, s);
}

extern "C" cudaError_t fill_qkv(void *qkv, const problem_t *p, const kv_geometry_t *g, uint64_t seed,
                                cudaStream_t s)
{
    if (!qkv || !p || !g || p->step != STEP_APPEND || p->gen <= 0 || p->head_dim <= 0 || p->heads <= 0)
        return cudaErrorInvalidValue;
    if (p->dtype != DTYPE_FP16 && p->dtype != DTYPE_BF16 && p->dtype != DTYPE_FP32) return cudaErrorInvalidValue;
    int64_t elements = (int64_t)problem_streams(p) * (p->heads + 2 * p->kv_heads) * p->head_dim;
    qkv_source src = {*g, seed, p->heads};
    return launch_fill_dtype(qkv, elements, p->dtype, p->head_dim, src, s);
}

extern "C" cudaError_t fill_kv(void *buf, int64_t elements, dtype_t t, const kv_geometry_t *g,
                               int part, uint64_t seed, const int32_t *d_owner,
                               const int32_t *d_first_pos, cudaStream_t s)
{
    if (!buf || !g || elements < 0 || g->head_dim <= 0 || g->kv_heads <= 0) return cudaErrorInvalidValue;
    /* codes are stored exactly where the geometry quantises, and nowhere else */
    if ((t == DTYPE_FP8) != (g->kv_quant == KV_QUANT_FP8) || (t == DTYPE_INT8) != (g->kv_quant == KV_QUANT_INT8))
        return cudaErrorInvalidValue;
    if (elements == 0) return cudaSuccess;
    if (part == FILL_KV_DECODED) {
        if (g->gen <= 0) return cudaErrorInvalidValue;
        dec_source src = {*g, seed};
        return launch_fill_dtype(buf, elements, t, g->head_dim, src, s);
    }
    if (part != FILL_KV_MAIN) return cudaErrorInvalidValue;
    switch (g->layout) {
    case LAYOUT_CONTIGUOUS: {
        if (g->ctx + g->gen <= 0 || g->beam <= 0) return cudaErrorInvalidValue;
        contiguous_source src = {*g, seed};
        return launch_fill_dtype(buf, elements, t, g->head_dim, src, s);
    }
    case LAYOUT_PAGED: {
        if (!d_owner || !d_first_pos || g->block_size <= 0 || g->beam <= 0) return cudaErrorInvalidValue;
        paged_source src = {*g, seed, d_owner, d_first_pos};
        return launch_fill_dtype(buf, elements, t, g->head_dim, src, s);
    }
    case LAYOUT_BIFURCATED: {
        if (g->ctx <= 0) return cudaErrorInvalidValue;
        ctx_source src = {*g, seed};
        return launch_fill_dtype(buf, elements, t, g->head_dim, src, s);
    }
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t fill_nan(void *buf, int64_t elements, dtype_t t, cudaStream_t s)
{
    if (!buf || elements < 0 || (t != DTYPE_FP16 && t != DTYPE_BF16 && t != DTYPE_FP32))
        return cudaErrorInvalidValue;
    /* 0xff in every byte is a NaN whatever the dtype: exponent all ones, mantissa non-zero. */
    return cudaMemsetAsync(buf, 0xff, (size_t)elements * dtype_size(t), s);
}

extern "C" cudaError_t download_as_float(const void *d_buf, int64_t elements, dtype_t t, float *host)
{
    if (!d_buf || !host || elements < 0) return cudaErrorInvalidValue;
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess || elements == 0) return err;
    if (t == DTYPE_FP32) return cudaMemcpy(host, d_buf, (size_t)elements * sizeof(float), cudaMemcpyDeviceToHost);
    if (t != DTYPE_FP16 && t != DTYPE_BF16) return cudaErrorInvalidValue;
    uint16_t *bits = (uint16_t *)malloc((size_t)elements * sizeof *bits);
    if (!bits) return cudaErrorMemoryAllocation;
    err = cudaMemcpy(bits, d_buf, (size_t)elements * sizeof *bits, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess) {
        for (int64_t i = 0; i < elements; ++i)
            host[i] = t == DTYPE_FP16 ? fp16_bits_to_float(bits[i]) : bf16_bits_to_float(bits[i]);
    }
    free(bits);
    return err;
}
