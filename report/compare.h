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

/* The whole command on two files: 0 pass, 1 regression, 2 unreadable or malformed
 * input (one line in msg). */
int compare_files(const char *base_path, const char *next_path, double threshold,
                  bool changes_only, FILE *out, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
