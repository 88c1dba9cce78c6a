/* Summary statistics of a set of timing samples (SPEC §5: median, p10, p90, min,
 * max, noise). Pure C, no CUDA, so the CPU tests check it directly. */
#ifndef ATTNBENCH_STATS_H
#define ATTNBENCH_STATS_H

#include <stddef.h>

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

/* The stopping rule of the timed launches, nvbench's: launch until the relative
 * standard error of the mean (stddev / mean / sqrt(n)) is at most max_noise, after at
 * least min_iters launches, and stop anyway once the launches' summed time reaches
 * max_time_s or max_iters launches ran (the cap). */
typedef struct noise_rule {
    double max_noise;     /* relative standard error target, e.g. 0.005 */
    int min_iters;
    double max_time_s;    /* kernel time summed over the timed launches */
    int max_iters;
} noise_rule_t;

/* Relative standard error of the mean of n samples; 0 for n < 2. */
double stats_rel_stderr(const double *samples, int n);

/* How many more launches to run after n of them whose relative standard error is rse
 * and whose times sum to total_s: 0 when done (*capped then says whether the cap, not
 * the target, ended it). Aims at the count the noise so far says reaches the target,
 * at most doubling n per step, never past the cap. */
int stats_next_batch(const noise_rule_t *rule, int n, double rse, double total_s, int *capped);

/* The ratio over which a row's spread makes it noisy, and the fraction of the card's
 * maximum SM clock under which its launches count as throttled. */
#define NOISY_P90_OVER_P10 1.15
#define THROTTLED_CLOCK_FRACTION 0.9

/* The row's flags, ';'-separated in buf (empty when none): "noisy" when the cap ended
 * the launches above the target or p90/p10 exceeds NOISY_P90_OVER_P10; "throttled"
 * when the mean SM clock sm_mhz is under THROTTLED_CLOCK_FRACTION of max_sm_mhz (an
 * unknown clock, NaN or <= 0, flags nothing). */
void stats_flags(const sample_summary_t *s, int capped_above_target, double sm_mhz,
                 double max_sm_mhz, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
