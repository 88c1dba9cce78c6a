/* What reference.c exposes to its tests only: a second formulation that the tests
 * hold reference_row to.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_REFERENCE_INTERNAL_H
#define ATTNBENCH_REFERENCE_INTERNAL_H

#include "reference.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bifurcated-attention paper's formulation (its Appendix E): logits against the
 * context part and the decoded part computed separately, one softmax over their
 * concatenation, the two weighted sums of V added. Same inputs, same result.
 * Reads the bifurcated buffers when the geometry is LAYOUT_BIFURCATED and both are
 * set, other layouts' buffers through kv_row_offset, else the logical definition.
 * query: as reference_row's (stream * q_len + j). */
void reference_row_bifurcated(const ref_source_t *src, int query, int head, double *out);

/* n plain K/V values of logical tensor `tensor` (KV_AMPLITUDE) from index base on:
 * logical_value(seed, tensor, base + x, KV_AMPLITUDE) for x < n, the fast way
 * reference_ctx_fill fills a row of plain data. */
void reference_plain_row(uint64_t seed, int tensor, uint64_t base, int n, float *row);

/* What an 8-bit cache of geometry g stores (kv_store) for each logical code k of K or V
 * (which) of kv head `head`, at table[k + 127]: a value that is not a key of peaked scores
 * is k/128 times its tensor's amplitude, so what is stored depends on k alone. */
void reference_stored_codes(const kv_geometry_t *g, int which, int head, float table[255]);

#ifdef __cplusplus
}
#endif
#endif
