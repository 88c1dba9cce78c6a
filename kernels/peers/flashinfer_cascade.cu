/* `flashinfer-cascade`: FlashInfer 0.7.2's two-level cascade for a shared prefix, the
 * peer of `bifurcated` on the paged cache, run as FlashInfer's Python runs it on a
 * Hopper GPU: MultiLevelCascadeAttentionWrapper (flashinfer/cascade.py) with one
 * BatchPrefillWithPagedKVCacheWrapper per level, whose "auto" backend picks the FA3
 * (sm90) prefill for fp16/bf16 without custom masks or position encoding. Per step:
 *   1. unique level: every stream one query token against its own pages (a partly
 *      filled last context block and its decoded blocks), writing out and lse;
 *   2. shared level: every request's W streams as W query tokens against its full
 *      context blocks, no causal mask, into a level output and lse;
 *   3. MergeStateInPlace (attention/cascade.cuh) folds the shared level into out.
 * As in cascade.run, the last level runs first and the others merge into it.
 *
 * Template parameters and kernel arguments follow what FlashInfer's JIT builds for
 * backend fa3 (csrc/batch_prefill_sm90.cu, batch_prefill_sm90_customize_config.jinja,
 * batch_prefill_paged_sm90_kernel_inst.jinja, jit/attention/modules.py): variant
 * DefaultAttention<false>, mask kNone, no sliding window, sm_scale = 1/(q_scaling
 * sqrt(d)), logits_soft_cap 0, v scale 1. The cache is FlashInfer's "HND" layout: the
 * pool [blocks, 2, g, S, d] is its single 5-D paged tensor. plan() (PrefillSM90Plan)
 * runs in setup; launch only enqueues. Host arithmetic: flashinfer_cascade.h. */
#include "../registry.h"

#if defined(ATTN_HAVE_FLASHINFER) && defined(ATTN_HAVE_FLASHINFER_SM90)

#include <stdio.h>
#include <exception>
#include <new>
#include <vector>

#include <flashinfer/attention/cascade.cuh>
#include <flashinfer/attention/hopper/prefill_sm90.cuh>
#include <flashinfer/attention/hopper/variants.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/cutlass_utils.cuh>

#include "flashinfer_cascade.h"

extern "C" const attn_kernel_t kernel_flashinfer_cascade;

/* FlashInfer's default int workspace per wrapper (prefill.py: 8 MiB); larger where
 * the plan's per-tile arrays need more, as a user would pass through
 * reset_workspace_buffer. */
#define FIC_INT_WORKSPACE_MIN ((size_t)8 << 20)
/* An upper bound of the SM count the plan sizes work_indptr by. */
#define FIC_MAX_SMS 1024
/* cudaMalloc hands out memory in pages of up to this size: private_bytes rounds up. */
#define FIC_ALLOC_GRANULE ((size_t)2 << 20)

/* The kernel parameters of FlashInfer's fa3 JIT module (PagedParams of
 * batch_prefill_sm90_customize_config.jinja), with the additional parameters that
 * jit/attention/modules.py declares for a non-fp8 fa3 prefill. */
template <typename T>
struct fic_paged_params {
    using DTypeQ = flashinfer::cutlass_dtype_t<T>;
    using DTypeKV = flashinfer::cutlass_dtype_t<T>;
    using DTypeO = flashinfer::cutlass_dtype_t<T>;
    using IdType = int32_t;
    DTypeQ *q_ptr;
    DTypeKV *k_ptr;
    DTypeKV *v_ptr;
    DTypeO *o_ptr;
    float *lse_ptr;

    IdType *qo_tile_indices;
    IdType *qo_indptr;
    IdType *kv_indptr;
    IdType *kv_indices;
    IdType *qo_lens;
    IdType *kv_lens;
    IdType *head_indices;
    IdType *work_indptr;
    IdType *batch_indices;

    struct AdditionalParams {
        uint32_t *maybe_prefix_len_ptr;
        uint16_t *maybe_token_pos_in_items_ptr;
        uint16_t *maybe_max_item_len_ptr;
        float *maybe_scale_v;
        double logits_soft_cap;
        double sm_scale;
        double scale_v_scalar;
        int64_t token_pos_in_items_len;
    } additional_params;

    int64_t q_stride_n;
    int64_t k_stride_n;
    int64_t v_stride_n;
    int64_t o_stride_n;
    int64_t q_stride_h;
    int64_t k_stride_h;
    int64_t v_stride_h;
    int64_t o_stride_h;
    int64_t nnz_qo;

