/* What csv.c exposes to its tests only.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_CSV_INTERNAL_H
#define ATTNBENCH_CSV_INTERNAL_H

#include <stdio.h>
#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* csv_write_row_cols with every column. */
int csv_write_row(FILE *f, const result_row_t *r);

#ifdef __cplusplus
}
#endif
#endif
