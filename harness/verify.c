#include "verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../problem/logical_data.h"
#include "../reference/reference.h"

double verify_abs_bound(dtype_t t, double amplitude) { return tolerance_for(t) * amplitude; }

/* Marks row r as picked and appends it, unless it was picked already. */
static void take(long r, unsigned char *picked, long *at, long *n)
{
    if (picked[r]) return;
    picked[r] = 1;
    at[(*n)++] = r;
}

long verify_pick_rows(const problem_t *p, long want, uint64_t seed, long *at)
{
    long heads = p->heads, rows = (long)problem_queries(p) * heads;
    if (want >= rows) {
        for (long i = 0; i < rows; ++i) at[i] = i;
        return rows;
    }
    unsigned char *picked = calloc((size_t)rows, 1);
    if (!picked) return -1;
    long n = 0;
    /* a ragged batch's longest and shortest requests are strata too (the first of each) */
    long requests[4] = {0, p->batch - 1, 0, 0}, beams[2] = {0, p->beam - 1}, hs[2] = {0, heads - 1};
    long tokens[2] = {0, p->q_len - 1}; /* the first query token sees the fewest keys, the last all */
    for (int b = 1; b < p->batch && problem_ragged(p); ++b) {
        if (problem_ctx_len(p, b) > problem_ctx_len(p, (int)requests[2])) requests[2] = b;
        if (problem_ctx_len(p, b) < problem_ctx_len(p, (int)requests[3])) requests[3] = b;
    }
    for (int b = 0; b < 4; ++b)
        for (int w = 0; w < 2; ++w)
            for (int j = 0; j < 2; ++j)
                for (int h = 0; h < 2 && n < want; ++h)
                    take(((requests[b] * p->beam + beams[w]) * p->q_len + tokens[j]) * heads + hs[h], picked, at, &n);
    /* the rest at random; want < rows, so an unpicked row is always left */
    for (uint64_t i = 0; n < want; ++i)
        take((long)(splitmix64(seed + i) % (uint64_t)rows), picked, at, &n);
    free(picked);
    return n;
}

void verify_judge(const float *got, long rows, int d, const long *at, const double *want,
                  long n, double tol, double abs_bound, verify_verdict_t *v)
{
    memset(v, 0, sizeof *v);
    v->worst_row = -1;
    for (size_t i = 0, all = (size_t)rows * d; i < all; ++i)
        if (!isfinite(got[i])) v->nonfinite++;
    for (long i = 0; i < n; ++i) {
        err_acc_t acc = {0};
        err_add(&acc, want + (size_t)i * d, got + (size_t)at[i] * d, d);
        double rel = err_rel(&acc);
        /* a NaN error (a NaN reference) is the worst and stays so */
        if (v->worst_row < 0 || (isnan(rel) && !isnan(v->worst_rel)) || rel > v->worst_rel) {
            v->worst_rel = rel;
            v->worst_row = at[i];
        }
        if (acc.max_abs > v->max_abs) v->max_abs = acc.max_abs;
    }
    v->checked = n;
    v->ok = n > 0 && v->nonfinite == 0 && v->worst_rel <= tol && v->max_abs <= abs_bound;
}

double verify_seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
