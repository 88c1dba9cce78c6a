#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "presets.h"
#include "../bench/usage.h"
#include "../kernels/registry.h"

#ifndef ATTNBENCH_SUITE_DIR
#define ATTNBENCH_SUITE_DIR "bench/suites"
#endif

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

enum opt_id {
    OPT_BATCH = 256, OPT_BEAM, OPT_HEADS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_CTX, OPT_GEN,
    OPT_DTYPE, OPT_CACHE, OPT_BLOCK_SIZE, OPT_INDIRECTION, OPT_MULTI_BLOCK, OPT_SPLITS,
    OPT_Q_SCALING, OPT_MODEL, OPT_LAYERS, OPT_KERNEL, OPT_KERNELS, OPT_OUT, OPT_SUITE,
    OPT_RESUME, OPT_VERIFY, OPT_PROFILE, OPT_HOT, OPT_GRAPH, OPT_ITERS, OPT_WARMUP,
    OPT_MIN_TIME, OPT_SEED, OPT_HELP, OPT_NO_VERIFY, OPT_VERIFY_TIME, OPT_MAX_NOISE, OPT_MAX_TIME,
};

/* Where an option may appear: one bit per command, and suite lines. */
#define IN(cmd) (1u << (cmd))
#define IN_SUITE (1u << 5)
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
    {"dtype", required_argument, OPT_DTYPE, 't', PROBLEM, GRID_FIELD_DTYPE},
    {"cache", required_argument, OPT_CACHE, 0, PROBLEM, GRID_FIELD_CACHE},
    {"block-size", required_argument, OPT_BLOCK_SIZE, 'S', PROBLEM, GRID_FIELD_BLOCK_SIZE},
    {"indirection", no_argument, OPT_INDIRECTION, 0, PROBLEM, GRID_FIELD_INDIRECTION},
    {"multi-block", required_argument, OPT_MULTI_BLOCK, 0, PROBLEM, GRID_FIELD_MULTI_BLOCK},
    {"splits", required_argument, OPT_SPLITS, 0, PROBLEM, GRID_FIELD_SPLITS},
    {"q-scaling", required_argument, OPT_Q_SCALING, 0, PROBLEM, GRID_FIELD_Q_SCALING},
    {"model", required_argument, OPT_MODEL, 'm', PROBLEM, GRID_FIELD_MODEL},
    {"layers", required_argument, OPT_LAYERS, 0, PROBLEM, GRID_FIELD_LAYERS},
    /* -k is --kernel for run and --kernels elsewhere (see short_to_id) */
    {"kernel", required_argument, OPT_KERNEL, 0, IN(CMD_RUN), 0},
    {"kernels", required_argument, OPT_KERNELS, 0, IN(CMD_SWEEP) | IN(CMD_VERIFY) | IN_SUITE, 0},
    {"out", required_argument, OPT_OUT, 'o', IN(CMD_RUN) | IN(CMD_SWEEP), 0},
    {"suite", required_argument, OPT_SUITE, 's', IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
    {"resume", no_argument, OPT_RESUME, 0, IN(CMD_SWEEP), 0},
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
    {"help", no_argument, OPT_HELP, 'h', IN(CMD_LIST) | IN(CMD_PEAK) | IN(CMD_RUN) |
                                             IN(CMD_SWEEP) | IN(CMD_VERIFY), 0},
};
#define N_OPTS ((int)(sizeof opt_defs / sizeof opt_defs[0]))

#define SUITE_LINE ((command_t)5)   /* parse mode of a suite line, next to the commands */

static const char *const command_names[] = {"list", "peak", "run", "sweep", "verify"};

