/* Results CSV: one descriptor per column drives writing, parsing and validation,
 * so the column order of SPEC §6 is stated exactly once. */
#include "csv.h"
#include "csv_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum { COL_STR, COL_INT, COL_DBL } col_type_t;

typedef struct col_desc {
    const char *name;
    col_type_t type;
    size_t offset;
    size_t size;        /* COL_STR: buffer size */
    const char *fmt;    /* COL_DBL: printf format */
} col_desc_t;

#define S(f) { #f, COL_STR, offsetof(result_row_t, f), sizeof(((result_row_t *)0)->f), NULL }
#define I(f) { #f, COL_INT, offsetof(result_row_t, f), 0, NULL }
#define D(f, fmt) { #f, COL_DBL, offsetof(result_row_t, f), 0, fmt }

static const col_desc_t cols[] = {
    S(gpu), S(kernel), S(attn),
    I(batch), I(beam), I(heads), I(kv_heads), I(head_dim), I(ctx), I(gen),
    S(dtype), S(cache), I(block_size), I(indirection), S(multi_block), I(splits),
    S(status), I(iters),
    /* microseconds to the nanosecond; noise is a relative standard deviation */
    D(median_us, "%.3f"), D(p10_us, "%.3f"), D(p90_us, "%.3f"), D(min_us, "%.3f"),
    D(max_us, "%.3f"), D(noise, "%.5f"),
    D(bytes, "%.0f"), D(unique_bytes, "%.0f"), D(flops, "%.0f"), D(gbps, "%.2f"),
    D(pct_peak_bw, "%.2f"), D(roofline_us, "%.3f"),
    S(verified), D(max_abs_err, "%.3e"), D(rel_err, "%.3e"),
    S(version),
    S(ran), S(model), I(layers), S(args), D(sm_mhz, "%.0f"),
    D(peak_gbps, "%.0f"), D(peak_tflops, "%.0f"), D(pct_spec_bw, "%.2f"),
    D(workspace_bytes, "%.0f"), S(flags), I(device), S(kv_dtype),
    I(tp), S(tp_us), S(step), S(ctx_dist), D(ctx_total, "%.0f"), I(ctx_max),
    D(approx_err, "%.3e"), D(kept, "%.4f"), I(q_len),
};
#undef S
#undef I
#undef D

#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

const char *csv_column_name(int c) { return c >= 0 && c < NCOLS ? cols[c].name : NULL; }
const int csv_column_count = NCOLS;

static const char *const statuses[] = { "ok", "oom", "unsupported", "error", "mismatch" };
static const char *const verdicts[] = { "yes", "no", "skip" };

static int in_set(const char *s, const char *const *set, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return 1;
    return 0;
}

/* n positive times joined by ';' (a measured share each; "nan" where one was not). */
static int tp_us_check(const char *s, int n)
{
    int k = 0;
    for (const char *w = s;; ++k) {
        size_t m = strcspn(w, ";");
        char one[32];
        double x;
        if (m == 0 || m >= sizeof one) return -1;
        snprintf(one, sizeof one, "%.*s", (int)m, w);
        if (csv_parse_double(one, &x) != 0 || !(isnan(x) || x > 0)) return -1;
        w += m;
        if (!*w) break;
        w++;
    }
    return k + 1 == n ? 0 : -1;
}

void result_row_init(result_row_t *r)
{
    memset(r, 0, sizeof *r);
    r->layers = 1;
    r->tp = 1;
    r->q_len = 1;
    for (int c = 0; c < NCOLS; c++)
        if (cols[c].type == COL_DBL)
            *(double *)((char *)r + cols[c].offset) = NAN;
}

void csv_write_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int csv_write_header(FILE *f) { return csv_write_header_cols(f, NCOLS); }

int csv_write_header_cols(FILE *f, int ncols)
{
    for (int c = 0; c < ncols && c < NCOLS; c++)
        fprintf(f, "%s%s", c ? "," : "", cols[c].name);
    fputc('\n', f);
    return fflush(f) != 0 || ferror(f) ? -1 : 0;
}

int csv_write_row(FILE *f, const result_row_t *r) { return csv_write_row_cols(f, r, NCOLS); }

