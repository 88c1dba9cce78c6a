/* NVTX ranges in the tool's own domain ("attnbench"), so that nsys and ncu show
 * which configuration and which phase every kernel launch belongs to. */
#ifndef ATTNBENCH_NVTX_H
#define ATTNBENCH_NVTX_H

#include <stddef.h>
#include "../problem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase names nested inside a configuration's range. timer_run pushes the
 * warm-up, timed and clock ranges itself (clock: launches after the timed ones that
 * read the SM clock, timing.h); the runner pushes the configuration, fill and
 * verify ranges. */
#define NVTX_PHASE_FILL "fill"
#define NVTX_PHASE_WARMUP "warm-up"
#define NVTX_PHASE_TIMED "timed"
#define NVTX_PHASE_CLOCK "clock"
#define NVTX_PHASE_VERIFY "verify"

/* Opens / closes a nested range. The domain is registered on first use; the tool
 * pushes ranges from one host thread only. Without a profiler attached these cost
 * a function call each. */
void nvtx_push(const char *name);
void nvtx_pop(void);

/* Readable name of one configuration: the kernel followed by the problem's shape,
 * "fused B1 W16 h32 g8 d128 ctx8192 gen128 fp16 contiguous" (problem_describe).
 * kernel may be NULL (shape only). Truncated to len - 1 characters. */
void nvtx_config_name(char *buf, size_t len, const char *kernel, const problem_t *p);

#ifdef __cplusplus
}
#endif
#endif
