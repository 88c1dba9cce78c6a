/* `fused`: one masked-multi-head-attention pass per decode step, TensorRT-LLM style
 * (SPEC §4), on the shared core of attn_core.cuh.
 *
 * Grid: one CTA per (stream, kv head, key split, row group). The M rows of a CTA are
 * the p = h/g query heads of the kv head (GQA/MQA) of each of the stream's q_len query
 * tokens (--q-len), q_len*p rows padded to 16 (or 32 when above 16 and d is 64 or 128),
 * so each K/V element is read from memory once per stream and serves all of them; more
 * than 32 rows take several row-group CTAs, launched side by side so the repeat reads
 * hit L2. The causal mask among the query tokens costs only the tiles that hold the
 * last q_len keys (tc_causal_mask).
 * CTA: 4 warps in the KEYSPLIT decomposition (each warp 16 of the 64 keys of a
 * tile, its own softmax state), a 3-4 stage cp.async ring of 64-key K and V tiles
 * (96 KiB for d = 128: two CTAs per SM, two tiles in flight per CTA while the third
 * is consumed; four stages where the grid holds at most one CTA per SM), merged
 * across warps at the end.
 * Split-KV: with more than one split each CTA writes a partial (m, l, acc); the
 * last CTA of each (stream, kv head, row group) to finish, found by a completion
 * counter in the workspace, folds the partials by log-sum-exp (tail_merge) and
 * writes out, which saves the second launch that a separate merge kernel costs
 * (several microseconds, a tenth of a 128 MiB step). With one split the CTA writes
 * out directly.
 *
 * An 8-bit cache (--kv-dtype fp8|int8) runs the same grid on 8-bit tiles (fused_kv8.cu):
 * half the bytes per key, converted to the query dtype between shared memory and the
 * tensor cores, K's scale in the softmax scale and V's in the output (docs/KV-QUANT.md).
 *
 * This file also holds the KEYSPLIT/CUDA-core instantiations and the merge launch
 * that `bifurcated` reuses for its decode part (attn_launch_keysplit,
 * attn_launch_merge). */
#include <limits.h>
#include <stdlib.h>
#include "attn_core.cuh"
#include "fused_internal.h"
#include "../problem/ragged_plan.h"

template <typename T, int D, int MT>
static attn_kernel_fn keysplit_fn_d(int addr)
{
    switch (addr) {
    case ADDR_CONTIG: return attn_tc_kernel<tc_traits<T, D, MT, true, ADDR_CONTIG>>;
    case ADDR_PAGED: return attn_tc_kernel<tc_traits<T, D, MT, true, ADDR_PAGED>>;
    case ADDR_DEC: return attn_tc_kernel<tc_traits<T, D, MT, true, ADDR_DEC>>;
    default: return NULL; /* the context part has its own ROWSPLIT body */
    }
}

template <typename T>
static attn_kernel_fn keysplit_fn_t(int d, int mt, int addr)
{
    switch (d) {
    case 64: return mt == 2 ? keysplit_fn_d<T, 64, 2>(addr) : keysplit_fn_d<T, 64, 1>(addr);
    case 80: return keysplit_fn_d<T, 80, 1>(addr);
    case 96: return keysplit_fn_d<T, 96, 1>(addr);
    case 128: return mt == 2 ? keysplit_fn_d<T, 128, 2>(addr) : keysplit_fn_d<T, 128, 1>(addr);
    case 256: return keysplit_fn_d<T, 256, 1>(addr);
    default: return NULL;
    }
}

template <typename T>
static attn_kernel_fn cc_fn_t(int addr)
{
    switch (addr) {
    case ADDR_CONTIG: return attn_cc_kernel<T, ADDR_CONTIG>;
    case ADDR_PAGED: return attn_cc_kernel<T, ADDR_PAGED>;
    case ADDR_CTX: return attn_cc_kernel<T, ADDR_CTX>;
    case ADDR_DEC: return attn_cc_kernel<T, ADDR_DEC>;
    default: return NULL;
    }
}

/* The lean (two-stage) d = 128 instantiations, for the per-stream address modes of
 * bifurcated's decode part, and the deep one, for fused's one-CTA-per-SM grids over
 * a contiguous cache. */
template <typename T, int MT>
static attn_kernel_fn lean_fn(int addr)
{
    switch (addr) {
    case ADDR_PAGED: return attn_tc_kernel<tc_traits<T, 128, MT, true, ADDR_PAGED, ATTN_LEAN_STAGES>>;
    case ADDR_DEC: return attn_tc_kernel<tc_traits<T, 128, MT, true, ADDR_DEC, ATTN_LEAN_STAGES>>;
    default: return NULL;
    }
}
template <typename T>
static attn_kernel_fn deep_fn(int addr)
{
    return addr == ADDR_CONTIG ? attn_tc_kernel<tc_traits<T, 128, 1, true, ADDR_CONTIG, ATTN_DEEP_STAGES>> : NULL;
}

