/* Select-Attention's per-token attention time over a model's layers (table.h,
 * table --select-total). */
#include <stdlib.h>
#include <string.h>
#include "table.h"

/* One configuration (every column but the kernel and --top-p) and what the file has
 * of it: fused's median, and per p the filter step's, the selected step's (on the
 * cache's K/V and recomputing them) and the fraction kept. */
#define TOTAL_MAX_P 8
typedef struct total_group {
    char key[512];
    result_row_t first;   /* the configuration's columns */
    double fused_us;
    int np;
    double p[TOTAL_MAX_P], filter_us[TOTAL_MAX_P], attend_us[TOTAL_MAX_P], recompute_us[TOTAL_MAX_P], kept[TOTAL_MAX_P];
} total_group_t;

static void group_key(const result_row_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s|%s|%d|%d|%d|%d|%d|%d|%d|%d|%s|%s|%d|%d", r->gpu, r->model, r->layers, r->batch, r->beam,
             r->heads, r->kv_heads, r->head_dim, r->ctx, r->gen, r->dtype, r->cache, r->block_size, r->indirection);
}

/* The row's --top-p (its args), or -1 where it names none. */
static double row_top_p(const result_row_t *r)
{
    const char *at = strstr(r->args, "--top-p ");
    return at ? strtod(at + strlen("--top-p "), NULL) : -1.0;
}

static int p_slot(total_group_t *g, double p)
{
    for (int i = 0; i < g->np; ++i)
        if (g->p[i] == p) return i;
    if (g->np == TOTAL_MAX_P) return -1;
    const int i = g->np++;
    g->p[i] = p;
    g->filter_us[i] = g->attend_us[i] = g->recompute_us[i] = g->kept[i] = -1.0;
    return i;
}

/* Files the ok rows of fused, select-filter, select-attend and select-recompute by
 * configuration. */
static int collect(const csv_table_t *t, total_group_t *g, int *ng, char *msg, size_t len)
{
    *ng = 0;
    for (int row = 0; row < t->nrows; ++row) {
        result_row_t r;
        if (csv_row_parse(t, row, &r) != 0 || strcmp(r.status, "ok") != 0) continue;
        const int fused = strcmp(r.kernel, "fused") == 0, filter = strcmp(r.kernel, "select-filter") == 0,
                  attend = strcmp(r.kernel, "select-attend") == 0,
                  recompute = strcmp(r.kernel, "select-recompute") == 0;
        if (!fused && !filter && !attend && !recompute) continue;
        char key[512];
        group_key(&r, key, sizeof key);
        int i = 0;
        while (i < *ng && strcmp(g[i].key, key) != 0) ++i;
        if (i == *ng) {
            if (*ng == t->nrows) break;
            memset(&g[i], 0, sizeof g[i]);
            snprintf(g[i].key, sizeof g[i].key, "%s", key);
            g[i].first = r;
            g[i].fused_us = -1.0;
            ++*ng;
        }
        if (fused) {
            g[i].fused_us = r.median_us;
            continue;
        }
        const int s = p_slot(&g[i], row_top_p(&r));
        if (s < 0) {
            snprintf(msg, len, "--select-total: more than %d --top-p values of one configuration", TOTAL_MAX_P);
            return -1;
        }
        if (filter) g[i].filter_us[s] = r.median_us;
        else if (recompute) g[i].recompute_us[s] = r.median_us;
        else g[i].attend_us[s] = r.median_us, g[i].kept[s] = r.kept;
    }
    return 0;
}

int select_total_render(FILE *out, const csv_table_t *t, int filter_layer, table_format_t format, char *msg,
                        size_t len)
{
    total_group_t *g = calloc((size_t)(t->nrows > 0 ? t->nrows : 1), sizeof *g);
    int ng = 0, lines = 0;
    if (!g) {
        snprintf(msg, len, "--select-total: out of memory");
        return -1;
    }
    if (collect(t, g, &ng, msg, len) != 0) {
        free(g);
        return -1;
    }
    const char *sep = format == TABLE_CSV ? "," : " | ";
    const char *head[] = {"gpu",       "model", "B",           "W",           "ctx", "top_p", "kept",
                          "full_ms",   "select_ms", "ratio", "recompute_ms", "recompute_ratio"};
    fprintf(out, "%s", format == TABLE_CSV ? "" : "| ");
    for (int c = 0; c < 12; ++c) fprintf(out, "%s%s", c ? sep : "", head[c]);
    fprintf(out, "%s\n", format == TABLE_CSV ? "" : " |");
    if (format == TABLE_MD) fprintf(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < ng; ++i) {
        const result_row_t *r = &g[i].first;
        if (g[i].fused_us <= 0) continue;
        if (r->layers < filter_layer) {
            snprintf(msg, len, "--select-total: %s has %d layers, fewer than --filter-layer %d",
                     r->model[0] ? r->model : "a row without --model", r->layers, filter_layer);
            free(g);
            return -1;
        }
        for (int s = 0; s < g[i].np; ++s) {
            if (g[i].filter_us[s] <= 0 || g[i].attend_us[s] <= 0) continue;
            /* the layers before the filter layer at full attention, the filter step, the
             * layers after it on the kept keys */
            const double full = r->layers * g[i].fused_us / 1e3;
            const double before = (filter_layer - 1) * g[i].fused_us + g[i].filter_us[s];
            const double sel = (before + (r->layers - filter_layer) * g[i].attend_us[s]) / 1e3;
            fprintf(out, "%s%s%s%s%s%d%s%d%s%d%s%g%s%.1f%%%s%.3f%s%.3f%s%.2f", format == TABLE_CSV ? "" : "| ", r->gpu,
                    sep, r->model, sep, r->batch, sep, r->beam, sep, r->ctx, sep, g[i].p[s], sep, 100.0 * g[i].kept[s],
                    sep, full, sep, sel, sep, sel / full);
            /* the later layers recomputing their K/V (select-recompute), where measured */
            if (g[i].recompute_us[s] > 0) {
                const double rec = (before + (r->layers - filter_layer) * g[i].recompute_us[s]) / 1e3;
                fprintf(out, "%s%.3f%s%.2f", sep, rec, sep, rec / full);
            } else {
                fprintf(out, "%s-%s-", sep, sep);
            }
            fprintf(out, "%s\n", format == TABLE_CSV ? "" : " |");
            ++lines;
        }
    }
    free(g);
    if (!lines) {
        snprintf(msg, len, "--select-total: no configuration with ok rows of fused, select-filter and "
                           "select-attend at one --top-p (with --model, for its layers)");
        return -1;
    }
    return 0;
}
