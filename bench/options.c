#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../problem/presets.h"
#include "../problem/ctx_dist.h"
#include "../problem/share_map.h"
#include "../harness/timing.h"
#include "../harness/tp.h"
#include "usage.h"
#include "../kernels/registry.h"

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

enum opt_id {
    OPT_BATCH = 256, OPT_BEAM, OPT_HEADS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_CTX, OPT_GEN,
    OPT_DTYPE, OPT_CACHE, OPT_BLOCK_SIZE, OPT_INDIRECTION, OPT_MULTI_BLOCK, OPT_SPLITS,
    OPT_Q_SCALING, OPT_MODEL, OPT_LAYERS, OPT_TP, OPT_KERNEL, OPT_KERNELS, OPT_OUT, OPT_SUITE,
    OPT_RESUME, OPT_FORCE, OPT_VERIFY, OPT_PROFILE, OPT_HOT, OPT_GRAPH, OPT_ITERS, OPT_WARMUP,
    OPT_MIN_TIME, OPT_SEED, OPT_IN, OPT_ROWS, OPT_COLS, OPT_VALUE, OPT_AGG, OPT_WHERE,
    OPT_PAPER, OPT_FORMAT, OPT_THRESHOLD, OPT_CHANGES, OPT_HELP,
    OPT_NO_VERIFY, OPT_VERIFY_TIME, OPT_MAX_NOISE, OPT_MAX_TIME, OPT_DRY_RUN, OPT_SHARD,
    OPT_DEVICES, OPT_KV_DTYPE, OPT_KV_SCALE, OPT_VS_PEERS, OPT_RATIO, OPT_STEP, OPT_ROPE, OPT_ROPE_BASE,
    OPT_ROPE_SCALE, OPT_CTX_DIST, OPT_Q_LEN, OPT_SCORES, OPT_SINK_LOGIT, OPT_HEAVY_LOGIT, OPT_RECENT_LOGIT, OPT_TOP_P, OPT_SELECT_TOTAL, OPT_FILTER_LAYER,
    OPT_SHARE_FRACTION, OPT_SHARE_MAP, OPT_SHARE_LAYER,
};

/* Where an option may appear: one bit per command, and suite lines. */
#define IN(cmd) (1u << (cmd))
#define SUITE_LINE ((command_t)(CMD_MERGE + 1))   /* parse mode of a suite line */
#define IN_SUITE IN(SUITE_LINE)
#define PROBLEM (IN(CMD_RUN) | IN(CMD_SWEEP) | IN_SUITE)

typedef struct opt_def {
    const char *name;
    int has_arg;
    int id;
    char short_name;    /* 0: long form only */
    unsigned where;
    unsigned field;     /* GRID_FIELD_* for problem options */
} opt_def_t;

