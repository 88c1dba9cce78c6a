/* attnbench merge: the checks that shard CSVs can be joined into one results CSV. */
#ifndef ATTNBENCH_MERGE_H
#define ATTNBENCH_MERGE_H

#include <stddef.h>
#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether tables t[0..n), read from paths[0..n), join into one results CSV:
 *   - the same columns in the same order (csv_table_columns: this version's or an
 *     earlier one's), in every file;
 *   - one `version` in every row of every file: the shards of a sweep are one build's;
 *   - no row key (csv_row_key, as --resume matches rows) in two files, nor twice in one
 *     file except as `error` rows, which --resume ran again and appended the row of.
 * Returns 0, or -1 with one line in msg naming file:line (and the earlier file:line). */
int merge_check(const csv_table_t *t, const char *const *paths, int n, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
