/* Pivots of results CSVs. Both the generic pivot and the paper layouts fill a grid
 * of strings first and print it last, so Markdown and CSV share every rule about
 * what a cell says (a value, OOM, a failed status, or '-'). */
#include "table.h"
#include "../problem/presets.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AXIS 8

/* ---- grid of strings, row 0 the header ---- */

typedef struct grid {
    int nr, nc, cap;
    char **s;
    int failed;
} grid_t;

static int grid_add_row(grid_t *g)
{
    if (g->nr == g->cap) {
        int cap = g->cap ? 2 * g->cap : 32;
        char **s = realloc(g->s, (size_t)cap * (size_t)g->nc * sizeof *s);
        if (s == NULL) {
            g->failed = 1;
            return -1;
        }
        g->s = s;
        g->cap = cap;
    }
    for (int c = 0; c < g->nc; c++)
        g->s[g->nr * g->nc + c] = NULL;
    return g->nr++;
}

static void grid_set(grid_t *g, int r, int c, const char *fmt, ...)
{
    if (r < 0 || g->failed)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **slot = &g->s[r * g->nc + c];
    free(*slot);
    *slot = strdup(buf);
    if (*slot == NULL)
        g->failed = 1;
}

static const char *grid_get(const grid_t *g, int r, int c)
{
    const char *s = g->s[r * g->nc + c];
    return s ? s : "";
}

static void grid_free(grid_t *g)
{
    for (int i = 0; i < g->nr * g->nc; i++)
        free(g->s[i]);
    free(g->s);
    memset(g, 0, sizeof *g);
}

/* Markdown: columns padded to their widest cell so the source reads as a table too;
 * the first column left-aligned, the numbers right-aligned. */
static void grid_print(FILE *f, const grid_t *g, table_format_t fmt)
{
    if (fmt == TABLE_CSV) {
        for (int r = 0; r < g->nr; r++) {
            for (int c = 0; c < g->nc; c++) {
                if (c)
                    fputc(',', f);
                csv_write_field(f, grid_get(g, r, c));
            }
            fputc('\n', f);
        }
        return;
    }
    int nc = g->nc;
    int *width = malloc((size_t)(nc + 1) * sizeof *width);
    if (width == NULL) {
        /* every column or none: the table in CSV rather than a cut one */
        grid_print(f, g, TABLE_CSV);
        return;
    }
    for (int c = 0; c < nc; c++) {
        width[c] = 3;
        for (int r = 0; r < g->nr; r++) {
            int w = (int)strlen(grid_get(g, r, c));
            if (w > width[c])
                width[c] = w;
        }
    }
    for (int r = 0; r < g->nr; r++) {
        fputc('|', f);
        for (int c = 0; c < nc; c++) {
            if (c == 0)
                fprintf(f, " %-*s |", width[c], grid_get(g, r, c));
            else
                fprintf(f, " %*s |", width[c], grid_get(g, r, c));
        }
        fputc('\n', f);
        if (r == 0) {
            fputc('|', f);
            for (int c = 0; c < nc; c++) {
                fputc(' ', f);
                for (int k = 0; k < width[c] - (c ? 1 : 0); k++)
                    fputc('-', f);
                fputs(c ? ": |" : " |", f);
            }
            fputc('\n', f);
        }
    }
    free(width);
}

/* ---- options and filters ---- */

void table_opts_init(table_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->value = "median_us";
    o->format = TABLE_MD;
    o->agg = TABLE_AGG_MIN;
    o->filter_layer = 15;
}

int table_where_parse(const char *s, table_where_t *w, char *msg, size_t len)
{
    const char *eq = strchr(s, '=');
    if (eq == NULL || eq == s || eq[1] == '\0') {
        snprintf(msg, len, "--where '%.60s': expected COL=VAL[,VAL...]", s);
        return -1;
    }
    size_t n = (size_t)(eq - s);
    if (n >= sizeof w->col || strlen(eq + 1) >= sizeof w->vals) {
        snprintf(msg, len, "--where '%.60s': too long", s);
        return -1;
    }
    memcpy(w->col, s, n);
    w->col[n] = '\0';
    snprintf(w->vals, sizeof w->vals, "%s", eq + 1);
    return 0;
}

/* A number with an optional k (x1024) suffix, as the grid options write sizes. */
static int parse_sized(const char *s, double *v)
{
    char *end;
    if (*s == '\0')
        return -1;
    *v = strtod(s, &end);
    if (end == s)
        return -1;
    if (*end == 'k' || *end == 'K') {
        *v *= 1024;
        end++;
    }
    return *end == '\0' ? 0 : -1;
}

static int value_equals(const char *cell, const char *want)
{
    if (strcmp(cell, want) == 0)
        return 1;
    double a, b;
    return parse_sized(cell, &a) == 0 && parse_sized(want, &b) == 0 && a == b;
}

