/* Command-line options of the subcommands and suite files (SPEC §5): the command
 * layer, which prints the help it is asked for. */
#ifndef ATTNBENCH_OPTIONS_H
#define ATTNBENCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../harness/grid.h"
#include "../report/table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CMD_LIST, CMD_PEAK, CMD_RUN, CMD_SWEEP, CMD_VERIFY, CMD_TABLE, CMD_COMPARE,
               CMD_MERGE } command_t;

#define KERNELS_MAX 16
#define TABLE_INPUTS_MAX 32
#define DEVICES_MAX 64
#define SHARDS_MAX 65536

typedef struct options {
    grid_t grid;
    /* run: --kernel K (exactly one, required); sweep/verify: --kernels K1,K2; 0 names =
     * every registered kernel. Names are the registry's own strings (static). */
    const char *kernels[KERNELS_MAX]; int n_kernels;
    const char *out;        /* sweep: --out FILE.csv (required); run: optional, appends a row */
    const char *suite;      /* sweep: --suite NAME|PATH (optional); verify: quick|full|kvq|PATH, default quick */
    unsigned grid_set;      /* GRID_FIELD_* bits of the fields the command line set
                             * (by a problem option or by --model) */
    bool resume, force, verify, profile, hot, graph;   /* verify: on unless --no-verify */
    bool dry_run;           /* sweep/verify --dry-run: list the rows, run nothing */
    int shard, shards;      /* --shard I/N: the I-th (1-based) of N slices; 0/0 = the whole grid */
    /* --devices: CUDA device indices as this process sees them, in the order given;
     * all_devices: every device the machine shows (resolved when the GPUs are probed) */
    int devices[DEVICES_MAX]; int n_devices;
    bool all_devices;
    double verify_time_s;   /* --verify-time SECONDS a row's reference may take: rows beyond
                             * VERIFY_MIN_ROWS are checked while it lasts (default 1) */
    int iters;              /* --iters N (0 = until --max-noise), at most TIMING_ITERS_LIMIT */
    int warmup;             /* --warmup N (default 3), at most TIMING_ITERS_LIMIT */
    double min_time_s;      /* --min-time SECONDS of each configuration's warm-up (default 0.1) */
    double max_noise_pct;   /* --max-noise PERCENT: relative standard error to time down to (0.5) */
    double max_time_s;      /* --max-time SECONDS of kernel time that caps the timed launches (1) */
    uint64_t seed;          /* --seed N (default 0 = fresh from the clock) */
    /* table: --in files (at least one), and the pivot's options */
    const char *inputs[TABLE_INPUTS_MAX]; int n_inputs;
    table_opts_t table;
    /* compare: BASE.csv and NEW.csv, --threshold, --changes */
    const char *files[2];
    double threshold;
    bool changes_only;
    /* --share-map FILE (pointing into argv) and --share-layer N, read into grid.share_map */
    const char *share_map_path;
    int share_layer;
    /* merge: OUT.csv, then the inputs (pointing into argv) */
    char *const *merge_files; int n_merge_files;
} options_t;

const char *command_name(command_t cmd);

/* argv[0] is the subcommand name; argv may be permuted (getopt_long). Every command
 * shares one table of options, each marked with the commands that take it, and every
 * number is checked against its range as it is parsed. Returns 0 when
 * the options are good, 1 when --help was printed to stdout (exit 0), -1 on bad input
 * with one line in msg naming the option and the rule (exit 2). Checks everything that
 * needs no GPU: unknown or misplaced options, numbers, kernel/dtype/cache/multi-block
 * names, every point of the grid (problem_validate), for `run` one value per problem
 * option and the kernel supporting the problem, for `sweep` --out and a grid or suite
 * (the suite is loaded once to check it), --resume only with --out and not with
 * --force; for `table` at least one --in and --rows with --cols or --paper; for
 * `compare` exactly two files; for `merge` OUT.csv and at least one input. */
int options_parse(int argc, char **argv, command_t cmd, options_t *o, char *msg, size_t len);

/* One suite line's words (argv[0] any name) into o: the defaults, then its problem
 * options and --kernels (nothing else is allowed in a suite line), then --model.
 * 0, or -1 with one line in msg. suite.c's parser of lines. */
int options_parse_suite_line(int argc, char **argv, options_t *o, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
