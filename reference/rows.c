/* The reference of many output rows at once, grouped by what they share. */
#include <omp.h>
#include <stdlib.h>
#include "reference.h"
#include "reference_internal.h"
#include "../problem/query_rows.h"

typedef struct keyed_row {
    long key, row;
} keyed_row_t;

static int by_key(const void *a, const void *b)
{
    const keyed_row_t *x = a, *y = b;
    return x->key != y->key ? (x->key > y->key) - (x->key < y->key) : (x->row > y->row) - (x->row < y->row);
}

/* The source of one (request, kv head) group's rows: with its context materialised in
 * ctx where it has one and more than a row reads it. */
static ref_source_t group_source(const ref_source_t *src, long key, long rows, float *ctx)
{
    const problem_t *p = src->p;
    if (rows > 1 && p->ctx > 0) return reference_with_ctx(src, (int)(key / p->kv_heads), (int)(key % p->kv_heads), ctx);
    return *src;
}

/* Above this, the per-thread context buffers of the group-parallel order would cost
 * more memory than a verification should take. */
#define ROWS_CTX_BYTES_MAX (1L << 30)

int reference_rows(const ref_source_t *src, long *at, long from, long to, double *want)
{
    const kv_geometry_t *geom = &src->geom;
    if (geom->kv_quant && !src->codes) {
        /* an 8-bit cache: every row maps codes (ref_source_t.codes) */
        float *codes = malloc((size_t)2 * geom->kv_heads * 255 * sizeof *codes);
        if (!codes) return -1;
        for (int which = 0; which < 2; ++which)
            for (int h = 0; h < geom->kv_heads; ++h)
                reference_stored_codes(geom, which, h, codes + ((size_t)which * geom->kv_heads + h) * 255);
        ref_source_t coded = *src;
        coded.codes = codes;
        const int rc = reference_rows(&coded, at, from, to, want);
        free(codes);
        return rc;
    }
    const problem_t *p = src->p;
    const int d = p->head_dim;
    const long n = to - from;
    const size_t ctx_bytes = (size_t)2 * (p->ctx > 0 ? p->ctx : 1) * d * sizeof(float);
    keyed_row_t *k = malloc((size_t)(n > 0 ? n : 1) * sizeof *k);
    long *start = malloc((size_t)(n + 1) * sizeof *start);
    if (!k || !start) {
        free(k);
        free(start);
        return -1;
    }
    for (long i = 0; i < n; ++i) {
        long stream = query_stream((int)(at[from + i] / p->heads), p->q_len), head = at[from + i] % p->heads;
        k[i].key = stream / p->beam * p->kv_heads + head / problem_group(p);
        k[i].row = at[from + i];
    }
    qsort(k, (size_t)n, sizeof *k, by_key);
    long groups = 0;
    for (long i = 0; i < n; ++i) {
        at[from + i] = k[i].row;
        if (i == 0 || k[i].key != k[i - 1].key) start[groups++] = i;
    }
    start[groups] = n;
    /* Many groups (MHA, GQA, several requests) side by side, a group per thread at a
     * time, each materialising its own context, as many at once as memory allows: where
     * there are groups for every core twice over, and where a group has fewer rows than
     * there are cores (one group at a time, its few rows would leave most of them idle
     * once its context is filled). */
    const int threads = omp_get_max_threads();
    long par = threads < groups ? threads : groups;
    if ((size_t)par * ctx_bytes > ROWS_CTX_BYTES_MAX) par = (long)(ROWS_CTX_BYTES_MAX / ctx_bytes);
    int failed = 0;
    if (par >= 2 && ((par == threads && groups >= 2L * threads) || n < groups * threads)) {
#pragma omp parallel num_threads((int)par) reduction(| : failed)
        {
            float *ctx = malloc(ctx_bytes);
            failed = !ctx;
#pragma omp for schedule(dynamic)
            for (long g = 0; g < groups; ++g) {
                if (!ctx) continue;
                const ref_source_t group = group_source(src, k[start[g]].key, start[g + 1] - start[g], ctx);
                for (long r = from + start[g]; r < from + start[g + 1]; ++r)
                    reference_row(&group, (int)(at[r] / p->heads), (int)(at[r] % p->heads), want + r * d);
            }
            free(ctx);
        }
    } else {
        /* groups of many rows (MQA, W streams of a request), or one at a time for memory:
         * each group's context filled by all cores, then its rows shared among them */
        float *ctx = malloc(ctx_bytes);
        failed = !ctx;
        for (long g = 0; ctx && g < groups; ++g) {
            const ref_source_t group = group_source(src, k[start[g]].key, start[g + 1] - start[g], ctx);
#pragma omp parallel for schedule(dynamic)
            for (long r = from + start[g]; r < from + start[g + 1]; ++r)
                reference_row(&group, (int)(at[r] / p->heads), (int)(at[r] % p->heads), want + r * d);
        }
        free(ctx);
    }
    free(k);
    free(start);
    return failed ? -1 : 0;
}
