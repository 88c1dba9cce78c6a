/* The cost model of the `auto` kernel, exposed for its tests. */
#ifndef ATTNBENCH_AUTO_H
#define ATTNBENCH_AUTO_H

#include "registry.h"

/* The model's constants (auto.c says where they come from). */
#define FUSED_FIXED_US 10.0
#define FUSED_TC_EFFICIENCY 0.15      /* of the measured fp16 GEMM rate */
#define FUSED_UNOVERLAPPED 0.25       /* share of the smaller of its memory and tensor-core times that shows */
#define FUSED_MERGE_SLOT_US 0.04      /* per partial of a row that its merge launch folds */
#define FUSED_MERGE_LAUNCH_US 0.5     /* the merge launch itself (a programmatic dependent), where its plan has one */
#define FUSED_L2_EFFICIENCY 0.94      /* of the measured L2 read rate, for its streams' re-reads of shared blocks */
#define BIFURCATED_FIXED_US 16.0        /* context part on the wgmma body, decode part beside it, merge launch */
#define BIFURCATED_ROWSPLIT_FIXED_US 18.0 /* mma.sync body (not Hopper, or d != 128), decode part after it, merged by its last CTAs */
#define BIFURCATED_TC_EFFICIENCY 0.56

#ifdef __cplusplus
extern "C" {
#endif

double auto_predict_fused_us(const problem_t *p, const attn_plan_t *plan, const device_info_t *dev);
double auto_predict_bifurcated_us(const problem_t *p, const attn_plan_t *plan, const device_info_t *dev);
/* The key tile of the wgmma body a `bifurcated` plan runs its context part on (64, or
 * 128: bif_wide_fits), or 0 for the mma.sync body (bifurcated.cu). */
int bifurcated_context_on_wgmma(const attn_plan_t *plan);
/* Whether a `bifurcated` plan's wide wgmma body streams the decode part itself
 * (bifurcated.cu: bif_dec_streamable). */
int bifurcated_streams_decode(const attn_plan_t *plan);
/* Whether a thread of its producer warpgroup copies those decode tiles (bifurcated.cu:
 * bif_copier_fits). */
int bifurcated_copies_decode(const attn_plan_t *plan);

#ifdef __cplusplus
}
#endif
#endif
