/* `flashinfer`: FlashInfer 0.7.2's batch decode over a paged KV cache, built from the
 * headers `make peers` unpacks, called the way the wheel's own host code calls it
 * (csrc/batch_decode.cu and its jinja config for the CUDA-core decode;
 * csrc/batch_prefill_paged.cuh for the tensor-core decode that
 * BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True) runs).
 *
 * Path: the CUDA-core decode (BatchDecodeWithPagedKVCacheDispatched) for the group sizes
 * it is compiled for (p = h/g in 1, 2, 3, 4, 6, 8, 16: its DISPATCH_GQA_GROUP_SIZE);
 * any other p up to 64 runs the FA2 tensor-core kernel FlashInfer's wrapper uses for
 * decode with use_tensor_cores=True (BatchPrefillWithPagedKVCacheDispatched, one query
 * row per request, CTA_TILE_Q 16 or 64). Settings are the wrapper's defaults: HND layout,
 * no RoPE, no logits soft cap, no sliding window, DefaultAttention, no CUDA-graph mode,
 * split-KV as its plan() decides, PDL on compute capability 9.0 and newer.
 *
 * Page table: on the paged cache our block table is FlashInfer's `indices` as it
 * stands (every stream has exactly ceil(L/S) blocks), indptr[i] = i * ceil(L/S),
 * last_page_len = L - (ceil(L/S) - 1) * S, and K and V are addressed through explicit
 * strides in our block [2][g][S][d]: K at offset 0, V at g*S*d, stride_page 2*g*S*d.
 * On the contiguous cache [B*W, 2, g, L, d] the same strides describe pages of P tokens
 * laid over each stream's region (P the largest power of two up to 64 that divides
 * 2*g*L): page i starts at element i*P*d, a head is L*d further, and stream s's pages
 * are s*2*g*L/P + j. Nothing is copied either way.
 *
 * --q-len n > 1 (speculative decoding) runs what BatchPrefillWithPagedKVCacheWrapper
 * runs for n query tokens per request with causal=True: the same FA2 tensor-core kernel,
 * qo_indptr = 0, n, 2n, ..., MaskMode::kCausal (token j sees keys up to L - n + j, as
 * ours), Q and O [B*W*n, h, d] as the ragged [nnz_qo, h, d] it takes.
 *
 * Host planning (FlashInfer's plan(): work estimation, split, its int workspace upload)
 * is done in setup; launch() only builds the kernel parameters and enqueues.
 *
 * An e4m3 cache (--kv-dtype fp8 --kv-scale tensor) is the same pages of 1-byte codes,
 * read by the same kernels built with DTypeKV __nv_fp8_e4m3 (queries and output stay
 * fp16 or bf16). The scales are the wrapper's k_scale and v_scale floats, handled as its
 * run() handles them: sm_scale *= k_scale, and after the kernel `out *= v_scale`, an
 * elementwise pass of its own (decode.py), timed with the step. */
#include "peer_stub.h"

#ifdef ATTN_HAVE_FLASHINFER

#include <stdio.h>
#include <stdlib.h>
#include <exception>
#include <new>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/prefill.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>
#include <flashinfer/page.cuh>
#include "peer_scales.h"

namespace fi = flashinfer;

/* The wrapper's default variant (no custom mask, no sliding window, no soft cap, no
 * ALiBi), as gen_batch_decode_module and the fa2 batch prefill module name it. */
typedef fi::DefaultAttention<false, false, false, false> fi_variant;
typedef int32_t fi_id;
typedef __nv_fp8_e4m3 fi_e4m3;

/* The Params of csrc/batch_decode_customize_config.jinja with the default module's
 * additional parameters (maybe_alibi_slopes, logits_soft_cap, sm_scale, rope_rcp_scale,
 * rope_rcp_theta), one struct per query and cache element type instead of one per
 * generated module (the output is in the query's type). */
template <typename TQ, typename TKV>
struct fi_decode_params {
    using DTypeQ = TQ;
    using DTypeKV = TKV;
    using DTypeO = TQ;
    using IdType = fi_id;

    DTypeQ *q;
    fi::paged_kv_t<DTypeKV, IdType> paged_kv;
    DTypeO *o;
    float *lse;

    float *maybe_alibi_slopes;
    double logits_soft_cap;
    double sm_scale;
    double rope_rcp_scale;
    double rope_rcp_theta;

    uint32_t padded_batch_size;
    uint32_t num_qo_heads;
    IdType q_stride_n;
    IdType q_stride_h;
    int32_t window_left;
    bool enable_pdl;

    IdType *request_indices;
    IdType *kv_tile_indices;
    IdType *o_indptr;
    IdType *kv_chunk_size_ptr;
    bool *block_valid_mask;
    bool partition_kv;

    __host__ __device__ __forceinline__ int32_t get_qo_len(int32_t batch_idx) const { return 1; }
    __host__ __device__ __forceinline__ int32_t get_kv_len(int32_t batch_idx) const
    {
        return paged_kv.get_length(batch_idx);
    }
};

