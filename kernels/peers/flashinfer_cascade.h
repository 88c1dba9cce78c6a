/* The host arithmetic of `flashinfer-cascade` (flashinfer_cascade.cu), plain C so that
 * the CPU tests check it without FlashInfer or a GPU: which shapes FlashInfer's code
 * path can run, and the two levels' page lists that its plan() takes.
 *
 * FlashInfer's MultiLevelCascadeAttentionWrapper (flashinfer/cascade.py) plans one
 * BatchPrefillWithPagedKVCacheWrapper per level over one unified paged cache:
 *   level 0 (shared): one entry per request, its W streams as W query tokens, its
 *     full context blocks as the pages, no causal mask;
 *   level 1 (unique): one entry per stream, one query token, the stream's own pages
 *     (a partly filled last context block, then the decoded blocks).
 * Every level keeps the whole q [B*W, h, d] as its query tensor; qo_indptr picks the
 * rows of each entry. */
#ifndef ATTNBENCH_FLASHINFER_CASCADE_H
#define ATTNBENCH_FLASHINFER_CASCADE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FIC_LEVELS 2
#define FIC_SHARED 0
#define FIC_UNIQUE 1

/* FlashInfer's Hopper (FA3) plan (PrefillSM90Plan, attention/scheduler.cuh) gives every
 * CTA its list of query tiles of this many rows: 192 at head_dim 64, else 128. */
static inline int fic_cta_tile_q(int head_dim) { return head_dim == 64 ? 192 : 128; }

/* The same plan schedules all heads alike (the kernel's SAME_SCHEDULE_FOR_ALL_HEADS
 * instantiation, not built here) once one head has more than this many query tiles. */
#define FIC_SAME_SCHEDULE_WORKS 4096

/* Query tiles of one head in a level of `entries` entries over `rows` query rows, as
 * PrefillSM90Plan bounds them: ceil(rows / tile) + entries - 1. */
static inline int64_t fic_works_per_head(int64_t rows, int64_t entries, int head_dim)
{
    int64_t tile = fic_cta_tile_q(head_dim);
    return (rows + tile - 1) / tile + entries - 1;
}

/* Query tiles of every head the plan hands out for a level: each entry's
 * ceil(qo_len / tile) tiles, for each query head. */
static inline int64_t fic_works(const problem_t *p, int level)
{
    int64_t tile = fic_cta_tile_q(p->head_dim);
    int64_t entries = level == FIC_SHARED ? p->batch : problem_streams(p);
    int64_t qo_len = level == FIC_SHARED ? p->beam : 1;
    return (int64_t)p->heads * entries * ((qo_len + tile - 1) / tile);
}

/* Threads of a block of FlashInfer's MergeStateInPlace (attention/cascade.cuh): one row
 * of head_dim / vec lanes per head, vec = max(16 bytes / element, head_dim / 32). */
static inline int64_t fic_merge_threads(const problem_t *p)
{
    int64_t per_16b = 16 / (int64_t)dtype_size(p->dtype), per_32 = p->head_dim / 32;
    int64_t vec = per_16b > per_32 ? per_16b : per_32;
    return (int64_t)p->heads * (p->head_dim / vec);
}

/* Full context blocks (shared by the W streams of a request: level 0's pages) and the
 * blocks each stream owns from there on (level 1's). */
static inline int fic_shared_blocks(const problem_t *p) { return p->ctx / p->block_size; }
static inline int fic_unique_blocks(const problem_t *p)
{
    return kv_blocks_for(problem_keys(p), p->block_size) - fic_shared_blocks(p);
}

/* NULL when FlashInfer's code path, as built here, runs p; else the reason. */
static inline const char *fic_unsupported(const problem_t *p)
{
    if (problem_ragged(p))
        return "the cascade is planned here with one context length for every request, not ragged --ctx-dist lengths";
    if (p->cache != CACHE_PAGED)
        return "the cascade's shared level is the paged cache's shared context blocks (--cache paged); "
               "a contiguous cache has none";
    if (p->indirection)
        return "FlashInfer's cascade reads each stream's own pages: no cache indirection (--indirection)";
    if (p->dtype == DTYPE_FP32)
        return "FlashInfer's Hopper (FA3) prefill takes fp16 or bf16 (--dtype fp32)";
    if (p->head_dim != 64 && p->head_dim != 128)
        return "built for head_dim 64 and 128 (FlashInfer's Hopper prefill also has 256, not instantiated here)";
    if (p->multi_block == MULTI_BLOCK_ON || p->splits > 0)
        return "FlashInfer's Hopper prefill has no split-KV setting (--multi-block on / --splits)";
    if (fic_shared_blocks(p) == 0)
        return "no shared level: the context fills no whole block (--ctx below --block-size), so no page is shared";
    if (fic_merge_threads(p) > 1024)
        return "FlashInfer's MergeStateInPlace puts heads x head_dim/vec threads in a block: over 1024 here (--heads)";
    if (fic_works_per_head(problem_streams(p), problem_streams(p), p->head_dim) > FIC_SAME_SCHEDULE_WORKS)
        return "over 4096 query tiles per head: FlashInfer's plan then schedules all heads alike, a kernel "
               "instantiation not built here (--batch x --beam)";
    return NULL;
}

/* Compulsory: the context blocks once per request and each stream's own pages (what
 * the two levels read), q, out, and the two levels' page lists. Scratch: the shared
 * level's output written and read by the merge, the unique level's write of out and
 * the merge's read of it, both lse arrays (written, read, the unique one rewritten),
 * and the plan's per-tile arrays. */
