/* `auto`: the workload-based switch of the bifurcated-attention paper's FAQ 4.
 *
 * Both candidates are memory-bound, so the cost model is the time to move each one's
 * bytes at the measured read bandwidth plus a fixed cost per extra launch:
 *   fused:       every stream reads its whole L (the context replicated W times);
 *   bifurcated:  the context once per request, decoded K/V per stream, but a second
 *                kernel and a merge of partial results.
 * Bifurcation wins as soon as the context traffic it saves, (W - 1) * B * m_c rows
 * of K/V, outweighs its fixed cost; with W = 1 it saves nothing. The FLOPs of both
 * are equal, and on tensor cores they stay under the memory time for W*p up to
 * the low thousands, so they only enter as a floor. */
#include <stddef.h>
#include "registry.h"

extern const attn_kernel_t kernel_fused;
extern const attn_kernel_t kernel_bifurcated;

/* What one extra dependent launch costs on the timeline (launch gap and tail of
 * the previous grid), in microseconds. */
#define EXTRA_LAUNCH_US 4.0
/* Bandwidth assumed when `peak` has not been measured (planning only). */
#define DEFAULT_READ_GBPS 3000.0

static double predicted_us(const attn_kernel_t *k, const problem_t *p, const attn_plan_t *plan,
                           const device_info_t *dev, int launches)
{
    attn_io_t io = k->io(p, plan);
    double gbps = dev->peak_read_gbps > 0 ? dev->peak_read_gbps : DEFAULT_READ_GBPS;
    double t_bytes = io.bytes / (gbps * 1e3);
    double t_flops = dev->peak_tc_tflops > 0 ? io.flops / (dev->peak_tc_tflops * 1e6) : 0.0;
    return (t_bytes > t_flops ? t_bytes : t_flops) + EXTRA_LAUNCH_US * (launches - 1);
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
    if (p->beam < 2 || kernel_bifurcated.unsupported(p)) return;
    kernel_bifurcated.plan(p, dev, &bif);
    bif.runs = &kernel_bifurcated;
    int fused_launches = fused.split.splits > 1 ? 2 : 1;
    if (predicted_us(&kernel_bifurcated, p, &bif, dev, 3) <
        predicted_us(&kernel_fused, p, &fused, dev, fused_launches))
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
