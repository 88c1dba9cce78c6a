/* The kernel of --step append (problem/append.h, docs/APPEND.md): one small launch before
 * the attention kernel that rotates the current token's q and k and writes q where the
 * attention reads it and k and v into the cache's current slot. It writes the layouts of
 * the kernels with runs_append (contiguous, paged through the block table, bifurcated's
 * decoded part). Callable from C11. */
#ifndef ATTNBENCH_APPEND_KERNEL_H
#define ATTNBENCH_APPEND_KERNEL_H

#include <cuda_runtime_api.h>
#include "registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the step on s: reads a->qkv and a->rope_cs, writes the rotated q into q ([B*W, h, d] in
 * dtype) and K/V into the current slot of every stream in cache, the buffer of a->geom's
 * layout that holds it (the contiguous cache, the paged pool, or bifurcated's decoded
 * part); paged addresses through a->block_table, an 8-bit cache quantises with
 * a->kv_scale. Every launch writes the same values: timed launches repeat the same work.
 * cudaErrorInvalidValue for missing buffers or a problem that is not --step append. */
cudaError_t append_launch(const attn_args_t *a, void *q, void *cache, cudaStream_t s);

/* Poisons what append_launch writes in the cache: NaN in every element of each stream's
 * current slot (an 8-bit int8 cache, which has no NaN: INT8_CODE_UNUSED, -128), so that a
 * step that skips the append cannot pass verification. */
cudaError_t append_poison(const attn_args_t *a, void *cache, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
