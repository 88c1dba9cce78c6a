/* run, sweep and verify: the commands that put kernels on the GPU. They share one
 * loop: expand the grid (or the suite's grids), one row per (configuration,
 * kernel), take the --shard's slice of them, and hand them to GPU worker processes
 * (pool.h), one per --devices entry; each row is printed and written to the CSV as it
 * completes. --dry-run lists the rows instead and touches no GPU. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "commands.h"
#include "../report/csv.h"
#include "out_csv.h"
#include "options.h"
#include "pool.h"
#include "suite.h"
#include "timeline.h"
#include "../harness/device.h"
#include "../harness/runner.h"
#include "../harness/schedule.h"
#include "../harness/tp.h"
#include "../harness/verify.h"

/* One (configuration, kernel) to run. */
typedef struct job {
    problem_t problem;
    const attn_kernel_t *kernel;
    int index;      /* its place in the whole grid: seeds its inputs, shard or not */
    double cost;    /* schedule_cost: how shards and devices share the heavy rows */
} job_t;

typedef struct tally {
    int rows, failed, skipped;
} tally_t;

/* What the parent and its GPU workers share (the workers read their copy). */
typedef struct run_ctx {
    command_t cmd;
    const options_t *o;
    const job_t *jobs;
    out_csv_t *csv;
    tally_t t;
    const int *devices;   /* --devices: the CUDA index of each worker slot; NULL: the default GPU */
    int n_devices;
    int workers;          /* worker processes running at once (pool_run starts no more than jobs) */
    char gpu[32];         /* the gpu of the rows: names the row of a job whose worker died */
    bool header;          /* the table's header is printed */
    int tp;               /* --tp: the GPUs each job is split over (pool_run_tp); 1: none */
    result_row_t shares[TP_MAX];   /* --tp: the rows of the job in hand, one per GPU */
    int got, skipped;     /* --tp: its shares reported (or died in), and said skipped */
    timeline_t time;      /* where the wall time went: the closing time lines */
} run_ctx_t;

/* --tp, in a worker: the barrier before a share's timing loop (pool_barrier). */
typedef struct tp_barrier {
    int in, out, job;
} tp_barrier_t;

static void tp_wait(void *vctx)
{
    const tp_barrier_t *b = vctx;
    pool_barrier(b->in, b->out, b->job);
}

/* The GPU side, in a worker process (pool.h): a sticky CUDA error (an illegal address
 * in one kernel) poisons the whole process, so the jobs run where the parent can
 * start another past the faulty one. */
