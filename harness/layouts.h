/* Host-side builders of the KV-cache layouts of SPEC §3: the geometry a kernel
 * addresses through, the paged block map, the beam-search history, and float
 * copies of what the device fill writes (so CPU tests see the very buffers a
 * kernel would read). */
#ifndef ATTNBENCH_LAYOUTS_H
#define ATTNBENCH_LAYOUTS_H

#include <stdint.h>
#include "../problem/problem.h"
#include "../problem/kv_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills every field. block_size, block_shift and max_blocks_per_seq are 0 for
 * layouts other than LAYOUT_PAGED, so nothing can use them by accident. */
kv_geometry_t kv_geometry_make(const problem_t *p, kv_layout_t layout);

typedef struct paged_map {
    int num_blocks, max_blocks_per_seq;
    int32_t *table;      /* [B*W, max_blocks_per_seq] physical block of each logical block */
    int32_t *owner;      /* [num_blocks] stream whose tokens the block holds (a shared context block: stream b*W of its request) */
    int32_t *first_pos;  /* [num_blocks] logical position of the block's slot 0 */
} paged_map_t;

/* B * (floor(m_c/S) + W * (ceil(L/S) - floor(m_c/S))): full context blocks once
 * per request, everything from the first partly-context block on per stream. */
int64_t paged_block_count(const problem_t *p);

/* Allocates and fills *m; blocks are handed out in a seeded shuffled order.
 * Returns 0, or -1 (with *m zeroed) if host memory runs out or the pool would
 * need more than INT32_MAX blocks. */
int paged_map_build(const problem_t *p, uint64_t seed, paged_map_t *m);
void paged_map_free(paged_map_t *m);

/* A random valid beam-search history, malloc'd [B, W, L] (cache_indirection):
 * context positions and the current position read the stream itself; earlier
 * decoded positions follow a random ancestry. NULL if host memory runs out. */
int32_t *beam_history_build(const problem_t *p, uint64_t seed);

/* Elements of buffer `part` of layout g->layout: part 0 is the contiguous cache,
 * the paged pool or the bifurcated context; part 1 the bifurcated decoded part;
 * 0 for any other part. */
int64_t layout_elements(const kv_geometry_t *g, const problem_t *p, int part);

#ifdef __cplusplus
}
#endif
#endif
