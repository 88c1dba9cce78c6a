/* `bifurcated`'s context part on an 8-bit KV cache (--kv-dtype fp8|int8): the ROWSPLIT
 * instantiations of attn_core.cuh's tensor-core body over e4m3 or int8 codes, each warp
 * 16 of the request's W*p query rows and all 64 keys of a tile, so a tile of codes serves
 * 64 queries. The steps are fused's 8-bit ones (tc_scores8, tc_accumulate_pv8), K's scale
 * in the softmax scale and V's in the partial; the ring's stages are kv8_rowsplit's. In a file of their own so that they compile
 * beside bifurcated.cu's. */
#include "attn_core.cuh"

template <typename T, typename KV, int D>
static attn_kernel_fn rowsplit_kv8_d(int addr)
{
    switch (addr) {
    case ADDR_CTX: return attn_tc_kernel<tc_traits<T, D, 1, false, ADDR_CTX, kv8_rowsplit<D>::ST, KV>>;
    case ADDR_PAGED: return attn_tc_kernel<tc_traits<T, D, 1, false, ADDR_PAGED, kv8_rowsplit<D>::ST, KV>>;
    default: return NULL;
    }
}

template <typename T, typename KV>
static attn_kernel_fn rowsplit_kv8_t(int d, int addr)
{
    switch (d) {
    case 64: return rowsplit_kv8_d<T, KV, 64>(addr);
    case 128: return rowsplit_kv8_d<T, KV, 128>(addr);
    case 256: return rowsplit_kv8_d<T, KV, 256>(addr);
    default: return NULL;
    }
}

template <typename KV>
static attn_kernel_fn rowsplit_kv8_kv(const problem_t *p, int addr)
{
    if (!attn_tc_path(p)) return NULL;
    if (p->dtype == DTYPE_FP16) return rowsplit_kv8_t<__half, KV>(p->head_dim, addr);
    return rowsplit_kv8_t<__nv_bfloat16, KV>(p->head_dim, addr);
}

attn_kernel_fn attn_rowsplit_kv8(const problem_t *p, int addr)
{
    switch (p->kv_quant) {
    case KV_QUANT_FP8: return rowsplit_kv8_kv<kv_fp8>(p, addr);
    case KV_QUANT_INT8: return rowsplit_kv8_kv<kv_int8>(p, addr);
    default: return NULL;
    }
}