static int gpu_worker(void *vctx, int slot, int starts, int in, int out)
{
    const double born = verify_seconds_now();
    const run_ctx_t *c = vctx;
    const options_t *o = c->o;
    if (c->devices) {
        /* before the first CUDA call of this process: the worker sees its GPU alone */
        char visible[64];
        if (pool_visible_device(getenv("CUDA_VISIBLE_DEVICES"), c->devices[slot], visible,
                                sizeof visible) != 0 ||
            setenv("CUDA_VISIBLE_DEVICES", visible, 1) != 0) {
            cmd_error(NULL, "--devices: cannot give device %d to its worker", c->devices[slot]);
            return 1;
        }
    }
    /* several workers at once: each verifies with its share of the cores (pool.h) */
    if (c->workers > 1) omp_set_num_threads(pool_thread_share(omp_get_max_threads(), c->workers, slot));
    timing_opts_t timing = {.warmup = o->warmup, .iters = o->iters, .min_time_s = o->min_time_s,
                            .max_noise = o->max_noise_pct / 100.0, .max_time_s = o->max_time_s,
                            .hot = o->hot, .graph = o->graph, .profile = o->profile};
    runner_t runner;
    int verify = c->cmd == CMD_VERIFY || o->verify;
    if (runner_open(&runner, &timing, verify, c->cmd != CMD_VERIFY, o->seed) != 0) return 1;
    runner.verify_budget_s = o->verify_time_s;
    if (starts == 0 && c->cmd != CMD_VERIFY) {
        char tag[32] = "";
        if (c->devices) snprintf(tag, sizeof tag, "device %d, ", c->devices[slot]);
        char when[640] = "measured";
        if (runner.peak_measured_at > 0)
            snprintf(when, sizeof when, "measured %.0f s before, kept in %s",
                     difftime(time(NULL), (time_t)runner.peak_measured_at), runner.peak_path);
        printf("# %s%s: read %.0f GB/s (from L2 %.0f), fp16 tensor cores %.0f TFLOP/s (%s)\n", tag,
               runner.dev.name, runner.dev.peak_read_gbps, runner.dev.peak_l2_gbps, runner.dev.peak_tc_tflops,
               when);
    }
    fflush(stdout);
    pool_report_t rep = {.job = POOL_READY, .spent = {.total_s = verify_seconds_now() - born, .peak_s = runner.peak_s}};
    if (pool_send(out, &rep) != 0) return 1;
    tp_barrier_t barrier = {.in = in, .out = out};
    if (c->tp > 1) {
        runner.before_timing = tp_wait;
        runner.before_timing_ctx = &barrier;
    }
    for (int i; (i = pool_next_job(in)) >= 0;) {
        const double handed = verify_seconds_now();
        memset(&rep, 0, sizeof rep);
        rep.job = i;
        /* a row's inputs follow from --seed and its place in the grid alone, so a resumed,
         * restarted, sharded or dealt sweep fills each row as an uninterrupted one would */
        runner.rows = c->jobs[i].index;
        if (o->resume && c->csv->n_done) {
            char key[1024];
            runner_describe_row(&runner, &c->jobs[i].problem, c->jobs[i].kernel, &rep.row);
            csv_row_key(&rep.row, key, sizeof key);
            rep.skipped = out_csv_done(c->csv, key);
        }
        /* --tp: this worker's share of the step, timed with the others' (tp_wait) */
        problem_t share = tp_share(&c->jobs[i].problem);
        barrier.job = i;
        if (!rep.skipped) {
            runner_row(&runner, &share, c->jobs[i].kernel, &rep.row);
            rep.spent = (pool_spent_t){.total_s = verify_seconds_now() - handed, .verify_s = runner.verify_s,
                                       .timing_s = runner.timing_s};
        }
        rep.last = runner.broken;
        fflush(stdout);
        if (pool_send(out, &rep) != 0) return 1;
        if (runner.broken) return 3;
    }
    runner_close(&runner);
    fflush(stdout);
    return 0;
}

/* Prints and writes one finished row. Returns 0, or -1 with one line on stderr when
 * --out cannot take it. */
static int record(run_ctx_t *c, result_row_t *row)
{
    /* verify counts a row it could not check as a failure */
    if (c->cmd == CMD_VERIFY && !strcmp(row->status, "ok") && strcmp(row->verified, "yes"))
        snprintf(row->status, sizeof row->status, "%s", "mismatch");
    if (!c->header) runner_print_header(stdout);
    c->header = true;
    runner_print_row(stdout, row);
    fflush(stdout);
    c->t.rows++;
    c->t.failed += row_failed(row);
    char msg[512];
    if (c->csv->path && out_csv_write(c->csv, row, msg, sizeof msg) != 0) {
        cmd_error(command_name(c->cmd), "--out %s", msg);
        return -1;
    }
    return 0;
}

/* --tp: one share of job j is in (or lost); with the last, the step's row. */
static int tp_share_done(run_ctx_t *c, int slot, int j, const result_row_t *row, int skipped)
{
    c->shares[slot] = *row;
    c->skipped += skipped;
    if (++c->got < c->tp) return 0;
    c->got = 0;
    if (c->skipped) {
        c->skipped = 0;
        c->t.skipped++;
        return 0;
    }
    const options_t *o = c->o;
    timing_opts_t timing = {.hot = o->hot, .graph = o->graph};
    result_row_t step;
    runner_describe_unplanned(c->gpu, &timing, &c->jobs[j].problem, c->jobs[j].kernel, &step);
    tp_combine(c->shares, c->tp, &step);
    step.device = c->devices ? c->devices[0] : 0;
    return record(c, &step);
}

static int on_report(void *vctx, int slot, pool_report_t *rep)
{
    run_ctx_t *c = vctx;
    if (!rep->skipped) timeline_row(&c->time, slot, &rep->spent, verify_seconds_now());
    if (c->tp > 1) {
        if (rep->row.gpu[0]) snprintf(c->gpu, sizeof c->gpu, "%s", rep->row.gpu);
        return tp_share_done(c, slot, rep->job, &rep->row, rep->skipped);
    }
    snprintf(c->gpu, sizeof c->gpu, "%s", rep->row.gpu);
    if (rep->skipped) {
        c->t.skipped++;
        return 0;
    }
    rep->row.device = c->devices ? c->devices[slot] : 0;
    return record(c, &rep->row);
}

