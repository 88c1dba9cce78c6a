#include "layouts.h"
#include "layouts_internal.h"

#include <stdlib.h>
#include <string.h>
#include "../problem/kv_fill.h"

/* Separate streams of random numbers for each builder, so that changing one
 * (say, the beam history) never changes what another (the block shuffle) makes. */
#define RNG_DOMAIN_PAGED 0x70616765645f6d61ull
#define RNG_DOMAIN_BEAM 0x6265616d5f686973ull

typedef struct rng { uint64_t state; } rng_t;

static rng_t rng_make(uint64_t seed, uint64_t domain)
{
    rng_t r = {splitmix64(seed ^ domain)};
    return r;
}

static uint64_t rng_next(rng_t *r)
{
    r->state += 0x9E3779B97F4A7C15ull;
    return splitmix64(r->state);
}

/* Modulo bias is below 2^-32 for every n used here: irrelevant to a shuffle. */
static int64_t rng_below(rng_t *r, int64_t n) { return (int64_t)(rng_next(r) % (uint64_t)n); }

static int log2_of(int pow2)
{
    int shift = 0;
    while ((1 << shift) < pow2) ++shift;
    return shift;
}

kv_geometry_t kv_geometry_make(const problem_t *p, kv_layout_t layout)
{
    kv_geometry_t g;
    memset(&g, 0, sizeof g);
    g.layout = (int)layout;
    g.beam = p->beam;
    g.kv_heads = p->kv_heads;
    g.head_dim = p->head_dim;
    g.ctx = p->ctx;
    g.gen = p->gen;
    g.kv_quant = (int)p->kv_quant;
    g.kv_scale_per_head = p->kv_quant != KV_QUANT_NONE && p->kv_scale == KV_SCALE_HEAD;
    g.peaked = p->scores == SCORES_PEAKED;
    g.peak_sink = problem_peak_code(p, p->sink_logit);
    g.peak_heavy = problem_peak_code(p, p->heavy_logit);
    g.peak_recent = problem_peak_code(p, p->recent_logit);
    if (layout == LAYOUT_PAGED) {
        g.block_size = p->block_size;
        g.block_shift = log2_of(p->block_size);
        g.max_blocks_per_seq = kv_blocks_for(p->ctx + p->gen, p->block_size);
    }
    return g;
}

/* Full context blocks are shared by the W streams of a request; the block that
 * holds the end of the context (if partial) and all later ones are per stream. */
static int64_t pool_blocks(int64_t batch, int64_t beam, int ctx, int keys, int block_size)
{
    int64_t shared = ctx / block_size;
    int64_t per_stream = kv_blocks_for(keys, block_size) - shared;
    return batch * (shared + beam * per_stream);
}

int64_t paged_block_count(const problem_t *p)
{
    if (!problem_ragged(p)) return pool_blocks(p->batch, p->beam, p->ctx, problem_keys(p), p->block_size);
    int64_t total = 0; /* each request its own blocks */
    for (int b = 0; b < p->batch; ++b) {
        const int ctx = problem_ctx_len(p, b);
        total += pool_blocks(1, p->beam, ctx, ctx + p->gen, p->block_size);
    }
    return total;
}

void paged_map_free(paged_map_t *m)
{
    free(m->table);
    free(m->owner);
    free(m->first_pos);
    memset(m, 0, sizeof *m);
}

