/* Device-side fill of every input buffer with the logical data of
 * problem/logical_data.h (placed by problem/kv_fill.h), at memory speed, plus
 * output poisoning and download for verification. Callable from C11. */
#ifndef ATTNBENCH_FILL_H
#define ATTNBENCH_FILL_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include "../problem/problem.h"
#include "../problem/kv_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which tensor of a layout fill_kv writes. */
enum {
    FILL_KV_MAIN = 0,      /* contiguous cache, paged pool or bifurcated context, by g->layout */
    FILL_KV_DECODED = 1,   /* bifurcated decoded part */
};

/* q [B*W, q_len, h, d] with logical_q(seed, ...) in p->dtype (--scores peaked:
 * logical_q_peaked), a query token's row standing for the stream. */
cudaError_t fill_q(void *q, const problem_t *p, uint64_t seed, cudaStream_t s);

/* --step append's packed QKV [B*W, (h + 2g) * d] in p->dtype: append_qkv_logical(g, seed,
 * ...) (problem/append.h), g the geometry of the cache the step appends to. */
cudaError_t fill_qkv(void *qkv, const problem_t *p, const kv_geometry_t *g, uint64_t seed,
                     cudaStream_t s);

/* `elements` elements of one KV tensor, stored as dtype t (the problem's KV dtype; an
 * 8-bit cache, g->kv_quant, takes DTYPE_FP8 or DTYPE_INT8 and holds codes, kv_quant.h):
 *   part FILL_KV_MAIN:    kv_contiguous_value / kv_paged_value / kv_ctx_value by g->layout
 *                         (paged needs d_owner and d_first_pos, device arrays of one
 *                         entry per pool block, as kv_paged_value reads them);
 *   part FILL_KV_DECODED: kv_dec_value.
 * cudaErrorInvalidValue for a NULL buffer, an unknown part, missing paged arrays or an
 * 8-bit t that is not the geometry's. */
cudaError_t fill_kv(void *buf, int64_t elements, dtype_t t, const kv_geometry_t *g, int part,
                    uint64_t seed, const int32_t *d_owner, const int32_t *d_first_pos,
                    cudaStream_t s);

/* Poisons an output buffer with NaN (all bits set: a NaN in fp16, bf16 and fp32),
 * so that an element a kernel fails to write cannot pass verification. */
cudaError_t fill_nan(void *buf, int64_t elements, dtype_t t, cudaStream_t s);

/* Copies `elements` elements of dtype t from the device to host floats. Waits for
 * all prior device work first (the timer's stream does not synchronise with the
 * legacy default stream). */
cudaError_t download_as_float(const void *d_buf, int64_t elements, dtype_t t, float *host);

#ifdef __cplusplus
}
#endif
#endif
