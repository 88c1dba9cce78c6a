/* What auto.c exposes to its tests only: the cost model's constants and predictions.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_AUTO_INTERNAL_H
#define ATTNBENCH_AUTO_INTERNAL_H

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

#ifdef __cplusplus
}
#endif
#endif
