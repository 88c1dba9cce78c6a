#include "share_map.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); goto fail; } while (0)

/* An exact non-negative integer below limit, else -1. */
static int json_index(const cJSON *v, int limit)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0) || d >= limit || d != floor(d)) return -1;
    return (int)d;
}

/* A whole decimal key "0".."limit-1" (no sign, no leading zero but "0"), else -1. */
static int key_index(const char *s, int limit)
{
    if (!s || !*s || (s[0] == '0' && s[1]) || strlen(s) > 9) return -1;
    long v = 0;
    for (const char *c = s; *c; ++c) {
        if (*c < '0' || *c > '9') return -1;
        v = v * 10 + (*c - '0');
    }
    return v < limit ? (int)v : -1;
}

/* Checks one layer object and, when out is set, writes its map there. The head count is
 * the essential heads plus the shared ones; every index must lie below it. */
static int layer_read(const cJSON *layer, const char *path, int index, share_map_t *out, int *heads_out,
                      char *msg, size_t len)
{
    int *to = NULL;
    const char *where = path;
    if (!cJSON_IsObject(layer)) FAIL("--share-map %s: layer %d is not an object", where, index);
    const cJSON *ess = cJSON_GetObjectItemCaseSensitive(layer, "essential_heads");
    const cJSON *share = cJSON_GetObjectItemCaseSensitive(layer, "share_to");
    if (!cJSON_IsArray(ess)) FAIL("--share-map %s: layer %d: essential_heads must be an array", where, index);
    if (!cJSON_IsObject(share))
        FAIL("--share-map %s: layer %d: share_to must be an object {\"head\": essential head}", where, index);
    int n_ess = cJSON_GetArraySize(ess), n_shared = cJSON_GetArraySize(share);
    int heads = n_ess + n_shared;
    if (n_ess < 1) FAIL("--share-map %s: layer %d: essential_heads is empty (some head must compute)", where, index);
    if (heads > SHARE_HEADS_MAX) FAIL("--share-map %s: layer %d: %d heads, more than %d", where, index, heads, SHARE_HEADS_MAX);
    to = malloc((size_t)heads * sizeof *to);
    if (!to) FAIL("--share-map %s: out of memory", where);
    for (int h = 0; h < heads; ++h) to[h] = -1;
    const cJSON *v;
    int slot = 0;
    cJSON_ArrayForEach(v, ess) {
        int h = json_index(v, heads);
        if (h < 0) FAIL("--share-map %s: layer %d: essential_heads[%d] is not a head index 0..%d", where, index,
                        slot, heads - 1);
        ++slot;
        if (to[h] >= 0) FAIL("--share-map %s: layer %d: essential head %d is listed twice", where, index, h);
        to[h] = h;
    }
    cJSON_ArrayForEach(v, share) {
        int h = key_index(v->string, heads);
        if (h < 0) FAIL("--share-map %s: layer %d: share_to key '%.20s' is not a head index 0..%d", where, index,
                        v->string ? v->string : "", heads - 1);
        int e = json_index(v, heads);
        if (e < 0) FAIL("--share-map %s: layer %d: share_to[%d] is not a head index 0..%d", where, index, h, heads - 1);
        if (to[h] == h) FAIL("--share-map %s: layer %d: head %d is essential and shared", where, index, h);
        if (to[h] >= 0) FAIL("--share-map %s: layer %d: head %d is shared twice", where, index, h);
        to[h] = -2 - e;   /* resolved below, once every essential head is known */
    }
    for (int h = 0; h < heads; ++h) {
        if (to[h] == -1) FAIL("--share-map %s: layer %d: head %d is neither essential nor shared", where, index, h);
        if (to[h] >= 0) continue;
        int e = -2 - to[h];
        if (to[e] != e) FAIL("--share-map %s: layer %d: head %d shares head %d, which is not essential", where, index, h, e);
    }
    for (int h = 0; h < heads; ++h)
        if (to[h] < 0) to[h] = -2 - to[h];
    *heads_out = heads;
    if (out) {
        out->heads = heads;
        out->essential = n_ess;
        out->share_to = to;
    } else {
        free(to);
    }
    return 0;
fail:
    free(to);
    return -1;
}