static const opt_def_t opt_defs[] = {
    {"batch", required_argument, OPT_BATCH, 'b', PROBLEM, GRID_FIELD_BATCH},
    {"beam", required_argument, OPT_BEAM, 'w', PROBLEM, GRID_FIELD_BEAM},
    {"heads", required_argument, OPT_HEADS, 'H', PROBLEM, GRID_FIELD_HEADS},
    {"kv-heads", required_argument, OPT_KV_HEADS, 'g', PROBLEM, GRID_FIELD_KV_HEADS},
    {"head-dim", required_argument, OPT_HEAD_DIM, 'd', PROBLEM, GRID_FIELD_HEAD_DIM},
    {"ctx", required_argument, OPT_CTX, 'c', PROBLEM, GRID_FIELD_CTX},
    {"gen", required_argument, OPT_GEN, 0, PROBLEM, GRID_FIELD_GEN},
    /* ragged batches: each request's own context length (docs/RAGGED.md) */
    {"ctx-dist", required_argument, OPT_CTX_DIST, 0, PROBLEM, GRID_FIELD_CTX_DIST},
    /* speculative decoding: query tokens per stream (docs/Q-LEN.md) */
    {"q-len", required_argument, OPT_Q_LEN, 0, PROBLEM, GRID_FIELD_Q_LEN},
    {"dtype", required_argument, OPT_DTYPE, 't', PROBLEM, GRID_FIELD_DTYPE},
    {"kv-dtype", required_argument, OPT_KV_DTYPE, 0, PROBLEM, GRID_FIELD_KV_DTYPE},
    {"kv-scale", required_argument, OPT_KV_SCALE, 0, PROBLEM, GRID_FIELD_KV_SCALE},
    {"cache", required_argument, OPT_CACHE, 0, PROBLEM, GRID_FIELD_CACHE},
    {"block-size", required_argument, OPT_BLOCK_SIZE, 'S', PROBLEM, GRID_FIELD_BLOCK_SIZE},
    {"indirection", no_argument, OPT_INDIRECTION, 0, PROBLEM, GRID_FIELD_INDIRECTION},
    {"multi-block", required_argument, OPT_MULTI_BLOCK, 0, PROBLEM, GRID_FIELD_MULTI_BLOCK},
    {"splits", required_argument, OPT_SPLITS, 0, PROBLEM, GRID_FIELD_SPLITS},
    {"q-scaling", required_argument, OPT_Q_SCALING, 0, PROBLEM, GRID_FIELD_Q_SCALING},
    {"model", required_argument, OPT_MODEL, 'm', PROBLEM, GRID_FIELD_MODEL},
    /* table: the layer count of ms_per_token; elsewhere the memory check's */
    {"layers", required_argument, OPT_LAYERS, 0, PROBLEM | IN(CMD_TABLE), GRID_FIELD_LAYERS},
    /* tensor parallelism: the heads split over N GPUs (docs/SHARDING.md) */
    {"tp", required_argument, OPT_TP, 0, PROBLEM, GRID_FIELD_TP},
    /* the whole generation step: RoPE, quantise, append, attend (docs/APPEND.md) */
    {"step", required_argument, OPT_STEP, 0, PROBLEM, GRID_FIELD_STEP},
    {"rope", required_argument, OPT_ROPE, 0, PROBLEM, GRID_FIELD_ROPE},
    {"rope-base", required_argument, OPT_ROPE_BASE, 0, PROBLEM, GRID_FIELD_ROPE_BASE},
    {"rope-scale", required_argument, OPT_ROPE_SCALE, 0, PROBLEM, GRID_FIELD_ROPE_SCALE},
    {"scores", required_argument, OPT_SCORES, 0, PROBLEM, GRID_FIELD_SCORES},
    {"sink-logit", required_argument, OPT_SINK_LOGIT, 0, PROBLEM, GRID_FIELD_SINK_LOGIT},
    {"heavy-logit", required_argument, OPT_HEAVY_LOGIT, 0, PROBLEM, GRID_FIELD_HEAVY_LOGIT},
    {"recent-logit", required_argument, OPT_RECENT_LOGIT, 0, PROBLEM, GRID_FIELD_RECENT_LOGIT},
    {"share-fraction", required_argument, OPT_SHARE_FRACTION, 0, PROBLEM, GRID_FIELD_SHARE_FRACTION},
    {"share-map", required_argument, OPT_SHARE_MAP, 0, PROBLEM, GRID_FIELD_SHARE_MAP},
    {"top-p", required_argument, OPT_TOP_P, 0, PROBLEM, GRID_FIELD_TOP_P},
    {"share-layer", required_argument, OPT_SHARE_LAYER, 0, PROBLEM, GRID_FIELD_SHARE_MAP},
    /* -k is --kernel for run and --kernels elsewhere (see short_to_id) */
    {"kernel", required_argument, OPT_KERNEL, 0, IN(CMD_RUN), 0},
    {"kernels", required_argument, OPT_KERNELS, 0, IN(CMD_SWEEP) | IN(CMD_VERIFY) | IN_SUITE, 0},
    {"out", required_argument, OPT_OUT, 'o', IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"suite", required_argument, OPT_SUITE, 's', IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"resume", no_argument, OPT_RESUME, 0, IN(CMD_SWEEP), 0},
    {"force", no_argument, OPT_FORCE, 0, IN(CMD_RUN) | IN(CMD_SWEEP) | IN(CMD_MERGE), 0},
    {"verify", no_argument, OPT_VERIFY, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"no-verify", no_argument, OPT_NO_VERIFY, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"verify-time", required_argument, OPT_VERIFY_TIME, 0, IN(CMD_RUN) | IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"profile", no_argument, OPT_PROFILE, 0, IN(CMD_RUN), 0},
    {"hot", no_argument, OPT_HOT, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"graph", no_argument, OPT_GRAPH, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"iters", required_argument, OPT_ITERS, 'n', IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"warmup", required_argument, OPT_WARMUP, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"min-time", required_argument, OPT_MIN_TIME, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"max-noise", required_argument, OPT_MAX_NOISE, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"max-time", required_argument, OPT_MAX_TIME, 0, IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"seed", required_argument, OPT_SEED, 0, IN(CMD_RUN) | IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"dry-run", no_argument, OPT_DRY_RUN, 0, IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"shard", required_argument, OPT_SHARD, 0, IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"devices", required_argument, OPT_DEVICES, 0, IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"in", required_argument, OPT_IN, 0, IN(CMD_TABLE), 0},
    {"rows", required_argument, OPT_ROWS, 0, IN(CMD_TABLE), 0},
    {"cols", required_argument, OPT_COLS, 0, IN(CMD_TABLE), 0},
    {"value", required_argument, OPT_VALUE, 0, IN(CMD_TABLE), 0},
    {"agg", required_argument, OPT_AGG, 0, IN(CMD_TABLE), 0},
    {"where", required_argument, OPT_WHERE, 0, IN(CMD_TABLE), 0},
    {"paper", required_argument, OPT_PAPER, 0, IN(CMD_TABLE), 0},
    {"select-total", no_argument, OPT_SELECT_TOTAL, 0, IN(CMD_TABLE), 0},
    {"filter-layer", required_argument, OPT_FILTER_LAYER, 0, IN(CMD_TABLE), 0},
    {"format", required_argument, OPT_FORMAT, 0, IN(CMD_TABLE), 0},
    {"vs-peers", no_argument, OPT_VS_PEERS, 0, IN(CMD_TABLE), 0},
    {"ratio", required_argument, OPT_RATIO, 0, IN(CMD_TABLE), 0},
    {"threshold", required_argument, OPT_THRESHOLD, 0, IN(CMD_COMPARE), 0},
    {"changes", no_argument, OPT_CHANGES, 0, IN(CMD_COMPARE), 0},
    {"help", no_argument, OPT_HELP, 'h', IN(CMD_LIST) | IN(CMD_PEAK) | IN(CMD_RUN) | IN(CMD_SWEEP) |
                                             IN(CMD_VERIFY) | IN(CMD_TABLE) | IN(CMD_COMPARE) |
                                             IN(CMD_MERGE), 0},
};
#define N_OPTS ((int)(sizeof opt_defs / sizeof opt_defs[0]))

