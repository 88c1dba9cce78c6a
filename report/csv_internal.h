/* What csv.c exposes to its tests only.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_CSV_INTERNAL_H
#define ATTNBENCH_CSV_INTERNAL_H

#include <stdio.h>
#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The column names, SPEC's then the appended ones, csv_column_count of them. */
extern const char *const csv_columns[];

/* csv_write_row_cols with every column. */
void csv_write_row(FILE *f, const result_row_t *r);

#ifdef __cplusplus
}
#endif
#endif