/* The layer objects of the file's top level, in order, into an array of n pointers. */
static int layers_of(const cJSON *root, const char *path, const cJSON ***out, int *n, char *msg, size_t len)
{
    const cJSON **at = NULL;
    const cJSON *list = root;
    if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "layers"))
        list = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!cJSON_IsArray(list) && !cJSON_IsObject(list))
        FAIL("--share-map %s: the top level must be an object or an array of layers", path);
    int count = cJSON_GetArraySize(list);
    if (count < 1) FAIL("--share-map %s: holds no layer", path);
    at = calloc((size_t)count, sizeof *at);
    if (!at) FAIL("--share-map %s: out of memory", path);
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, list) {
        int k = i;
        if (cJSON_IsObject(list)) {
            k = key_index(v->string, count);
            if (k < 0) FAIL("--share-map %s: key '%.20s' is not a layer number 0..%d", path, v->string ? v->string : "", count - 1);
            if (at[k]) FAIL("--share-map %s: layer %d is given twice", path, k);
        }
        at[k] = v;
        ++i;
    }
    *out = at;
    *n = count;
    return 0;
fail:
    free(at);
    return -1;
}

int share_map_parse(const char *text, const char *path, int layer, share_map_t *m, char *msg, size_t len)
{
    memset(m, 0, sizeof *m);
    const cJSON **layers = NULL;
    int n = 0;
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= text ? (long)(at - text) : -1;
        FAIL("--share-map %s: not valid JSON (near byte %ld)", path, off);
    }
    if (layers_of(root, path, &layers, &n, msg, len)) goto fail;
    if (layer < 0 || layer >= n) FAIL("--share-layer %d: %s holds layers 0..%d", layer, path, n - 1);
    int first_heads = 0;
    for (int i = 0; i < n; ++i) {
        int heads;
        if (layer_read(layers[i], path, i, i == layer ? m : NULL, &heads, msg, len)) goto fail;
        if (i == 0) first_heads = heads;
        if (heads != first_heads)
            FAIL("--share-map %s: layer %d has %d heads, layer 0 has %d", path, i, heads, first_heads);
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    m->layer = layer;
    m->layers = n;
    free(layers);
    cJSON_Delete(root);
    return 0;
fail:
    free(layers);
    cJSON_Delete(root);
    share_map_free(m);
    return -1;
}

int share_map_load(const char *path, int layer, share_map_t *m, char *msg, size_t len)
{
    memset(m, 0, sizeof *m);
    if (strlen(path) >= sizeof m->path || strpbrk(path, " ,\"\n")) {
        snprintf(msg, len, "--share-map: the path must be under %zu characters, without spaces, commas or quotes",
                 sizeof m->path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, len, "--share-map %s: cannot read it: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *more = cap < (64u << 20) ? realloc(text, cap * 2) : NULL;
            if (!more) { free(text); text = NULL; break; }
            text = more;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!text || bad) {
        free(text);
        snprintf(msg, len, "--share-map %s: cannot read it (%s)", path, bad ? "read error" : "over 64 MiB or out of memory");
        return -1;
    }
    text[n] = '\0';
    if (memchr(text, '\0', n)) {
        free(text);
        snprintf(msg, len, "--share-map %s: not valid JSON (a NUL byte)", path);
        return -1;
    }
    int rc = share_map_parse(text, path, layer, m, msg, len);
    free(text);
    return rc;
}

void share_map_free(share_map_t *m)
{
    free(m->share_to);
    m->share_to = NULL;
    m->heads = m->essential = 0;
}

int share_count(int heads, double fraction) { return (int)lround(fraction * heads); }

int problem_share_target(const problem_t *p, int head)
{
    if (p->share_map) return p->share_map->share_to[head];
    return share_synthetic_target(p->heads, share_count(p->heads, p->share_fraction), head);
}

int problem_share_essential(const problem_t *p)
{
    if (p->share_map) return p->share_map->essential;
    return p->heads - share_count(p->heads, p->share_fraction);
}
