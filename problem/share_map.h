/* Share-Attention's head-sharing map (the Share/Select-Attention paper, §4.1): within a
 * layer, the essential heads compute their attention weights; every other head reuses
 * the weights of the essential head its share_to names, applied to its own V.
 *
 * A map comes from a JSON file in the paper's form (share_map_load) or is synthetic,
 * a pure function of (heads, shared) that kernels and reference both evaluate
 * (share_synthetic_target). problem_share_target gives a problem's map, either way. */
#ifndef ATTNBENCH_SHARE_MAP_H
#define ATTNBENCH_SHARE_MAP_H

#include <stddef.h>
#include "hd.h"
#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most heads a map file may describe per layer. */
#define SHARE_HEADS_MAX 4096

typedef struct share_map {
    char path[256];    /* the file it was read from (for --share-map in a row's args) */
    int layer;         /* the layer of the file this map is */
    int layers;        /* layers the file holds */
    int heads;         /* heads of the layer: essential plus shared */
    int essential;     /* how many of them are essential */
    int *share_to;     /* [heads]: the essential head whose weights head i uses (i itself
                          for an essential head) */
} share_map_t;

/* Reads layer `layer` of the map at path with cJSON. The file is one of
 *   {"layers": [L0, L1, ...]}   [L0, L1, ...]   {"0": L0, "1": L1, ...}
 * with each layer Li = {"essential_heads": [e, ...], "share_to": {"h": e, ...}}: the
 * essential heads, distinct, and for every other head the essential head it shares.
 * Heads are numbered 0 .. heads-1, every one either essential or shared, none both.
 * Returns 0, or -1 with one line in msg ("--share-map PATH: ...") naming what is wrong:
 * unreadable, not JSON, no such layer, or a layer breaking a rule above. Every layer is
 * checked, so a file that passes is whole. */
int share_map_load(const char *path, int layer, share_map_t *m, char *msg, size_t len);
/* The same on text (path names it in messages). */
int share_map_parse(const char *text, const char *path, int layer, share_map_t *m, char *msg,
                    size_t len);
void share_map_free(share_map_t *m);

/* The synthetic map of `shared` of `heads` heads (0 <= shared < heads): the heads -
 * shared essential heads are spread evenly (essential number k is head
 * ceil((k+1) * heads / essential) - 1), and each other head shares the nearest essential
 * head before it, or the first one where none is before it. Spread this way, a GQA group
 * narrower than heads / essential can lose all its essential heads: its K is then never
 * read. */
HD int share_synthetic_target(int heads, int shared, int head)
{
    const int essential = heads - shared;
    const int before = (int)((long long)head * essential / heads);   /* essential heads below head */
    const int at = (int)(((long long)(before + 1) * heads + essential - 1) / essential) - 1;
    if (at == head) return head;
    const int k = before > 0 ? before - 1 : 0;
    return (int)(((long long)(k + 1) * heads + essential - 1) / essential) - 1;
}

/* Heads a fraction f of h shares: round(f * h). */
int share_count(int heads, double fraction);
/* The essential head whose weights head `head` of problem p uses: its --share-map, else
 * the synthetic map of --share-fraction. */
int problem_share_target(const problem_t *p, int head);
/* Essential heads of p's map. */
int problem_share_essential(const problem_t *p);

#ifdef __cplusplus
}
#endif
#endif
