/* `cublas`: the unfused baseline of SPEC §4 (PyTorch's SDPA math path, TensorRT-LLM's
 * unfused attention) on the contiguous cache [B*W, 2, g, L, d]:
 *   logits = scale * Q K^T   one batched GEMM over (stream, kv head), fp32 out
 *   P = softmax(logits)      one row kernel, P in the dtype
 *   out = P V                one batched GEMM over (stream, kv head), dtype out
 * Every stream reads its whole replicated K/V, and the logits and P make a round
 * trip through memory: the costs the fused kernels avoid. */
#include <stdlib.h>

#include "registry.h"
#include "cublas_common.cuh"
#include "softmax.cuh"

extern "C" const attn_kernel_t kernel_cublas;

/* Row-major tensors are column-major tensors transposed: a row-major X[r x c] with
 * row stride ld is, to cuBLAS, the column-major X^T[c x r] with leading dimension ld.
 * Batch entry e = s*g + j is (stream s, kv head j); its p query heads j*p .. j*p+p-1
 * are rows e*p .. e*p+p-1 of q, logits, P and out (h = g*p). */
extern "C" void cublas_plain_pipeline(const problem_t *p, const kv_geometry_t *geo,
                                      const cublas_buffers_t *bufs, cublas_pipeline_t *pl,
                                      const void **table)
{
    const int streams = problem_streams(p), g = p->kv_heads, group = problem_group(p);
    const int d = p->head_dim, keys = problem_keys(p);
    const int64_t ld = cublas_round_up(keys, CUBLAS_ROW_ALIGN);
    const int64_t rows = (int64_t)streams * p->heads;
    const size_t es = dtype_size(p->dtype);
    const int batch = streams * g;

    *pl = cublas_pipeline_t();
    /* Logits, row-major per entry: S_e[p x L] = scale * Q_e[p x d] . K_e[L x d]^T.
     * cuBLAS computes S_e^T[L x p] (ldc = ld) = op(A)[L x d] . B[d x p] with
     * A = K_e seen as column-major [d x L] (lda = d), transposed, and
     * B = Q_e seen as column-major [d x p] (ldb = d). */
    pl->gemm[0] = gemm_batch_t{.transa = 1, .m = keys, .n = group, .k = d, .lda = d, .ldb = d,
                                 .ldc = (int)ld, .alpha = (float)problem_scale(p), .beta = 0.0f,
                                 .c_fp32 = 1, .batch = batch, .table = 0};
    /* Output, row-major per entry: O_e[p x d] = P_e[p x L] . V_e[L x d].
     * cuBLAS computes O_e^T[d x p] (ldc = d) = A[d x L] . B[L x p] with
     * A = V_e seen as column-major [d x L] (lda = d), not transposed, and
     * B = P_e seen as column-major [L x p] (ldb = ld). */
    pl->gemm[1] = gemm_batch_t{.transa = 0, .m = d, .n = group, .k = keys, .lda = d, .ldb = (int)ld,
                                 .ldc = d, .alpha = 1.0f, .beta = 0.0f, .c_fp32 = 0, .batch = batch,
                                 .table = 3 * (size_t)batch};
    pl->gemms = 2;
    pl->gemms_before_softmax = 1;
    pl->softmax = softmax_rows_t{.rows = rows, .ld = ld, .n0 = keys, .off1 = 0, .n1 = 0};
    pl->table_entries = 6 * (size_t)batch;
    pl->logits_bytes = (size_t)(rows * ld) * sizeof(float);
    pl->probs_bytes = (size_t)(rows * ld) * es;
    if (!table) return;

    const char *kv = (const char *)bufs->kv, *q = (const char *)bufs->q;
    const char *probs = (const char *)bufs->probs, *out = (const char *)bufs->out;
    const void **qk = table, **pv = table + pl->gemm[1].table;
    for (int e = 0; e < batch; ++e) {
        const int s = e / g, j = e % g;
        const int64_t row = (int64_t)e * group; /* first of the entry's p rows */
        qk[e] = kv + es * kv_contiguous_offset(geo, s, 0, j, 0);
        qk[batch + e] = q + es * (row * d);
        qk[2 * batch + e] = bufs->logits + row * ld;
        pv[e] = kv + es * kv_contiguous_offset(geo, s, 1, j, 0);
        pv[batch + e] = probs + es * (row * ld);
        pv[2 * batch + e] = out + es * (row * d);
    }
}

static const char *cublas_unsupported(const problem_t *p)
{
    if (problem_ragged(p))
        return "cublas's batched GEMMs take one key count for every stream, not ragged --ctx-dist lengths";
    if (p->cache == CACHE_PAGED)
        return "cublas reads the contiguous cache only: its GEMMs need uniformly strided K/V, not a block table";
    return cublas_limits(p);
}

static attn_io_t cublas_io(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    return cublas_io_with_scores(p, io_kv_bytes_replicated(p));
}

static cudaError_t cublas_launch(attn_args_t *a, cudaStream_t stream)
{
    cudaError_t err;
    cublas_state_t *st = cublas_launch_state(a, stream, "cublas", &err);
    if (!st) return err;
    if ((err = cublas_state_gemms(st, 0, 1)) != cudaSuccess) return err;
    err = softmax_rows_launch(st->dtype, st->bufs.logits, st->bufs.probs, &st->pipeline.softmax, stream);
    if (err != cudaSuccess) return err;
    if ((err = cublas_state_gemms(st, 1, 1)) != cudaSuccess) return err;
    return cudaGetLastError();
}

extern "C" const attn_kernel_t kernel_cublas = {
    "cublas",
    "unfused baseline: Q.K^T and P.V as cuBLAS batched GEMMs around a softmax kernel, logits in memory",
    "contiguous cache; fp16, bf16, fp32; head_dim multiple of 8 up to 256; no indirection, no split-KV, no 8-bit KV cache",
    cublas_unsupported,
    cublas_layout<LAYOUT_CONTIGUOUS>,
    cublas_plan<&kernel_cublas>,
    cublas_no_workspace,
    cublas_private_bytes<cublas_plain_pipeline>,
    cublas_io,
    cublas_setup<cublas_plain_pipeline>,
    cublas_launch,
    cublas_teardown,
};