/* The instantiation and its dynamic shared memory for a problem, address mode and ring
 * (an 8-bit cache's in fused_kv8.cu). */
static attn_kernel_fn keysplit_pick(const problem_t *p, int addr, int ring, int *smem)
{
    *smem = attn_smem_bytes(p, true, ring);
    if (p->kv_quant != KV_QUANT_NONE) return attn_keysplit_kv8(p, addr, ring);
    if (!attn_tc_path(p)) {
        switch (p->dtype) {
        case DTYPE_FP16: return cc_fn_t<__half>(addr);
        case DTYPE_BF16: return cc_fn_t<__nv_bfloat16>(addr);
        default: return cc_fn_t<float>(addr);
        }
    }
    int mt = attn_keysplit_mt(p);
    const bool half = p->dtype == DTYPE_FP16;
    switch (attn_ring(p, ring)) {
    case ATTN_RING_LEAN:
        if (mt == 2) return half ? lean_fn<__half, 2>(addr) : lean_fn<__nv_bfloat16, 2>(addr);
        return half ? lean_fn<__half, 1>(addr) : lean_fn<__nv_bfloat16, 1>(addr);
    case ATTN_RING_DEEP: return half ? deep_fn<__half>(addr) : deep_fn<__nv_bfloat16>(addr);
    default: break;
    }
    if (half) return keysplit_fn_t<__half>(p->head_dim, mt, addr);
    return keysplit_fn_t<__nv_bfloat16>(p->head_dim, mt, addr);
}

cudaError_t attn_setup_keysplit(const problem_t *p, int addr, int ring)
{
    int smem;
    attn_kernel_fn fn = keysplit_pick(p, addr, ring, &smem);
    if (!fn) return cudaErrorInvalidValue;
    cudaError_t err = cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    /* The lean body runs beside another kernel's CTAs (bifurcated's wgmma context
     * part): both ask for the largest shared-memory carveout, or an SM configured
     * for one kernel's smaller need has no room left for the other's CTA. */
    if (err == cudaSuccess && attn_ring(p, ring) == ATTN_RING_LEAN)
        err = cudaFuncSetAttribute((const void *)fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared);
    return err;
}

/* A launch of fn, with pdl as the programmatic dependent of the grid before it on the
 * stream: set up while that grid runs, it waits in the kernel (attn_grid_dependency_wait)
 * for that grid's end and memory, and the launch gap between the two is saved. */
template <typename... Params, typename... Args>
static cudaError_t launch_maybe_pdl(void (*fn)(Params...), unsigned ctas, unsigned threads, size_t smem,
                                    cudaStream_t stream, bool pdl, Args... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(ctas);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, fn, args...);
}

cudaError_t attn_launch_keysplit(const problem_t *p, int addr, const attn_params_t *P, cudaStream_t stream,
                                 int ring)
{
    int smem;
    attn_kernel_fn fn = keysplit_pick(p, addr, ring, &smem);
    if (!fn) return cudaErrorInvalidValue;
    const int64_t ctas = attn_items(*P);
    if (ctas == 0) return cudaSuccess;
    if (ctas > INT_MAX) return cudaErrorInvalidConfiguration;
    return launch_maybe_pdl(fn, (unsigned)ctas, ATTN_THREADS, smem, stream, P->after_append != 0, *P);
}

/* The merge: a CTA of attn_merge_kernel per row for rows of more than MERGE_FEW_MAX
 * slots, else one warp of attn_merge_few_kernel per row, MERGE_WARPS rows a CTA: every
 * load of the row in one round trip (where a two-pass kernel reads every max before
 * any accumulator: a second round trip on the step's critical path). With pdl, the
 * programmatic dependent of the grid before it. */