/* The PagedParams of csrc/batch_prefill_customize_config.jinja with the fa2 module's
 * additional parameters (gen_batch_prefill_module, backend "fa2"). */
template <typename TQ, typename TKV>
struct fi_prefill_params {
    using DTypeQ = TQ;
    using DTypeKV = TKV;
    using DTypeO = TQ;
    using IdType = fi_id;

    DTypeQ *q;
    fi::paged_kv_t<DTypeKV, IdType> paged_kv;
    IdType *q_indptr;
    DTypeO *o;
    float *lse;
    fi::uint_fastdiv group_size;

    uint8_t *maybe_custom_mask;
    int32_t *maybe_mask_indptr;
    float *maybe_alibi_slopes;
    uint32_t *maybe_prefix_len_ptr;
    uint16_t *maybe_token_pos_in_items_ptr;
    uint16_t *maybe_max_item_len_ptr;
    uint8_t *maybe_k_cache_sf;
    uint8_t *maybe_v_cache_sf;
    double logits_soft_cap;
    double sm_scale;
    double rope_rcp_scale;
    double rope_rcp_theta;
    int64_t token_pos_in_items_len;

    uint32_t num_qo_heads;
    IdType q_stride_n;
    IdType q_stride_h;
    uint32_t k_sf_stride_page;
    uint32_t k_sf_stride_n;
    uint32_t k_sf_stride_h;
    uint32_t v_sf_stride_page;
    uint32_t v_sf_stride_n;
    uint32_t v_sf_stride_h;
    int32_t window_left;

    IdType *request_indices;
    IdType *qo_tile_indices;
    IdType *kv_tile_indices;
    IdType *merge_indptr;
    IdType *o_indptr;
    bool *block_valid_mask;
    IdType *kv_chunk_size_ptr;
    uint32_t max_total_num_rows;
    uint32_t *total_num_rows;
    uint32_t padded_batch_size;
    bool partition_kv;

    __host__ __device__ __forceinline__ uint32_t get_qo_len(uint32_t batch_idx) const
    {
        return q_indptr[batch_idx + 1] - q_indptr[batch_idx];
    }
    __host__ __device__ __forceinline__ uint32_t get_kv_len(uint32_t batch_idx) const
    {
        return paged_kv.get_length(batch_idx);
    }
};

/* ------------------------------------------------------------ shapes and page tables */

extern "C" const attn_kernel_t kernel_flashinfer;

/* plan->variant: bit 0 the tensor-core path; the bits above hold the SM count the plan
 * was made for, which bounds FlashInfer's split partials (fi_private_bytes). */
#define FI_TENSOR_CORE 1
/* The SM count assumed when the plan had no device: above any GPU's, so the bound holds. */
#define FI_SM_UNKNOWN 1024
/* Largest contiguous-cache page; the paged suites use 64-token blocks too. */
#define FI_CONTIG_PAGE_MAX 64
/* Device allocations are rounded up to this for private_bytes (cudaMalloc's page). */
#define FI_ALLOC_GRANULE ((size_t)2 << 20)

/* The group sizes FlashInfer's CUDA-core decode is compiled for (DISPATCH_GQA_GROUP_SIZE). */
static bool fi_cuda_core_group(int group)
{
    return group == 1 || group == 2 || group == 3 || group == 4 || group == 6 || group == 8 ||
           group == 16;
}

/* The CTA_TILE_Q FlashInfer's scheduler picks for `packed` = n*p packed query rows per
 * request (FA2DetermineCtaTileQ, head_dim < 256, Ampere or newer). */
static int fi_cta_tile_q(int packed) { return packed > 64 ? 128 : packed > 16 ? 64 : 16; }

/* Whether a problem runs the FA2 tensor-core (prefill) kernel: several query tokens per
 * stream, or a group size the CUDA-core decode is not compiled for. */
static bool fi_tensor_core(const problem_t *p)
{
    return p->q_len > 1 || !fi_cuda_core_group(problem_group(p));
}

/* Where FlashInfer reads K and V: pages of `page_size` tokens, element strides in HND
 * order (page, head, token), V `v_offset` elements after K, and `pages` pages per stream
 * whose indices are `index_base * stream + j` on the contiguous cache. */
typedef struct fi_geometry {
    int streams;
    int page_size;
    int pages;
    int64_t stride_page, stride_h, stride_n;
    int64_t v_offset;
    int64_t index_base;
} fi_geometry_t;

static fi_geometry_t fi_geometry_of(const problem_t *p)
{
    fi_geometry_t g;
    const int64_t L = problem_keys(p), d = p->head_dim, kvh = p->kv_heads;
    g.streams = problem_streams(p);
    g.stride_n = d;
    if (p->cache == CACHE_PAGED) {
        g.page_size = p->block_size;
        g.stride_page = 2 * kvh * p->block_size * d;
        g.stride_h = (int64_t)p->block_size * d;
        g.v_offset = kvh * p->block_size * d;
        g.index_base = 0;
    } else {
        /* any P dividing 2*g*L puts every stream's region on a page boundary */
        const int64_t region = 2 * kvh * L;
        int P = 1;
        while (P < FI_CONTIG_PAGE_MAX && region % (2 * P) == 0) P *= 2;
        g.page_size = P;
        g.stride_page = (int64_t)P * d;
        g.stride_h = L * d;
        g.v_offset = kvh * L * d;
        g.index_base = region / P;
    }
    g.pages = (int)((L + g.page_size - 1) / g.page_size);
    return g;
}

