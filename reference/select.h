/* Select-Attention's selection on the CPU: the scores that rank a stream's context tokens
 * at the filter layer, the top-p set of them (problem/top_p.h defines it), and the judge of
 * a set found elsewhere (the GPU's, from scores in float) against the reference's scores. */
#ifndef ATTNBENCH_REFERENCE_SELECT_H
#define ATTNBENCH_REFERENCE_SELECT_H

#include <stddef.h>
#include "reference.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The filter layer's scores of stream `stream`: its current (last) query token's softmax
 * weights over the keys it attends to, averaged over the heads: scores[pos] for pos
 * below the returned count (the stream's keys), or -1. */
int reference_select_scores(const ref_source_t *src, int stream, double *scores);

/* The top-p set of n scores (>= 0) in double, by sorting: chosen[i] = 1 for the tokens in
 * it. Returns its size, or -1 when memory runs out. */
long reference_top_p(const double *s, long n, double p, unsigned char *chosen);

/* 0 when chosen[] is the top-p set of s up to a relative eps: a threshold set (no
 * unchosen score above the lowest chosen by more than eps of it), whose mass reaches
 * p - eps of the total, and minimal (the chosen above the lowest, ties within eps aside,
 * hold under p + eps). Else 1, and why says which in one line. */
int reference_top_p_judge(const double *s, long n, double p, const unsigned char *chosen, double eps, char *why,
                          size_t len);

#ifdef __cplusplus
}
#endif
#endif
