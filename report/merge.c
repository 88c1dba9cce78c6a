#include "merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

/* The line a row starts on, for messages. */
static int line_of(const csv_table_t *t, int r) { return t->lines ? t->lines[r] : r + 2; }

static int check_columns(const csv_table_t *t, const char *const *paths, int n, char *msg,
                         size_t len)
{
    for (int f = 0; f < n; ++f) {
        if (csv_table_columns(&t[f], paths[f], msg, len) < 0) return -1;
        if (t[f].ncols != t[0].ncols)
            FAIL("%s:1: its columns are not those of %s (%d and %d columns): the files come from "
                 "different versions", paths[f], paths[0], t[f].ncols, t[0].ncols);
    }
    return 0;
}

static int check_versions(const csv_table_t *t, const char *const *paths, int n, char *msg,
                          size_t len)
{
    int f0 = -1;
    for (int f = 0; f < n && f0 < 0; ++f)
        if (t[f].nrows) f0 = f;
    if (f0 < 0) return 0;
    const char *want = csv_cell(&t[f0], 0, "version");
    for (int f = f0; f < n; ++f)
        for (int r = 0; r < t[f].nrows; ++r) {
            const char *v = csv_cell(&t[f], r, "version");
            if (strcmp(v, want) != 0)
                FAIL("%s:%d: version '%s' is not '%s' (%s:%d): merge joins the shards of one "
                     "build's sweep", paths[f], line_of(&t[f], r), v, want, paths[f0],
                     line_of(&t[f0], 0));
        }
    return 0;
}

typedef struct keyed {
    char *key;
    int file, row;
    int error;   /* an `error` row: --resume runs it again */
} keyed_t;

static int by_key(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    if (x->file != y->file) return x->file - y->file;
    return x->row - y->row;
}

/* Each group of one key: all in one file, with at most one row that is not `error`. */
static int check_group(const keyed_t *k, int n, const csv_table_t *t, const char *const *paths,
                       char *msg, size_t len)
{
    int final = -1;
    for (int i = 0; i < n; ++i) {
        const keyed_t *a = &k[i];
        if (a->file != k[0].file)
            FAIL("%s:%d: the configuration of %s:%d again (%s): shards must not overlap",
                 paths[a->file], line_of(&t[a->file], a->row), paths[k[0].file],
                 line_of(&t[k[0].file], k[0].row), a->key);
        if (a->error) continue;
        if (final >= 0)
            FAIL("%s:%d: the configuration of line %d again (%s)", paths[a->file],
                 line_of(&t[a->file], a->row), line_of(&t[a->file], k[final].row), a->key);
        final = i;
    }
    return 0;
}

static int check_keys(const csv_table_t *t, const char *const *paths, int n, char *msg,
                      size_t len)
{
    int total = 0;
    for (int f = 0; f < n; ++f) total += t[f].nrows;
    keyed_t *k = calloc((size_t)(total ? total : 1), sizeof *k);
    if (!k) FAIL("out of host memory");
    int m = 0, rc = 0;
    for (int f = 0; f < n && rc == 0; ++f)
        for (int r = 0; r < t[f].nrows; ++r) {
            result_row_t row;
            char key[1024];
            if (csv_row_parse(&t[f], r, &row) != 0) {
                snprintf(msg, len, "%s:%d: a field does not parse", paths[f], line_of(&t[f], r));
                rc = -1;
                break;
            }
            csv_row_key(&row, key, sizeof key);
            k[m] = (keyed_t){strdup(key), f, r, !strcmp(row.status, "error")};
            if (!k[m++].key) {
                snprintf(msg, len, "out of host memory");
                rc = -1;
                break;
            }
        }
    if (rc == 0) qsort(k, (size_t)m, sizeof *k, by_key);
    for (int i = 0, j; rc == 0 && i < m; i = j) {
        for (j = i + 1; j < m && !strcmp(k[j].key, k[i].key); ++j) {}
        rc = check_group(&k[i], j - i, t, paths, msg, len);
    }
    for (int i = 0; i < m; ++i) free(k[i].key);
    free(k);
    return rc;
}

int merge_check(const csv_table_t *t, const char *const *paths, int n, char *msg, size_t len)
{
    if (n < 1) FAIL("no input files");
    if (check_columns(t, paths, n, msg, len)) return -1;
    if (check_versions(t, paths, n, msg, len)) return -1;
    return check_keys(t, paths, n, msg, len);
}