/* Bytes of the page tables the kernel reads: indices (our block table on the paged
 * cache), indptr and last_page_len. */
static double fi_table_bytes(const problem_t *p)
{
    const fi_geometry_t g = fi_geometry_of(p);
    return ((double)g.streams * g.pages + 2.0 * g.streams + 1.0) * sizeof(fi_id);
}

/* FlashInfer keeps page iterators, strides and q/o offsets in 32 bits. */
static const char *fi_size_limits(const problem_t *p)
{
    const fi_geometry_t g = fi_geometry_of(p);
    const int64_t tokens = (int64_t)g.streams * g.pages * g.page_size;
    const int64_t max_index = p->cache == CACHE_PAGED ? 0 : g.index_base * g.streams;
    const int64_t rows = (int64_t)g.streams * p->q_len * p->heads * p->head_dim;
    if (tokens >= INT32_MAX || max_index >= INT32_MAX || rows >= INT32_MAX ||
        g.stride_page >= UINT32_MAX || g.stride_h >= UINT32_MAX)
        return "beyond FlashInfer's 32-bit page iterators, strides and q/o offsets";
    return NULL;
}

/* Why FlashInfer cannot read this 8-bit cache here, or NULL. */
static const char *fi_kv8_unsupported(const problem_t *p)
{
    if (p->kv_quant == KV_QUANT_INT8)
        return "FlashInfer's decode reads no int8 cache (8-bit caches: fp8 e4m3 or e5m2)";
    if (p->kv_quant == KV_QUANT_FP8 && p->kv_scale == KV_SCALE_HEAD)
        return "FlashInfer takes k_scale and v_scale as one float each, none per kv head: --kv-scale tensor";
    if (p->kv_quant == KV_QUANT_FP8 && p->head_dim != 128)
        return "FlashInfer's decode over an e4m3 cache is built here for head_dim 128 only";
    return NULL;
}

static const char *fi_unsupported(const problem_t *p)
{
    if (problem_ragged(p))
        return "FlashInfer's plan is given one length for every request here, not ragged --ctx-dist lengths";
    if (p->dtype == DTYPE_FP32)
        return "FlashInfer's decode is built here for fp16 and bf16 (its wrapper has no fp32 path)";
    if (p->head_dim != 64 && p->head_dim != 128)
        return "FlashInfer's decode is built here for head_dim 64 and 128 only";
    const char *kv8 = fi_kv8_unsupported(p);
    if (kv8) return kv8;
    if (p->indirection)
        return "FlashInfer has no cache indirection: it reads each stream's K/V where they lie";
    if (p->multi_block != MULTI_BLOCK_AUTO || p->splits > 0)
        return "FlashInfer's plan() chooses its own KV split (--multi-block auto only, no --splits)";
    const int group = problem_group(p);
    if (fi_tensor_core(p) && fi_cta_tile_q(p->q_len * group) > 64)
        return p->q_len > 1 ? "q_len x h/g above 64 rows: its causal prefill would need CTA_TILE_Q 128, not built here"
                            : "group size h/g above 64: its tensor-core decode would need CTA_TILE_Q 128, "
                              "not built here";
    return fi_size_limits(p);
}

static kv_layout_t fi_layout(const problem_t *p)
{
    return p->cache == CACHE_PAGED ? LAYOUT_PAGED : LAYOUT_CONTIGUOUS;
}

static void fi_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    plan->runs = &kernel_flashinfer;
    /* FlashInfer splits in its own plan() at setup; the row's splits column reads 1 */
    plan->split = split_plan_fixed(problem_keys(p), 1, 1);
    const int sms = dev && dev->sm_count > 0 ? dev->sm_count : FI_SM_UNKNOWN;
    plan->variant = (fi_tensor_core(p) ? FI_TENSOR_CORE : 0) | (sms << 1);
}

static size_t fi_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)p; (void)plan;
    return 0; /* FlashInfer's workspaces are its own (private_bytes) */
}

static size_t fi_granule(size_t bytes)
{
    return (bytes + FI_ALLOC_GRANULE - 1) / FI_ALLOC_GRANULE * FI_ALLOC_GRANULE;
}

/* Page tables, then FlashInfer's float and int workspaces at their largest. A split
 * plan launches at most (CTAs per SM, 32 at most) * SMs / g CTAs (CUDA core) or
 * 2 * SMs / g (tensor core), each writing one partial row per query head of its kv head
 * (up to CTA_TILE_Q / p rows on the tensor-core path); the int workspace holds a few
 * indices per CTA and per stream. */
