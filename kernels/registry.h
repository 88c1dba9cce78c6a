/* The one C interface to every attention kernel (SPEC §4). Adding a kernel means
 * one new file under kernels/ defining an attn_kernel_t, and one line in kernel_list.h. */
#ifndef ATTNBENCH_REGISTRY_H
#define ATTNBENCH_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "../problem/problem.h"
#include "../problem/device_info.h"
#include "../problem/kv_layout.h"
#include "../problem/split_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_kernel attn_kernel_t;

/* What a kernel computes: exact attention, or an approximation whose CPU reference
 * differs (the rows also report its distance from exact attention, approx_err, and
 * what it kept): Share-Attention's shared heads, or Select-Attention's selected step
 * (attention over the keys its selection hook reports). */
typedef enum { ATTN_EXACT = 0, ATTN_APPROX_SHARE = 1, ATTN_APPROX_SELECT = 2, ATTN_APPROX_RECOMPUTE = 3 } attn_approx_t;

/* The K/V a kernel computed in its own step and attended to instead of the cache's
 * (Select-Attention's selected step, recomputed from the kept tokens' hidden states,
 * problem/recompute.h), where the harness reads them back: a contiguous cache
 * [streams, 2, g, rows, d] in the problem's dtype, stream s attending to its first
 * counts[s] rows, row i being the K/V of the stream's key position index[s * keys + i]
 * (keys = problem_keys). Device pointers, the kernel's own. */
typedef struct attn_own_kv {
    const void *kv;
    int rows;
    const int *counts;
    const int *index;
} attn_own_kv_t;

/* What setup() returns where it finds, only then, that the kernel cannot run the
 * problem: a peer whose library cannot be loaded, or rejects the configuration when
 * it builds its plan. Before returning it, setup writes a one-line reason into
 * attn_args_t.why and frees whatever it made (teardown is not called). The row is
 * `unsupported`, as for a reason from unsupported(), not `error`. (A value no CUDA
 * call returns, inside the range of cudaError_t's enumerators.) */
#define ATTN_SETUP_UNSUPPORTED ((cudaError_t)16000)
#define ATTN_WHY_LEN 256

/* What a kernel resolved to run for one problem; the CSV row records it. */
typedef struct attn_plan {
    const attn_kernel_t *runs;   /* the kernel that really runs (differs only for `auto`) */
    split_plan_t split;          /* split.splits == 1: single pass, no merge */
    int variant;                 /* kernel-private choice (tile shape, code path) */
    int ctx_sms;                 /* bifurcated: SMs its context part holds while the decode part
                                    streams on the others (0: a CTA per work item) */
} attn_plan_t;

/* Bytes and FLOPs of one step (SPEC §6). */
typedef struct attn_io {
    double bytes;         /* compulsory DRAM traffic of this kernel's algorithm: K, V (at the
                             width the cache stores them), Q, O, block and indirection
                             tables and an 8-bit cache's scales (io_table_bytes) */
    double unique_bytes;  /* distinct data of the problem: the floor for any algorithm */
    double flops;
    double workspace_bytes; /* scratch traffic (split partials written and read back,
                               materialised logits): mostly L2 hits, not in bytes */
} attn_io_t;

/* Device buffers of one configuration. Which are set depends on the layout. */
typedef struct attn_args {
    problem_t problem;
    kv_geometry_t geom;
    attn_plan_t plan;
    const void *q;                 /* [B*W, q_len, h, d] */
    void *out;                     /* [B*W, q_len, h, d] */
    const void *kv;                /* contiguous [B*W, 2, g, L, d] or paged pool [blocks, 2, g, S, d] */
    const void *kv_ctx;            /* bifurcated context [B, 2, g, m_c, d] */
    const void *kv_dec;            /* bifurcated decoded [B*W, 2, g, m_d, d] */
    const int32_t *block_table;    /* paged: [B*W, max_blocks_per_seq] */
    int num_blocks;                /* paged: blocks in the pool */
    const int32_t *indirection;    /* [B, W, L] with --indirection, else NULL */
    /* An 8-bit cache (problem.kv_quant): the dequantisation scales, K's then V's, each
     * one float (--kv-scale tensor) or one per kv head (head): [2][kv_scale_entries(&geom)]
     * (problem/kv_quant.h); the cache holds codes, K/V = code * scale. NULL otherwise. */
    const float *kv_scale;
    /* --step append: the current token's packed QKV [B*W, (h + 2g) * d] in dtype
     * (problem/append.h), which kernels/append_step.h's kernel turns into q and the cache's
     * current slot before the attention kernel runs; NULL otherwise. */
    const void *qkv;
    const float *rope_cs;          /* --step append: cos and sin of the current position's
                                      angles, [d/2][2] (problem/append.h rope_cos_sin) */
    void *workspace;               /* plan-dependent scratch, workspace_bytes() long, zeroed once */
    uint64_t seed;                 /* the seed of the logical inputs (problem/logical_data.h), for
                                      a kernel that makes inputs of its own in setup */
    void *state;                   /* the kernel's own, made by setup, freed by teardown */
    char why[ATTN_WHY_LEN];        /* setup's reason where it returns ATTN_SETUP_UNSUPPORTED */
} attn_args_t;

