/* `select-filter`: the filter step of Select-Attention (the Share/Select-Attention paper,
 * §4.2) as GPU kernels. Exact attention by share's three launches with every head
 * essential (share_body.cuh), which leave each head's logits and softmax statistics in
 * the workspace; then two launches of its own:
 *  1. scores: each key's softmax weight averaged over the heads, from those logits;
 *  2. top-p: per stream, the set problem/top_p.h defines, by radix select on the scores'
 *     mass (four passes of a 256-bucket histogram in shared memory, no sort), written as
 *     a mask over the stream's keys and a count.
 * The later layers (the selected step) attend only to the chosen keys. The output is
 * exact attention; the selection is checked against the CPU reference's scores
 * (reference/select.h) through kernel_select_filter.selection. */
#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#include "registry.h"
#include "cublas_common.cuh"
#include "share_body.cuh"
#include "../problem/recompute.h"
#include "../problem/top_p.h"

extern "C" const attn_kernel_t kernel_select_filter, kernel_select_attend, kernel_select_recompute;

#define SELECT_THREADS 1024
/* What each of Select-Attention's kernels runs beside the caches, for `list` */
#define SELECT_SUPPORTS                                                                               \
    "MHA, GQA, MQA; indirection; fp16, bf16, fp32; head_dim multiple of 8 up to 256; split-KV; one " \
    "query token; no 8-bit KV cache, no --tp, no --ctx-dist"

/* The workspace after share's: scores [streams][keys] float, mask [streams][keys] bytes,
 * kept [streams] int. */
typedef struct select_ws {
    size_t share, scores, mask, kept, bytes;
} select_ws_t;

static select_ws_t select_ws(const problem_t *p, const attn_plan_t *plan)
{
    const size_t streams = (size_t)problem_streams(p), keys = (size_t)problem_keys(p);
    select_ws_t w;
    w.share = share_ws_layout(problem_streams(p), p->heads, p->heads, problem_keys(p), p->head_dim,
                              plan->split.splits, 1).bytes;   /* every head essential: one part a split */
    w.scores = w.share;
    w.mask = w.scores + share_align(streams * keys * sizeof(float));
    w.kept = w.mask + share_align(streams * keys);
    w.bytes = w.kept + share_align(streams * sizeof(int));
    return w;
}