static const char *const command_names[] = {"list", "peak", "run", "sweep", "verify", "table",
                                            "compare", "merge"};

const char *command_name(command_t cmd)
{
    return (unsigned)cmd < SUITE_LINE ? command_names[cmd] : "suite";
}

static const opt_def_t *opt_by_id(int id)
{
    for (int i = 0; i < N_OPTS; ++i)
        if (opt_defs[i].id == id) return &opt_defs[i];
    return NULL;
}

static int short_to_id(int c, command_t mode)
{
    if (c == 'k') return mode == CMD_RUN ? OPT_KERNEL : OPT_KERNELS;
    for (int i = 0; i < N_OPTS; ++i)
        if (opt_defs[i].short_name == c) return opt_defs[i].id;
    return c;
}

/* ":b:w:..." (leading ':' so that a missing value is told apart from an unknown option). */
static void build_getopt_tables(char *shorts, struct option *longs)
{
    char *s = shorts;
    *s++ = ':';
    *s++ = 'k', *s++ = ':';
    for (int i = 0; i < N_OPTS; ++i) {
        longs[i] = (struct option){opt_defs[i].name, opt_defs[i].has_arg, NULL, opt_defs[i].id};
        if (opt_defs[i].short_name) {
            *s++ = opt_defs[i].short_name;
            if (opt_defs[i].has_arg) *s++ = ':';
        }
    }
    *s = '\0';
    longs[N_OPTS] = (struct option){NULL, 0, NULL, 0};
}

/* ---- values ---------------------------------------------------------------- */

/* A whole number from min to max, in 64-bit arithmetic (no wrap past INT_MAX). */
static int parse_int(const char *opt, const char *s, int min, int max, int *out, char *msg,
                     size_t len)
{
    long long v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') FAIL("%s: '%s' is not a whole number", opt, s);
    for (; *p >= '0' && *p <= '9'; ++p)
        if ((v = v * 10 + (*p - '0')) > max) break;
    if (*p >= '0' && *p <= '9') FAIL("%s: '%s' is above the limit of %d", opt, s, max);
    if (*p) FAIL("%s: '%s' is not a whole number", opt, s);
    if (v > max) FAIL("%s: '%s' is above the limit of %d", opt, s, max);
    if (v < min) FAIL("%s must be at least %d (got %lld)", opt, min, v);
    *out = (int)v;
    return 0;
}

static int parse_nonnegative_double(const char *opt, const char *s, double *out, char *msg, size_t len)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0)
        FAIL("%s: '%s' is not a number >= 0", opt, s);
    *out = v;
    return 0;
}

/* One of the names choices[0..n), its index into *out. */
static int parse_choice(const char *opt, const char *s, const char *const *choices, int n,
                        int *out, char *msg, size_t len)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(s, choices[i])) {
            *out = i;
            return 0;
        }
    char all[128] = "";
    for (int i = 0; i < n; ++i)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? (i + 1 < n ? ", " : " or ") : "",
                 choices[i]);
    FAIL("%s: '%s' is not %s", opt, s, all);
}

static int parse_positive_double(const char *opt, const char *s, double *out, char *msg, size_t len)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) FAIL("%s: '%s' is not a number", opt, s);
    if (!(v > 0)) FAIL("%s must be positive (got %s)", opt, s);
    *out = v;
    return 0;
}

static int parse_u64(const char *opt, const char *s, uint64_t *out, char *msg, size_t len)
{
    char *end;
    if (*s < '0' || *s > '9') FAIL("%s: '%s' is not a whole number", opt, s);
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end) FAIL("%s: '%s' is not a whole number", opt, s);
    if (errno == ERANGE) FAIL("%s: '%s' is too large", opt, s);
    *out = v;
    return 0;
}

/* --shard I/N: the I-th of N slices, 1 <= I <= N <= SHARDS_MAX (1-based, as a job array
 * task's $((SLURM_ARRAY_TASK_ID + 1))). */
static int parse_shard(const char *s, int *shard, int *shards, char *msg, size_t len)
{
    const char *slash = strchr(s, '/');
    char i_text[16], n_text[16];
    if (!slash || slash == s || !slash[1] || (size_t)(slash - s) >= sizeof i_text ||
        strlen(slash + 1) >= sizeof n_text)
        FAIL("--shard: '%s' is not I/N (the I-th of N slices, 1 <= I <= N)", s);
    snprintf(i_text, sizeof i_text, "%.*s", (int)(slash - s), s);
    snprintf(n_text, sizeof n_text, "%s", slash + 1);
    int i, n;
    if (parse_int("--shard", n_text, 1, SHARDS_MAX, &n, msg, len) ||
        parse_int("--shard", i_text, 1, SHARDS_MAX, &i, msg, len))
        FAIL("--shard: '%s' is not I/N with 1 <= I <= N <= %d (slices count from 1)", s, SHARDS_MAX);
    if (i > n) FAIL("--shard: '%s': I runs from 1 to N = %d (slices count from 1)", s, n);
    *shard = i;
    *shards = n;
    return 0;
}