static int where_matches(const csv_table_t *t, int row, const table_where_t *w)
{
    const char *cell = csv_cell(t, row, w->col);
    char vals[sizeof w->vals];
    snprintf(vals, sizeof vals, "%s", w->vals);
    char *save = NULL;
    for (char *v = strtok_r(vals, ",", &save); v; v = strtok_r(NULL, ",", &save))
        if (value_equals(cell, v))
            return 1;
    return 0;
}

static int row_matches(const csv_table_t *t, int row, const table_opts_t *o)
{
    for (int i = 0; i < o->nwhere; i++)
        if (!where_matches(t, row, &o->where[i]))
            return 0;
    return 1;
}

static int check_where(const csv_table_t *t, const table_opts_t *o, char *msg, size_t len)
{
    for (int i = 0; i < o->nwhere; i++)
        if (csv_column(t, o->where[i].col) < 0) {
            snprintf(msg, len, "--where: unknown column '%.60s'", o->where[i].col);
            return -1;
        }
    return 0;
}

/* Layer count for ms per token: --layers, else the row's, else the fallback. */
static int layers_of(const result_row_t *r, const table_opts_t *o, int fallback)
{
    if (o->layers > 0)
        return o->layers;
    return r->layers > 0 ? r->layers : fallback;
}

static double ms_per_token(const result_row_t *r, int layers)
{
    return r->median_us * layers / 1000.0;
}

/* ---- generic pivot ---- */

typedef struct axis {
    int n;
    int col[MAX_AXIS];
    char label[256];
} axis_t;

static int axis_parse(const csv_table_t *t, const char *spec, const char *opt, axis_t *a,
                      char *msg, size_t len)
{
    memset(a, 0, sizeof *a);
    if (spec == NULL || *spec == '\0') {
        snprintf(msg, len, "%s: a pivot needs --rows and --cols (or --paper 6|7|8)", opt);
        return -1;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        int c = csv_column(t, name);
        if (c < 0) {
            snprintf(msg, len, "%s: unknown column '%.60s'", opt, name);
            return -1;
        }
        if (a->n == MAX_AXIS) {
            snprintf(msg, len, "%s: at most %d columns", opt, MAX_AXIS);
            return -1;
        }
        a->col[a->n++] = c;
        size_t used = strlen(a->label);
        snprintf(a->label + used, sizeof a->label - used, "%s%s", used ? " " : "", name);
    }
    if (a->n == 0) {
        snprintf(msg, len, "%s: no column named", opt);
        return -1;
    }
    return 0;
}

static int same_key(const csv_table_t *t, const axis_t *a, int r1, int r2)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(t->cells[r1][a->col[i]], t->cells[r2][a->col[i]]) != 0)
            return 0;
    return 1;
}

/* Numbers in numeric order, text in byte order, component by component; keys equal
 * as numbers (8k, 8192) are then told apart by their text, so that rows of one key
 * sort next to each other. */
static int key_order(const csv_table_t *t, const axis_t *a, int r1, int r2)
{
    for (int i = 0; i < a->n; i++) {
        const char *x = t->cells[r1][a->col[i]], *y = t->cells[r2][a->col[i]];
        double u, v;
        int d = 0;
        if (parse_sized(x, &u) == 0 && parse_sized(y, &v) == 0)
            d = (u > v) - (u < v);
        if (!d)
            d = strcmp(x, y);
        if (d)
            return d;
    }
    return 0;
}

/* qsort has no context argument: the table and axis being sorted */
static const csv_table_t *sort_table;
static const axis_t *sort_axis;

static int row_order(const void *a, const void *b)
{
    int r1 = *(const int *)a, r2 = *(const int *)b;
    int d = key_order(sort_table, sort_axis, r1, r2);
    return d ? d : (r1 > r2) - (r1 < r2);
}

/* The distinct keys of rows[0..n) on axis a, in key order: keys[k] is a row holding
 * the k-th key, and of[row] the index of its key. O(n log n). Returns the key count,
 * -1 out of memory. */
static int axis_keys(const csv_table_t *t, const axis_t *a, const int *rows, int n, int *keys,
                     int *of)
{
    int *sorted = malloc(((size_t)n + 1) * sizeof *sorted);
    if (sorted == NULL)
        return -1;
    memcpy(sorted, rows, (size_t)n * sizeof *sorted);
    sort_table = t;
    sort_axis = a;
    qsort(sorted, (size_t)n, sizeof *sorted, row_order);
    int nk = 0;
    for (int i = 0; i < n; i++) {
        if (nk == 0 || !same_key(t, a, keys[nk - 1], sorted[i]))
            keys[nk++] = sorted[i];
        of[sorted[i]] = nk - 1;
    }
    free(sorted);
    return nk;
}

static void key_label(const csv_table_t *t, const axis_t *a, int row, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < a->n; i++) {
        const char *s = t->cells[row][a->col[i]];
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? " " : "", *s ? s : "(none)");
    }
}

typedef struct cell {
    int ok_row;       /* chosen ok row, -1 none */
    double ok_val;
    int bad_row;      /* last failed row, -1 none */
    int oom;          /* some row ran out of memory */
} cell_t;