static size_t fi_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    const fi_geometry_t g = fi_geometry_of(p);
    const size_t n = (size_t)g.streams, id = sizeof(fi_id);
    const bool tc = plan && (plan->variant & FI_TENSOR_CORE);
    const size_t sms = plan && (plan->variant >> 1) > 0 ? (size_t)(plan->variant >> 1) : FI_SM_UNKNOWN;
    const int group = problem_group(p);
    const size_t ctas = (tc ? 2 : 32) * sms / (size_t)p->kv_heads + 1;
    const size_t rows_per_cta = tc ? (size_t)(fi_cta_tile_q(p->q_len * group) + group - 1) / group : 1;
    const size_t partial_rows = ctas * rows_per_cta;
    const size_t float_ws = (size_t)p->heads * partial_rows * ((size_t)p->head_dim + 1) * sizeof(float) + 64;
    const size_t slots = (ctas > n ? ctas : n) + 1;
    const size_t int_ws = 4 * slots * id + slots + 2 * (n + 1) * id + 256;
    size_t tables = fi_granule((n + 1) * id) + fi_granule(n * id);
    if (p->cache != CACHE_PAGED) tables += fi_granule(n * (size_t)g.pages * id);
    if (tc) tables += fi_granule((n + 1) * id);
    return tables + fi_granule(float_ws) + fi_granule(int_ws);
}

static attn_io_t fi_io(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    attn_io_t io;
    /* every stream reads its blocks through its page table; the compulsory DRAM traffic
     * is the blocks the cache holds (a shared context block's re-reads can hit L2) */
    io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + fi_table_bytes(p);
    /* an e4m3 cache: the wrapper's `out *= v_scale` reads and writes out again */
    if (p->kv_quant != KV_QUANT_NONE) io.bytes += io_qo_bytes(p);
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.flops = io_flops(p);
    /* whether and how far FlashInfer splits is decided by its plan() in setup */
    io.workspace_bytes = 0.0;
    return io;
}

/* ------------------------------------------------------------------ state and setup */

typedef struct fi_state {
    bool tensor_core;
    bool pdl;
    fi_geometry_t geom;
    fi_id *indptr;          /* [n + 1] pages of stream i: indptr[i] .. indptr[i + 1] */
    fi_id *last_page_len;   /* [n] */
    fi_id *indices;         /* contiguous cache: [n * pages] (paged: the block table) */
    fi_id *qo_indptr;       /* tensor-core path: [n + 1], q_len query rows per stream */
    void *float_ws, *int_ws;
    fi::DecodePlanInfo decode_plan;
    fi::PrefillPlanInfo prefill_plan;
    float k_scale, v_scale; /* an e4m3 cache's (a->kv_scale), else 1 */
} fi_state_t;

static void fi_state_free(fi_state_t *st)
{
    if (!st) return;
    cudaFree(st->indptr);
    cudaFree(st->last_page_len);
    cudaFree(st->indices);
    cudaFree(st->qo_indptr);
    cudaFree(st->float_ws);
    cudaFree(st->int_ws);
    delete st;
}

/* The host page table of geometry g: indptr, last_page_len and, on the contiguous
 * cache, indices. One malloc; NULL when the host is out of memory. */
static fi_id *fi_host_tables(const problem_t *p, const fi_geometry_t *g, fi_id **last, fi_id **indices)
{
    const size_t n = (size_t)g->streams;
    const size_t idx = p->cache == CACHE_PAGED ? 0 : n * (size_t)g->pages;
    fi_id *indptr = (fi_id *)malloc(((n + 1) + n + idx) * sizeof(fi_id));
    if (!indptr) return NULL;
    *last = indptr + n + 1;
    *indices = idx ? *last + n : NULL;
    const int last_len = problem_keys(p) - (g->pages - 1) * g->page_size;
    for (size_t i = 0; i <= n; ++i) indptr[i] = (fi_id)(i * (size_t)g->pages);
    for (size_t i = 0; i < n; ++i) (*last)[i] = last_len;
    for (size_t s = 0; s < (idx ? n : 0); ++s)
        for (int j = 0; j < g->pages; ++j)
            (*indices)[s * g->pages + j] = (fi_id)(g->index_base * (int64_t)s + j);
    return indptr;
}

static cudaError_t fi_upload(fi_id **dst, const fi_id *src, size_t count)
{
    cudaError_t e = cudaMalloc((void **)dst, count * sizeof(fi_id));
    if (e == cudaSuccess) e = cudaMemcpy(*dst, src, count * sizeof(fi_id), cudaMemcpyHostToDevice);
    return e;
}

/* indptr, last_page_len, the contiguous cache's indices and the tensor-core path's
 * qo_indptr on the device; *host_indptr keeps the host indptr for plan(). */