namespace {

struct select_params {
    const float *logits;
    const float2 *stats;
    float *scores;
    unsigned char *mask;
    int *kept;
    int heads, keys, splits;
    float top_p;
};

/* Each key's weight averaged over the heads: exp(logit - m) / l of every head, where (m, l)
 * combine the head's split statistics. Grid: (key blocks, streams). */
__global__ void select_scores_kernel(const select_params P)
{
    extern __shared__ float2 norm[];   /* [heads]: (m, 1 / l) */
    const int s = blockIdx.y;
    for (int h = threadIdx.x; h < P.heads; h += blockDim.x) {
        float m = -INFINITY, l = 0.0f;
        const float2 *st = P.stats + share_stat_at(s, P.heads, h, P.splits, 0);
        for (int k = 0; k < P.splits; ++k) ml_combine(m, l, st[k].x, st[k].y);
        norm[h] = make_float2(m, l > 0.0f ? 1.0f / l : 0.0f);
    }
    __syncthreads();
    const int key = blockIdx.x * blockDim.x + threadIdx.x;
    if (key >= P.keys) return;
    float sum = 0.0f;
    for (int h = 0; h < P.heads; ++h)
        sum += expf(P.logits[share_logit_at(s, P.heads, h, P.keys, key)] - norm[h].x) * norm[h].y;
    P.scores[(int64_t)s * P.keys + key] = sum / P.heads;
}

/* The sum over the CTA of one float per thread, on every thread. */
__device__ float cta_sum(float x, float *scratch)
{
    for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = x;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += scratch[w];
    return total;
}

/* top_p_pick_digit across the 32 lanes of a warp: lane l holds the 8 buckets from
 * 255 - 8l down, a scan of their sums finds the lane where the target is reached, and that
 * lane scans its 8 as the serial version does (digit 0 where no higher one reaches it).
 * Every lane returns the digit and the mass above it. */
#define PICK_PER_LANE (TOP_P_BUCKETS / 32)
__device__ int pick_digit_warp(const float *mass, float above, float target, float *above_out)
{
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31, hi = TOP_P_BUCKETS - 1 - PICK_PER_LANE * lane;
    float chunk = 0.0f;
#pragma unroll
    for (int i = 0; i < PICK_PER_LANE; ++i) chunk += mass[hi - i];
    float incl = chunk;
    for (int off = 1; off < 32; off *= 2) {
        const float v = __shfl_up_sync(all, incl, off);
        if (lane >= off) incl += v;
    }
    const unsigned hit = __ballot_sync(all, above + incl >= target);
    if (!hit) { /* the buckets down to 1 are above the lowest digit, 0 */
        *above_out = above + __shfl_sync(all, incl, 31) - mass[0];
        return 0;
    }
    const int at = __ffs(hit) - 1;
    float run = above + incl - chunk;
    int digit = 0;
    if (lane == at) {
        for (int i = 0; i < PICK_PER_LANE; ++i) {
            const int b = hi - i;
            /* the scan's sums say the target is reached in this lane's buckets: at its
             * lowest if rounding leaves the running sum short of it */
            if (i == PICK_PER_LANE - 1 || run + mass[b] >= target) {
                digit = b;
                break;
            }
            run += mass[b];
        }
    }
    *above_out = __shfl_sync(all, run, at);
    return __shfl_sync(all, digit, at);
}

/* The top-p set of one stream's scores (problem/top_p.h): one CTA per stream. Each warp
 * adds its keys' mass into a histogram of its own (a pass's keys crowd into few buckets:
 * one shared histogram would serialise the CTA's atomics on them), the histograms are
 * summed, and one warp picks the digit. */
__global__ void __launch_bounds__(SELECT_THREADS) select_top_p_kernel(const select_params P)
{
    constexpr int WARPS = SELECT_THREADS / 32;
    __shared__ float wmass[WARPS][TOP_P_BUCKETS];
    __shared__ float mass[TOP_P_BUCKETS];
    __shared__ float scratch[WARPS];
    __shared__ uint32_t prefix_s;
    __shared__ float above_s;
    const int s = blockIdx.x, warp = threadIdx.x >> 5;
    const float *sc = P.scores + (int64_t)s * P.keys;
    float own = 0.0f;
    for (int i = threadIdx.x; i < P.keys; i += blockDim.x) own += sc[i];
    const float target = P.top_p * cta_sum(own, scratch);
    if (threadIdx.x == 0) prefix_s = 0u, above_s = 0.0f;
    for (int pass = 0; pass < TOP_P_PASSES; ++pass) {
        for (int b = threadIdx.x; b < WARPS * TOP_P_BUCKETS; b += blockDim.x) (&wmass[0][0])[b] = 0.0f;
        __syncthreads();
        const uint32_t prefix = prefix_s;
        for (int i = threadIdx.x; i < P.keys; i += blockDim.x) {
            const uint32_t key = top_p_key(sc[i]);
            if (top_p_candidate(key, prefix, pass)) atomicAdd(&wmass[warp][top_p_digit(key, pass)], sc[i]);
        }
        __syncthreads();
        for (int b = threadIdx.x; b < TOP_P_BUCKETS; b += blockDim.x) {
            float m = 0.0f;
            for (int w = 0; w < WARPS; ++w) m += wmass[w][b];
            mass[b] = m;
        }
        __syncthreads();
        if (warp == 0) {
            float above;
            const int digit = pick_digit_warp(mass, above_s, target, &above);
            if (threadIdx.x == 0) {
                above_s = above;
                prefix_s = prefix | (uint32_t)digit << (32 - TOP_P_DIGIT_BITS * (pass + 1));
            }
        }
        __syncthreads();
    }
    const float threshold = top_p_score(prefix_s);
    int count = 0;
    for (int i = threadIdx.x; i < P.keys; i += blockDim.x) {
        const bool in = sc[i] >= threshold;
        P.mask[(int64_t)s * P.keys + i] = in;
        count += in;
    }
    const float kept = cta_sum((float)count, scratch);
    if (threadIdx.x == 0) P.kept[s] = (int)kept;
}

/* Each stream's kept keys in order, from its mask: index[s * keys + i] for i below
 * counts[s]. One CTA per stream; each thread takes a contiguous run of keys, and a scan
 * of the threads' counts places its run. */
__global__ void __launch_bounds__(SELECT_THREADS) select_compact_kernel(const unsigned char *mask, int keys,
                                                                        int *index, int *counts)
{
    __shared__ int sums[SELECT_THREADS];
    const int s = blockIdx.x, t = threadIdx.x;
    const int per = (keys + SELECT_THREADS - 1) / SELECT_THREADS, lo = min(keys, t * per), hi = min(keys, lo + per);
    const unsigned char *m = mask + (int64_t)s * keys;
    int own = 0;
    for (int i = lo; i < hi; ++i) own += m[i];
    sums[t] = own;
    __syncthreads();
    for (int off = 1; off < SELECT_THREADS; off *= 2) {
        const int v = t >= off ? sums[t - off] : 0;
        __syncthreads();
        sums[t] += v;
        __syncthreads();
    }
    int at = sums[t] - own;
    for (int i = lo; i < hi; ++i)
        if (m[i]) index[(int64_t)s * keys + at++] = i;
    if (t == SELECT_THREADS - 1) counts[s] = sums[t];
}

/* The selected step's state: share's map (every head essential; first, as share_state
 * has it), the filter step's keys compacted per stream, and the split of the longest list. */
struct attend_state {
    int *map;
    int *index, *counts;
    int splits, chunk;
};

} // namespace

