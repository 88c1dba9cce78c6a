/* Timing of one configuration (SPEC §5): warm-up, then timed launches each between
 * its own pair of CUDA events, L2 flushed before each timed launch unless hot,
 * optionally through a CUDA graph and bracketed for the profilers. Callable from C11. */
#ifndef ATTNBENCH_TIMING_H
#define ATTNBENCH_TIMING_H

#include <stdbool.h>
#include <cuda_runtime_api.h>
#include "stats.h"
#include "../problem/device_info.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues one step of the measured work on s; no synchronisation (it may be
 * captured into a graph). */
typedef cudaError_t (*launch_fn)(void *ctx, cudaStream_t s);

/* The most --iters and --warmup launches timer_run accepts: more than any sensible
 * run asks for, it guards the event pool. */
#define TIMING_ITERS_LIMIT 1000000

/* The adaptive warm-up's launch count stays within these. */
#define TIMING_MIN_ITERS 10
#define TIMING_MAX_ITERS 1000
/* The timed launches without --iters: at least, and at most, this many (stats.h
 * noise_rule_t). */
#define TIMING_NOISE_MIN_ITERS 20
#define TIMING_NOISE_MAX_ITERS 100000

typedef struct timing_opts {
    int warmup;          /* launches before timing, >= 0; then more, until the warm-up
                            has run min_time_s (timer_run: the clocks in steady state) */
    int iters;           /* timed launches; 0 = until the relative standard error of the
                            mean is at most max_noise (at least TIMING_NOISE_MIN_ITERS),
                            or max_time_s of kernel time ran (stats.h noise_rule_t) */
    double min_time_s;   /* kernel time the warm-up fills */
    double max_noise;    /* target relative standard error of the mean, e.g. 0.005 */
    double max_time_s;   /* cap of the timed launches' summed kernel time */
    bool hot;            /* do not flush L2 before each timed launch */
    bool graph;          /* time cudaGraphLaunch of fn's captured launch sequence */
    bool profile;        /* cudaProfilerStart/Stop around the timed launches only */
} timing_opts_t;

/* The statistics of the per-launch times, in microseconds (n: timed launches), and
 * the SM clock they ran at: the mean over a tenth as many launches right after them,
 * SM 0's cycles (clock64) over the GPU timer's nanoseconds (globaltimer), NaN where
 * it was not read (--profile, whose tools replay kernels at clocks of their own).
 * Below the GPU's boost clock it says the launches ran throttled, most often at the
 * board's power cap. */
typedef struct timing_result {
    sample_summary_t times;
    double sm_mhz;
    double rel_stderr;          /* relative standard error of the mean of the times */
    int capped_above_target;    /* the cap (or --iters) ended the launches above max_noise */
} timing_result_t;

/* Work enqueued around the last timed launch, outside its events: before it (ahead
 * of its L2 flush) and after it. The runner poisons the output before and copies it
 * aside after, so that the last timed launch's own output is verified (the clock
 * phase's launches after it overwrite the output). Either may be NULL. */
typedef struct timer_last {
    launch_fn before, after;
    void *ctx;
} timer_last_t;

/* Owns the L2-flush buffer (2x L2 size), the event pairs and a non-blocking
 * stream. Work on that stream is not ordered with the legacy default stream:
 * synchronise (cudaStreamSynchronize(timer_stream(t))) before reading results
 * with synchronous copies. */
typedef struct timer timer_t_;

/* Named timer_new, not timer_create: POSIX <time.h> declares timer_create. */
cudaError_t timer_new(timer_t_ **t, const device_info_t *dev);
void timer_destroy(timer_t_ *t);   /* NULL is fine */
cudaStream_t timer_stream(timer_t_ *t);

/* Runs fn as opts say and summarises the per-launch times into *r. Pushes the
 * NVTX ranges "warm-up" and "timed" itself. last (may be NULL): see timer_last_t. Returns the first CUDA error (of fn,
 * of a launch, of the capture); cudaErrorInvalidValue for bad options. The
 * stream is idle again on return, also after an error from fn. */
cudaError_t timer_run(timer_t_ *t, launch_fn fn, void *ctx, const timing_opts_t *o,
                      const timer_last_t *last, timing_result_t *r);

#ifdef __cplusplus
}
#endif
#endif