const char *command_name(command_t cmd)
{
    return (unsigned)cmd < 5 ? command_names[cmd] : "suite";
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

static int parse_int(const char *opt, const char *s, int min, int *out, char *msg, size_t len)
{
    long long v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') FAIL("%s: '%s' is not a whole number", opt, s);
    for (; *p >= '0' && *p <= '9'; ++p)
        if ((v = v * 10 + (*p - '0')) > INT_MAX) FAIL("%s: '%s' is too large", opt, s);
    if (*p) FAIL("%s: '%s' is not a whole number", opt, s);
    if (v < min) FAIL("%s must be at least %d (got %lld)", opt, min, v);
    *out = (int)v;
    return 0;
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
    for (int i = 0; i < n; ++i) {
        const attn_kernel_t *k = attn_kernel_find(names[i]);
        if (!k) FAIL("%s: unknown kernel '%s' (attnbench list shows them)", opt, names[i]);
        for (int j = 0; j < i; ++j)
            if (o->kernels[j] == k->name) FAIL("%s: '%s' is listed twice", opt, names[i]);
        o->kernels[i] = k->name;
    }
    o->n_kernels = n;
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
    default: return NULL;
    }
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
    case OPT_LAYERS: return parse_int(opt, arg, 1, &g->layers, msg, len);
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
        if (mode == CMD_VERIFY && strcmp(arg, "quick") && strcmp(arg, "full") && !strchr(arg, '/'))
            FAIL("--suite for verify is quick, full or a path (got '%s')", arg);
        o->suite = arg;
        return 0;
    case OPT_RESUME: o->resume = true; return 0;
    case OPT_VERIFY: o->verify = true; return 0;
    case OPT_NO_VERIFY: o->verify = false; return 0;
    case OPT_VERIFY_TIME: return parse_positive_double(opt, arg, &o->verify_time_s, msg, len);
    case OPT_PROFILE: o->profile = true; return 0;
    case OPT_HOT: o->hot = true; return 0;
    case OPT_GRAPH: o->graph = true; return 0;
    case OPT_ITERS: return parse_int(opt, arg, 0, &o->iters, msg, len);
    case OPT_WARMUP: return parse_int(opt, arg, 0, &o->warmup, msg, len);
    case OPT_MIN_TIME: return parse_positive_double(opt, arg, &o->min_time_s, msg, len);
    case OPT_MAX_NOISE: return parse_positive_double(opt, arg, &o->max_noise_pct, msg, len);
    case OPT_MAX_TIME: return parse_positive_double(opt, arg, &o->max_time_s, msg, len);
    case OPT_SEED: return parse_u64(opt, arg, &o->seed, msg, len);
    default: FAIL("--%s is not handled", d->name);
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
        *set |= d->field;
    }
    if (optind < argc) FAIL("unexpected argument '%s'", argv[optind]);
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

static void options_init(options_t *o)
{
    memset(o, 0, sizeof *o);
    grid_default(&o->grid);
    o->warmup = 3;
    o->min_time_s = 0.1;
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
        {GRID_FIELD_CACHE, g->n_cache}, {GRID_FIELD_BLOCK_SIZE, g->block_size.n},
        {GRID_FIELD_MULTI_BLOCK, g->n_multi_block}, {GRID_FIELD_SPLITS, g->splits.n},
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
    if ((unsigned)cmd > CMD_VERIFY) FAIL("unknown command");
    int rc = parse_line(argc, argv, cmd, o, &o->grid_set, msg, len);
    if (rc) return rc;
    apply_model(&o->grid, &o->grid_set);
    if (cmd == CMD_VERIFY && !o->suite) o->suite = "quick";
    if (o->resume && !o->out) FAIL("--resume needs --out FILE.csv (the sweep to resume)");
    if (cmd == CMD_RUN) {
        if (o->n_kernels != 1) FAIL("run needs --kernel K (attnbench list shows them)");
        if (check_single(o, msg, len)) return -1;
    }
    if (cmd == CMD_SWEEP) {
        if (!o->out) FAIL("sweep needs --out FILE.csv");
        if (!o->grid_set && !o->suite)
            FAIL("sweep needs a grid (e.g. --beam 1:64 --ctx 8k,32k) or --suite NAME");
    }
    /* With a suite, the command line's grid is only a set of overrides; each suite
     * line is validated whole when the suite is loaded. */
    if ((cmd == CMD_RUN || cmd == CMD_SWEEP) && !o->suite && grid_validate(&o->grid, msg, len))
        return -1;
    return 0;
}

