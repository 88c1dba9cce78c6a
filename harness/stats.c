#include "stats.h"
#include "stats_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_quantile_sorted(const double *sorted, int n, double q)
{
    if (q <= 0.0) return sorted[0];
    if (q >= 1.0) return sorted[n - 1];
    double pos = (n - 1) * q;
    int lo = (int)floor(pos);
    if (lo >= n - 1) return sorted[n - 1];
    double frac = pos - lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int stats_summarize(const double *samples, int n, sample_summary_t *out)
{
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    if (!samples || n < 1) return -1;
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return -1;
    memcpy(sorted, samples, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_double);

    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += sorted[i];
    double mean = sum / n;
    /* Two-pass variance: the samples are close together, so summing squares
     * directly would cancel badly. */
    double sq = 0.0;
    for (int i = 0; i < n; ++i) sq += (sorted[i] - mean) * (sorted[i] - mean);

    out->n = n;
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->median = stats_quantile_sorted(sorted, n, 0.5);
    out->p10 = stats_quantile_sorted(sorted, n, 0.1);
    out->p90 = stats_quantile_sorted(sorted, n, 0.9);
    out->noise = (n > 1 && mean != 0.0) ? sqrt(sq / (n - 1)) / fabs(mean) : 0.0;
    free(sorted);
    return 0;
}

double stats_clock_mhz(unsigned long long ns0, unsigned long long cycles0, unsigned long long ns1,
                       unsigned long long cycles1)
{
    if (ns0 == 0 || ns1 == 0 || ns1 <= ns0 || cycles1 <= cycles0)
        return NAN;
    return 1e3 * (double)(cycles1 - cycles0) / (double)(ns1 - ns0);
}
