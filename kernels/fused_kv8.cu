/* `fused` on an 8-bit KV cache (--kv-dtype fp8|int8): the instantiations of the KEYSPLIT
 * and CUDA-core bodies of attn_core.cuh over e4m3 or int8 codes, in a file of their own
 * so that they compile beside fused.cu's. fused.cu launches them (keysplit_pick) as it
 * launches its 16-bit ones, on a contiguous or paged cache, with indirection, and split
 * grids merged as theirs are; bifurcated's decode part on a paged cache runs them too. */
#include "attn_core.cuh"

template <typename T, typename KV, int D, int MT>
static attn_kernel_fn kv8_fn_d(int addr)
{
    switch (addr) {
    case ADDR_CONTIG: return attn_tc_kernel<tc_traits<T, D, MT, true, ADDR_CONTIG, 0, KV>>;
    case ADDR_PAGED: return attn_tc_kernel<tc_traits<T, D, MT, true, ADDR_PAGED, 0, KV>>;
    default: return NULL;
    }
}

/* The tensor-core instantiations: d = 64, 128 (one or two m tiles) and 256, and the
 * deep ring of d = 128 on a contiguous cache (attn_ring). */
template <typename T, typename KV>
static attn_kernel_fn kv8_tc_fn(int d, int mt, int addr, int ring)
{
    if (ring == ATTN_RING_DEEP)
        return addr == ADDR_CONTIG ? attn_tc_kernel<tc_traits<T, 128, 1, true, ADDR_CONTIG, ATTN_DEEP_STAGES, KV>> : NULL;
    switch (d) {
    case 64: return mt == 2 ? kv8_fn_d<T, KV, 64, 2>(addr) : kv8_fn_d<T, KV, 64, 1>(addr);
    case 128: return mt == 2 ? kv8_fn_d<T, KV, 128, 2>(addr) : kv8_fn_d<T, KV, 128, 1>(addr);
    case 256: return kv8_fn_d<T, KV, 256, 1>(addr);
    default: return NULL;
    }
}

template <typename T, typename KV>
static attn_kernel_fn kv8_cc_fn(int addr)
{
    switch (addr) {
    case ADDR_CONTIG: return attn_cc_kernel<T, ADDR_CONTIG, KV>;
    case ADDR_PAGED: return attn_cc_kernel<T, ADDR_PAGED, KV>;
    default: return NULL;
    }
}

template <typename KV>
static attn_kernel_fn kv8_pick(const problem_t *p, int addr, int ring)
{
    if (!attn_tc_path(p)) {
        switch (p->dtype) {
        case DTYPE_FP16: return kv8_cc_fn<__half, KV>(addr);
        case DTYPE_BF16: return kv8_cc_fn<__nv_bfloat16, KV>(addr);
        case DTYPE_FP32: return kv8_cc_fn<float, KV>(addr);
        default: return NULL;
        }
    }
    const int mt = attn_keysplit_mt(p), r = attn_ring(p, ring);
    if (p->dtype == DTYPE_FP16) return kv8_tc_fn<__half, KV>(p->head_dim, mt, addr, r);
    return kv8_tc_fn<__nv_bfloat16, KV>(p->head_dim, mt, addr, r);
}

attn_kernel_fn attn_keysplit_kv8(const problem_t *p, int addr, int ring)
{
    /* bifurcated's per-part address modes: bifurcated_kv8_dec.cu */
    if (addr == ADDR_CTX || addr == ADDR_DEC) return attn_keysplit_kv8_parts(p, addr);
    switch (p->kv_quant) {
    case KV_QUANT_FP8: return kv8_pick<kv_fp8>(p, addr, ring);
    case KV_QUANT_INT8: return kv8_pick<kv_int8>(p, addr, ring);
    default: return NULL;
    }
}
