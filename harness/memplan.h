/* Device memory of one configuration, computed before anything is allocated
 * (SPEC §3): a configuration that does not fit is a row with status `oom`. */
#ifndef ATTNBENCH_MEMPLAN_H
#define ATTNBENCH_MEMPLAN_H

#include <stddef.h>
#include "../kernels/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mem_plan {
    kv_geometry_t geom;
    int64_t kv_elements[2];   /* part 0: contiguous cache / paged pool / bifurcated context; part 1: bifurcated decoded */
    int64_t num_blocks;       /* paged pool blocks (0 otherwise) */
    size_t q, out, kv[2], block_table, block_owner, indirection, workspace, private_bytes;
    size_t kv_scale;          /* an 8-bit cache's scales: [2][kv_scale_entries] floats */
    size_t qkv;               /* --step append: the packed QKV [B*W, (h + 2g) * d] */
    size_t rope_cs;           /* --step append: the cos/sin table, [d/2][2] floats */
    size_t ctx_lens;          /* a ragged batch's context lengths: [B] int32 */
    size_t total;
} mem_plan_t;

/* Allocations are rounded up to this: what cudaMalloc really takes. */
#define MEM_ALIGN ((size_t)2 << 20)

/* The memory `kernel` (after plan) needs for problem p. */
void mem_plan_make(const problem_t *p, const attn_kernel_t *kernel, const attn_plan_t *plan,
                   mem_plan_t *m);
/* 1 when the plan fits into free_bytes of device memory, keeping MEM_HEADROOM
 * (device_info.h). */
int mem_plan_fits(const mem_plan_t *m, size_t free_bytes);

#ifdef __cplusplus
}
#endif
#endif
