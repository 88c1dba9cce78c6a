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
/* The keys its decode part's grid spans for each stream (bif_dec_keys): of a ragged batch
 * on a paged cache, the most any request has after its full context blocks. */
int bifurcated_decode_keys(const problem_t *p);

#ifdef __cplusplus
}
#endif
#endif
