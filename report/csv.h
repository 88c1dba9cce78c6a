/* Results CSV of SPEC §6: one row per (configuration, kernel), written and flushed
 * row by row, read back by table, compare and sweep --resume. */
#ifndef ATTNBENCH_CSV_H
#define ATTNBENCH_CSV_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Numbers that were not measured (oom / unsupported rows) are NaN in the struct and
 * empty fields in the file; integers are always written. */
typedef struct result_row {
    char gpu[32], kernel[32], attn[8];
    int batch, beam, heads, kv_heads, head_dim, ctx, gen;
    char dtype[8], cache[16]; int block_size; int indirection; char multi_block[8]; int splits;
    char status[16]; int iters;
    double median_us, p10_us, p90_us, min_us, max_us, noise;
    double bytes, unique_bytes, flops, gbps, pct_peak_bw, roofline_us;
    char verified[8]; double max_abs_err, rel_err;
    char version[48];
    /* appended after SPEC's columns: */
    char ran[32];      /* kernel that actually ran (differs for `auto`) */
    char model[32];    /* --model preset or empty */
    int layers;
    char args[512];    /* the options that rerun exactly this row, space separated, no commas */
    double sm_mhz;     /* the SM clock the timed launches ran at (timing.h: timing_result_t) */
    double peak_gbps, peak_tflops;   /* the measured peaks the row was judged against */
    double pct_spec_bw;  /* gbps against the card's theoretical bandwidth (NVML) */
    double workspace_bytes;  /* split partials and other scratch traffic, not in bytes */
    char flags[24];    /* ';'-separated: noisy, throttled (timing_flags); empty when none */
    int device;        /* the CUDA device that ran the row, numbered as the command saw them
                          (its CUDA_VISIBLE_DEVICES): 0 on one GPU, the --devices entry else */
    char kv_dtype[8];  /* the KV cache's storage: the dtype, or fp8 / int8 (--kv-dtype) */
    int tp;            /* --tp: the GPUs the heads were split over; 1 on one GPU */
    char tp_us[96];    /* --tp: each GPU's median_us, in GPU order, joined by ';' (median_us
                          is their max); empty on one GPU */
    char step[8];      /* --step: attend, or append (RoPE, quantise and append first) */
    char ctx_dist[160]; /* --ctx-dist: fixed, uniform:LO:HI[:SEED] or file:PATH */
    double ctx_total;  /* the context lengths of the batch summed (batch * ctx when fixed) */
    int ctx_max;       /* the longest (ctx) */
    int q_len;         /* --q-len: query tokens per stream (speculative decoding); 1 in a
                          file written before the column */
    double approx_err; /* an approximating kernel (share): the relative L2 error of its output
                          against exact attention on the same inputs; empty for exact kernels */
    double kept;       /* share: the fraction of heads that are essential */
} result_row_t;

/* Every SPEC §6 column must be present in a file that is read; the appended ones
 * (ran, model, layers, args, sm_mhz, peak_gbps, peak_tflops, pct_spec_bw,
 * workspace_bytes, flags, device, kv_dtype, tp, tp_us, step, ctx_dist, ctx_total, ctx_max,
 * q_len, approx_err, kept) may be absent. */
#define CSV_SPEC_COLUMNS 34
extern const int csv_column_count;

/* Empty strings, zero integers, layers, tp and q_len 1, every measured number NaN. */
void result_row_init(result_row_t *r);

/* One field, quoted (RFC 4180) only when it holds a comma, a quote or a line break. */
void csv_write_field(FILE *f, const char *s);
/* The name of column c (0 <= c < csv_column_count; SPEC's, then the appended ones),
 * else NULL. */
const char *csv_column_name(int c);
/* Each returns 0, or -1 when the stream could not take it (a full disk). */
int csv_write_header(FILE *f);
/* The header of the first ncols columns (a file of an earlier version: csv_file_columns). */
int csv_write_header_cols(FILE *f, int ncols);
/* Writes one row and flushes, so an interrupted sweep keeps its rows: every column,
 * or the first ncols of them (rows appended to a file of an earlier version, whose
 * header has fewer: csv_file_columns). */
int csv_write_row_cols(FILE *f, const result_row_t *r, int ncols);

typedef struct csv_table {
    int ncols;
    char **names;
    int nrows;
    char ***cells;   /* cells[row][col] */
    int *lines;      /* lines[row]: the line of the file the row starts on (for messages);
                        NULL in a table built by hand */
} csv_table_t;

