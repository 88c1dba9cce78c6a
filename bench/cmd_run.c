/* run, sweep and verify: the commands that put kernels on the GPU. They share one
 * loop: expand the grid (or the suite's grids), one row per (configuration,
 * kernel), each printed and written to the CSV as it completes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "commands.h"
#include "../harness/csv.h"
#include "../harness/options.h"
#include "../harness/runner.h"

/* Keys of the rows an earlier run of the sweep already finished (--resume). */
typedef struct done_rows {
    int n;
    char **keys;
} done_rows_t;

static int done_load(const char *path, done_rows_t *d)
{
    memset(d, 0, sizeof *d);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0) return 0; /* nothing finished yet */
    csv_table_t t;
    char msg[256];
    if (csv_read(path, &t, msg, sizeof msg) != 0) {
        fprintf(stderr, "attnbench: --resume: %s\n", msg);
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

typedef struct session {
    runner_t runner;
    FILE *csv;
    done_rows_t done;
    int rows, failed, skipped;
} session_t;

/* One sub-grid with its kernels: every (configuration, kernel) row. */
static int run_entry(session_t *s, command_t cmd, const grid_t *grid, const char *const *kernels,
                     int n_kernels)
{
    problem_t *problems = NULL;
    int n = 0;
    char msg[256];
    if (grid_expand(grid, &problems, &n, msg, sizeof msg) != 0) {
        fprintf(stderr, "attnbench: %s\n", msg);
        return 2;
    }
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n_kernels; ++j) {
            const attn_kernel_t *k = attn_kernel_find(kernels[j]);
            result_row_t row;
            if (s->done.n) {
                char key[1024];
                runner_describe_row(&s->runner, &problems[i], k, &row);
                csv_row_key(&row, key, sizeof key);
                if (done_has(&s->done, key)) {
                    s->skipped++;
                    continue;
                }
            }
            /* verify lists what a kernel cannot run instead of failing on it */
            runner_row(&s->runner, &problems[i], k, &row);
            if (cmd == CMD_VERIFY && !strcmp(row.status, "ok") && strcmp(row.verified, "yes"))
                snprintf(row.status, sizeof row.status, "%s", "mismatch");
            runner_print_row(stdout, &row);
            if (s->csv) csv_write_row(s->csv, &row);
            s->rows++;
            s->failed += row_failed(&row);
        }
    }
    free(problems);
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
    if (cmd == CMD_RUN) {
        /* a lone configuration the kernel cannot run is bad input, not a row */
        problem_t *p = NULL;
        int n = 0;
        if (grid_expand(&o.grid, &p, &n, msg, sizeof msg) != 0) {
            fprintf(stderr, "attnbench run: %s\n", msg);
            return 2;
        }
        const attn_kernel_t *k = attn_kernel_find(o.kernels[0]);
        const char *why = n == 1 ? k->unsupported(&p[0]) : NULL;
        free(p);
        if (why) {
            fprintf(stderr, "attnbench run: --kernel %s: %s\n", k->name, why);
            return 2;
        }
    }

    session_t s;
    memset(&s, 0, sizeof s);
    if (o.out) {
        if (o.resume && done_load(o.out, &s.done) != 0) return 2;
        struct stat st;
        int append = (o.resume || cmd == CMD_RUN) && stat(o.out, &st) == 0 && st.st_size > 0;
        s.csv = fopen(o.out, append ? "a" : "w");
        if (!s.csv) {
            fprintf(stderr, "attnbench %s: --out %s: cannot open for writing\n", argv[0], o.out);
            return 2;
        }
        if (!append) csv_write_header(s.csv);
    }

    timing_opts_t timing = {.warmup = o.warmup, .iters = o.iters, .min_time_s = o.min_time_s,
                            .hot = o.hot, .graph = o.graph, .profile = o.profile};
    int verify = cmd == CMD_VERIFY || o.verify;
    if (runner_open(&s.runner, &timing, verify, cmd != CMD_VERIFY, o.seed) != 0) {
        if (s.csv) fclose(s.csv);
        return 1;
    }
    if (cmd != CMD_VERIFY)
        printf("# %s: read %.0f GB/s, fp16 tensor cores %.0f TFLOP/s (measured)\n",
               s.runner.dev.name, s.runner.dev.peak_read_gbps, s.runner.dev.peak_tc_tflops);
    runner_print_header(stdout);
    rc = 0;
    for (int i = 0; i < n_entries && rc == 0; ++i)
        rc = run_entry(&s, cmd, &entries[i].grid, entries[i].kernels, entries[i].n_kernels);
    runner_close(&s.runner);
    if (s.csv) fclose(s.csv);
    done_free(&s.done);
    if (entries != &single) free(entries);
    if (rc) return rc;
    printf("# %d rows, %d failed%s", s.rows, s.failed, s.skipped ? "" : "\n");
    if (s.skipped) printf(", %d already in %s\n", s.skipped, o.out);
    return s.failed ? 1 : 0;
}

int cmd_run(int argc, char **argv) { return run_command(argc, argv, CMD_RUN); }
int cmd_sweep(int argc, char **argv) { return run_command(argc, argv, CMD_SWEEP); }
int cmd_verify(int argc, char **argv) { return run_command(argc, argv, CMD_VERIFY); }
