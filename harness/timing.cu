#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include "nvtx.h"

#define FALLBACK_L2_BYTES (64 << 20)

/* SM 0's cycle counter and the GPU's nanosecond timer at one moment. */
typedef struct clock_stamp {
    unsigned long long ns, cycles;
} clock_stamp_t;

struct timer {
    cudaStream_t stream;
    void *flush;             /* read before each cold launch so that L2 holds none of the inputs */
    size_t flush_bytes;
    cudaEvent_t *start, *stop;
    int events;              /* event pairs created */
    double *samples;         /* per-launch microseconds, events long */
    clock_stamp_t *stamps;   /* device: SM 0's clock before and after the clock phase's launches */
    int sms;                 /* blocks of a stamp launch: one per SM, so that one lands on SM 0 */
};

/* One step of the measured work: either fn itself or its captured graph. */
typedef struct step {
    launch_fn fn;
    void *ctx;
    cudaGraphExec_t exec;
} step_t;

static cudaError_t ensure_events(timer_t_ *t, int n)
{
    if (n <= t->events) return cudaSuccess;
    cudaEvent_t *start = (cudaEvent_t *)realloc(t->start, (size_t)n * sizeof *start);
    if (!start) return cudaErrorMemoryAllocation;
    t->start = start;
    cudaEvent_t *stop = (cudaEvent_t *)realloc(t->stop, (size_t)n * sizeof *stop);
    if (!stop) return cudaErrorMemoryAllocation;
    t->stop = stop;
    double *samples = (double *)realloc(t->samples, (size_t)n * sizeof *samples);
    if (!samples) return cudaErrorMemoryAllocation;
    t->samples = samples;
    while (t->events < n) {
        cudaError_t err = cudaEventCreate(&t->start[t->events]);
        if (err != cudaSuccess) return err;
        err = cudaEventCreate(&t->stop[t->events]);
        if (err != cudaSuccess) {
            cudaEventDestroy(t->start[t->events]);
            return err;
        }
        ++t->events;
    }
    return cudaSuccess;
}

extern "C" cudaError_t timer_new(timer_t_ **out, const device_info_t *dev)
{
    if (!out) return cudaErrorInvalidValue;
    *out = NULL;
    timer_t_ *t = (timer_t_ *)calloc(1, sizeof *t);
    if (!t) return cudaErrorMemoryAllocation;
    int l2 = dev ? dev->l2_bytes : 0;
    t->sms = dev && dev->sm_count > 0 ? dev->sm_count : 1;
    if (l2 <= 0) {
        int id = 0;
        if (cudaGetDevice(&id) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, id) != cudaSuccess)
            l2 = 0;
        if (l2 <= 0) l2 = FALLBACK_L2_BYTES;
    }
    /* Twice the L2: whatever replacement policy it uses, none of the previous
     * contents survive. */
    t->flush_bytes = 2 * (size_t)l2;
    cudaError_t err = cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaMalloc(&t->flush, t->flush_bytes);
    if (err == cudaSuccess) err = cudaMemset(t->flush, 0x5a, t->flush_bytes);
    if (err == cudaSuccess) err = cudaMalloc(&t->stamps, 2 * sizeof *t->stamps);
    if (err == cudaSuccess) err = ensure_events(t, TIMING_MIN_ITERS);
    if (err != cudaSuccess) {
        timer_destroy(t);
        return err;
    }
    *out = t;
    return cudaSuccess;
}

extern "C" void timer_destroy(timer_t_ *t)
{
    if (!t) return;
    if (t->stream) cudaStreamSynchronize(t->stream);
    for (int i = 0; i < t->events; ++i) {
        cudaEventDestroy(t->start[i]);
        cudaEventDestroy(t->stop[i]);
    }
    free(t->start);
    free(t->stop);
    free(t->samples);
    if (t->stamps) cudaFree(t->stamps);
    if (t->flush) cudaFree(t->flush);
    if (t->stream) cudaStreamDestroy(t->stream);
    free(t);
}

