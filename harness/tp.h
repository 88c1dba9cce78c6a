/* --tp N, the paper's tensor parallelism (docs/SHARDING.md): the heads of a step split
 * over N GPUs, each running its share at the same time. These are the CPU parts: the
 * share of a GPU and the row of the step from the rows of its shares. */
#ifndef ATTNBENCH_TP_H
#define ATTNBENCH_TP_H

#include <stddef.h>
#include "../problem/problem.h"
#include "../report/csv.h"

/* The most GPUs --tp splits a step over (tp_us holds one time each). */
#define TP_MAX 8

/* The problem one GPU of p->tp runs: heads/tp query heads and kv_heads/tp kv heads (every
 * GPU's share is alike), tp 1. p must have passed problem_validate (tp divides both). */
problem_t tp_share(const problem_t *p);

/* Each GPU's median joined by ';' in GPU order, "%.3f" as median_us is written ("nan"
 * for a share that measured none). 0, or -1 where buf is too short. */
int tp_format_us(const double *median_us, int n, char *buf, size_t len);

/* The row of the step from its n shares' rows (share i ran on the i-th GPU). `step`
 * holds the step's description (runner_describe_unplanned of the whole problem, tp n);
 * its measurements become: median_us the max of the shares' medians (the step waits for
 * its slowest GPU), the other times, iters, noise, sm_mhz and flags the slowest share's;
 * bytes, unique_bytes, workspace_bytes and flops the sum over the shares; gbps the whole
 * step's bytes over its median; pct_peak_bw and pct_spec_bw against n GPUs' peaks;
 * roofline_us the slowest share's; tp_us each share's median. Status: ok only where
 * every share is ok, else the first share's that is not; verified: yes only where every
 * share is yes, no where one is no, else skip; errors the largest. */
void tp_combine(const result_row_t *shares, int n, result_row_t *step);

#endif
