/* The check of Select-Attention's filter step (select_check.h). */
#include "select_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"
#include "../problem/logical_data.h"
#include "../reference/select.h"

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

double select_kept(const problem_t *p, const unsigned char *chosen)
{
    const long n = (long)problem_streams(p) * problem_keys(p);
    long kept = 0;
    for (long i = 0; i < n; ++i) kept += chosen[i];
    return n > 0 ? (double)kept / n : 0.0;
}

int select_check(const ref_source_t *src, const unsigned char *chosen, uint64_t seed, double budget_s,
                 result_row_t *row)
{
    const problem_t *p = src->p;
    const int streams = problem_streams(p), keys = problem_keys(p);
    double *scores = malloc((size_t)keys * sizeof *scores);
    if (!scores) return -1;
    /* the first and last stream, then random ones while the budget lasts */
    const double t0 = verify_seconds_now();
    int bad = 0, rc = 0;
    for (int n = 0; n < streams && !bad; ++n) {
        const int s = n == 0 ? 0 : n == 1 ? streams - 1 : (int)(splitmix64(seed ^ 0x5e1ec7ull ^ (uint64_t)n) % (uint64_t)streams);
        const int r = judge_stream(src, s, chosen + (size_t)s * keys, scores, row);
        if (r < 0) rc = -1;
        bad = r != 0;
        if (n >= 1 && verify_seconds_now() - t0 > budget_s) break;
    }
    if (bad && rc == 0) {
        snprintf(row->status, sizeof row->status, "%s", "mismatch");
        snprintf(row->verified, sizeof row->verified, "%s", "no");
    }
    free(scores);
    return rc;
}