static void on_ready(void *vctx, int slot, const pool_report_t *rep)
{
    run_ctx_t *c = vctx;
    timeline_ready(&c->time, slot, &rep->spent);
}

/* The worker died inside job j: that job is an error row (--resume runs it again). */
static int on_death(void *vctx, int slot, int j, int status)
{
    run_ctx_t *c = vctx;
    const options_t *o = c->o;
    /* the row's args, and so its key, as measured; no plan, which needs the GPU's own
     * description (the key holds the planned split count only where --splits forced it) */
    timing_opts_t timing = {.hot = o->hot, .graph = o->graph};
    result_row_t row;
    problem_t share = tp_share(&c->jobs[j].problem);
    runner_describe_unplanned(c->gpu, &timing, &share, c->jobs[j].kernel, &row);
    snprintf(row.status, sizeof row.status, "%s", "error");
    row.device = c->devices ? c->devices[slot] : 0;
    cmd_error(NULL, "%s: the process running it died (%s %d)", row.args,
              WIFSIGNALED(status) ? "signal" : "exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    if (c->tp > 1) return tp_share_done(c, slot, j, &row, 0);
    return record(c, &row);
}

/* The kinds of the GPUs this machine shows, asked in a child: CUDA set up in the
 * parent would be inherited, broken, by every worker it forks. Returns their count. */
static int probe_devices(char (*keys)[32], int max)
{
    int fds[2];
    if (pipe(fds) != 0) return 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        close(fds[0]);
        int n = device_keys(keys, max);
        int ok = write(fds[1], &n, sizeof n) == (ssize_t)sizeof n &&
                 (n == 0 || write(fds[1], keys, (size_t)n * sizeof *keys) == (ssize_t)(n * sizeof *keys));
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    int n = 0;
    if (read(fds[0], &n, sizeof n) != (ssize_t)sizeof n || n < 0 || n > max ||
        (n && read(fds[0], keys, (size_t)n * sizeof *keys) != (ssize_t)(n * sizeof *keys)))
        n = 0;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return n;
}

/* Runs jobs[0..n) on the default GPU, or dealt over --devices, the dearest first.
 * Returns 0, 1 when no GPU process could start, or 2 on bad --devices. */
static int run_jobs(run_ctx_t *c, options_t *o, int n)
{
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) {
        cmd_error(command_name(c->cmd), "out of host memory");
        return 1;
    }
    for (int i = 0; i < n; ++i) order[i] = i;
    int slots = 1;
    c->tp = n > 0 ? c->jobs[0].problem.tp : 1;
    for (int i = 1; i < n; ++i)
        if (c->jobs[i].problem.tp != c->tp) {
            cmd_error(command_name(c->cmd), "--tp: the rows of one run must all have one --tp "
                      "(%d and %d here): run them as two sweeps", c->tp, c->jobs[i].problem.tp);
            free(order);
            return 2;
        }
    if (c->tp > 1 || o->n_devices || o->all_devices) {
        static char keys[DEVICES_MAX][32];
        const double t0 = verify_seconds_now();
        int visible = probe_devices(keys, DEVICES_MAX);
        c->time.listed_s = verify_seconds_now() - t0;
        char msg[512];
        if (!visible) {
            cmd_error(NULL, "no CUDA GPU is usable on this machine; this command needs one");
            free(order);
            return 1;
        }
        /* --tp without --devices: the first tp GPUs */
        bool all = o->all_devices || (!o->n_devices && c->tp > 1);
        if (pool_devices_check((const char (*)[32])keys, visible, all, o->devices,
                               &o->n_devices, msg, sizeof msg) != 0) {
            cmd_error(command_name(c->cmd), "%s", msg);
            free(order);
            return 2;
        }
        if (o->n_devices < c->tp) {
            cmd_error(command_name(c->cmd), "--tp %d needs %d GPUs; %s %d", c->tp, c->tp,
                      all ? "this machine shows" : "--devices gives", o->n_devices);
            free(order);
            return 2;
        }
        if (c->tp > 1) o->n_devices = c->tp;   /* a step runs on the first tp; the others idle */
        snprintf(c->gpu, sizeof c->gpu, "%s", keys[o->devices[0]]);
        c->devices = o->devices;
        c->n_devices = slots = o->n_devices;
        double *cost = malloc((size_t)(n > 0 ? n : 1) * sizeof *cost);
        for (int i = 0; cost && i < n; ++i) cost[i] = c->jobs[i].cost;
        if (!cost || schedule_order(cost, n, order) != 0) for (int i = 0; i < n; ++i) order[i] = i;
        free(cost);
    }
    c->workers = c->tp > 1 || slots < n ? slots : n;
    pool_ops_t ops = {.worker = gpu_worker, .record = on_report, .died = on_death, .ready = on_ready};
    int rc = c->tp > 1 ? pool_run_tp(&ops, c, c->tp, order, n) : pool_run(&ops, c, slots, order, n);
    free(order);
    return rc;
}