static cudaError_t fi_tables_setup(fi_state_t *st, const problem_t *p, fi_id **host_indptr)
{
    const fi_geometry_t *g = &st->geom;
    const size_t n = (size_t)g->streams;
    fi_id *last = NULL, *indices = NULL;
    fi_id *indptr = fi_host_tables(p, g, &last, &indices);
    if (!indptr) return cudaErrorMemoryAllocation;
    cudaError_t e = fi_upload(&st->indptr, indptr, n + 1);
    if (e == cudaSuccess) e = fi_upload(&st->last_page_len, last, n);
    if (e == cudaSuccess && indices) e = fi_upload(&st->indices, indices, n * (size_t)g->pages);
    if (e == cudaSuccess && st->tensor_core) {
        /* q_len query rows per request: qo_indptr = 0, q_len, 2 q_len, ... (one row: the
         * decode wrapper's range buffer) */
        fi_id *range = (fi_id *)malloc((n + 1) * sizeof(fi_id));
        if (!range) e = cudaErrorMemoryAllocation;
        for (size_t i = 0; range && i <= n; ++i) range[i] = (fi_id)(i * (size_t)p->q_len);
        if (e == cudaSuccess) e = fi_upload(&st->qo_indptr, range, n + 1);
        free(range);
    }
    if (e != cudaSuccess) {
        free(indptr);
        return e;
    }
    *host_indptr = indptr;
    return cudaSuccess;
}

/* FlashInfer's workspaces at the sizes its workspace-size query reported, and the
 * page-locked buffer its plan() fills and uploads the int workspace from (the wrapper's
 * _pin_memory_int_workspace_buffer). */
static cudaError_t fi_alloc_workspaces(fi_state_t *st, size_t float_bytes, size_t int_bytes, void **pinned)
{
    /* a zero-byte workspace still needs a distinct base address for the offsets */
    cudaError_t e = cudaMalloc(&st->float_ws, float_bytes ? float_bytes : 16);
    if (e == cudaSuccess) e = cudaMalloc(&st->int_ws, int_bytes ? int_bytes : 16);
    if (e == cudaSuccess) e = cudaMallocHost(pinned, int_bytes ? int_bytes : 16);
    return e;
}

/* CUDA-core decode: DecodePlan with its work estimation for this group size, as
 * BatchDecodeWithPagedKVCachePlan does (the query dispatches on p as it does). */
template <typename TQ, typename TKV, int D>
static cudaError_t fi_plan_cuda_core(fi_state_t *st, const problem_t *p, fi_id *indptr_h, cudaStream_t s)
{
    typedef fi_decode_params<TQ, TKV> Params;
    const uint32_t n = (uint32_t)st->geom.streams, page = (uint32_t)st->geom.page_size;
    cudaError_t e = cudaErrorNotSupported;
    DISPATCH_GQA_GROUP_SIZE((uint32_t)problem_group(p), GROUP_SIZE, {
        auto estimate = fi::BatchDecodeWithPagedKVCacheWorkEstimationDispatched<
            GROUP_SIZE, D, fi::PosEncodingMode::kNone, fi_variant, Params>;
        size_t float_bytes = 0, int_bytes = 0;
        e = fi::DecodePlanWorkspaceSize<D, fi::PosEncodingMode::kNone, fi_variant, Params>(
            float_bytes, int_bytes, indptr_h, n, (uint32_t)p->heads, page, false, s, estimate);
        void *pinned = NULL;
        if (e == cudaSuccess) e = fi_alloc_workspaces(st, float_bytes, int_bytes, &pinned);
        if (e == cudaSuccess)
            e = fi::DecodePlan<D, fi::PosEncodingMode::kNone, fi_variant, Params>(
                st->float_ws, float_bytes, st->int_ws, pinned, int_bytes, st->decode_plan, indptr_h, n,
                (uint32_t)p->heads, page, false, s, estimate);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        cudaFreeHost(pinned);
    });
    return e;
}

/* Tensor-core path: PrefillPlan with q_len query rows per request, the arguments the
 * decode wrapper passes with use_tensor_cores=True (one row) and the prefill wrapper
 * with causal=True (q_len rows): fa2, no window, no fixed split, split allowed, no CUDA
 * graph (the mask is the kernel's template argument, not the plan's). */
template <typename TQ, typename TKV, int D>
static cudaError_t fi_plan_tensor_core(fi_state_t *st, const problem_t *p, fi_id *indptr_h, cudaStream_t s)
{
    const uint32_t n = (uint32_t)st->geom.streams, page = (uint32_t)st->geom.page_size;
    const uint32_t rows = n * (uint32_t)p->q_len;
    fi_id *qo_h = (fi_id *)malloc(((size_t)n + 1) * sizeof(fi_id));
    if (!qo_h) return cudaErrorMemoryAllocation;
    for (uint32_t i = 0; i <= n; ++i) qo_h[i] = (fi_id)(i * (uint32_t)p->q_len);
    size_t float_bytes = 0, int_bytes = 0;
    cudaError_t e = fi::PrefillPlanWorkspaceSize<fi_id>(
        float_bytes, int_bytes, qo_h, indptr_h, rows, n, (uint32_t)p->heads, (uint32_t)p->kv_heads, D, D,
        page, false, sizeof(TQ), -1, -1, false, 0, 0, s, sizeof(TKV));
    void *pinned = NULL;
    if (e == cudaSuccess) e = fi_alloc_workspaces(st, float_bytes, int_bytes, &pinned);
    if (e == cudaSuccess)
        e = fi::PrefillPlan<fi_id>(st->float_ws, float_bytes, st->int_ws, pinned, int_bytes, st->prefill_plan,
                                   qo_h, indptr_h, rows, n, (uint32_t)p->heads, (uint32_t)p->kv_heads, D, D,
                                   page, false, sizeof(TQ), -1, -1, false, 0, 0, s, sizeof(TKV));
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    cudaFreeHost(pinned);
    free(qo_h);
    return e;
}

