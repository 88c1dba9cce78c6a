#include "out_csv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

/* Whether text starts with the header of a results CSV of this or an earlier version:
 * its columns in order, at least every SPEC column. */
static bool has_results_header(const char *text, size_t size)
{
    size_t end = 0;
    while (end < size && text[end] != '\n') end++;
    if (end > 0 && text[end - 1] == '\r') end--;
    int c = 0;
    for (size_t pos = 0; pos <= end && c < csv_column_count; c++) {
        const char *name = csv_column_name(c);
        size_t n = strlen(name);
        if (pos + n > end || memcmp(text + pos, name, n) != 0) return false;
        pos += n;
        if (pos == end) return c + 1 >= CSV_SPEC_COLUMNS;
        if (text[pos] != ',') return false;
        pos++;
    }
    return false;
}

/* The directory path is to be created in must exist and take a new file. */
static int check_new(const char *path, char *msg, size_t len)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    if (access(dir, W_OK | X_OK) != 0)
        FAIL("%s: cannot create it in %s: %s", path, dir, strerror(errno));
    return 0;
}

static int key_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of t's finished rows, sorted; error rows are left to run again. */
static int load_done(out_csv_t *o, const csv_table_t *t, char *msg, size_t len)
{
    o->done = calloc((size_t)t->nrows + 1, sizeof *o->done);
    if (!o->done) FAIL("out of host memory");
    for (int i = 0; i < t->nrows; ++i) {
        result_row_t row;
        if (csv_row_parse(t, i, &row) != 0 || !strcmp(row.status, "error")) continue;
        char key[1024];
        csv_row_key(&row, key, sizeof key);
        if (!(o->done[o->n_done] = strdup(key))) FAIL("out of host memory");
        if (o->n_done == 0 || strcmp(o->gpu, row.gpu) != 0)
            snprintf(o->gpu, sizeof o->gpu, "%s", o->n_done == 0 ? row.gpu : "");
        o->n_done++;
    }
    qsort(o->done, (size_t)o->n_done, sizeof *o->done, key_order);
    return 0;
}

/* An attnbench CSV to append to: validated whole, its torn last row planned away. */
static int check_append(out_csv_t *o, const char *text, size_t size, char *msg, size_t len)
{
    csv_table_t t;
    size_t keep = size;
    int rc = csv_parse_text(text, size, o->path, &t, msg, len);
    if (rc != 0 && size > 0 && text[size - 1] != '\n') {
        /* the last line, cut short by a kill, does not parse: the rows before it must */
        while (keep > 0 && text[keep - 1] != '\n') keep--;
        char why[512];
        if (keep > 0 && csv_parse_text(text, keep, o->path, &t, why, sizeof why) == 0) rc = 0;
    }
    if (rc != 0) return -1;
    o->keep_bytes = (off_t)keep;
    o->cut = keep < size;
    o->add_newline = !o->cut && size > 0 && text[size - 1] != '\n';
    o->cols = csv_table_columns(&t, o->path, msg, len);
    rc = o->cols < 0 ? -1 : load_done(o, &t, msg, len);
    csv_free(&t);
    return rc;
}

int out_csv_check(out_csv_t *o, const char *path, bool append, bool force, char *msg, size_t len)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->cols = csv_column_count;
    if (!strcmp(path, "/dev/stdout")) {
        if (append) FAIL("%s: --resume needs a file", path);
        o->mode = OUT_STDOUT;
        return 0;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) FAIL("%s: %s", path, strerror(errno));
        o->mode = OUT_NEW;
        return check_new(path, msg, len);
    }
    if (S_ISDIR(st.st_mode)) FAIL("%s is a directory", path);
    if (!S_ISREG(st.st_mode)) FAIL("%s is not a regular file (a FIFO, device or socket)", path);
    if (access(path, W_OK) != 0) FAIL("%s: %s", path, strerror(errno));
    if (st.st_size == 0) {
        o->mode = OUT_REPLACE;   /* nothing in it to keep */
        return 0;
    }
    size_t size;
    char *text = csv_read_bytes(path, &size);
    if (!text) FAIL("%s: cannot read: %s", path, strerror(errno));
    int rc = 0;
    if (!has_results_header(text, size)) {
        snprintf(msg, len, "%s exists and is not an attnbench results CSV; name another file",
                 path);
        rc = -1;
    } else if (append) {
        o->mode = OUT_APPEND;
        rc = check_append(o, text, size, msg, len);
    } else if (force) {
        o->mode = OUT_REPLACE;
    } else {
        snprintf(msg, len, "%s holds results already: --resume runs only the rows it lacks, "
                 "--force replaces it", path);
        rc = -1;
    }
    free(text);
    if (rc != 0) out_csv_close(o, NULL, 0);
    return rc;
}

bool out_csv_done(const out_csv_t *o, const char *key)
{
    return o->n_done && bsearch(&key, o->done, (size_t)o->n_done, sizeof *o->done, key_order);
}

/* Makes the file as out_csv_check planned it. */
static int open_file(out_csv_t *o, char *msg, size_t len)
{
    switch (o->mode) {
    case OUT_STDOUT:
        o->f = stdout;
        break;
    case OUT_NEW:
    case OUT_REPLACE:
        o->f = fopen(o->path, o->mode == OUT_NEW ? "wx" : "w");
        break;
    case OUT_APPEND:
        if (o->cut && truncate(o->path, o->keep_bytes) != 0)
            FAIL("%s: cannot cut its unfinished last row: %s", o->path, strerror(errno));
        o->f = fopen(o->path, "a");
        if (o->f && o->add_newline) fputc('\n', o->f);
        break;
    }
    if (!o->f) FAIL("%s: cannot open for writing: %s", o->path, strerror(errno));
    if (o->mode != OUT_APPEND && csv_write_header_cols(o->f, o->cols) != 0)
        FAIL("%s: cannot write: %s", o->path, strerror(errno));
    return 0;
}

int out_csv_write(out_csv_t *o, const result_row_t *row, char *msg, size_t len)
{
    if (!o->f && open_file(o, msg, len) != 0) return -1;
    if (csv_write_row_cols(o->f, row, o->cols) != 0)
        FAIL("%s: cannot write: %s", o->path, strerror(errno));
    return 0;
}

int out_csv_close(out_csv_t *o, char *msg, size_t len)
{
    int rc = 0;
    if (o->f && o->f != stdout && fclose(o->f) != 0) {
        if (msg) snprintf(msg, len, "%s: cannot write: %s", o->path, strerror(errno));
        rc = -1;
    }
    o->f = NULL;
    for (int i = 0; i < o->n_done; ++i) free(o->done[i]);
    free(o->done);
    o->done = NULL;
    o->n_done = 0;
    return rc;
}