/* Every (configuration, kernel) of every suite entry, in order. */
static int expand_jobs(const suite_entry_t *entries, int n_entries, job_t **jobs, int *n)
{
    *jobs = NULL;
    *n = 0;
    int cap = 0;
    char msg[256];
    for (int e = 0; e < n_entries; ++e) {
        problem_t *problems = NULL;
        int np = 0;
        if (grid_expand(&entries[e].grid, &problems, &np, msg, sizeof msg) != 0) {
            cmd_error(NULL, "%s", msg);
            free(*jobs);
            return 2;
        }
        for (int i = 0; i < np; ++i)
            for (int k = 0; k < entries[e].n_kernels; ++k) {
                if (*n == cap) {
                    cap = cap ? 2 * cap : 256;
                    job_t *grown = realloc(*jobs, (size_t)cap * sizeof **jobs);
                    if (!grown) {
                        free(problems);
                        free(*jobs);
                        cmd_error(NULL, "out of host memory");
                        return 2;
                    }
                    *jobs = grown;
                }
                job_t *j = &(*jobs)[*n];
                j->problem = problems[i];
                j->kernel = attn_kernel_find(entries[e].kernels[k]);
                j->index = *n;
                j->cost = schedule_cost(&j->problem, j->kernel);
                (*n)++;
            }
        free(problems);
    }
    return 0;
}

/* --shard I/N: keeps the jobs of that slice, in grid order. */
static int select_shard(const options_t *o, job_t *jobs, int *n)
{
    if (!o->shards) return 0;
    double *cost = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *cost);
    int *mine = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *mine);
    int k = cost && mine ? 0 : -1;
    for (int i = 0; k == 0 && i < *n; ++i) cost[i] = jobs[i].cost;
    if (k == 0) k = schedule_shard(cost, *n, o->shard - 1, o->shards, mine);
    for (int i = 0; i < k; ++i) jobs[i] = jobs[mine[i]];   /* mine ascends: no job is overwritten unread */
    free(cost);
    free(mine);
    if (k < 0) {
        cmd_error(NULL, "out of host memory");
        return 2;
    }
    *n = k;
    return 0;
}

/* --dry-run: each row's args (`attnbench run ARGS` reruns it), those the kernel does
 * not support marked, rows --resume finds in --out left out, then the count. */
static int dry_run(command_t cmd, const options_t *o, const job_t *jobs, int n, int total,
                   const out_csv_t *csv)
{
    timing_opts_t timing = {.hot = o->hot, .graph = o->graph};
    int listed = 0, unsupported = 0, held = 0;
    for (int i = 0; i < n; ++i) {
        result_row_t row;
        runner_describe_unplanned(csv->gpu, &timing, &jobs[i].problem, jobs[i].kernel, &row);
        if (o->resume && csv->n_done) {
            char key[1024];
            csv_row_key(&row, key, sizeof key);
            if (out_csv_done(csv, key)) {
                held++;
                continue;
            }
        }
        problem_t share = tp_share(&jobs[i].problem);   /* --tp: what each GPU runs */
        const char *why = attn_kernel_unsupported(jobs[i].kernel, &share);
        listed++;
        unsupported += why != NULL;
        if (why) printf("%s\t# unsupported: %s\n", row.args, why);
        else printf("%s\n", row.args);
    }
    printf("# %s --dry-run: %d rows", command_name(cmd), listed);
    if (o->shards) printf(" (shard %d/%d of %d)", o->shard, o->shards, total);
    printf(", %d unsupported", unsupported);
    if (o->resume) printf(", %d already in %s", held, o->out);
    printf("\n");
    return 0;
}

/* The suite's entries (verify: its verification suite), or the command line's grid
 * as one entry, each with its kernels. */
