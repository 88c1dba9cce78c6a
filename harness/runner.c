#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "runner.h"
#include "device.h"
#include "fill.h"
#include "layouts.h"
#include "../problem/ctx_dist.h"
#include "memplan.h"
#include "nvtx.h"
#include "peak_cache.h"
#include "../problem/presets.h"
#include "../problem/logical_data.h"
#include "../problem/kv_quant.h"
#include "../problem/append.h"
#include "../problem/share_map.h"
#include "select_check.h"
#include "recompute_check.h"
#include "verify.h"
#include "../reference/reference.h"
#include "../kernels/append_step.h"

/* The host, not the GPU, ran out of memory: an `error` row, retried on --resume, where
 * the GPU's own allocation failures make the row `oom`. */
#define HOST_SHORT ((cudaError_t)-1)

/* the source revision, written by the Makefile into build/version.c */
extern const char attnbench_version[];

int runner_open(runner_t *r, const timing_opts_t *timing, bool verify, bool time_it,
                uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->timing = *timing;
    r->verify = verify;
    r->verify_budget_s = 1.0;
    r->time = time_it;
    r->seed = seed ? seed : ((uint64_t)time(NULL) << 20) ^ (uint64_t)clock();
    if (!device_available()) {
        fprintf(stderr, "attnbench: no CUDA GPU is usable on this machine; this command needs one\n");
        return -1;
    }
    cudaError_t e = device_query(&r->dev);
    int device = 0;
    if (e == cudaSuccess && cudaGetDevice(&device) == cudaSuccess) nvml_query(device, &r->nvml);
    if (e == cudaSuccess && time_it) {
        peak_t peak;
        nvtx_push("peak");
        const double t0 = verify_seconds_now();
        e = peak_get(&r->dev, &r->nvml, attnbench_version, &peak, &r->peak_measured_at, r->peak_path,
                     sizeof r->peak_path);
        r->peak_s = verify_seconds_now() - t0;
        nvtx_pop();
        r->dev.peak_read_gbps = peak.read_gbps;
        r->dev.peak_tc_tflops = peak.tc_tflops;
        r->dev.peak_l2_gbps = peak.l2_read_gbps;
    }
    if (e == cudaSuccess) e = timer_new(&r->timer, &r->dev);
    if (e != cudaSuccess) {
        fprintf(stderr, "attnbench: cannot set up the GPU: %s\n", cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

void runner_close(runner_t *r)
{
    if (r->timer) timer_destroy(r->timer);
    r->timer = NULL;
}

/* The plan the kernel would run with on this GPU; unsupported kernels get none. */
static const attn_kernel_t *plan_for(const runner_t *r, const problem_t *p,
                                     const attn_kernel_t *k, attn_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->runs = k;
    plan->split = split_plan_fixed(problem_keys(p), 1, 1);
    if (attn_kernel_unsupported(k, p)) return NULL;
    k->plan(p, &r->dev, plan);
    if (!plan->runs) plan->runs = k;
    return plan->runs;
}

/* The shortest text of x that reads back as the same double. */
static void shortest(double x, char *buf, size_t len)
{
    snprintf(buf, len, "%.15g", x);
    if (strtod(buf, NULL) != x) snprintf(buf, len, "%.17g", x);
}

/* The options that rerun exactly this row with `attnbench run`: the problem's and
 * the timing settings that change what is measured (--hot, --graph). */
static void row_args(const problem_t *p, const attn_kernel_t *k, const timing_opts_t *t,
                     char *buf, size_t len)
{
    int n = snprintf(buf, len,
                     "--kernel %s --batch %d --beam %d --heads %d --kv-heads %d --head-dim %d "
                     "--ctx %d --gen %d --dtype %s --cache %s",
                     k->name, p->batch, p->beam, p->heads, p->kv_heads, p->head_dim, p->ctx,
                     p->gen, dtype_name(p->dtype), cache_name(p->cache));
#define MORE(...) if (n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - n, __VA_ARGS__)
    /* an 8-bit cache only: rows of a cache in --dtype name no storage */
    if (p->kv_quant != KV_QUANT_NONE)
        MORE(" --kv-dtype %s --kv-scale %s", dtype_name(problem_kv_dtype(p)), kv_scale_name(p->kv_scale));
    if (p->cache == CACHE_PAGED) MORE(" --block-size %d", p->block_size);
    if (p->indirection) MORE(" --indirection");
    MORE(" --multi-block %s", multi_block_name(p->multi_block));
    if (p->splits) MORE(" --splits %d", p->splits);
    char num[32];
    if (p->q_scaling != 1.0) {
        shortest(p->q_scaling, num, sizeof num);
        MORE(" --q-scaling %s", num);
    }
    if (p->step == STEP_APPEND) {
        MORE(" --step append --rope %s", rope_name(p->rope));
        shortest(p->rope_base, num, sizeof num);
        MORE(" --rope-base %s", num);
        shortest(p->rope_scale, num, sizeof num);
        MORE(" --rope-scale %s", num);
    }
    if (p->tp > 1) MORE(" --tp %d", p->tp);
    if (problem_ragged(p)) MORE(" --ctx-dist %s", p->ctx_dist->spec);
    if (p->q_len > 1) MORE(" --q-len %d", p->q_len);
    if (p->scores == SCORES_PEAKED) {
        char v[3][32];
        shortest(p->sink_logit, v[0], sizeof v[0]);
        shortest(p->heavy_logit, v[1], sizeof v[1]);
        shortest(p->recent_logit, v[2], sizeof v[2]);
        MORE(" --scores peaked --sink-logit %s --heavy-logit %s --recent-logit %s", v[0], v[1], v[2]);
    }
    if (k->approx == ATTN_APPROX_SHARE && p->share_map) {
        MORE(" --share-map %s --share-layer %d", p->share_map->path, p->share_map->layer);
    } else if (k->approx == ATTN_APPROX_SHARE) {
        shortest(p->share_fraction, num, sizeof num);
        MORE(" --share-fraction %s", num);
    }
    if (k->selection) {
        shortest(p->top_p, num, sizeof num);
        MORE(" --top-p %s", num);
    }
    if (t->hot) MORE(" --hot");
    if (t->graph) MORE(" --graph");
#undef MORE
}

void runner_describe_unplanned(const char *gpu, const timing_opts_t *timing, const problem_t *p,
                               const attn_kernel_t *k, result_row_t *row)
{
    result_row_init(row); /* every measured number starts as "not measured" */
    snprintf(row->gpu, sizeof row->gpu, "%s", gpu);
    snprintf(row->kernel, sizeof row->kernel, "%s", k->name);
    snprintf(row->attn, sizeof row->attn, "%s", attn_type_name(problem_attn_type(p)));
    row->batch = p->batch;
    row->beam = p->beam;
    row->heads = p->heads;
    row->kv_heads = p->kv_heads;
    row->head_dim = p->head_dim;
    row->ctx = p->ctx;
    row->gen = p->gen;
    snprintf(row->dtype, sizeof row->dtype, "%s", dtype_name(p->dtype));
    snprintf(row->cache, sizeof row->cache, "%s", cache_name(p->cache));
    row->block_size = p->cache == CACHE_PAGED ? p->block_size : 0;
    row->indirection = p->indirection;
    snprintf(row->multi_block, sizeof row->multi_block, "%s", multi_block_name(p->multi_block));
    row->splits = p->splits;
    snprintf(row->ran, sizeof row->ran, "%s", k->name);
    snprintf(row->status, sizeof row->status, "%s", "ok");
    snprintf(row->verified, sizeof row->verified, "%s", "skip");
    snprintf(row->version, sizeof row->version, "%s", attnbench_version);
    snprintf(row->model, sizeof row->model, "%s", p->model ? p->model : "");
    row->layers = p->layers;
    row->tp = p->tp;
    row->q_len = p->q_len;
    row_args(p, k, timing, row->args, sizeof row->args);
    snprintf(row->kv_dtype, sizeof row->kv_dtype, "%s", dtype_name(problem_kv_dtype(p)));
    snprintf(row->step, sizeof row->step, "%s", step_name(p->step));
    snprintf(row->ctx_dist, sizeof row->ctx_dist, "%s", problem_ragged(p) ? p->ctx_dist->spec : "fixed");
    row->ctx_total = (double)problem_ctx_total(p);
    row->ctx_max = problem_ctx_max(p);
    if (k->approx == ATTN_APPROX_SHARE) row->kept = (double)problem_share_essential(p) / p->heads;
}

/* The row's configuration columns and the plan they record; returns the kernel the
 * plan runs, NULL when k does not support p. */
static const attn_kernel_t *describe(const runner_t *r, const problem_t *p,
                                     const attn_kernel_t *k, result_row_t *row, attn_plan_t *plan)
{
    runner_describe_unplanned(r->dev.gpu, &r->timing, p, k, row);
    const attn_kernel_t *runs = plan_for(r, p, k, plan);
    row->splits = runs ? plan->split.splits : p->splits;
    snprintf(row->ran, sizeof row->ran, "%s", runs ? runs->name : k->name);
    return runs;
}

void runner_describe_row(const runner_t *r, const problem_t *p, const attn_kernel_t *k,
                         result_row_t *row)
{
    attn_plan_t plan;
    describe(r, p, k, row, &plan);
}

/* Everything one configuration allocates; freed in one place. */
typedef struct buffers {
    void *q, *out, *kv[2], *workspace, *kv_scale, *qkv, *rope_cs;
    void *last_out;   /* the last verified launch's output, copied aside */
    int32_t *block_table, *owner, *first_pos, *indirection;
    int32_t *host_indirection;
    int32_t *ctx_lens, *host_ctx_lens;   /* a ragged batch's context lengths */
    float *host_kv_scale, *host_rope_cs;
    paged_map_t map;
    int have_map;
} buffers_t;

static void buffers_free(buffers_t *b)
{
    void *all[] = {b->q, b->out, b->kv[0], b->kv[1], b->workspace, b->kv_scale, b->qkv, b->rope_cs, b->last_out,
                   b->block_table, b->owner, b->first_pos, b->indirection, b->ctx_lens};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
        if (all[i]) cudaFree(all[i]);
    free(b->host_indirection);
    free(b->host_kv_scale);
    free(b->host_rope_cs);
    free(b->host_ctx_lens);
    if (b->have_map) paged_map_free(&b->map);
    memset(b, 0, sizeof *b);
}

static cudaError_t alloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    return bytes ? cudaMalloc(ptr, bytes) : cudaSuccess;
}

/* Ordered on the timer's stream s, ahead of the fills and kernels that read it: a
 * cudaMemcpy from pageable memory runs on the legacy default stream and may return
 * before its DMA lands, and s (non-blocking) does not wait for that stream. */
static cudaError_t upload(void **dst, const void *src, size_t bytes, cudaStream_t s)
{
    cudaError_t e = alloc(dst, bytes);
    if (e == cudaSuccess && bytes) e = cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, s);
    return e;
}

/* One step: with --step append, the append kernel writes the query and the cache's
 * current slot (q and cache: the writable buffers behind a->q and the slot) first. */
typedef struct step_launch {
    attn_args_t *a;
    void *q, *cache;
} step_launch_t;

static cudaError_t launch_step(void *ctx, cudaStream_t s)
{
    step_launch_t *l = (step_launch_t *)ctx;
    if (l->a->problem.step == STEP_APPEND) {
        cudaError_t e = append_launch(l->a, l->q, l->cache, s);
        if (e != cudaSuccess) return e;
    }
    return l->a->plan.runs->launch(l->a, s);
}

/* What a --step append launch must write, poisoned: the query (NaN) and the cache's
 * current slots (append_poison). Nothing for --step attend. */
static cudaError_t poison_step_inputs(const step_launch_t *l, cudaStream_t s)
{
    const problem_t *p = &l->a->problem;
    if (p->step != STEP_APPEND) return cudaSuccess;
    cudaError_t e = fill_nan(l->q, (int64_t)problem_streams(p) * p->heads * p->head_dim, p->dtype, s);
    return e == cudaSuccess ? append_poison(l->a, l->cache, s) : e;
}

/* The output rows checked against the reference and the reference's values of them
 * (n rows of d doubles), computed once and judged against every verified launch. */
typedef struct checked_rows {
    long n;
    long *at;
    double *want;
    double *exact;   /* an approximating kernel's: exact attention's values of the same rows */
} checked_rows_t;

static void checked_rows_free(checked_rows_t *c)
{
    free(c->at);
    free(c->want);
    free(c->exact);
    memset(c, 0, sizeof *c);
}

/* Picks the checked rows (verify_pick_rows) and computes their reference: all rows or
 * VERIFY_MIN_ROWS of them, then more, as many as the time the first ones took says
 * fit in budget_s seconds, all of them where they fit. Returns -1 when memory runs out. */
static int checked_rows_make(const ref_source_t *src, uint64_t seed, double budget_s,
                             checked_rows_t *c)
{
    const problem_t *p = src->p;
    long rows = (long)problem_queries(p) * p->heads, d = p->head_dim;
    memset(c, 0, sizeof *c);
    c->at = malloc((size_t)rows * sizeof *c->at);
    long *drawn = malloc((size_t)rows * sizeof *drawn);
    long want = rows < VERIFY_MIN_ROWS ? rows : VERIFY_MIN_ROWS;
    c->want = malloc((size_t)want * d * sizeof *c->want);
    c->n = c->at && c->want && drawn ? verify_pick_rows(p, want, seed, c->at) : -1;
    double t0 = verify_seconds_now();
    if (c->n < 0 || reference_rows(src, c->at, 0, c->n, c->want) != 0) goto fail;
    double spent = verify_seconds_now() - t0;
    if (c->n == rows || spent >= budget_s) {
        free(drawn);
        return 0;
    }
    double more = spent > 0 ? (budget_s - spent) / (spent / c->n) : (double)rows;
    long total = more >= (double)(rows - c->n) ? rows : c->n + (long)more;
    double *grown = realloc(c->want, (size_t)total * d * sizeof *grown);
    if (!grown) goto fail;
    c->want = grown;
    /* all rows: in order, computed anew; fewer: the same draws continue the first
     * ones (verify_pick_rows), whose reference is kept */
    long from = total == rows ? 0 : c->n;
    if (verify_pick_rows(p, total, seed, drawn) != total) goto fail;
    memcpy(c->at + from, drawn + from, (size_t)(total - from) * sizeof *drawn);
    if (reference_rows(src, c->at, from, total, c->want) != 0) goto fail;
    c->n = total;
    free(drawn);
    return 0;
fail:
    free(drawn);
    return -1;
}

/* An approximating kernel's rows also get exact attention's reference, for approx_err.
 * reference_rows leaves at[] in the order it sorted it to, which sorting again keeps. */
static int checked_rows_exact(const ref_source_t *src, checked_rows_t *c)
{
    if (!src->share_to && !src->key_mask) return 0;
    ref_source_t exact = *src;
    exact.share_to = NULL;
    exact.key_mask = NULL;
    c->exact = malloc((size_t)(c->n > 0 ? c->n : 1) * src->p->head_dim * sizeof *c->exact);
    if (!c->exact) return -1;
    return reference_rows(&exact, c->at, 0, c->n, c->exact);
}

/* The reference's source of a row's inputs: the logical data of this seed. */
static ref_source_t row_source(const problem_t *p, const kv_geometry_t *geom, uint64_t seed,
                               const int32_t *indirection)
{
    ref_source_t src = {0};
    src.p = p;
    src.geom = *geom;
    src.seed = seed;
    src.indirection = indirection;
    return src;
}

/* The checked rows of a row run by `run` on inputs of this seed, with the reference of
 * what run computes: exact attention, or its approximation (then exact attention's too);
 * the selected step's over the keys of key_mask, or over its own K/V as read back. */
static int checked_rows_for(const problem_t *p, const attn_kernel_t *run, const kv_geometry_t *geom,
                            uint64_t seed, const int32_t *indirection, const unsigned char *key_mask,
                            const own_kv_host_t *own, double budget_s, checked_rows_t *c)
{
    ref_source_t src = own ? recompute_source(own, seed) : row_source(p, geom, seed, indirection);
    if (run->approx == ATTN_APPROX_SELECT) src.key_mask = key_mask;
    int *share_to = NULL;
    if (run->approx == ATTN_APPROX_SHARE) {
        /* [h]: the head whose weights head i uses */
        if (!(share_to = malloc((size_t)p->heads * sizeof *share_to))) return -1;
        for (int i = 0; i < p->heads; ++i) share_to[i] = problem_share_target(p, i);
    }
    src.share_to = share_to;
    /* attention over recomputed K/V has no exact counterpart on the cache's */
    int rc = checked_rows_make(&src, splitmix64(seed ^ 0x5eed), budget_s, c) != 0 ||
                     (!own && checked_rows_exact(&src, c) != 0)
                 ? -1 : 0;
    free(share_to);
    return rc;
}

/* Judges the output in out (device) against the checked rows and records it in row:
 * the worst of every judged launch stays (rel_err, max_abs_err), one failure makes
 * the row a mismatch, with a line on stderr naming the worst row. */
static cudaError_t judge_output(const problem_t *p, const void *out, const checked_rows_t *c,
                                const char *which, result_row_t *row)
{
    long rows = (long)problem_queries(p) * p->heads;
    float *got = malloc((size_t)rows * p->head_dim * sizeof *got);
    if (!got) return cudaErrorMemoryAllocation;
    cudaError_t e = download_as_float(out, (int64_t)rows * p->head_dim, p->dtype, got);
    if (e == cudaSuccess) {
        verify_verdict_t v;
        double tol = tolerance_for(p->dtype), bound = verify_abs_bound(p->dtype, KV_AMPLITUDE);
        verify_judge(got, rows, p->head_dim, c->at, c->want, c->n, tol, bound, &v);
        if (!(row->rel_err >= v.worst_rel)) row->rel_err = v.worst_rel;
        if (!(row->max_abs_err >= v.max_abs)) row->max_abs_err = v.max_abs;
        if (c->exact) {
            err_acc_t acc = {0};
            for (long i = 0; i < c->n; ++i)
                err_add(&acc, c->exact + (size_t)i * p->head_dim, got + (size_t)c->at[i] * p->head_dim, p->head_dim);
            double approx = err_rel(&acc);
            if (!(row->approx_err >= approx)) row->approx_err = approx;
        }
        if (!v.ok) {
            char what[160];
            problem_describe(p, what, sizeof what);
            fprintf(stderr,
                    "attnbench: %s %s: %s launch wrong: worst row %ld (stream %ld, query token %ld, head %ld) "
                    "rel err %.3e (tolerance %.1e), max abs err %.3e (bound %.1e), %ld of %ld "
                    "elements NaN/Inf, %ld of %ld rows checked\n",
                    row->kernel, what, which, v.worst_row, v.worst_row / p->heads / p->q_len,
                    v.worst_row / p->heads % p->q_len, v.worst_row % p->heads, v.worst_rel, tol, v.max_abs, bound, v.nonfinite,
                    rows * p->head_dim, v.checked, rows);
            snprintf(row->status, sizeof row->status, "%s", "mismatch");
        }
        snprintf(row->verified, sizeof row->verified, "%s",
                 v.ok && strcmp(row->verified, "no") != 0 ? "yes" : "no");
    }
    free(got);
    return e;
}

/* Around the last timed launch (timer_last_t): the output poisoned before it, copied
 * aside after it, so that a stale correct output left by earlier launches cannot pass. */
typedef struct last_launch {
    void *out, *copy;
    size_t bytes;
    int64_t elements;
    dtype_t dtype;
    const step_launch_t *step;   /* its inputs written by --step append, poisoned too */
} last_launch_t;

static cudaError_t poison_output(void *ctx, cudaStream_t s)
{
    last_launch_t *l = (last_launch_t *)ctx;
    cudaError_t e = fill_nan(l->out, l->elements, l->dtype, s);
    return e == cudaSuccess ? poison_step_inputs(l->step, s) : e;
}

static cudaError_t keep_output(void *ctx, cudaStream_t s)
{
    last_launch_t *l = (last_launch_t *)ctx;
    return cudaMemcpyAsync(l->copy, l->out, l->bytes, cudaMemcpyDeviceToDevice, s);
}

/* After an error: a sticky one (an illegal address, a trap) leaves the CUDA context
 * unusable for the rest of the process; the caller must start a fresh process. */
static void check_sticky(runner_t *r)
{
    cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess) r->broken = true;
}

