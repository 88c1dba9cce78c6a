/* run, sweep and verify: the commands that put kernels on the GPU. They share one
 * loop: expand the grid (or the suite's grids), one row per (configuration,
 * kernel), each printed and written to the CSV as it completes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "commands.h"
#include "../report/csv.h"
#include "out_csv.h"
#include "options.h"
#include "suite.h"
#include "../harness/runner.h"

/* One (configuration, kernel) to run. */
typedef struct job {
    problem_t problem;
    const attn_kernel_t *kernel;
} job_t;

/* What the GPU process tells the parent about one job. */
typedef struct job_report {
    int job;
    int skipped; /* already in the CSV (--resume) */
    result_row_t row;
} job_report_t;

/* Exit status of a GPU process whose CUDA context a sticky error broke. */
#define CHILD_BROKEN 3

/* The GPU side, in a child process: a sticky CUDA error (an illegal address in one
 * kernel) poisons the whole process, so the jobs run where the parent can restart
 * them past the faulty one. Reports each finished job through fd. */
static void gpu_process(int fd, command_t cmd, const options_t *o, const job_t *jobs, int n,
                        int start, const out_csv_t *out)
{
    timing_opts_t timing = {.warmup = o->warmup, .iters = o->iters, .min_time_s = o->min_time_s,
                            .max_noise = o->max_noise_pct / 100.0, .max_time_s = o->max_time_s,
                            .hot = o->hot, .graph = o->graph, .profile = o->profile};
    runner_t runner;
    int verify = cmd == CMD_VERIFY || o->verify;
    if (runner_open(&runner, &timing, verify, cmd != CMD_VERIFY, o->seed) != 0) _exit(1);
    runner.verify_budget_s = o->verify_time_s;
    if (start == 0) {
        if (cmd != CMD_VERIFY)
            printf("# %s: read %.0f GB/s (from L2 %.0f), fp16 tensor cores %.0f TFLOP/s (measured)\n",
                   runner.dev.name, runner.dev.peak_read_gbps, runner.dev.peak_l2_gbps, runner.dev.peak_tc_tflops);
        runner_print_header(stdout);
    }
    fflush(stdout);
    for (int i = start; i < n; ++i) {
        job_report_t rep;
        memset(&rep, 0, sizeof rep);
        rep.job = i;
        /* a row's inputs follow from --seed and its place in the grid alone, so a resumed
         * or restarted sweep fills each row as an uninterrupted one would */
        runner.rows = i;
        if (o->resume && out->n_done) {
            char key[1024];
            runner_describe_row(&runner, &jobs[i].problem, jobs[i].kernel, &rep.row);
            csv_row_key(&rep.row, key, sizeof key);
            rep.skipped = out_csv_done(out, key);
        }
        if (!rep.skipped) runner_row(&runner, &jobs[i].problem, jobs[i].kernel, &rep.row);
        if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep) _exit(1);
        if (runner.broken) _exit(CHILD_BROKEN);
    }
    runner_close(&runner);
    fflush(stdout);
    _exit(0);
}

typedef struct tally {
    int rows, failed, skipped;
} tally_t;

/* Prints and writes one finished row. Returns 0, or -1 with one line on stderr when
 * --out cannot take it. */
static int record(out_csv_t *csv, command_t cmd, result_row_t *row, tally_t *t)
{
    /* verify counts a row it could not check as a failure */
    if (cmd == CMD_VERIFY && !strcmp(row->status, "ok") && strcmp(row->verified, "yes"))
        snprintf(row->status, sizeof row->status, "%s", "mismatch");
    runner_print_row(stdout, row);
    t->rows++;
    t->failed += row_failed(row);
    char msg[512];
    if (csv->path && out_csv_write(csv, row, msg, sizeof msg) != 0) {
        cmd_error(command_name(cmd), "--out %s", msg);
        return -1;
    }
    return 0;
}

/* Runs every job in GPU processes, starting a new one past any job that broke the
 * last. Returns 0, or 1 when no GPU process could start at all. */