static inline attn_io_t fic_io(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    const double o = io_qo_bytes(p) / 2.0;
    const double lse = (double)problem_streams(p) * p->heads * sizeof(float);
    const double pages = (double)p->batch * fic_shared_blocks(p) + (double)problem_streams(p) * fic_unique_blocks(p);
    const double tiles = (double)fic_works(p, FIC_SHARED) + (double)fic_works(p, FIC_UNIQUE);
    attn_io_t io;
    io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + pages * sizeof(int32_t);
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.flops = io_flops(p);
    io.workspace_bytes = 4.0 * o + 5.0 * lse + 7.0 * tiles * sizeof(int32_t);
    return io;
}

/* One level's plan() inputs, FlashInfer's CSR form: entry i has query rows
 * [qo_indptr[i], qo_indptr[i+1]) and pages kv_indices[kv_indptr[i] .. kv_indptr[i+1]),
 * all full but the last, which holds last_page_len tokens; kv_len is what FlashInfer's
 * get_seq_lens makes of them. */
typedef struct fic_level {
    int entries;
    int64_t pages;
    int32_t *qo_indptr;      /* [entries + 1] */
    int32_t *kv_indptr;      /* [entries + 1] */
    int32_t *kv_indices;     /* [pages] */
    int32_t *last_page_len;  /* [entries] */
    int32_t *kv_len;         /* [entries] */
} fic_level_t;

static inline void fic_levels_free(fic_level_t lv[FIC_LEVELS])
{
    for (int l = 0; l < FIC_LEVELS; ++l) {
        free(lv[l].qo_indptr);
        free(lv[l].kv_indptr);
        free(lv[l].kv_indices);
        free(lv[l].last_page_len);
        free(lv[l].kv_len);
    }
    memset(lv, 0, FIC_LEVELS * sizeof *lv);
}

static inline int fic_level_alloc(fic_level_t *lv, int entries, int64_t pages)
{
    lv->entries = entries;
    lv->pages = pages;
    lv->qo_indptr = (int32_t *)malloc(((size_t)entries + 1) * sizeof(int32_t));
    lv->kv_indptr = (int32_t *)malloc(((size_t)entries + 1) * sizeof(int32_t));
    lv->kv_indices = (int32_t *)malloc((size_t)(pages > 0 ? pages : 1) * sizeof(int32_t));
    lv->last_page_len = (int32_t *)malloc((size_t)entries * sizeof(int32_t));
    lv->kv_len = (int32_t *)malloc((size_t)entries * sizeof(int32_t));
    return lv->qo_indptr && lv->kv_indptr && lv->kv_indices && lv->last_page_len && lv->kv_len ? 0 : -1;
}

/* Both levels' page lists from the harness's block table [B*W, max_blocks_per_seq]
 * (host copy): the shared blocks are read from the first stream of each request,
 * where every stream of the request points at the same ones. Returns 0, or -1 (lv
 * freed) when host memory runs out or a level would pass 2^31 pages. */
static inline int fic_levels_build(const problem_t *p, const int32_t *block_table,
                                   fic_level_t lv[FIC_LEVELS])
{
    const int W = p->beam, S = p->block_size, per_seq = kv_blocks_for(problem_keys(p), S);
    const int n0 = fic_shared_blocks(p), n1 = fic_unique_blocks(p);
    const int streams = problem_streams(p);
    const int unique_tokens = problem_keys(p) - n0 * S;
    memset(lv, 0, FIC_LEVELS * sizeof *lv);
    if ((int64_t)p->batch * n0 > INT32_MAX || (int64_t)streams * n1 > INT32_MAX) return -1;
    if (fic_level_alloc(&lv[FIC_SHARED], p->batch, (int64_t)p->batch * n0) != 0 ||
        fic_level_alloc(&lv[FIC_UNIQUE], streams, (int64_t)streams * n1) != 0) {
        fic_levels_free(lv);
        return -1;
    }
    fic_level_t *sh = &lv[FIC_SHARED], *un = &lv[FIC_UNIQUE];
    sh->qo_indptr[0] = sh->kv_indptr[0] = 0;
    for (int b = 0; b < p->batch; ++b) {
        const int32_t *row = block_table + (int64_t)b * W * per_seq;
        memcpy(sh->kv_indices + (int64_t)b * n0, row, (size_t)n0 * sizeof(int32_t));
        sh->qo_indptr[b + 1] = (b + 1) * W;
        sh->kv_indptr[b + 1] = (b + 1) * n0;
        sh->last_page_len[b] = n0 > 0 ? S : 0;
        sh->kv_len[b] = n0 * S;
    }
    un->qo_indptr[0] = un->kv_indptr[0] = 0;
    for (int s = 0; s < streams; ++s) {
        const int32_t *row = block_table + (int64_t)s * per_seq + n0;
        memcpy(un->kv_indices + (int64_t)s * n1, row, (size_t)n1 * sizeof(int32_t));
        un->qo_indptr[s + 1] = s + 1;
        un->kv_indptr[s + 1] = (s + 1) * n1;
        un->last_page_len[s] = unique_tokens - (n1 - 1) * S;
        un->kv_len[s] = unique_tokens;
    }
    return 0;
}

#ifdef __cplusplus
}
#endif
#endif