/* The paged block map, the beam history, an 8-bit cache's scales and --step append's
 * cos/sin table, on the device (ordered on s) and, where the reference reads them, on
 * the host. */
static cudaError_t upload_tables(const problem_t *p, const mem_plan_t *m, uint64_t seed,
                                 cudaStream_t s, buffers_t *b)
{
    cudaError_t e = cudaSuccess;
#define CK(call) do { if (e == cudaSuccess) e = (call); } while (0)
    if (e == cudaSuccess && m->geom.layout == LAYOUT_PAGED) {
        if (paged_map_build(p, seed, &b->map) != 0) e = HOST_SHORT;
        else b->have_map = 1;
        size_t table = (size_t)problem_streams(p) * b->map.max_blocks_per_seq * sizeof(int32_t);
        size_t owners = (size_t)b->map.num_blocks * sizeof(int32_t);
        CK(upload((void **)&b->block_table, b->map.table, table, s));
        CK(upload((void **)&b->owner, b->map.owner, owners, s));
        CK(upload((void **)&b->first_pos, b->map.first_pos, owners, s));
    }
    if (e == cudaSuccess && p->indirection) {
        b->host_indirection = beam_history_build(p, seed);
        if (!b->host_indirection) e = HOST_SHORT;
        CK(upload((void **)&b->indirection, b->host_indirection,
                  (size_t)problem_streams(p) * problem_keys(p) * sizeof(int32_t), s));
    }
    if (e == cudaSuccess && m->kv_scale) {
        /* the scales the fill quantised with (kv_quant.h), for the kernel to dequantise */
        const int n = kv_scale_entries(&m->geom);
        b->host_kv_scale = malloc(2 * (size_t)n * sizeof *b->host_kv_scale);
        if (!b->host_kv_scale) e = HOST_SHORT;
        for (int which = 0; which < 2 && e == cudaSuccess; ++which)
            for (int h = 0; h < n; ++h) b->host_kv_scale[which * n + h] = kv_quant_scale(&m->geom, which, h);
        CK(upload(&b->kv_scale, b->host_kv_scale, 2 * (size_t)n * sizeof(float), s));
    }
    if (e == cudaSuccess && p->step == STEP_APPEND) {
        /* the current position's cos and sin, as an engine's precomputed cache holds them */
        const int pairs = p->head_dim / 2, pos = append_position(p->ctx, p->gen);
        b->host_rope_cs = malloc(2 * (size_t)pairs * sizeof *b->host_rope_cs);
        if (!b->host_rope_cs) e = HOST_SHORT;
        for (int i = 0; i < pairs && e == cudaSuccess; ++i)
            rope_cos_sin(p->rope_base, p->rope_scale, p->head_dim, pos, i, &b->host_rope_cs[2 * i],
                         &b->host_rope_cs[2 * i + 1]);
        CK(upload(&b->rope_cs, b->host_rope_cs, 2 * (size_t)pairs * sizeof(float), s));
    }
#undef CK
    return e;
}

