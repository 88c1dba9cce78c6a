/* `xqa`: TensorRT-LLM's XQA generation kernel, the MQA/GQA decode kernel of its
 * generation phase, built from the sources FlashInfer 0.7.2 ships (csrc/xqa/mha.cu) and
 * launched as FlashInfer's xqa() launches it (docs/peers-xqa.md).
 *
 * XQA reads K and V as two pools of pages, page p of kv head j at
 * pool + p*stride_page + j*stride_head, its token t at + t*stride_token, through one page
 * table [sequence, pages] that K and V share (FlashInfer's kv_layout HND is this with
 * stride_token = d). Every layout of ours maps onto that without moving the cache:
 *   paged, 64-token blocks: our pool [blocks, 2, g, 64, d] is the K pool, V starts
 *     g*64*d elements in, stride_page = 2*g*64*d; our block table is XQA's page table.
 *   paged, 128-token blocks: XQA here reads 64-token pages, so setup writes a table of
 *     half-blocks; each entry is a row offset (stride_page = d) into the pool.
 *   contiguous [B*W, 2, g, L, d]: setup writes a table whose page p of stream s is the
 *     row offset s*2*g*L + 64*p, with stride_head = L*d; XQA reads no key past L, so
 *     the last page of a sequence may end inside the next head's rows.
 * Every stream is one XQA sequence (FlashInfer builds it with BEAM_WIDTH 1), so a
 * shared context's blocks are read by each stream that points at them.
 *
 * An e4m3 cache (--kv-dtype fp8) is the same pools of 1-byte codes. XQA takes one
 * kv_cache_scale for K and V: it multiplies q.k by q_scale * kv_cache_scale / sqrt(d) and
 * the output by kv_cache_scale. So kv_cache_scale is V's scale and q_scale carries K's
 * over V's, as a caller of FlashInfer's xqa() with two scales would pass them. */
#include "../registry.h"
#include "peer_scales.h"

#define XQA_PACKAGE "FlashInfer 0.7.2"

#ifdef ATTN_HAVE_XQA

#include <stdlib.h>
#include "xqa/xqa_instance.h"

extern "C" const attn_kernel_t kernel_xqa;

/* plan->variant: launch with programmatic dependent launch (FlashInfer's enable_pdl
 * default: compute capability 9 and up). */
#define XQA_PDL 1
/* cudaMalloc hands out memory in pages of up to this size: private_bytes rounds to it. */
#define XQA_ALLOC_GRANULE ((size_t)2 << 20)

#define XQA_LIST_ENTRY(name, fp16, e4m3, group) &xqa_##name,
static const xqa_instance_t *const xqa_instances[] = {XQA_INSTANCES(XQA_LIST_ENTRY)};
#undef XQA_LIST_ENTRY

static const xqa_instance_t *xqa_find(const problem_t *p)
{
    if (p->head_dim != XQA_HEAD_DIM || (p->dtype != DTYPE_FP16 && p->dtype != DTYPE_BF16)) return NULL;
    if (p->kv_quant == KV_QUANT_INT8) return NULL;
    const int fp16 = p->dtype == DTYPE_FP16, e4m3 = p->kv_quant == KV_QUANT_FP8;
    for (size_t i = 0; i < sizeof xqa_instances / sizeof xqa_instances[0]; ++i)
        if (xqa_instances[i]->fp16 == fp16 && xqa_instances[i]->e4m3 == e4m3 &&
            xqa_instances[i]->group == problem_group(p))
            return xqa_instances[i];
    return NULL;
}

/* Why an 8-bit cache has no XQA configuration here, or NULL. */
static const char *xqa_kv8_unsupported(const problem_t *p)
{
    if (p->kv_quant == KV_QUANT_INT8)
        return "XQA's int8 cache (CACHE_ELEM_ENUM 1) is not built here: --kv-dtype fp8 or 16-bit";
    if (p->kv_quant == KV_QUANT_FP8 && p->kv_scale == KV_SCALE_HEAD)
        return "XQA takes one scale per tensor (kv_cache_scale), none per kv head: --kv-scale tensor";
    if (p->kv_quant == KV_QUANT_FP8 && !xqa_find(p))
        return "XQA's e4m3-cache builds here: fp16 queries, d 128, h/g 4 or 32";
    return NULL;
}

/* Our block table is XQA's page table as it is. */
static bool xqa_native_pages(const problem_t *p)
{
    return p->cache == CACHE_PAGED && p->block_size == XQA_PAGE_TOKENS;
}

static int64_t xqa_pages_per_seq(const problem_t *p)
{
    return ((int64_t)problem_keys(p) + XQA_PAGE_TOKENS - 1) / XQA_PAGE_TOKENS;
}

