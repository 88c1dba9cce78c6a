#include "ragged_plan.h"

#include <stdlib.h>

double ragged_plan_cost(const int *keys, int units, long per_unit, int chunk, long slots)
{
    double work = 0.0, longest = 0.0;
    for (int u = 0; u < units; ++u) {
        const long n = ragged_chunks(keys[u], chunk);
        work += (double)per_unit * ((double)keys[u] + (double)n * RAGGED_CTA_COST_KEYS);
        const double first = keys[u] < chunk ? keys[u] : chunk;
        if (first + RAGGED_CTA_COST_KEYS > longest) longest = first + RAGGED_CTA_COST_KEYS;
    }
    const double spread = work / (double)(slots > 0 ? slots : 1);
    return spread > longest ? spread : longest;
}

static int by_length_down(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* Sifts slot i of a min-heap of loads down. */
static void heap_down(double *h, long n, long i)
{
    for (;;) {
        long l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m]) m = l;
        if (r < n && h[r] < h[m]) m = r;
        if (m == i) return;
        double t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

double ragged_plan_makespan(const int *keys, int units, long per_unit, int chunk, long slots)
{
    const long n = ragged_work_count(keys, units, chunk);
    if (slots < 1 || n * per_unit > RAGGED_SIMULATE_MAX) return ragged_plan_cost(keys, units, per_unit, chunk, slots);
    int *len = malloc((size_t)n * sizeof *len);
    double *load = calloc((size_t)slots, sizeof *load);
    if (!len || !load) {
        free(len);
        free(load);
        return ragged_plan_cost(keys, units, per_unit, chunk, slots);
    }
    long k = 0;
    for (int u = 0; u < units; ++u)
        for (long s = 0, m = ragged_chunks(keys[u], chunk); s < m; ++s) {
            const long left = keys[u] - s * chunk;
            len[k++] = (int)(left < chunk ? left : chunk);
        }
    qsort(len, (size_t)k, sizeof *len, by_length_down);
    /* each CTA to the slot that frees first: the root of the heap */
    for (long e = 0; e < k; ++e)
        for (long c = 0; c < per_unit; ++c) {
            load[0] += (double)len[e] + RAGGED_CTA_COST_KEYS;
            heap_down(load, slots, 0);
        }
    double most = 0.0;
    for (long i = 0; i < slots; ++i)
        if (load[i] > most) most = load[i];
    free(len);
    free(load);
    return most;
}

static int longest_of(const int *keys, int units)
{
    int longest = 1;
    for (int u = 0; u < units; ++u)
        if (keys[u] > longest) longest = keys[u];
    return longest;
}

split_plan_t ragged_plan_of_chunk(const int *keys, int units, int chunk)
{
    split_plan_t s;
    s.chunk = chunk;
    s.splits = (int)ragged_chunks(longest_of(keys, units), chunk);
    return s;
}

split_plan_t ragged_plan_auto(const int *keys, int units, long per_unit, int tile, int sms, int ctas_per_sm,
                              int max_splits)
{
    const int longest = longest_of(keys, units);
    const long slots = (long)sms * ctas_per_sm;
    int limit = longest / SPLIT_MIN_KEYS;
    if (limit > max_splits) limit = max_splits;
    /* chunks far below the even spread of the work over the slots cannot shorten the
     * step: they only add CTAs (and keep the replay cheap) */
    double work = 0.0;
    for (int u = 0; u < units; ++u) work += (double)keys[u] * per_unit;
    const double spread = work / (double)(slots > 0 ? slots : 1);
    while (limit > 1 && split_plan_fixed(longest, limit, tile).chunk < spread / RAGGED_SPREAD_CUTS) --limit;
    if (limit < 1) limit = 1;
    /* candidates: the chunk that cuts the longest unit into k, for k = 1 .. limit */
    double best = 0.0;
    for (int k = 1; k <= limit; ++k) {
        const int chunk = split_plan_fixed(longest, k, tile).chunk;
        const double c = ragged_plan_makespan(keys, units, per_unit, chunk, slots);
        if (k == 1 || c < best) best = c;
    }
    for (int k = 1; k <= limit; ++k) {
        const int chunk = split_plan_fixed(longest, k, tile).chunk;
        if (ragged_plan_makespan(keys, units, per_unit, chunk, slots) <= RAGGED_SLACK * best)
            return ragged_plan_of_chunk(keys, units, chunk);
    }
    return ragged_plan_of_chunk(keys, units, split_plan_fixed(longest, 1, tile).chunk);
}

long ragged_work_count(const int *keys, int units, int chunk)
{
    long n = 0;
    for (int u = 0; u < units; ++u) n += ragged_chunks(keys[u], chunk);
    return n;
}

typedef struct work_entry { int len, unit, split; } work_entry_t;

static int longest_first(const void *a, const void *b)
{
    const work_entry_t *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
    return (x->split > y->split) - (x->split < y->split);
}

int ragged_work_build(const int *keys, int units, int chunk, int32_t *work)
{
    const long n = ragged_work_count(keys, units, chunk);
    work_entry_t *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
    if (!e) return -1;
    long k = 0;
    for (int u = 0; u < units; ++u)
        for (long s = 0; s < ragged_chunks(keys[u], chunk); ++s) {
            const long left = keys[u] - s * chunk;
            e[k].len = (int)(left < chunk ? left : chunk);
            e[k].unit = u;
            e[k].split = (int)s;
            ++k;
        }
    qsort(e, (size_t)n, sizeof *e, longest_first);
    for (long i = 0; i < n; ++i) {
        work[2 * i] = e[i].unit;
        work[2 * i + 1] = e[i].split;
    }
    free(e);
    return 0;
}
