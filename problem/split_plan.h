/* Split-KV (multi-block) planning, shared by kernels and host so that the CPU tests
 * exercise the same code the GPU runs. */
#ifndef ATTNBENCH_SPLIT_PLAN_H
#define ATTNBENCH_SPLIT_PLAN_H

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

/* Two parts of one step side by side on separate SMs, as bifurcated attention can run
 * them: a part bound by tensor-core work, `items` work items of item_us each on one
 * SM, taken in turn by a persistent grid of one CTA per SM; and a memory-bound part
 * of `bytes` that streams on the SMs the first leaves, at up to sm_rate bytes/us per
 * SM and full_rate in all, and on every SM once the first part is done. Giving the
 * first part fewer SMs than its fewest rounds need pays where the second part gets
 * more from the SMs it gains than the first loses (when one SM streams faster than
 * its even share of full_rate) and than a split costs by itself, split_us. The SMs
 * for the first part that end the step soonest, or 0 where no split beats the
 * fewest rounds on the whole GPU; and that end. Only the counts ceil(items / rounds)
 * are candidates: any other count takes as many rounds and leaves fewer SMs. */
typedef struct sm_split {
    int sms;      /* SMs of the tensor-core part; 0: no split */
    double us;    /* predicted end of the step */
} sm_split_t;

HD double sm_split_us(long items, double item_us, double bytes, double sm_rate, double full_rate, int sms,
                      long rounds)
{
    long n = (items + rounds - 1) / rounds;
    double ctx_us = (double)rounds * item_us;
    double rate = (double)(sms - n) * sm_rate;
    if (rate > full_rate) rate = full_rate;
    double left = bytes - ctx_us * rate;
    return ctx_us + (left > 0.0 ? left / full_rate : 0.0);
}

HD sm_split_t sm_split_plan(long items, double item_us, double bytes, double sm_rate, double full_rate, int sms,
                           double split_us)
{
    sm_split_t best;
    best.sms = 0;
    best.us = 0.0;
    if (items < 1 || sms < 1) return best;
    const long first = (items + sms - 1) / sms;
    best.us = sm_split_us(items, item_us, bytes, sm_rate, full_rate, sms, first);
    for (long rounds = first + 1; rounds <= items && (double)rounds * item_us + split_us < best.us; ++rounds) {
        long n = (items + rounds - 1) / rounds;
        if (n == (items + rounds - 2) / (rounds - 1)) continue; /* the same count as one round fewer */
        double us = split_us + sm_split_us(items, item_us, bytes, sm_rate, full_rate, sms, rounds);
        if (us < best.us) {
            best.sms = (int)n;
            best.us = us;
        }
    }
    return best;
}

#ifdef __cplusplus
}
#endif
#endif