/* The shown value of a row: the computed ms per token, or the value column's text
 * as the file has it (its number in *num, NaN when not a number). */
static void row_value(const csv_table_t *t, int row, const table_opts_t *o, int vcol,
                      double *num, char *text, size_t len)
{
    if (vcol < 0) {
        result_row_t r;
        csv_row_parse(t, row, &r);
        *num = ms_per_token(&r, layers_of(&r, o, 1));
        if (isfinite(*num))
            snprintf(text, len, "%.2f", *num);
        else
            text[0] = '\0';
        return;
    }
    const char *s = t->cells[row][vcol];
    snprintf(text, len, "%s", s);
    if (csv_parse_double(s, num) != 0)
        *num = NAN;
}

/* Marks of a row's flags column (csv.h) in Markdown tables: '*' noisy, '^' throttled;
 * "" for none, for files before the column, and in CSV output (numbers only). */
static const char *flag_marks(const csv_table_t *t, int row, table_format_t fmt)
{
    const char *f = csv_cell(t, row, "flags");
    if (fmt != TABLE_MD || !f) return "";
    int noisy = strstr(f, "noisy") != NULL, throttled = strstr(f, "throttled") != NULL;
    return noisy && throttled ? "*^" : noisy ? "*" : throttled ? "^" : "";
}

static const char flag_legend[] =
    "\n`*` noisy: p90/p10 over 1.15, or timing stopped at --max-time above --max-noise; "
    "`^` throttled: mean SM clock under 90%% of the card's maximum.\n";

static void cell_add(cell_t *c, const csv_table_t *t, int row, const table_opts_t *o, int vcol)
{
    const char *status = csv_cell(t, row, "status");
    if (strcmp(status, "ok") != 0) {
        c->bad_row = row;
        if (strcmp(status, "oom") == 0)
            c->oom = 1;
        return;
    }
    double v;
    char text[128];
    row_value(t, row, o, vcol, &v, text, sizeof text);
    /* a row without a value never displaces one with a value */
    int take = c->ok_row < 0 || o->agg == TABLE_AGG_LAST ||
               (!isnan(v) && (isnan(c->ok_val) || (o->agg == TABLE_AGG_MIN && v < c->ok_val) ||
                              (o->agg == TABLE_AGG_MAX && v > c->ok_val)));
    if (take) {
        c->ok_row = row;
        c->ok_val = v;
    }
}


/* ---- --vs-peers: attnbench's kernels against the best peer ---- */

static int is_peer(const csv_table_t *t, int row, int kcol, const table_opts_t *o)
{
    if (kcol < 0)
        return 0;
    for (int i = 0; i < o->npeers; i++)
        if (o->peers[i] && strcmp(t->cells[row][kcol], o->peers[i]) == 0)
            return 1;
    return 0;
}

/* The kernel column, and pa: the --cols axis without it (the peers' columns, one pair
 * per key). Fails where kernel is a row axis: each row is one configuration. */
static int peers_axis(const csv_table_t *t, const axis_t *ra, const axis_t *ca, axis_t *pa,
                      int *kcol, char *msg, size_t len)
{
    memset(pa, 0, sizeof *pa);
    *kcol = csv_column(t, "kernel");
    if (*kcol < 0) {
        snprintf(msg, len, "--vs-peers: the file has no kernel column");
        return -1;
    }
    for (int i = 0; i < ra->n; i++)
        if (ra->col[i] == *kcol) {
            snprintf(msg, len, "--vs-peers: a row is one configuration of every kernel; "
                     "give kernel in --cols, not --rows");
            return -1;
        }
    for (int i = 0; i < ca->n; i++)
        if (ca->col[i] != *kcol)
            pa->col[pa->n++] = ca->col[i];
    return 0;
}

/* The best peer of each (row key, peer column key): its row, -1 none. */
typedef struct peer_best {
    int npk;          /* peer column keys (1 where --cols is only kernel) */
    int *keys;        /* a row holding each peer column key */
    int *of;          /* the peer column key of each row */
    int *row;         /* [nr * npk] the best ok peer row, -1 none */
    double *val;      /* its value */
} peer_best_t;

static void peer_best_free(peer_best_t *b)
{
    free(b->keys);
    free(b->of);
    free(b->row);
    free(b->val);
    memset(b, 0, sizeof *b);
}

/* Fills b from rows[0..nrows) (all rows the filters keep; rof their row keys).
 * Returns 0, -1 out of memory. */
