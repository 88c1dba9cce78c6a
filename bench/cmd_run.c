/* run, sweep and verify: the commands that put kernels on the GPU. They share one
 * loop: expand the grid (or the suite's grids), one row per (configuration,
 * kernel), each printed and written to the CSV as it completes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "commands.h"
#include "../harness/csv.h"
#include "../harness/options.h"
#include "../harness/runner.h"

/* Keys of the rows an earlier run of the sweep already finished (--resume). */
typedef struct done_rows {
    int n;
    char **keys;
} done_rows_t;

/* A sweep killed while writing leaves a last line without its newline: that row was
 * not finished, so it goes, and the rows before it stay. */
static int drop_unfinished_row(const char *path, off_t size)
{
    FILE *f = fopen(path, "r+");
    if (!f) return -1;
    off_t end = size;
    int c = 0;
    while (end > 0 && fseeko(f, end - 1, SEEK_SET) == 0 && (c = fgetc(f)) != '\n') end--;
    int rc = end == size ? 0 : ftruncate(fileno(f), end);
    fclose(f);
    return rc;
}

/* The rows a --resume run finds finished in the CSV at path, and how many columns its
 * header holds (csv_table_columns: the rows it appends get those), in one read. */
static int done_load(const char *cmd, const char *path, done_rows_t *d, int *cols)
{
    memset(d, 0, sizeof *d);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0) return 0; /* nothing finished yet */
    if (drop_unfinished_row(path, st.st_size) != 0) {
        fprintf(stderr, "attnbench: --resume: %s: cannot rewrite its unfinished last row\n", path);
        return -1;
    }
    csv_table_t t;
    char msg[256];
    if (csv_read(path, &t, msg, sizeof msg) != 0 || (*cols = csv_table_columns(&t, path, msg, sizeof msg)) < 0) {
        if (t.names) csv_free(&t);
        fprintf(stderr, "attnbench %s: --resume: %s\n", cmd, msg);
        return -1;
    }
    d->keys = calloc(t.nrows ? t.nrows : 1, sizeof *d->keys);
    for (int i = 0; i < t.nrows; ++i) {
        result_row_t row;
        if (csv_row_parse(&t, i, &row) != 0) continue;
        char key[1024];
        csv_row_key(&row, key, sizeof key);
        d->keys[d->n++] = strdup(key);
    }
    csv_free(&t);
    return 0;
}

static int done_has(const done_rows_t *d, const char *key)
{
    for (int i = 0; i < d->n; ++i)
        if (!strcmp(d->keys[i], key)) return 1;
    return 0;
}

