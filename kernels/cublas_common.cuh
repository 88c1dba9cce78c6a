/* What the two cuBLAS kernels (`cublas`, `cublas-bifurcated`) share.
 *
 * The first half is plain C (the CPU tests include it): a step is described as
 * batched GEMMs in cuBLAS's column-major terms around one row softmax, with a table
 * of per-batch-entry matrix pointers. The same description drives the device launch
 * and the CPU emulation in tests/test_cublas_kernels.c, so the index arithmetic the
 * GPU runs is the arithmetic the tests check.
 *
 * The second half (nvcc only) holds the cuBLAS handle, the private memory and the
 * checked calls. */
#ifndef ATTNBENCH_CUBLAS_COMMON_CUH
#define ATTNBENCH_CUBLAS_COMMON_CUH

#include <stddef.h>
#include <stdint.h>
#include "../problem/hd.h"
#include "registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Logit and probability rows are padded to a multiple of this many elements, and the
 * decoded segment of a bifurcated row starts on such a multiple: every row and
 * segment then starts 16-byte aligned, for vector loads in the softmax and for
 * cuBLAS's aligned tensor-core paths. The padding is never read or written. */
#define CUBLAS_ROW_ALIGN 8

/* Device memory cuBLAS itself may take: the workspace we hand it (32 MiB, NVIDIA's
 * recommendation for Hopper) and an allowance for what cublasCreate and its lazily
 * loaded kernels take (about 60 MiB measured on an H200 with CUDA 13). */
#define CUBLAS_WORKSPACE_BYTES ((size_t)32 << 20)
#define CUBLAS_HANDLE_ALLOWANCE_BYTES ((size_t)128 << 20)
/* cudaMalloc hands out memory in pages of up to this size; sizes are rounded up to
 * it so that private_bytes stays an upper bound. */
#define CUBLAS_ALLOC_GRANULE ((size_t)2 << 20)

HD int64_t cublas_round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* One batched GEMM: for every batch entry e,
 *   C_e[m x n] = alpha * op(A_e)[m x k] * B_e[k x n] + beta * C_e     (column-major)
 * A and B are in the problem's dtype; C is fp32 or the dtype. */
typedef struct gemm_batch {
    int transa;       /* 1: A_e is stored k x m and used transposed; 0: stored m x k */
    int m, n, k;
    int lda, ldb, ldc;
    float alpha, beta;
    int c_fp32;       /* 1: C is fp32 (logits, accumulator); 0: the problem's dtype */
    int batch;
    size_t table;     /* index of A_0 in the pointer table: A[batch], B[batch], C[batch] follow */
} gemm_batch_t;

/* The softmax of one step: `rows` rows of fp32 logits, `ld` elements apart, each the
 * concatenation of n0 keys at column 0 and n1 keys at column off1. Probabilities are
 * written in the dtype at the same (row, column) of a buffer with the same ld. */
typedef struct softmax_rows {
    int64_t rows;
    int64_t ld;
    int n0;
    int64_t off1;
    int n1;
} softmax_rows_t;

/* The buffers of one step: the harness's inputs and output, and the private ones. */
typedef struct cublas_buffers {
    const void *q;          /* [B*W, h, d] */
    const void *kv;         /* contiguous [B*W, 2, g, L, d] (cublas) */
    const void *kv_ctx;     /* [B, 2, g, m_c, d] (cublas-bifurcated) */
    const void *kv_dec;     /* [B*W, 2, g, m_d, d] (cublas-bifurcated) */
    void *out;              /* [B*W, h, d] */
    float *logits;          /* [rows, ld] fp32 */
    void *probs;            /* [rows, ld] dtype */
    void *q_staged;         /* cublas-bifurcated: q rows reordered to [B, g, W, p, d] */
    float *acc;             /* cublas-bifurcated: fp32 output rows in the same order */
} cublas_buffers_t;

#define CUBLAS_MAX_GEMMS 4

/* A whole step: gemm[0 .. gemms_before_softmax) write logits, then the softmax, then
 * the remaining GEMMs read probabilities. */
typedef struct cublas_pipeline {
    gemm_batch_t gemm[CUBLAS_MAX_GEMMS];
    int gemms;
    int gemms_before_softmax;
    softmax_rows_t softmax;
    size_t table_entries;   /* pointers in the table */
    size_t logits_bytes, probs_bytes, q_staged_bytes, acc_bytes;
} cublas_pipeline_t;

/* Describe the step of `cublas` (contiguous cache) and, when table is not NULL, fill
 * the pointer table for the buffers in bufs (only address arithmetic: host
 * addresses work as well as device ones). */
