/* The results CSV of --out: checked whole before anything runs, touched only when
 * the first row is ready, then one flushed write per row.
 *
 * What an existing file gets:
 *   not a regular file (FIFO, directory, device; /dev/stdout excepted)  refused
 *   a file whose first line is not an attnbench header                  refused
 *   an attnbench CSV, sweep without --resume or --force                 refused
 *   an attnbench CSV with --force                                       replaced
 *   an attnbench CSV with --resume (and run)                            validated whole,
 *       then appended to with its own columns; a torn last row (one that does not
 *       parse as a complete row) is cut, a complete last row lacking its newline
 *       gets it. Its rows are done, except those whose status is error. */
#ifndef ATTNBENCH_OUT_CSV_H
#define ATTNBENCH_OUT_CSV_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "../report/csv.h"

typedef enum { OUT_NEW, OUT_REPLACE, OUT_APPEND, OUT_STDOUT } out_mode_t;

typedef struct out_csv {
    const char *path;
    out_mode_t mode;
    off_t keep_bytes;      /* OUT_APPEND: the file's bytes that stay (a torn row cut) */
    bool add_newline;      /* OUT_APPEND: its complete last row lacks the newline */
    bool cut;              /* OUT_APPEND: keep_bytes is shorter than the file */
    int cols;              /* columns of the rows written (the file's header; a new file's
                              may be set below csv_column_count before the first row) */
    char **done;           /* sorted keys (csv_row_key) of the finished rows */
    int n_done;
    char gpu[32];          /* the gpu of the finished rows where they share one, else "" */
    FILE *f;               /* NULL until the first row */
} out_csv_t;

/* Checks path for a command's --out without changing it. append: the command adds to
 * an existing results CSV (sweep --resume, run); force: it may replace one.
 * Returns 0, or -1 with one line in msg. */
int out_csv_check(out_csv_t *o, const char *path, bool append, bool force, char *msg, size_t len);

/* Whether a row of this key is finished in the file (never for an error row). */
bool out_csv_done(const out_csv_t *o, const char *key);

/* Writes one row: on the first, the file is made as checked (header, cut, newline).
 * Returns 0, or -1 with one line in msg when it cannot be written. */
int out_csv_write(out_csv_t *o, const result_row_t *row, char *msg, size_t len);

/* Closes the file and frees the keys. Returns 0, or -1 with one line in msg when the
 * last of the file could not be written. */
int out_csv_close(out_csv_t *o, char *msg, size_t len);

#endif
