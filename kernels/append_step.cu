/* --step append's kernel (kernels/append_step.h). One thread per rotated pair of a head of the
 * packed QKV row: q and k pairs turn by RoPE (the cos/sin table's entry of the pair, the
 * products in double as problem/append.h's rope_turn), v pairs are copied; each thread
 * stores its two elements. The step moves a few hundred kilobytes at most, so the kernel
 * is one short grid. */
#include "append_step.h"

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "../problem/append.h"

namespace {

constexpr int APPEND_THREADS = 256;
constexpr int APPEND_MAX_CTAS = 4096;

template <typename T> struct elem;
template <> struct elem<__half> {
    static __device__ float load(const __half *p) { return __half2float(*p); }
    static __device__ void store(__half *p, float v) { *p = __float2half_rn(v); }
};
template <> struct elem<__nv_bfloat16> {
    static __device__ float load(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
    static __device__ void store(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
};
template <> struct elem<float> {
    static __device__ float load(const float *p) { return *p; }
    static __device__ void store(float *p, float v) { *p = v; }
};

struct append_params {
    kv_geometry_t g;
    int heads, streams, rope;
    const float *rope_cs;      /* [d/2][2]: cos, sin */
    const int32_t *block_table;
    const float *kv_scale;     /* 8-bit cache: [2][scale_entries] */
    int scale_entries;
};

/* The offset of row (stream, which, head) of the current position in the cache buffer
 * that holds it; the current position is always the stream's own (no indirection). */
__device__ __forceinline__ int64_t slot_offset(const append_params &P, int stream, int which, int head)
{
    int in_ctx;
    return kv_row_offset(&P.g, P.block_table, nullptr, stream, which, head,
                         append_position(P.g.ctx, P.g.gen), &in_ctx);
}

/* KV8: the cache holds 8-bit codes (P.g.kv_quant), else elements of T. */
template <typename T, bool KV8>
__global__ void __launch_bounds__(APPEND_THREADS)
append_kernel(const T *__restrict__ qkv, T *__restrict__ q, void *__restrict__ cache, append_params P)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* the attention grid after this one (attn_params_t.after_append) may be set up now:
     * it waits for this grid's end before it reads what this one writes */
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
    const int64_t pairs = (int64_t)P.streams * (P.heads + 2 * P.g.kv_heads) * (P.g.head_dim / 2);
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < pairs;
         t += (int64_t)gridDim.x * blockDim.x) {
        const append_pair_t w = append_pair_at(&P.g, P.block_table, P.heads, P.rope, t);
        const float a = elem<T>::load(qkv + w.src + w.x0), b = elem<T>::load(qkv + w.src + w.x1);
        float y0 = a, y1 = b;
        if (w.rotate) {
            double r0, r1;
            rope_turn(a, b, P.rope_cs[2 * w.i], P.rope_cs[2 * w.i + 1], &r0, &r1);
            y0 = (float)r0;
            y1 = (float)r1;
        }
        if (!w.to_cache) {
            elem<T>::store(q + w.dst + w.x0, y0);
            elem<T>::store(q + w.dst + w.x1, y1);
        } else if (KV8) {
            const float sc = P.kv_scale[w.which * P.scale_entries + (P.scale_entries > 1 ? w.head : 0)];
            uint8_t *c = static_cast<uint8_t *>(cache) + w.dst;
            c[w.x0] = kv_quant_code(P.g.kv_quant, y0 / sc);
            c[w.x1] = kv_quant_code(P.g.kv_quant, y1 / sc);
        } else {
            T *c = static_cast<T *>(cache) + w.dst;
            elem<T>::store(c + w.x0, y0);
            elem<T>::store(c + w.x1, y1);
        }
    }
}

/* One thread per byte of the current slots: rows of (stream, which, head). */
__global__ void __launch_bounds__(APPEND_THREADS)
poison_kernel(uint8_t *cache, append_params P, int elem_bytes, uint8_t byte)
{
    const int row_bytes = P.g.head_dim * elem_bytes;
    const int64_t n = (int64_t)P.streams * 2 * P.g.kv_heads * row_bytes;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int x = (int)(t % row_bytes);
        const int64_t r = t / row_bytes;
        const int head = (int)(r % P.g.kv_heads), which = (int)(r / P.g.kv_heads % 2);
        const int stream = (int)(r / P.g.kv_heads / 2);
        cache[slot_offset(P, stream, which, head) * elem_bytes + x] = byte;
    }
}

int ctas_for(int64_t work)
{
    int64_t n = (work + APPEND_THREADS - 1) / APPEND_THREADS;
    return (int)(n < 1 ? 1 : (n > APPEND_MAX_CTAS ? APPEND_MAX_CTAS : n));
}

append_params params_of(const attn_args_t *a)
{
    const problem_t *p = &a->problem;
    append_params P;
    P.g = a->geom;
    P.heads = p->heads;
    P.streams = problem_streams(p);
    P.rope = p->rope;
    P.rope_cs = a->rope_cs;
    P.block_table = a->block_table;
    P.kv_scale = a->kv_scale;
    P.scale_entries = kv_scale_entries(&a->geom);
    return P;
}

template <typename T>
cudaError_t launch_typed(const attn_args_t *a, void *q, void *cache, cudaStream_t s)
{
    const append_params P = params_of(a);
    const int64_t pairs = (int64_t)P.streams * (P.heads + 2 * P.g.kv_heads) * (P.g.head_dim / 2);
    const T *qkv = static_cast<const T *>(a->qkv);
    if (P.g.kv_quant)
        append_kernel<T, true><<<ctas_for(pairs), APPEND_THREADS, 0, s>>>(qkv, static_cast<T *>(q), cache, P);
    else
        append_kernel<T, false><<<ctas_for(pairs), APPEND_THREADS, 0, s>>>(qkv, static_cast<T *>(q), cache, P);
    return cudaGetLastError();
}

bool args_ok(const attn_args_t *a, const void *cache)
{
    const problem_t *p = &a->problem;
    if (!cache || p->step != STEP_APPEND || p->head_dim % 2) return false;
    if (a->geom.layout == LAYOUT_PAGED && !a->block_table) return false;
    return !a->geom.kv_quant || a->kv_scale;
}

} // namespace

extern "C" cudaError_t append_launch(const attn_args_t *a, void *q, void *cache, cudaStream_t s)
{
    if (!a || !a->qkv || !a->rope_cs || !q || !args_ok(a, cache)) return cudaErrorInvalidValue;
    switch (a->problem.dtype) {
    case DTYPE_FP16: return launch_typed<__half>(a, q, cache, s);
    case DTYPE_BF16: return launch_typed<__nv_bfloat16>(a, q, cache, s);
    case DTYPE_FP32: return launch_typed<float>(a, q, cache, s);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t append_poison(const attn_args_t *a, void *cache, cudaStream_t s)
{
    if (!a || !args_ok(a, cache)) return cudaErrorInvalidValue;
    const append_params P = params_of(a);
    const int elem_bytes = (int)dtype_size(problem_kv_dtype(&a->problem));
    /* all bits set is NaN in fp16, bf16, fp32 and e4m3 */
    const uint8_t byte = a->geom.kv_quant == KV_QUANT_INT8 ? INT8_CODE_UNUSED : 0xff;
    const int64_t n = (int64_t)P.streams * 2 * P.g.kv_heads * P.g.head_dim * elem_bytes;
    poison_kernel<<<ctas_for(n), APPEND_THREADS, 0, s>>>(static_cast<uint8_t *>(cache), P, elem_bytes, byte);
    return cudaGetLastError();
}