void cublas_plain_pipeline(const problem_t *p, const kv_geometry_t *geo,
                           const cublas_buffers_t *bufs, cublas_pipeline_t *pl,
                           const void **table);

/* The same for `cublas-bifurcated` (bifurcated layout). */
void cublas_bifurcated_pipeline(const problem_t *p, const kv_geometry_t *geo,
                                const cublas_buffers_t *bufs, cublas_pipeline_t *pl,
                                const void **table);

/* Row of q (stream, query head) in the staged order [B, g, W, p] of cublas-bifurcated:
 * the W*p query rows that share one request's context and kv head are consecutive,
 * so one GEMM per (request, kv head) serves them all with a single read of K_c/V_c. */
HD int64_t cublas_bif_staged_row(int stream, int head, int beam, int kv_heads, int group)
{
    int request = stream / beam, w = stream % beam;
    int kv_head = head / group, i = head % group;
    return (((int64_t)request * kv_heads + kv_head) * beam + w) * group + i;
}

/* Device memory setup() allocates, for a described pipeline: an upper bound. */
HD size_t cublas_granule(size_t bytes)
{
    return (bytes + CUBLAS_ALLOC_GRANULE - 1) / CUBLAS_ALLOC_GRANULE * CUBLAS_ALLOC_GRANULE;
}
HD size_t cublas_pipeline_private_bytes(const cublas_pipeline_t *pl)
{
    return cublas_granule(pl->logits_bytes) + cublas_granule(pl->probs_bytes) +
           cublas_granule(pl->q_staged_bytes) + cublas_granule(pl->acc_bytes) +
           cublas_granule(pl->table_entries * sizeof(void *)) +
           cublas_granule(CUBLAS_WORKSPACE_BYTES) + CUBLAS_HANDLE_ALLOWANCE_BYTES;
}

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <stdio.h>
#include <stdlib.h>
#include <cublas_v2.h>

/* Every failing call prints one line naming itself; the harness reports the
 * returned error with the configuration. */
#define CUBLAS_K_CHECK_CUDA(call)                                                          \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_));                  \
            return err_;                                                                   \
        }                                                                                  \
    } while (0)
#define CUBLAS_K_CHECK_BLAS(call)                                                          \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "%s: %s\n", #call, cublasGetStatusString(st_));                \
            return cudaErrorUnknown;                                                       \
        }                                                                                  \
    } while (0)

/* What neither cuBLAS kernel does, whatever its layout; NULL when p is fine. */
static inline const char *cublas_limits(const problem_t *p)
{
    if (p->q_len > 1)
        return "the cuBLAS kernels run one query token per stream; --q-len > 1 (its causal mask) runs on fused, bifurcated and auto";
    if (p->kv_quant != KV_QUANT_NONE)
        return "the cuBLAS kernels' GEMMs read K/V in --dtype, not an 8-bit cache (--kv-dtype fp8|int8 runs on fused)";
    if (p->indirection)
        return "cuBLAS cannot follow a cache-indirection table: it reads K/V where they lie (--indirection)";
    if (p->multi_block == MULTI_BLOCK_ON || p->splits > 1)
        return "the cuBLAS kernels have no split-KV mode (--multi-block on / --splits)";
    return NULL;
}

/* Both run the whole key range in one pass and need no workspace. */
static inline void cublas_single_pass_plan(const problem_t *p, const attn_kernel_t *self,
                                           attn_plan_t *plan)
{
    plan->runs = self;
    plan->split.splits = 1;
    plan->split.chunk = problem_keys(p);
    plan->variant = 0;
}

static inline size_t cublas_no_workspace(const problem_t *p, const attn_plan_t *plan)
{
    (void)p;
    (void)plan;
    return 0;
}

/* The K/V the kernel reads, the fp32 logits written by the first GEMM and read by the
 * softmax, P written by the softmax and read by the P.V GEMMs, q and out. */
static inline attn_io_t cublas_io_with_scores(const problem_t *p, double kv_bytes)
{
    double scores = (double)problem_streams(p) * p->heads * problem_keys(p);
    attn_io_t io;
    io.bytes = kv_bytes + io_qo_bytes(p) + io_table_bytes(p);
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.flops = io_flops(p);
    /* logits (fp32) and probabilities (dtype), each written and read back */
    io.workspace_bytes = 2.0 * scores * (sizeof(float) + dtype_size(p->dtype));
    return io;
}

/* Builds a kernel's GEMM pipeline; with bufs and table also fills its pointer table. */
typedef void (*cublas_pipeline_fn)(const problem_t *p, const kv_geometry_t *geo,
                                   const cublas_buffers_t *bufs, cublas_pipeline_t *pl,
                                   const void **table);