static int load_entries(command_t cmd, const options_t *o, suite_entry_t *single,
                        suite_entry_t **entries, int *n_entries, const char *name)
{
    char msg[512];
    const char *suite = o->suite;
    char verify_suite[256];
    if (cmd == CMD_VERIFY) {
        if (!suite) suite = "quick";
        if (!strchr(suite, '/')) {
            snprintf(verify_suite, sizeof verify_suite, "verify-%s", suite);
            suite = verify_suite;
        }
    }
    if (suite) {
        if (suite_load(suite, o, entries, n_entries, msg, sizeof msg) != 0) {
            cmd_error(name, "%s", msg);
            return 2;
        }
    } else {
        memset(single, 0, sizeof *single);
        single->grid = o->grid;
        memcpy(single->kernels, o->kernels, sizeof o->kernels);
        single->n_kernels = o->n_kernels;
        *entries = single;
        *n_entries = 1;
    }
    for (int i = 0; i < *n_entries; ++i) {
        suite_entry_t *e = &(*entries)[i];
        /* --kernels on the command line narrows every suite line */
        if (o->n_kernels && suite) {
            memcpy(e->kernels, o->kernels, sizeof o->kernels);
            e->n_kernels = o->n_kernels;
        }
        if (!e->n_kernels) {
            /* without --kernels: attnbench's own exact attention kernels (peers,
             * approximations and Select-Attention's steps run when named) */
            for (int k = 0; attn_kernels[k] && e->n_kernels < KERNELS_MAX; ++k)
                if (!attn_kernels[k]->peer && attn_kernels[k]->approx == ATTN_EXACT && !attn_kernels[k]->selection)
                    e->kernels[e->n_kernels++] = attn_kernels[k]->name;
        }
    }
    return 0;
}

static int run_command(int argc, char **argv, command_t cmd)
{
    const double start = verify_seconds_now();
    options_t o;
    int status;
    if (cmd_options(argc, argv, cmd, &o, &status) != 0) return status;
    char msg[512];
    int rc;

    /* Everything a user can get wrong is checked before the GPU is touched. */
    suite_entry_t *entries = NULL, single;
    int n_entries = 0;
    if ((rc = load_entries(cmd, &o, &single, &entries, &n_entries, argv[0])) != 0) return rc;
    job_t *jobs = NULL;
    int n_jobs = 0;
    rc = expand_jobs(entries, n_entries, &jobs, &n_jobs);
    if (entries != &single) free(entries);
    if (rc) return rc;
    if (cmd == CMD_RUN && n_jobs == 1) {
        /* a lone configuration the kernel cannot run is bad input, not a row */
        problem_t share = tp_share(&jobs[0].problem);
        const char *why = attn_kernel_unsupported(jobs[0].kernel, &share);
        if (why) {
            cmd_error("run", "--kernel %s: %s", jobs[0].kernel->name, why);
            free(jobs);
            return 2;
        }
    }
    int total = n_jobs;
    if ((rc = select_shard(&o, jobs, &n_jobs)) != 0) {
        free(jobs);
        return rc;
    }

    /* --out last: checked whole, and touched only once the first row is in */
    out_csv_t csv;
    memset(&csv, 0, sizeof csv);
    if (o.out && out_csv_check(&csv, o.out, o.resume || (cmd == CMD_RUN && !o.force), o.force,
                               msg, sizeof msg) != 0) {
        cmd_error(argv[0], "--out %s", msg);
        free(jobs);
        return 2;
    }
    if (o.dry_run) {
        rc = dry_run(cmd, &o, jobs, n_jobs, total, &csv);
        out_csv_close(&csv, NULL, 0);
        free(jobs);
        return rc;
    }
    run_ctx_t c = {.cmd = cmd, .o = &o, .jobs = jobs, .csv = &csv};
    timeline_init(&c.time, start);
    rc = run_jobs(&c, &o, n_jobs);
    if (out_csv_close(&csv, msg, sizeof msg) != 0 && !rc) {
        cmd_error(argv[0], "--out %s", msg);
        rc = 1;
    }
    free(jobs);
    if (rc) return rc;
    printf("# %d rows, %d failed", c.t.rows, c.t.failed);
    if (c.t.skipped) printf(", %d already in %s", c.t.skipped, o.out);
    printf("\n");
    timeline_print(stdout, &c.time, c.t.rows, verify_seconds_now(), c.devices);
    return c.t.failed ? 1 : 0;
}

int cmd_run(int argc, char **argv) { return run_command(argc, argv, CMD_RUN); }
int cmd_sweep(int argc, char **argv) { return run_command(argc, argv, CMD_SWEEP); }
int cmd_verify(int argc, char **argv) { return run_command(argc, argv, CMD_VERIFY); }
