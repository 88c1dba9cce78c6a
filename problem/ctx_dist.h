/* Ragged batches (--ctx-dist): each request's own context length. `fixed` gives every
 * request --ctx; `uniform:LO:HI[:SEED]` draws each length from LO..HI inclusive with a
 * seed of the distribution's own (1 unless given), so that every kernel, rerun and GPU
 * sees the same batch for the same spec; `file:PATH` reads one length a line, one line
 * a request. */
#ifndef ATTNBENCH_CTX_DIST_H
#define ATTNBENCH_CTX_DIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CTX_DIST_FIXED, CTX_DIST_UNIFORM, CTX_DIST_FILE } ctx_dist_kind_t;

#define CTX_DIST_SPEC_LEN 160
/* More requests than a file of lengths may list. */
#define CTX_DIST_FILE_MAX (1 << 20)

typedef struct ctx_dist {
    ctx_dist_kind_t kind;
    int lo, hi;             /* uniform: inclusive bounds */
    uint64_t seed;          /* uniform: the draw's seed */
    int n;                  /* file: lengths read */
    int *lens;              /* file: [n], malloc'd (ctx_dist_free) */
    char spec[CTX_DIST_SPEC_LEN]; /* as given, for the row's args and ctx_dist column */
} ctx_dist_t;

/* Parses a spec (reading the file of file:PATH). 0, or -1 with one line in msg naming
 * --ctx-dist and the rule broken: unknown kind, a bound that is not a positive size
 * (k/m suffixes as --ctx), LO above HI, an unreadable file, a line that is not a
 * positive size, an empty file, a path with a space or a comma (the row's args could
 * not rerun it). */
int ctx_dist_parse(const char *s, ctx_dist_t *out, char *msg, size_t len);
void ctx_dist_free(ctx_dist_t *d);

/* Whether the lengths differ by request (anything but fixed). */
int ctx_dist_ragged(const ctx_dist_t *d);

/* Request r's context length; ctx for fixed (and for a NULL d). */
int ctx_dist_len(const ctx_dist_t *d, int ctx, int r);

/* Whether the distribution can give batch requests: 0, or -1 with one line in msg
 * (a file of another number of lengths than --batch). */
int ctx_dist_check_batch(const ctx_dist_t *d, int batch, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif
