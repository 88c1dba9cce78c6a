/* What grid.c exposes to its tests only.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_GRID_INTERNAL_H
#define ATTNBENCH_GRID_INTERNAL_H

#include "grid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Points of the grid. A contiguous cache has no block size, so for it the block-size
 * axis counts once (its first value), not once per listed size. */
long grid_count(const grid_t *g);

#ifdef __cplusplus
}
#endif
#endif