    int64_t k_page_stride;
    int64_t v_page_stride;

    int head_dim;
    int num_qo_heads;
    int num_kv_heads;
    int group_size;
    int page_size;
    int window_left;

    bool causal;
};

typedef struct fic_state {
    fic_level_t host[FIC_LEVELS];           /* the page lists plan() was given */
    int32_t *kv_indices[FIC_LEVELS];        /* device copies the kernels read */
    void *int_workspace[FIC_LEVELS];        /* each wrapper's int workspace */
    size_t int_workspace_bytes[FIC_LEVELS];
    flashinfer::PrefillPlanSM90Info plan[FIC_LEVELS];
    void *out_shared;                       /* the shared level's output [B*W, h, d] */
    float *lse[FIC_LEVELS];                 /* each level's base-2 lse [B*W, h] */
} fic_state_t;

static size_t fic_granule(size_t bytes)
{
    return (bytes + FIC_ALLOC_GRANULE - 1) / FIC_ALLOC_GRANULE * FIC_ALLOC_GRANULE;
}

/* PrefillSM90Plan's eight int arrays: seven of one int per query tile, 16-byte aligned,
 * and work_indptr of one per SM. */
static size_t fic_int_workspace_bytes(const problem_t *p, int level)
{
    size_t tiles = (size_t)fic_works(p, level);
    size_t need = 7 * ((tiles * sizeof(int32_t) + 15) / 16 * 16) + (FIC_MAX_SMS + 1) * sizeof(int32_t) + 16;
    return need > FIC_INT_WORKSPACE_MIN ? need : FIC_INT_WORKSPACE_MIN;
}

static kv_layout_t fic_layout(const problem_t *p)
{
    (void)p;
    return LAYOUT_PAGED;
}

static void fic_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    (void)dev;
    plan->runs = &kernel_flashinfer_cascade;
    plan->split = split_plan_fixed(problem_keys(p), 1, 1);
    plan->variant = 0;
}

/* The harness's workspace is unused: FlashInfer's buffers are made in setup. */
static size_t fic_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)p;
    (void)plan;
    return 0;
}

static size_t fic_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    size_t rows = (size_t)problem_streams(p) * p->heads;
    size_t pages[FIC_LEVELS] = {(size_t)p->batch * fic_shared_blocks(p),
                                (size_t)problem_streams(p) * fic_unique_blocks(p)};
    size_t total = fic_granule(rows * p->head_dim * dtype_size(p->dtype));
    for (int l = 0; l < FIC_LEVELS; ++l)
        total += fic_granule(rows * sizeof(float)) + fic_granule(pages[l] * sizeof(int32_t)) +
                 fic_granule(fic_int_workspace_bytes(p, l));
    return total;
}

static void fic_state_free(fic_state_t *st)
{
    if (!st) return;
    for (int l = 0; l < FIC_LEVELS; ++l) {
        cudaFree(st->kv_indices[l]);
        cudaFree(st->int_workspace[l]);
        cudaFree(st->lse[l]);
    }
    cudaFree(st->out_shared);
    fic_levels_free(st->host);
    delete st;
}

#define FIC_CHECK(call)                                                                   \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "flashinfer-cascade: %s: %s\n", #call, cudaGetErrorString(err_)); \
            return err_;                                                                  \
        }                                                                                 \
    } while (0)

/* One wrapper's plan(): PrefillSM90Plan over the level's host page lists, as
 * csrc/batch_prefill_sm90.cu's BatchPrefillWithKVCacheSM90Plan calls it (no CUDA
 * graph mode, causal false, dtype_o of two bytes). It stages the schedule in a host
 * buffer of the int workspace's size and copies it to the device on `stream`. */
static cudaError_t fic_plan_level(const problem_t *p, fic_state_t *st, int l, cudaStream_t stream)
{
    const fic_level_t *lv = &st->host[l];
    std::vector<uint8_t> staging(st->int_workspace_bytes[l]);
    cudaError_t err = flashinfer::PrefillSM90Plan<int32_t>(
        /*float_buffer=*/NULL, 0, st->int_workspace[l], staging.data(), st->int_workspace_bytes[l],
        st->plan[l], lv->qo_indptr, lv->kv_indptr, lv->kv_len,
        /*total_num_rows=*/(uint32_t)problem_streams(p), (uint32_t)lv->entries, (uint32_t)p->heads,
        (uint32_t)p->kv_heads, (uint32_t)p->head_dim, (uint32_t)p->head_dim, (uint32_t)p->block_size,
        /*causal=*/false, /*enable_cuda_graph=*/false, /*sizeof_dtype_o=*/2, stream);
    if (err != cudaSuccess) return err;
    /* the copy reads `staging`, which goes when this returns */
    return cudaStreamSynchronize(stream);
}

