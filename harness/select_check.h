/* The check of Select-Attention's filter step: the top-p sets a kernel chose
 * (attn_kernel_t.selection) against the CPU reference's scores (reference/select.h). */
#ifndef ATTNBENCH_SELECT_CHECK_H
#define ATTNBENCH_SELECT_CHECK_H

#include <stdint.h>
#include "../kernels/registry.h"
#include "../reference/reference.h"
#include "../report/csv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The relative tolerance of the judge: the GPU's scores and their masses are sums in
 * float of the same stored inputs, within about 1e-5 of the reference's in double. */
#define SELECT_CHECK_EPS 1e-3

/* The fraction of the problem's keys that the sets chosen[streams][keys] keep. */
double select_kept(const problem_t *p, const unsigned char *chosen);

/* Judges a launch's sets chosen[streams][keys] (attn_kernel_t.selection): those of the
 * first and last stream, then random streams, as many as budget_s seconds of reference
 * allow (every stream where they fit). A set that fails makes the row a mismatch, with
 * one line on stderr naming the stream and the rule. src is the reference's source of the
 * launch's inputs. Returns 0, or -1 when memory runs out. */
int select_check(const ref_source_t *src, const unsigned char *chosen, uint64_t seed, double budget_s,
                 result_row_t *row);

#ifdef __cplusplus
}
#endif
#endif