static int peer_best_fill(peer_best_t *b, const csv_table_t *t, const axis_t *pa, int kcol,
                          const int *rows, int nrows, const int *rof, int nr,
                          const table_opts_t *o, int vcol)
{
    size_t n = (size_t)t->nrows + 1;
    memset(b, 0, sizeof *b);
    b->keys = malloc(n * sizeof *b->keys);
    b->of = calloc(n, sizeof *b->of);
    if (!b->keys || !b->of)
        return -1;
    b->npk = pa->n ? axis_keys(t, pa, rows, nrows, b->keys, b->of) : 1;
    if (b->npk < 0)
        return -1;
    if (b->npk == 0)
        b->npk = 1;
    size_t cells = (size_t)nr * (size_t)b->npk + 1;
    b->row = malloc(cells * sizeof *b->row);
    b->val = malloc(cells * sizeof *b->val);
    if (!b->row || !b->val)
        return -1;
    for (size_t i = 0; i < cells; i++) {
        b->row[i] = -1;
        b->val[i] = NAN;
    }
    for (int i = 0; i < nrows; i++) {
        int row = rows[i];
        if (!is_peer(t, row, kcol, o) || strcmp(csv_cell(t, row, "status"), "ok") != 0)
            continue;
        double v;
        char text[128];
        row_value(t, row, o, vcol, &v, text, sizeof text);
        size_t k = (size_t)rof[row] * (size_t)b->npk + (size_t)b->of[row];
        if (isfinite(v) && (b->row[k] < 0 || v < b->val[k])) {
            b->row[k] = row;
            b->val[k] = v;
        }
    }
    return 0;
}

/* The header of the peers' columns, from grid column c0 on. */
static void peer_header(grid_t *g, int h, int c0, const csv_table_t *t, const axis_t *pa,
                        const peer_best_t *b, const char *value)
{
    char label[256];
    for (int k = 0; k < b->npk; k++) {
        if (pa->n)
            key_label(t, pa, b->keys[k], label, sizeof label);
        else
            label[0] = '\0';
        grid_set(g, h, c0 + 2 * k, "best peer%s%s", label[0] ? " " : "", label);
        grid_set(g, h, c0 + 2 * k + 1, "peer %s%s%s", value, label[0] ? " " : "", label);
    }
}

/* Row r's peer columns from c0 on; returns whether a mark was shown. */
static int peer_cells(grid_t *g, int gr, int r, int c0, const csv_table_t *t,
                      const peer_best_t *b, const table_opts_t *o, int kcol, int vcol)
{
    int marked = 0;
    for (int k = 0; k < b->npk; k++) {
        int row = b->row[(size_t)r * (size_t)b->npk + (size_t)k];
        if (row < 0) {
            grid_set(g, gr, c0 + 2 * k, "-");
            grid_set(g, gr, c0 + 2 * k + 1, "-");
            continue;
        }
        double v;
        char text[128];
        row_value(t, row, o, vcol, &v, text, sizeof text);
        const char *marks = flag_marks(t, row, o->format);
        marked |= marks[0] != '\0';
        grid_set(g, gr, c0 + 2 * k, "%s", t->cells[row][kcol]);
        grid_set(g, gr, c0 + 2 * k + 1, "%s%s", text, marks);
    }
    return marked;
}

/* The columns --ratio A/B divides (*num by *den): the labels on either side of a '/'
 * (the first split whose two labels are both columns, since a label may hold '/').
 * Returns 0, or -1 with one line in msg. */
static int ratio_columns(const csv_table_t *t, const axis_t *ca, const int *ckeys, int nc,
                         const char *ratio, int *num, int *den, char *msg, size_t len)
{
    char label[256];
    size_t n = strlen(ratio);
    for (const char *slash = strchr(ratio, '/'); slash; slash = strchr(slash + 1, '/')) {
        size_t a = (size_t)(slash - ratio);
        *num = *den = -1;
        for (int c = 0; c < nc; c++) {
            key_label(t, ca, ckeys[c], label, sizeof label);
            if (strlen(label) == a && strncmp(label, ratio, a) == 0)
                *num = c;
            if (strcmp(label, slash + 1) == 0)
                *den = c;
        }
        if (*num >= 0 && *den >= 0)
            return 0;
    }
    snprintf(msg, len, "--ratio %.*s: give two column labels of the table as A/B", (int)(n > 80 ? 80 : n),
             ratio);
    return -1;
}

/* Row r's --ratio cell: num's value over den's (cell_add's ok_val, NaN without an ok
 * row), '-' without two finite values. */
static void ratio_cell(grid_t *g, int gr, int c, const cell_t *num, const cell_t *den)
{
    if (isfinite(num->ok_val) && isfinite(den->ok_val) && den->ok_val > 0)
        grid_set(g, gr, c, "%.3f", num->ok_val / den->ok_val);
    else
        grid_set(g, gr, c, "-");
}

