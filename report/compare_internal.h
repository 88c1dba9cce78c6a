/* What compare.c exposes to its tests only: the verdicts and the join behind
 * compare_files.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_COMPARE_INTERNAL_H
#define ATTNBENCH_COMPARE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VERDICT_SAME,
    VERDICT_FASTER,
    VERDICT_SLOWER,
    VERDICT_MISSING,   /* in base, not in new */
    VERDICT_NEW,       /* in new, not in base */
    VERDICT_BROKEN,    /* ok -> error|mismatch|oom|unsupported, or verified yes -> no */
    VERDICT_FIXED,     /* a failed row now ok */
    VERDICT_COUNT
} verdict_t;

typedef struct compare_entry {
    result_row_t base, next;   /* the row in each file; only the sides present are set */
    bool has_base, has_next;
    double change;             /* relative change of the median, NaN unless both ok */
    double noise;              /* combined relative noise */
    double limit;              /* what |change| had to exceed */
    verdict_t verdict;
} compare_entry_t;

typedef struct compare_result {
    compare_entry_t *entries;   /* base order, then the rows only new has */
    int n;
    int count[VERDICT_COUNT];
    double threshold;
} compare_result_t;

/* The verdict of one joined pair (both present). Writes change, noise and limit. */
verdict_t compare_rows(const result_row_t *base, const result_row_t *next, double threshold,
                       double *change, double *noise, double *limit);
/* Joins the tables (a key repeated within a file: its last row counts, as a rerun
 * supersedes). Returns 0, or -1 with one line in msg. */
int compare_tables(const csv_table_t *base, const csv_table_t *next, double threshold,
                   compare_result_t *out, char *msg, size_t len);
/* 1 when any row is slower, broken or missing, else 0. */
int compare_exit_status(const compare_result_t *r);
void compare_free(compare_result_t *r);

#ifdef __cplusplus
}
#endif
#endif
