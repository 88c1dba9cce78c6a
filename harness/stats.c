#include "stats.h"
#include "stats_internal.h"

#include <math.h>
#include <stdio.h>
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

double stats_rel_stderr(const double *samples, int n)
{
    if (n < 2) return 0.0;
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < n; ++i) sum += samples[i];
    double mean = sum / n;
    for (int i = 0; i < n; ++i) sq += (samples[i] - mean) * (samples[i] - mean);
    return mean != 0.0 ? sqrt(sq / (n - 1)) / fabs(mean) / sqrt((double)n) : 0.0;
}

int stats_next_batch(const noise_rule_t *rule, int n, double rse, double total_s, int *capped)
{
    *capped = 0;
    if (n < rule->min_iters) return rule->min_iters - n;
    if (rse <= rule->max_noise) return 0;
    if (total_s >= rule->max_time_s || n >= rule->max_iters) {
        *capped = 1;
        return 0;
    }
    /* rse falls as 1 / sqrt(n): n * (rse / target)^2 launches reach the target */
    double want = n * (rse / rule->max_noise) * (rse / rule->max_noise) - n;
    double by_time = n * (rule->max_time_s - total_s) / total_s;
    if (want > n) want = n;
    if (total_s > 0 && want > by_time) want = by_time;
    if (want > rule->max_iters - n) want = rule->max_iters - n;
    return want < 1 ? 1 : (int)ceil(want);
}

void stats_flags(const sample_summary_t *s, int capped_above_target, double sm_mhz,
                 double max_sm_mhz, char *buf, size_t len)
{
    int noisy = capped_above_target || (s->p10 > 0 && s->p90 / s->p10 > NOISY_P90_OVER_P10);
    int throttled = sm_mhz > 0 && max_sm_mhz > 0 && sm_mhz < THROTTLED_CLOCK_FRACTION * max_sm_mhz;
    snprintf(buf, len, "%s%s%s", noisy ? "noisy" : "", noisy && throttled ? ";" : "",
             throttled ? "throttled" : "");
}
