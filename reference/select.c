/* Select-Attention's selection on the CPU (select.h). */
#include "select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "../problem/query_rows.h"

int reference_select_scores(const ref_source_t *src, int stream, double *scores)
{
    const problem_t *p = src->p;
    const int query = stream * p->q_len + p->q_len - 1, request = stream / p->beam;
    const int keys = query_key_end(kv_keys_of(&src->geom, stream), p->q_len, query);
    double *prob = malloc((size_t)(keys > 0 ? keys : 1) * sizeof *prob);
    /* each kv head's context, materialised once for the heads of its group */
    float *ctx = malloc((size_t)2 * (p->ctx > 0 ? p->ctx : 1) * p->head_dim * sizeof *ctx);
    int rc = prob && ctx ? keys : -1;
    for (int pos = 0; rc >= 0 && pos < keys; ++pos) scores[pos] = 0.0;
    const int group_heads = problem_group(p);
    for (int j = 0; rc >= 0 && j < p->kv_heads; ++j) {
        const ref_source_t group =
            !src->kv && !src->kv_ctx && p->ctx > 0 ? reference_with_ctx(src, request, j, ctx) : *src;
        for (int head = j * group_heads; rc >= 0 && head < (j + 1) * group_heads; ++head) {
            if (reference_probs(&group, query, head, prob) != keys) rc = -1;
            for (int pos = 0; rc >= 0 && pos < keys; ++pos) scores[pos] += prob[pos] / p->heads;
        }
    }
    free(prob);
    free(ctx);
    return rc;
}

typedef struct scored {
    double s;
    long i;
} scored_t;

static int by_score_down(const void *a, const void *b)
{
    const double x = ((const scored_t *)a)->s, y = ((const scored_t *)b)->s;
    return (x < y) - (x > y);
}

long reference_top_p(const double *s, long n, double p, unsigned char *chosen)
{
    scored_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) return -1;
    double total = 0.0;
    for (long i = 0; i < n; ++i) {
        order[i] = (scored_t){s[i], i};
        total += s[i];
    }
    qsort(order, (size_t)n, sizeof *order, by_score_down);
    /* the threshold: the score at which the descending sum first reaches p of the total */
    double sum = 0.0, threshold = n > 0 ? order[n - 1].s : 0.0;
    for (long i = 0; i < n; ++i) {
        sum += order[i].s;
        if (sum >= p * total) {
            threshold = order[i].s;
            break;
        }
    }
    long kept = 0;
    for (long i = 0; i < n; ++i) kept += chosen[i] = s[i] >= threshold;
    free(order);
    return kept;
}

int reference_top_p_judge(const double *s, long n, double p, const unsigned char *chosen, double eps, char *why,
                          size_t len)
{
    double total = 0.0, mass = 0.0, lowest_in = INFINITY, highest_out = -INFINITY;
    long kept = 0;
    for (long i = 0; i < n; ++i) {
        total += s[i];
        if (chosen[i]) {
            mass += s[i];
            ++kept;
            lowest_in = fmin(lowest_in, s[i]);
        } else {
            highest_out = fmax(highest_out, s[i]);
        }
    }
    /* scores compare within eps of their own size, masses within eps of the total */
    const double tie = lowest_in * (1.0 + eps);
    /* the mass strictly above the threshold (ties at it all go in) stays under p */
    double above = 0.0;
    for (long i = 0; i < n; ++i)
        if (chosen[i] && s[i] > tie) above += s[i];
    if (n > 0 && kept == 0) {
        snprintf(why, len, "no token chosen of %ld", n);
    } else if (highest_out > tie) {
        snprintf(why, len, "an unchosen score %.6g above a chosen %.6g: not a threshold set", highest_out, lowest_in);
    } else if (mass < (p - eps) * total) {
        snprintf(why, len, "the chosen %ld tokens hold %.6g of the scores, under p = %.4g", kept, mass / total, p);
    } else if (above >= (p + eps) * total) {
        snprintf(why, len, "the chosen above the lowest %.6g hold %.6g of the scores, p = %.4g already: not minimal",
                 lowest_in, above / total, p);
    } else {
        return 0;
    }
    return 1;
}