static int table_pivot(FILE *out, const csv_table_t *t, const table_opts_t *o, char *msg, size_t len)
{
    axis_t ra, ca;
    if (axis_parse(t, o->rows, "--rows", &ra, msg, len) != 0 ||
        axis_parse(t, o->cols, "--cols", &ca, msg, len) != 0 || check_where(t, o, msg, len) != 0)
        return -1;
    axis_t pa;
    int kcol = -1;
    if (o->vs_peers && peers_axis(t, &ra, &ca, &pa, &kcol, msg, len) != 0)
        return -1;
    const char *value = o->value ? o->value : "median_us";
    int vcol = -1;
    if (strcmp(value, TABLE_MS_PER_TOKEN) != 0 && (vcol = csv_column(t, value)) < 0) {
        snprintf(msg, len, "--value: unknown column '%.60s'", value);
        return -1;
    }

    int nr = 0, nc = 0, nrows = 0, rc = -1;
    size_t n = (size_t)t->nrows + 1;
    int *rows = malloc(n * sizeof *rows), *rkeys = malloc(n * sizeof *rkeys);
    int *ckeys = malloc(n * sizeof *ckeys), *rof = malloc(n * sizeof *rof);
    int *cof = malloc(n * sizeof *cof), *ours = malloc(n * sizeof *ours);
    cell_t *cells = NULL;
    grid_t g = { 0 };
    peer_best_t pb = { 0 };
    if (!rows || !rkeys || !ckeys || !rof || !cof || !ours)
        goto oom;
    int marked = 0, nours = 0;
    /* ours: the rows of the cells (with --vs-peers, the peers' rows leave them) */
    for (int row = 0; row < t->nrows; row++)
        if (row_matches(t, row, o)) {
            rows[nrows++] = row;
            if (!o->vs_peers || !is_peer(t, row, kcol, o))
                ours[nours++] = row;
        }
    if ((nr = axis_keys(t, &ra, rows, nrows, rkeys, rof)) < 0 ||
        (nc = axis_keys(t, &ca, ours, nours, ckeys, cof)) < 0)
        goto oom;
    if (o->vs_peers &&
        peer_best_fill(&pb, t, &pa, kcol, rows, nrows, rof, nr, o, vcol) != 0)
        goto oom;
    if ((long long)nr * nc > 50000000LL) {
        snprintf(msg, len, "the table would have %d x %d cells; narrow it with --where", nr, nc);
        goto done;
    }
    cells = malloc((size_t)((long long)nr * nc + 1) * sizeof *cells);
    if (cells == NULL)
        goto oom;
    for (long long i = 0; i < (long long)nr * nc; i++)
        cells[i] = (cell_t){ -1, NAN, -1, 0 };
    for (int i = 0; i < nours; i++)
        cell_add(&cells[(size_t)rof[ours[i]] * nc + cof[ours[i]]], t, ours[i], o, vcol);

    int rnum = -1, rden = -1, rc0 = nc + 1 + (o->vs_peers ? 2 * pb.npk : 0);
    if (o->ratio && ratio_columns(t, &ca, ckeys, nc, o->ratio, &rnum, &rden, msg, len) != 0)
        goto done;
    g.nc = rc0 + (o->ratio ? 1 : 0);
    int h = grid_add_row(&g);
    grid_set(&g, h, 0, o->format == TABLE_MD ? "%s \\ %s" : "%s", ra.label, ca.label);
    char label[256];
    for (int c = 0; c < nc; c++) {
        key_label(t, &ca, ckeys[c], label, sizeof label);
        grid_set(&g, h, c + 1, "%s", label);
    }
    if (o->vs_peers)
        peer_header(&g, h, nc + 1, t, &pa, &pb, value);
    if (o->ratio)
        grid_set(&g, h, rc0, "%s", o->ratio);
    for (int r = 0; r < nr; r++) {
        int gr = grid_add_row(&g);
        key_label(t, &ra, rkeys[r], label, sizeof label);
        grid_set(&g, gr, 0, "%s", label);
        for (int c = 0; c < nc; c++) {
            const cell_t *cl = &cells[r * nc + c];
            if (cl->ok_row >= 0) {
                double v;
                char text[128];
                row_value(t, cl->ok_row, o, vcol, &v, text, sizeof text);
                const char *marks = flag_marks(t, cl->ok_row, o->format);
                if (o->vs_peers) {
                    /* the configuration's best peer: the same row and peer column key */
                    double best = pb.val[(size_t)r * (size_t)pb.npk + (size_t)pb.of[ckeys[c]]];
                    text[0] = '\0';
                    if (isfinite(v) && isfinite(best) && best > 0)
                        snprintf(text, sizeof text, "%.3f", v / best);
                }
                marked |= text[0] && marks[0] != '\0';
                grid_set(&g, gr, c + 1, "%s%s", text[0] ? text : "-", text[0] ? marks : "");
            } else if (cl->oom) {
                grid_set(&g, gr, c + 1, "OOM");
            } else if (cl->bad_row >= 0) {
                grid_set(&g, gr, c + 1, "%s", csv_cell(t, cl->bad_row, "status"));
            } else {
                grid_set(&g, gr, c + 1, "-");
            }
        }
        if (o->vs_peers)
            marked |= peer_cells(&g, gr, r, nc + 1, t, &pb, o, kcol, vcol);
        if (o->ratio)
            ratio_cell(&g, gr, rc0, &cells[r * nc + rnum], &cells[r * nc + rden]);
    }
    if (g.failed)
        goto oom;
    grid_print(out, &g, o->format);
    if (o->vs_peers && o->format == TABLE_MD)
        fprintf(out, "\nattnbench's kernels: %s / the best peer's %s on the same configuration "
                "(under 1: attnbench is faster); -: no ok row of the kernel or of any peer.\n",
                value, value);
    if (marked)
        fprintf(out, flag_legend);
    rc = 0;
    goto done;
oom:
    snprintf(msg, len, "out of memory");
done:
    grid_free(&g);
    free(cells);
    free(rows);
    free(rkeys);
    free(ckeys);
    free(rof);
    free(cof);
    free(ours);
    peer_best_free(&pb);
    return rc;
}