static const char *select_unsupported(const problem_t *p)
{
    static const share_limit_reasons why = {
        "Select-Attention's steps read a cache in --dtype only, not an 8-bit KV cache",
        "Select-Attention's steps run on one GPU (no --tp)",
        "Select-Attention's steps take one context length for every request (no --ctx-dist)",
        "Select-Attention's steps rank the keys of one query token per stream (no --q-len > 1)",
        "Select-Attention's steps launch a CTA row per stream and per (kv head, 4 heads): at most 65535 of each",
    };
    return share_launch_limits(p, why);
}

static size_t select_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    return select_ws(p, plan).bytes;
}

static attn_io_t select_filter_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io;
    io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.flops = io_flops(p);
    const double streams = problem_streams(p), keys = problem_keys(p);
    const double logits = streams * p->heads * keys * sizeof(float);
    const double partials = (double)plan->split.splits * streams * p->heads * p->head_dim * sizeof(float);
    /* logits and partials written and read back; the scores written, read by the five
     * passes of the selection; the mask written */
    io.workspace_bytes = 2.0 * (logits + partials) + 6.0 * streams * keys * sizeof(float) + streams * keys;
    return io;
}

static select_params select_params_make(const attn_args_t *a, const share_params &S)
{
    const problem_t *p = &a->problem;
    const select_ws_t ws = select_ws(p, &a->plan);
    select_params P;
    P.logits = S.logits;
    P.stats = S.stats;
    P.scores = (float *)((char *)a->workspace + ws.scores);
    P.mask = (unsigned char *)a->workspace + ws.mask;
    P.kept = (int *)((char *)a->workspace + ws.kept);
    P.heads = p->heads;
    P.keys = problem_keys(p);
    P.splits = S.splits * S.parts;   /* the statistics: one per CTA of the logits launch */
    P.top_p = (float)p->top_p;
    return P;
}

/* share's map with every head essential, its own */
static cudaError_t select_filter_setup(attn_args_t *a) { return share_setup_map(a, true); }

/* The filter step on the device map `map` (every head essential). */
static cudaError_t filter_launch(const attn_args_t *a, const int *map, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const share_params S = share_params_make(a, map, p->heads);
    cudaError_t e = share_launch_body(S, p->dtype, stream);
    if (e != cudaSuccess) return e;
    const select_params P = select_params_make(a, S);
    const dim3 grid((unsigned)((P.keys + 255) / 256), (unsigned)S.streams);
    select_scores_kernel<<<grid, 256, (size_t)p->heads * sizeof(float2), stream>>>(P);
    select_top_p_kernel<<<(unsigned)S.streams, SELECT_THREADS, 0, stream>>>(P);
    return cudaGetLastError();
}

