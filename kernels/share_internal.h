/* The `share` kernel's host-and-device arithmetic (kernels/share.cu), plain C so that
 * the CPU tests check the same layout and byte model the GPU uses.
 *
 * A step runs in three launches over the heads of the problem's share map
 * (problem/share_map.h):
 *   logits   a CTA per (split of keys, kv head, batch of SHARE_HEADS heads of its group,
 *            stream): the scaled logits of the batch's essential heads, and each
 *            split's softmax statistics (max, sum of exp); a batch with no essential
 *            head returns at once, so a kv head whose group lost all its essential
 *            heads never has its K read
 *   values   a CTA per the same: each head of the batch weights its own kv head's V by
 *            the normalised weights of its essential head, a partial sum per split
 *   reduce   the splits' partial sums of each output row added, in the dtype
 * The logits and statistics round-trip through the workspace (as the unfused cuBLAS
 * path's do); the normalisation is exact (no online rescaling), so the splits' partial
 * sums add without a log-sum-exp merge. */
#ifndef ATTNBENCH_SHARE_INTERNAL_H
#define ATTNBENCH_SHARE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "../problem/hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Heads of one group a CTA serves (their queries or accumulators live in registers). */
#define SHARE_HEADS 4
/* Keys per chunk step of the split plan. */
#define SHARE_TILE 64
#define SHARE_THREADS 128
#define SHARE_CTAS_PER_SM 4
/* Workspace sections start on this many bytes. */
#define SHARE_ALIGN 256

HD int share_batches(int group) { return (group + SHARE_HEADS - 1) / SHARE_HEADS; }

HD size_t share_align(size_t x) { return (x + SHARE_ALIGN - 1) / SHARE_ALIGN * SHARE_ALIGN; }

/* The heads a CTA serves: batch b of kv head j's group, heads first .. first + count - 1. */
HD int share_batch_first(int j, int b, int group) { return j * group + b * SHARE_HEADS; }
HD int share_batch_count(int b, int group)
{
    int left = group - b * SHARE_HEADS;
    return left < SHARE_HEADS ? left : SHARE_HEADS;
}

/* The logits launch's parts of each split of `chunk` keys. Its CTAs of a batch with no
 * essential head return at once, so where only busy of all (kv head, batch) pairs have
 * one, each split is cut into about all / busy parts, none under SHARE_TILE keys, so that
 * as many of its CTAs work as the values launch's; 1 where every batch has one. */
HD int share_logit_parts(int chunk, long busy, long all)
{
    if (busy <= 0 || busy >= all) return 1;
    long parts = (all + busy - 1) / busy, most = chunk / SHARE_TILE;
    if (parts > most) parts = most;
    return parts < 1 ? 1 : (int)parts;
}
/* Keys of each part of a split: the split cut evenly, rounded up. */
HD int share_part_keys(int chunk, int parts) { return (chunk + parts - 1) / parts; }

/* The (kv head, batch) pairs with an essential head, of kv_heads * share_batches(group):
 * to[i] is head i's essential head (i itself where essential). */
HD long share_busy_batches(const int *to, int kv_heads, int group)
{
    long busy = 0;
    for (int j = 0; j < kv_heads; ++j)
        for (int b = 0; b < share_batches(group); ++b) {
            int any = 0;
            for (int t = 0; t < share_batch_count(b, group); ++t) {
                const int i = share_batch_first(j, b, group) + t;
                any |= to[i] == i;
            }
            busy += any;
        }
    return busy;
}

/* The workspace: logits [streams][essential][keys] fp32, statistics [streams][essential]
 * [splits x parts] (max, sum) fp32 pairs, one per CTA of the logits launch, partial outputs
 * [splits][streams][heads][d] fp32. */
typedef struct share_ws {
    size_t logits, stats, partials;   /* byte offsets */
    size_t bytes;                     /* the whole */
} share_ws_t;

HD share_ws_t share_ws_layout(int streams, int heads, int essential, int keys, int d, int splits, int parts)
{
    share_ws_t w;
    w.logits = 0;
    w.stats = share_align((size_t)streams * essential * keys * sizeof(float));
    w.partials = w.stats + share_align((size_t)streams * essential * splits * parts * 2 * sizeof(float));
    w.bytes = w.partials + share_align((size_t)splits * streams * heads * d * sizeof(float));
    return w;
}

/* Element indices into the workspace's sections (floats; statistics in pairs). */
HD int64_t share_logit_at(int stream, int essential, int rank, int keys, int key)
{
    return ((int64_t)stream * essential + rank) * keys + key;
}
HD int64_t share_stat_at(int stream, int essential, int rank, int splits, int split)
{
    return ((int64_t)stream * essential + rank) * splits + split;
}
HD int64_t share_partial_at(int split, int streams, int stream, int heads, int head, int d, int x)
{
    return (((int64_t)split * streams + stream) * heads + head) * d + x;
}

/* 16-byte vectors per row of d elements of `es` bytes, and how lanes cover them: lanes
 * per row (a power of two up to 32, at least the vectors where they fit) and vectors
 * per lane (1, or 2 for a row of 64 fp32 vectors). */
HD int share_row_vectors(int d, int es) { return d * es / 16; }
/* The lanes a row takes when each lane takes up to per_lane of its vectors: the fewest, a
 * power of two dividing the warp, with lanes x per_lane covering the row where 32 can. */
HD int share_lanes_per_row_of(int vectors, int per_lane)
{
    int l = 1;
    while (l * per_lane < vectors && l < 32) l *= 2;
    return l;
}
/* The lanes per row of the comment above: one vector a lane where 32 lanes cover the row. */
HD int share_lanes_per_row(int vectors) { return share_lanes_per_row_of(vectors, 1); }
/* Vectors a lane takes of a row on one head a CTA (MHA). */
#define SHARE_WIDE_VECTORS 4

#ifdef __cplusplus
}
#endif
#endif