/* ---- the paper's Tables 6 and 7 ---- */

/* One column of a paper table: our kernel (and cache, NULL for any) standing in
 * for the paper's implementation. */
typedef struct paper_col {
    const char *kernel, *cache, *label, *paper;
} paper_col_t;

static const paper_col_t table6_cols[] = {
    { "bifurcated", NULL, "bifurcated", "Bifurcated" },
    { "fused", "contiguous", "fused", "Flash2 / SDPA Flash" },
    { "cublas", "contiguous", "cublas", "SDPA Math" },
    { "fused", "paged", "fused paged", "Flash2 (NC) / SDPA (NC)" },
    { "cublas-bifurcated", NULL, "cublas-bifurcated", "Bifurcated with torch compile (einsum form)" },
};
static const paper_col_t table7_cols[] = {
    { "cublas-bifurcated", NULL, "cublas-bifurcated", "Bifurcated + Compile (einsum form)" },
    { "bifurcated", NULL, "bifurcated", "Bifurcated" },
    { "fused", "contiguous", "fused", "Flash2" },
    { "fused", "paged", "fused paged", "Flash 2 (NC)" },
};
/* Table 8: Mistral 7B at TP=2, the paper's column order */
static const paper_col_t table8_cols[] = {
    { "cublas", "contiguous", "cublas", "SDPA" },
    { "bifurcated", NULL, "bifurcated", "Bifurcated" },
    { "fused", "contiguous", "fused", "Flash2" },
};

#define MAX_CTX 32
#define MAX_W 64

static int int_insert(int *v, int *n, int max, int x)
{
    for (int i = 0; i < *n; i++)
        if (v[i] == x)
            return 0;
    if (*n == max)
        return -1;
    int j = (*n)++;
    for (; j > 0 && v[j - 1] > x; j--)
        v[j] = v[j - 1];
    v[j] = x;
    return 0;
}

static void ctx_label(int ctx, char *buf, size_t len)
{
    if (ctx % 1024 == 0)
        snprintf(buf, len, "%dk", ctx / 1024);
    else
        snprintf(buf, len, "%d", ctx);
}

typedef struct paper_cell {
    int has_ok;
    double ms;
    int oom;
    char bad[16];
    const char *marks;   /* flag_marks of the row shown */
} paper_cell_t;

/* What a cell shows; *after_oom carries the column's "an OOM was shown above":
 * the paper writes OOM once, at the first size that ran out, and '-' beyond. */
static void paper_cell_text(const paper_cell_t *c, int *after_oom, char *buf, size_t len)
{
    if (c->has_ok)
        snprintf(buf, len, "%.2f%s", c->ms, c->marks ? c->marks : "");
    else if (c->oom) {
        snprintf(buf, len, "%s", *after_oom ? "-" : "OOM");
        *after_oom = 1;
    } else if (c->bad[0])
        snprintf(buf, len, "%s", c->bad);
    else
        snprintf(buf, len, "-");
}

static void paper_caption(FILE *out, int paper, const model_preset_t *m, const char *gpu,
                          const paper_col_t *pc, int npc, const table_opts_t *o,
                          const int *layers_seen, int nlayers)
{
    char layers[64];
    if (o->layers > 0)
        snprintf(layers, sizeof layers, "%d layers (--layers)", o->layers);
    else if (nlayers == 1)
        snprintf(layers, sizeof layers, "%d layers", layers_seen[0]);
    else if (nlayers == 0)
        snprintf(layers, sizeof layers, "%d layers", m->layers);
    else
        snprintf(layers, sizeof layers, "each row's own layer count");
    fprintf(out,
            "**Table %d analogue**: %s (%s: h=%d, g=%d, d=%d) on %s. Per-token latency in ms "
            "of attention only, %s (median_us x layers / 1000; weights, MLP and the rest "
            "of the model are not included). Rows: W samples decoded from one shared "
            "context (B = 1), the paper's batch size. Columns, with the paper's "
            "implementation each stands for:",
            paper, m->name, m->kv_heads == m->heads ? "MHA" : "GQA", m->heads, m->kv_heads,
            m->head_dim, gpu[0] ? gpu : "no GPU (no matching rows)", layers);
    if (paper == 8)
        fprintf(out, " With tensor parallelism 2 (--tp 2): each of two GPUs runs h/2, g/2 at "
                     "once and a row's time is the slower GPU's; the all-reduce is not timed.");
    for (int i = 0; i < npc; i++)
        fprintf(out, "%s %s = %s", i ? ";" : "", pc[i].label, pc[i].paper);
    fprintf(out, ". OOM: the whole model (fp16 weights + every layer's KV cache) did not "
                 "fit; -: no result, or beyond an OOM.\n\n");
}

