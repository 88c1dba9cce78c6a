/* Which configurations run where, decided without a GPU: an estimated cost per
 * (configuration, kernel), the slices of `--shard i/n` and the order `--devices`
 * hands rows out in. Deterministic and the same on every machine, so that the shards
 * of one sweep, run on different nodes, partition it. */
#ifndef ATTNBENCH_SCHEDULE_H
#define ATTNBENCH_SCHEDULE_H

#include "../kernels/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds one step of kernel k on p would take on a nominal GPU (read 3 TB/s,
 * tensor cores 800 TFLOP/s), from the kernel's own byte and FLOP model planned for a
 * nominal Hopper; a peer's from the problem's stored K/V (its planning is another
 * project's code and may touch the GPU). 0 where k does not support p: such a row is
 * `unsupported` at once. Only the order of these numbers is used. */
double schedule_cost(const problem_t *p, const attn_kernel_t *k);

/* order[0..n): the indices 0..n-1 by cost, the dearest first, ties by index (NaN
 * counts as 0). 0, or -1 when out of host memory. */
int schedule_order(const double *cost, int n, int *order);

/* The jobs of shard `shard` (0-based) of `shards`: the jobs by cost, dearest first, are
 * dealt to the shards in a snake (0, 1, .., n-1, n-1, .., 0, 0, 1, ..), so that each shard
 * gets as many rows as any other, give or take one, and its share of the heavy ones.
 * Writes the shard's job indices to out in ascending order (grid order); returns their
 * count, or -1 when out of host memory. Every index 0..n-1 lands in exactly one shard. */
int schedule_shard(const double *cost, int n, int shard, int shards, int *out);

#ifdef __cplusplus
}
#endif
#endif