/* A ragged batch's lengths: in host memory for the reference (b->host_ctx_lens), on the
 * device for the fill and the kernel, whose geometry then points at them. */
static cudaError_t upload_ctx_lens(const problem_t *p, buffers_t *b, kv_geometry_t *geom, cudaStream_t s)
{
    if (!problem_ragged(p)) return cudaSuccess;
    if (problem_ctx_lens(p, &b->host_ctx_lens) != 0) return HOST_SHORT;
    cudaError_t e = upload((void **)&b->ctx_lens, b->host_ctx_lens, (size_t)p->batch * sizeof(int32_t), s);
    geom->ctx_lens = b->ctx_lens;
    return e;
}

/* The row's byte and FLOP columns, the peaks it is judged against, and its roofline. */
static void row_set_io(const runner_t *r, const attn_io_t *io, result_row_t *row)
{
    row->bytes = io->bytes;
    row->unique_bytes = io->unique_bytes;
    row->workspace_bytes = io->workspace_bytes;
    row->flops = io->flops;
    if (r->dev.peak_read_gbps > 0) row->peak_gbps = r->dev.peak_read_gbps;
    if (r->dev.peak_tc_tflops > 0) row->peak_tflops = r->dev.peak_tc_tflops;
    if (r->dev.peak_read_gbps > 0) {
        double t_bytes = io->unique_bytes / (r->dev.peak_read_gbps * 1e3);
        double t_flops = r->dev.peak_tc_tflops > 0 ? io->flops / (r->dev.peak_tc_tflops * 1e6) : 0;
        row->roofline_us = t_bytes > t_flops ? t_bytes : t_flops;
    }
}

