/* The check of a kernel's own, recomputed K/V (recompute_check.h). */
#include "recompute_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "fill.h"
#include "verify.h"
#include "../problem/recompute.h"
#include "../reference/recompute.h"

void own_kv_free(own_kv_host_t *h)
{
    free(h->kv);
    free(h->counts);
    free(h->index);
    free(h->mask);
    memset(h, 0, sizeof *h);
}

int own_kv_shape(own_kv_host_t *h, const problem_t *p, const kv_geometry_t *geom)
{
    const int streams = problem_streams(p);
    h->mask = calloc((size_t)streams * (h->rows > 0 ? h->rows : 1), 1);
    if (!h->mask) return -1;
    for (int s = 0; s < streams; ++s) {
        if (h->counts[s] < 0 || h->counts[s] > h->rows) return -1;
        memset(h->mask + (size_t)s * h->rows, 1, (size_t)h->counts[s]);
    }
    /* each stream its own request with one stream, its rows its only keys */
    h->p = *p;
    h->p.batch = streams;
    h->p.beam = 1;
    h->p.ctx = 0;
    h->p.gen = h->rows;
    h->p.q_len = 1;
    h->p.cache = CACHE_CONTIGUOUS;
    h->p.indirection = false;
    h->p.kv_quant = KV_QUANT_NONE;
    h->p.ctx_dist = NULL;
    h->p.step = STEP_ATTEND;
    h->geom = *geom;
    h->geom.layout = LAYOUT_CONTIGUOUS;
    h->geom.beam = 1;
    h->geom.ctx = 0;
    h->geom.gen = h->rows;
    h->geom.ctx_lens = NULL;
    h->geom.kv_quant = KV_QUANT_NONE;
    return 0;
}

