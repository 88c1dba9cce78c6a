/* The check of Select-Attention's filter step (select_check.h). */
#include "select_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../reference/select.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint64_t next_random(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 0 when stream s's set passes the judge against the reference's scores, 1 when it
 * fails (with its line on stderr), -1 when memory runs out. */
static int judge_stream(const ref_source_t *src, int s, const unsigned char *chosen, double *scores,
                        const result_row_t *row)
{
    const problem_t *p = src->p;
    const int keys = reference_select_scores(src, s, scores);
    if (keys < 0) return -1;
    char why[200];
    if (reference_top_p_judge(scores, keys, p->top_p, chosen, SELECT_CHECK_EPS, why, sizeof why) == 0) return 0;
    char what[160];
    problem_describe(p, what, sizeof what);
    fprintf(stderr, "attnbench: %s %s: stream %d's top-p %g set wrong: %s\n", row->kernel, what, s, p->top_p, why);
    return 1;
}

cudaError_t select_check(const attn_kernel_t *k, const attn_args_t *a, const ref_source_t *src, uint64_t seed,
                         double budget_s, result_row_t *row)
{
    const problem_t *p = &a->problem;
    const int streams = problem_streams(p), keys = problem_keys(p);
    unsigned char *chosen = malloc((size_t)streams * keys);
    double *scores = malloc((size_t)keys * sizeof *scores);
    cudaError_t e = chosen && scores ? k->selection(a, chosen) : cudaErrorMemoryAllocation;
    if (e == cudaSuccess) {
        long kept = 0;
        for (long i = 0; i < (long)streams * keys; ++i) kept += chosen[i];
        row->kept = (double)kept / ((double)streams * keys);
        /* the first and last stream, then random ones while the budget lasts */
        const double t0 = now_s();
        uint64_t rng = seed ^ 0x5e1ec7ull;
        int bad = 0;
        for (int n = 0; n < streams && !bad; ++n) {
            const int s = n == 0 ? 0 : n == 1 ? streams - 1 : (int)(next_random(&rng) % (uint64_t)streams);
            const int r = judge_stream(src, s, chosen + (size_t)s * keys, scores, row);
            if (r < 0) e = cudaErrorMemoryAllocation;
            bad = r != 0;
            if (n >= 1 && now_s() - t0 > budget_s) break;
        }
        if (bad) snprintf(row->status, sizeof row->status, "%s", "mismatch");
        if (bad) snprintf(row->verified, sizeof row->verified, "%s", "no");
    }
    free(chosen);
    free(scores);
    return e;
}