/* Seeded Fisher–Yates: physical block order that no kernel can predict. */
static void shuffle_identity(int32_t *perm, int n, uint64_t seed)
{
    rng_t r = rng_make(seed, RNG_DOMAIN_PAGED);
    for (int i = 0; i < n; ++i) perm[i] = i;
    for (int i = n - 1; i > 0; --i) {
        int j = (int)rng_below(&r, i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int paged_map_build(const problem_t *p, uint64_t seed, paged_map_t *m)
{
    memset(m, 0, sizeof *m);
    int64_t count = paged_block_count(p);
    if (count <= 0 || count > INT32_MAX) return -1;
    const int W = p->beam, S = p->block_size;
    const int per_seq = kv_blocks_for(problem_keys(p), S);
    const int64_t streams = problem_streams(p);

    m->num_blocks = (int)count;
    m->max_blocks_per_seq = per_seq;
    m->table = malloc((size_t)(streams * per_seq) * sizeof *m->table);
    m->owner = malloc((size_t)count * sizeof *m->owner);
    m->first_pos = malloc((size_t)count * sizeof *m->first_pos);
    int32_t *perm = malloc((size_t)count * sizeof *perm);
    if (!m->table || !m->owner || !m->first_pos || !perm) {
        free(perm);
        paged_map_free(m);
        return -1;
    }
    shuffle_identity(perm, (int)count, seed);

    /* a ragged batch's shorter requests leave the end of their table rows unused:
     * block 0, so that nothing reading one stays outside the pool */
    memset(m->table, 0, (size_t)(streams * per_seq) * sizeof *m->table);
    int64_t next = 0;
    for (int b = 0; b < p->batch; ++b) {
        const int64_t first_stream = (int64_t)b * W;
        const int ctx = problem_ctx_len(p, b), shared = ctx / S;
        const int blocks = kv_blocks_for(ctx + p->gen, S);
        for (int j = 0; j < shared; ++j) {
            int32_t phys = perm[next++];
            m->owner[phys] = (int32_t)first_stream;
            m->first_pos[phys] = j * S;
            for (int w = 0; w < W; ++w) m->table[(first_stream + w) * per_seq + j] = phys;
        }
        for (int w = 0; w < W; ++w) {
            for (int j = shared; j < blocks; ++j) {
                int32_t phys = perm[next++];
                m->owner[phys] = (int32_t)(first_stream + w);
                m->first_pos[phys] = j * S;
                m->table[(first_stream + w) * per_seq + j] = phys;
            }
        }
    }
    free(perm);
    return 0;
}

/* Walks each request's history backwards from the current step: every stream
 * starts as itself, and one decoded step earlier its ancestor is where a random
 * parent map (new beam -> beam it was extended from) sends it. Streams that
 * share an ancestor at step t+1 therefore share all earlier ones, as in real
 * beam-search reordering. */
int32_t *beam_history_build(const problem_t *p, uint64_t seed)
{
    const int W = p->beam, L = problem_keys(p);
    int32_t *hist = malloc((size_t)problem_streams(p) * (size_t)L * sizeof *hist);
    int32_t *ancestor = malloc((size_t)W * sizeof *ancestor);
    int32_t *parent = malloc((size_t)W * sizeof *parent);
    if (!hist || !ancestor || !parent) {
        free(hist);
        free(ancestor);
        free(parent);
        return NULL;
    }
    rng_t r = rng_make(seed, RNG_DOMAIN_BEAM);
    for (int b = 0; b < p->batch; ++b) {
        int32_t *req = hist + (int64_t)b * W * L;
        /* a ragged request's keys end at its own length; the padding after reads itself */
        const int ctx = problem_ctx_len(p, b), keys = ctx + p->gen;
        for (int w = 0; w < W; ++w) {
            for (int t = 0; t < ctx; ++t) req[(int64_t)w * L + t] = w;
            for (int t = keys - 1; t < L; ++t) req[(int64_t)w * L + t] = w;
            ancestor[w] = w;
        }
        for (int t = keys - 2; t >= ctx; --t) {
            for (int v = 0; v < W; ++v) parent[v] = (int32_t)rng_below(&r, W);
            for (int w = 0; w < W; ++w) {
                ancestor[w] = parent[ancestor[w]];
                req[(int64_t)w * L + t] = ancestor[w];
            }
        }
    }
    free(ancestor);
    free(parent);
    return hist;
}

int64_t layout_elements(const kv_geometry_t *g, const problem_t *p, int part)
{
    const int64_t row = 2 * (int64_t)g->kv_heads * g->head_dim; /* K and V of one position */
    const int64_t streams = (int64_t)p->batch * g->beam;
    switch (g->layout) {
    case LAYOUT_CONTIGUOUS:
        return part == 0 ? streams * ((int64_t)g->ctx + g->gen) * row : 0;
    case LAYOUT_PAGED:
        if (part != 0 || g->block_size <= 0) return 0;
        return paged_block_count(p) * g->block_size * row;
    case LAYOUT_BIFURCATED:
        if (part == 0) return (int64_t)p->batch * g->ctx * row;
        if (part == 1) return streams * g->gen * row;
        return 0;
    default:
        return 0;
    }
}

float *layout_materialize(const kv_geometry_t *g, const problem_t *p, uint64_t seed,
                          const paged_map_t *m, int part)
{
    int64_t n = layout_elements(g, p, part);
    if (n <= 0 || (g->layout == LAYOUT_PAGED && !m)) return NULL;
    float *buf = malloc((size_t)n * sizeof *buf);
    if (!buf) return NULL;
    for (int64_t e = 0; e < n; ++e) {
        switch (g->layout) {
        case LAYOUT_CONTIGUOUS: buf[e] = kv_contiguous_value(g, seed, e); break;
        case LAYOUT_PAGED: buf[e] = kv_paged_value(g, seed, m->owner, m->first_pos, e); break;
        default: buf[e] = part == 0 ? kv_ctx_value(g, seed, e) : kv_dec_value(g, seed, e); break;
        }
    }
    return buf;
}
