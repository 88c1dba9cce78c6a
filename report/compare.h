/* Regression check (`attnbench compare BASE NEW`, SPEC §8): joins two results CSVs
 * on csv_row_key and gives every row a verdict that accounts for measured noise.
 *
 * Both rows ok: change = new median / base median - 1, noise = sqrt(nb^2 + nn^2)
 * (each row's relative standard deviation; empty counts as 0), and the limit a
 * change must pass is max(threshold, 2 * noise): a change inside the threshold is
 * too small to matter, one inside twice the combined noise could be chance.
 * slower: change > limit; faster: change < -limit; otherwise same. */
#ifndef ATTNBENCH_COMPARE_H
#define ATTNBENCH_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
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

const char *verdict_name(verdict_t v);
/* 1 for the verdicts that fail a check: slower, broken, missing. */
int verdict_fails(verdict_t v);

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
/* Aligned table (verdict, kernel, configuration, base us, new us, change %, noise %,
 * limit %, the two sides' SM clocks) and a summary line; changes_only leaves out the
 * rows judged same. */
void compare_print(FILE *f, const compare_result_t *r, bool changes_only);
/* 1 when any row is slower, broken or missing, else 0. */
int compare_exit_status(const compare_result_t *r);
void compare_free(compare_result_t *r);

/* The whole command on two files: 0 pass, 1 regression, 2 unreadable or malformed
 * input (one line in msg). */
int compare_files(const char *base_path, const char *next_path, double threshold,
                  bool changes_only, FILE *out, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
