/* --tp: the shares of a step and their combination (tp.h). */
#include "tp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

problem_t tp_share(const problem_t *p)
{
    problem_t s = *p;
    int n = p->tp > 0 ? p->tp : 1;
    s.heads = p->heads / n;
    s.kv_heads = p->kv_heads / n;
    s.tp = 1;
    return s;
}

int tp_format_us(const double *median_us, int n, char *buf, size_t len)
{
    size_t at = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < n; ++i) {
        int w = isfinite(median_us[i]) ? snprintf(buf + at, len - at, "%s%.3f", i ? ";" : "", median_us[i])
                                       : snprintf(buf + at, len - at, "%snan", i ? ";" : "");
        if (w < 0 || (size_t)w >= len - at) return -1;
        at += (size_t)w;
    }
    return 0;
}

static double max_of(double a, double b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    return a > b ? a : b;
}

void tp_combine(const result_row_t *shares, int n, result_row_t *step)
{
    if (n < 1) return;
    step->tp = n;
    snprintf(step->gpu, sizeof step->gpu, "%s", shares[0].gpu);
    snprintf(step->ran, sizeof step->ran, "%s", shares[0].ran);
    step->splits = shares[0].splits;
    step->peak_gbps = shares[0].peak_gbps;
    step->peak_tflops = shares[0].peak_tflops;
    double medians[TP_MAX];
    int slow = 0, all_yes = 1, any_no = 0;
    const char *status = "ok";
    step->bytes = step->unique_bytes = step->workspace_bytes = step->flops = 0;
    for (int i = 0; i < n; ++i) {
        const result_row_t *s = &shares[i];
        if (i < TP_MAX) medians[i] = s->median_us;
        if (!strcmp(status, "ok") && strcmp(s->status, "ok")) status = s->status;
        all_yes &= !strcmp(s->verified, "yes");
        any_no |= !strcmp(s->verified, "no");
        step->max_abs_err = max_of(step->max_abs_err, s->max_abs_err);
        step->rel_err = max_of(step->rel_err, s->rel_err);
        step->bytes += s->bytes;
        step->unique_bytes += s->unique_bytes;
        step->workspace_bytes += s->workspace_bytes;
        step->flops += s->flops;
        step->roofline_us = max_of(step->roofline_us, s->roofline_us);
        if (!isnan(s->median_us) && (isnan(shares[slow].median_us) || s->median_us > shares[slow].median_us))
            slow = i;
    }
    snprintf(step->status, sizeof step->status, "%s", status);
    snprintf(step->verified, sizeof step->verified, "%s", all_yes ? "yes" : any_no ? "no" : "skip");
    tp_format_us(medians, n < TP_MAX ? n : TP_MAX, step->tp_us, sizeof step->tp_us);
    if (strcmp(status, "ok") != 0) return;   /* a step of a failed share has no time */
    const result_row_t *s = &shares[slow];
    step->iters = s->iters;
    step->median_us = s->median_us;
    step->p10_us = s->p10_us;
    step->p90_us = s->p90_us;
    step->min_us = s->min_us;
    step->max_us = s->max_us;
    step->noise = s->noise;
    step->sm_mhz = s->sm_mhz;
    snprintf(step->flags, sizeof step->flags, "%s", s->flags);
    step->gbps = step->bytes / (step->median_us * 1e3);
    if (s->peak_gbps > 0) step->pct_peak_bw = 100.0 * step->gbps / (n * s->peak_gbps);
    if (s->pct_spec_bw > 0 && s->gbps > 0)
        step->pct_spec_bw = 100.0 * step->gbps / (n * s->gbps * 100.0 / s->pct_spec_bw);
}
