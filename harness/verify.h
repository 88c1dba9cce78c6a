/* The judgement of one kernel output against the CPU reference (SPEC §7), as pure
 * host functions over host buffers, so that the CPU tests plant faults in them.
 * Each output row (one stream's one query head, d values) is judged on its own:
 * the worst row's relative L2 error decides, a single element off by more than the
 * absolute bound fails, and every element of the whole output must be finite. */
#ifndef ATTNBENCH_VERIFY_H
#define ATTNBENCH_VERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include "../problem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows checked against the reference: all of them, or at least this many. */
#define VERIFY_MIN_ROWS 4096

typedef struct verify_verdict {
    double worst_rel;    /* largest relative L2 error of a checked row (+inf: non-finite) */
    long worst_row;      /* that row's index (stream * heads + head), -1 when none */
    double max_abs;      /* largest absolute error of an element of the checked rows */
    long checked;        /* rows compared with the reference */
    long nonfinite;      /* NaN or Inf elements anywhere in the output */
    bool ok;
} verify_verdict_t;

/* The largest absolute error an element may show: tol * amplitude, where amplitude
 * bounds |V| (the output is a convex combination of V rows, so it bounds |o| too).
 * The rounding an exact kernel can add per element is about one unit in the last
 * place of the dtype against that amplitude (output rounding, P rounded to the input
 * dtype before P.V), each at most eps/2 * amplitude; tol is 4 such units for fp16 and
 * bf16 and far more for fp32. The per-row L2 test dilutes one wrong element over d;
 * this bound does not. */
double verify_abs_bound(dtype_t t, double amplitude);

/* Fills at[0..n) with distinct row indices, n = min(rows, want): first the strata
 * (first and last request, and in a ragged batch its longest and shortest; first and
 * last stream of a request; first and last head; crossed), then rows drawn at random without repetition (seeded). rows = streams *
 * heads, stream = request * beam + w. Returns n, or -1 when memory runs out. */
long verify_pick_rows(const problem_t *p, long want, uint64_t seed, long *at);

/* Seconds of a monotonic clock: what a verification budget is measured against. */
double verify_seconds_now(void);

/* Judges got (the whole output: rows * d floats) against want (n checked rows of
 * d doubles, row i being output row at[i]): every element of got scanned for NaN/Inf,
 * each checked row's relative L2 error against tol, its elements against abs_bound. */
void verify_judge(const float *got, long rows, int d, const long *at, const double *want,
                  long n, double tol, double abs_bound, verify_verdict_t *v);

#ifdef __cplusplus
}
#endif
#endif