/* Reads a whole results CSV (RFC 4180 quoting). Returns 0, or -1 on an unreadable
 * or malformed file (not a regular file, empty, ragged row, missing SPEC column, a
 * number that does not parse, a text longer than its column holds, an unknown status
 * or verified value, an ok row whose median_us, p10_us, p90_us, min_us or max_us is
 * not a finite positive number) with one line in msg naming path:line; t is then
 * empty. */
int csv_read(const char *path, csv_table_t *t, char *msg, size_t len);
/* The same on the size bytes at text (path only names it in messages). */
int csv_parse_text(const char *text, size_t size, const char *path, csv_table_t *t, char *msg,
                   size_t len);
/* The whole content of a regular file, NUL-terminated, malloc'd; NULL with errno set
 * where it cannot be read (EINVAL: not a regular file, e.g. a FIFO). */
char *csv_read_bytes(const char *path, size_t *size);
/* The cell of a named column; NULL when there is no such column or row. */
const char *csv_cell(const csv_table_t *t, int row, const char *col);
/* Index of a named column, -1 when absent. */
int csv_column(const csv_table_t *t, const char *col);
/* Table row -> struct. Returns 0, or -1 when a field does not parse. */
int csv_row_parse(const csv_table_t *t, int row, result_row_t *r);
/* Appends the rows of src to dst; their columns must be the same, in the same order.
 * Returns 0, or -1 with one line in msg. src is left as it was; dst's line numbers
 * are dropped (they would name two files). */
int csv_append(csv_table_t *dst, const csv_table_t *src, char *msg, size_t len);
/* gpu + kernel + every configuration column (and model/layers, which decide oom),
 * and the settings that change what a row measures, read from its args (--q-scaling,
 * --hot, --graph; absent: 1, L2 flushed, plain launches): joins rows (compare) and
 * skips finished ones (sweep --resume). splits counts only when forced: when args is
 * empty or holds "--splits"; otherwise it is the planner's choice, a result rather
 * than configuration. An 8-bit cache adds its storage and its --kv-scale (absent:
 * tensor); a cache in the dtype adds nothing, so keys of earlier rows stay theirs.
 * --step append adds its RoPE settings (csv_row_step); attend, the default, nothing;
 * q_len above 1 adds its count, and 1 nothing. So do --scores peaked and its logits,
 * --share-fraction, --share-map, --share-layer and --top-p where the args hold them. */
void csv_row_key(const result_row_t *r, char *buf, size_t len);
/* The row's KV storage: its kv_dtype, else (a row of a file written before that column)
 * the --kv-dtype of its args, else its dtype. */
void csv_row_kv_dtype(const result_row_t *r, char *buf, size_t len);
/* The row's step: its step column, else (a row of a file written before that column)
 * the --step of its args, else attend. */
void csv_row_step(const result_row_t *r, char *buf, size_t len);
/* Gives a table read from a file written before the kv_dtype column that column, each
 * row's csv_row_kv_dtype, so that tables pivot and filter on it in any file; a table
 * that has it is left as it is. 0, or -1 (out of memory, with one line in msg). */
int csv_add_kv_dtype(csv_table_t *t, char *msg, size_t len);
/* The same for the step column (csv_row_step): attend for every row of an earlier file. */
int csv_add_step(csv_table_t *t, char *msg, size_t len);
/* Gives a table read from a file written before --ctx-dist its ctx_dist (fixed),
 * ctx_total (batch x ctx) and ctx_max (ctx) columns; 0, or -1 with msg. */
int csv_add_ctx_dist(csv_table_t *t, char *msg, size_t len);
/* The same for the q_len column: each row's --q-len (from its args), else 1. */
int csv_add_q_len(csv_table_t *t, char *msg, size_t len);
/* How many of the columns, in order, the header of a results CSV (read from path) holds:
 * a file of an earlier version holds the first of them. Returns that count, or -1 with
 * one line in msg when its header is not such a prefix. */
int csv_table_columns(const csv_table_t *t, const char *path, char *msg, size_t len);
/* The same for the file at path, read for it (-1 also where it cannot be read). */
int csv_file_columns(const char *path, char *msg, size_t len);
void csv_free(csv_table_t *t);

/* Parses a whole field as a number; empty -> NaN. Returns 0, or -1 when the text
 * is not a number. Shared with the table filters. */
int csv_parse_double(const char *s, double *out);

#ifdef __cplusplus
}
#endif
#endif