/* Larger batches are issued in pieces of this many entries. Batched kernels put the
 * batch (times any split-K factor cuBLAS chooses) into a grid dimension limited to
 * 65535: on an H200, batches of 32768 GEMMs with k = 8192 failed to launch. */
#define CUBLAS_BATCH_PIECE 2048

typedef struct cublas_state {
    cublasHandle_t handle;
    void *workspace;
    const void **table;        /* device copy of the pointer table */
    cublas_pipeline_t pipeline;
    cublas_buffers_t bufs;     /* the buffers the table points into */
    dtype_t dtype;
} cublas_state_t;

static inline cudaDataType_t cublas_data_type(dtype_t t)
{
    return t == DTYPE_FP16 ? CUDA_R_16F : t == DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Frees whatever was allocated; safe on a partly built state. */
static inline void cublas_state_free(cublas_state_t *st)
{
    if (!st) return;
    cudaFree(st->bufs.logits);
    cudaFree(st->bufs.probs);
    cudaFree(st->bufs.q_staged);
    cudaFree(st->bufs.acc);
    cudaFree((void *)st->table);
    cudaFree(st->workspace);
    if (st->handle) cublasDestroy(st->handle);
    free(st);
}

/* A handle and the workspace we hand it (CUBLAS_WORKSPACE_BYTES). fp32 accumulation
 * everywhere: reduced-precision split-K reductions are disallowed, and
 * CUBLAS_COMPUTE_32F on fp32 data never uses TF32. */
static inline cudaError_t cublas_handle_open(cublasHandle_t *handle, void **workspace)
{
    CUBLAS_K_CHECK_CUDA(cudaMalloc(workspace, CUBLAS_WORKSPACE_BYTES));
    CUBLAS_K_CHECK_BLAS(cublasCreate(handle));
    CUBLAS_K_CHECK_BLAS(cublasSetMathMode(
        *handle, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    CUBLAS_K_CHECK_BLAS(cublasSetPointerMode(*handle, CUBLAS_POINTER_MODE_HOST));
    return cudaSuccess;
}

/* cublasSetStream resets the workspace to cuBLAS's own pool, which allocates on
 * first use and so cannot be captured in a graph: set ours again after it. */
static inline cudaError_t cublas_handle_bind(cublasHandle_t handle, void *workspace, cudaStream_t stream)
{
    CUBLAS_K_CHECK_BLAS(cublasSetStream(handle, stream));
    CUBLAS_K_CHECK_BLAS(cublasSetWorkspace(handle, workspace, CUBLAS_WORKSPACE_BYTES));
    return cudaSuccess;
}

/* Private buffers and handle. */
static inline cudaError_t cublas_state_open(cublas_state_t *st, const cublas_pipeline_t *pl,
                                            dtype_t dtype)
{
    st->pipeline = *pl;
    st->dtype = dtype;
    CUBLAS_K_CHECK_CUDA(cudaMalloc((void **)&st->bufs.logits, pl->logits_bytes));
    CUBLAS_K_CHECK_CUDA(cudaMalloc(&st->bufs.probs, pl->probs_bytes));
    if (pl->q_staged_bytes) CUBLAS_K_CHECK_CUDA(cudaMalloc(&st->bufs.q_staged, pl->q_staged_bytes));
    if (pl->acc_bytes) CUBLAS_K_CHECK_CUDA(cudaMalloc((void **)&st->bufs.acc, pl->acc_bytes));
    CUBLAS_K_CHECK_CUDA(cudaMalloc((void **)&st->table, pl->table_entries * sizeof(void *)));
    return cublas_handle_open(&st->handle, &st->workspace);
}

static inline cudaError_t cublas_state_upload_table(cublas_state_t *st, const void **host_table)
{
    CUBLAS_K_CHECK_CUDA(cudaMemcpy((void *)st->table, host_table,
                                   st->pipeline.table_entries * sizeof(void *),
                                   cudaMemcpyHostToDevice));
    return cudaSuccess;
}

/* The harness buffers the pointer table is built for. */
static inline void cublas_state_record_buffers(cublas_state_t *st, const attn_args_t *a)
{
    st->bufs.q = a->q;
    st->bufs.kv = a->kv;
    st->bufs.kv_ctx = a->kv_ctx;
    st->bufs.kv_dec = a->kv_dec;
    st->bufs.out = a->out;
}

/* The pointer table was built for the harness buffers seen by setup; a launch on
 * other buffers would silently read the old ones. */
static inline cudaError_t cublas_state_check_buffers(const cublas_state_t *st, const attn_args_t *a,
                                                     const char *kernel)
{
    const cublas_buffers_t *b = &st->bufs;
    if (b->q != a->q || b->out != a->out || b->kv != a->kv || b->kv_ctx != a->kv_ctx ||
        b->kv_dec != a->kv_dec) {
        fprintf(stderr, "%s: q/out/kv buffers changed since setup; run setup again\n", kernel);
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

static inline cudaError_t cublas_state_bind(cublas_state_t *st, cudaStream_t stream)
{
    return cublas_handle_bind(st->handle, st->workspace, stream);
}

/* Enqueue gemm[first .. first + count) of the pipeline. Default algorithm: tensor
 * cores for fp16/bf16, plain fp32 for fp32. */
static inline cudaError_t cublas_state_gemms(cublas_state_t *st, int first, int count)
{
    cudaDataType_t ab = cublas_data_type(st->dtype);
    for (int i = first; i < first + count; ++i) {
        const gemm_batch_t *gb = &st->pipeline.gemm[i];
        cudaDataType_t c = gb->c_fp32 ? CUDA_R_32F : ab;
        cublasOperation_t ta = gb->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
        for (int e0 = 0; e0 < gb->batch; e0 += CUBLAS_BATCH_PIECE) {
            int n = gb->batch - e0 < CUBLAS_BATCH_PIECE ? gb->batch - e0 : CUBLAS_BATCH_PIECE;
            const void *const *A = st->table + gb->table + e0;
            const void *const *B = st->table + gb->table + gb->batch + e0;
            void *const *C = (void *const *)(st->table + gb->table + 2 * (size_t)gb->batch + e0);
            CUBLAS_K_CHECK_BLAS(cublasGemmBatchedEx(
                st->handle, ta, CUBLAS_OP_N, gb->m, gb->n, gb->k, &gb->alpha, A, ab, gb->lda, B,
                ab, gb->ldb, &gb->beta, C, c, gb->ldc, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
    }
    return cudaSuccess;
}
/* setup() of both kernels: handle, private buffers and the pointer table of the
 * pipeline `build` describes, built once outside timing. */
template <cublas_pipeline_fn build>
static cudaError_t cublas_setup(attn_args_t *a)
{
    cublas_state_t *st = (cublas_state_t *)calloc(1, sizeof *st);
    if (!st) return cudaErrorMemoryAllocation;
    cublas_pipeline_t pl;
    build(&a->problem, &a->geom, NULL, &pl, NULL);
    cudaError_t err = cublas_state_open(st, &pl, a->problem.dtype);
    const void **table = NULL;
    if (err == cudaSuccess) {
        cublas_state_record_buffers(st, a);
        table = (const void **)malloc(pl.table_entries * sizeof *table);
        if (!table) err = cudaErrorMemoryAllocation;
    }
    if (err == cudaSuccess) {
        build(&a->problem, &a->geom, &st->bufs, &pl, table);
        err = cublas_state_upload_table(st, table);
    }
    free(table);
    if (err != cudaSuccess) {
        cublas_state_free(st);
        return err;
    }
    a->state = st;
    return cudaSuccess;
}

/* The state a launch runs on, bound to the launch's stream; NULL with *err set when
 * setup did not run or the buffers moved since. */
static inline cublas_state_t *cublas_launch_state(attn_args_t *a, cudaStream_t stream,
                                                  const char *kernel, cudaError_t *err)
{
    cublas_state_t *st = (cublas_state_t *)a->state;
    if (!st) {
        fprintf(stderr, "%s: launch without setup\n", kernel);
        *err = cudaErrorInvalidValue;
        return NULL;
    }
    *err = cublas_state_check_buffers(st, a, kernel);
    if (*err == cudaSuccess) *err = cublas_state_bind(st, stream);
    return *err == cudaSuccess ? st : NULL;
}

/* The vtable entries the two kernels share but for the kernel (self), its layout and
 * its pipeline (build): each kernel's table names them with its own arguments. */
template <const attn_kernel_t *self>
static void cublas_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    (void)dev;
    cublas_single_pass_plan(p, self, plan);
}

template <kv_layout_t layout>
static kv_layout_t cublas_layout(const problem_t *p)
{
    (void)p;
    return layout;
}

template <cublas_pipeline_fn build>
static size_t cublas_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    cublas_pipeline_t pl;
    build(p, NULL, NULL, &pl, NULL);
    return cublas_pipeline_private_bytes(&pl);
}

static inline void cublas_teardown(attn_args_t *a)
{
    cublas_state_free((cublas_state_t *)a->state);
    a->state = NULL;
}

#endif /* __CUDACC__ */

#endif
