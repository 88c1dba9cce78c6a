/* Summary statistics of a set of timing samples (SPEC §5: median, p10, p90, min,
 * max, noise). Pure C, no CUDA, so the CPU tests check it directly. */
#ifndef ATTNBENCH_STATS_H
#define ATTNBENCH_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sample_summary {
    int n;
    double median, p10, p90, min, max;
    double noise;   /* relative standard deviation: sample stddev (n - 1) / mean; 0 for n = 1 */
} sample_summary_t;

/* Summarises n samples (any order; samples itself is left unmodified, a sorted
 * copy is made). Returns 0, or -1 when n < 1, a pointer is NULL or the copy
 * cannot be allocated (out then holds zeros). */
int stats_summarize(const double *samples, int n, sample_summary_t *out);

/* The mean clock in MHz between two readings (ns of a nanosecond timer, cycles of a
 * cycle counter): cycles per microsecond. NaN when a reading is missing (its timer
 * zero) or the second is not after the first. */
double stats_clock_mhz(unsigned long long ns0, unsigned long long cycles0, unsigned long long ns1,
                       unsigned long long cycles1);

#ifdef __cplusplus
}
#endif
#endif