template <typename... Params, typename... Args>
static cudaError_t launch_merge_kernel(void (*fn)(Params...), unsigned ctas, cudaStream_t stream, bool pdl, Args... args)
{
    return launch_maybe_pdl(fn, ctas, 32 * MERGE_WARPS, 0, stream, pdl, args...);
}
template <typename T>
static cudaError_t merge_t(const problem_t *p, const attn_params_t *P, bool wide, int64_t rows, unsigned ctas,
                           cudaStream_t stream, bool pdl)
{
    const int d = p->head_dim;
    T *out = static_cast<T *>(P->out);
    if (wide)
        return launch_merge_kernel(attn_merge_kernel<T>, ctas, stream, pdl, P->ws_acc, P->ws_ml, out, P->nslots, d);
    if (d <= 128)
        return launch_merge_kernel(attn_merge_few_kernel<T, 1>, ctas, stream, pdl, P->ws_acc, P->ws_ml,
                                   out, rows, P->nslots, d);
    return launch_merge_kernel(attn_merge_few_kernel<T, MERGE_MAX_D / 128>, ctas, stream, pdl,
                               P->ws_acc, P->ws_ml, out, rows, P->nslots, d);
}

cudaError_t attn_launch_merge(const problem_t *p, const attn_params_t *P, cudaStream_t stream, bool pdl)
{
    const int64_t rows = (int64_t)problem_queries(p) * p->heads;
    const bool wide = P->nslots > MERGE_FEW_MAX;
    const int64_t ctas = wide ? rows : (rows + MERGE_WARPS - 1) / MERGE_WARPS;
    if (ctas > INT_MAX || p->head_dim > MERGE_MAX_D) return cudaErrorInvalidConfiguration;
    switch (p->dtype) {
    case DTYPE_FP16: return merge_t<__half>(p, P, wide, rows, (unsigned)ctas, stream, pdl);
    case DTYPE_BF16: return merge_t<__nv_bfloat16>(p, P, wide, rows, (unsigned)ctas, stream, pdl);
    default: return merge_t<float>(p, P, wide, rows, (unsigned)ctas, stream, pdl);
    }
}

/* ---------------------------------------------------------------- the kernel entry */

extern "C" const attn_kernel_t kernel_fused;

static int fused_row_tiles(const problem_t *p)
{
    int rows = attn_rows_per_cta(p, true);
    return (problem_stream_rows(p) + rows - 1) / rows;
}

static split_plan_t fused_split(const attn_plan_t *plan, const problem_t *p)
{
    if (plan && plan->split.splits >= 1 && plan->split.chunk >= 1) return plan->split;
    return split_plan_fixed(problem_keys(p), 1, ATTN_KEY_TILE);
}

static kv_layout_t fused_layout(const problem_t *p)
{
    return p->cache == CACHE_PAGED ? LAYOUT_PAGED : LAYOUT_CONTIGUOUS;
}

/* Keys per chunk from which a split grid plans with two CTAs per SM (fused_plan). */
#define FUSED_LONG_CHUNK 2048

/* plan->variant bits: the tensor-core body (else the CUDA-core one), and its deep ring. */
#define FUSED_TC 1
#define FUSED_DEEP 2

/* A ragged batch (--ctx-dist): the keys of each stream, malloc'd [B*W] (NULL when memory
 * runs out). */
static int *fused_stream_keys(const problem_t *p)
{
    const int streams = problem_streams(p);
    int *keys = (int *)malloc((size_t)streams * sizeof *keys);
    if (keys)
        for (int s = 0; s < streams; ++s) keys[s] = problem_ctx_len(p, s / p->beam) + p->gen;
    return keys;
}

/* The split of a ragged batch: one chunk size for every stream (problem/ragged_plan.h),
 * by the --multi-block and --splits rules applied to the longest stream, and never more
 * chunks a stream than its last CTA folds (the tail merge: the merge launch would read
 * every slot of a row, and a shorter stream writes fewer). */
static split_plan_t fused_ragged_split(const problem_t *p, const device_info_t *dev, int ctas_per_sm)
{
    const int keys = problem_keys(p);
    int rows = attn_rows_per_cta(p, true);
    if (problem_group(p) < rows) rows = problem_group(p);
    int most = ATTN_TAIL_MERGE_MAX / rows;
    if (most > SPLIT_MAX) most = SPLIT_MAX;
    split_plan_t whole = split_plan_fixed(keys, 1, ATTN_KEY_TILE);
    if (p->multi_block == MULTI_BLOCK_OFF) return whole;
    if (p->splits > 0) return split_plan_fixed(keys, p->splits < most ? p->splits : most, ATTN_KEY_TILE);
    int *stream_keys = fused_stream_keys(p);
    split_plan_t s = whole;
    if (stream_keys && dev && dev->sm_count > 0)
        s = ragged_plan_auto(stream_keys, problem_streams(p), (long)p->kv_heads * fused_row_tiles(p), ATTN_KEY_TILE,
                             dev->sm_count, ctas_per_sm, most);
    free(stream_keys);
    if (p->multi_block == MULTI_BLOCK_ON && s.splits < 2) s = split_plan_fixed(keys, 2, ATTN_KEY_TILE);
    return s;
}