/* ---- suites ------------------------------------------------------------------ */

#define SUITE_TOKENS 256

static bool line_has_content(const char *p, const char *end)
{
    for (; p < end && *p != '#'; ++p)
        if (*p != ' ' && *p != '\t' && *p != '\r') return true;
    return false;
}

static char *read_text(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + used, 1, cap - used - 1, f)) > 0;) {
        used += got;
        if (cap - used - 1 == 0) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        if (!err) errno = ENOMEM;
        return NULL;
    }
    buf[used] = '\0';
    *n = used;
    return buf;
}

/* One suite line (NUL-terminated, writable, comment already cut) into e. */
static int suite_line(char *line, const options_t *base, suite_entry_t *e, char *msg, size_t len)
{
    char *argv[SUITE_TOKENS + 1];
    int argc = 0;
    argv[argc++] = "suite";
    char *save;
    for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
        if (argc == SUITE_TOKENS) FAIL("more than %d words on one line", SUITE_TOKENS - 1);
        argv[argc++] = tok;
    }
    argv[argc] = NULL;
    options_t o;
    options_init(&o);
    unsigned set;
    if (parse_line(argc, argv, SUITE_LINE, &o, &set, msg, len)) return -1;
    apply_model(&o.grid, &set);
    if (base) {
        grid_override(&o.grid, &base->grid, base->grid_set);
        if (base->n_kernels) {
            memcpy(o.kernels, base->kernels, sizeof o.kernels);
            o.n_kernels = base->n_kernels;
        }
    }
    if (grid_validate(&o.grid, msg, len)) return -1;
    e->grid = o.grid;
    memcpy(e->kernels, o.kernels, sizeof e->kernels);
    e->n_kernels = o.n_kernels;
    return 0;
}

int suite_load(const char *name, const options_t *base, suite_entry_t **entries, int *n,
               char *msg, size_t len)
{
    *entries = NULL;
    *n = 0;
    if (!name || !*name) FAIL("--suite needs a name or a path");
    char path[4096];
    if (strchr(name, '/')) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/%s.suite", ATTNBENCH_SUITE_DIR, name);
    size_t text_len;
    char *text = read_text(path, &text_len);
    if (!text && !strchr(name, '/')) {
        /* a checkout moved since the build: its own suites, from the working directory */
        snprintf(path, sizeof path, "bench/suites/%s.suite", name);
        text = read_text(path, &text_len);
    }
    if (!text) FAIL("--suite %s: cannot read %s: %s", name, path, strerror(errno));

    int count = 0;
    for (const char *p = text; *p;) {
        const char *end = p + strcspn(p, "\n");
        count += line_has_content(p, end);
        p = *end ? end + 1 : end;
    }
    if (count == 0) {
        free(text);
        FAIL("--suite %s: %s holds no grid lines", name, path);
    }

    /* Entries and the text their names point into share one block: one free(). */
    suite_entry_t *block = malloc(count * sizeof *block + text_len + 1);
    if (!block) {
        free(text);
        FAIL("--suite %s: out of host memory", name);
    }
    char *copy = (char *)(block + count);
    memcpy(copy, text, text_len + 1);
    free(text);

    int k = 0, line_no = 0;
    for (char *p = copy; *p;) {
        char *end = p + strcspn(p, "\n");
        bool last = !*end;
        *end = '\0';
        ++line_no;
        char *hash = strchr(p, '#');
        if (hash) *hash = '\0';
        if (line_has_content(p, p + strlen(p))) {
            char why[512];
            if (suite_line(p, base, &block[k], why, sizeof why)) {
                free(block);
                FAIL("%s:%d: %s", path, line_no, why);
            }
            ++k;
        }
        p = last ? end : end + 1;
    }
    *entries = block;
    *n = k;
    return 0;
}
