/* The byte and FLOP arithmetic of one decode step (SPEC §6, the paper's IO model). */
#include "registry.h"
#include "../problem/recompute.h"

double io_kv_row_bytes(const problem_t *p)
{
    /* K and V of every kv head at one position, as stored: 1 byte an element in an 8-bit cache */
    return 2.0 * p->kv_heads * p->head_dim * (double)dtype_size(problem_kv_dtype(p));
}

/* Keys of every stream together: a ragged batch counts each request's own context
 * (the stored tokens, not the padding of a layout sized to the longest). */
static double stream_keys_total(const problem_t *p)
{
    return (double)p->beam * (double)problem_ctx_total(p) + (double)problem_streams(p) * p->gen;
}

double io_kv_bytes_replicated(const problem_t *p)
{
    return stream_keys_total(p) * io_kv_row_bytes(p);
}

double io_kv_bytes_unique(const problem_t *p)
{
    return ((double)problem_ctx_total(p) + (double)problem_streams(p) * p->gen) * io_kv_row_bytes(p);
}

double io_kv_bytes_stored(const problem_t *p)
{
    if (p->cache != CACHE_PAGED) return io_kv_bytes_replicated(p);
    /* the full context blocks of a request are one copy its W streams share; a
     * partly filled last context block is copied per stream */
    double shared = 0.0;
    for (int b = 0; b < p->batch; ++b) shared += (double)(problem_ctx_len(p, b) / p->block_size) * p->block_size;
    return (shared + stream_keys_total(p) - p->beam * shared) * io_kv_row_bytes(p);
}

double io_qo_bytes(const problem_t *p)
{
    return 2.0 * problem_queries(p) * p->heads * p->head_dim * (double)dtype_size(p->dtype);
}

double io_table_bytes(const problem_t *p)
{
    double streams = problem_streams(p), entry = sizeof(int32_t), tables = 0.0;
    if (p->cache == CACHE_PAGED)
        for (int b = 0; b < p->batch; ++b)
            tables += (double)p->beam * kv_blocks_for(problem_ctx_len(p, b) + p->gen, p->block_size) * entry;
    if (p->indirection) tables += streams * p->gen * entry;
    return tables + io_scale_bytes(p);
}

double io_scale_bytes(const problem_t *p)
{
    if (p->kv_quant == KV_QUANT_NONE) return 0.0;
    return 2.0 * (p->kv_scale == KV_SCALE_HEAD ? p->kv_heads : 1) * sizeof(float);
}

double io_flops(const problem_t *p)
{
    /* query token j of n attends to L - n + 1 + j of its stream's L keys: n L - n (n - 1) / 2 */
    const double n = p->q_len, keys = n * stream_keys_total(p) - problem_streams(p) * n * (n - 1) / 2;
    return 4.0 * p->heads * keys * p->head_dim;
}

double io_append_bytes(const problem_t *p)
{
    if (p->step != STEP_APPEND) return 0.0;
    double qkv = (double)problem_streams(p) * (p->heads + 2.0 * p->kv_heads) * p->head_dim *
                 (double)dtype_size(p->dtype);
    return qkv + problem_streams(p) * io_kv_row_bytes(p);
}

double io_selected_bytes(const problem_t *p, double kept)
{
    const double positions = (double)problem_streams(p) * problem_keys(p) * kept * sizeof(int32_t);
    return io_kv_bytes_stored(p) * kept + positions + io_qo_bytes(p) + io_table_bytes(p);
}

double io_recompute_bytes(const problem_t *p, double kept)
{
    const double streams = problem_streams(p), es = dtype_size(p->dtype);
    const double tokens = streams * problem_keys(p) * kept;
    const double hidden = (double)recompute_hidden(p->heads, p->head_dim);
    const double kv_row = 2.0 * p->kv_heads * p->head_dim * es;
    const double weights = hidden * kv_row;
    return tokens * hidden * es + streams * weights + 2.0 * tokens * kv_row + io_qo_bytes(p);
}

double io_recompute_flops(const problem_t *p, double kept)
{
    const double tokens = (double)problem_streams(p) * problem_keys(p) * kept;
    const double hidden = (double)recompute_hidden(p->heads, p->head_dim);
    return 2.0 * tokens * hidden * 2.0 * p->kv_heads * p->head_dim + io_flops(p) * kept;
}