static cudaError_t fic_setup_levels(attn_args_t *a, fic_state_t *st)
{
    const problem_t *p = &a->problem;
    const size_t rows = (size_t)problem_streams(p) * p->heads;
    const size_t table = (size_t)problem_streams(p) * a->geom.max_blocks_per_seq;
    std::vector<int32_t> host_table(table);
    FIC_CHECK(cudaMemcpy(host_table.data(), a->block_table, table * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (fic_levels_build(p, host_table.data(), st->host) != 0) return cudaErrorMemoryAllocation;
    FIC_CHECK(cudaMalloc(&st->out_shared, rows * p->head_dim * dtype_size(p->dtype)));
    for (int l = 0; l < FIC_LEVELS; ++l) {
        const fic_level_t *lv = &st->host[l];
        FIC_CHECK(cudaMalloc((void **)&st->lse[l], rows * sizeof(float)));
        FIC_CHECK(cudaMalloc((void **)&st->kv_indices[l], (size_t)(lv->pages > 0 ? lv->pages : 1) * sizeof(int32_t)));
        FIC_CHECK(cudaMemcpy(st->kv_indices[l], lv->kv_indices, (size_t)lv->pages * sizeof(int32_t),
                             cudaMemcpyHostToDevice));
        st->int_workspace_bytes[l] = fic_int_workspace_bytes(p, l);
        FIC_CHECK(cudaMalloc(&st->int_workspace[l], st->int_workspace_bytes[l]));
        FIC_CHECK(fic_plan_level(p, st, l, 0));
        /* the same-schedule kernel is not instantiated (fic_unsupported keeps such
         * shapes out); a plan that asks for it anyway is refused, not misrun */
        if (st->plan[l].same_schedule_for_all_heads) {
            fprintf(stderr, "flashinfer-cascade: plan asks for the same-schedule-for-all-heads kernel\n");
            return cudaErrorNotSupported;
        }
    }
    return cudaSuccess;
}

static cudaError_t fic_setup(attn_args_t *a)
{
    fic_state_t *st = new (std::nothrow) fic_state_t();
    if (!st) return cudaErrorMemoryAllocation;
    cudaError_t err;
    try {
        err = fic_setup_levels(a, st);
    } catch (const std::exception &e) {
        fprintf(stderr, "flashinfer-cascade: plan: %s\n", e.what());
        err = cudaErrorInvalidValue;
    }
    if (err != cudaSuccess) {
        fic_state_free(st);
        return err;
    }
    a->state = st;
    return cudaSuccess;
}

/* One level's run, as BatchPrefillWithPagedKVCacheSM90Run fills PagedParams for the
 * HND layout: k and v are the two halves of each block, so their page stride and
 * token stride agree (the sparse mainloop's requirement). */
template <typename T, uint32_t D>
static cudaError_t fic_run_level(const attn_args_t *a, const fic_state_t *st, int l, void *o, cudaStream_t stream)
{
    using params_t = fic_paged_params<T>;
    using dtype = typename params_t::DTypeQ;
    const problem_t *p = &a->problem;
    const int64_t S = p->block_size, g = p->kv_heads;
    const flashinfer::PrefillPlanSM90Info &plan = st->plan[l];
    void *ib = st->int_workspace[l];
    params_t params = {};
    params.q_ptr = (dtype *)a->q;
    params.k_ptr = (dtype *)a->kv;
    params.v_ptr = (dtype *)a->kv + kv_paged_offset(&a->geom, 0, 1, 0, 0);
    params.o_ptr = (dtype *)o;
    params.lse_ptr = st->lse[l];
    params.q_stride_n = params.o_stride_n = (int64_t)p->heads * D;
    params.q_stride_h = params.o_stride_h = D;
    params.k_stride_h = params.v_stride_h = S * D;
    params.k_stride_n = params.v_stride_n = D;
    params.k_page_stride = params.v_page_stride = 2 * g * S * D;
    params.nnz_qo = problem_streams(p);
    params.head_dim = D;
    params.num_qo_heads = p->heads;
    params.num_kv_heads = p->kv_heads;
    params.group_size = p->heads / p->kv_heads;
    params.page_size = p->block_size;
    params.window_left = -1;
    params.causal = false;
    params.qo_tile_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.qo_tile_indices_offset);
    params.qo_indptr = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.qo_indptr_offset);
    params.kv_indptr = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.kv_indptr_offset);
    params.qo_lens = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.qo_len_offset);
    params.kv_lens = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.kv_len_offset);
    params.head_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.head_indices_offset);
    params.work_indptr = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.work_indptr_offset);
    params.batch_indices = flashinfer::GetPtrFromBaseOffset<int32_t>(ib, plan.batch_indices_offset);
    params.kv_indices = st->kv_indices[l];
    params.additional_params.logits_soft_cap = 0.0;
    params.additional_params.sm_scale = problem_scale(p);
    params.additional_params.scale_v_scalar = 1.0;
    params.additional_params.token_pos_in_items_len = 0;
    return flashinfer::BatchPrefillWithPagedKVCacheDispatched<
        D, D, flashinfer::MaskMode::kNone, /*LEFT_SLIDING_WINDOW=*/false,
        /*SAME_SCHEDULE_FOR_ALL_HEADS=*/false, flashinfer::DefaultAttention<false>, params_t>(
        params, /*enable_pdl=*/true, stream);
}