template <typename TQ, typename TKV, int D>
static cudaError_t fi_plan_td(fi_state_t *st, const problem_t *p, fi_id *indptr_h, cudaStream_t s)
{
    return st->tensor_core ? fi_plan_tensor_core<TQ, TKV, D>(st, p, indptr_h, s)
                           : fi_plan_cuda_core<TQ, TKV, D>(st, p, indptr_h, s);
}

/* FlashInfer's host code reports some failures by throwing flashinfer::Error; they end
 * here as one line and an error status, so a bad row cannot take the sweep down. */
static cudaError_t fi_plan_any(fi_state_t *st, const problem_t *p, fi_id *indptr_h)
{
    cudaStream_t s = 0; /* setup has no stream: the plan's upload is synchronised here */
    try {
        if (p->kv_quant == KV_QUANT_FP8) /* d 128 only (fi_unsupported) */
            return p->dtype == DTYPE_FP16 ? fi_plan_td<half, fi_e4m3, 128>(st, p, indptr_h, s)
                                          : fi_plan_td<nv_bfloat16, fi_e4m3, 128>(st, p, indptr_h, s);
        if (p->dtype == DTYPE_FP16)
            return p->head_dim == 64 ? fi_plan_td<half, half, 64>(st, p, indptr_h, s)
                                     : fi_plan_td<half, half, 128>(st, p, indptr_h, s);
        return p->head_dim == 64 ? fi_plan_td<nv_bfloat16, nv_bfloat16, 64>(st, p, indptr_h, s)
                                 : fi_plan_td<nv_bfloat16, nv_bfloat16, 128>(st, p, indptr_h, s);
    } catch (const std::exception &ex) {
        fprintf(stderr, "flashinfer: plan: %s\n", ex.what());
        return cudaErrorUnknown;
    }
}

static cudaError_t fi_setup(attn_args_t *a)
{
    const problem_t *p = &a->problem;
    fi_state_t *st = new (std::nothrow) fi_state_t();
    if (!st) return cudaErrorMemoryAllocation;
    st->tensor_core = (a->plan.variant & FI_TENSOR_CORE) != 0;
    st->geom = fi_geometry_of(p);
    /* the wrapper's enable_pdl default: device_support_pdl, compute capability >= 9 */
    int device = 0, major = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    st->pdl = major >= 9;
    /* the scales our kernels read, K's then V's (--kv-scale tensor): the wrapper's floats */
    if (e == cudaSuccess) e = peer_kv_scales(a, &st->k_scale, &st->v_scale);
    fi_id *indptr_h = NULL;
    if (e == cudaSuccess) e = fi_tables_setup(st, p, &indptr_h);
    if (e == cudaSuccess) e = fi_plan_any(st, p, indptr_h);
    free(indptr_h);
    if (e != cudaSuccess) {
        fi_state_free(st);
        return e;
    }
    a->state = st;
    return cudaSuccess;
}

static void fi_teardown(attn_args_t *a)
{
    fi_state_free((fi_state_t *)a->state);
    a->state = NULL;
}

/* ------------------------------------------------------------------------- launch */

/* The paged cache of csrc/batch_decode.cu's run: HND, K and V with their strides. */
template <typename T>
static fi::paged_kv_t<T, fi_id> fi_paged_kv(const fi_state_t *st, const attn_args_t *a, uint32_t head_dim)
{
    const fi_geometry_t *g = &st->geom;
    const int64_t strides[4] = {g->stride_page, g->stride_h, g->stride_n, 1};
    T *k = static_cast<T *>(const_cast<void *>(a->kv));
    fi_id *indices = a->problem.cache == CACHE_PAGED ? const_cast<fi_id *>(a->block_table) : st->indices;
    return fi::paged_kv_t<T, fi_id>((uint32_t)a->problem.kv_heads, (uint32_t)g->page_size, head_dim,
                                    (uint32_t)g->streams, fi::QKVLayout::kHND, k, k + g->v_offset, strides,
                                    strides, indices, st->indptr, st->last_page_len);
}

