/* The check of a kernel that attends to K/V it computed in its step (attn_kernel_t.own_kv:
 * select-recompute). Its K/V are read back; the recomputation itself is checked on
 * sampled tokens against x W in double (reference/recompute.h), and the output's
 * reference then attends to the K/V as read back (recompute_source), so that each stage
 * is judged against what it was given. */
#ifndef ATTNBENCH_RECOMPUTE_CHECK_H
#define ATTNBENCH_RECOMPUTE_CHECK_H

#include <stdint.h>
#include "../kernels/registry.h"
#include "../reference/reference.h"
#include "../report/csv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A launch's own K/V on the host, and the problem of attention over them: each stream a
 * request of one stream whose `rows` keys are the recomputed rows (ctx 0, gen rows,
 * contiguous), attending to the first counts[s] (mask). */
typedef struct own_kv_host {
    float *kv;              /* [streams][2][g][rows][d] */
    int rows;
    int *counts;            /* [streams] */
    int *index;             /* [streams][keys]: the key position of each row */
    unsigned char *mask;    /* [streams][rows]: row i < counts[s] */
    problem_t p;
    kv_geometry_t geom;
} own_kv_host_t;

/* With h's kv, rows, counts and index set: its mask and the problem and geometry of
 * attention over its rows (p and geom the row's). -1 when memory runs out or a count is
 * out of range. */
int own_kv_shape(own_kv_host_t *h, const problem_t *p, const kv_geometry_t *geom);

/* Reads the own K/V of the launch that just ran (own_kv's description) into h, shaped.
 * Returns cudaErrorMemoryAllocation when host memory runs out. */
cudaError_t own_kv_fetch(const attn_own_kv_t *own, const problem_t *p, const kv_geometry_t *geom, own_kv_host_t *h);
void own_kv_free(own_kv_host_t *h);

/* Bound of |got - want| for a recomputed element: the rounding of the output to the dtype
 * (half an ulp, relative) and of a float sum of `hidden` products (scale = their
 * magnitudes' sum, problem/recompute.h). */
double recompute_bound(dtype_t t, int hidden, double want, double scale);

/* Judges the rows of sampled kept tokens: the first and last of the first and last
 * stream, then random ones while budget_s lasts. A wrong element makes the row a
 * mismatch, with one line on stderr naming it. geom and indirection are the problem's
 * (the tokens' identities). Returns 0, or -1 when memory runs out. */
int recompute_check(const own_kv_host_t *h, const problem_t *p, const kv_geometry_t *geom,
                    const int32_t *indirection, uint64_t seed, double budget_s, result_row_t *row);

/* The reference's source of the output: attention over the K/V as read back. */
ref_source_t recompute_source(const own_kv_host_t *h, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
