/* `share`: Share-Attention (the Share/Select-Attention paper, §4.1) as a GPU kernel.
 * Heads that the problem's share map marks essential compute Q.K^T and the softmax;
 * every other head applies its essential head's weights to its own V. A kv head's K is
 * read only where an essential head of its group needs it; V is read for every head.
 * Three launches (share_internal.h): logits of the essential heads with each split's
 * softmax statistics, the weighted V sums per split, their reduction. Contiguous and
 * paged caches, MHA, GQA and MQA, cache indirection; fp16, bf16, fp32. */
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "registry.h"
#include "share_body.cuh"
#include "../problem/share_map.h"

extern "C" const attn_kernel_t kernel_share;

static const char *share_unsupported(const problem_t *p)
{
    static const share_limit_reasons why = {
        "share reads a cache in --dtype only, not an 8-bit KV cache",
        "share runs on one GPU (no --tp)",
        "share takes one context length for every request (no --ctx-dist)",
        "share attends one query token per stream (no --q-len > 1)",
        "share launches a CTA row per stream and per (kv head, 4 heads): at most 65535 of each",
    };
    return share_launch_limits(p, why);
}

static share_ws_t share_ws(const problem_t *p, const attn_plan_t *plan)
{
    const int essential = problem_share_essential(p);
    return share_ws_layout(problem_streams(p), p->heads, essential, problem_keys(p), p->head_dim,
                           plan->split.splits, share_parts_of(p, essential, plan));
}

static size_t share_workspace_bytes(const problem_t *p, const attn_plan_t *plan) { return share_ws(p, plan).bytes; }

/* kv heads whose group holds an essential head: the K the kernel reads. */
static int share_kv_heads_read(const problem_t *p)
{
    int n = 0;
    for (int j = 0; j < p->kv_heads; ++j) {
        int any = 0;
        for (int i = j * problem_group(p); i < (j + 1) * problem_group(p) && !any; ++i)
            any = problem_share_target(p, i) == i;
        n += any;
    }
    return n;
}

static attn_io_t share_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io;
    /* K of the kv heads an essential head needs, V of every kv head */
    const double kv_part = (double)(share_kv_heads_read(p) + p->kv_heads) / (2.0 * p->kv_heads);
    const int essential = problem_share_essential(p);
    io.bytes = io_kv_bytes_stored(p) * kv_part + io_qo_bytes(p) + io_table_bytes(p);
    io.unique_bytes = io_kv_bytes_unique(p) * kv_part + io_qo_bytes(p) + io_table_bytes(p);
    /* Q.K^T for the essential heads, P.V for every head */
    io.flops = io_flops(p) / 2.0 * ((double)essential / p->heads + 1.0);
    const double logits = (double)problem_streams(p) * essential * problem_keys(p) * sizeof(float);
    const double partials = (double)plan->split.splits * problem_streams(p) * p->heads * p->head_dim * sizeof(float);
    io.workspace_bytes = 2.0 * (logits + partials);   /* each written, then read back */
    return io;
}

static cudaError_t share_setup(attn_args_t *a) { return share_setup_map(a, false); }

static cudaError_t share_launch(attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const share_state *st = (const share_state *)a->state;
    if (!st || !a->workspace) return cudaErrorInvalidValue;
    const share_params P = share_params_make(a, st->map, problem_share_essential(p));
    return share_launch_body(P, p->dtype, stream);
}

extern "C" const attn_kernel_t kernel_share = {
    "share",
    "Share-Attention: Q.K^T and softmax for the essential heads only; shared heads apply an essential "
    "head's weights to their own V (--share-fraction, --share-map)",
    "contiguous and paged caches; MHA, GQA, MQA; indirection; fp16, bf16, fp32; head_dim multiple of 8 "
    "up to 256; split-KV; no 8-bit KV cache, no --tp",
    share_unsupported,
    share_layout,
    share_plan,
    share_workspace_bytes,
    share_private_bytes,
    share_io,
    share_setup,
    share_launch,
    share_teardown,
    NULL, /* not a peer */
    0,    /* does not run --step append */
    ATTN_APPROX_SHARE,
    NULL, /* selects no keys */
    NULL, /* reads the cache's K/V */
};
