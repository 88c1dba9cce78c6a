/* What stats.c exposes to its tests only.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_STATS_INTERNAL_H
#define ATTNBENCH_STATS_INTERNAL_H

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Quantile q in [0, 1] of n >= 1 ascending values by linear interpolation between
 * closest ranks: position (n - 1) * q, interpolated between the two neighbouring
 * values (numpy's default "linear", Hyndman-Fan type 7). q = 0.5 is the median:
 * the middle value for odd n, the mean of the two middle values for even n. */
double stats_quantile_sorted(const double *sorted, int n, double q);

#ifdef __cplusplus
}
#endif
#endif
