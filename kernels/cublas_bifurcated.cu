/* `cublas-bifurcated`: the four-einsum formulation of the bifurcated-attention paper
 * (§4.2, Appendix E.3) with cuBLAS, on the bifurcated layout (context K_c/V_c
 * [B, 2, g, m_c, d] once per request, decoded K_d/V_d [B*W, 2, g, m_d, d] per stream):
 *   <q, K_c>   one GEMM per (request, kv head), all W*p query rows in its M dimension
 *   <q, K_d>   one GEMM per (stream, kv head)
 *   softmax    over the concatenated [m_c | m_d] logits of each row
 *   <w_c, V_c> + <w_d, V_d>   the second GEMM accumulates onto the first in fp32
 *
 * Why q is staged: the W*p query rows of one request and kv head are not uniformly
 * spaced in q [B*W, h, d] (p consecutive heads per stream, streams h*d apart), so no
 * single GEMM can take them as its M dimension. Splitting by head (M = W, one GEMM per
 * (request, kv head, head)) would read K_c p times. Instead q is copied once into
 * [B, g, W, p, d] (B*W*h*d elements: nothing next to the cache), and logits, P and the
 * fp32 output accumulator use the same row order, so each part is one batched GEMM
 * and K_c/V_c are read once per (request, kv head). A last kernel converts the
 * accumulator to the dtype in q's row order. */
#include <stdlib.h>

#include "registry.h"
#include "cublas_common.cuh"
#include "softmax.cuh"

extern "C" const attn_kernel_t kernel_cublas_bifurcated;

/* Row-major tensors are column-major tensors transposed: a row-major X[r x c] with
 * row stride ld is, to cuBLAS, the column-major X^T[c x r] with leading dimension ld.
 * Rows of q_staged, logits, P and acc are in staged order: row
 * ((b*g + j)*W + w)*p + i is (request b, kv head j, stream w of b, head i of the group).
 * Context entry c = b*g + j owns the W*p rows from c*W*p; decoded entry
 * e = (b*g + j)*W + w owns the p rows from e*p. Logit/P columns: context keys at
 * [0, m_c), decoded keys at [ctx_cols, ctx_cols + m_d). */
