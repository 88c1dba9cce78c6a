#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "runner.h"
#include "device.h"
#include "fill.h"
#include "layouts.h"
#include "memplan.h"
#include "nvtx.h"
#include "peak.h"
#include "../problem/presets.h"
#include "../problem/logical_data.h"
#include "../reference/reference.h"

/* the source revision, written by the Makefile into build/version.c */
extern const char attnbench_version[];

/* Verification checks every (stream, head) row while that costs at most this many
 * double-precision multiply-adds, else a random sample of rows (never fewer than
 * VERIFY_MIN_ROWS, always including the first and the last). */
#define VERIFY_MAC_BUDGET (1L << 28)
#define VERIFY_MIN_ROWS 24

int runner_open(runner_t *r, const timing_opts_t *timing, bool verify, bool time_it,
                uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->timing = *timing;
    r->verify = verify;
    r->time = time_it;
    r->seed = seed ? seed : ((uint64_t)time(NULL) << 20) ^ (uint64_t)clock();
    if (!device_available()) {
        fprintf(stderr, "attnbench: no CUDA GPU is usable on this machine; this command needs one\n");
        return -1;
    }
    cudaError_t e = device_query(&r->dev);
    if (e == cudaSuccess && time_it) {
        peak_t peak;
        nvtx_push("peak");
        e = peak_measure(&r->dev, &peak);
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
    if (k->unsupported(p)) return NULL;
    k->plan(p, &r->dev, plan);
    if (!plan->runs) plan->runs = k;
    return plan->runs;
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
    if (p->cache == CACHE_PAGED) MORE(" --block-size %d", p->block_size);
    if (p->indirection) MORE(" --indirection");
    MORE(" --multi-block %s", multi_block_name(p->multi_block));
    if (p->splits) MORE(" --splits %d", p->splits);
    if (p->q_scaling != 1.0) {
        /* the shortest text that reads back as the same double */
        char q[32];
        snprintf(q, sizeof q, "%.15g", p->q_scaling);
        if (strtod(q, NULL) != p->q_scaling) snprintf(q, sizeof q, "%.17g", p->q_scaling);
        MORE(" --q-scaling %s", q);
    }
    if (t->hot) MORE(" --hot");
    if (t->graph) MORE(" --graph");
#undef MORE
}

/* The row's configuration columns and the plan they record; returns the kernel the
 * plan runs, NULL when k does not support p. */
static const attn_kernel_t *describe(const runner_t *r, const problem_t *p,
                                     const attn_kernel_t *k, result_row_t *row, attn_plan_t *plan)
{
    result_row_init(row); /* every measured number starts as "not measured" */
    snprintf(row->gpu, sizeof row->gpu, "%s", r->dev.gpu);
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
    const attn_kernel_t *runs = plan_for(r, p, k, plan);
    row->splits = runs ? plan->split.splits : p->splits;
    snprintf(row->ran, sizeof row->ran, "%s", runs ? runs->name : k->name);
    snprintf(row->status, sizeof row->status, "%s", "ok");
    snprintf(row->verified, sizeof row->verified, "%s", "skip");
    snprintf(row->version, sizeof row->version, "%s", attnbench_version);
    snprintf(row->model, sizeof row->model, "%s", p->model ? p->model : "");
    row->layers = p->layers;
    row_args(p, k, &r->timing, row->args, sizeof row->args);
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
    void *q, *out, *kv[2], *workspace;
    int32_t *block_table, *owner, *first_pos, *indirection;
    int32_t *host_indirection;
    paged_map_t map;
    int have_map;
} buffers_t;

static void buffers_free(buffers_t *b)
{
    void *all[] = {b->q, b->out, b->kv[0], b->kv[1], b->workspace,
                   b->block_table, b->owner, b->first_pos, b->indirection};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
        if (all[i]) cudaFree(all[i]);
    free(b->host_indirection);
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

static cudaError_t launch_step(void *ctx, cudaStream_t s)
{
    attn_args_t *a = (attn_args_t *)ctx;
    return a->plan.runs->launch(a, s);
}

/* Compares the device output with the CPU reference on all rows or a sample. */
static cudaError_t verify_output(const problem_t *p, const attn_args_t *a,
                                 const int32_t *host_indirection, uint64_t seed,
                                 result_row_t *row)
{
    int d = p->head_dim;
    long rows = (long)problem_streams(p) * p->heads;
    size_t n = (size_t)rows * d;
    float *got = malloc(n * sizeof *got);
    if (!got) return cudaErrorMemoryAllocation;
    cudaError_t e = download_as_float(a->out, (int64_t)n, p->dtype, got);
    if (e == cudaSuccess) {
        ref_source_t src = {0};
        src.p = p;
        src.geom = a->geom;
        src.seed = seed;
        src.indirection = host_indirection;
        double per_row = 2.0 * problem_keys(p) * d;
        long check = (long)(VERIFY_MAC_BUDGET / per_row);
        if (check < VERIFY_MIN_ROWS) check = VERIFY_MIN_ROWS;
        if (check > rows) check = rows;
        /* rows are independent: the reference of each runs on its own core */
        long *at = malloc((size_t)check * sizeof *at);
        double *want = malloc((size_t)check * d * sizeof *want);
        if (!at || !want) {
            free(at);
            free(want);
            free(got);
            return cudaErrorMemoryAllocation;
        }
        for (long i = 0; i < check; ++i) /* all rows, or first, last, then random ones */
            at[i] = check == rows ? i
                  : i == 0 ? 0 : i == 1 ? rows - 1 : (long)(splitmix64(seed + i) % rows);
#pragma omp parallel for schedule(dynamic)
        for (long i = 0; i < check; ++i)
            reference_row(&src, (int)(at[i] / p->heads), (int)(at[i] % p->heads), want + i * d);
        err_acc_t acc = {0};
        for (long i = 0; i < check; ++i) err_add(&acc, want + i * d, got + (size_t)at[i] * d, d);
        free(at);
        free(want);
        row->rel_err = err_rel(&acc);
        row->max_abs_err = acc.max_abs;
        int ok = acc.nonfinite == 0 && row->rel_err <= tolerance_for(p->dtype);
        snprintf(row->verified, sizeof row->verified, "%s", ok ? "yes" : "no");
        if (!ok) snprintf(row->status, sizeof row->status, "%s", "mismatch");
    }
    free(got);
    return e;
}

/* After an error: a sticky one (an illegal address, a trap) leaves the CUDA context
 * unusable for the rest of the process; the caller must start a fresh process. */
static void check_sticky(runner_t *r)
{
    cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess) r->broken = true;
}

void runner_row(runner_t *r, const problem_t *p, const attn_kernel_t *k, result_row_t *row)
{
    attn_plan_t plan;
    const attn_kernel_t *run = describe(r, p, k, row, &plan);
    if (!run) {
        snprintf(row->status, sizeof row->status, "%s", "unsupported");
        return;
    }
    attn_io_t io = run->io(p, &plan);
    row->bytes = io.bytes;
    row->unique_bytes = io.unique_bytes;
    row->flops = io.flops;
    if (r->dev.peak_read_gbps > 0) {
        double t_bytes = io.unique_bytes / (r->dev.peak_read_gbps * 1e3);
        double t_flops = r->dev.peak_tc_tflops > 0 ? io.flops / (r->dev.peak_tc_tflops * 1e6) : 0;
        row->roofline_us = t_bytes > t_flops ? t_bytes : t_flops;
    }

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
    int set_up = 0;
    cudaError_t e = cudaSuccess;
#define CK(call) do { if (e == cudaSuccess) e = (call); } while (0)
    nvtx_push("fill");
    CK(alloc(&b.q, m.q));
    CK(alloc(&b.out, m.out));
    CK(alloc(&b.kv[0], m.kv[0]));
    CK(alloc(&b.kv[1], m.kv[1]));
    CK(alloc(&b.workspace, m.workspace));
    if (e == cudaSuccess && m.geom.layout == LAYOUT_PAGED) {
        if (paged_map_build(p, seed, &b.map) != 0) e = cudaErrorMemoryAllocation;
        else b.have_map = 1;
        size_t table = (size_t)problem_streams(p) * b.map.max_blocks_per_seq * sizeof(int32_t);
        size_t owners = (size_t)b.map.num_blocks * sizeof(int32_t);
        CK(upload((void **)&b.block_table, b.map.table, table, s));
        CK(upload((void **)&b.owner, b.map.owner, owners, s));
        CK(upload((void **)&b.first_pos, b.map.first_pos, owners, s));
    }
    if (e == cudaSuccess && p->indirection) {
        b.host_indirection = beam_history_build(p, seed);
        if (!b.host_indirection) e = cudaErrorMemoryAllocation;
        CK(upload((void **)&b.indirection, b.host_indirection,
                  (size_t)problem_streams(p) * problem_keys(p) * sizeof(int32_t), s));
    }
    CK(fill_q(b.q, p, seed, s));
    for (int part = 0; part < 2; ++part)
        if (m.kv_elements[part])
            CK(fill_kv(b.kv[part], m.kv_elements[part], p->dtype, &m.geom, part, seed, b.owner,
                       b.first_pos, s));
    CK(fill_nan(b.out, (int64_t)problem_streams(p) * p->heads * p->head_dim, p->dtype, s));
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
    a.workspace = b.workspace;
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
    /* One launch on the poisoned output, then the check, then the timing. */
    CK(launch_step(&a, s));
    CK(cudaStreamSynchronize(s));
    if (e == cudaSuccess && r->verify) {
        nvtx_push("verify");
        e = verify_output(p, &a, b.host_indirection, seed, row);
        nvtx_pop();
    }
    if (e == cudaSuccess && r->time) {
        timing_result_t t;
        e = timer_run(r->timer, launch_step, &a, &r->timing, &t); /* pushes warm-up, timed */
        if (e == cudaSuccess) {
            row->iters = t.times.n;
            row->median_us = t.times.median;
            row->p10_us = t.times.p10;
            row->p90_us = t.times.p90;
            row->min_us = t.times.min;
            row->max_us = t.times.max;
            row->noise = t.times.noise;
            row->sm_mhz = t.sm_mhz;
            row->gbps = io.bytes / (t.times.median * 1e3);
            if (r->dev.peak_read_gbps > 0)
                row->pct_peak_bw = 100.0 * row->gbps / r->dev.peak_read_gbps;
        }
    }
#undef CK
    if (set_up && run->teardown) run->teardown(&a);
    buffers_free(&b);
    nvtx_pop();
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        snprintf(row->status, sizeof row->status, "%s", "oom");
    } else if (e != cudaSuccess) {
        char what[160];
        problem_describe(p, what, sizeof what);
        fprintf(stderr, "attnbench: %s %s: CUDA error: %s\n", k->name, what, cudaGetErrorString(e));
        snprintf(row->status, sizeof row->status, "%s", "error");
        check_sticky(r);
    }
}

