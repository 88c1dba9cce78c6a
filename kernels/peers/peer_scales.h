/* The per-tensor scales of an 8-bit cache as our kernels read them (attn_args_t.kv_scale,
 * K's then V's), read back to the host in a peer's setup, outside timing, for the peers
 * whose wrappers take them as floats. */
#ifndef ATTNBENCH_PEER_SCALES_H
#define ATTNBENCH_PEER_SCALES_H

#include <cuda_runtime.h>
#include "../registry.h"

static inline cudaError_t peer_kv_scales(const attn_args_t *a, float *k_scale, float *v_scale)
{
    float scales[2] = {1.f, 1.f};
    cudaError_t e = cudaSuccess;
    if (a->problem.kv_quant != KV_QUANT_NONE)
        e = a->kv_scale ? cudaMemcpy(scales, a->kv_scale, sizeof scales, cudaMemcpyDeviceToHost)
                        : cudaErrorInvalidValue;
    *k_scale = scales[0];
    *v_scale = scales[1];
    return e;
}

#endif