extern "C" void cublas_bifurcated_pipeline(const problem_t *p, const kv_geometry_t *geo,
                                           const cublas_buffers_t *bufs, cublas_pipeline_t *pl,
                                           const void **table)
{
    const int B = p->batch, W = p->beam, g = p->kv_heads, group = problem_group(p);
    const int d = p->head_dim, mc = p->ctx, md = p->gen;
    const int streams = problem_streams(p);
    const int64_t ctx_cols = cublas_round_up(mc, CUBLAS_ROW_ALIGN);
    const int64_t ld = ctx_cols + cublas_round_up(md, CUBLAS_ROW_ALIGN);
    const int64_t rows = (int64_t)streams * p->heads;
    const size_t es = dtype_size(p->dtype);
    const int ctx_batch = B * g, dec_batch = streams * g;
    const int ctx_rows = W * group; /* query rows per context entry */
    const float scale = (float)problem_scale(p);

    *pl = cublas_pipeline_t();
    /* <q, K_c>, row-major per entry c: S_c[W*p x m_c] = scale * Qs_c[W*p x d] . K_c[m_c x d]^T.
     * cuBLAS computes S_c^T[m_c x W*p] (ldc = ld) = op(A)[m_c x d] . B[d x W*p] with
     * A = K_c seen as column-major [d x m_c] (lda = d), transposed, and
     * B = Qs_c seen as column-major [d x W*p] (ldb = d). */
    pl->gemm[0] = gemm_batch_t{.transa = 1, .m = mc, .n = ctx_rows, .k = d, .lda = d, .ldb = d,
                               .ldc = (int)ld, .alpha = scale, .beta = 0.0f, .c_fp32 = 1,
                               .batch = ctx_batch, .table = 0};
    /* <q, K_d>, row-major per entry e: S_e[p x m_d] = scale * Qs_e[p x d] . K_d[m_d x d]^T,
     * written from column ctx_cols. cuBLAS computes S_e^T[m_d x p] (ldc = ld) =
     * op(A)[m_d x d] . B[d x p], A = K_d as column-major [d x m_d] (lda = d) transposed,
     * B = Qs_e as column-major [d x p] (ldb = d). */
    pl->gemm[1] = gemm_batch_t{.transa = 1, .m = md, .n = group, .k = d, .lda = d, .ldb = d,
                               .ldc = (int)ld, .alpha = scale, .beta = 0.0f, .c_fp32 = 1,
                               .batch = dec_batch, .table = 3 * (size_t)ctx_batch};
    /* <w_c, V_c>, row-major per entry c: O_c[W*p x d] = P_c[W*p x m_c] . V_c[m_c x d].
     * cuBLAS computes O_c^T[d x W*p] (ldc = d) = A[d x m_c] . B[m_c x W*p] with
     * A = V_c as column-major [d x m_c] (lda = d), B = P_c as column-major
     * [m_c x W*p] (ldb = ld); beta = 0 initialises the fp32 accumulator. */
    pl->gemm[2] = gemm_batch_t{.transa = 0, .m = d, .n = ctx_rows, .k = mc, .lda = d, .ldb = (int)ld,
                               .ldc = d, .alpha = 1.0f, .beta = 0.0f, .c_fp32 = 1,
                               .batch = ctx_batch, .table = 3 * (size_t)ctx_batch + 3 * (size_t)dec_batch};
    /* <w_d, V_d>, row-major per entry e: O_e[p x d] += P_e[p x m_d] . V_d[m_d x d], P_e
     * read from column ctx_cols. cuBLAS computes O_e^T[d x p] (ldc = d) += A[d x m_d] .
     * B[m_d x p], A = V_d as column-major [d x m_d] (lda = d), B = P_e as column-major
     * [m_d x p] (ldb = ld); beta = 1 adds onto the context part in fp32. */
    pl->gemm[3] = gemm_batch_t{.transa = 0, .m = d, .n = group, .k = md, .lda = d, .ldb = (int)ld,
                               .ldc = d, .alpha = 1.0f, .beta = 1.0f, .c_fp32 = 1,
                               .batch = dec_batch, .table = 6 * (size_t)ctx_batch + 3 * (size_t)dec_batch};
    pl->gemms = 4;
    pl->gemms_before_softmax = 2;
    pl->softmax = softmax_rows_t{.rows = rows, .ld = ld, .n0 = mc, .off1 = ctx_cols, .n1 = md};
    pl->table_entries = 6 * (size_t)ctx_batch + 6 * (size_t)dec_batch;
    pl->logits_bytes = (size_t)(rows * ld) * sizeof(float);
    pl->probs_bytes = (size_t)(rows * ld) * es;
    pl->q_staged_bytes = (size_t)(rows * d) * es;
    pl->acc_bytes = (size_t)(rows * d) * sizeof(float);
    if (!table) return;

    const char *kv_ctx = (const char *)bufs->kv_ctx, *kv_dec = (const char *)bufs->kv_dec;
    const char *qs = (const char *)bufs->q_staged, *probs = (const char *)bufs->probs;
    const void **cqk = table + pl->gemm[0].table, **dqk = table + pl->gemm[1].table;
    const void **cpv = table + pl->gemm[2].table, **dpv = table + pl->gemm[3].table;
    for (int c = 0; c < ctx_batch; ++c) {
        const int b = c / g, j = c % g;
        const int64_t row = (int64_t)c * ctx_rows;
        cqk[c] = kv_ctx + es * kv_ctx_offset(geo, b, 0, j, 0);
        cqk[ctx_batch + c] = qs + es * (row * d);
        cqk[2 * ctx_batch + c] = bufs->logits + row * ld;
        cpv[c] = kv_ctx + es * kv_ctx_offset(geo, b, 1, j, 0);
        cpv[ctx_batch + c] = probs + es * (row * ld);
        cpv[2 * ctx_batch + c] = bufs->acc + row * d;
    }
    for (int e = 0; e < dec_batch; ++e) {
        const int w = e % W, c = e / W, j = c % g, b = c / g;
        const int s = b * W + w;
        const int64_t row = (int64_t)e * group;
        dqk[e] = kv_dec + es * kv_dec_offset(geo, s, 0, j, 0);
        dqk[dec_batch + e] = qs + es * (row * d);
        dqk[2 * dec_batch + e] = bufs->logits + row * ld + ctx_cols;
        dpv[e] = kv_dec + es * kv_dec_offset(geo, s, 1, j, 0);
        dpv[dec_batch + e] = probs + es * (row * ld + ctx_cols);
        dpv[2 * dec_batch + e] = bufs->acc + row * d;
    }
}

/* q [B*W, h, d] -> q_staged in staged row order, 16-byte pieces (d is a multiple of
 * 8, so a row is a whole number of pieces in every dtype). */
static __global__ void stage_q_kernel(const uint4 *__restrict__ q, uint4 *__restrict__ staged, int64_t pieces,
                               int row_pieces, int heads, int beam, int kv_heads, int group)
{
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < pieces;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = u / row_pieces;
        const int piece = (int)(u % row_pieces);
        const int stream = (int)(row / heads), head = (int)(row % heads);
        staged[cublas_bif_staged_row(stream, head, beam, kv_heads, group) * row_pieces + piece] = q[u];
    }
}