static int run_jobs(command_t cmd, const options_t *o, const job_t *jobs, int n, out_csv_t *csv,
                    tally_t *t)
{
    int next = 0;
    char gpu[32] = "";
    while (next < n) {
        int fds[2];
        if (pipe(fds) != 0) {
            perror("attnbench: pipe");
            return 1;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("attnbench: fork");
            return 1;
        }
        if (pid == 0) {
            close(fds[0]);
            gpu_process(fds[1], cmd, o, jobs, n, next, csv);
        }
        close(fds[1]);
        int reports = 0;
        job_report_t rep;
        while (read(fds[0], &rep, sizeof rep) == (ssize_t)sizeof rep) {
            reports++;
            next = rep.job + 1;
            snprintf(gpu, sizeof gpu, "%s", rep.row.gpu);
            if (rep.skipped) {
                t->skipped++;
            } else if (record(csv, cmd, &rep.row, t) != 0) {
                kill(pid, SIGKILL);   /* rows that cannot be kept are not worth measuring */
                close(fds[0]);
                waitpid(pid, NULL, 0);
                return 1;
            }
        }
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
        if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_BROKEN) continue;
        if (!reports && WIFEXITED(status)) return 1; /* no GPU, or it could not be set up */
        if (next >= n) break;   /* it died after its last row, which it had reported */
        /* the process died inside job `next`: that job is an error row */
        runner_t none;
        memset(&none, 0, sizeof none);
        snprintf(none.dev.gpu, sizeof none.dev.gpu, "%s", gpu);
        none.timing.hot = o->hot;     /* the row's args, and so its key, as measured */
        none.timing.graph = o->graph;
        result_row_t row;
        runner_describe_row(&none, &jobs[next].problem, jobs[next].kernel, &row);
        snprintf(row.status, sizeof row.status, "%s", "error");
        cmd_error(NULL, "%s: the process running it died (%s %d)", row.args,
                WIFSIGNALED(status) ? "signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (record(csv, cmd, &row, t) != 0) return 1;
        next++;
    }
    return 0;
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
                (*jobs)[*n].problem = problems[i];
                (*jobs)[*n].kernel = attn_kernel_find(entries[e].kernels[k]);
                (*n)++;
            }
        free(problems);
    }
    return 0;
}

/* A sweep without --kernels: attnbench's own kernels (peers run when named). */
static const char *const *all_kernels(int *n)
{
    static const char *names[KERNELS_MAX];
    int k = 0;
    for (int i = 0; attn_kernels[i] && k < KERNELS_MAX; ++i)
        if (!attn_kernels[i]->peer) names[k++] = attn_kernels[i]->name;
    *n = k;
    return names;
}

static int run_command(int argc, char **argv, command_t cmd)
{
    options_t o;
    char msg[512];
    int rc = options_parse(argc, argv, cmd, &o, msg, sizeof msg);
    if (rc == 1) return 0;
    if (rc != 0) {
        cmd_error(argv[0], "%s", msg);
        return 2;
    }

    /* Everything a user can get wrong is checked before the GPU is touched. */
    suite_entry_t *entries = NULL;
    int n_entries = 0;
    suite_entry_t single;
    const char *suite = o.suite;
    char verify_suite[256];
    if (cmd == CMD_VERIFY) {
        if (!suite) suite = "quick";
        if (!strchr(suite, '/')) {
            snprintf(verify_suite, sizeof verify_suite, "verify-%s", suite);
            suite = verify_suite;
        }
    }
    if (suite) {
        if (suite_load(suite, &o, &entries, &n_entries, msg, sizeof msg) != 0) {
            cmd_error(argv[0], "%s", msg);
            return 2;
        }
    } else {
        memset(&single, 0, sizeof single);
        single.grid = o.grid;
        memcpy(single.kernels, o.kernels, sizeof o.kernels);
        single.n_kernels = o.n_kernels;
        entries = &single;
        n_entries = 1;
    }
    for (int i = 0; i < n_entries; ++i) {
        /* --kernels on the command line narrows every suite line */
        if (o.n_kernels && suite) {
            memcpy(entries[i].kernels, o.kernels, sizeof o.kernels);
            entries[i].n_kernels = o.n_kernels;
        }
        if (!entries[i].n_kernels) {
            const char *const *names = all_kernels(&entries[i].n_kernels);
            memcpy(entries[i].kernels, names, sizeof(char *) * entries[i].n_kernels);
        }
    }
    job_t *jobs = NULL;
    int n_jobs = 0;
    rc = expand_jobs(entries, n_entries, &jobs, &n_jobs);
    if (entries != &single) free(entries);
    if (rc) return rc;
    if (cmd == CMD_RUN && n_jobs == 1) {
        /* a lone configuration the kernel cannot run is bad input, not a row */
        const char *why = jobs[0].kernel->unsupported(&jobs[0].problem);
        if (why) {
            cmd_error("run", "--kernel %s: %s", jobs[0].kernel->name, why);
            free(jobs);
            return 2;
        }
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
    tally_t t = {0};
    rc = run_jobs(cmd, &o, jobs, n_jobs, &csv, &t);
    if (out_csv_close(&csv, msg, sizeof msg) != 0 && !rc) {
        cmd_error(argv[0], "--out %s", msg);
        rc = 1;
    }
    free(jobs);
    if (rc) return rc;
    printf("# %d rows, %d failed", t.rows, t.failed);
    if (t.skipped) printf(", %d already in %s", t.skipped, o.out);
    printf("\n");
    return t.failed ? 1 : 0;
}

int cmd_run(int argc, char **argv) { return run_command(argc, argv, CMD_RUN); }
int cmd_sweep(int argc, char **argv) { return run_command(argc, argv, CMD_SWEEP); }
int cmd_verify(int argc, char **argv) { return run_command(argc, argv, CMD_VERIFY); }
