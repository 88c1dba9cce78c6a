/* Worker processes for run, sweep and verify: the GPU work runs in children, one per
 * GPU, so that a sticky CUDA error or a crash in one kernel costs one row, and several
 * GPUs measure at once. The parent hands out jobs one at a time to whichever worker is
 * free and is the only writer of the output, so rows land whole, one after another, as
 * they finish. Nothing here touches a GPU: the worker callback does. */
#ifndef ATTNBENCH_POOL_H
#define ATTNBENCH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include "../report/csv.h"

/* The job of a report that says the worker is set up and takes jobs. */
#define POOL_READY (-1)

/* Where a worker's time went, in seconds, for the run's closing time lines: the pool
 * carries it from the worker to the caller, which sums it per slot. */
typedef struct pool_spent {
    double total_s;     /* POOL_READY: setting up; a job: running it */
    double peak_s;      /* POOL_READY: of which measuring the GPU's peaks */
    double verify_s;    /* a job: of which checking its output against the CPU reference */
    double timing_s;    /* a job: of which its timing loop */
} pool_spent_t;

/* What a worker tells the parent about one job; small enough for one atomic pipe write. */
typedef struct pool_report {
    int job;         /* the caller's job index, or POOL_READY */
    int skipped;     /* already in the CSV (--resume): nothing was run */
    int last;        /* the worker can run nothing more (a sticky CUDA error) and exits */
    int barrier;     /* pool_run_tp: the worker is at job's barrier (pool_barrier), no row */
    pool_spent_t spent;
    result_row_t row;
} pool_report_t;

typedef struct pool_ops {
    /* In a child process of its own, for worker slot `slot`, started for the
     * (starts+1)-th time: sets itself up, sends a POOL_READY report, then answers each
     * job pool_next_job reads from `in` with one report on `out` until there are no
     * more. Returns the child's exit status; where it cannot set up, it prints why
     * and returns non-zero before POOL_READY. */
    int (*worker)(void *ctx, int slot, int starts, int in, int out);
    /* In the parent, as each report comes: 0, or -1 to stop every worker (exit 1). */
    int (*record)(void *ctx, int slot, pool_report_t *rep);
    /* In the parent: slot's worker died inside `job` (wait status `status`): the job's
     * row is lost. 0, or -1 to stop every worker. */
    int (*died)(void *ctx, int slot, int job, int status);
    /* In the parent, optional (NULL: none): slot's worker said POOL_READY. */
    void (*ready)(void *ctx, int slot, const pool_report_t *rep);
} pool_ops_t;

/* Runs jobs order[0..n) on min(slots, n) workers, handing each free worker the next
 * job of order. A worker that dies, or that said `last`, is started again while jobs
 * remain. Returns 0 when every job was reported or died in; 1 when a worker could not
 * set up, made no progress between restarts, or record/died said stop (the workers
 * still running are killed). */
int pool_run(const pool_ops_t *ops, void *ctx, int slots, const int *order, int n);

/* --tp: runs jobs order[0..n) on `width` workers together, each job handed to every
 * worker at once (slot i runs share i), the next only when all have reported it or died
 * in it. A worker that calls pool_barrier waits there until every worker holding the
 * job has called it, reported the job or died: their timing loops start together.
 * record and died are called once per worker and job. Returns as pool_run. */
int pool_run_tp(const pool_ops_t *ops, void *ctx, int width, const int *order, int n);
/* For workers of pool_run_tp, inside job `job`: waits for the others. 0, or -1 when the
 * parent is gone. */
int pool_barrier(int in, int out, int job);

/* For workers: the next job from the parent, or -1 when it has no more. */
int pool_next_job(int in);
/* For workers: sends one report. 0, or -1 when the parent is gone. */
int pool_send(int out, const pool_report_t *rep);

/* The CPU threads worker slot `slot` of `slots` workers running at once may use for its
 * share of `threads` (the CPU reference's OpenMP pool): an even share, the first
 * threads % slots slots one more, at least 1. Each worker would otherwise take every
 * core, and workers verifying at once would run twice as many threads as there are
 * cores, spinning at OpenMP's barriers against one another and against the threads
 * that launch the other workers' timed kernels. */
int pool_thread_share(int threads, int slots, int slot);

/* --devices, planned without a GPU. keys[0..visible) are the kinds (gpu keys) of the
 * devices the machine shows. With all, devices becomes 0..visible-1; otherwise each
 * listed index must be below visible. Every chosen device must be of one kind: rows
 * of one CSV are of one `gpu`. Returns 0, or -1 with one line in msg. */
int pool_devices_check(const char (*keys)[32], int visible, bool all, int *devices,
                       int *n_devices, char *msg, size_t len);

/* The CUDA_VISIBLE_DEVICES a worker for device index d gets: the d-th entry of the
 * parent's list where it has one (a user's CUDA_VISIBLE_DEVICES=2,3 makes index 0
 * the GPU 2), else d itself. 0, or -1 when the list has no d-th entry. */
int pool_visible_device(const char *parent_env, int d, char *buf, size_t len);

#endif
