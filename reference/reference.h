/* The CPU reference every kernel is checked against: plain attention in double
 * precision, reading its inputs either from their logical definition or from
 * host copies of the very buffers a kernel reads. */
#ifndef ATTNBENCH_REFERENCE_H
#define ATTNBENCH_REFERENCE_H

#include <stdint.h>
#include "../problem/problem.h"
#include "../problem/kv_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest head dimension the reference handles (problem_validate's limit). */
#define REF_MAX_HEAD_DIM 256

typedef struct ref_source {
    const problem_t *p;
    kv_geometry_t geom;
    uint64_t seed;                 /* q is kv_query(seed, ...): logical_q, or peaked */
    const float *kv;               /* materialised contiguous cache or paged pool, or NULL */
    const float *kv_ctx, *kv_dec;  /* materialised bifurcated buffers, or NULL */
    const int32_t *block_table;    /* paged */
    const int32_t *indirection;    /* [B, W, L] or NULL */
    /* Logical sources only, optional: the context K and V of request ctx_request, kv
     * head ctx_head as reference_ctx_fill wrote them. Rows of that request and kv head
     * read their context from it, the same values without computing each again, so
     * that many rows of one group cost one materialisation. */
    const float *ctx_kv;
    int ctx_request, ctx_head;
    /* Share-Attention (problem/share_map.h), or NULL for exact attention: [h], the head
     * whose query and K (its kv head's) give head i its weights; V stays head i's own. */
    const int *share_to;
    /* Select-Attention's selected step, or NULL for every key: [streams][keys of the
     * problem], 1 where the stream attends to the key (the filter step's top-p set). */
    const unsigned char *key_mask;
    /* An 8-bit cache, optional: [2][g][255], what the cache stores for each logical code k
     * (-127..127) of K or V of each kv head, at k + 127 (a value that is not a key of peaked
     * scores is k/128 times its tensor's amplitude); reference_rows sets it, so that its
     * rows map codes instead of quantising every element. */
    const float *codes;
} ref_source_t;

/* Writes the context K then V of one request and kv head as the cache holds them
 * (kv_fill.h kv_store: the logical values, or an 8-bit cache's codes' values): 2 * ctx * d
 * floats, exact; of a ragged batch's request, its own length's rows of each (at the
 * stride of the longest). */
void reference_ctx_fill(const ref_source_t *src, int request, int kv_head, float *buf);

/* src with the context of (request, kv_head) materialised in buf (reference_ctx_fill,
 * 2 * ctx * d floats) as its ctx_kv: the rows of that group read it instead of
 * computing each value again. */
ref_source_t reference_with_ctx(const ref_source_t *src, int request, int kv_head, float *buf);

/* Standard attention of one (query token, query head): query = stream * q_len + j (with
 * q_len 1, the stream), attending to the first problem_keys_of_token(p, j) keys of its
 * stream (causal among the stream's q_len query tokens). Double accumulation, softmax with
 * max subtraction, scale = problem_scale(p), kv head = head / (h/g). With key_mask set, only
 * the keys it marks for the stream, the others weigh 0. With share_to set,
 * the weights are those of head share_to[head] (its query, its kv head's K), applied to
 * this head's V. With no buffers
 * set, K/V come straight from the logical definition (kv_fill.h kv_stored) read through
 * kv_source_stream (indirection); with buffers, through kv_row_offset. An 8-bit cache's
 * rows (codes' values, from either) are dequantised as the kernels do: each value times
 * its tensor's and kv head's scale (kv_quant.h), in double. out: d doubles.
 * With --step append the query is reference_append_q's and each stream's current position
 * holds reference_append_kv's rows, in both modes (buffers: the cache before the step).
 * A source that sets only some of the buffers its layout needs (or d above
 * REF_MAX_HEAD_DIM, or no memory for the logits) gives NaN in every element. */
void reference_row(const ref_source_t *src, int query, int head, double *out);

/* --step append (problem/append.h): the query the step hands to attention, the packed
 * QKV's q rotated in double and rounded to the dtype: d doubles. */
void reference_append_q(const ref_source_t *src, int stream, int head, double *q);
/* The K (which 0, rotated) or V row the step writes into the current slot of stream
 * `stream`, as the cache holds it (append_store: an 8-bit cache's codes' values, which
 * reference_row dequantises as any row of the cache): d doubles. */
void reference_append_kv(const ref_source_t *src, int stream, int which, int kv_head, double *row);

/* The softmax weights of one (query row, head) over the keys it attends to (as
 * reference_row's, without share_to): prob[pos] for pos below the returned count, which
 * is the stream's key count for its token (prob needs that many doubles); -1 where the
 * source is incomplete or d too large. */
int reference_probs(const ref_source_t *src, int query, int head, double *prob);

/* The reference of output rows at[from..to) (query * h + head each) into want (d doubles
 * a row, at the row's index in at[]), the rows reordered in at[from..to) by (request, kv
 * head): the rows of one such group share their context, materialised once
 * (reference_ctx_fill), a few times cheaper than computing each key's values anew. Runs
 * on OpenMP's threads (omp_get_max_threads: every core, or a GPU worker's share of them
 * where several run at once). Returns -1 when memory runs out. */
int reference_rows(const ref_source_t *src, long *at, long from, long to, double *want);

/* Error of a kernel's output against the reference, accumulated over rows. */
typedef struct err_acc { double diff2, ref2, max_abs; long nonfinite, n; } err_acc_t;

/* Adds d elements. A non-finite element of either side is counted in nonfinite
 * and left out of diff2, ref2 and max_abs. */
void err_add(err_acc_t *e, const double *ref, const float *got, int d);

/* sqrt(diff2/ref2); +inf once any element was non-finite, so that a NaN output
 * can never pass a tolerance check; 0 for nothing added. */
double err_rel(const err_acc_t *e);

/* Relative L2 error a kernel may show for this input dtype (SPEC §7). */
double tolerance_for(dtype_t t);

#ifdef __cplusplus
}
#endif
#endif