static cudaError_t select_filter_launch(attn_args_t *a, cudaStream_t stream)
{
    const share_state *st = (const share_state *)a->state;
    if (!st || !a->workspace) return cudaErrorInvalidValue;
    return filter_launch(a, st->map, stream);
}

/* The last filter step's mask [streams][keys] into chosen (host). */
static cudaError_t select_selection(const attn_args_t *a, unsigned char *chosen)
{
    const problem_t *p = &a->problem;
    const select_ws_t ws = select_ws(p, &a->plan);
    return cudaMemcpy(chosen, (const char *)a->workspace + ws.mask, (size_t)problem_streams(p) * problem_keys(p),
                      cudaMemcpyDeviceToHost);
}

extern "C" const attn_kernel_t kernel_select_filter = {
    "select-filter",
    "Select-Attention's filter step: exact attention (share's launches, every head essential), each key's "
    "head-averaged weight, and the top-p set of keys per stream by radix select on their mass (--top-p)",
    "contiguous and paged caches; " SELECT_SUPPORTS,
    select_unsupported,
    share_layout,
    share_plan,
    select_workspace_bytes,
    share_private_bytes,
    select_filter_io,
    select_filter_setup,
    select_filter_launch,
    share_teardown,
    NULL, /* not a peer */
    0,    /* does not run --step append */
    ATTN_EXACT,
    select_selection,
    NULL, /* reads the cache's K/V */
};

static void select_attend_teardown(attn_args_t *a)
{
    attend_state *st = (attend_state *)a->state;
    if (!st) return;
    cudaFree(st->map);
    cudaFree(st->index);
    cudaFree(st->counts);
    free(st);
    a->state = NULL;
}

/* The selected step: the filter step once, outside timing, on the launch's inputs (the
 * filter layer's keys stand for the later layer's), its sets compacted into per-stream
 * lists, and the split of the longest list over the plan's slots. */
static cudaError_t select_attend_setup(attn_args_t *a)
{
    const problem_t *p = &a->problem;
    if (!a->workspace) return cudaErrorInvalidValue;
    cudaError_t e = share_setup_map(a, true);
    if (e != cudaSuccess) return e;
    share_state *sh = (share_state *)a->state;
    attend_state *st = (attend_state *)calloc(1, sizeof *st);
    if (!st) {
        share_teardown(a);
        return cudaErrorMemoryAllocation;
    }
    st->map = sh->map;
    free(sh);
    a->state = st;
    const int streams = problem_streams(p), keys = problem_keys(p);
    const select_ws_t ws = select_ws(p, &a->plan);
    e = cudaMalloc((void **)&st->index, (size_t)streams * keys * sizeof(int));
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->counts, (size_t)streams * sizeof(int));
    if (e == cudaSuccess) e = filter_launch(a, st->map, 0);
    if (e == cudaSuccess)
        select_compact_kernel<<<(unsigned)streams, SELECT_THREADS>>>((const unsigned char *)a->workspace + ws.mask,
                                                                     keys, st->index, st->counts);
    if (e == cudaSuccess) e = cudaGetLastError();
    int *counts = (int *)malloc((size_t)streams * sizeof(int));
    if (e == cudaSuccess && !counts) e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = cudaMemcpy(counts, st->counts, (size_t)streams * sizeof(int), cudaMemcpyDeviceToHost);
    int most = 1;
    for (int s = 0; e == cudaSuccess && s < streams; ++s) most = counts[s] > most ? counts[s] : most;
    free(counts);
    /* the longest list in as many splits of SHARE_TILE keys as the plan has slots for */
    const int tiles = (most + SHARE_TILE - 1) / SHARE_TILE;
    st->splits = tiles < a->plan.split.splits ? tiles : a->plan.split.splits;
    st->chunk = (most + st->splits - 1) / st->splits;
    if (e != cudaSuccess) select_attend_teardown(a); /* the harness tears down only what set up */
    return e;
}

/* share's launches over each stream's kept keys: gathered from the cache through their
 * positions, or (own, with its geometry) the first counts[s] rows of K/V of the step's own. */