/* cascade.run: the unique level into out, the shared level beside it, then
 * merge_state_in_place(out, lse, out_shared, lse_shared). */
template <typename T, uint32_t D>
static cudaError_t fic_step(attn_args_t *a, cudaStream_t stream)
{
    const fic_state_t *st = (const fic_state_t *)a->state;
    const problem_t *p = &a->problem;
    cudaError_t err = fic_run_level<T, D>(a, st, FIC_UNIQUE, a->out, stream);
    if (err != cudaSuccess) return err;
    err = fic_run_level<T, D>(a, st, FIC_SHARED, st->out_shared, stream);
    if (err != cudaSuccess) return err;
    return flashinfer::MergeStateInPlace<T>((T *)a->out, st->lse[FIC_UNIQUE], (T *)st->out_shared,
                                            st->lse[FIC_SHARED], (uint32_t)problem_streams(p),
                                            (uint32_t)p->heads, (uint32_t)p->head_dim, nullptr, stream);
}

static cudaError_t fic_launch(attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const bool bf16 = p->dtype == DTYPE_BF16;
    try {
        if (p->head_dim == 64) return bf16 ? fic_step<nv_bfloat16, 64>(a, stream) : fic_step<half, 64>(a, stream);
        return bf16 ? fic_step<nv_bfloat16, 128>(a, stream) : fic_step<half, 128>(a, stream);
    } catch (const std::exception &e) {
        fprintf(stderr, "flashinfer-cascade: %s\n", e.what());
        return cudaErrorLaunchFailure;
    }
}

static void fic_teardown(attn_args_t *a)
{
    fic_state_free((fic_state_t *)a->state);
    a->state = NULL;
}

extern "C" const attn_kernel_t kernel_flashinfer_cascade = {
    "flashinfer-cascade",
    "FlashInfer's two-level cascade: Hopper (FA3) batch prefill over the shared context pages "
    "(W streams as W queries), the same over each stream's own pages, MergeStateInPlace",
    "paged cache with shared context blocks (ctx >= block size); fp16, bf16; head_dim 64, 128; "
    "no indirection, no split-KV, no 8-bit cache; sm_90a",
    fic_unsupported,
    fic_layout,
    fic_plan,
    fic_workspace_bytes,
    fic_private_bytes,
    fic_io,
    fic_setup,
    fic_launch,
    fic_teardown,
    "FlashInfer 0.7.2",
    0, /* no --step append */
    ATTN_EXACT,
    NULL, /* selects no keys */
    NULL, /* reads the cache's K/V */
};

#else

#include "peer_stub.h"
ATTN_PEER_NOT_BUILT(flashinfer_cascade, "flashinfer-cascade",
                    "FlashInfer's two-level cascade: shared-prefix prefill, per-stream prefill, state merge",
                    "FlashInfer 0.7.2")

#endif