static void done_free(done_rows_t *d)
{
    for (int i = 0; i < d->n; ++i) free(d->keys[i]);
    free(d->keys);
}

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
                        int start, const done_rows_t *done)
{
    timing_opts_t timing = {.warmup = o->warmup, .iters = o->iters, .min_time_s = o->min_time_s,
                            .max_noise = o->max_noise_pct / 100.0, .max_time_s = o->max_time_s,
                            .hot = o->hot, .graph = o->graph, .profile = o->profile};
    runner_t runner;
    int verify = cmd == CMD_VERIFY || o->verify;
    uint64_t seed = o->seed ? o->seed + (uint64_t)start : 0;
    if (runner_open(&runner, &timing, verify, cmd != CMD_VERIFY, seed) != 0) _exit(1);
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
        if (done->n) {
            char key[1024];
            runner_describe_row(&runner, &jobs[i].problem, jobs[i].kernel, &rep.row);
            csv_row_key(&rep.row, key, sizeof key);
            rep.skipped = done_has(done, key);
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

/* The results CSV being written (NULL: none) and how many columns its rows get
 * (csv_write_row_cols). */
typedef struct csv_out {
    FILE *f;
    int cols;
} csv_out_t;

static void record(const csv_out_t *csv, command_t cmd, result_row_t *row, tally_t *t)
{
    /* verify counts a row it could not check as a failure */
    if (cmd == CMD_VERIFY && !strcmp(row->status, "ok") && strcmp(row->verified, "yes"))
        snprintf(row->status, sizeof row->status, "%s", "mismatch");
    runner_print_row(stdout, row);
    if (csv->f) csv_write_row_cols(csv->f, row, csv->cols);
    t->rows++;
    t->failed += row_failed(row);
}

/* Opens --out for the rows: appended to where --resume (done then gets its finished
 * rows) or run finds it holding something, its rows getting the file's columns so
 * that an earlier version's file stays whole; else written afresh, header first.
 * Returns 0, or 2 with one line on stderr. */
static int csv_out_open(const char *name, const options_t *o, command_t cmd, csv_out_t *csv, done_rows_t *done)
{
    if (o->resume && done_load(name, o->out, done, &csv->cols) != 0) return 2;
    struct stat st;
    const int append = (o->resume || cmd == CMD_RUN) && stat(o->out, &st) == 0 && st.st_size > 0;
    char msg[256];
    if (append && !o->resume && (csv->cols = csv_file_columns(o->out, msg, sizeof msg)) < 0) {
        fprintf(stderr, "attnbench %s: --out %s\n", name, msg);
        return 2;
    }
    csv->f = fopen(o->out, append ? "a" : "w");
    if (!csv->f) {
        fprintf(stderr, "attnbench %s: --out %s: cannot open for writing\n", name, o->out);
        return 2;
    }
    if (!append) csv_write_header(csv->f);
    return 0;
}

/* Runs every job in GPU processes, starting a new one past any job that broke the
 * last. Returns 0, or 1 when no GPU process could start at all. */
static int run_jobs(command_t cmd, const options_t *o, const job_t *jobs, int n, const csv_out_t *csv,
                    const done_rows_t *done, tally_t *t)
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
            gpu_process(fds[1], cmd, o, jobs, n, next, done);
        }
        close(fds[1]);
        int reports = 0;
        job_report_t rep;
        while (read(fds[0], &rep, sizeof rep) == (ssize_t)sizeof rep) {
            reports++;
            next = rep.job + 1;
            snprintf(gpu, sizeof gpu, "%s", rep.row.gpu);
            if (rep.skipped) t->skipped++;
            else record(csv, cmd, &rep.row, t);
        }
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
        if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_BROKEN) continue;
        if (!reports && WIFEXITED(status)) return 1; /* no GPU, or it could not be set up */
        /* the process died inside job `next`: that job is an error row */
        runner_t none;
        memset(&none, 0, sizeof none);
        snprintf(none.dev.gpu, sizeof none.dev.gpu, "%s", gpu);
        result_row_t row;
        runner_describe_row(&none, &jobs[next].problem, jobs[next].kernel, &row);
        snprintf(row.status, sizeof row.status, "%s", "error");
        fprintf(stderr, "attnbench: %s: the process running it died (%s %d)\n", row.args,
                WIFSIGNALED(status) ? "signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        record(csv, cmd, &row, t);
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
            fprintf(stderr, "attnbench: %s\n", msg);
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
                        fprintf(stderr, "attnbench: out of host memory\n");
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

static const char *const *all_kernels(int *n)
{
    static const char *names[KERNELS_MAX];
    int k = 0;
    for (; attn_kernels[k] && k < KERNELS_MAX; ++k) names[k] = attn_kernels[k]->name;
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
        fprintf(stderr, "attnbench %s: %s\n", argv[0], msg);
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
            fprintf(stderr, "attnbench %s: %s\n", argv[0], msg);
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
            fprintf(stderr, "attnbench run: --kernel %s: %s\n", jobs[0].kernel->name, why);
            free(jobs);
            return 2;
        }
    }

    csv_out_t csv = {NULL, csv_column_count};
    done_rows_t done;
    memset(&done, 0, sizeof done);
    if (o.out && (rc = csv_out_open(argv[0], &o, cmd, &csv, &done)) != 0) {
        done_free(&done);
        free(jobs);
        return rc;
    }
    tally_t t = {0};
    rc = run_jobs(cmd, &o, jobs, n_jobs, &csv, &done, &t);
    if (csv.f) fclose(csv.f);
    done_free(&done);
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
