/* What fused.cu exposes to its tests only.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_FUSED_INTERNAL_H
#define ATTNBENCH_FUSED_INTERNAL_H

#include "registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a plan of `fused` runs the deep K/V ring (attn_core.cuh): grids of at most
 * one CTA per SM. */
int fused_plan_deep_ring(const attn_plan_t *plan);

#ifdef __cplusplus
}
#endif
#endif
