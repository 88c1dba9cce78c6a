/* --tp N (docs/SHARDING.md): the share of each GPU (heads/N, kv heads/N; the shares'
 * bytes and FLOPs add up to the step's), the step's row from its shares' (median the
 * slowest GPU's, tp_us each GPU's, verified only where all are), and the pool's running
 * of one job on N fake workers at once, their timing loops started together. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bench/pool.h"
#include "../harness/tp.h"
#include "../kernels/registry.h"
#include "../problem/split_plan.h"
#include "../report/csv_internal.h"
#include "../report/table.h"

static void a_share_is_heads_over_n(void **state)
{
    (void)state;
    problem_t p = problem_default();
    p.heads = 32;
    p.kv_heads = 8;
    p.beam = 16;
    p.ctx = 16384;
    p.gen = 128;
    p.tp = 2;
    char msg[256];
    assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
    problem_t s = tp_share(&p);
    assert_int_equal(s.heads, 16);
    assert_int_equal(s.kv_heads, 4);
    assert_int_equal(s.tp, 1);
    assert_int_equal(s.beam, 16);
    assert_int_equal(s.ctx, 16384);
    assert_int_equal(problem_validate(&s, msg, sizeof msg), 0);
    p.tp = 8;
    s = tp_share(&p);
    assert_int_equal(s.heads, 4);
    assert_int_equal(s.kv_heads, 1);
    /* N must divide both */
    p.tp = 16;
    assert_int_equal(problem_validate(&p, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--tp 16 must divide --heads 32 and --kv-heads 8"));
    p.tp = 3;
    assert_int_equal(problem_validate(&p, msg, sizeof msg), -1);
    p.tp = 1;
    s = tp_share(&p);
    assert_int_equal(s.heads, 32);
}

/* The N shares' bytes and FLOPs, planned alike, are the whole step's. */
static void the_shares_bytes_add_up(void **state)
{
    (void)state;
    const char *kernels[] = {"fused", "bifurcated"};
    for (size_t k = 0; k < 2; ++k) {
        const attn_kernel_t *kern = attn_kernel_find(kernels[k]);
        assert_non_null(kern);
        for (int n = 1; n <= 8; n *= 2) {
            problem_t p = problem_default();
            p.heads = 32;
            p.kv_heads = 8;
            p.head_dim = 128;
            p.beam = 16;
            p.ctx = 8192;
            p.gen = 128;
            p.tp = n;
            problem_t s = tp_share(&p);
            attn_plan_t plan;
            memset(&plan, 0, sizeof plan);
            plan.runs = kern;
            plan.split = split_plan_fixed(problem_keys(&p), 1, 1);
            attn_io_t whole = kern->io(&p, &plan), share = kern->io(&s, &plan);
            assert_true(fabs(n * share.bytes - whole.bytes) <= 1e-9 * whole.bytes);
            assert_true(fabs(n * share.unique_bytes - whole.unique_bytes) <= 1e-9 * whole.unique_bytes);
            assert_true(fabs(n * share.flops - whole.flops) <= 1e-9 * whole.flops);
        }
    }
}

static void per_gpu_times_are_joined(void **state)
{
    (void)state;
    char buf[96];
    double us[3] = {12.3456, 7.0, NAN};
    assert_int_equal(tp_format_us(us, 2, buf, sizeof buf), 0);
    assert_string_equal(buf, "12.346;7.000");
    assert_int_equal(tp_format_us(us, 3, buf, sizeof buf), 0);
    assert_string_equal(buf, "12.346;7.000;nan");
    assert_int_equal(tp_format_us(us, 1, buf, sizeof buf), 0);
    assert_string_equal(buf, "12.346");
    char small[8];
    assert_int_equal(tp_format_us(us, 2, small, sizeof small), -1);
    /* TP_MAX times of the largest fit the column */
    double big[TP_MAX];
    for (int i = 0; i < TP_MAX; ++i) big[i] = 99999.999;
    result_row_t r;
    assert_int_equal(tp_format_us(big, TP_MAX, r.tp_us, sizeof r.tp_us), 0);
}

static result_row_t share_row(double median, double bytes, const char *verified)
{
    result_row_t r;
    result_row_init(&r);
    snprintf(r.gpu, sizeof r.gpu, "h100");
    snprintf(r.status, sizeof r.status, "ok");
    snprintf(r.verified, sizeof r.verified, "%s", verified);
    snprintf(r.ran, sizeof r.ran, "fused");
    r.median_us = median;
    r.p10_us = median - 1;
    r.p90_us = median + 1;
    r.min_us = median - 2;
    r.max_us = median + 2;
    r.iters = (int)median;
    r.noise = 0.001;
    r.bytes = r.unique_bytes = bytes;
    r.flops = 2 * bytes;
    r.workspace_bytes = 0;
    r.peak_gbps = 3000;
    r.gbps = bytes / (median * 1e3);
    r.pct_spec_bw = 100.0 * r.gbps / 3350;
    r.roofline_us = bytes / 3e6;
    r.max_abs_err = median / 1000;
    r.rel_err = 0;
    return r;
}

static void the_step_is_its_slowest_gpu(void **state)
{
    (void)state;
    result_row_t shares[2] = {share_row(40.0, 1e8, "yes"), share_row(50.0, 1e8, "yes")};
    result_row_t step;
    result_row_init(&step);
    snprintf(step.status, sizeof step.status, "ok");
    tp_combine(shares, 2, &step);
    assert_int_equal(step.tp, 2);
    assert_true(step.median_us == 50.0);
    assert_true(step.p10_us == 49.0 && step.max_us == 52.0);   /* the slowest share's */
    assert_int_equal(step.iters, 50);
    assert_string_equal(step.tp_us, "40.000;50.000");
    assert_true(step.bytes == 2e8 && step.unique_bytes == 2e8 && step.flops == 4e8);
    assert_true(fabs(step.gbps - 2e8 / 50e3) < 1e-9);
    assert_true(fabs(step.pct_peak_bw - 100.0 * (2e8 / 50e3) / 6000) < 1e-9);
    assert_true(fabs(step.pct_spec_bw - 100.0 * (2e8 / 50e3) / 6700) < 1e-9);
    assert_true(step.max_abs_err == 0.05);
    assert_string_equal(step.verified, "yes");
    assert_string_equal(step.status, "ok");
    assert_string_equal(step.gpu, "h100");
    /* the slower first */
    result_row_t other[2] = {share_row(60.0, 1e8, "yes"), share_row(50.0, 1e8, "skip")};
    result_row_init(&step);
    tp_combine(other, 2, &step);
    assert_true(step.median_us == 60.0);
    assert_string_equal(step.tp_us, "60.000;50.000");
    assert_string_equal(step.verified, "skip");   /* verified only where every share is */
    other[1] = share_row(50.0, 1e8, "no");
    result_row_init(&step);
    tp_combine(other, 2, &step);
    assert_string_equal(step.verified, "no");
    /* a failed share fails the step, which has no time */
    result_row_t failed[2] = {share_row(40.0, 1e8, "yes"), share_row(NAN, 1e8, "skip")};
    snprintf(failed[1].status, sizeof failed[1].status, "error");
    result_row_init(&step);
    tp_combine(failed, 2, &step);
    assert_string_equal(step.status, "error");
    assert_true(isnan(step.median_us));
    assert_string_equal(step.tp_us, "40.000;nan");
}

/* The pool's fake workers: each job runs on every worker at once; a worker sleeps
 * slot*20 ms before its barrier, and says in its row when it arrived there and when it
 * was let go. */
#define JOBS_MAX 16
typedef struct fake {
    int width, die_slot, die_job;
    int reported[JOBS_MAX][4], died[JOBS_MAX][4];
    int seen[JOBS_MAX * 4], n_seen;
    double arrived[JOBS_MAX][4], left[JOBS_MAX][4];
} fake_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fake_worker(void *ctx, int slot, int starts, int in, int out)
{
    (void)starts;
    const fake_t *f = ctx;
    pool_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.job = POOL_READY;
    if (pool_send(out, &rep)) return 1;
    for (int j; (j = pool_next_job(in)) >= 0;) {
        if (j == f->die_job && slot == f->die_slot) raise(SIGKILL);
        struct timespec nap = {0, slot * 20 * 1000000L};
        nanosleep(&nap, NULL);
        memset(&rep, 0, sizeof rep);
        rep.row.p10_us = now_s();
        if (pool_barrier(in, out, j)) return 1;
        rep.row.p90_us = now_s();
        rep.job = j;
        rep.row.batch = slot;
        if (pool_send(out, &rep)) return 1;
    }
    return 0;
}

static int fake_record(void *ctx, int slot, pool_report_t *rep)
{
    fake_t *f = ctx;
    assert_int_equal(rep->row.batch, slot);
    f->reported[rep->job][slot]++;
    f->arrived[rep->job][slot] = rep->row.p10_us;
    f->left[rep->job][slot] = rep->row.p90_us;
    f->seen[f->n_seen++] = rep->job;
    return 0;
}

static int fake_died(void *ctx, int slot, int job, int status)
{
    (void)status;
    fake_t *f = ctx;
    f->died[job][slot]++;
    f->seen[f->n_seen++] = job;
    return 0;
}

static const pool_ops_t ops = {fake_worker, fake_record, fake_died, NULL};

static void assert_no_children(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void the_pool_runs_a_job_on_n_gpus_together(void **state)
{
    (void)state;
    int order[5] = {4, 2, 0, 1, 3};
    for (int width = 1; width <= 3; ++width) {
        fake_t f;
        memset(&f, 0, sizeof f);
        f.width = width;
        f.die_job = f.die_slot = -1;
        assert_int_equal(pool_run_tp(&ops, &f, width, order, 5), 0);
        assert_int_equal(f.n_seen, 5 * width);
        for (int k = 0; k < 5; ++k) {
            int j = order[k];
            /* one job at a time, each on every worker, in the order given */
            for (int s = 0; s < width; ++s) assert_int_equal(f.seen[k * width + s], j);
            double last_arrival = 0, first_leave = 1e300;
            for (int s = 0; s < width; ++s) {
                assert_int_equal(f.reported[j][s], 1);
                if (f.arrived[j][s] > last_arrival) last_arrival = f.arrived[j][s];
                if (f.left[j][s] < first_leave) first_leave = f.left[j][s];
            }
            /* nobody started timing before the last had arrived */
            assert_true(first_leave >= last_arrival);
        }
        assert_no_children();
    }
}

static void a_share_lost_does_not_hold_the_others(void **state)
{
    (void)state;
    int order[4] = {0, 1, 2, 3};
    fake_t f;
    memset(&f, 0, sizeof f);
    f.width = 2;
    f.die_job = 1;
    f.die_slot = 1;   /* dies before its barrier: slot 0 waits there */
    assert_int_equal(pool_run_tp(&ops, &f, 2, order, 4), 0);
    assert_int_equal(f.n_seen, 8);
    assert_int_equal(f.died[1][1], 1);
    assert_int_equal(f.reported[1][0], 1);
    for (int j = 0; j < 4; ++j)
        if (j != 1)
            for (int s = 0; s < 2; ++s) assert_int_equal(f.reported[j][s], 1);
    assert_no_children();
}

/* A worker's barrier outside pool_run_tp is let go at once, and its job goes on. */
static void a_barrier_on_one_gpu_waits_for_nobody(void **state)
{
    (void)state;
    int order[5] = {0, 1, 2, 3, 4};
    fake_t f;
    memset(&f, 0, sizeof f);
    f.die_job = f.die_slot = -1;
    assert_int_equal(pool_run(&ops, &f, 2, order, 5), 0);
    assert_int_equal(f.n_seen, 5);
    for (int j = 0; j < 5; ++j) assert_int_equal(f.reported[j][0] + f.reported[j][1], 1);
    assert_no_children();
}

/* table --paper 8: the TP=2 rows of mistral-7b, a line per (context, W) that ran, the
 * paper's columns SDPA, Bifurcated, Flash2; one-GPU rows of the same shape left out. */
static void paper8_is_the_tp2_rows(void **state)
{
    (void)state;
    char path[] = "/tmp/test_tp_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    csv_write_header(f);
    const struct { const char *kernel; int ctx, beam, tp; const char *status; double us; } rows[] = {
        {"cublas", 16384, 16, 2, "ok", 4108.125}, {"bifurcated", 16384, 16, 2, "ok", 1734.6875},
        {"fused", 16384, 16, 2, "ok", 2878.4375}, {"bifurcated", 32640, 32, 2, "ok", 1808.125},
        {"fused", 32640, 32, 2, "oom", NAN}, {"cublas", 32640, 32, 2, "oom", NAN},
        {"bifurcated", 32640, 64, 2, "ok", 1885.3125},
        {"bifurcated", 16384, 16, 1, "ok", 9999.0},   /* one GPU: not Table 8's */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
        result_row_t r;
        result_row_init(&r);
        snprintf(r.gpu, sizeof r.gpu, "h100");
        snprintf(r.kernel, sizeof r.kernel, "%s", rows[i].kernel);
        snprintf(r.ran, sizeof r.ran, "%s", rows[i].kernel);
        snprintf(r.attn, sizeof r.attn, "gqa");
        snprintf(r.dtype, sizeof r.dtype, "fp16");
        snprintf(r.cache, sizeof r.cache, "contiguous");
        snprintf(r.multi_block, sizeof r.multi_block, "auto");
        snprintf(r.verified, sizeof r.verified, "yes");
        snprintf(r.version, sizeof r.version, "test");
        snprintf(r.model, sizeof r.model, "mistral-7b");
        snprintf(r.status, sizeof r.status, "%s", rows[i].status);
        r.batch = 1;
        r.beam = rows[i].beam;
        r.heads = 32;
        r.kv_heads = 8;
        r.head_dim = 128;
        r.ctx = rows[i].ctx;
        r.gen = 128;
        r.layers = 32;
        r.tp = rows[i].tp;
        if (r.tp == 2) snprintf(r.tp_us, sizeof r.tp_us, "1.000;2.000");
        if (!strcmp(rows[i].status, "ok")) {
            r.iters = 100;
            r.median_us = r.p10_us = r.p90_us = r.min_us = r.max_us = rows[i].us;
            r.noise = 0.001;
        }
        csv_write_row(f, &r);
    }
    fclose(f);
    csv_table_t t;
    char msg[256];
    assert_int_equal(csv_read(path, &t, msg, sizeof msg), 0);
    unlink(path);
    table_opts_t o;
    table_opts_init(&o);
    o.paper = 8;
    o.format = TABLE_CSV;
    char *out = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&out, &n);
    assert_non_null(m);
    int rc = table_render(m, &t, &o, msg, sizeof msg);
    fclose(m);
    if (rc != 0) fail_msg("%s", msg);
    /* ms per token = median_us x 32 layers / 1000 */
    assert_string_equal(out, "Context,W,cublas,bifurcated,fused\n"
                             "16384,16,131.46,55.51,92.11\n"
                             "32640,32,OOM,57.86,OOM\n"
                             "32640,64,-,60.33,-\n");
    free(out);
    o.format = TABLE_MD;
    m = open_memstream(&out, &n);
    assert_int_equal(table_render(m, &t, &o, msg, sizeof msg), 0);
    fclose(m);
    assert_non_null(strstr(out, "Table 8 analogue"));
    assert_non_null(strstr(out, "tensor parallelism 2"));
    assert_non_null(strstr(out, "Flash2"));
    free(out);
    csv_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_share_is_heads_over_n),
        cmocka_unit_test(the_shares_bytes_add_up),
        cmocka_unit_test(per_gpu_times_are_joined),
        cmocka_unit_test(the_step_is_its_slowest_gpu),
        cmocka_unit_test(the_pool_runs_a_job_on_n_gpus_together),
        cmocka_unit_test(a_share_lost_does_not_hold_the_others),
        cmocka_unit_test(a_barrier_on_one_gpu_waits_for_nobody),
        cmocka_unit_test(paper8_is_the_tp2_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