/* The row's timing columns from the timed launches of a step moving io's bytes. */
static void row_set_times(const runner_t *r, const attn_io_t *io, const timing_result_t *t, result_row_t *row)
{
    row->iters = t->times.n;
    row->median_us = t->times.median;
    row->p10_us = t->times.p10;
    row->p90_us = t->times.p90;
    row->min_us = t->times.min;
    row->max_us = t->times.max;
    row->noise = t->times.noise;
    row->sm_mhz = t->sm_mhz;
    row->gbps = io->bytes / (t->times.median * 1e3);
    if (r->dev.peak_read_gbps > 0) row->pct_peak_bw = 100.0 * row->gbps / r->dev.peak_read_gbps;
    if (r->nvml.spec_gbps > 0) row->pct_spec_bw = 100.0 * row->gbps / r->nvml.spec_gbps;
    stats_flags(&t->times, t->capped_above_target, t->sm_mhz, r->nvml.max_sm_mhz, row->flags,
                sizeof row->flags);
}

/* A selecting kernel's sets after its first launch (into *chosen, host): the fraction
 * of keys they keep, and for the selected step the bytes and FLOPs of those keys only. */
static cudaError_t selection_of(const runner_t *r, const problem_t *p, const attn_kernel_t *run,
                                const attn_args_t *a, attn_io_t *io, result_row_t *row, unsigned char **chosen)
{
    *chosen = malloc((size_t)problem_streams(p) * problem_keys(p));
    if (!*chosen) return cudaErrorMemoryAllocation;
    cudaError_t e = run->selection(a, *chosen);
    if (e != cudaSuccess) return e;
    row->kept = select_kept(p, *chosen);
    if (run->approx == ATTN_APPROX_SELECT || run->approx == ATTN_APPROX_RECOMPUTE) {
        const int recompute = run->approx == ATTN_APPROX_RECOMPUTE;
        io->bytes = io->unique_bytes = recompute ? io_recompute_bytes(p, row->kept) : io_selected_bytes(p, row->kept);
        io->flops = recompute ? io_recompute_flops(p, row->kept) : io_flops(p) * row->kept;
        row_set_io(r, io, row);
    }
    return cudaSuccess;
}