/* Rows of d elements in the cache, at most: XQA forms page * stride_page + head *
 * stride_head + token * stride_token in 32-bit head units, and a page index with bit 31
 * set is an empty page, so every row offset must stay below 2^31. */
static double xqa_cache_rows(const problem_t *p)
{
    double keys = problem_keys(p);
    if (p->cache == CACHE_PAGED) keys = ceil(keys / p->block_size) * p->block_size;
    return (double)problem_streams(p) * 2.0 * p->kv_heads * keys;
}

static const char *xqa_unsupported(const problem_t *p)
{
    if (problem_ragged(p))
        return "XQA is given one sequence length for every request here, not ragged --ctx-dist lengths";
    if (p->q_len > 1)
        return "XQA as FlashInfer ships it decodes one query token per stream (no --q-len > 1)";
    if (p->dtype != DTYPE_FP16 && p->dtype != DTYPE_BF16)
        return "XQA takes fp16 or bf16 queries and cache (FlashInfer builds no fp32 module)";
    if (p->head_dim != XQA_HEAD_DIM)
        return "XQA is compiled per head size; this build has head_dim 128 only";
    const char *kv8 = xqa_kv8_unsupported(p);
    if (kv8) return kv8;
    if (!xqa_find(p))
        return "XQA is compiled per group size; this build has h/g = 1, 2, 4, 8, 16 or 32";
    if (p->indirection)
        return "XQA as FlashInfer builds it (BEAM_WIDTH 1) reads no cache-indirection table (--indirection)";
    if (p->cache == CACHE_PAGED && p->block_size % XQA_PAGE_TOKENS != 0)
        return "XQA here reads 64-token pages: a cache block must hold whole pages (--block-size 64 or 128)";
    if (problem_streams(p) > 65535)
        return "XQA's grid holds the streams in its z dimension: at most 65535 (B*W)";
    if (xqa_cache_rows(p) >= 2147483648.0)
        return "XQA addresses the cache in 32-bit row offsets: the cache must hold under 2^31 rows of d";
    return NULL;
}

static kv_layout_t xqa_layout(const problem_t *p)
{
    return p->cache == CACHE_PAGED ? LAYOUT_PAGED : LAYOUT_CONTIGUOUS;
}

/* The CTAs per (stream, kv head), XQA's nbSubSeqPerSeq. Without --multi-block or
 * --splits it is launchMHAFlashInfer's rule: the SMs over the (stream, kv head) pairs,
 * at least 1, at most the CTA tiles of max_seq_len (FlashInfer's page-table width times
 * the page size). --multi-block off is 1, --splits N is N (at most the tiles), on is at
 * least 2 where there are two tiles. */
static void xqa_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    plan->runs = &kernel_xqa;
    const int64_t seqs = (int64_t)problem_streams(p) * p->kv_heads;
    const int64_t max_seq_len = xqa_pages_per_seq(p) * XQA_PAGE_TOKENS;
    const int64_t tiles = (max_seq_len + XQA_CTA_KEYS - 1) / XQA_CTA_KEYS;
    int64_t sub = 1;
    if (p->multi_block == MULTI_BLOCK_OFF) {
        sub = 1;
    } else if (p->splits > 0) {
        sub = p->splits < tiles ? p->splits : tiles;
    } else {
        const int64_t sms = dev && dev->sm_count > 0 ? dev->sm_count : 0;
        sub = sms / seqs > 1 ? sms / seqs : 1;
        if (sub > tiles) sub = tiles;
        if (p->multi_block == MULTI_BLOCK_ON && sub < 2 && tiles >= 2) sub = 2;
    }
    plan->split.splits = (int)sub;
    plan->split.chunk = (int)((tiles + sub - 1) / sub * XQA_CTA_KEYS);
    plan->variant = dev && dev->cc >= 90 ? XQA_PDL : 0;
}

/* The multi-block workspace: a semaphore per (stream, kv head), then the partials. The
 * harness zeroes it once; the last CTA of each (stream, kv head) returns its semaphore
 * to zero (atom.inc wraps at the split count), so it is zero again for every launch. */
static size_t xqa_semaphore_bytes(const problem_t *p)
{
    size_t bytes = (size_t)problem_streams(p) * p->kv_heads * sizeof(uint32_t);
    return (bytes + 255) / 256 * 256;
}

static size_t xqa_scratch_bytes(const problem_t *p, const attn_plan_t *plan)
{
    const xqa_instance_t *inst = xqa_find(p);
    if (!inst || !plan || plan->split.splits <= 1) return 0;
    return inst->scratch_bytes((size_t)plan->split.splits * problem_streams(p) * p->kv_heads);
}

static size_t xqa_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    size_t scratch = xqa_scratch_bytes(p, plan);
    return scratch ? xqa_semaphore_bytes(p) + scratch : 0;
}

