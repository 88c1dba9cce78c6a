/* Grids of problems (SPEC §5): value lists per option and their Cartesian product. */
#ifndef ATTNBENCH_GRID_H
#define ATTNBENCH_GRID_H

#include <stdbool.h>
#include <stddef.h>
#include "../problem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LIST_MAX 64
/* More points than this is a mistake in the command line, not a benchmark. */
#define GRID_POINTS_MAX (1 << 20)

typedef struct int_list { int n; int v[LIST_MAX]; } int_list_t;

/* Parses "1,2,4"; "1:1024" = powers of two from 1 to 1024 inclusive; "8k" = 8192
 * (k = 1024, m = 1048576, either case); "8k:32k"; mixed "1,4:16,100". Values keep the
 * order written; duplicates are kept. Returns 0, or -1 with one line in msg naming opt
 * for: empty list or element, non-numeric, zero or negative, range with lo > hi,
 * range ends that are not powers of two, a value above INT_MAX, more than LIST_MAX values. */
int int_list_parse(const char *opt, const char *s, int_list_t *out, char *msg, size_t len);

typedef struct grid {
    int_list_t batch, beam, heads, kv_heads, head_dim, ctx, gen, block_size, splits;
    int_list_t q_len;                /* --q-len: query tokens per stream */
    dtype_t dtype[3]; int n_dtype;
    /* --kv-dtype: 8-bit storages, or the 16/32-bit name of a point's dtype (its cache in
     * that dtype); none listed (n 0): every cache in its dtype */
    dtype_t kv_dtype[5]; int n_kv_dtype;
    kv_scale_t kv_scale[2]; int n_kv_scale;   /* --kv-scale, for the 8-bit points */
    cache_kind_t cache[2]; int n_cache;
    multi_block_t multi_block[3]; int n_multi_block;
    bool indirection;
    double q_scaling;
    const char *model; int layers;   /* from --model preset; NULL / 1 without one */
    int tp;                          /* --tp: GPUs the heads are split over (1: one) */
    step_kind_t step;                     /* --step, and --step append's RoPE settings */
    rope_t rope;
    double rope_base, rope_scale;
    const struct ctx_dist *ctx_dist; /* --ctx-dist (problem/ctx_dist.h), NULL: fixed; outlives
                                        the grid's points, whose lengths it gives */
    scores_t scores;                 /* --scores, and peaked's logit boosts */
    double sink_logit, heavy_logit, recent_logit;
    double share_fraction;           /* --share-fraction (share) */
    double top_p;                    /* --top-p (select-filter) */
    const struct share_map *share_map;   /* --share-map/--share-layer, NULL without */
} grid_t;

/* The grid of one point: problem_default(). */
void grid_default(grid_t *g);

/* One bit per option that sets a field of grid_t (GRID_FIELD_MODEL: the name only). */
enum grid_field {
    GRID_FIELD_BATCH = 1u << 0, GRID_FIELD_BEAM = 1u << 1, GRID_FIELD_HEADS = 1u << 2,
    GRID_FIELD_KV_HEADS = 1u << 3, GRID_FIELD_HEAD_DIM = 1u << 4, GRID_FIELD_CTX = 1u << 5,
    GRID_FIELD_GEN = 1u << 6, GRID_FIELD_DTYPE = 1u << 7, GRID_FIELD_CACHE = 1u << 8,
    GRID_FIELD_BLOCK_SIZE = 1u << 9, GRID_FIELD_INDIRECTION = 1u << 10,
    GRID_FIELD_MULTI_BLOCK = 1u << 11, GRID_FIELD_SPLITS = 1u << 12,
    GRID_FIELD_Q_SCALING = 1u << 13, GRID_FIELD_MODEL = 1u << 14, GRID_FIELD_LAYERS = 1u << 15,
    GRID_FIELD_KV_DTYPE = 1u << 16, GRID_FIELD_KV_SCALE = 1u << 17, GRID_FIELD_TP = 1u << 18,
    GRID_FIELD_STEP = 1u << 19, GRID_FIELD_ROPE = 1u << 20, GRID_FIELD_ROPE_BASE = 1u << 21,
    GRID_FIELD_ROPE_SCALE = 1u << 22, GRID_FIELD_CTX_DIST = 1u << 23, GRID_FIELD_Q_LEN = 1u << 24,
    GRID_FIELD_SCORES = 1u << 25, GRID_FIELD_SINK_LOGIT = 1u << 26, GRID_FIELD_HEAVY_LOGIT = 1u << 27,
    GRID_FIELD_RECENT_LOGIT = 1u << 28, GRID_FIELD_SHARE_FRACTION = 1u << 29, GRID_FIELD_SHARE_MAP = 1u << 30,
    GRID_FIELD_TOP_P = 1u << 31,
};
/* The options that only --step append takes. */
#define GRID_FIELDS_ROPE (GRID_FIELD_ROPE | GRID_FIELD_ROPE_BASE | GRID_FIELD_ROPE_SCALE)

/* Copies into dst the fields of src whose GRID_FIELD_* bit is in fields. */
void grid_override(grid_t *dst, const grid_t *src, unsigned fields);

/* Validates every point with problem_validate without allocating; also refuses empty
 * axes, grids above GRID_POINTS_MAX points, listed block sizes that a paged cache
 * would refuse even when no point is paged, and a 16/32-bit --kv-dtype that is not the
 * point's --dtype. 0, or -1 with the first rule broken in msg. */
int grid_validate(const grid_t *g, char *msg, size_t len);

/* The Cartesian product, outermost axis first:
 *   dtype, kv_dtype, kv_scale (8-bit points only), cache, block_size, heads, kv_heads,
 *   head_dim, multi_block, splits, ctx, gen, batch, beam, q_len
 * so that consecutive rows of a sweep walk the beam width, then the batch, at a fixed
 * context, as the paper's tables are laid out (and the query-token counts of one
 * configuration side by side). A ragged --ctx-dist gives each point its lengths and its
 * longest as ctx (one --ctx value, not used, or none). Every point is validated (grid_validate);
 * on success *out is malloc'd (caller frees) and holds *n points; on -1 *out is NULL. */
int grid_expand(const grid_t *g, problem_t **out, int *n, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