void runner_row(runner_t *r, const problem_t *p, const attn_kernel_t *k, result_row_t *row)
{
    attn_plan_t plan;
    r->verify_s = r->timing_s = 0.0;
    const attn_kernel_t *run = describe(r, p, k, row, &plan);
    if (!run) {
        snprintf(row->status, sizeof row->status, "%s", "unsupported");
        return;
    }
    attn_io_t io = run->io(p, &plan);
    io.bytes += io_append_bytes(p);
    io.unique_bytes += io_append_bytes(p);
    row_set_io(r, &io, row);

    mem_plan_t m;
    mem_plan_make(p, run, &plan, &m);
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    /* With a model preset the paper's rule: the whole model (fp16 weights and every
     * layer's cache) must fit on the GPU, even though one layer is timed. */
    const model_preset_t *model = p->model ? preset_find(p->model) : NULL;
    int model_fits = !model || preset_fits(model, (double)(m.kv[0] + m.kv[1]), (double)total_bytes);
    if (!model_fits || !mem_plan_fits(&m, free_bytes)) {
        snprintf(row->status, sizeof row->status, "%s", "oom");
        return;
    }

    char name[256];
    nvtx_config_name(name, sizeof name, k->name, p);
    nvtx_push(name);
    uint64_t seed = splitmix64(r->seed + (uint64_t)r->rows++);
    cudaStream_t s = timer_stream(r->timer);
    buffers_t b = {0};
    attn_args_t a = {0};
    a.problem = *p;
    a.geom = m.geom;
    a.plan = plan;
    a.seed = seed;
    int set_up = 0;
    cudaError_t e = cudaSuccess;
#define CK(call) do { if (e == cudaSuccess) e = (call); } while (0)
    nvtx_push("fill");
    CK(alloc(&b.q, m.q));
    CK(alloc(&b.out, m.out));
    CK(alloc(&b.kv[0], m.kv[0]));
    CK(alloc(&b.kv[1], m.kv[1]));
    CK(alloc(&b.workspace, m.workspace));
    CK(upload_ctx_lens(p, &b, &m.geom, s));
    a.geom.ctx_lens = m.geom.ctx_lens;
    CK(upload_tables(p, &m, seed, s, &b));
    if (p->step == STEP_APPEND) {
        /* the step's input; the query and the current slots it writes are poisoned below */
        CK(alloc(&b.qkv, m.qkv));
        CK(fill_qkv(b.qkv, p, &m.geom, seed, s));
    } else {
        CK(fill_q(b.q, p, seed, s));
    }
    for (int part = 0; part < 2; ++part)
        if (m.kv_elements[part])
            CK(fill_kv(b.kv[part], m.kv_elements[part], problem_kv_dtype(p), &m.geom, part, seed,
                       b.owner, b.first_pos, s));
    CK(fill_nan(b.out, (int64_t)problem_queries(p) * p->heads * p->head_dim, p->dtype, s));
    if (m.workspace) CK(cudaMemsetAsync(b.workspace, 0, m.workspace, s));
    CK(cudaStreamSynchronize(s));
    nvtx_pop();

    a.q = b.q;
    a.out = b.out;
    if (m.geom.layout == LAYOUT_BIFURCATED) {
        a.kv_ctx = b.kv[0];
        a.kv_dec = b.kv[1];
    } else {
        a.kv = b.kv[0];
    }
    a.block_table = b.block_table;
    a.num_blocks = b.map.num_blocks;
    a.indirection = b.indirection;
    a.kv_scale = (const float *)b.kv_scale;
    a.qkv = b.qkv;
    a.rope_cs = (const float *)b.rope_cs;
    a.workspace = b.workspace;
    /* bifurcated keeps the current position in its decoded part */
    step_launch_t step = {&a, b.q, b.kv[m.geom.layout == LAYOUT_BIFURCATED]};
    CK(poison_step_inputs(&step, s));
    if (e == cudaSuccess && run->setup) {
        e = run->setup(&a);
        set_up = e == cudaSuccess;
    } else if (e == cudaSuccess) {
        set_up = 1;
    }
    /* Uploads a kernel's setup makes with cudaMemcpy from pageable memory (pointer
     * tables) run on the legacy default stream and may still be in flight when the
     * call returns; the timer's stream does not wait for that stream. (Ours above are
     * ordered on s, before the fills that read owner/first_pos.) */
    CK(cudaDeviceSynchronize());
    /* One launch on the poisoned output, then the check, then the timing, whose last
     * launch is checked too (without timing, a second launch on a poisoned output). */
    CK(launch_step(&step, s));
    CK(cudaStreamSynchronize(s));
    unsigned char *chosen = NULL;
    if (e == cudaSuccess && run->selection) e = selection_of(r, p, run, &a, &io, row, &chosen);
    checked_rows_t checked = {0};
    int64_t out_elements = (int64_t)problem_queries(p) * p->heads * p->head_dim;
    last_launch_t last = {b.out, NULL, m.out, out_elements, p->dtype, &step};
    timer_last_t last_hooks = {poison_output, keep_output, &last};
    double t0 = verify_seconds_now();
    if (e == cudaSuccess && r->verify) {
        nvtx_push("verify");
        kv_geometry_t geom = a.geom;
        geom.ctx_lens = b.host_ctx_lens;
        own_kv_host_t own = {0};
        attn_own_kv_t own_dev;
        if (run->own_kv) {
            CK(run->own_kv(&a, &own_dev));
            CK(own_kv_fetch(&own_dev, p, &geom, &own));
            if (e == cudaSuccess &&
                recompute_check(&own, p, &geom, b.host_indirection, seed, r->verify_budget_s, row) != 0)
                e = HOST_SHORT;
        }
        if (e == cudaSuccess && checked_rows_for(p, run, &geom, seed, b.host_indirection, chosen,
                                                 run->own_kv ? &own : NULL, r->verify_budget_s, &checked) != 0)
            e = HOST_SHORT;
        own_kv_free(&own);
        CK(judge_output(p, b.out, &checked, "first", row));
        /* the top-p sets, from a workspace that started zeroed: a set never written is
         * empty, and fails */
        const ref_source_t src = row_source(p, &geom, seed, b.host_indirection);
        if (e == cudaSuccess && chosen && select_check(&src, chosen, seed, r->verify_budget_s, row) != 0)
            e = HOST_SHORT;
        CK(alloc(&b.last_out, m.out));
        last.copy = b.last_out;
        if (!r->time) {
            CK(poison_output(&last, s));
            CK(launch_step(&step, s));
            CK(keep_output(&last, s));
            CK(cudaStreamSynchronize(s));
            CK(judge_output(p, b.last_out, &checked, "second", row));
        }
        r->verify_s = verify_seconds_now() - t0;
        nvtx_pop();
    }
    if (e == cudaSuccess && r->time) {
        timing_result_t t;
        /* Under --profile the profilers would catch the poison and the copy among the
         * timed launches: there the last launch is not checked. */
        bool check_last = r->verify && !r->timing.profile;
        if (r->before_timing) r->before_timing(r->before_timing_ctx);
        /* pushes warm-up, timed */
        t0 = verify_seconds_now();
        e = timer_run(r->timer, launch_step, &step, &r->timing, check_last ? &last_hooks : NULL, &t);
        r->timing_s = verify_seconds_now() - t0;
        if (e == cudaSuccess) row_set_times(r, &io, &t, row);
        if (e == cudaSuccess && check_last) {
            nvtx_push("verify");
            t0 = verify_seconds_now();
            e = judge_output(p, b.last_out, &checked, "last timed", row);
            r->verify_s += verify_seconds_now() - t0;
            nvtx_pop();
        }
    }
    checked_rows_free(&checked);
    free(chosen);
#undef CK
    if (set_up && run->teardown) run->teardown(&a);
    buffers_free(&b);
    nvtx_pop();
    if (e == cudaSuccess) return;
    snprintf(row->status, sizeof row->status, "%s", runner_error_status(e));
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
    } else if (e == ATTN_SETUP_UNSUPPORTED) {
        /* the CSV has no column for it: the reason goes to stderr, once per row */
        char what[160];
        problem_describe(p, what, sizeof what);
        a.why[sizeof a.why - 1] = '\0';
        fprintf(stderr, "attnbench: %s %s: unsupported: %s\n", k->name, what,
                a.why[0] ? a.why : "(no reason given)");
    } else {
        char what[160];
        problem_describe(p, what, sizeof what);
        if (e == HOST_SHORT)
            fprintf(stderr, "attnbench: %s %s: host memory ran out\n", k->name, what);
        else
            fprintf(stderr, "attnbench: %s %s: CUDA error: %s\n", k->name, what, cudaGetErrorString(e));
        check_sticky(r);
    }
}