int csv_write_row_cols(FILE *f, const result_row_t *r, int ncols)
{
    for (int c = 0; c < ncols && c < NCOLS; c++) {
        const char *p = (const char *)r + cols[c].offset;
        if (c)
            fputc(',', f);
        switch (cols[c].type) {
        case COL_STR: {
            /* bounded by the field's size even if a caller forgot the terminator */
            char buf[sizeof ((result_row_t *)0)->args];
            snprintf(buf, sizeof buf, "%.*s", (int)cols[c].size - 1, p);
            csv_write_field(f, buf);
            break;
        }
        case COL_INT:
            fprintf(f, "%d", *(const int *)p);
            break;
        case COL_DBL: {
            double v = *(const double *)p;
            if (isfinite(v))
                fprintf(f, cols[c].fmt, v);
            break;
        }
        }
    }
    fputc('\n', f);
    return fflush(f) != 0 || ferror(f) ? -1 : 0;
}

int csv_parse_double(const char *s, double *out)
{
    if (s == NULL || *s == '\0') {
        *out = NAN;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    if (*s == '\0') {
        *out = 0;
        return 0;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < -2147483647L || v > 2147483647L)
        return -1;
    *out = (int)v;
    return 0;
}

int csv_column(const csv_table_t *t, const char *col)
{
    for (int c = 0; c < t->ncols; c++)
        if (strcmp(t->names[c], col) == 0)
            return c;
    return -1;
}

const char *csv_cell(const csv_table_t *t, int row, const char *col)
{
    int c = csv_column(t, col);
    if (c < 0 || row < 0 || row >= t->nrows)
        return NULL;
    return t->cells[row][c];
}

/* Parses one field into the struct; -1 when it is not a number of its type. */
static int parse_field(const col_desc_t *d, const char *s, result_row_t *r)
{
    char *p = (char *)r + d->offset;
    switch (d->type) {
    case COL_STR:
        snprintf(p, d->size, "%s", s);
        return 0;
    case COL_INT:
        return parse_int(s, (int *)p);
    case COL_DBL:
        return csv_parse_double(s, (double *)p);
    }
    return -1;
}

int csv_row_parse(const csv_table_t *t, int row, result_row_t *r)
{
    result_row_init(r);
    r->layers = 0;   /* unknown unless the file says */
    if (row < 0 || row >= t->nrows)
        return -1;
    for (int c = 0; c < NCOLS; c++) {
        const char *s = csv_cell(t, row, cols[c].name);
        if (s != NULL && parse_field(&cols[c], s, r) != 0)
            return -1;
    }
    return 0;
}

/* The splits column records the split count that ran. It is configuration only when
 * --splits forced it (the row's args say so); a count the planner chose is a result,
 * and a planner change must not turn every row into missing + new. */
static int splits_forced(const result_row_t *r)
{
    return r->args[0] == '\0' || strstr(r->args, "--splits") != NULL;
}

/* Whether the row's args hold the word opt; its value (the next word) into val. */
static int args_has(const result_row_t *r, const char *opt, char *val, size_t len)
{
    char buf[sizeof r->args];
    snprintf(buf, sizeof buf, "%s", r->args);
    char *save = NULL;
    for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
        if (strcmp(w, opt) == 0) {
            char *v = strtok_r(NULL, " ", &save);
            if (val)
                snprintf(val, len, "%s", v ? v : "");
            return 1;
        }
    return 0;
}

void csv_row_kv_dtype(const result_row_t *r, char *buf, size_t len)
{
    if (r->kv_dtype[0]) snprintf(buf, len, "%s", r->kv_dtype);
    else if (!args_has(r, "--kv-dtype", buf, len) || !buf[0]) snprintf(buf, len, "%s", r->dtype);
}

void csv_row_step(const result_row_t *r, char *buf, size_t len)
{
    if (r->step[0]) snprintf(buf, len, "%s", r->step);
    else if (!args_has(r, "--step", buf, len) || !buf[0]) snprintf(buf, len, "attend");
}

void csv_row_key(const result_row_t *r, char *buf, size_t len)
{
    char splits[16];
    if (splits_forced(r))
        snprintf(splits, sizeof splits, "%d", r->splits);
    else
        snprintf(splits, sizeof splits, "planned");
    /* the measurement settings that change what a row measures, from its args */
    char qs[64] = "1";
    double q;
    if (args_has(r, "--q-scaling", qs, sizeof qs) && csv_parse_double(qs, &q) == 0 && isfinite(q))
        snprintf(qs, sizeof qs, "%.17g", q);
    /* an 8-bit cache: its storage and scales; a cache in the dtype: nothing */
    char kv[64] = "", kv_dtype[32], kv_scale[32] = "tensor";
    csv_row_kv_dtype(r, kv_dtype, sizeof kv_dtype);
    if (strcmp(kv_dtype, r->dtype) != 0) {
        if (!args_has(r, "--kv-scale", kv_scale, sizeof kv_scale) || !kv_scale[0])
            snprintf(kv_scale, sizeof kv_scale, "tensor");
        snprintf(kv, sizeof kv, "|kv=%s/%s", kv_dtype, kv_scale);
    }
    /* --tp N: the whole step over N GPUs, another row than one GPU's */
    char tp[16] = "";
    if (r->tp > 1) snprintf(tp, sizeof tp, "|tp=%d", r->tp);
    /* --step append: another step than attend's, each RoPE setting another row */
    char step[16], append[128] = "", rope[16] = "neox", base[32] = "10000", scale[32] = "1";
    csv_row_step(r, step, sizeof step);
    if (strcmp(step, "append") == 0) {
        args_has(r, "--rope", rope, sizeof rope);
        if (args_has(r, "--rope-base", base, sizeof base) && csv_parse_double(base, &q) == 0 && isfinite(q))
            snprintf(base, sizeof base, "%.17g", q);
        if (args_has(r, "--rope-scale", scale, sizeof scale) && csv_parse_double(scale, &q) == 0 && isfinite(q))
            snprintf(scale, sizeof scale, "%.17g", q);
        snprintf(append, sizeof append, "|append=%s/%s/%s", rope, base, scale);
    }
    /* a ragged batch (--ctx-dist): another row than every request at ctx */
    char dist[sizeof r->ctx_dist + 8] = "";
    if (r->ctx_dist[0] && strcmp(r->ctx_dist, "fixed") != 0) snprintf(dist, sizeof dist, "|dist=%s", r->ctx_dist);
    /* --q-len n: n query tokens per stream, another row than one token's */
    char ql[24] = "";
    if (r->q_len > 1) snprintf(ql, sizeof ql, "|q_len=%d", r->q_len);
    /* the inputs' scores and an approximation's settings, where the args name them */
    char approx[400] = "";
    static const char *const approx_opts[] = {"--scores", "--sink-logit", "--heavy-logit", "--recent-logit",
                                              "--share-fraction", "--share-map", "--share-layer", "--top-p"};
    for (size_t i = 0; i < sizeof approx_opts / sizeof approx_opts[0]; ++i) {
        char v[300];
        size_t n = strlen(approx);
        if (args_has(r, approx_opts[i], v, sizeof v) && n < sizeof approx)
            snprintf(approx + n, sizeof approx - n, "|%s=%s", approx_opts[i] + 2, v);
    }
    snprintf(buf, len, "%s|%s|%d|%d|%d|%d|%d|%d|%d|%s|%s|%d|%d|%s|%s|%s|%d|q%s|%s|%s%s%s%s%s%s%s",
             r->gpu, r->kernel, r->batch, r->beam, r->heads, r->kv_heads, r->head_dim,
             r->ctx, r->gen, r->dtype, r->cache, r->block_size, r->indirection,
             r->multi_block, splits, r->model, r->layers, qs,
             args_has(r, "--hot", NULL, 0) ? "hot" : "flushed",
             args_has(r, "--graph", NULL, 0) ? "graph" : "launches", kv, tp, append, dist, ql, approx);
}

/* Gives t the column `col`, each row's value(row), where it has none. */
static int add_column(csv_table_t *t, const char *col, void (*value)(const result_row_t *, char *, size_t),
                      char *msg, size_t len)
{
    if (csv_column(t, col) >= 0)
        return 0;
    char *name = strdup(col);
    char **names = name != NULL ? realloc(t->names, (size_t)(t->ncols + 1) * sizeof *names) : NULL;
    if (names == NULL) {
        free(name);
        snprintf(msg, len, "out of memory");
        return -1;
    }
    t->names = names;
    for (int row = 0; row < t->nrows; row++) {
        result_row_t r;
        char v[64];
        if (csv_row_parse(t, row, &r) != 0)
            result_row_init(&r);
        value(&r, v, sizeof v);
        char **cells = realloc(t->cells[row], (size_t)(t->ncols + 1) * sizeof *cells);
        if (cells != NULL)
            t->cells[row] = cells;
        if (cells == NULL || (cells[t->ncols] = strdup(v)) == NULL) {
            /* the table stays as it was: ncols columns, the new cells freed */
            for (int k = 0; k < row; k++)
                free(t->cells[k][t->ncols]);
            free(name);
            snprintf(msg, len, "out of memory");
            return -1;
        }
    }
    t->names[t->ncols++] = name;
    return 0;
}

int csv_add_kv_dtype(csv_table_t *t, char *msg, size_t len)
{
    return add_column(t, "kv_dtype", csv_row_kv_dtype, msg, len);
}

int csv_add_step(csv_table_t *t, char *msg, size_t len)
{
    return add_column(t, "step", csv_row_step, msg, len);
}

/* A row of a file written before --ctx-dist: every request of the batch has ctx. */
static void fixed_ctx_dist(const result_row_t *r, char *buf, size_t len) { (void)r; snprintf(buf, len, "fixed"); }
static void fixed_ctx_total(const result_row_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "%.0f", (double)r->batch * r->ctx);
}
static void fixed_ctx_max(const result_row_t *r, char *buf, size_t len) { snprintf(buf, len, "%d", r->ctx); }