struct attn_kernel {
    const char *name;
    const char *summary;     /* one line for `list` */
    const char *supports;    /* layouts, dtypes and features, for `list` */
    /* NULL when the kernel runs this problem, else the reason, one line. */
    const char *(*unsupported)(const problem_t *p);
    /* Layout of the KV cache the kernel reads for this problem. */
    kv_layout_t (*layout)(const problem_t *p);
    void (*plan)(const problem_t *p, const device_info_t *dev, attn_plan_t *plan);
    size_t (*workspace_bytes)(const problem_t *p, const attn_plan_t *plan);
    /* Device memory the kernel allocates itself in setup (cuBLAS workspaces, logits). */
    size_t (*private_bytes)(const problem_t *p, const attn_plan_t *plan);
    attn_io_t (*io)(const problem_t *p, const attn_plan_t *plan);
    /* Optional; outside timing. ATTN_SETUP_UNSUPPORTED: see there. */
    cudaError_t (*setup)(attn_args_t *a);
    /* Enqueue one step on the stream; no synchronisation, capturable in a graph. */
    cudaError_t (*launch)(attn_args_t *a, cudaStream_t stream);
    void (*teardown)(attn_args_t *a);
    /* Peers (another project's kernel run under this harness): the package it is built
     * from, "FlashInfer 0.7.2"; NULL for attnbench's own kernels. Sweeps without
     * --kernels run attnbench's own; `--kernels peers` names every peer. */
    const char *peer;
    /* 1 where the kernel runs --step append: it reads the layouts append_launch writes
     * (kernels/append_step.h), so the step's kernel can run before it. */
    int runs_append;
    attn_approx_t approx;   /* ATTN_EXACT unless the kernel approximates attention */
    /* Select-Attention's filter step: copies the last launch's top-p set of each stream's
     * keys (problem/top_p.h) to the host, chosen[stream * keys + key] = 1 where kept;
     * NULL for kernels that select nothing. */
    cudaError_t (*selection)(const attn_args_t *a, unsigned char *chosen);
    /* ATTN_APPROX_RECOMPUTE: where the K/V the last launch attended to lie (setup
     * made them); NULL for kernels that read the cache's. */
    cudaError_t (*own_kv)(const attn_args_t *a, attn_own_kv_t *out);
};

/* The partials per row that a plan of `fused` merges in a separate launch (0 where it
 * does not split or its last CTAs merge): a cost of auto's model (kernels/auto.c). */
int fused_plan_merge_slots(const problem_t *p, const attn_plan_t *plan);
/* The key tile of the wgmma body a `bifurcated` plan runs its context part on (64, or
 * 128: bif_wide_fits), or 0 for the mma.sync body (bifurcated.cu): which fixed cost
 * of auto's model applies. */
int bifurcated_context_on_wgmma(const attn_plan_t *plan);

/* NULL-terminated, in kernel_list.h's order (attnbench's own, then the peers). */
extern const attn_kernel_t *const attn_kernels[];
const attn_kernel_t *attn_kernel_find(const char *name);
/* NULL when kernel k runs problem p, else the reason, one line: --step append on a
 * kernel without runs_append, else k->unsupported(p). */
const char *attn_kernel_unsupported(const attn_kernel_t *k, const problem_t *p);

/* The byte and FLOP arithmetic every kernel's model is built from. */
double io_kv_row_bytes(const problem_t *p);          /* K and V of every kv head at one position,
                                                        at the cache's width (problem_kv_dtype) */
double io_kv_bytes_replicated(const problem_t *p);   /* every stream reads its whole L */
double io_kv_bytes_unique(const problem_t *p);       /* context once per request */
/* The K/V the cache holds for the problem's streams: replicated on a contiguous
 * cache; on a paged one the shared context blocks once per request. A kernel that
 * reads every stream's keys through the block table moves at least this from
 * DRAM (the W reads of a shared block beyond the first can come from L2). */
double io_kv_bytes_stored(const problem_t *p);
double io_qo_bytes(const problem_t *p);               /* q read, out written: q_len rows per stream */
/* Block-table entries (paged: each stream's blocks of L), cache-indirection entries
 * (each stream's decoded positions) and an 8-bit cache's scales (io_scale_bytes), read
 * once. */
double io_table_bytes(const problem_t *p);
/* Select-Attention's selected step over a fraction `kept` of every stream's keys: their K
 * and V at the cache's width, their positions (4 bytes each), q and out, the tables. */
double io_selected_bytes(const problem_t *p, double kept);
/* The selected step with its K/V recomputed (select-recompute) over a fraction `kept`
 * of every stream's keys: the kept tokens' hidden states and the K and V projections
 * read (the projections once per stream: a GEMM each), the K/V written and read back by
 * the attention, q and out; and its FLOPs, the GEMMs' and the attention's. */
double io_recompute_bytes(const problem_t *p, double kept);
double io_recompute_flops(const problem_t *p, double kept);
double io_scale_bytes(const problem_t *p);           /* 2 floats, or 2 per kv head; 0 unquantised */
/* --step append's own traffic: the packed QKV read and the K/V of the current position
 * written at the cache's width (the rotated q it hands to attention stays in L2); 0 for
 * --step attend. */
double io_append_bytes(const problem_t *p);
double io_flops(const problem_t *p);                  /* 4 * B*W * h * L * d; with q_len n, the
                                                         keys each query token attends to summed */

#ifdef __cplusplus
}
#endif
#endif
