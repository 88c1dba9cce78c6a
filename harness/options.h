/* Command-line options of the subcommands and suite files (SPEC §5). */
#ifndef ATTNBENCH_OPTIONS_H
#define ATTNBENCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "grid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CMD_LIST, CMD_PEAK, CMD_RUN, CMD_SWEEP, CMD_VERIFY } command_t;

#define KERNELS_MAX 16

typedef struct options {
    grid_t grid;
    /* run: --kernel K (exactly one, required); sweep/verify: --kernels K1,K2; 0 names =
     * every registered kernel. Names are the registry's own strings (static). */
    const char *kernels[KERNELS_MAX]; int n_kernels;
    const char *out;        /* sweep: --out FILE.csv (required); run: optional, appends a row */
    const char *suite;      /* sweep: --suite NAME|PATH (optional); verify: quick|full, default quick */
    unsigned grid_set;      /* GRID_FIELD_* bits of the fields the command line set
                             * (by a problem option or by --model) */
    bool resume, verify, profile, hot, graph;   /* verify: on unless --no-verify */
    double verify_time_s;   /* --verify-time SECONDS a row's reference may take: rows beyond
                             * VERIFY_MIN_ROWS are checked while it lasts (default 1) */
    int iters;              /* --iters N (0 = adaptive) */
    int warmup;             /* --warmup N (default 3) */
    double min_time_s;      /* --min-time SECONDS of each configuration's warm-up (default 0.1) */
    double max_noise_pct;   /* --max-noise PERCENT: relative standard error to time down to (0.5) */
    double max_time_s;      /* --max-time SECONDS of kernel time that caps the timed launches (1) */
    uint64_t seed;          /* --seed N (default 0 = fresh from the clock) */
} options_t;

const char *command_name(command_t cmd);

/* argv[0] is the subcommand name; argv may be permuted (getopt_long). Returns 0 when
 * the options are good, 1 when --help was printed to stdout (exit 0), -1 on bad input
 * with one line in msg naming the option and the rule (exit 2). Checks everything that
 * needs no GPU: unknown or misplaced options, numbers, kernel/dtype/cache/multi-block
 * names, every point of the grid (problem_validate), for `run` one value per problem
 * option and the kernel supporting the problem, for `sweep` --out and a grid or suite
 * (the suite is loaded once to check it), --resume only with --out. */
int options_parse(int argc, char **argv, command_t cmd, options_t *o, char *msg, size_t len);

/* A suite is a file of lines, each one sub-grid written in the options syntax
 * (`--beam 1:256 --kv-heads 32,8,1 --ctx 8k,16k,32k --kernels fused,cublas`); '#' starts
 * a comment, blank lines are skipped. Only problem options and --kernels are allowed.
 * A line starts from the defaults, takes its own options (its explicit --heads,
 * --kv-heads, --head-dim, --layers win over its --model), then every field the command
 * line set (base->grid_set, base->kernels) replaces the line's: what the user typed wins,
 * so `sweep --suite quick --dtype bf16` is the quick suite in bf16. base may be NULL.
 * NAME without '/' is ATTNBENCH_SUITE_DIR "/" NAME ".suite"; with '/' it is a path. */
typedef struct suite_entry {
    grid_t grid;
    const char *kernels[KERNELS_MAX]; int n_kernels;
} suite_entry_t;

/* On 0, *entries is one malloc'd block (free(*entries) releases it and the strings
 * entries point to) holding *n >= 1 validated entries. On -1, msg names the file and
 * line, *entries is NULL. */
int suite_load(const char *name, const options_t *base, suite_entry_t **entries, int *n,
               char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
