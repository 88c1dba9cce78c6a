/* Noise-aware comparison of two results CSVs; the rule is stated in compare.h. */
#include "compare.h"
#include "compare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const verdict_names[VERDICT_COUNT] = {
    "same", "faster", "slower", "missing", "new", "broken", "fixed",
};

static const char *verdict_name(verdict_t v)
{
    return v >= 0 && v < VERDICT_COUNT ? verdict_names[v] : "?";
}

/* 1 for the verdicts that fail a check: slower, broken, missing. */
static int verdict_fails(verdict_t v)
{
    return v == VERDICT_SLOWER || v == VERDICT_BROKEN || v == VERDICT_MISSING;
}

static double noise_or_zero(double x)
{
    return isfinite(x) && x > 0 ? x : 0.0;
}

verdict_t compare_rows(const result_row_t *base, const result_row_t *next, double threshold,
                       double *change, double *noise, double *limit)
{
    int base_ok = strcmp(base->status, "ok") == 0;
    int next_ok = strcmp(next->status, "ok") == 0;
    double nb = noise_or_zero(base->noise), nn = noise_or_zero(next->noise);
    *noise = sqrt(nb * nb + nn * nn);
    *limit = fmax(threshold, 2.0 * *noise);
    *change = NAN;
    if (base_ok && next_ok && isfinite(base->median_us) && base->median_us > 0 &&
        isfinite(next->median_us))
        *change = next->median_us / base->median_us - 1.0;

    if (strcmp(base->verified, "yes") == 0 && strcmp(next->verified, "no") == 0)
        return VERDICT_BROKEN;
    if (base_ok && !next_ok)
        return VERDICT_BROKEN;
    if (!base_ok && next_ok)
        return VERDICT_FIXED;
    if (!base_ok) {
        /* failing before and after: only a turn for the worse counts */
        int worse = strcmp(base->status, next->status) != 0 &&
                    (strcmp(next->status, "error") == 0 || strcmp(next->status, "mismatch") == 0);
        return worse ? VERDICT_BROKEN : VERDICT_SAME;
    }
    if (isnan(*change))
        return VERDICT_SAME;
    if (*change > *limit)
        return VERDICT_SLOWER;
    if (*change < -*limit)
        return VERDICT_FASTER;
    return VERDICT_SAME;
}

/* ---- joining ---- */

typedef struct keyed {
    char key[1024];
    int row;
} keyed_t;

static int keyed_order(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    int d = strcmp(x->key, y->key);
    return d ? d : (x->row > y->row) - (x->row < y->row);
}

static keyed_t *index_table(const csv_table_t *t)
{
    keyed_t *k = malloc(((size_t)t->nrows + 1) * sizeof *k);
    if (k == NULL)
        return NULL;
    for (int i = 0; i < t->nrows; i++) {
        result_row_t r;
        csv_row_parse(t, i, &r);
        csv_row_key(&r, k[i].key, sizeof k[i].key);
        k[i].row = i;
    }
    qsort(k, (size_t)t->nrows, sizeof *k, keyed_order);
    return k;
}

