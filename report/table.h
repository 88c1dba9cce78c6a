/* Pivot tables of results CSVs (`attnbench table`): a generic pivot of any columns,
 * and the layouts of the bifurcated-attention paper's Tables 6 and 7. */
#ifndef ATTNBENCH_TABLE_H
#define ATTNBENCH_TABLE_H

#include <stddef.h>
#include <stdio.h>
#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TABLE_MD, TABLE_CSV } table_format_t;
/* Which of several rows landing in one cell is shown (ok rows always win over
 * failed ones): the smallest value, the largest, or the last in the file. */
typedef enum { TABLE_AGG_MIN, TABLE_AGG_MAX, TABLE_AGG_LAST } table_agg_t;

/* A value column computed from others: median_us * layers / 1000, the per-token
 * latency of `layers` attention layers in ms. */
#define TABLE_MS_PER_TOKEN "ms_per_token"

#define TABLE_MAX_WHERE 16
/* COL=VAL[,VAL...]: keeps rows whose COL equals one of the values (as text, or as
 * numbers, where 8k means 8192). */
typedef struct table_where {
    char col[64];
    char vals[256];
} table_where_t;

typedef struct table_opts {
    const char *rows;    /* generic pivot: row axis, one column or several joined by ',' */
    const char *cols;    /* column axis, same form */
    const char *value;   /* a column, or TABLE_MS_PER_TOKEN */
    table_where_t where[TABLE_MAX_WHERE];
    int nwhere;
    int paper;           /* 0: generic pivot; 6 or 7: the paper's table */
    int layers;          /* > 0: overrides the layers column in ms_per_token */
    table_format_t format;
    table_agg_t agg;
    /* --vs-peers (generic pivot only): each cell of attnbench's own kernels shows its
     * value divided by the best (smallest) ok value of the peers on the same
     * configuration (every --rows and --cols column but kernel), '-' where no peer has
     * one; the peers' rows leave the cells and give a "best peer" and a "peer VALUE"
     * column instead (one pair per --cols key but kernel). peers[0..npeers): the
     * kernel names that are peers (bench/ takes them from the registry). */
    int vs_peers;
    const char *const *peers;
    int npeers;
    /* --ratio A/B (generic pivot only): one more column, "A/B", each row's value in the
     * column labelled A divided by its value in the column labelled B (labels as the
     * header shows them: "append/attend" with --cols step, "4/1" with --cols q_len);
     * '-' where either cell has no ok value. NULL: none. */
    const char *ratio;
    /* --select-total: Select-Attention's per-token attention over a model's layers
     * (select_total_render), the filter step at layer filter_layer (--filter-layer). */
    int select_total;
    int filter_layer;
} table_opts_t;

/* Defaults: generic, value median_us, Markdown, min. */
void table_opts_init(table_opts_t *o);
/* Parses "COL=VAL[,VAL...]". Returns 0, or -1 with one line in msg. */
int table_where_parse(const char *s, table_where_t *w, char *msg, size_t len);

/* Writes the table o asks for. Returns 0, or -1 with one line in msg (unknown
 * column, missing axis, bad --paper, rows of several GPUs in a paper table, kernel in
 * --rows or --paper with --vs-peers, a --ratio column that the table does not have). */
int table_render(FILE *out, const csv_table_t *t, const table_opts_t *o, char *msg, size_t len);

/* Select-Attention's per-token attention time: for each configuration (every column but
 * the kernel and --top-p) with ok rows of fused and, at one --top-p, of select-filter and
 * select-attend, a line with the kept fraction, the full model's time (layers x fused),
 * Select-Attention's ((filter_layer - 1) x fused + select-filter + (layers -
 * filter_layer) x select-attend) in ms, and their ratio. Returns 0, or -1 with one line
 * in msg (no such configuration, a model with fewer layers than filter_layer). */
int select_total_render(FILE *out, const csv_table_t *t, int filter_layer, table_format_t format, char *msg,
                        size_t len);

#ifdef __cplusplus
}
#endif
#endif
