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

/* Copies the last launch's sets, records the mean fraction of keys kept in row->kept,
 * and judges the sets of the first and last stream and then random streams, as many as
 * budget_s seconds of reference allow (every stream where they fit). A set that fails
 * makes the row a mismatch, with one line on stderr naming the stream and the rule.
 * src is the reference's source of the launch's inputs. Returns the copy's error, or
 * cudaErrorMemoryAllocation. */
cudaError_t select_check(const attn_kernel_t *k, const attn_args_t *a, const ref_source_t *src, uint64_t seed,
                         double budget_s, result_row_t *row);

#ifdef __cplusplus
}
#endif
#endif
