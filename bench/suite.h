/* Suite files (SPEC §5): named sets of sub-grids for sweep and verify. */
#ifndef ATTNBENCH_SUITE_H
#define ATTNBENCH_SUITE_H

#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A suite is a file of lines, each one sub-grid written in the options syntax
 * (`--beam 1:256 --kv-heads 32,8,1 --ctx 8k,16k,32k --kernels fused,cublas`); '#' starts
 * a comment, blank lines are skipped. Only problem options and --kernels are allowed.
 * A line starts from the defaults, takes its own options (its explicit --heads,
 * --kv-heads, --head-dim, --layers win over its --model), then every field the command
 * line set (base->grid_set, base->kernels) replaces the line's: what the user typed wins,
 * so `sweep --suite quick --dtype bf16` is the quick suite in bf16. base may be NULL.
 * NAME without '/' is ATTNBENCH_SUITE_DIR "/" NAME ".suite"; with '/' it is a path. A
 * relative --share-map FILE in a line names a file beside the suite file (or beside the
 * shipped suites). */
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
