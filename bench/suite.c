/* Suite files: each line a sub-grid in the options' syntax (suite.h). */
#include "suite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ATTNBENCH_SUITE_DIR
#define ATTNBENCH_SUITE_DIR "bench/suites"
#endif

#define FAIL(...) do { snprintf(msg, len, __VA_ARGS__); return -1; } while (0)

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
/* A relative --share-map FILE of a suite line names a file beside the suite (dir), or,
 * where there is none (a suite written elsewhere from a shipped one's lines), beside the
 * shipped suites (ATTNBENCH_SUITE_DIR, else bench/suites of the working directory); the
 * word is rewritten into joined, which outlives the line's parse. A file found nowhere
 * stays as written, for the map reader to name. */
static void share_map_beside(char **argv, int argc, const char *dir, char *joined, size_t len)
{
    static const char opt[] = "--share-map";
    for (int i = 1; i < argc; ++i) {
        const char *file = NULL, *prefix = "";
        if (!strcmp(argv[i], opt) && i + 1 < argc) file = argv[++i];
        else if (!strncmp(argv[i], opt, sizeof opt - 1) && argv[i][sizeof opt - 1] == '=') {
            file = argv[i] + sizeof opt;
            prefix = "--share-map=";
        }
        if (!file || !*file || file[0] == '/') continue;
        const char *const dirs[] = {dir, ATTNBENCH_SUITE_DIR, "bench/suites"};
        for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; ++k) {
            snprintf(joined, len, "%s/%s", dirs[k], file);
            if (access(joined, R_OK) == 0) {
                snprintf(joined, len, "%s%s/%s", prefix, dirs[k], file);
                argv[i] = joined;
                break;
            }
        }
    }
}

static int suite_line(char *line, const char *dir, const options_t *base, suite_entry_t *e, char *msg,
                      size_t len)
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
    char joined[4096 + 32];
    share_map_beside(argv, argc, dir, joined, sizeof joined);
    options_t o;
    if (options_parse_suite_line(argc, argv, &o, msg, len)) return -1;
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

    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
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
            if (suite_line(p, dir, base, &block[k], why, sizeof why)) {
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
