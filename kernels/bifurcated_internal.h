/* What bifurcated.cu exposes to its tests only: which parts a plan's wgmma body takes on.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_BIFURCATED_INTERNAL_H
#define ATTNBENCH_BIFURCATED_INTERNAL_H

#include "registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a `bifurcated` plan's wide wgmma body streams the decode part itself
 * (bif_dec_streamable). */
int bifurcated_streams_decode(const attn_plan_t *plan);
/* Whether a thread of its producer warpgroup copies those decode tiles (bif_copier_fits). */
int bifurcated_copies_decode(const attn_plan_t *plan);

#ifdef __cplusplus
}
#endif
#endif