const char *runner_error_status(cudaError_t e)
{
    if (e == cudaErrorMemoryAllocation) return "oom";
    if (e == ATTN_SETUP_UNSUPPORTED) return "unsupported";
    return "error";
}

int row_failed(const result_row_t *row)
{
    return strcmp(row->status, "error") == 0 || strcmp(row->status, "mismatch") == 0;
}

void runner_print_header(FILE *f)
{
    fprintf(f, "%-18s %5s %5s %4s %4s %4s %7s %5s %-5s %-10s %6s %-11s %10s %8s %6s %9s %-8s %5s %s\n",
            "kernel", "B", "W", "h", "g", "d", "ctx", "gen", "dtype", "cache", "splits", "status",
            "median_us", "GB/s", "%peak", "rel_err", "verified", "MHz", "flags");
    fflush(f);
}

void runner_print_row(FILE *f, const result_row_t *row)
{
    char kernel[72];
    if (strcmp(row->kernel, row->ran) != 0 && row->ran[0])
        snprintf(kernel, sizeof kernel, "%s>%s", row->kernel, row->ran);
    else
        snprintf(kernel, sizeof kernel, "%s", row->kernel);
    char cache[24], dtype[24];
    /* an 8-bit cache after the dtype (fp16/fp8); a cache in the dtype, the dtype alone */
    if (row->kv_dtype[0] && strcmp(row->kv_dtype, row->dtype) != 0)
        snprintf(dtype, sizeof dtype, "%s/%s", row->dtype, row->kv_dtype);
    else
        snprintf(dtype, sizeof dtype, "%s", row->dtype);
    if (row->block_size) snprintf(cache, sizeof cache, "%s%d", row->cache, row->block_size);
    else snprintf(cache, sizeof cache, "%s", row->cache);
    /* the whole step (--step append) is told in the last column, after the flags */
    char flags[48];
    snprintf(flags, sizeof flags, "%s%s%s", row->flags, row->flags[0] && !strcmp(row->step, "append") ? " " : "",
             strcmp(row->step, "append") ? "" : "append");
    fprintf(f, "%-18s %5d %5d %4d %4d %4d %7d %5d %-5s %-10s %6d %-11s %10.2f %8.1f %6.1f %9.2e %-8s %5.0f %s\n",
            kernel, row->batch, row->beam, row->heads, row->kv_heads, row->head_dim, row->ctx,
            row->gen, dtype, cache, row->splits, row->status, row->median_us, row->gbps,
            row->pct_peak_bw, row->rel_err, row->verified, row->sm_mhz, flags);
    fflush(f);
}