cudaError_t own_kv_fetch(const attn_own_kv_t *own, const problem_t *p, const kv_geometry_t *geom, own_kv_host_t *h)
{
    memset(h, 0, sizeof *h);
    const int streams = problem_streams(p), keys = problem_keys(p);
    const int64_t elements = (int64_t)streams * 2 * p->kv_heads * own->rows * p->head_dim;
    h->rows = own->rows;
    h->kv = malloc((size_t)elements * sizeof *h->kv);
    h->counts = malloc((size_t)streams * sizeof *h->counts);
    h->index = malloc((size_t)streams * keys * sizeof *h->index);
    if (!h->kv || !h->counts || !h->index) {
        own_kv_free(h);
        return cudaErrorMemoryAllocation;
    }
    cudaError_t e = download_as_float(own->kv, elements, p->dtype, h->kv);
    if (e == cudaSuccess) e = cudaMemcpy(h->counts, own->counts, (size_t)streams * sizeof(int), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(h->index, own->index, (size_t)streams * keys * sizeof(int), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && own_kv_shape(h, p, geom) != 0) e = cudaErrorInvalidValue;
    if (e != cudaSuccess) own_kv_free(h);
    return e;
}

double recompute_bound(dtype_t t, int hidden, double want, double scale)
{
    const double half_ulp = t == DTYPE_FP32 ? ldexp(1.0, -24) : t == DTYPE_BF16 ? ldexp(1.0, -8) : ldexp(1.0, -11);
    return half_ulp * fabs(want) + hidden * ldexp(1.0, -24) * scale;
}

/* 0 when the rows of stream s's i-th kept token are x W within the bound, 1 when one
 * element is not (its line on stderr). */
static int judge_token(const own_kv_host_t *h, const problem_t *p, const kv_geometry_t *geom,
                       const int32_t *indirection, uint64_t seed, const float *w, int s, int i,
                       const result_row_t *row)
{
    const int g = p->kv_heads, d = p->head_dim, hidden = recompute_hidden(p->heads, d);
    const int pos = h->index[(size_t)s * problem_keys(p) + i];
    const uint64_t token = recompute_token(geom, indirection, problem_streams(p), s, pos);
    int bad = 0;
#pragma omp parallel for schedule(dynamic) reduction(| : bad)
    for (int wh = 0; wh < 2 * g; ++wh) {
        double want[REF_MAX_HEAD_DIM], scale[REF_MAX_HEAD_DIM];
        const int which = wh / g, head = wh % g;
        reference_recomputed_kv(w, seed, g, hidden, d, token, which, head, want, scale);
        const float *got = h->kv + (((size_t)s * 2 + which) * g + head) * h->rows * d + (size_t)i * d;
        for (int x = 0; x < d && !bad; ++x) {
            if (isfinite(got[x]) && fabs(got[x] - want[x]) <= recompute_bound(p->dtype, hidden, want[x], scale[x]))
                continue;
#pragma omp critical
            {
                char what[160];
                problem_describe(p, what, sizeof what);
                fprintf(stderr, "attnbench: %s %s: recomputed %s of stream %d's kept key %d (position %d), kv head %d, "
                        "element %d: %g, x W gives %g\n", row->kernel, what, which ? "V" : "K", s, i, pos, head, x,
                        got[x], want[x]);
            }
            bad = 1;
        }
    }
    return bad;
}

/* The first kept row of any stream with a non-finite element (one that was never
 * written, as the kernel poisons them), as stream * rows + row, or -1. */
static long first_unwritten(const own_kv_host_t *h, const problem_t *p)
{
    const int g = p->kv_heads, d = p->head_dim;
    for (int s = 0; s < problem_streams(p); ++s)
        for (int wh = 0; wh < 2 * g; ++wh)
            for (long i = 0; i < h->counts[s]; ++i) {
                const float *row = h->kv + (((size_t)s * 2 * g + wh) * h->rows + i) * d;
                for (int x = 0; x < d; ++x)
                    if (!isfinite(row[x])) return (long)s * h->rows + i;
            }
    return -1;
}

int recompute_check(const own_kv_host_t *h, const problem_t *p, const kv_geometry_t *geom,
                    const int32_t *indirection, uint64_t seed, double budget_s, result_row_t *row)
{
    const int streams = problem_streams(p), g = p->kv_heads, d = p->head_dim, hidden = recompute_hidden(p->heads, d);
    const long unwritten = first_unwritten(h, p);
    if (unwritten >= 0) {
        char what[160];
        problem_describe(p, what, sizeof what);
        fprintf(stderr, "attnbench: %s %s: recomputed K/V of stream %ld's kept key %ld not finite (never written?)\n",
                row->kernel, what, unwritten / h->rows, unwritten % h->rows);
        snprintf(row->status, sizeof row->status, "%s", "mismatch");
        snprintf(row->verified, sizeof row->verified, "%s", "no");
        return 0;
    }
    float *w = malloc((size_t)2 * g * hidden * d * sizeof *w);
    if (!w) return -1;
    reference_recompute_w(seed, g, hidden, d, w);
    const double t0 = verify_seconds_now();
    int bad = 0;
    long kept = 0;
    for (int s = 0; s < streams; ++s) kept += h->counts[s];
    /* the first and last kept token of the first and last stream, then random ones (as
     * many draws as there are kept tokens at most) */
    for (long n = 0; !bad && n < 4 + kept; ++n) {
        int s, i;
        if (n < 4) {
            s = n < 2 ? 0 : streams - 1;
            i = n % 2 ? h->counts[s] - 1 : 0;
        } else {
            const uint64_t r = splitmix64(seed ^ 0x4ec0ull ^ (uint64_t)n);
            s = (int)(r % (uint64_t)streams);
            i = h->counts[s] > 0 ? (int)((r >> 32) % (uint64_t)h->counts[s]) : -1;
        }
        if (i >= 0 && h->counts[s] > 0) bad = judge_token(h, p, geom, indirection, seed, w, s, i, row);
        if (n >= 3 && verify_seconds_now() - t0 > budget_s) break;
    }
    free(w);
    if (bad) {
        snprintf(row->status, sizeof row->status, "%s", "mismatch");
        snprintf(row->verified, sizeof row->verified, "%s", "no");
    }
    return 0;
}

ref_source_t recompute_source(const own_kv_host_t *h, uint64_t seed)
{
    ref_source_t src = {0};
    src.p = &h->p;
    src.geom = h->geom;
    src.seed = seed;
    src.kv = h->kv;
    src.key_mask = h->mask;
    return src;
}