/* BatchDecodeWithPagedKVCacheRun's body for one element type and head dim. */
template <typename TQ, typename TKV, int D>
static cudaError_t fi_run_cuda_core(const fi_state_t *st, const attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const fi::DecodePlanInfo &plan = st->decode_plan;
    fi_decode_params<TQ, TKV> params;
    params.q = static_cast<TQ *>(const_cast<void *>(a->q));
    params.paged_kv = fi_paged_kv<TKV>(st, a, D);
    params.o = static_cast<TQ *>(a->out);
    params.lse = nullptr;
    params.maybe_alibi_slopes = nullptr;
    params.logits_soft_cap = 0.0;
    params.sm_scale = problem_scale(p) * st->k_scale;
    params.rope_rcp_scale = 1.0;
    params.rope_rcp_theta = 1e-4;
    params.num_qo_heads = (uint32_t)p->heads;
    params.q_stride_n = p->heads * D;
    params.q_stride_h = D;
    params.window_left = -1;
    params.enable_pdl = st->pdl;
    params.request_indices = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.request_indices_offset);
    params.kv_tile_indices = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.kv_tile_indices_offset);
    params.o_indptr = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.o_indptr_offset);
    params.kv_chunk_size_ptr = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.kv_chunk_size_ptr_offset);
    params.block_valid_mask = nullptr;
    params.partition_kv = false;
    TQ *tmp_v = nullptr;
    float *tmp_s = nullptr;
    if (plan.split_kv) {
        tmp_v = fi::GetPtrFromBaseOffset<TQ>(st->float_ws, plan.v_offset);
        tmp_s = fi::GetPtrFromBaseOffset<float>(st->float_ws, plan.s_offset);
        if (plan.enable_cuda_graph)
            params.block_valid_mask = fi::GetPtrFromBaseOffset<bool>(st->int_ws, plan.block_valid_mask_offset);
    }
    params.padded_batch_size = (uint32_t)plan.padded_batch_size;
    return fi::BatchDecodeWithPagedKVCacheDispatched<D, fi::PosEncodingMode::kNone, fi_variant>(
        params, tmp_v, tmp_s, st->pdl, stream);
}

/* One launch of the FA2 kernel at the plan's CTA_TILE_Q (16 or 64: fi_unsupported rules
 * out 128) and mask mode MASK. */
template <typename TQ, typename TKV, int D, fi::MaskMode MASK>
static cudaError_t fi_prefill_dispatch(const fi::PrefillPlanInfo &plan, fi_prefill_params<TQ, TKV> &params, TQ *tmp_v,
                                       float *tmp_s, bool pdl, cudaStream_t stream)
{
    typedef fi_prefill_params<TQ, TKV> Params;
    const fi::PosEncodingMode rope = fi::PosEncodingMode::kNone;
    switch (plan.cta_tile_q) {
    case 16:
        return fi::BatchPrefillWithPagedKVCacheDispatched<true, 16, D, D, rope, false, MASK, fi_variant, Params>(
            params, tmp_v, tmp_s, pdl, stream);
    case 64:
        return fi::BatchPrefillWithPagedKVCacheDispatched<true, 64, D, D, rope, false, MASK, fi_variant, Params>(
            params, tmp_v, tmp_s, pdl, stream);
    default:
        fprintf(stderr, "flashinfer: plan chose CTA_TILE_Q %d, not built here\n", (int)plan.cta_tile_q);
        return cudaErrorNotSupported;
    }
}

/* BatchPrefillWithPagedKVCacheRun's body (K and V strides equal): mask kNone for one
 * query row per request, kCausal for q_len rows. */
template <typename TQ, typename TKV, int D>
static cudaError_t fi_run_tensor_core(const fi_state_t *st, const attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const fi::PrefillPlanInfo &plan = st->prefill_plan;
    /* value-initialised: the optional tensors the fa2 module passes as None (custom mask,
     * prefix lengths, item positions, NVFP4 scale factors) are null, their strides 0 */
    fi_prefill_params<TQ, TKV> params = fi_prefill_params<TQ, TKV>();
    params.q = static_cast<TQ *>(const_cast<void *>(a->q));
    params.paged_kv = fi_paged_kv<TKV>(st, a, D);
    params.q_indptr = st->qo_indptr;
    params.o = static_cast<TQ *>(a->out);
    params.num_qo_heads = (uint32_t)p->heads;
    params.group_size = fi::uint_fastdiv((uint32_t)problem_group(p));
    params.q_stride_n = p->heads * D;
    params.q_stride_h = D;
    params.window_left = -1;
    params.logits_soft_cap = 0.0;
    params.sm_scale = problem_scale(p) * st->k_scale;
    params.rope_rcp_scale = 1.0;
    params.rope_rcp_theta = 1e-4;
    params.request_indices = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.request_indices_offset);
    params.qo_tile_indices = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.qo_tile_indices_offset);
    params.kv_tile_indices = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.kv_tile_indices_offset);
    params.o_indptr = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.o_indptr_offset);
    params.kv_chunk_size_ptr = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.kv_chunk_size_ptr_offset);
    TQ *tmp_v = nullptr;
    float *tmp_s = nullptr;
    if (plan.split_kv) {
        params.merge_indptr = fi::GetPtrFromBaseOffset<fi_id>(st->int_ws, plan.merge_indptr_offset);
        tmp_v = fi::GetPtrFromBaseOffset<TQ>(st->float_ws, plan.v_offset);
        tmp_s = fi::GetPtrFromBaseOffset<float>(st->float_ws, plan.s_offset);
    }
    params.padded_batch_size = (uint32_t)plan.padded_batch_size;
    params.max_total_num_rows = (uint32_t)plan.total_num_rows;
    if (plan.enable_cuda_graph) {
        params.block_valid_mask = fi::GetPtrFromBaseOffset<bool>(st->int_ws, plan.block_valid_mask_offset);
        params.total_num_rows = fi::GetPtrFromBaseOffset<uint32_t>(st->int_ws, plan.total_num_rows_offset);
    }
    if (p->q_len > 1)
        return fi_prefill_dispatch<TQ, TKV, D, fi::MaskMode::kCausal>(plan, params, tmp_v, tmp_s, st->pdl, stream);
    return fi_prefill_dispatch<TQ, TKV, D, fi::MaskMode::kNone>(plan, params, tmp_v, tmp_s, st->pdl, stream);
}

