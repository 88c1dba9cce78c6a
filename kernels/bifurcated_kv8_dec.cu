/* `bifurcated` on an 8-bit KV cache (--kv-dtype fp8|int8), the address modes of its parts
 * that `fused` does not use: the decode part's KEYSPLIT (or CUDA-core) body over each
 * stream's K_d/V_d (ADDR_DEC), and the context part's CUDA-core body over K_c/V_c
 * (ADDR_CTX; fp32 queries, other head dims). A paged cache's parts both read the pool,
 * through fused_kv8.cu's ADDR_PAGED instantiations. In a file of their own so that they
 * compile beside bifurcated.cu's. */
#include "attn_core.cuh"

template <typename T, typename KV, int D, int MT>
static attn_kernel_fn dec_kv8_d()
{
    return attn_tc_kernel<tc_traits<T, D, MT, true, ADDR_DEC, 0, KV>>;
}

template <typename T, typename KV>
static attn_kernel_fn dec_kv8_tc(int d, int mt)
{
    switch (d) {
    case 64: return mt == 2 ? dec_kv8_d<T, KV, 64, 2>() : dec_kv8_d<T, KV, 64, 1>();
    case 128: return mt == 2 ? dec_kv8_d<T, KV, 128, 2>() : dec_kv8_d<T, KV, 128, 1>();
    case 256: return dec_kv8_d<T, KV, 256, 1>();
    default: return NULL;
    }
}

template <typename T, typename KV>
static attn_kernel_fn parts_kv8_cc(int addr)
{
    switch (addr) {
    case ADDR_CTX: return attn_cc_kernel<T, ADDR_CTX, KV>;
    case ADDR_DEC: return attn_cc_kernel<T, ADDR_DEC, KV>;
    default: return NULL;
    }
}

template <typename KV>
static attn_kernel_fn parts_kv8_pick(const problem_t *p, int addr)
{
    if (!attn_tc_path(p)) {
        switch (p->dtype) {
        case DTYPE_FP16: return parts_kv8_cc<__half, KV>(addr);
        case DTYPE_BF16: return parts_kv8_cc<__nv_bfloat16, KV>(addr);
        case DTYPE_FP32: return parts_kv8_cc<float, KV>(addr);
        default: return NULL;
        }
    }
    /* the tensor-core context part is ROWSPLIT (bifurcated_kv8_ctx.cu) */
    if (addr != ADDR_DEC) return NULL;
    const int mt = attn_keysplit_mt(p);
    if (p->dtype == DTYPE_FP16) return dec_kv8_tc<__half, KV>(p->head_dim, mt);
    return dec_kv8_tc<__nv_bfloat16, KV>(p->head_dim, mt);
}

attn_kernel_fn attn_keysplit_kv8_parts(const problem_t *p, int addr)
{
    switch (p->kv_quant) {
    case KV_QUANT_FP8: return parts_kv8_pick<kv_fp8>(p, addr);
    case KV_QUANT_INT8: return parts_kv8_pick<kv_int8>(p, addr);
    default: return NULL;
    }
}
