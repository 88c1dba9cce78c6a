/* The cost model of the `auto` kernel, exposed for its tests. */
#ifndef ATTNBENCH_AUTO_H
#define ATTNBENCH_AUTO_H

#include "registry.h"

#ifdef __cplusplus
extern "C" {
#endif

double auto_predict_fused_us(const problem_t *p, const attn_plan_t *plan, const device_info_t *dev);
double auto_predict_bifurcated_us(const problem_t *p, const attn_plan_t *plan, const device_info_t *dev);

#ifdef __cplusplus
}
#endif
#endif