/* What setup allocates: XQA's sequence lengths and, unless our block table serves, the
 * page table it builds. */
static size_t xqa_table_bytes(const problem_t *p)
{
    size_t streams = (size_t)problem_streams(p);
    size_t pages = xqa_native_pages(p) ? 0 : streams * (size_t)xqa_pages_per_seq(p) * sizeof(int32_t);
    return pages + streams * sizeof(uint32_t);
}

static size_t xqa_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    return (xqa_table_bytes(p) + XQA_ALLOC_GRANULE - 1) / XQA_ALLOC_GRANULE * XQA_ALLOC_GRANULE;
}

/* Each stream's K/V through its pages (a shared context block is stored once), q, out,
 * the page table XQA reads and its sequence lengths. */
static attn_io_t xqa_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io;
    double streams = problem_streams(p);
    double tables = streams * (double)xqa_pages_per_seq(p) * sizeof(int32_t) + streams * sizeof(uint32_t);
    io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + tables;
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + tables;
    io.flops = io_flops(p);
    io.workspace_bytes = 2.0 * (double)xqa_scratch_bytes(p, plan); /* partials written, read back */
    return io;
}

/* ------------------------------------------------------------ setup and launch */

typedef struct xqa_state {
    const xqa_instance_t *inst;
    uint32_t smem_bytes;
    void *tables;              /* [pages | sequence lengths], one allocation */
    const int32_t *pages;      /* ours (a->block_table) or into tables */
    const uint32_t *seq_lens;  /* into tables */
    uint64_t stride_page, stride_head, v_offset; /* elements; V pool = K pool + v_offset */
    float k_scale, v_scale;    /* an e4m3 cache's (a->kv_scale), else 1 */
} xqa_state_t;

static void xqa_state_free(xqa_state_t *st)
{
    if (!st) return;
    cudaFree(st->tables);
    free(st);
}

/* The host tables: the page table where ours does not serve (row offsets, in rows of
 * d, from the K pool), then every stream's length. Returns NULL when out of memory. */
static void *xqa_host_tables(const attn_args_t *a, const int32_t *blocks, size_t *bytes)
{
    const problem_t *p = &a->problem;
    const int64_t streams = problem_streams(p), per_seq = xqa_pages_per_seq(p);
    const int64_t L = problem_keys(p), g = p->kv_heads;
    const int64_t entries = xqa_native_pages(p) ? 0 : streams * per_seq;
    *bytes = xqa_table_bytes(p);
    char *host = (char *)malloc(*bytes);
    if (!host) return NULL;
    int32_t *pages = (int32_t *)host;
    for (int64_t s = 0; s < streams && entries; ++s)
        for (int64_t j = 0; j < per_seq; ++j) {
            int64_t row;
            if (p->cache == CACHE_PAGED) {
                /* half-blocks (or finer) of our block j * 64 / S */
                const int64_t per_block = p->block_size / XQA_PAGE_TOKENS;
                const int64_t block = blocks[s * a->geom.max_blocks_per_seq + j / per_block];
                row = block * 2 * g * p->block_size + (j % per_block) * XQA_PAGE_TOKENS;
            } else {
                row = s * 2 * g * L + j * XQA_PAGE_TOKENS;
            }
            pages[s * per_seq + j] = (int32_t)row;
        }
    uint32_t *lens = (uint32_t *)(pages + entries);
    for (int64_t s = 0; s < streams; ++s) lens[s] = (uint32_t)L;
    return host;
}

/* Where XQA's pages lie in our cache (the file comment). */
static void xqa_strides(const problem_t *p, xqa_state_t *st)
{
    const uint64_t d = (uint64_t)p->head_dim, g = (uint64_t)p->kv_heads;
    const uint64_t rows_per_head = p->cache == CACHE_PAGED ? (uint64_t)p->block_size : (uint64_t)problem_keys(p);
    st->stride_head = rows_per_head * d;
    st->v_offset = g * rows_per_head * d;
    st->stride_page = xqa_native_pages(p) ? 2 * g * XQA_PAGE_TOKENS * d : d;
}

