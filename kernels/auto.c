/* `auto`: the workload-based switch of the bifurcated-attention paper's FAQ 4.
 *
 * The model predicts each candidate's time from the bytes and FLOPs its own io()
 * reports, against the peaks `peak` measured on this GPU:
 *   fused:       a fixed cost, then the larger of its memory time (every stream reads
 *                its whole L; on a paged cache the shared blocks come from DRAM once,
 *                and every stream's read of them from L2 at the L2 read rate `peak`
 *                measures: about 7.0 TB/s on the H100, 7.6-8.1 on the H200, against
 *                6.4-7.5 TB/s of re-reads measured with fused at W >= 4) and its
 *                tensor-core time, plus a quarter of the smaller, which its pipeline
 *                does not hide (MQA-like groups, where the two are alike: at W = 16,
 *                16k the max alone predicted 43.8 us for a step of 57.0), plus the
 *                merge launch's time where its split grid is merged by one, a launch
 *                and a cost per partial (MQA-like groups on a small grid: 103 splits
 *                of W = 1-2 at 32k took about 10 us beyond the rest);
 *   bifurcated:  a larger fixed cost (a context launch, a decode launch or the
 *                decode part streamed by the 128-key context CTAs, and a merge
 *                launch with the wgmma context body or, with the mma.sync body, where
 *                W*p is too small for wgmma, a merge by the decode part's last CTAs),
 *                then its memory time (the context once per request) plus its
 *                tensor-core time, which it does not overlap as well.
 * The constants were fitted on the sweeps in results/h200/ (bifurcated.csv and
 * bifurcated-paged.csv, checked against peaks 2% lower and higher than measured:
 * the wgmma context body reaches about half the measured GEMM rate end to end, the
 * mma.sync and CUDA-core paths of `fused` about a seventh). The mma.sync body's fixed
 * cost is the middle of the range (17-19 us) that picks the faster kernel, or one
 * within 5% of it, on every row of both GPUs' sweeps at 54b0dd8 (at 20 us the H100's
 * g = 8, W = 2, 8k row ran `fused` 7.2% slower than `bifurcated`; at 16 us the
 * H200's ran `bifurcated` 8% slower than `fused`). FUSED_UNOVERLAPPED: without it, on
 * an H200 measuring 854 TFLOP/s at 7ea16da the MQA row W = 16, 16k predicted 43.8 us
 * for fused and 43.9 for bifurcated and ran fused, 22.8% slower (57.0 against 46.4).
 * BIFURCATED_FIXED_US and BIFURCATED_TC_EFFICIENCY were refitted together on the four
 * committed sweeps at 146af13 (both GPUs, both caches): 16.0 us and 0.56 are the
 * middle of the region (15.8-16.2 us at 0.56-0.57) where the pick takes at most 2.9%
 * longer than the faster kernel on every row (the H200's contiguous MQA row W = 4,
 * 16k; tests/test_auto.c replays them). At 17.0 us and 0.52, fitted before on the
 * H200's sweep at 0ba2613 (where the merge launch of many partials became a fraction
 * of what it was: 28 us before, at which MQA at W = 8, 16k ran fused, 18.3% slower),
 * the H100's paged MQA row W = 2, 32k ran fused 4.5% slower and the H200's paged GQA
 * row W = 2, 32k fused 4.2% slower, and its `auto` row, timed apart, 5.3%; from 16.3
 * us that H200 row runs fused again, and below 15.8 the H100's paged MQA row W = 8, 8k
 * runs bifurcated, 3.9% slower. On the sweeps run again with these constants (36f5906)
 * every pick is within 4.5%: that H200 row, at that sweep's peaks, picks fused with any
 * pair of the two near there (fused's row 49.5 us, bifurcated's 47.4; its auto row 48.9).
 * FUSED_MERGE_SLOT_US and FUSED_MERGE_LAUNCH_US are the merge
 * of fused's split grid, a programmatic dependent of it since 36344a7 (1.2-1.8 us less
 * than the launch behind it before, results/h100/merge-pdl/) that folds a row's
 * partials in rounds of eight a warp since b137f45 (a row of 103 partials, MQA W = 1 at
 * 32k, 24.8 -> 20.6 us on the H100, results/h100/merge-rounds/). Fitted on both GPUs'
 * sweeps at 4d0485f (contiguous and paged; `attnbench` peaks of each sweep's log): the
 * model picks within 5% on every row with a launch of 0.5 us and from 0.026 to 0.058 us a
 * partial, and 0.04 is the middle (at 0.06 the H200's contiguous MQA row W = 1, 32k ran
 * bifurcated, 7.9% slower: 21.9 against 20.3 us). On the four committed sweeps, both GPUs
 * at 402b4c6, the range is 0.028-0.058 us: below it the H200's paged MQA row W = 2, 32k
 * runs fused, 11.5% slower (24.5 against 22.0 us), from 0.06 the H200's contiguous MQA
 * row W = 1, 32k bifurcated (21.9 against 20.3); at 0.04 us a partial any launch cost
 * from 0 to 1.9 us places every row. The model sums bifurcated's fixed cost
 * and its context FLOPs, so it prices MQA's W = 8 about 3 us above W = 4 where the two
 * measure closer: the crossings near there are the model's, not the kernels'. FUSED_L2_EFFICIENCY is
 * the middle of the range (0.93-0.95) that picks within 5% on the three paged sweeps at
 * hand (H200 at 3046cbe and 088af40, H100 at 3046cbe): fused's streams re-read the shared
 * blocks at about 7.45 TB/s on an H200 whose `peak` read 8045 from L2 (MHA, W = 2 and
 * 4, 8k-32k), and at the full rate the H200's MHA row W = 2, 16k predicted fused 78.3 us
 * and bifurcated 80.6, and ran fused, 6.8-8.6% slower (84.4 against 79.0 us). Bifurcation wins once
 * the context traffic it saves, (W - 1) * B * m_c rows of K/V, outweighs its fixed
 * cost. With W = 1 it saves nothing, and is weighed all the same:
 * on Hopper at d = 128 its wgmma context body reads an MQA group's K/V about as fast as
 * `fused` does (MQA, W = 1, 32k: 22.9 against 20.8 us on the H100's
 * contiguous sweep at 402b4c6, 22.0 against 21.4 on the H200's paged one), and the
 * model's constants place those rows too. */
#include <stddef.h>
#include "auto.h"

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
    return FUSED_FIXED_US + (tb > tf ? tb + FUSED_UNOVERLAPPED * tf : tf + FUSED_UNOVERLAPPED * tb) +
           fused_merge_us(fused_plan_merge_slots(p, plan));
}

double auto_predict_bifurcated_us(const problem_t *p, const attn_plan_t *plan,
                                  const device_info_t *dev)
{
    double tb, tf;
    model_terms(&kernel_bifurcated, p, plan, dev, BIFURCATED_TC_EFFICIENCY, &tb, &tf);
    double fixed = bifurcated_context_on_wgmma(plan) ? BIFURCATED_FIXED_US : BIFURCATED_ROWSPLIT_FIXED_US;
    return fixed + tb + tf;
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
};