static void fused_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    plan->runs = &kernel_fused;
    if (problem_ragged(p)) {
        /* balanced over the CTAs the SMs hold at once: co-resident CTAs share their SM's
         * bandwidth, so a long chunk beside short ones streams at a share of it */
        plan->split = fused_ragged_split(p, dev, attn_ctas_per_sm(p, true, dev));
        plan->variant = attn_tc_path(p) ? FUSED_TC : 0;
        return;
    }
    long items = (long)problem_streams(p) * p->kv_heads * fused_row_tiles(p);
    /* The planner fills one CTA per SM for tiles of up to 16 query rows: one CTA's
     * cp.async pipeline keeps enough loads in flight to take its SM's share of HBM
     * bandwidth, and more resident CTAs only add splits, partials to merge and
     * pipeline ramps (on H100 and H200 this picks the fastest split count or one
     * within noise of it). Tiles of 32 rows (groups of more than 16 heads, MQA) do
     * twice the tensor-core and softmax work per byte; a second resident CTA hides
     * that latency, so they plan with two per SM. So does a paged cache: its tiles
     * gather rows from scattered blocks, whose address translation and DRAM pages
     * add latency that one CTA's ring does not cover. */
    bool two = attn_keysplit_mt(p) > 1 || p->cache == CACHE_PAGED;
    plan->split = attn_split(p, dev, items, problem_keys(p), two ? 2 : 1);
    /* Split grids whose chunks are long (FUSED_LONG_CHUNK keys and more) plan with two
     * CTAs per SM as well, where that keeps the partials of a row to one batch of the
     * tail merge: a CTA of one per SM streams only as fast as its loop turns, and
     * each of two per SM needs half that. Shorter chunks keep one per SM, where the
     * extra ramps and partials of a second CTA show. */
    if (!two && plan->split.splits > 1 && plan->split.chunk >= FUSED_LONG_CHUNK && p->splits == 0) {
        const split_plan_t s2 = attn_split(p, dev, items, problem_keys(p), 2);
        if (s2.splits <= TAIL_MERGE_BATCH) {
            plan->split = s2;
            two = true;
        }
    }
    plan->variant = attn_tc_path(p) ? FUSED_TC : 0;
    /* A grid of at most one CTA per SM gets the deep ring (attn_ring): nothing else
     * needs the SM's shared memory. */
    if (!two && dev && dev->sm_count > 0 && items * plan->split.splits <= dev->sm_count &&
        attn_ring(p, ATTN_RING_DEEP) == ATTN_RING_DEEP)
        plan->variant |= FUSED_DEEP;
}

static int fused_ring(const attn_plan_t *plan)
{
    return plan && (plan->variant & FUSED_DEEP) ? ATTN_RING_DEEP : ATTN_RING_DEFAULT;
}

extern "C" int fused_plan_deep_ring(const attn_plan_t *plan) { return fused_ring(plan) == ATTN_RING_DEEP; }

/* The partials of a split plan that the merge launch folds (0: no split, or the tail merge does). */
extern "C" int fused_plan_merge_slots(const problem_t *p, const attn_plan_t *plan)
{
    const int splits = fused_split(plan, p).splits;
    if (problem_ragged(p)) return 0; /* its last CTAs merge (fused_ragged_split) */
    return splits > 1 && !attn_tail_merge_fits(p, splits) ? splits : 0;
}

/* Split partials, then one completion counter per (stream, kv head, row group). */
static size_t fused_counters_offset(const problem_t *p, const attn_plan_t *plan)
{
    return attn_partials_bytes(p, fused_split(plan, p).splits);
}

static size_t fused_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    size_t partials = fused_counters_offset(p, plan);
    if (!partials) return 0;
    return partials + (size_t)problem_streams(p) * p->kv_heads * fused_row_tiles(p) * sizeof(unsigned int);
}

/* A ragged batch's list of (stream, split) pairs (attn_params_t.work): at most every
 * stream in the plan's most splits. */
static size_t fused_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    if (!problem_ragged(p)) return 0;
    return (size_t)problem_streams(p) * fused_split(plan, p).splits * 2 * sizeof(int32_t);
}

/* The state of a ragged batch: its work list on the device. */
typedef struct fused_ragged {
    int32_t *work;
    long items;
} fused_ragged_t;

