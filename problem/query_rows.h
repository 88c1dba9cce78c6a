/* The query tokens of a step (--q-len n): Q and O are [B*W, n, h, d], so query token j
 * of stream s is query row s * n + j of [B*W*n, h, d]. Shared by the kernels, the
 * device fill, the reference and the verification, so that all of them agree on which
 * stream a query row belongs to and which keys it attends to. */
#ifndef ATTNBENCH_QUERY_ROWS_H
#define ATTNBENCH_QUERY_ROWS_H

#include "hd.h"

#ifdef __cplusplus
extern "C" {
#endif

HD int query_stream(int query, int q_len) { return query / q_len; }
HD int query_token(int query, int q_len) { return query % q_len; }

/* The end (exclusive) of the keys query token j attends to among a stream's keys
 * positions: its own position keys - n + j and everything before (causal among the n
 * tokens, all of the context). */
HD int query_key_end(int keys, int q_len, int query) { return keys - q_len + 1 + query % q_len; }

#ifdef __cplusplus
}
#endif
#endif