/* The last row with this key, -1 if none. */
static int find_last(const keyed_t *k, int n, const char *key)
{
    int lo = 0, hi = n;
    while (lo < hi) {   /* first index whose key is > key */
        int mid = (lo + hi) / 2;
        if (strcmp(k[mid].key, key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && strcmp(k[lo - 1].key, key) == 0 ? k[lo - 1].row : -1;
}

int compare_tables(const csv_table_t *base, const csv_table_t *next, double threshold,
                   compare_result_t *out, char *msg, size_t len)
{
    memset(out, 0, sizeof *out);
    out->threshold = threshold;
    keyed_t *kb = index_table(base), *kn = index_table(next);
    out->entries = calloc((size_t)(base->nrows + next->nrows) + 1, sizeof *out->entries);
    if (kb == NULL || kn == NULL || out->entries == NULL) {
        free(kb);
        free(kn);
        compare_free(out);
        snprintf(msg, len, "out of memory");
        return -1;
    }
    char key[1024];
    for (int i = 0; i < base->nrows; i++) {
        compare_entry_t *e = &out->entries[out->n];
        csv_row_parse(base, i, &e->base);
        csv_row_key(&e->base, key, sizeof key);
        if (find_last(kb, base->nrows, key) != i)
            continue;   /* superseded by a later row of the same key */
        e->has_base = true;
        e->change = e->noise = e->limit = NAN;
        int j = find_last(kn, next->nrows, key);
        if (j < 0) {
            e->verdict = VERDICT_MISSING;
        } else {
            e->has_next = true;
            csv_row_parse(next, j, &e->next);
            e->verdict = compare_rows(&e->base, &e->next, threshold, &e->change, &e->noise,
                                      &e->limit);
        }
        out->count[e->verdict]++;
        out->n++;
    }
    for (int j = 0; j < next->nrows; j++) {
        compare_entry_t *e = &out->entries[out->n];
        csv_row_parse(next, j, &e->next);
        csv_row_key(&e->next, key, sizeof key);
        if (find_last(kn, next->nrows, key) != j || find_last(kb, base->nrows, key) >= 0)
            continue;
        e->has_next = true;
        e->change = e->noise = e->limit = NAN;
        e->verdict = VERDICT_NEW;
        out->count[e->verdict]++;
        out->n++;
    }
    free(kb);
    free(kn);
    return 0;
}

int compare_exit_status(const compare_result_t *r)
{
    for (int v = 0; v < VERDICT_COUNT; v++)
        if (verdict_fails((verdict_t)v) && r->count[v] > 0)
            return 1;
    return 0;
}

void compare_free(compare_result_t *r)
{
    free(r->entries);
    memset(r, 0, sizeof *r);
}

/* ---- printing ---- */

static void describe(const result_row_t *r, char *buf, size_t len)
{
    int n = snprintf(buf, len, "B%d W%d h%d g%d d%d ctx%d gen%d %s %s", r->batch, r->beam,
                     r->heads, r->kv_heads, r->head_dim, r->ctx, r->gen, r->dtype, r->cache);
    if (n >= 0 && (size_t)n < len && strcmp(r->cache, "paged") == 0)
        n += snprintf(buf + n, len - (size_t)n, " S%d", r->block_size);
    char kv[32];
    csv_row_kv_dtype(r, kv, sizeof kv);
    if (n >= 0 && (size_t)n < len && strcmp(kv, r->dtype) != 0)
        n += snprintf(buf + n, len - (size_t)n, " kv-%s", kv);
    if (n >= 0 && (size_t)n < len && r->indirection)
        n += snprintf(buf + n, len - (size_t)n, " indirection");
    if (n >= 0 && (size_t)n < len && r->multi_block[0])
        n += snprintf(buf + n, len - (size_t)n, " mb=%s", r->multi_block);
    if (n >= 0 && (size_t)n < len && r->splits > 0)
        n += snprintf(buf + n, len - (size_t)n, " splits=%d", r->splits);
    if (n >= 0 && (size_t)n < len && r->model[0])
        snprintf(buf + n, len - (size_t)n, " model=%s", r->model);
}

/* A median, or the status where the row has none. */
static void side_text(const result_row_t *r, bool present, char *buf, size_t len)
{
    if (!present)
        snprintf(buf, len, "-");
    else if (strcmp(r->status, "ok") != 0 || !isfinite(r->median_us))
        snprintf(buf, len, "%s", r->status);
    else
        snprintf(buf, len, "%.2f", r->median_us);
}

static void pct_text(double x, char *buf, size_t len, bool sign)
{
    if (isfinite(x))
        snprintf(buf, len, sign ? "%+.1f" : "%.1f", 100.0 * x);
    else
        snprintf(buf, len, "-");
}

enum { F_VERDICT, F_KERNEL, F_CONFIG, F_BASE, F_NEW, F_CHANGE, F_NOISE, F_LIMIT, F_CLOCK, F_COUNT };

/* The SM clocks the two sides ran at (csv: sm_mhz), "base/new", "-" where a side has
 * none (files of earlier versions, --profile rows): a slower row whose clock fell ran
 * throttled, which the kernel may not be to blame for. */
static void clock_text(const compare_entry_t *e, char *buf, size_t len)
{
    char side[2][16];
    const result_row_t *r[2] = {&e->base, &e->next};
    const bool present[2] = {e->has_base, e->has_next};
    for (int i = 0; i < 2; i++) {
        if (present[i] && isfinite(r[i]->sm_mhz))
            snprintf(side[i], sizeof side[i], "%.0f", r[i]->sm_mhz);
        else
            snprintf(side[i], sizeof side[i], "-");
    }
    snprintf(buf, len, "%s/%s", side[0], side[1]);
}

static void entry_fields(const compare_entry_t *e, char f[F_COUNT][160])
{
    const result_row_t *r = e->has_base ? &e->base : &e->next;
    snprintf(f[F_VERDICT], 160, "%s", verdict_name(e->verdict));
    snprintf(f[F_KERNEL], 160, "%s", r->kernel);
    describe(r, f[F_CONFIG], 160);
    side_text(&e->base, e->has_base, f[F_BASE], 160);
    side_text(&e->next, e->has_next, f[F_NEW], 160);
    pct_text(e->change, f[F_CHANGE], 160, true);
    /* noise and limit only where a change was judged against them */
    pct_text(isfinite(e->change) ? e->noise : NAN, f[F_NOISE], 160, false);
    pct_text(isfinite(e->change) ? e->limit : NAN, f[F_LIMIT], 160, false);
    clock_text(e, f[F_CLOCK], 160);
}

/* Aligned table (verdict, kernel, configuration, base us, new us, change %, noise %,
 * limit %, the two sides' SM clocks) and a summary line; changes_only leaves out the
 * rows judged same. */
static void compare_print(FILE *f, const compare_result_t *r, bool changes_only)
{
    static const char *const head[F_COUNT] = {
        "verdict", "kernel", "configuration", "base us", "new us", "change %", "noise %", "limit %",
        "MHz base/new",
    };
    int width[F_COUNT];
    char fields[F_COUNT][160];
    for (int c = 0; c < F_COUNT; c++)
        width[c] = (int)strlen(head[c]);
    for (int i = 0; i < r->n; i++) {
        if (changes_only && r->entries[i].verdict == VERDICT_SAME)
            continue;
        entry_fields(&r->entries[i], fields);
        for (int c = 0; c < F_COUNT; c++)
            if ((int)strlen(fields[c]) > width[c])
                width[c] = (int)strlen(fields[c]);
    }
    /* text columns left-aligned, numbers right-aligned */
    for (int c = 0; c < F_COUNT; c++)
        fprintf(f, c <= F_CONFIG ? "%s%-*s" : "%s%*s", c ? "  " : "", width[c],
                head[c]);
    fputc('\n', f);
    for (int i = 0; i < r->n; i++) {
        if (changes_only && r->entries[i].verdict == VERDICT_SAME)
            continue;
        entry_fields(&r->entries[i], fields);
        for (int c = 0; c < F_COUNT; c++)
            fprintf(f, c <= F_CONFIG ? "%s%-*s" : "%s%*s", c ? "  " : "", width[c], fields[c]);
        fputc('\n', f);
    }
    fprintf(f, "%d rows:", r->n);
    for (int v = 0; v < VERDICT_COUNT; v++)
        fprintf(f, "%s %d %s", v ? "," : "", r->count[v], verdict_name((verdict_t)v));
    fprintf(f, " (threshold %.1f%%, limit max(threshold, 2 x combined noise)): %s\n",
            100.0 * r->threshold, compare_exit_status(r) ? "FAIL" : "PASS");
}

int compare_files(const char *base_path, const char *next_path, double threshold,
                  bool changes_only, FILE *out, char *msg, size_t len)
{
    csv_table_t base, next;
    if (csv_read(base_path, &base, msg, len) != 0)
        return 2;
    if (csv_read(next_path, &next, msg, len) != 0) {
        csv_free(&base);
        return 2;
    }
    compare_result_t r;
    int rc = compare_tables(&base, &next, threshold, &r, msg, len);
    csv_free(&base);
    csv_free(&next);
    if (rc != 0)
        return 2;
    compare_print(out, &r, changes_only);
    rc = compare_exit_status(&r);
    compare_free(&r);
    return rc;
}