static cudaError_t fused_ragged_setup(attn_args_t *a)
{
    const problem_t *p = &a->problem;
    const int chunk = fused_split(&a->plan, p).chunk;
    int *keys = fused_stream_keys(p);
    fused_ragged_t *st = (fused_ragged_t *)calloc(1, sizeof *st);
    int32_t *host = NULL;
    cudaError_t e = keys && st ? cudaSuccess : cudaErrorMemoryAllocation;
    if (e == cudaSuccess) {
        st->items = ragged_work_count(keys, problem_streams(p), chunk);
        host = (int32_t *)malloc((size_t)st->items * 2 * sizeof *host);
        if (!host || ragged_work_build(keys, problem_streams(p), chunk, host) != 0) e = cudaErrorMemoryAllocation;
    }
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->work, (size_t)st->items * 2 * sizeof(int32_t));
    if (e == cudaSuccess)
        e = cudaMemcpy(st->work, host, (size_t)st->items * 2 * sizeof(int32_t), cudaMemcpyHostToDevice);
    free(keys);
    free(host);
    if (e != cudaSuccess && st) {
        if (st->work) cudaFree(st->work);
        free(st);
        st = NULL;
    }
    a->state = st;
    return e;
}

static attn_io_t fused_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io;
    double partials = (double)fused_counters_offset(p, plan);
    io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.flops = io_flops(p);
    io.workspace_bytes = 2.0 * partials; /* partials written, read back */
    return io;
}

static int fused_addr(const problem_t *p) { return p->cache == CACHE_PAGED ? ADDR_PAGED : ADDR_CONTIG; }

static cudaError_t fused_setup(attn_args_t *a)
{
    cudaError_t e = attn_setup_keysplit(&a->problem, fused_addr(&a->problem), fused_ring(&a->plan));
    if (e == cudaSuccess && problem_ragged(&a->problem)) e = fused_ragged_setup(a);
    return e;
}

static cudaError_t fused_launch(attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const split_plan_t split = fused_split(&a->plan, p);
    if (split.splits > 1 && !a->workspace) return cudaErrorInvalidValue;
    attn_params_t P = attn_params_base(a, split.splits);
    const int addr = fused_addr(p);
    P.kv = a->kv;
    P.vstride = addr == ADDR_PAGED ? kv_paged_offset(&P.geom, 0, 1, 0, 0) : kv_contiguous_offset(&P.geom, 0, 1, 0, 0);
    P.units = problem_streams(p);
    P.splits = split.splits;
    P.chunk = split.chunk;
    P.rows_per_cta = attn_rows_per_cta(p, true);
    P.row_tiles = fused_row_tiles(p);
    P.rows_per_unit = problem_stream_rows(p);
    P.streams_per_unit = p->q_len;
    P.addr_stream_mult = 1;
    P.key_begin = 0;
    P.key_end = problem_keys(p);
    P.slot_base = 0;
    P.after_append = p->step == STEP_APPEND;
    if (problem_ragged(p)) {
        const fused_ragged_t *st = static_cast<const fused_ragged_t *>(a->state);
        if (!st || !st->work || !a->geom.ctx_lens) return cudaErrorInvalidValue;
        P.work = st->work;
        P.work_items = st->items;
    }
    /* the same choice auto's model counts (fused_plan_merge_slots) */
    const bool merge_launch = fused_plan_merge_slots(p, &a->plan) > 0;
    if (split.splits > 1 && !merge_launch)
        P.counters = reinterpret_cast<unsigned int *>(static_cast<char *>(a->workspace) +
                                                      fused_counters_offset(p, &a->plan));
    cudaError_t e = attn_launch_keysplit(p, addr, &P, stream, fused_ring(&a->plan));
    if (e == cudaSuccess && merge_launch) e = attn_launch_merge(p, &P, stream, true);
    return e;
}

static void fused_teardown(attn_args_t *a)
{
    fused_ragged_t *st = static_cast<fused_ragged_t *>(a->state);
    if (!st) return;
    cudaFree(st->work);
    free(st);
    a->state = NULL;
}

extern "C" const attn_kernel_t kernel_fused = {
    "fused",
    "one fused decode-attention kernel per step: GQA-aware tiles on tensor cores, cp.async pipeline, split-KV",
    "contiguous, paged; fp16, bf16 (tensor cores at d 64/80/96/128/256), fp32; d multiple of 8 up to 256; "
    "any h/g; --q-len 1-16; indirection; --multi-block off|on|auto, --splits N; ragged --ctx-dist (chunks by tokens); "
    "--kv-dtype fp8|int8 with --kv-scale tensor|head (tensor cores at d 64/128/256); --step append",
    attn_core_unsupported,
    fused_layout,
    fused_plan,
    fused_workspace_bytes,
    fused_private_bytes,
    fused_io,
    fused_setup,
    fused_launch,
    fused_teardown,
    NULL, /* not a peer */
    1,    /* runs --step append */
};
