/* One (configuration, kernel) from plan to CSV row: memory plan, allocation,
 * device fill, poisoned output, verification against the CPU reference, timing. */
#ifndef ATTNBENCH_RUNNER_H
#define ATTNBENCH_RUNNER_H

#include <stdbool.h>
#include <stdio.h>
#include "../kernels/registry.h"
#include "../report/csv.h"
#include "nvml.h"
#include "timing.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct runner {
    device_info_t dev;
    nvml_info_t nvml;     /* zeros where NVML cannot be reached */
    timer_t_ *timer;
    timing_opts_t timing;
    bool verify;          /* check the output of every row against the CPU reference */
    bool time;            /* time the kernel (verify alone skips it) */
    double verify_budget_s; /* seconds a row's reference may take: rows beyond the
                               VERIFY_MIN_ROWS always checked (verify.h) are added while
                               it lasts */
    uint64_t seed;        /* base seed; each configuration derives its own */
    long rows;            /* the row's place in the grid (the caller may set it): varies the seed */
    bool broken;          /* a sticky CUDA error: this process can run nothing more */
    /* --tp: called once a row is set up and checked, just before its timing loop, so
     * that the GPUs of one step start timing together (pool_barrier); NULL: none */
    void (*before_timing)(void *ctx);
    void *before_timing_ctx;
    /* Where the time went, in seconds of CLOCK_MONOTONIC, for the run's closing time
     * lines: peak_s, runner_open's measuring of the peaks; verify_s and timing_s, the last
     * runner_row's checks against the CPU reference and its timing loop */
    double peak_s, verify_s, timing_s;
    /* the peaks' time (seconds since the epoch) where they were kept from an earlier
     * measurement (peak_cache.h), 0 where runner_open measured them; the file they are kept in */
    double peak_measured_at;
    char peak_path[512];
} runner_t;

/* Queries the GPU, measures its read bandwidth and tensor-core rate (`peak`; kept for
 * an hour, peak_cache.h) and makes the timer. Prints one line and returns -1 when no GPU is usable. */
int runner_open(runner_t *r, const timing_opts_t *timing, bool verify, bool time, uint64_t seed);
void runner_close(runner_t *r);

/* Runs kernel k on problem p and fills row. Never exits: a CUDA error becomes
 * status `error`; if it was sticky, r->broken is set and nothing more can run in
 * this process. */
void runner_row(runner_t *r, const problem_t *p, const attn_kernel_t *k, result_row_t *row);

/* The row's configuration columns, without running anything (resume keys,
 * unsupported rows). */
void runner_describe_row(const runner_t *r, const problem_t *p, const attn_kernel_t *k,
                         result_row_t *row);

/* The same without a GPU (sweep --dry-run): gpu as given, splits and ran as asked,
 * not as a plan on the GPU would resolve them. Its args rerun the row. */
void runner_describe_unplanned(const char *gpu, const timing_opts_t *timing, const problem_t *p,
                               const attn_kernel_t *k, result_row_t *row);

/* Readable one-line-per-row table on stdout, as rows complete. */
void runner_print_header(FILE *f);
void runner_print_row(FILE *f, const result_row_t *row);

/* The status of a row whose steps stopped at error e (not cudaSuccess): `oom` for a
 * failed device allocation, `unsupported` where setup returned ATTN_SETUP_UNSUPPORTED,
 * `error` for anything else. */
const char *runner_error_status(cudaError_t e);

/* 1 when a row's status makes the command's exit status non-zero. */
int row_failed(const result_row_t *row);

#ifdef __cplusplus
}
#endif
#endif
