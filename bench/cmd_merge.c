/* attnbench merge OUT.csv IN.csv...: joins the CSVs of the shards of a sweep
 * (--shard I/N) into one, after report/merge.c's checks. OUT follows sweep --out's
 * rules: made new, or an attnbench CSV replaced with --force. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/stat.h>
#include "commands.h"
#include "options.h"
#include "out_csv.h"
#include "../report/csv.h"
#include "../report/merge.h"

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return !strcmp(a, b) || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
                             sa.st_ino == sb.st_ino);
}

/* OUT must not be one of the inputs (--force would replace what is being joined), nor
 * an input given twice (every row of it would be a duplicate, told as an overlap). */
static int check_files_apart(const options_t *o)
{
    const char *const *f = (const char *const *)o->merge_files;
    for (int i = 1; i < o->n_merge_files; ++i) {
        if (same_file(f[i], f[0])) {
            cmd_error("merge", "%s is both the output and an input: name a new file for OUT.csv", f[0]);
            return -1;
        }
        for (int j = 1; j < i; ++j)
            if (same_file(f[i], f[j])) {
                if (strcmp(f[i], f[j])) cmd_error("merge", "%s is given twice (also as %s)", f[j], f[i]);
                else cmd_error("merge", "%s is given twice", f[j]);
                return -1;
            }
    }
    return 0;
}

/* sweep --out's rules for OUT, but told in merge's words: an existing results CSV
 * is replaced only with --force. */
static int check_out(out_csv_t *csv, const options_t *o, char *msg, size_t len)
{
    const char *out = o->merge_files[0];
    if (out_csv_check(csv, out, false, true, msg, len) != 0) return -1;
    struct stat st;
    if (!o->force && csv->mode == OUT_REPLACE && stat(out, &st) == 0 && st.st_size > 0) {
        snprintf(msg, len, "%s holds results already: --force replaces it", out);
        out_csv_close(csv, NULL, 0);
        return -1;
    }
    return 0;
}

static int write_all(out_csv_t *csv, const csv_table_t *t, const char *const *paths, int n,
                     int *rows)
{
    char msg[512];
    *rows = 0;
    for (int f = 0; f < n; ++f)
        for (int r = 0; r < t[f].nrows; ++r) {
            result_row_t row;
            if (csv_row_parse(&t[f], r, &row) != 0) {   /* merge_check parsed every row */
                cmd_error("merge", "%s: a row does not parse", paths[f]);
                return 1;
            }
            if (out_csv_write(csv, &row, msg, sizeof msg) != 0) {
                cmd_error("merge", "%s", msg);
                return 1;
            }
            ++*rows;
        }
    return 0;
}

int cmd_merge(int argc, char **argv)
{
    options_t o;
    int status;
    if (cmd_options(argc, argv, CMD_MERGE, &o, &status) != 0) return status;
    if (check_files_apart(&o) != 0) return 2;
    int n = o.n_merge_files - 1;
    const char *const *paths = (const char *const *)o.merge_files + 1;
    csv_table_t *t = n > 0 ? calloc((size_t)n, sizeof *t) : NULL;
    if (!t) {
        cmd_error("merge", "out of host memory");
        return 1;
    }
    char msg[512];
    int read = 0, rc = 0;
    for (; read < n && rc == 0; ++read)
        if (csv_read(paths[read], &t[read], msg, sizeof msg) != 0) rc = 2;
    if (rc == 0 && merge_check(t, paths, n, msg, sizeof msg) != 0) rc = 2;
    out_csv_t csv;
    memset(&csv, 0, sizeof csv);
    if (rc == 0 && check_out(&csv, &o, msg, sizeof msg) != 0) rc = 2;
    if (rc == 2) cmd_error("merge", "%s", msg);
    int rows = 0;
    if (rc == 0) {
        csv.cols = t[0].ncols;   /* the inputs' columns, of this version or an earlier one */
        rc = write_all(&csv, t, paths, n, &rows);
        /* no rows at all: OUT still gets the header, so that its absence means failure */
        if (rc == 0 && rows == 0 && csv.mode != OUT_STDOUT) {
            FILE *f = fopen(csv.path, csv.mode == OUT_NEW ? "wx" : "w");
            if (!f || csv_write_header_cols(f, csv.cols) != 0) {
                cmd_error("merge", "%s: cannot write", csv.path);
                rc = 1;
            }
            if (f) fclose(f);
        }
        if (out_csv_close(&csv, msg, sizeof msg) != 0 && rc == 0) {
            cmd_error("merge", "%s", msg);
            rc = 1;
        }
    } else {
        out_csv_close(&csv, NULL, 0);
    }
    for (int i = 0; i < read; ++i) csv_free(&t[i]);
    free(t);
    if (rc == 0 && csv.mode != OUT_STDOUT)
        printf("# merged %d rows from %d file%s into %s\n", rows, n, n == 1 ? "" : "s", o.merge_files[0]);
    return rc;
}