/* --devices all | 0,1,..: each a device index from 0, at most once. */
static int parse_devices(const char *s, options_t *o, char *msg, size_t len)
{
    o->n_devices = 0;
    o->all_devices = !strcmp(s, "all");
    if (o->all_devices) return 0;
    if (!*s) FAIL("--devices: empty list (all, or indices such as 0,1)");
    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        char one[16];
        if (n == 0 || n >= sizeof one) FAIL("--devices: '%s' is not all or a list of device indices", s);
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        int d;
        if (parse_int("--devices", one, 0, DEVICES_MAX - 1, &d, msg, len)) return -1;
        for (int j = 0; j < o->n_devices; ++j)
            if (o->devices[j] == d) FAIL("--devices: device %d is listed twice", d);
        if (o->n_devices == DEVICES_MAX) FAIL("--devices: more than %d devices", DEVICES_MAX);
        o->devices[o->n_devices++] = d;
        if (!p[n]) break;
        p += n + 1;
    }
    return 0;
}

#define NAMES_TEXT 512

/* "a,b,c" into names pointing into buf. */
static int split_names(const char *opt, const char *s, char *buf, const char **names, int max,
                       int *n, char *msg, size_t len)
{
    *n = 0;
    if (!*s) FAIL("%s: empty list", opt);
    if (strlen(s) >= NAMES_TEXT) FAIL("%s: list too long", opt);
    strcpy(buf, s);
    for (char *p = buf;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p) FAIL("%s: empty name in '%s'", opt, s);
        if (*n >= max) FAIL("%s: more than %d names", opt, max);
        names[(*n)++] = p;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

/* A list of enum names (dtype, cache, multi-block), each at most once; out holds LIST_MAX. */
static int parse_enum_list(const char *opt, const char *s, int (*parse)(const char *, int *),
                           const char *choices, int *out, int max, int *n, char *msg, size_t len)
{
    char buf[NAMES_TEXT];
    const char *names[LIST_MAX];
    if (split_names(opt, s, buf, names, LIST_MAX, n, msg, len)) return -1;
    for (int i = 0; i < *n; ++i) {
        if (parse(names[i], &out[i])) FAIL("%s: unknown value '%s' (one of %s)", opt, names[i], choices);
        for (int j = 0; j < i; ++j)
            if (out[j] == out[i]) FAIL("%s: '%s' is listed twice", opt, names[i]);
    }
    if (*n > max) FAIL("%s: more than %d values", opt, max);
    return 0;
}

static int dtype_parse_int(const char *s, int *out)
{
    dtype_t v;
    if (dtype_parse(s, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int kv_dtype_parse_int(const char *s, int *out)
{
    dtype_t v;
    if (kv_dtype_parse(s, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int kv_scale_parse_int(const char *s, int *out)
{
    kv_scale_t v;
    if (kv_scale_parse(s, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int cache_parse_int(const char *s, int *out)
{
    cache_kind_t v;
    if (cache_parse(s, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int multi_block_parse_int(const char *s, int *out)
{
    multi_block_t v;
    if (multi_block_parse(s, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int parse_kernels(const char *opt, const char *s, options_t *o, char *msg, size_t len)
{
    char buf[NAMES_TEXT];
    const char *names[KERNELS_MAX];
    int n;
    if (split_names(opt, s, buf, names, KERNELS_MAX, &n, msg, len)) return -1;
    int m = 0;
    for (int i = 0; i < n; ++i) {
        /* "peers": every peer kernel, in the registry's order */
        int all_peers = strcmp(names[i], "peers") == 0;
        const attn_kernel_t *one = all_peers ? NULL : attn_kernel_find(names[i]);
        if (!all_peers && !one) FAIL("%s: unknown kernel '%s' (attnbench list shows them)", opt, names[i]);
        for (int r = 0; attn_kernels[r]; ++r) {
            const attn_kernel_t *k = attn_kernels[r];
            if (all_peers ? !k->peer : k != one) continue;
            for (int j = 0; j < m; ++j)
                if (o->kernels[j] == k->name) FAIL("%s: '%s' is listed twice", opt, k->name);
            if (m == KERNELS_MAX) FAIL("%s: more than %d kernels", opt, KERNELS_MAX);
            o->kernels[m++] = k->name;
        }
    }
    o->n_kernels = m;
    return 0;
}

/* ---- one command line or suite line ------------------------------------------ */

static int_list_t *grid_list(grid_t *g, int id)
{
    switch (id) {
    case OPT_BATCH: return &g->batch;
    case OPT_BEAM: return &g->beam;
    case OPT_HEADS: return &g->heads;
    case OPT_KV_HEADS: return &g->kv_heads;
    case OPT_HEAD_DIM: return &g->head_dim;
    case OPT_CTX: return &g->ctx;
    case OPT_GEN: return &g->gen;
    case OPT_BLOCK_SIZE: return &g->block_size;
    case OPT_SPLITS: return &g->splits;
    case OPT_Q_LEN: return &g->q_len;
    default: return NULL;
    }
}

/* The options of table and compare. */
static int apply_table_option(const opt_def_t *d, const char *arg, options_t *o, char *msg,
                              size_t len)
{
    static const char *const aggs[] = {"min", "max", "last"};
    static const char *const formats[] = {"md", "csv"};
    static const char *const papers[] = {"6", "7", "8"};
    table_opts_t *t = &o->table;
    int i;
    switch (d->id) {
    case OPT_IN:
        if (!*arg) FAIL("--in needs a file name");
        if (o->n_inputs == TABLE_INPUTS_MAX) FAIL("--in: at most %d files", TABLE_INPUTS_MAX);
        o->inputs[o->n_inputs++] = arg;
        return 0;
    case OPT_ROWS: t->rows = arg; return 0;
    case OPT_COLS: t->cols = arg; return 0;
    case OPT_VALUE: t->value = arg; return 0;
    case OPT_AGG:
        if (parse_choice("--agg", arg, aggs, 3, &i, msg, len)) return -1;
        t->agg = (table_agg_t)(TABLE_AGG_MIN + i);
        return 0;
    case OPT_FORMAT:
        if (parse_choice("--format", arg, formats, 2, &i, msg, len)) return -1;
        t->format = i ? TABLE_CSV : TABLE_MD;
        return 0;
    case OPT_PAPER:
        if (parse_choice("--paper", arg, papers, 3, &i, msg, len)) return -1;
        t->paper = 6 + i;
        return 0;
    case OPT_SELECT_TOTAL: t->select_total = 1; return 0;
    case OPT_FILTER_LAYER: return parse_int("--filter-layer", arg, 1, INT_MAX, &t->filter_layer, msg, len);
    case OPT_WHERE:
        if (t->nwhere == TABLE_MAX_WHERE) FAIL("--where: at most %d filters", TABLE_MAX_WHERE);
        if (table_where_parse(arg, &t->where[t->nwhere], msg, len)) return -1;
        t->nwhere++;
        return 0;
    case OPT_VS_PEERS: {
        /* the peers are the registry's kernels with a package: report/ does not see it */
        static const char *peers[KERNELS_MAX];
        int n = 0;
        for (int r = 0; attn_kernels[r] && n < KERNELS_MAX; ++r)
            if (attn_kernels[r]->peer) peers[n++] = attn_kernels[r]->name;
        t->vs_peers = 1;
        t->peers = peers;
        t->npeers = n;
        return 0;
    }
    case OPT_RATIO:
        if (!strchr(arg, '/')) FAIL("--ratio: give two column labels as A/B, e.g. append/attend");
        t->ratio = arg;
        return 0;
    case OPT_THRESHOLD: return parse_nonnegative_double("--threshold", arg, &o->threshold, msg, len);
    case OPT_CHANGES: o->changes_only = true; return 0;
    default: FAIL("--%s is not handled", d->name);
    }
}

/* The distributions of --ctx-dist, each parsed (its file read) once and kept for the
 * process: grid points point at them through every suite line and row. */
#ifndef ATTNBENCH_SUITE_DIR
#define ATTNBENCH_SUITE_DIR "bench/suites"
#endif
#define CTX_DISTS_MAX 64
static ctx_dist_t ctx_dists[CTX_DISTS_MAX];
static int n_ctx_dists;

/* A suite line's relative file:PATH is a file beside the suites (bench/suites/PATH),
 * whatever the working directory; so is a bare file:NAME on the command line where the
 * working directory has no file of that name and the suites' directory has. The rows
 * record the spec as given, so that their args rerun from any checkout. */
static int ctx_dist_option(const char *arg, command_t mode, const ctx_dist_t **out, char *msg, size_t len)
{
    for (int i = 0; i < n_ctx_dists; ++i)
        if (strcmp(ctx_dists[i].spec, arg) == 0) {
            *out = &ctx_dists[i];
            return 0;
        }
    if (n_ctx_dists == CTX_DISTS_MAX) FAIL("--ctx-dist: more than %d distributions", CTX_DISTS_MAX);
    char beside[CTX_DIST_SPEC_LEN];
    const char *read = arg;
    const int relative = strncmp(arg, "file:", 5) == 0 && arg[5] && arg[5] != '/';
    if (relative && (mode == SUITE_LINE || (!strchr(arg + 5, '/') && access(arg + 5, F_OK) != 0))) {
        if (snprintf(beside, sizeof beside, "file:%s/%s", ATTNBENCH_SUITE_DIR, arg + 5) >= (int)sizeof beside)
            FAIL("--ctx-dist %s: the path beside the suites is too long", arg);
        if (mode == SUITE_LINE || access(beside + 5, F_OK) == 0) read = beside;
    }
    ctx_dist_t *d = &ctx_dists[n_ctx_dists];
    if (ctx_dist_parse(read, d, msg, len) != 0) return -1;
    snprintf(d->spec, sizeof d->spec, "%s", arg);
    *out = d;
    ++n_ctx_dists;
    return 0;
}

static int apply_option(const opt_def_t *d, const char *arg, command_t mode, options_t *o,
                        char *msg, size_t len)
{
    char opt[32];
    snprintf(opt, sizeof opt, "--%s", d->name);
    grid_t *g = &o->grid;
    int_list_t *list = grid_list(g, d->id);
    if (list) return int_list_parse(opt, arg, list, msg, len);
    int tmp[LIST_MAX];
    switch (d->id) {
    case OPT_DTYPE:
        if (parse_enum_list(opt, arg, dtype_parse_int, "fp16, bf16, fp32", tmp, 3, &g->n_dtype, msg, len))
            return -1;
        for (int i = 0; i < g->n_dtype; ++i) g->dtype[i] = (dtype_t)tmp[i];
        return 0;
    case OPT_KV_DTYPE:
        if (parse_enum_list(opt, arg, kv_dtype_parse_int, "fp16, bf16, fp32, fp8, int8", tmp, 5, &g->n_kv_dtype,
                            msg, len))
            return -1;
        for (int i = 0; i < g->n_kv_dtype; ++i) g->kv_dtype[i] = (dtype_t)tmp[i];
        return 0;
    case OPT_KV_SCALE:
        if (parse_enum_list(opt, arg, kv_scale_parse_int, "tensor, head", tmp, 2, &g->n_kv_scale, msg, len))
            return -1;
        for (int i = 0; i < g->n_kv_scale; ++i) g->kv_scale[i] = (kv_scale_t)tmp[i];
        return 0;
    case OPT_CACHE:
        if (parse_enum_list(opt, arg, cache_parse_int, "contiguous, paged", tmp, 2, &g->n_cache, msg, len))
            return -1;
        for (int i = 0; i < g->n_cache; ++i) g->cache[i] = (cache_kind_t)tmp[i];
        return 0;
    case OPT_MULTI_BLOCK:
        if (parse_enum_list(opt, arg, multi_block_parse_int, "off, on, auto", tmp, 3,
                            &g->n_multi_block, msg, len))
            return -1;
        for (int i = 0; i < g->n_multi_block; ++i) g->multi_block[i] = (multi_block_t)tmp[i];
        return 0;
    case OPT_INDIRECTION: g->indirection = true; return 0;
    case OPT_Q_SCALING: return parse_positive_double(opt, arg, &g->q_scaling, msg, len);
    case OPT_SCORES: {
        static const char *const names[] = {"flat", "peaked"};
        int v;
        if (parse_choice(opt, arg, names, 2, &v, msg, len)) return -1;
        g->scores = (scores_t)v;
        return 0;
    }
    case OPT_SINK_LOGIT: return parse_nonnegative_double(opt, arg, &g->sink_logit, msg, len);
    case OPT_HEAVY_LOGIT: return parse_nonnegative_double(opt, arg, &g->heavy_logit, msg, len);
    case OPT_RECENT_LOGIT: return parse_nonnegative_double(opt, arg, &g->recent_logit, msg, len);
    case OPT_SHARE_FRACTION:
        if (parse_nonnegative_double(opt, arg, &g->share_fraction, msg, len)) return -1;
        if (!(g->share_fraction < 1.0)) FAIL("--share-fraction %s must be below 1 (some head must be essential)", arg);
        return 0;
    case OPT_TOP_P:
        if (parse_nonnegative_double(opt, arg, &g->top_p, msg, len)) return -1;
        if (!(g->top_p > 0.0 && g->top_p <= 1.0)) FAIL("--top-p %s must be above 0 and at most 1", arg);
        return 0;
    case OPT_SHARE_MAP:
        if (!*arg) FAIL("--share-map needs a file name");
        o->share_map_path = arg;
        return 0;
    case OPT_SHARE_LAYER: return parse_int(opt, arg, 0, INT_MAX, &o->share_layer, msg, len);
    case OPT_MODEL:
        if (!preset_find(arg)) {
            char known[256] = "";
            for (int i = 0; i < model_preset_count; ++i)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                         model_presets[i].name);
            FAIL("--model: unknown model '%s' (one of %s)", arg, known);
        }
        g->model = preset_find(arg)->name; /* static: outlives argv and suite text */
        return 0;
    case OPT_LAYERS:
        return parse_int(opt, arg, 1, INT_MAX, mode == CMD_TABLE ? &o->table.layers : &g->layers,
                         msg, len);
    case OPT_TP: return parse_int(opt, arg, 1, TP_MAX, &g->tp, msg, len);
    case OPT_STEP:
        if (step_parse(arg, &g->step)) FAIL("--step: '%s' is not attend or append", arg);
        return 0;
    case OPT_ROPE:
        if (rope_parse(arg, &g->rope)) FAIL("--rope: '%s' is not neox or gptj", arg);
        return 0;
    case OPT_ROPE_BASE:
        if (parse_positive_double(opt, arg, &g->rope_base, msg, len)) return -1;
        if (!(g->rope_base > 1.0)) FAIL("--rope-base must be above 1 (got %s)", arg);
        return 0;
    case OPT_ROPE_SCALE: return parse_positive_double(opt, arg, &g->rope_scale, msg, len);
    case OPT_CTX_DIST: return ctx_dist_option(arg, mode, &g->ctx_dist, msg, len);
    case OPT_KERNEL:
        if (!attn_kernel_find(arg)) FAIL("--kernel: unknown kernel '%s' (attnbench list shows them)", arg);
        o->kernels[0] = attn_kernel_find(arg)->name;
        o->n_kernels = 1;
        return 0;
    case OPT_KERNELS: return parse_kernels(opt, arg, o, msg, len);
    case OPT_OUT:
        if (!*arg) FAIL("--out needs a file name");
        o->out = arg;
        return 0;
    case OPT_SUITE:
        if (!*arg) FAIL("--suite needs a name or a path");
        if (mode == CMD_VERIFY && strcmp(arg, "quick") && strcmp(arg, "full") && strcmp(arg, "kvq") &&
            strcmp(arg, "peers") && strcmp(arg, "share") && !strchr(arg, '/'))
            FAIL("--suite for verify is quick, full, kvq, peers, share or a path (got '%s')", arg);
        o->suite = arg;
        return 0;
    case OPT_RESUME: o->resume = true; return 0;
    case OPT_FORCE: o->force = true; return 0;
    case OPT_VERIFY: o->verify = true; return 0;
    case OPT_NO_VERIFY: o->verify = false; return 0;
    case OPT_VERIFY_TIME: return parse_positive_double(opt, arg, &o->verify_time_s, msg, len);
    case OPT_PROFILE: o->profile = true; return 0;
    case OPT_HOT: o->hot = true; return 0;
    case OPT_GRAPH: o->graph = true; return 0;
    case OPT_ITERS: return parse_int(opt, arg, 0, TIMING_ITERS_LIMIT, &o->iters, msg, len);
    case OPT_WARMUP: return parse_int(opt, arg, 0, TIMING_ITERS_LIMIT, &o->warmup, msg, len);
    case OPT_MIN_TIME: return parse_positive_double(opt, arg, &o->min_time_s, msg, len);
    case OPT_MAX_NOISE: return parse_positive_double(opt, arg, &o->max_noise_pct, msg, len);
    case OPT_MAX_TIME: return parse_positive_double(opt, arg, &o->max_time_s, msg, len);
    case OPT_SEED: return parse_u64(opt, arg, &o->seed, msg, len);
    case OPT_DRY_RUN: o->dry_run = true; return 0;
    case OPT_SHARD: return parse_shard(arg, &o->shard, &o->shards, msg, len);
    case OPT_DEVICES: return parse_devices(arg, o, msg, len);
    default: return apply_table_option(d, arg, o, msg, len);
    }
}

/* Runs getopt_long over argv into o (already holding the starting values) and records
 * in *set the GRID_FIELD_* bits of the problem options given. 1 on --help. */
static int parse_line(int argc, char **argv, command_t mode, options_t *o, unsigned *set,
                      char *msg, size_t len)
{
    char shorts[2 * N_OPTS + 8];
    struct option longs[N_OPTS + 1];
    build_getopt_tables(shorts, longs);
    *set = 0;
    opterr = 0;
    optind = 0;   /* glibc: a full restart, as every line is a new argv */
    int c;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (c == '?') {
            if (optopt >= 256) FAIL("--%s takes no value", opt_by_id(optopt)->name);
            if (optopt) FAIL("unknown option '-%c'", optopt);
            FAIL("unknown or ambiguous option '%s'", argv[optind - 1]);
        }
        if (c == ':') {
            const opt_def_t *d = opt_by_id(short_to_id(optopt, mode));
            FAIL("--%s needs a value", d ? d->name : "?");
        }
        const opt_def_t *d = opt_by_id(c < 256 ? short_to_id(c, mode) : c);
        if (!d) FAIL("unknown option '%s'", argv[optind - 1]);
        if (!(d->where & (1u << mode))) {
            if (mode == SUITE_LINE) FAIL("--%s is not allowed in a suite line", d->name);
            FAIL("attnbench %s does not take --%s (see attnbench %s --help)", command_name(mode),
                 d->name, command_name(mode));
        }
        if (d->id == OPT_HELP) {
            usage_print(stdout, command_name(mode));
            return 1;
        }
        if (apply_option(d, optarg, mode, o, msg, len)) return -1;
        if (mode != CMD_TABLE) *set |= d->field;
    }
    if (mode == CMD_COMPARE) {
        if (argc - optind != 2)
            FAIL("needs exactly two files, BASE.csv and NEW.csv (got %d; see --help)", argc - optind);
        o->files[0] = argv[optind];
        o->files[1] = argv[optind + 1];
        return 0;
    }
    if (mode == CMD_MERGE) {
        if (argc - optind < 2)
            FAIL("needs OUT.csv and at least one input CSV (got %d file%s; see --help)", argc - optind,
                 argc - optind == 1 ? "" : "s");
        for (int i = optind; i < argc; ++i)
            if (!*argv[i]) FAIL("an empty file name (argument %d)", i - optind + 1);
        o->merge_files = argv + optind;
        o->n_merge_files = argc - optind;
        return 0;
    }
    if (optind < argc)
        FAIL("unexpected argument '%s'%s", argv[optind], mode == CMD_TABLE ? " (input goes with --in)" : "");
    return 0;
}

/* The maps --share-map read, each (file, layer) once; they live as long as the process. */
#define SHARE_MAPS_MAX 8
static share_map_t share_maps[SHARE_MAPS_MAX];
static int n_share_maps;

/* --share-map FILE and --share-layer N, given in either order, into the grid's map. */
static int resolve_share_map(options_t *o, char *msg, size_t len)
{
    if (!o->share_map_path) {
        if (o->share_layer) FAIL("--share-layer needs --share-map FILE");
        return 0;
    }
    for (int i = 0; i < n_share_maps; ++i)
        if (!strcmp(share_maps[i].path, o->share_map_path) && share_maps[i].layer == o->share_layer) {
            o->grid.share_map = &share_maps[i];
            return 0;
        }
    if (n_share_maps == SHARE_MAPS_MAX) FAIL("--share-map: at most %d different maps and layers", SHARE_MAPS_MAX);
    if (share_map_load(o->share_map_path, o->share_layer, &share_maps[n_share_maps], msg, len)) return -1;
    o->grid.share_map = &share_maps[n_share_maps++];
    return 0;
}

/* --model fills heads, kv_heads, head_dim and layers that were not given explicitly;
 * those fields then count as set, since the user asked for them through the model. */
static void apply_model(grid_t *g, unsigned *set)
{
    const model_preset_t *m = (*set & GRID_FIELD_MODEL) ? preset_find(g->model) : NULL;
    if (!m) return;
    if (!(*set & GRID_FIELD_HEADS)) g->heads = (int_list_t){1, {m->heads}};
    if (!(*set & GRID_FIELD_KV_HEADS)) g->kv_heads = (int_list_t){1, {m->kv_heads}};
    if (!(*set & GRID_FIELD_HEAD_DIM)) g->head_dim = (int_list_t){1, {m->head_dim}};
    if (!(*set & GRID_FIELD_LAYERS)) g->layers = m->layers;
    *set |= GRID_FIELD_HEADS | GRID_FIELD_KV_HEADS | GRID_FIELD_HEAD_DIM | GRID_FIELD_LAYERS;
}

/* The RoPE options describe --step append's rotation: on a line without it they would
 * be silently ignored. */
static int check_rope(const grid_t *g, unsigned set, char *msg, size_t len)
{
    if ((set & GRID_FIELDS_ROPE) && g->step != STEP_APPEND)
        FAIL("--rope, --rope-base and --rope-scale need --step append");
    return 0;
}

static void options_init(options_t *o)
{
    memset(o, 0, sizeof *o);
    grid_default(&o->grid);
    o->warmup = 3;
    o->min_time_s = 0.1;
    table_opts_init(&o->table);
    o->threshold = 0.05;
    o->verify = true;
    o->verify_time_s = 1.0;
    o->max_noise_pct = 0.5;
    o->max_time_s = 1.0;
}

/* run measures one configuration: each problem option holds one value. */
static int check_single(const options_t *o, char *msg, size_t len)
{
    const grid_t *g = &o->grid;
    const struct { unsigned field; int n; } axes[] = {
        {GRID_FIELD_BATCH, g->batch.n}, {GRID_FIELD_BEAM, g->beam.n},
        {GRID_FIELD_HEADS, g->heads.n}, {GRID_FIELD_KV_HEADS, g->kv_heads.n},
        {GRID_FIELD_HEAD_DIM, g->head_dim.n}, {GRID_FIELD_CTX, g->ctx.n},
        {GRID_FIELD_GEN, g->gen.n}, {GRID_FIELD_DTYPE, g->n_dtype},
        {GRID_FIELD_KV_DTYPE, g->n_kv_dtype ? g->n_kv_dtype : 1}, {GRID_FIELD_KV_SCALE, g->n_kv_scale},
        {GRID_FIELD_CACHE, g->n_cache}, {GRID_FIELD_BLOCK_SIZE, g->block_size.n},
        {GRID_FIELD_MULTI_BLOCK, g->n_multi_block}, {GRID_FIELD_SPLITS, g->splits.n},
        {GRID_FIELD_Q_LEN, g->q_len.n},
    };
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; ++i) {
        if (axes[i].n == 1) continue;
        for (int j = 0; j < N_OPTS; ++j)
            if (opt_defs[j].field == axes[i].field)
                FAIL("--%s takes one value for run; use sweep for grids", opt_defs[j].name);
    }
    return 0;
}

int options_parse(int argc, char **argv, command_t cmd, options_t *o, char *msg, size_t len)
{
    options_init(o);
    if ((unsigned)cmd >= SUITE_LINE) FAIL("unknown command");
    int rc = parse_line(argc, argv, cmd, o, &o->grid_set, msg, len);
    if (rc) return rc;
    if (resolve_share_map(o, msg, len)) return -1;
    apply_model(&o->grid, &o->grid_set);
    if (check_rope(&o->grid, o->grid_set, msg, len)) return -1;
    if (cmd == CMD_VERIFY && !o->suite) o->suite = "quick";
    if (o->resume && !o->out) FAIL("--resume needs --out FILE.csv (the sweep to resume)");
    if (o->resume && o->force)
        FAIL("--resume keeps the rows of --out and --force replaces them: give one of them");
    if (o->force && !o->out && cmd != CMD_MERGE) FAIL("--force needs --out FILE.csv (the file to replace)");
    if (cmd == CMD_MERGE) return 0;
    if (cmd == CMD_TABLE) {
        if (!o->n_inputs) FAIL("--in FILE.csv is required (see --help)");
        if (o->table.select_total && (o->table.paper || o->table.rows || o->table.cols || o->table.vs_peers ||
                                      o->table.ratio))
            FAIL("--select-total is a table of its own: not with --paper, --rows, --cols, --vs-peers or --ratio");
        if (!o->table.select_total && !o->table.paper && (!o->table.rows || !o->table.cols))
            FAIL("give --rows and --cols, or --paper 6|7|8, or --select-total");
        if (o->table.paper && (o->table.vs_peers || o->table.ratio))
            FAIL("%s takes a pivot (--rows, --cols), not --paper", o->table.vs_peers ? "--vs-peers" : "--ratio");
        return 0;
    }
    if (cmd == CMD_RUN) {
        if (o->n_kernels != 1) FAIL("run needs --kernel K (attnbench list shows them)");
        if (check_single(o, msg, len)) return -1;
    }
    if (cmd == CMD_SWEEP) {
        if (!o->out && !o->dry_run) FAIL("sweep needs --out FILE.csv (or --dry-run)");
        if (!o->grid_set && !o->suite)
            FAIL("sweep needs a grid (e.g. --beam 1:64 --ctx 8k,32k) or --suite NAME");
    }
    /* With a suite, the command line's grid is only a set of overrides; each suite
     * line is validated whole when the suite is loaded. */
    if ((cmd == CMD_RUN || cmd == CMD_SWEEP) && !o->suite && grid_validate(&o->grid, msg, len))
        return -1;
    if (o->n_devices && o->n_devices < o->grid.tp)
        FAIL("--tp %d needs %d GPUs; --devices gives %d", o->grid.tp, o->grid.tp, o->n_devices);
    return 0;
}

int options_parse_suite_line(int argc, char **argv, options_t *o, char *msg, size_t len)
{
    options_init(o);
    if (parse_line(argc, argv, SUITE_LINE, o, &o->grid_set, msg, len)) return -1;
    if (resolve_share_map(o, msg, len)) return -1;
    apply_model(&o->grid, &o->grid_set);
    return check_rope(&o->grid, o->grid_set, msg, len);
}
