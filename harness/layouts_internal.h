/* What layouts.c exposes to its tests only: float copies of the buffers a kernel
 * reads, for the CPU tests of the fill and of the reference.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_LAYOUTS_INTERNAL_H
#define ATTNBENCH_LAYOUTS_INTERNAL_H

#include "layouts.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A malloc'd float copy of buffer `part`, element for element what the device
 * fill writes (kv_fill.h). m is required for LAYOUT_PAGED and ignored otherwise.
 * NULL for an empty part, a paged layout without m, or when memory runs out. */
float *layout_materialize(const kv_geometry_t *g, const problem_t *p, uint64_t seed,
                          const paged_map_t *m, int part);

#ifdef __cplusplus
}
#endif
#endif