static cudaError_t attend_kept(const attn_args_t *a, const attend_state *st, const void *own,
                               const kv_geometry_t *own_geom, cudaStream_t stream)
{
    share_params S = share_params_make(a, st->map, a->problem.heads);
    if (own) {
        S.kv = own;
        S.geom = *own_geom;
        S.block_table = NULL;
        S.indirection = NULL;
    } else {
        S.index = st->index;
    }
    S.counts = st->counts;
    S.splits = st->splits;
    S.chunk = st->chunk;
    S.part_keys = share_part_keys(S.chunk, S.parts);
    return share_launch_body(S, a->problem.dtype, stream);
}

static cudaError_t select_attend_launch(attn_args_t *a, cudaStream_t stream)
{
    const attend_state *st = (const attend_state *)a->state;
    if (!st || !a->workspace) return cudaErrorInvalidValue;
    return attend_kept(a, st, NULL, NULL, stream);
}

/* share's map, and the per-stream lists of keys with their counts. */
static size_t select_attend_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    const size_t lists = ((size_t)problem_streams(p) * problem_keys(p) + problem_streams(p)) * sizeof(int);
    return share_private_bytes(p, plan) + (lists + ((size_t)2 << 20) - 1) / ((size_t)2 << 20) * ((size_t)2 << 20);
}

/* The model's bytes before the sets are known: the harness replaces them with the kept
 * keys' (io_selected_bytes) once the setup's filter step has chosen them. */
static attn_io_t select_attend_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io = select_filter_io(p, plan);
    io.bytes = io.unique_bytes = io_selected_bytes(p, 1.0);
    return io;
}

extern "C" const attn_kernel_t kernel_select_attend = {
    "select-attend",
    "Select-Attention's selected step: attention of every head over the keys the filter step chose "
    "for its stream (--top-p; the filter runs once, outside timing), gathered from the cache",
    "contiguous and paged caches; " SELECT_SUPPORTS,
    select_unsupported,
    share_layout,
    share_plan,
    select_workspace_bytes,
    select_attend_private_bytes,
    select_attend_io,
    select_attend_setup,
    select_attend_launch,
    select_attend_teardown,
    NULL, /* not a peer */
    0,    /* does not run --step append */
    ATTN_APPROX_SELECT,
    select_selection,
    NULL, /* reads the cache's K/V */
};

/* `select-recompute`: the selected step as the paper runs it, the later layers keeping no
 * KV cache. Each step recomputes the kept tokens' K and V from their hidden states, a
 * cuBLAS GEMM per stream (its kept tokens' hidden states, width h * d, by the layer's
 * stacked K and V projections, one GEMM for each of the 2 g (K or V, kv head) blocks,
 * batched), into a contiguous cache of the stream's kept tokens, which share's launches
 * then attend to. The filter step runs once, in setup, as select-attend's does. */