int csv_add_ctx_dist(csv_table_t *t, char *msg, size_t len)
{
    if (add_column(t, "ctx_dist", fixed_ctx_dist, msg, len) != 0) return -1;
    if (add_column(t, "ctx_total", fixed_ctx_total, msg, len) != 0) return -1;
    return add_column(t, "ctx_max", fixed_ctx_max, msg, len);
}

/* A row of a file written before the q_len column: the --q-len of its args, else 1. */
static void row_q_len(const result_row_t *r, char *buf, size_t len)
{
    char v[16];
    if (args_has(r, "--q-len", v, sizeof v) && v[0]) snprintf(buf, len, "%s", v);
    else snprintf(buf, len, "%d", r->q_len > 0 ? r->q_len : 1);
}

int csv_add_q_len(csv_table_t *t, char *msg, size_t len)
{
    return add_column(t, "q_len", row_q_len, msg, len);
}

/* ---- reading ---- */

typedef struct strvec { char **v; int n, cap; } strvec_t;

static int strvec_push(strvec_t *s, char *x)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        char **v = realloc(s->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

static void strvec_free(strvec_t *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

char *csv_read_bytes(const char *path, size_t *size)
{
    /* a FIFO would block and a directory has no text: regular files only */
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (nb == NULL)
            free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (buf == NULL || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

/* Splits one record starting at *pos into fields. Returns 1 with a record, 0 at the
 * end of the input, -1 on a quoting error. Blank lines yield a record of one empty
 * field, which the caller skips. *line counts newlines for messages. */
static int next_record(const char *buf, size_t size, size_t *pos, int *line, strvec_t *out)
{
    size_t i = *pos;
    if (i >= size)
        return 0;
    for (;;) {
        size_t cap = 64, n = 0;
        char *field = malloc(cap);
        if (field == NULL)
            return -1;
        int quoted = 0;
        if (i < size && buf[i] == '"') {
            quoted = 1;
            i++;
        }
        for (;;) {
            char ch;
            if (i >= size) {
                if (quoted) {
                    free(field);
                    return -1;
                }
                break;
            }
            ch = buf[i];
            if (quoted) {
                if (ch == '"') {
                    if (i + 1 < size && buf[i + 1] == '"') {
                        i += 2;
                        ch = '"';
                    } else {
                        i++;
                        quoted = 0;
                        /* after a closing quote only a separator may follow */
                        if (i < size && buf[i] != ',' && buf[i] != '\n' && buf[i] != '\r') {
                            free(field);
                            return -1;
                        }
                        continue;
                    }
                } else {
                    if (ch == '\n')
                        (*line)++;
                    i++;
                }
            } else {
                if (ch == ',' || ch == '\n' || ch == '\r')
                    break;
                if (ch == '"') {
                    free(field);
                    return -1;
                }
                i++;
            }
            if (n + 1 >= cap) {
                cap *= 2;
                char *nf = realloc(field, cap);
                if (nf == NULL) {
                    free(field);
                    return -1;
                }
                field = nf;
            }
            field[n++] = ch;
        }
        field[n] = '\0';
        if (strvec_push(out, field) != 0) {
            free(field);
            return -1;
        }
        if (i < size && buf[i] == ',') {
            i++;
            continue;
        }
        if (i < size && buf[i] == '\r')
            i++;
        if (i < size && buf[i] == '\n')
            i++;
        (*line)++;
        *pos = i;
        return 1;
    }
}

void csv_free(csv_table_t *t)
{
    for (int c = 0; c < t->ncols; c++)
        free(t->names[c]);
    free(t->names);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++)
            free(t->cells[r][c]);
        free(t->cells[r]);
    }
    free(t->cells);
    free(t->lines);
    memset(t, 0, sizeof *t);
}

static int fail(csv_table_t *t, char *msg, size_t len, const char *path, int line,
                const char *what)
{
    if (line > 0)
        snprintf(msg, len, "%s:%d: %s", path, line, what);
    else
        snprintf(msg, len, "%s: %s", path, what);
    csv_free(t);
    return -1;
}

/* Semantic checks of one parsed row: numbers parse, status and verified are known. */
static int check_row(const csv_table_t *t, int row, char *what, size_t len)
{
    result_row_t r;
    result_row_init(&r);
    for (int c = 0; c < NCOLS; c++) {
        const char *s = csv_cell(t, row, cols[c].name);
        if (s == NULL)
            continue;
        if (cols[c].type == COL_STR && strlen(s) >= cols[c].size) {
            /* cut short, two different values could read as one (compare's join) */
            snprintf(what, len, "column %s: '%.40s...' is longer than %zu characters",
                     cols[c].name, s, cols[c].size - 1);
            return -1;
        }
        if (parse_field(&cols[c], s, &r) != 0) {
            snprintf(what, len, "column %s: '%.40s' is not a number", cols[c].name, s);
            return -1;
        }
    }
    const char *st = csv_cell(t, row, "status");
    if (!in_set(st, statuses, 5)) {
        snprintf(what, len, "column status: '%.40s' is not ok|oom|unsupported|error|mismatch",
                 st);
        return -1;
    }
    const char *v = csv_cell(t, row, "verified");
    if (!in_set(v, verdicts, 3)) {
        snprintf(what, len, "column verified: '%.40s' is not yes|no|skip", v);
        return -1;
    }
    /* flags: empty, or known words joined by ';' (a row torn inside them reads as torn) */
    const char *fl = csv_cell(t, row, "flags");
    for (const char *w = fl; w && *w; w++) {
        size_t n = strcspn(w, ";");
        if (!((n == 5 && strncmp(w, "noisy", 5) == 0) || (n == 9 && strncmp(w, "throttled", 9) == 0)) ||
            (w[n] == ';' && w[n + 1] == '\0')) {
            snprintf(what, len, "column flags: '%.40s' is not noisy, throttled or both joined by ';'", fl);
            return -1;
        }
        w += n;
        if (*w == '\0') break;
    }
    /* kv_dtype, the last column: empty (its args tell the storage, csv_row_kv_dtype) or a
     * known name, so that a row torn inside it reads as torn */
    static const char *const kv_dtypes[] = { "", "fp16", "bf16", "fp32", "fp8", "int8" };
    const char *kv = csv_cell(t, row, "kv_dtype");
    if (kv != NULL && !in_set(kv, kv_dtypes, 6)) {
        snprintf(what, len, "column kv_dtype: '%.40s' is not fp16, bf16, fp32, fp8 or int8", kv);
        return -1;
    }
    /* tp_us, the last column: empty on one GPU, else tp positive times joined by ';', so
     * that a row torn inside it (short of a digit of its last time) reads as torn */
    const char *tps = csv_cell(t, row, "tp");
    const char *tpu = csv_cell(t, row, "tp_us");
    long tp = 1;
    if (tps && *tps) {
        char *end;
        tp = strtol(tps, &end, 10);
        if (*end || tp < 1 || tp > 8) {
            snprintf(what, len, "column tp: '%.40s' is not a GPU count from 1 to 8", tps);
            return -1;
        }
    }
    if (tpu && (tp == 1 ? *tpu != '\0' : tp_us_check(tpu, (int)tp) != 0)) {
        snprintf(what, len, "column tp_us: '%.40s' is not %ld times joined by ';' (tp %ld)", tpu,
                 tp == 1 ? 0 : tp, tp);
        return -1;
    }
    /* step: empty (a row of an earlier version: its args tell) or a known step, so that a
     * row torn inside it reads as torn */
    static const char *const steps[] = { "", "attend", "append" };
    const char *stp = csv_cell(t, row, "step");
    if (stp != NULL && !in_set(stp, steps, 3)) {
        snprintf(what, len, "column step: '%.40s' is not attend or append", stp);
        return -1;
    }
    /* ctx_max: the ctx column (which reports the longest length), or 0 where a row does
     * not record it, so that a row torn inside it (where it is the last column) reads as
     * torn; ctx_total, where given, between it and batch times it */
    const char *cmax = csv_cell(t, row, "ctx_max"), *ctot = csv_cell(t, row, "ctx_total");
    if (cmax && strcmp(cmax, "0") != 0 && strcmp(cmax, csv_cell(t, row, "ctx")) != 0) {
        snprintf(what, len, "column ctx_max: '%.40s' is not the row's ctx", cmax);
        return -1;
    }
    if (ctot && *ctot) {
        double total, longest = strtod(csv_cell(t, row, "ctx"), NULL), batch = strtod(csv_cell(t, row, "batch"), NULL);
        if (csv_parse_double(ctot, &total) != 0 || !(total >= longest && total <= batch * longest)) {
            snprintf(what, len, "column ctx_total: '%.40s' is not between ctx and batch x ctx", ctot);
            return -1;
        }
    }
    /* kept: empty, or a fraction written with four decimals, so that a
     * row torn inside it reads as torn */
    const char *kept = csv_cell(t, row, "kept");
    if (kept && *kept) {
        double k;
        const char *dot = strchr(kept, '.');
        if (csv_parse_double(kept, &k) != 0 || !(k >= 0 && k <= 1) || !dot || strlen(dot + 1) != 4) {
            snprintf(what, len, "column kept: '%.40s' is not a fraction from 0 to 1 with four decimals", kept);
            return -1;
        }
    }
    /* q_len, the last column: a query-token count from 1 to 16, the one the row's args name (--q-len; none:
     * 1), so that a row torn inside it (16 cut to 1, or to nothing) reads as torn */
    const char *ql = csv_cell(t, row, "q_len");
    if (ql != NULL) {
        char *end;
        long n = strtol(ql, &end, 10);
        const char *args = csv_cell(t, row, "args");
        const char *opt = args ? strstr(args, "--q-len ") : NULL;
        long want = opt ? strtol(opt + 8, NULL, 10) : 1;
        if (!*ql || *end || n < 1 || n > 16 || (args && *args && n != want)) {
            snprintf(what, len, "column q_len: '%.40s' is not a query-token count from 1 to 16 matching its args", ql);
            return -1;
        }
    }
    /* an ok row measured a time: each of its times a finite positive number */
    static const char *const times[] = { "median_us", "p10_us", "p90_us", "min_us", "max_us" };
    for (int i = 0; strcmp(st, "ok") == 0 && i < 5; i++) {
        const char *s = csv_cell(t, row, times[i]);
        double x;
        if (csv_parse_double(s, &x) != 0 || !isfinite(x) || x <= 0) {
            snprintf(what, len, "column %s: '%.40s' in an ok row is not a positive time",
                     times[i], s);
            return -1;
        }
    }
    return 0;
}

int csv_read(const char *path, csv_table_t *t, char *msg, size_t len)
{
    memset(t, 0, sizeof *t);
    size_t size = 0;
    errno = 0;
    char *buf = csv_read_bytes(path, &size);
    if (buf == NULL) {
        snprintf(msg, len, "%s: cannot read: %s", path,
                 errno == EINVAL ? "not a regular file" : strerror(errno ? errno : EIO));
        return -1;
    }
    int rc = csv_parse_text(buf, size, path, t, msg, len);
    free(buf);
    return rc;
}

int csv_parse_text(const char *text, size_t size, const char *path, csv_table_t *t, char *msg,
                   size_t len)
{
    memset(t, 0, sizeof *t);
    size_t pos = 0;
    /* the parser frees buf on every exit: a copy, so that text stays the caller's */
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        snprintf(msg, len, "%s: out of memory", path);
        return -1;
    }
    memcpy(buf, text, size);
    buf[size] = '\0';
    int line = 1, rc;
    char what[160];
    strvec_t rec = { 0 };
    int rec_line = line;
    /* header: the first non-blank record */
    while ((rc = next_record(buf, size, &pos, &line, &rec)) == 1 && rec.n == 1 && rec.v[0][0] == '\0')
        strvec_free(&rec);
    if (rc != 1) {
        strvec_free(&rec);
        free(buf);
        return fail(t, msg, len, path, 0, rc == 0 ? "empty file, no header" : "bad quoting in header");
    }
    t->ncols = rec.n;
    t->names = rec.v;
    rec = (strvec_t){ 0 };
    for (int c = 0; c < t->ncols; c++)
        for (int k = 0; k < c; k++)
            if (strcmp(t->names[c], t->names[k]) == 0) {
                snprintf(what, sizeof what, "column %.40s appears twice in the header", t->names[c]);
                free(buf);
                return fail(t, msg, len, path, 1, what);
            }
    for (int c = 0; c < CSV_SPEC_COLUMNS; c++)
        if (csv_column(t, cols[c].name) < 0) {
            snprintf(what, sizeof what, "header lacks required column %s", cols[c].name);
            free(buf);
            return fail(t, msg, len, path, 1, what);
        }
    int cap = 0;
    for (;;) {
        rec_line = line;
        rc = next_record(buf, size, &pos, &line, &rec);
        if (rc == 0)
            break;
        if (rc < 0) {
            strvec_free(&rec);
            free(buf);
            return fail(t, msg, len, path, rec_line, "bad quoting");
        }
        if (rec.n == 1 && rec.v[0][0] == '\0') {
            strvec_free(&rec);
            continue;
        }
        if (rec.n != t->ncols) {
            snprintf(what, sizeof what, "row has %d fields, the header %d", rec.n, t->ncols);
            strvec_free(&rec);
            free(buf);
            return fail(t, msg, len, path, rec_line, what);
        }
        if (t->nrows == cap) {
            cap = cap ? 2 * cap : 64;
            char ***nc = realloc(t->cells, (size_t)cap * sizeof *nc);
            if (nc != NULL)
                t->cells = nc;
            int *nl = nc == NULL ? NULL : realloc(t->lines, (size_t)cap * sizeof *nl);
            if (nl == NULL) {
                strvec_free(&rec);
                free(buf);
                return fail(t, msg, len, path, 0, "out of memory");
            }
            t->lines = nl;
        }
        t->lines[t->nrows] = rec_line;
        t->cells[t->nrows++] = rec.v;
        rec = (strvec_t){ 0 };
        if (check_row(t, t->nrows - 1, what, sizeof what) != 0) {
            free(buf);
            return fail(t, msg, len, path, rec_line, what);
        }
    }
    free(buf);
    return 0;
}

int csv_table_columns(const csv_table_t *t, const char *path, char *msg, size_t len)
{
    int n = t->ncols, prefix = n <= NCOLS;
    for (int c = 0; prefix && c < n; c++)
        prefix = strcmp(t->names[c], cols[c].name) == 0;
    if (!prefix) {
        snprintf(msg, len, "%s: its columns are not a results CSV's of this or an earlier version", path);
        return -1;
    }
    return n;
}

int csv_file_columns(const char *path, char *msg, size_t len)
{
    csv_table_t t;
    if (csv_read(path, &t, msg, len) != 0)
        return -1;
    int n = csv_table_columns(&t, path, msg, len);
    csv_free(&t);
    return n;
}

int csv_append(csv_table_t *dst, const csv_table_t *src, char *msg, size_t len)
{
    if (dst->ncols != src->ncols) {
        snprintf(msg, len, "files have different columns (%d and %d)", dst->ncols, src->ncols);
        return -1;
    }
    for (int c = 0; c < dst->ncols; c++)
        if (strcmp(dst->names[c], src->names[c]) != 0) {
            snprintf(msg, len, "files have different columns (%.40s and %.40s)",
                     dst->names[c], src->names[c]);
            return -1;
        }
    char ***nc = realloc(dst->cells, (size_t)(dst->nrows + src->nrows + 1) * sizeof *nc);
    if (nc == NULL) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    dst->cells = nc;
    free(dst->lines);
    dst->lines = NULL;
    for (int r = 0; r < src->nrows; r++) {
        char **row = malloc((size_t)src->ncols * sizeof *row);
        if (row == NULL) {
            snprintf(msg, len, "out of memory");
            return -1;
        }
        for (int c = 0; c < src->ncols; c++) {
            row[c] = strdup(src->cells[r][c]);
            if (row[c] == NULL) {
                for (int k = 0; k < c; k++)
                    free(row[k]);
                free(row);
                snprintf(msg, len, "out of memory");
                return -1;
            }
        }
        dst->cells[dst->nrows++] = row;
    }
    return 0;
}
