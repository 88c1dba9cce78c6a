/* Split-KV (multi-block) planning and the log-sum-exp merge, shared by kernels and
 * host so that the CPU tests exercise the same code the GPU runs. */
#ifndef ATTNBENCH_SPLIT_PLAN_H
#define ATTNBENCH_SPLIT_PLAN_H

#include <math.h>
#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct split_plan {
    int splits;   /* chunks the keys of one (stream, kv head) are cut into; 1 = no split */
    int chunk;    /* keys per chunk, a multiple of the kernel's key tile; last chunk may be shorter */
} split_plan_t;

/* Splits below this many keys each cost more in merging than they gain in parallelism. */
#define SPLIT_MIN_KEYS 256
#define SPLIT_MAX 256 /* the planner never goes past this */

/* Exactly `splits` requested; fewer when there are not that many tiles of keys
 * (every chunk holds at least one key, so more splits than work is never launched). */
HD split_plan_t split_plan_fixed(int keys, int splits, int tile)
{
    split_plan_t s;
    if (keys < 1) keys = 1;
    if (splits < 1) splits = 1;
    int per = (keys + splits - 1) / splits;
    s.chunk = (per + tile - 1) / tile * tile;
    s.splits = (keys + s.chunk - 1) / s.chunk;
    return s;
}

/* Fraction of the last wave's slots that hold work, over all waves: 1.0 when the
 * CTAs fill whole waves of (sms * ctas_per_sm) slots. */
HD double split_wave_efficiency(long ctas, int sms, int ctas_per_sm)
{
    long slots = (long)sms * ctas_per_sm;
    if (slots < 1 || ctas < 1) return 0.0;
    long waves = (ctas + slots - 1) / slots;
    return (double)ctas / (double)(waves * slots);
}

/* Wave-efficiency rule (as FlashDecoding and FlashInfer plan it): among split counts
 * whose chunks keep at least SPLIT_MIN_KEYS keys, take the smallest whose grid fills
 * the GPU's CTA slots to within 5% of the best achievable; splitting further only
 * adds merge work. `items` is the number of independent (stream, kv head) pieces. */
HD split_plan_t split_plan_auto(long items, int keys, int tile, int sms, int ctas_per_sm)
{
    int max_splits = keys / SPLIT_MIN_KEYS;
    if (max_splits < 1) max_splits = 1;
    if (max_splits > SPLIT_MAX) max_splits = SPLIT_MAX;
    double best = 0.0;
    for (int s = 1; s <= max_splits; ++s) {
        split_plan_t p = split_plan_fixed(keys, s, tile);
        double e = split_wave_efficiency(items * p.splits, sms, ctas_per_sm);
        if (e > best) best = e;
    }
    for (int s = 1; s <= max_splits; ++s) {
        split_plan_t p = split_plan_fixed(keys, s, tile);
        if (split_wave_efficiency(items * p.splits, sms, ctas_per_sm) >= 0.95 * best) return p;
    }
    return split_plan_fixed(keys, 1, tile);
}

/* Partial softmax state of one query row over a chunk of keys: running max m,
 * sum of exp(logit - m) l, and the unnormalised output acc (d values). */
HD void lse_merge(float *m, float *l, float *acc, float m2, float l2, const float *acc2, int d)
{
    float mn = *m > m2 ? *m : m2;
    if (mn == -INFINITY) return; /* both empty */
    float a = expf(*m - mn), b = expf(m2 - mn);
    *l = *l * a + l2 * b;
    for (int i = 0; i < d; ++i) acc[i] = acc[i] * a + acc2[i] * b;
    *m = mn;
}

#ifdef __cplusplus
}
#endif
#endif
