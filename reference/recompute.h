/* The reference of Select-Attention's recomputed K/V (problem/recompute.h): a kept
 * token's K or V rows as x W in double, the check of what select-recompute wrote. */
#ifndef ATTNBENCH_REFERENCE_RECOMPUTE_H
#define ATTNBENCH_REFERENCE_RECOMPUTE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stacked projections [2 g][hidden][d] (recompute_w), each value exact in float. */
void reference_recompute_w(uint64_t seed, int kv_heads, int hidden, int d, float *w);

/* Token `token`'s row of K (which 0) or V (1) at kv head `head`: want[x] = sum over e of
 * x_e W[which][head][e][x] in double, and scale[x] = the sum of the products' magnitudes
 * (what a float sum's rounding is proportional to). w from reference_recompute_w. */
void reference_recomputed_kv(const float *w, uint64_t seed, int kv_heads, int hidden, int d, uint64_t token,
                             int which, int head, double *want, double *scale);

#ifdef __cplusplus
}
#endif
#endif