extern "C" cudaStream_t timer_stream(timer_t_ *t) { return t ? t->stream : NULL; }

/* Reads the flush buffer: 16-byte loads, a store only on a value the buffer never
 * holds, so the loads cannot be dropped and nothing is written. */
__global__ void flush_read_kernel(const uint4 *buf, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcg(buf + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

/* Evicts the inputs of the previous launch from L2 by reading a buffer twice its
 * size. Reading, not writing (a memset would be the simpler flush): lines a memset
 * leaves dirty are written back to DRAM while the next timed kernel evicts them,
 * stealing up to an L2's worth of write bandwidth from it, which skews small rows
 * by tens of percent. After a read the L2 holds only clean lines. */
static cudaError_t flush_l2(timer_t_ *t)
{
    size_t n = t->flush_bytes / sizeof(uint4);
    flush_read_kernel<<<1024, 512, 0, t->stream>>>((const uint4 *)t->flush, n,
                                                   (unsigned *)t->flush);
    return cudaGetLastError();
}

/* Writes SM 0's clock stamp to *out: a block on every SM, the one on SM 0 writes (the
 * SMs' cycle counters are not one another's, so both stamps must come from the same
 * SM; nvbench reads the clock the same way). */
__global__ void clock_stamp_kernel(clock_stamp_t *out)
{
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid != 0 || threadIdx.x != 0) return;
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    out->cycles = clock64();
    out->ns = ns;
}

static cudaError_t clock_stamp(timer_t_ *t, clock_stamp_t *out)
{
    clock_stamp_kernel<<<t->sms, 32, 0, t->stream>>>(out);
    return cudaGetLastError();
}

static cudaError_t launch_step(timer_t_ *t, const step_t *s)
{
    cudaError_t err = s->exec ? cudaGraphLaunch(s->exec, t->stream) : s->fn(s->ctx, t->stream);
    if (err == cudaSuccess) err = cudaGetLastError();
    return err;
}

/* n launches, launch i between events start[first + i] and stop[first + i]; the flush before it
 * lies outside the events, and so does last's work around launch n - 1 (last may be
 * NULL). Per-launch microseconds land in t->samples. */
static cudaError_t timed_launches(timer_t_ *t, const step_t *s, int first, int n, bool hot,
                                  const timer_last_t *last)
{
    cudaError_t err = ensure_events(t, first + n);
    for (int i = first; i < first + n && err == cudaSuccess; ++i) {
        bool is_last = last && i == first + n - 1;
        if (is_last && last->before) err = last->before(last->ctx, t->stream);
        if (err == cudaSuccess && !hot) err = flush_l2(t);
        if (err == cudaSuccess) err = cudaEventRecord(t->start[i], t->stream);
        if (err == cudaSuccess) err = launch_step(t, s);
        if (err == cudaSuccess) err = cudaEventRecord(t->stop[i], t->stream);
        if (err == cudaSuccess && is_last && last->after) err = last->after(last->ctx, t->stream);
    }
    if (err != cudaSuccess) return err;
    return n > 0 ? cudaEventSynchronize(t->stop[first + n - 1]) : cudaSuccess;
}

static cudaError_t collect_samples(timer_t_ *t, int first, int n)
{
    for (int i = first; i < first + n; ++i) {
        float ms = 0.0f;
        cudaError_t err = cudaEventElapsedTime(&ms, t->start[i], t->stop[i]);
        if (err != cudaSuccess) return err;
        t->samples[i] = 1000.0 * ms;
    }
    return cudaSuccess;
}

/* Captures fn's launch sequence once. Relaxed mode: a launch function may make
 * calls (cuBLAS's own set-up, say) that the stricter modes forbid during capture. */
static cudaError_t capture(timer_t_ *t, launch_fn fn, void *ctx, cudaGraphExec_t *exec)
{
    *exec = NULL;
    cudaError_t err = cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) return err;
    cudaError_t fn_err = fn(ctx, t->stream);
    cudaGraph_t graph = NULL;
    err = cudaStreamEndCapture(t->stream, &graph);
    if (fn_err != cudaSuccess) err = fn_err;
    if (err == cudaSuccess) err = cudaGraphInstantiate(exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (err != cudaSuccess) {
        cudaGetLastError();   /* an invalidated capture leaves a non-sticky error behind */
        *exec = NULL;
    }
    return err;
}

static int adaptive_iters(double launch_us, double min_time_s)
{
    if (!(launch_us > 0.0) || !(min_time_s > 0.0)) return TIMING_MIN_ITERS;
    double n = ceil(min_time_s * 1e6 / launch_us);
    if (n < TIMING_MIN_ITERS) return TIMING_MIN_ITERS;
    if (n > TIMING_MAX_ITERS) return TIMING_MAX_ITERS;
    return (int)n;
}

/* Warm-up launches, timed like the real ones so that their median sizes the
 * adaptive count: --warmup of them (at least one when the count is adaptive), then
 * as many more as fill --min-time, so that the warm-up lasts as long as the timed
 * phase will. The timed launches then run at the clocks the GPU sustains under this
 * load, not in the boost that follows the idle GPU of verification and set-up: with a
 * few warm-up launches the largest power-capped rows measure one plan several percent
 * apart back to back (results/NOTES.md, Timing and measurement). With
 * --warmup 0 and a fixed --iters there is no warm-up at all. */
static cudaError_t warm_up(timer_t_ *t, const step_t *s, const timing_opts_t *o)
{
    int n = o->warmup;
    if (o->iters == 0 && n < 1) n = 1;
    nvtx_push(NVTX_PHASE_WARMUP);
    sample_summary_t w = {0};
    cudaError_t err = timed_launches(t, s, 0, n, o->hot, NULL);
    if (err == cudaSuccess) err = collect_samples(t, 0, n);
    if (err == cudaSuccess && n > 0 && stats_summarize(t->samples, n, &w) != 0) err = cudaErrorMemoryAllocation;
    const int more = n > 0 ? adaptive_iters(w.median, o->min_time_s) - n : 0;
    if (err == cudaSuccess && more > 0) {
        /* the steady part, whose median sizes the timed phase */
        err = timed_launches(t, s, 0, more, o->hot, NULL);
        if (err == cudaSuccess) err = collect_samples(t, 0, more);
        if (err == cudaSuccess && stats_summarize(t->samples, more, &w) != 0) err = cudaErrorMemoryAllocation;
    }
    nvtx_pop();
    return err;
}

/* Launches until the noise rule (stats_next_batch) says enough, in batches, each
 * batch's last launch getting last's work (so the final one is the last timed launch);
 * with --iters, exactly that many. *n: launches timed, *capped: the cap, not the
 * target, ended them (with --iters: the count ended them above the target). */
static cudaError_t timed_phase(timer_t_ *t, const step_t *s, const timing_opts_t *o,
                               const timer_last_t *last, int *n, int *capped)
{
    noise_rule_t rule = {o->max_noise, TIMING_NOISE_MIN_ITERS, o->max_time_s, TIMING_NOISE_MAX_ITERS};
    if (o->iters > 0) rule.min_iters = rule.max_iters = o->iters;
    double total_s = 0.0;
    int batch = rule.min_iters;
    cudaError_t err = cudaSuccess;
    *n = 0;
    *capped = 0;
    while (batch > 0 && err == cudaSuccess) {
        err = timed_launches(t, s, *n, batch, o->hot, last);
        if (err == cudaSuccess) err = collect_samples(t, *n, batch);
        for (int i = *n; i < *n + batch && err == cudaSuccess; ++i) total_s += 1e-6 * t->samples[i];
        *n += batch;
        if (err == cudaSuccess)
            batch = stats_next_batch(&rule, *n, stats_rel_stderr(t->samples, *n), total_s, capped);
    }
    return err;
}

static cudaError_t measure(timer_t_ *t, const step_t *s, const timing_opts_t *o,
                           const timer_last_t *last, int *iters, int *capped)
{
    nvtx_push(NVTX_PHASE_TIMED);
    cudaError_t err = o->profile ? cudaProfilerStart() : cudaSuccess;
    if (err == cudaSuccess) {
        err = timed_phase(t, s, o, last, iters, capped);
        if (o->profile) {
            cudaError_t stop_err = cudaProfilerStop();
            if (err == cudaSuccess) err = stop_err;
        }
    }
    nvtx_pop();
    return err;
}

/* The SM clock the timed launches ran at (*mhz), read over n more launches of the same
 * step right after them: SM 0's cycles over the GPU timer's nanoseconds from before
 * the first of them to after the last (flushes included: the power cap moves the
 * clock over milliseconds, not between a launch and its flush). Apart from the timed
 * launches, which run as they would without it: clock stamps among the timed launches
 * move small rows by a few percent (results/NOTES.md, Timing and measurement). */
static cudaError_t clock_phase(timer_t_ *t, const step_t *s, bool hot, int n, double *mhz)
{
    clock_stamp_t host[2];
    *mhz = NAN;
    nvtx_push(NVTX_PHASE_CLOCK);
    cudaError_t err = cudaMemsetAsync(t->stamps, 0, 2 * sizeof *t->stamps, t->stream);
    if (err == cudaSuccess) err = clock_stamp(t, &t->stamps[0]);
    if (err == cudaSuccess) err = timed_launches(t, s, 0, n, hot, NULL);
    if (err == cudaSuccess) err = clock_stamp(t, &t->stamps[1]);
    if (err == cudaSuccess) err = cudaMemcpyAsync(host, t->stamps, sizeof host, cudaMemcpyDeviceToHost, t->stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(t->stream);
    nvtx_pop();
    /* NaN where a stamp is missing: no block landed on SM 0 (zeroed first) */
    if (err == cudaSuccess) *mhz = stats_clock_mhz(host[0].ns, host[0].cycles, host[1].ns, host[1].cycles);
    return err;
}

extern "C" cudaError_t timer_run(timer_t_ *t, launch_fn fn, void *ctx, const timing_opts_t *o,
                                 const timer_last_t *last, timing_result_t *r)
{
    if (r) memset(r, 0, sizeof *r);
    if (!t || !fn || !o || !r || o->warmup < 0 || o->iters < 0 || o->iters > TIMING_ITERS_LIMIT ||
        o->warmup > TIMING_ITERS_LIMIT)
        return cudaErrorInvalidValue;

    step_t s = {fn, ctx, NULL};
    cudaError_t err = o->graph ? capture(t, fn, ctx, &s.exec) : cudaSuccess;
    int iters = 0;
    r->sm_mhz = NAN;
    int capped = 0;
    if (err == cudaSuccess) err = warm_up(t, &s, o);
    if (err == cudaSuccess) err = measure(t, &s, o, last, &iters, &capped);
    if (err == cudaSuccess && stats_summarize(t->samples, iters, &r->times) != 0) err = cudaErrorMemoryAllocation;
    if (err == cudaSuccess) {
        r->rel_stderr = stats_rel_stderr(t->samples, iters);
        r->capped_above_target = capped;
    }
    /* a tenth as many launches again; none under the profilers (--profile), whose
     * replays set clocks of their own */
    if (err == cudaSuccess && !o->profile) err = clock_phase(t, &s, o->hot, (iters + 9) / 10, &r->sm_mhz);
    /* Leave the stream idle whatever happened, so the caller can free buffers. */
    cudaError_t sync_err = cudaStreamSynchronize(t->stream);
    if (err == cudaSuccess) err = sync_err;
    if (s.exec) cudaGraphExecDestroy(s.exec);
    return err;
}
