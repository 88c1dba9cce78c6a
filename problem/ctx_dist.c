#include "ctx_dist.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logical_data.h"

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

/* A positive size as --ctx writes it: digits with an optional k (1024) or m (1048576). */
static int size_parse(const char *s, size_t n, int *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    long long mult = 1;
    char last = buf[n - 1];
    if (last == 'k' || last == 'K') mult = 1024;
    if (last == 'm' || last == 'M') mult = 1024 * 1024;
    if (mult > 1) buf[--n] = '\0';
    if (n == 0) return -1;
    for (size_t i = 0; i < n; ++i)
        if (buf[i] < '0' || buf[i] > '9') return -1;
    errno = 0;
    const long long digits = strtoll(buf, NULL, 10);
    /* bounded before the multiplication, which could otherwise overflow */
    if (errno || digits <= 0 || digits > INT_MAX / mult) return -1;
    *out = (int)(digits * mult);
    return 0;
}

static int parse_uniform(const char *args, ctx_dist_t *d, char *msg, size_t len)
{
    const char *c1 = strchr(args, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    const char *end_hi = c2 ? c2 : args + strlen(args);
    if (!c1 || size_parse(args, (size_t)(c1 - args), &d->lo) != 0 ||
        size_parse(c1 + 1, (size_t)(end_hi - c1 - 1), &d->hi) != 0)
        FAIL("--ctx-dist uniform:%s: want uniform:LO:HI[:SEED], LO and HI positive sizes (8k)", args);
    if (d->lo > d->hi) FAIL("--ctx-dist uniform:%s: LO %d is above HI %d", args, d->lo, d->hi);
    d->seed = 1;
    if (c2) {
        char *e = NULL;
        errno = 0;
        unsigned long long s = strtoull(c2 + 1, &e, 10);
        if (!c2[1] || *e || errno || c2[1] == '-')
            FAIL("--ctx-dist uniform:%s: SEED must be a non-negative integer", args);
        d->seed = s;
    }
    return 0;
}

static int parse_file(const char *path, ctx_dist_t *d, char *msg, size_t len)
{
    if (!*path) FAIL("--ctx-dist file: needs a path (file:PATH)");
    if (strpbrk(path, " ,\t")) FAIL("--ctx-dist file:%s: the path must hold no space or comma", path);
    /* a regular file only: a FIFO or a terminal would block the parser */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    if (fd < 0) FAIL("--ctx-dist file:%s: cannot read it (%s)", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        FAIL("--ctx-dist file:%s: not a regular file", path);
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        FAIL("--ctx-dist file:%s: cannot read it (%s)", path, strerror(errno));
    }
    char line[128];
    int cap = 0, lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        ++lineno;
        size_t n = strcspn(line, "\r\n");
        int v;
        if (size_parse(line, n, &v) != 0) {
            snprintf(msg, len, "--ctx-dist file:%s: line %d: '%.*s' is not a positive length", path, lineno,
                     (int)(n > 32 ? 32 : n), line);
            rc = -1;
            break;
        }
        if (d->n == CTX_DIST_FILE_MAX) {
            snprintf(msg, len, "--ctx-dist file:%s: more than %d lengths", path, CTX_DIST_FILE_MAX);
            rc = -1;
            break;
        }
        if (d->n == cap) {
            cap = cap ? 2 * cap : 64;
            int *grown = realloc(d->lens, (size_t)cap * sizeof *grown);
            if (!grown) {
                snprintf(msg, len, "--ctx-dist file:%s: out of memory", path);
                rc = -1;
                break;
            }
            d->lens = grown;
        }
        d->lens[d->n++] = v;
    }
    fclose(f);
    if (rc == 0 && d->n == 0) {
        snprintf(msg, len, "--ctx-dist file:%s: holds no lengths (one a line, one line a request)", path);
        rc = -1;
    }
    return rc;
}

int ctx_dist_parse(const char *s, ctx_dist_t *out, char *msg, size_t len)
{
    memset(out, 0, sizeof *out);
    if (strlen(s) >= CTX_DIST_SPEC_LEN) FAIL("--ctx-dist: spec longer than %d characters", CTX_DIST_SPEC_LEN - 1);
    snprintf(out->spec, sizeof out->spec, "%s", s);
    int rc;
    if (strcmp(s, "fixed") == 0) {
        out->kind = CTX_DIST_FIXED;
        rc = 0;
    } else if (strncmp(s, "uniform:", 8) == 0) {
        out->kind = CTX_DIST_UNIFORM;
        rc = parse_uniform(s + 8, out, msg, len);
    } else if (strncmp(s, "file:", 5) == 0) {
        out->kind = CTX_DIST_FILE;
        rc = parse_file(s + 5, out, msg, len);
    } else {
        FAIL("--ctx-dist '%s': want fixed, uniform:LO:HI[:SEED] or file:PATH", s);
    }
    if (rc != 0) ctx_dist_free(out);
    return rc;
}

void ctx_dist_free(ctx_dist_t *d)
{
    free(d->lens);
    d->lens = NULL;
    d->n = 0;
}

int ctx_dist_ragged(const ctx_dist_t *d) { return d && d->kind != CTX_DIST_FIXED; }

int ctx_dist_len(const ctx_dist_t *d, int ctx, int r)
{
    if (!ctx_dist_ragged(d)) return ctx;
    if (d->kind == CTX_DIST_FILE) return d->lens[r];
    const uint64_t span = (uint64_t)(d->hi - d->lo) + 1;
    return d->lo + (int)(splitmix64(splitmix64(d->seed) ^ (uint64_t)r) % span);
}

int ctx_dist_check_batch(const ctx_dist_t *d, int batch, char *msg, size_t len)
{
    if (d && d->kind == CTX_DIST_FILE && d->n != batch)
        FAIL("--ctx-dist %s holds %d lengths but --batch is %d (one line a request)", d->spec, d->n, batch);
    return 0;
}