namespace {

struct recompute_state {
    attend_state *attend;
    void *x;               /* [streams][rows][hidden]: stream s's kept tokens' hidden states */
    void *w;               /* [2 g][hidden][d]: K's then V's projection of each kv head */
    void *kv;              /* [streams][2][g][rows][d]: the recomputed K/V */
    int *counts;           /* [streams], host: each stream's kept tokens, its GEMM's width */
    int rows;              /* the most any stream kept */
    cublasHandle_t blas;
    void *blas_workspace;
};

/* The kept tokens' hidden states: row i of stream s is the token of its key index[i]. */
template <typename T>
__global__ void recompute_x_kernel(T *x, const int *index, const int *counts, kv_geometry_t g,
                                   const int32_t *indirection, int streams, int keys, int rows, int hidden,
                                   uint64_t seed)
{
    const int i = blockIdx.x, s = blockIdx.y;
    if (i >= counts[s]) return;
    const uint64_t token = recompute_token(&g, indirection, streams, s, index[(int64_t)s * keys + i]);
    T *row = x + ((int64_t)s * rows + i) * hidden;
    for (int e = threadIdx.x; e < hidden; e += blockDim.x) row[e] = dt<T>::from_f(recompute_x(seed, hidden, token, e));
}

template <typename T>
__global__ void recompute_w_kernel(T *w, int kv_heads, int hidden, int d, uint64_t seed)
{
    const int64_t n = (int64_t)2 * kv_heads * hidden * d;
    for (int64_t at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; at < n; at += (int64_t)gridDim.x * blockDim.x) {
        const int x = (int)(at % d), i = (int)(at / d % hidden), wh = (int)(at / ((int64_t)d * hidden));
        w[at] = dt<T>::from_f(recompute_w(seed, kv_heads, hidden, d, wh / kv_heads, wh % kv_heads, i, x));
    }
}

/* The kept tokens' hidden states and the projections, in T. */
template <typename T> cudaError_t recompute_inputs(const attn_args_t *a, const recompute_state *st)
{
    const problem_t *p = &a->problem;
    const int hidden = recompute_hidden(p->heads, p->head_dim);
    recompute_x_kernel<T><<<dim3((unsigned)st->rows, (unsigned)problem_streams(p)), 256>>>(
        (T *)st->x, st->attend->index, st->attend->counts, a->geom, a->indirection, problem_streams(p),
        problem_keys(p), st->rows, hidden, a->seed);
    recompute_w_kernel<T><<<1024, 256>>>((T *)st->w, p->kv_heads, hidden, p->head_dim, a->seed);
    return cudaGetLastError();
}

/* The contiguous geometry of the recomputed K/V: every row a stream's own, none shared. */
kv_geometry_t recompute_geometry(const attn_args_t *a, int rows)
{
    kv_geometry_t g = a->geom;
    g.layout = LAYOUT_CONTIGUOUS;
    g.beam = 1;
    g.ctx = 0;
    g.gen = rows;
    g.ctx_lens = NULL;
    return g;
}

} // namespace

static void select_recompute_teardown(attn_args_t *a)
{
    recompute_state *st = (recompute_state *)a->state;
    if (!st) return;
    cudaFree(st->x);
    cudaFree(st->w);
    cudaFree(st->kv);
    cudaFree(st->blas_workspace);
    free(st->counts);
    if (st->blas) cublasDestroy(st->blas);
    a->state = st->attend;
    select_attend_teardown(a);
    free(st);
}

static cudaError_t recompute_fill(attn_args_t *a, recompute_state *st)
{
    const problem_t *p = &a->problem;
    const int streams = problem_streams(p), d = p->head_dim, g = p->kv_heads;
    const int hidden = recompute_hidden(p->heads, d);
    const size_t es = dtype_size(p->dtype);
    st->counts = (int *)malloc((size_t)streams * sizeof(int));
    if (!st->counts) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMemcpy(st->counts, st->attend->counts, (size_t)streams * sizeof(int), cudaMemcpyDeviceToHost);
    st->rows = 1;
    for (int s = 0; e == cudaSuccess && s < streams; ++s) st->rows = st->counts[s] > st->rows ? st->counts[s] : st->rows;
    if (e == cudaSuccess) e = cudaMalloc(&st->x, (size_t)streams * st->rows * hidden * es);
    if (e == cudaSuccess) e = cudaMalloc(&st->w, (size_t)2 * g * hidden * d * es);
    const size_t kv_bytes = (size_t)streams * 2 * g * st->rows * d * es;
    if (e == cudaSuccess) e = cudaMalloc(&st->kv, kv_bytes);
    /* NaN in every dtype (all bits set): a row the GEMMs do not write is caught */
    if (e == cudaSuccess) e = cudaMemset(st->kv, 0xff, kv_bytes);
    if (e != cudaSuccess) return e;
    e = p->dtype == DTYPE_FP32   ? recompute_inputs<float>(a, st)
        : p->dtype == DTYPE_BF16 ? recompute_inputs<__nv_bfloat16>(a, st)
                                 : recompute_inputs<__half>(a, st);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cublas_handle_open(&st->blas, &st->blas_workspace);
    return e;
}

/* select-attend's setup (the filter step, the kept keys' lists, the split), then the
 * kept tokens' hidden states and the projections. */
static cudaError_t select_recompute_setup(attn_args_t *a)
{
    cudaError_t e = select_attend_setup(a);
    if (e != cudaSuccess) return e;
    recompute_state *st = (recompute_state *)calloc(1, sizeof *st);
    if (!st) {
        select_attend_teardown(a);
        return cudaErrorMemoryAllocation;
    }
    st->attend = (attend_state *)a->state;
    a->state = st;
    e = recompute_fill(a, st);
    if (e != cudaSuccess) select_recompute_teardown(a); /* the harness tears down only what set up */
    return e;
}

