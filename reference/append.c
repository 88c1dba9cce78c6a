/* The reference of --step append's writes (problem/append.h): RoPE on the packed QKV's
 * logical values (rope_rotate: the cos/sin table's floats, the products in double, as the
 * kernel computes it), then the rounding or quantisation the cache applies. */
#include "reference.h"

#include "../problem/append.h"

/* Head row `row` of stream `stream`'s packed QKV (q's heads, then k's, then v's), rotated
 * (rotate) or not, each element rounded to float as the kernel computes it. */
static void packed_row(const ref_source_t *src, int stream, int row, int rotate, float *out)
{
    const problem_t *p = src->p;
    const int d = p->head_dim, pos = append_position(p->ctx, p->gen);
    for (int i = 0; i < d / 2; ++i) {
        int x0, x1;
        rope_pair(p->rope, d, i, &x0, &x1);
        const float a = append_qkv_logical(&src->geom, src->seed, p->heads, stream, row * d + x0);
        const float b = append_qkv_logical(&src->geom, src->seed, p->heads, stream, row * d + x1);
        double y0 = a, y1 = b;
        if (rotate) rope_rotate(p->rope_base, p->rope_scale, d, pos, i, a, b, &y0, &y1);
        out[x0] = (float)y0;
        out[x1] = (float)y1;
    }
}

void reference_append_q(const ref_source_t *src, int stream, int head, double *q)
{
    float row[REF_MAX_HEAD_DIM];
    packed_row(src, stream, head, 1, row);
    for (int x = 0; x < src->p->head_dim; ++x) q[x] = dtype_round(row[x], src->p->dtype);
}

void reference_append_kv(const ref_source_t *src, int stream, int which, int kv_head, double *out)
{
    const problem_t *p = src->p;
    float row[REF_MAX_HEAD_DIM];
    packed_row(src, stream, p->heads + which * p->kv_heads + kv_head, which == 0, row);
    for (int x = 0; x < p->head_dim; ++x)
        out[x] = append_store(&src->geom, problem_kv_dtype(p), row[x], which, kv_head);
}