/* The wrapper's `out *= v_scale` after the kernel (decode.py: FlashInfer's kernels take
 * k_scale in sm_scale and no V scale): one elementwise pass in float, as torch's. */
template <typename T>
__global__ void fi_scale_out_kernel(T *out, int64_t n, float scale)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = T(static_cast<float>(out[i]) * scale);
}

template <typename T>
static cudaError_t fi_scale_out(const fi_state_t *st, const attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const int64_t n = (int64_t)problem_streams(p) * p->heads * p->head_dim;
    const int threads = 256;
    fi_scale_out_kernel<T><<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(
        static_cast<T *>(a->out), n, st->v_scale);
    return cudaGetLastError();
}

/* The decode, then for an e4m3 cache the wrapper's `out *= v_scale`. */
template <typename TQ, typename TKV, int D>
static cudaError_t fi_run_td(const fi_state_t *st, const attn_args_t *a, cudaStream_t stream)
{
    cudaError_t e = st->tensor_core ? fi_run_tensor_core<TQ, TKV, D>(st, a, stream)
                                    : fi_run_cuda_core<TQ, TKV, D>(st, a, stream);
    if (e == cudaSuccess && sizeof(TKV) == 1) e = fi_scale_out<TQ>(st, a, stream);
    return e;
}

static cudaError_t fi_launch(attn_args_t *a, cudaStream_t stream)
{
    const fi_state_t *st = (const fi_state_t *)a->state;
    if (!st) {
        fprintf(stderr, "flashinfer: launch without setup\n");
        return cudaErrorInvalidValue;
    }
    const problem_t *p = &a->problem;
    try {
        if (p->kv_quant == KV_QUANT_FP8)
            return p->dtype == DTYPE_FP16 ? fi_run_td<half, fi_e4m3, 128>(st, a, stream)
                                          : fi_run_td<nv_bfloat16, fi_e4m3, 128>(st, a, stream);
        if (p->dtype == DTYPE_FP16)
            return p->head_dim == 64 ? fi_run_td<half, half, 64>(st, a, stream)
                                     : fi_run_td<half, half, 128>(st, a, stream);
        return p->head_dim == 64 ? fi_run_td<nv_bfloat16, nv_bfloat16, 64>(st, a, stream)
                                 : fi_run_td<nv_bfloat16, nv_bfloat16, 128>(st, a, stream);
    } catch (const std::exception &ex) {
        fprintf(stderr, "flashinfer: run: %s\n", ex.what());
        return cudaErrorUnknown;
    }
}

extern "C" const attn_kernel_t kernel_flashinfer = {
    "flashinfer",
    "FlashInfer's batch decode over a paged KV cache: CUDA-core decode, tensor-core (FA2) where p has no CUDA-core build; "
    "--q-len > 1 on its causal batch prefill",
    "paged (its page table is our block table) and contiguous (a page table over each stream's region); "
    "fp16, bf16; d 64, 128; p in 1,2,3,4,6,8,16 on CUDA cores, other p up to 64 on tensor cores; "
    "--q-len n with n*p up to 64 (causal prefill); no indirection; its own split-KV "
    "(--multi-block auto); e4m3 cache (--kv-dtype fp8 --kv-scale tensor) at d 128, fp16 or bf16 "
    "queries; no int8",
    fi_unsupported,
    fi_layout,
    fi_plan,
    fi_workspace_bytes,
    fi_private_bytes,
    fi_io,
    fi_setup,
    fi_launch,
    fi_teardown,
    "FlashInfer 0.7.2",
    0, /* no --step append */
    ATTN_EXACT,
    NULL, /* selects no keys */
    NULL, /* reads the cache's K/V */
};

#else

ATTN_PEER_NOT_BUILT(flashinfer, "flashinfer",
                    "FlashInfer's batch decode over a paged KV cache (CUDA-core and tensor-core paths)",
                    "FlashInfer 0.7.2")

#endif