static cudaError_t xqa_setup(attn_args_t *a)
{
    const problem_t *p = &a->problem;
    const xqa_instance_t *inst = xqa_find(p);
    if (!inst) return cudaErrorInvalidValue;
    xqa_state_t *st = (xqa_state_t *)calloc(1, sizeof *st);
    if (!st) return cudaErrorMemoryAllocation;
    st->inst = inst;
    xqa_strides(p, st);
    cudaError_t e = inst->setup(&st->smem_bytes);
    /* the scales our kernels read, K's then V's (--kv-scale tensor): the wrapper's floats */
    if (e == cudaSuccess) e = peer_kv_scales(a, &st->k_scale, &st->v_scale);

    /* a block table read back to split its blocks into pages (outside timing) */
    int32_t *blocks = NULL;
    const bool split_blocks = p->cache == CACHE_PAGED && !xqa_native_pages(p);
    size_t block_bytes = (size_t)problem_streams(p) * a->geom.max_blocks_per_seq * sizeof(int32_t);
    if (e == cudaSuccess && split_blocks) {
        blocks = (int32_t *)malloc(block_bytes);
        e = blocks ? cudaMemcpy(blocks, a->block_table, block_bytes, cudaMemcpyDeviceToHost)
                   : cudaErrorMemoryAllocation;
    }
    size_t bytes = 0;
    void *host = NULL;
    if (e == cudaSuccess) {
        host = xqa_host_tables(a, blocks, &bytes);
        if (!host) e = cudaErrorMemoryAllocation;
    }
    if (e == cudaSuccess) e = cudaMalloc(&st->tables, bytes);
    if (e == cudaSuccess) e = cudaMemcpy(st->tables, host, bytes, cudaMemcpyHostToDevice);
    free(blocks);
    free(host);
    if (e != cudaSuccess) {
        xqa_state_free(st);
        return e;
    }
    const size_t entries = xqa_native_pages(p) ? 0 : (size_t)problem_streams(p) * xqa_pages_per_seq(p);
    st->pages = xqa_native_pages(p) ? a->block_table : (const int32_t *)st->tables;
    st->seq_lens = (const uint32_t *)((const int32_t *)st->tables + entries);
    a->state = st;
    return cudaSuccess;
}

static cudaError_t xqa_launch(attn_args_t *a, cudaStream_t stream)
{
    const xqa_state_t *st = (const xqa_state_t *)a->state;
    if (!st) return cudaErrorInvalidValue;
    const problem_t *p = &a->problem;
    const int sub = a->plan.split.splits > 1 ? a->plan.split.splits : 1;
    if (sub > 1 && !a->workspace) return cudaErrorInvalidValue;
    const size_t es = dtype_size(problem_kv_dtype(p));
    xqa_launch_args_t x;
    x.out = a->out;
    x.q = a->q;
    x.k_pool = a->kv;
    x.v_pool = (const char *)a->kv + st->v_offset * es;
    x.pages = st->pages;
    x.pages_per_seq = (uint32_t)xqa_pages_per_seq(p);
    x.seq_lens = st->seq_lens;
    x.batch = (uint32_t)problem_streams(p);
    x.kv_heads = (uint32_t)p->kv_heads;
    x.sub_seqs = (uint32_t)sub;
    /* XQA multiplies q.k by q_scale / sqrt(d) (times kv_scale for an e4m3 cache);
     * FlashInfer passes bmm1_scale * sqrt(d), 1 / q_scaling here */
    x.q_scale = (float)(problem_scale(p) * sqrt((double)p->head_dim) * st->k_scale / st->v_scale);
    x.kv_scale = st->v_scale;
    x.stride_page = st->stride_page;
    x.stride_token = (uint64_t)p->head_dim;
    x.stride_head = st->stride_head;
    x.semaphores = sub > 1 ? (uint32_t *)a->workspace : NULL;
    x.scratch = sub > 1 ? (char *)a->workspace + xqa_semaphore_bytes(p) : NULL;
    x.smem_bytes = st->smem_bytes;
    x.pdl = (a->plan.variant & XQA_PDL) != 0;
    return st->inst->launch(&x, stream);
}

static void xqa_teardown(attn_args_t *a)
{
    xqa_state_free((xqa_state_t *)a->state);
    a->state = NULL;
}

extern "C" const attn_kernel_t kernel_xqa = {
    "xqa",
    "TensorRT-LLM's XQA decode kernel (" XQA_PACKAGE "'s mha.cu): warp-specialized MQA/GQA "
    "on tensor cores, multi-block",
    "contiguous (through a page table over it), paged with 64- or 128-token blocks; fp16, bf16; "
    "d 128; h/g 1, 2, 4, 8, 16, 32; --multi-block off|on|auto, --splits N; "
    "e4m3 cache (--kv-dtype fp8 --kv-scale tensor) with fp16 queries at h/g 4, 32; no int8",
    xqa_unsupported,
    xqa_layout,
    xqa_plan,
    xqa_workspace_bytes,
    xqa_private_bytes,
    xqa_io,
    xqa_setup,
    xqa_launch,
    xqa_teardown,
    XQA_PACKAGE,
    0, /* no --step append */
    ATTN_EXACT,
    NULL, /* selects no keys */
    NULL, /* reads the cache's K/V */
};

#else /* XQA's sources are not there */

#include "peer_stub.h"
ATTN_PEER_NOT_BUILT(xqa, "xqa", "TensorRT-LLM's XQA decode kernel, as FlashInfer ships it", XQA_PACKAGE)

#endif
