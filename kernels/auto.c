/* `auto`: the workload-based switch of the bifurcated-attention paper's FAQ 4.
 *
 * The model predicts each candidate's time from the bytes and FLOPs its own io()
 * reports, against the peaks `peak` measured on this GPU:
 *   fused:       a fixed cost, then the larger of its memory time (every stream reads
 *                its whole L; on a paged cache the shared blocks come from DRAM once,
 *                and every stream's read of them from L2, at FUSED_L2_EFFICIENCY of the
 *                L2 read rate `peak` measures) and its tensor-core time, plus
 *                FUSED_UNOVERLAPPED of the smaller, which its pipeline does not hide
 *                where the two are alike (MQA-like groups), plus the merge launch's
 *                time where its split grid is merged by one: a launch and a cost per
 *                partial (MQA-like groups on a small grid have many partials a row);
 *   bifurcated:  a larger fixed cost (a context launch, a decode launch or the
 *                decode part streamed by the 128-key context CTAs, and a merge
 *                launch with the wgmma context body or, with the mma.sync body, where
 *                W*p is too small for wgmma, a merge by the decode part's last CTAs),
 *                then its memory time (the context once per request) plus its
 *                tensor-core time, which it does not overlap as well.
 * Bifurcation wins once the context traffic it saves, (W - 1) * B * m_c rows of K/V,
 * outweighs its fixed cost. With W = 1 it saves nothing, and is weighed all the same:
 * on Hopper at d = 128 its wgmma context body reads an MQA group's K/V about as fast
 * as `fused` does.
 *
 * Each constant (auto_internal.h) is the middle of the range in which the model picks the
 * faster kernel, or one within 5% of it, on every row of the committed `bifurcated`
 * sweeps of both GPUs and both caches; tests/test_auto.c replays the model on them.
 * The model sums bifurcated's fixed cost and its context FLOPs, so near W = 4-8 on
 * MQA the crossings it finds are its own, not the kernels'.
 * An 8-bit cache (docs/KV-QUANT.md) is weighed alike: each kernel's io() counts it at
 * 1 B an element; bifurcated runs it on its mma.sync bodies (BIFURCATED_ROWSPLIT_FIXED_US),
 * their tensor-core work at fused's rate, the steps being fused's. No 8-bit sweep has
 * checked these crossings.
 * A ragged batch (--ctx-dist) adds a floor to each: the time of its longest CTA
 * (ragged_longest_cta_us). */
#include <math.h>
#include <stddef.h>
#include "auto_internal.h"

extern const attn_kernel_t kernel_fused;
extern const attn_kernel_t kernel_bifurcated;

#define DEFAULT_READ_GBPS 3000.0
#define DEFAULT_L2_GBPS 7000.0
#define DEFAULT_TC_TFLOPS 800.0

static double read_gbps(const device_info_t *dev)
{
    return dev->peak_read_gbps > 0 ? dev->peak_read_gbps : DEFAULT_READ_GBPS;
}
static double l2_gbps(const device_info_t *dev)
{
    return dev->peak_l2_gbps > 0 ? dev->peak_l2_gbps : DEFAULT_L2_GBPS;
}

static void model_terms(const attn_kernel_t *k, const problem_t *p, const attn_plan_t *plan,
                        const device_info_t *dev, double tc_efficiency, double *t_bytes,
                        double *t_flops)
{
    attn_io_t io = k->io(p, plan);
    double tflops = dev->peak_tc_tflops > 0 ? dev->peak_tc_tflops : DEFAULT_TC_TFLOPS;
    *t_bytes = (io.bytes + io.workspace_bytes) / (read_gbps(dev) * 1e3);
    *t_flops = io.flops / (tflops * tc_efficiency * 1e6);
}

/* fused's merge launch, where its plan has one (slots > 0 partials per row). */
static double fused_merge_us(int slots)
{
    return slots > 0 ? FUSED_MERGE_LAUNCH_US + FUSED_MERGE_SLOT_US * slots : 0.0;
}

/* A ragged batch's longest CTA: its chunk of one kv head's keys, read at an SM's share of
 * the peak. The byte model counts the keys stored, as if spread evenly; fused's planner
 * cuts a long request into chunks that keep to that, but bifurcated's plans its split for
 * the longest request as if every request were as long (docs/RAGGED.md), so that one
 * 64k request among 1k ones leaves a handful of CTAs reading 64k keys each while the
 * rest of the GPU idles: a step that cannot end before them. */
