/* The per-row log-sum-exp fold of partial softmax states, the one merge that every
 * merge of the kernels applies (state_merge.cuh). Plain C, compiled for host and
 * device, so that the CPU tests (tests/test_state_merge.c) check the code the GPU runs. */
#ifndef ATTNBENCH_STATE_MERGE_H
#define ATTNBENCH_STATE_MERGE_H

#include <math.h>
#include "../problem/hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A partial softmax state of one query row over a range of keys is its max logit m
 * (-inf: no keys), the sum l of exp(logit - m) and the unnormalised output acc (d
 * values). lse_fold folds a batch of n such states (state j: pm[j], pl[j],
 * pacc[j*d .. j*d + d)) into a running one in two passes: the batch's largest max
 * first, then every state's weight exp(m_j - max) at once, so the n exponentials do
 * not wait on each other as they would in a chain of pairwise merges (a split grid's
 * tail merge, tail_merge, is on the step's critical path). Empty states weigh
 * nothing; a batch of nothing but empty states leaves the running state as it was. */
HD void lse_fold(float *m, float *l, float *acc, int d, const float *pm, const float *pl, const float *pacc, int n)
{
    float mn = *m;
    for (int j = 0; j < n; ++j) mn = pm[j] > mn ? pm[j] : mn;
    if (mn == -INFINITY) return;
    const float f = expf(*m - mn); /* 0 while the running state is empty */
    *l *= f;
    for (int x = 0; x < d; ++x) acc[x] *= f;
    for (int j = 0; j < n; ++j) {
        const float w = expf(pm[j] - mn);
        *l += pl[j] * w;
        for (int x = 0; x < d; ++x) acc[x] += pacc[j * d + x] * w;
    }
    *m = mn;
}

#ifdef __cplusplus
}
#endif
#endif