int row_failed(const result_row_t *row)
{
    return strcmp(row->status, "error") == 0 || strcmp(row->status, "mismatch") == 0;
}

void runner_print_header(FILE *f)
{
    fprintf(f, "%-18s %5s %5s %4s %4s %4s %7s %5s %-5s %-10s %6s %-11s %10s %8s %6s %9s %-8s %5s\n",
            "kernel", "B", "W", "h", "g", "d", "ctx", "gen", "dtype", "cache", "splits", "status",
            "median_us", "GB/s", "%peak", "rel_err", "verified", "MHz");
    fflush(f);
}

void runner_print_row(FILE *f, const result_row_t *row)
{
    char kernel[72];
    if (strcmp(row->kernel, row->ran) != 0 && row->ran[0])
        snprintf(kernel, sizeof kernel, "%s>%s", row->kernel, row->ran);
    else
        snprintf(kernel, sizeof kernel, "%s", row->kernel);
    char cache[24];
    if (row->block_size) snprintf(cache, sizeof cache, "%s%d", row->cache, row->block_size);
    else snprintf(cache, sizeof cache, "%s", row->cache);
    fprintf(f, "%-18s %5d %5d %4d %4d %4d %7d %5d %-5s %-10s %6d %-11s %10.2f %8.1f %6.1f %9.2e %-8s %5.0f\n",
            kernel, row->batch, row->beam, row->heads, row->kv_heads, row->head_dim, row->ctx,
            row->gen, row->dtype, cache, row->splits, row->status, row->median_us, row->gbps,
            row->pct_peak_bw, row->rel_err, row->verified, row->sm_mhz);
    fflush(f);
}