static int table_paper(FILE *out, const csv_table_t *t, const table_opts_t *o, char *msg, size_t len)
{
    if (o->paper < 6 || o->paper > 8) {
        snprintf(msg, len, "--paper: %d is not a table this tool reproduces (6, 7 or 8)", o->paper);
        return -1;
    }
    if (check_where(t, o, msg, len) != 0)
        return -1;
    const model_preset_t *m = preset_find(o->paper == 6 ? "7b" : o->paper == 7 ? "7b-gqa" : "mistral-7b");
    const paper_col_t *pc = o->paper == 6 ? table6_cols : o->paper == 7 ? table7_cols : table8_cols;
    int npc = o->paper == 6   ? (int)(sizeof table6_cols / sizeof *pc)
              : o->paper == 7 ? (int)(sizeof table7_cols / sizeof *pc)
                              : (int)(sizeof table8_cols / sizeof *pc);
    /* Tables 6 and 7 ran on one GPU, Table 8 at TP=2 (--tp 2) */
    const int tp = o->paper == 8 ? 2 : 1;

    /* which rows count, and the axes they span */
    int ctxs[MAX_CTX], nctx = 0, ws[MAX_W], nw = 0, layers_seen[8], nlayers = 0;
    char gpu[32] = "";
    for (int w = 1; o->paper != 8 && w <= 2048; w *= 2)   /* Table 8: the sizes it ran */
        int_insert(ws, &nw, MAX_W, w);
    char *use = calloc((size_t)t->nrows + 1, 1);
    int *colof = calloc((size_t)t->nrows + 1, sizeof *colof);
    if (use == NULL || colof == NULL) {
        free(use);
        free(colof);
        snprintf(msg, len, "out of memory");
        return -1;
    }
    for (int row = 0; row < t->nrows; row++) {
        result_row_t r;
        csv_row_parse(t, row, &r);
        if (r.heads != m->heads || r.kv_heads != m->kv_heads || r.head_dim != m->head_dim ||
            r.batch != 1 || (r.tp > 1 ? r.tp : 1) != tp || !row_matches(t, row, o))
            continue;
        int col = -1;
        for (int i = 0; i < npc && col < 0; i++)
            if (strcmp(r.kernel, pc[i].kernel) == 0 &&
                (pc[i].cache == NULL || strcmp(r.cache, pc[i].cache) == 0))
                col = i;
        if (col < 0)
            continue;
        if (gpu[0] && strcmp(gpu, r.gpu) != 0) {
            snprintf(msg, len, "--paper %d: rows of several GPUs (%s, %s); choose one with "
                     "--where gpu=NAME", o->paper, gpu, r.gpu);
            free(use);
            free(colof);
            return -1;
        }
        snprintf(gpu, sizeof gpu, "%s", r.gpu);
        if (int_insert(ctxs, &nctx, MAX_CTX, r.ctx) != 0 || int_insert(ws, &nw, MAX_W, r.beam) != 0) {
            snprintf(msg, len, "--paper %d: more than %d context lengths or %d sample counts; "
                     "narrow with --where", o->paper, MAX_CTX, MAX_W);
            free(use);
            free(colof);
            return -1;
        }
        if (strcmp(r.status, "ok") == 0)
            int_insert(layers_seen, &nlayers, 8, layers_of(&r, o, m->layers));
        use[row] = 1;
        colof[row] = col;
    }
    if (nctx == 0) {   /* no data: still show the paper's frame */
        int_insert(ctxs, &nctx, MAX_CTX, 8192);
        int_insert(ctxs, &nctx, MAX_CTX, 16384);
        int_insert(ctxs, &nctx, MAX_CTX, 32768);
    }

    paper_cell_t *cells = calloc((size_t)(nctx * nw * npc), sizeof *cells);
    if (cells == NULL) {
        free(use);
        free(colof);
        snprintf(msg, len, "out of memory");
        return -1;
    }
#define CELL(ci, wi, k) cells[((ci) * nw + (wi)) * npc + (k)]
    for (int row = 0; row < t->nrows; row++) {
        if (!use[row])
            continue;
        result_row_t r;
        csv_row_parse(t, row, &r);
        int ci = 0, wi = 0;
        while (ctxs[ci] != r.ctx)
            ci++;
        while (ws[wi] != r.beam)
            wi++;
        paper_cell_t *c = &CELL(ci, wi, colof[row]);
        if (strcmp(r.status, "ok") == 0) {
            /* several settings of one kernel (multi-block modes, splits): its best */
            double ms = ms_per_token(&r, layers_of(&r, o, m->layers));
            if (!c->has_ok || ms < c->ms) {
                c->ms = ms;
                c->marks = flag_marks(t, row, o->format);
            }
            c->has_ok = 1;
        } else if (strcmp(r.status, "oom") == 0) {
            c->oom = 1;
        } else {
            snprintf(c->bad, sizeof c->bad, "%s", r.status);
        }
    }

    grid_t g = { 0 };
    char buf[64], lab[32];
    if (o->paper == 6) {
        /* the paper's Table 6: one block of rows per context length */
        int lead = o->format == TABLE_CSV ? 2 : 1;
        g.nc = lead + npc;
        int h = grid_add_row(&g);
        if (lead == 2)
            grid_set(&g, h, 0, "ctx");
        grid_set(&g, h, lead - 1, "W");
        for (int k = 0; k < npc; k++)
            grid_set(&g, h, lead + k, "%s", pc[k].label);
        for (int ci = 0; ci < nctx; ci++) {
            ctx_label(ctxs[ci], lab, sizeof lab);
            if (o->format == TABLE_MD)
                grid_set(&g, grid_add_row(&g), 0, "**Context length: %s**", lab);
            int first = g.nr;
            for (int wi = 0; wi < nw; wi++) {
                int gr = grid_add_row(&g);
                if (lead == 2)
                    grid_set(&g, gr, 0, "%d", ctxs[ci]);
                grid_set(&g, gr, lead - 1, "%d", ws[wi]);
            }
            for (int k = 0; k < npc; k++) {
                int after_oom = 0;
                for (int wi = 0; wi < nw; wi++) {
                    paper_cell_text(&CELL(ci, wi, k), &after_oom, buf, sizeof buf);
                    grid_set(&g, first + wi, lead + k, "%s", buf);
                }
            }
        }
    } else if (o->paper == 8) {
        /* the paper's Table 8: a row per (context, W) that ran, one column per kernel */
        g.nc = 2 + npc;
        int h = grid_add_row(&g);
        grid_set(&g, h, 0, "Context");
        grid_set(&g, h, 1, "W");
        for (int k = 0; k < npc; k++)
            grid_set(&g, h, 2 + k, "%s", pc[k].label);
        for (int ci = 0; ci < nctx; ci++) {
            int after_oom[8] = {0};
            for (int wi = 0; wi < nw; wi++) {
                int any = 0;
                for (int k = 0; k < npc; k++)
                    any |= CELL(ci, wi, k).has_ok || CELL(ci, wi, k).oom || CELL(ci, wi, k).bad[0];
                if (!any)
                    continue;
                int gr = grid_add_row(&g);
                grid_set(&g, gr, 0, "%d", ctxs[ci]);
                grid_set(&g, gr, 1, "%d", ws[wi]);
                for (int k = 0; k < npc; k++) {
                    paper_cell_text(&CELL(ci, wi, k), &after_oom[k], buf, sizeof buf);
                    grid_set(&g, gr, 2 + k, "%s", buf);
                }
            }
        }
    } else {
        /* the paper's Table 7: one group of columns per kernel, one column per context */
        g.nc = 1 + npc * nctx;
        int h = grid_add_row(&g);
        grid_set(&g, h, 0, "W");
        for (int k = 0; k < npc; k++)
            for (int ci = 0; ci < nctx; ci++) {
                ctx_label(ctxs[ci], lab, sizeof lab);
                grid_set(&g, h, 1 + k * nctx + ci, "%s %s", pc[k].label, lab);
            }
        for (int wi = 0; wi < nw; wi++)
            grid_set(&g, grid_add_row(&g), 0, "%d", ws[wi]);
        for (int k = 0; k < npc; k++)
            for (int ci = 0; ci < nctx; ci++) {
                int after_oom = 0;
                for (int wi = 0; wi < nw; wi++) {
                    paper_cell_text(&CELL(ci, wi, k), &after_oom, buf, sizeof buf);
                    grid_set(&g, 1 + wi, 1 + k * nctx + ci, "%s", buf);
                }
            }
    }
#undef CELL
    int rc = 0;
    if (g.failed) {
        snprintf(msg, len, "out of memory");
        rc = -1;
    } else {
        if (o->format == TABLE_MD)
            paper_caption(out, o->paper, m, gpu, pc, npc, o, layers_seen, nlayers);
        grid_print(out, &g, o->format);
        int marked = 0;
        for (int i = 0; i < nctx * nw * npc; i++)
            marked |= cells[i].has_ok && cells[i].marks && cells[i].marks[0];
        if (marked)
            fprintf(out, flag_legend);
    }
    grid_free(&g);
    free(cells);
    free(use);
    free(colof);
    return rc;
}

int table_render(FILE *out, const csv_table_t *t, const table_opts_t *o, char *msg, size_t len)
{
    if (o->paper != 0 && (o->vs_peers || o->ratio)) {
        snprintf(msg, len, "%s takes a pivot (--rows, --cols), not --paper", o->vs_peers ? "--vs-peers" : "--ratio");
        return -1;
    }
    if (o->select_total) return select_total_render(out, t, o->filter_layer, o->format, msg, len);
    if (o->paper != 0)
        return table_paper(out, t, o, msg, len);
    return table_pivot(out, t, o, msg, len);
}