/* acc (fp32, staged order) -> out [B*W, h, d] in the dtype, four elements at a time. */
template <typename T>
static __global__ void finish_out_kernel(const float4 *__restrict__ acc, T *__restrict__ out, int64_t quads,
                                  int row_quads, int heads, int beam, int kv_heads, int group)
{
    for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < quads;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = u / row_quads;
        const int quad = (int)(u % row_quads);
        const int stream = (int)(row / heads), head = (int)(row % heads);
        const float4 v = acc[cublas_bif_staged_row(stream, head, beam, kv_heads, group) * row_quads + quad];
        store4<T>(out + 4 * u, v.x, v.y, v.z, v.w);
    }
}

/* Grid of a grid-stride loop over n items: enough CTAs to fill the GPU several times. */
static unsigned elementwise_blocks(int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    return (unsigned)(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

static cudaError_t stage_q_launch(const problem_t *p, const void *q, void *staged, cudaStream_t stream)
{
    const int row_pieces = (int)(p->head_dim * dtype_size(p->dtype) / 16);
    const int64_t pieces = (int64_t)problem_streams(p) * p->heads * row_pieces;
    stage_q_kernel<<<elementwise_blocks(pieces, 256), 256, 0, stream>>>(
        (const uint4 *)q, (uint4 *)staged, pieces, row_pieces, p->heads, p->beam, p->kv_heads,
        problem_group(p));
    return cudaGetLastError();
}

template <typename T>
static cudaError_t finish_out_launch_t(const problem_t *p, const float *acc, void *out, cudaStream_t stream)
{
    const int row_quads = p->head_dim / 4;
    const int64_t quads = (int64_t)problem_streams(p) * p->heads * row_quads;
    finish_out_kernel<T><<<elementwise_blocks(quads, 256), 256, 0, stream>>>(
        (const float4 *)acc, (T *)out, quads, row_quads, p->heads, p->beam, p->kv_heads, problem_group(p));
    return cudaGetLastError();
}

static cudaError_t finish_out_launch(const problem_t *p, const float *acc, void *out, cudaStream_t stream)
{
    switch (p->dtype) {
    case DTYPE_FP16: return finish_out_launch_t<__half>(p, acc, out, stream);
    case DTYPE_BF16: return finish_out_launch_t<__nv_bfloat16>(p, acc, out, stream);
    default: return finish_out_launch_t<float>(p, acc, out, stream);
    }
}

static const char *cublas_bif_unsupported(const problem_t *p)
{
    if (problem_ragged(p))
        return "cublas-bifurcated's batched GEMMs take one context length for every request, not ragged --ctx-dist lengths";
    if (p->cache == CACHE_PAGED)
        return "cublas-bifurcated reads the bifurcated layout (context once per request), not a paged cache";
    return cublas_limits(p);
}

static attn_io_t cublas_bif_io(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    return cublas_io_with_scores(p, io_kv_bytes_unique(p));
}

static cudaError_t cublas_bif_launch(attn_args_t *a, cudaStream_t stream)
{
    cudaError_t err;
    cublas_state_t *st = cublas_launch_state(a, stream, "cublas-bifurcated", &err);
    if (!st) return err;
    const problem_t *p = &a->problem;
    if ((err = stage_q_launch(p, a->q, st->bufs.q_staged, stream)) != cudaSuccess) return err;
    if ((err = cublas_state_gemms(st, 0, 2)) != cudaSuccess) return err;
    err = softmax_rows_launch(st->dtype, st->bufs.logits, st->bufs.probs, &st->pipeline.softmax, stream);
    if (err != cudaSuccess) return err;
    if ((err = cublas_state_gemms(st, 2, 2)) != cudaSuccess) return err;
    if ((err = finish_out_launch(p, st->bufs.acc, a->out, stream)) != cudaSuccess) return err;
    return cudaGetLastError();
}

extern "C" const attn_kernel_t kernel_cublas_bifurcated = {
    "cublas-bifurcated",
    "the paper's four einsums with cuBLAS: <q,K_c> with W*p rows per GEMM, <q,K_d> batched, one softmax, P.V_c + P.V_d",
    "bifurcated layout; fp16, bf16, fp32; head_dim multiple of 8 up to 256; no paged cache, no indirection, no split-KV, no 8-bit KV cache",
    cublas_bif_unsupported,
    cublas_layout<LAYOUT_BIFURCATED>,
    cublas_plan<&kernel_cublas_bifurcated>,
    cublas_no_workspace,
    cublas_private_bytes<cublas_bifurcated_pipeline>,
    cublas_bif_io,
    cublas_setup<cublas_bifurcated_pipeline>,
    cublas_bif_launch,
    cublas_teardown,
};
