/* Where the wall time of run, sweep and verify went: listing the GPUs, then for each
 * worker slot its setting up (of which measuring the peaks) and its rows (of which the
 * verification and the timing loops), summed from the workers' reports (pool_spent_t)
 * and printed after the run's count line as comment lines. Times are seconds of
 * harness/verify.h's monotonic clock (verify_seconds_now). A two-GPU sweep that is not
 * twice as fast as one GPU's says there which part did not shrink. Plain C, no GPU. */
#ifndef ATTNBENCH_TIMELINE_H
#define ATTNBENCH_TIMELINE_H

#include <stdio.h>
#include "pool.h"

/* As many slots as --devices can name. */
#define TIMELINE_SLOTS_MAX 64

typedef struct timeline_slot {
    int rows;              /* job reports that ran a row (not --resume's skipped ones) */
    pool_spent_t setup;    /* the sum of its POOL_READY reports (a restarted worker's too) */
    pool_spent_t jobs;     /* the sum of its rows' reports */
    double last_at;        /* seconds from the run's start to its last row's report */
} timeline_slot_t;

typedef struct timeline {
    double start;          /* verify_seconds_now() when the run began */
    double listed_s;       /* listing the GPUs (--devices, --tp); 0: not listed */
    int slots;             /* the highest slot reported, plus one */
    timeline_slot_t slot[TIMELINE_SLOTS_MAX];
} timeline_t;

/* An empty timeline whose run starts at `start`. */
void timeline_init(timeline_t *t, double start);

/* Slot's worker is set up (its POOL_READY report's spent). */
void timeline_ready(timeline_t *t, int slot, const pool_spent_t *spent);

/* Slot's worker ran a row, reported at `now`. */
void timeline_row(timeline_t *t, int slot, const pool_spent_t *spent, double now);

/* The comment lines of a run of `rows` rows that ended at `end`: the whole, then one
 * line a slot, named by its device (devices[slot]; NULL: the default GPU, device 0):
 *   # 33 rows in 9.6 s (listing the GPUs 0.4 s)
 *   # device 0: set-up 2.3 s (peaks 1.8 s), 17 rows 6.1 s (verification 0.9 s, timing 4.0 s), last at 9.3 s
 * A part that took no time (no peaks under verify, no timing) is left out. */
void timeline_print(FILE *f, const timeline_t *t, int rows, double end, const int *devices);

#endif
