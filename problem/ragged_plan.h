/* Split planning for ragged batches (--ctx-dist), FlashInfer's load-balanced schedule:
 * every unit's keys are cut into chunks of one common size, so that a long request is
 * spread over many CTAs while short ones stay whole, and the chunks are listed longest
 * first, so that the hardware's in-order CTA dispatch packs them onto SMs as a
 * longest-processing-time schedule does. Host code; the kernels read the list. */
#ifndef ATTNBENCH_RAGGED_PLAN_H
#define ATTNBENCH_RAGGED_PLAN_H

#include <stdint.h>
#include "split_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A CTA's fixed cost (pipeline ramp, partial written and merged) in keys of streaming:
 * what one more chunk must save to pay. */
#define RAGGED_CTA_COST_KEYS 128
/* The plan with the fewest chunks within this factor of the best predicted time. */
#define RAGGED_SLACK 1.02
/* Chunks are never planned below the even spread of the work over the slots cut in this
 * many. */
#define RAGGED_SPREAD_CUTS 8

/* Chunks of `chunk` keys that keys take (at least one). */
static inline long ragged_chunks(int keys, int chunk) { return keys <= chunk ? 1 : (keys + chunk - 1) / chunk; }

/* The predicted time of chunk size `chunk`, in keys streamed by one CTA slot: the larger
 * of the whole work (CTA costs included) spread over the slots and the longest chunk. */
double ragged_plan_cost(const int *keys, int units, long per_unit, int chunk, long slots);

/* The same, replayed: each chunk's per_unit CTAs, longest chunk first, to the slot that
 * frees first, as the hardware dispatches the list; the busiest slot's keys. Grids of more
 * than RAGGED_SIMULATE_MAX CTAs (many waves, where the spread decides) get
 * ragged_plan_cost. */
#define RAGGED_SIMULATE_MAX (1L << 18)
double ragged_plan_makespan(const int *keys, int units, long per_unit, int chunk, long slots);

/* The common chunk (a multiple of tile) for units of keys[u] keys, each unit run by
 * per_unit CTAs side by side (kv heads, row tiles), on sms * ctas_per_sm slots: the
 * fewest chunks within RAGGED_SLACK of the best predicted time, no chunk below
 * SPLIT_MIN_KEYS unless the longest unit is shorter, at most max_splits chunks a unit,
 * by ragged_plan_makespan.
 * .splits is the most chunks any unit takes. */
split_plan_t ragged_plan_auto(const int *keys, int units, long per_unit, int tile, int sms, int ctas_per_sm,
                              int max_splits);
/* The plan of a chunk: .splits the most chunks of any unit. */
split_plan_t ragged_plan_of_chunk(const int *keys, int units, int chunk);

/* Pairs (unit, split) of every chunk, sum of ragged_chunks over units. */
long ragged_work_count(const int *keys, int units, int chunk);
/* Writes them into work[2 * count], longest chunk first (ties: unit, then split, in
 * order). 0, or -1 when memory runs out. */
int ragged_work_build(const int *keys, int units, int chunk, int32_t *work);

#ifdef __cplusplus
}
#endif
#endif