static double ragged_longest_cta_us(const problem_t *p, const attn_plan_t *plan, const device_info_t *dev)
{
    if (!problem_ragged(p) || dev->sm_count < 1) return 0.0;
    int keys = problem_ctx_max(p) + p->gen;
    if (plan->split.chunk >= 1 && plan->split.chunk < keys) keys = plan->split.chunk;
    const double bytes = keys * io_kv_row_bytes(p) / p->kv_heads;
    return bytes / (read_gbps(dev) / dev->sm_count * 1e3);
}

/* Predicted microseconds of one step of `fused` and of `bifurcated`. */
double auto_predict_fused_us(const problem_t *p, const attn_plan_t *plan, const device_info_t *dev)
{
    double tb, tf;
    model_terms(&kernel_fused, p, plan, dev, FUSED_TC_EFFICIENCY, &tb, &tf);
    if (p->cache == CACHE_PAGED) {
        /* DRAM sees a shared block once, but every stream still reads it: all W
         * reads pass through L2, at FUSED_L2_EFFICIENCY of the rate `peak` measures */
        double reread = io_kv_bytes_replicated(p) / (FUSED_L2_EFFICIENCY * l2_gbps(dev) * 1e3);
        if (reread > tb) tb = reread;
    }
    const double run = fmax(tb > tf ? tb + FUSED_UNOVERLAPPED * tf : tf + FUSED_UNOVERLAPPED * tb,
                            ragged_longest_cta_us(p, plan, dev));
    return FUSED_FIXED_US + run + fused_merge_us(fused_plan_merge_slots(p, plan));
}

/* bifurcated's tensor-core rate: BIFURCATED_TC_EFFICIENCY, fitted on the 16-bit sweeps;
 * on an 8-bit cache, whose two parts run the mma.sync steps of fused's 8-bit body
 * (tc_scores8, tc_accumulate_pv8) and never the wgmma one, fused's. */
static double bifurcated_tc_efficiency(const problem_t *p)
{
    return p->kv_quant != KV_QUANT_NONE ? FUSED_TC_EFFICIENCY : BIFURCATED_TC_EFFICIENCY;
}

double auto_predict_bifurcated_us(const problem_t *p, const attn_plan_t *plan,
                                  const device_info_t *dev)
{
    double tb, tf;
    model_terms(&kernel_bifurcated, p, plan, dev, bifurcated_tc_efficiency(p), &tb, &tf);
    double fixed = bifurcated_context_on_wgmma(plan) ? BIFURCATED_FIXED_US : BIFURCATED_ROWSPLIT_FIXED_US;
    return fixed + fmax(tb + tf, ragged_longest_cta_us(p, plan, dev));
}

static const char *auto_unsupported(const problem_t *p)
{
    return kernel_fused.unsupported(p);
}

static kv_layout_t auto_layout(const problem_t *p)
{
    /* the runner allocates for the kernel the plan picked; this is the fallback */
    return kernel_fused.layout(p);
}

static void auto_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    attn_plan_t fused = {0}, bif = {0};
    kernel_fused.plan(p, dev, &fused);
    fused.runs = &kernel_fused;
    *plan = fused;
    if (kernel_bifurcated.unsupported(p)) return;
    kernel_bifurcated.plan(p, dev, &bif);
    bif.runs = &kernel_bifurcated;
    if (auto_predict_bifurcated_us(p, &bif, dev) < auto_predict_fused_us(p, &fused, dev))
        *plan = bif;
}

static size_t auto_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    return plan->runs->workspace_bytes(p, plan);
}

static attn_io_t auto_io(const problem_t *p, const attn_plan_t *plan)
{
    return plan->runs->io(p, plan);
}

static cudaError_t auto_launch(attn_args_t *a, cudaStream_t s)
{
    return a->plan.runs->launch(a, s);
}

const attn_kernel_t kernel_auto = {
    .name = "auto",
    .summary = "picks bifurcated or fused (and the split count) from a bytes-moved cost model",
    .supports = "what fused supports; the CSV column `ran` names the kernel it picked",
    .unsupported = auto_unsupported,
    .layout = auto_layout,
    .plan = auto_plan,
    .workspace_bytes = auto_workspace_bytes,
    .io = auto_io,
    .launch = auto_launch,
    .runs_append = 1,
};