static cudaError_t select_recompute_launch(attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const recompute_state *st = (const recompute_state *)a->state;
    if (!st || !a->workspace) return cudaErrorInvalidValue;
    const int streams = problem_streams(p), d = p->head_dim, g = p->kv_heads;
    const int hidden = recompute_hidden(p->heads, d);
    const size_t es = dtype_size(p->dtype);
    const cudaDataType_t type = cublas_data_type(p->dtype);
    const float one = 1.0f, zero = 0.0f;
    const cudaError_t bound = cublas_handle_bind(st->blas, st->blas_workspace, stream);
    if (bound != cudaSuccess) return bound;
    for (int s = 0; s < streams; ++s) {
        if (st->counts[s] == 0) continue;
        /* column-major: each (K or V, kv head) block's [d x n] = W block [d x hidden] . X_s [hidden x n],
         * written as the block's rows [n][d] of the contiguous cache */
        const char *x = (const char *)st->x + (size_t)s * st->rows * hidden * es;
        char *kv = (char *)st->kv + (size_t)s * 2 * g * st->rows * d * es;
        CUBLAS_K_CHECK_BLAS(cublasGemmStridedBatchedEx(
            st->blas, CUBLAS_OP_N, CUBLAS_OP_N, d, st->counts[s], hidden, &one, st->w, type, d, (long long)hidden * d,
            x, type, hidden, 0, &zero, kv, type, d, (long long)st->rows * d, 2 * g, CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT));
    }
    const kv_geometry_t own = recompute_geometry(a, st->rows);
    return attend_kept(a, st->attend, st->kv, &own, stream);
}

static cudaError_t select_recompute_own_kv(const attn_args_t *a, attn_own_kv_t *out)
{
    const recompute_state *st = (const recompute_state *)a->state;
    if (!st) return cudaErrorInvalidValue;
    out->kv = st->kv;
    out->rows = st->rows;
    out->counts = st->attend->counts;
    out->index = st->attend->index;
    return cudaSuccess;
}

/* select-attend's, and at most a full cache's hidden states and K/V (every key kept)
 * with the projections, cuBLAS's workspace and its handle's allowance. */
static size_t select_recompute_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    const size_t es = dtype_size(p->dtype), streams = (size_t)problem_streams(p), keys = (size_t)problem_keys(p);
    const size_t hidden = (size_t)recompute_hidden(p->heads, p->head_dim), kv_row = (size_t)2 * p->kv_heads * p->head_dim;
    const size_t own = (streams * keys * (hidden + kv_row) + hidden * kv_row) * es + CUBLAS_WORKSPACE_BYTES +
                       CUBLAS_HANDLE_ALLOWANCE_BYTES;
    return select_attend_private_bytes(p, plan) + own;
}

/* The model's before the sets are known: the harness replaces them with the kept
 * tokens' (io_recompute_bytes) once the setup's filter step has chosen them. */
static attn_io_t select_recompute_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io = select_filter_io(p, plan);
    io.bytes = io.unique_bytes = io_recompute_bytes(p, 1.0);
    io.flops = io_recompute_flops(p, 1.0);
    return io;
}

extern "C" const attn_kernel_t kernel_select_recompute = {
    "select-recompute",
    "Select-Attention's selected step with no KV cache: the kept tokens' K/V recomputed from their hidden "
    "states (width h*d) by cuBLAS GEMMs, then attention of every head over them (--top-p; the filter runs "
    "once, outside timing)",
    "contiguous and paged caches (the filter step's); " SELECT_SUPPORTS,
    select_unsupported,
    share_layout,
    share_plan,
    select_workspace_bytes,
    select_recompute_private_bytes,
    select_recompute_io,
    select_recompute_setup,
    select_recompute_launch,
    select_recompute_teardown,
    NULL, /* not a peer */
    0,    /* does not run --step append */
    ATTN_APPROX_RECOMPUTE,
    select_selection,
    select_recompute_own_kv,
};
