#include "device.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const skipped_words[] = {"nvidia", "geforce", "tesla", "quadro"};

/* Length of the word starting at s (up to a space). */
static size_t word_length(const char *s)
{
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n])) ++n;
    return n;
}

static int is_skipped(const char *w, size_t n)
{
    for (size_t i = 0; i < sizeof skipped_words / sizeof skipped_words[0]; ++i)
        if (strlen(skipped_words[i]) == n && strncasecmp(w, skipped_words[i], n) == 0) return 1;
    return 0;
}

/* Appends the [a-z0-9] characters of w[0..n) (stopping at '-') to key. */
static void append_token(char *key, size_t len, size_t *used, const char *w, size_t n)
{
    for (size_t i = 0; i < n && w[i] != '-'; ++i) {
        unsigned char c = (unsigned char)tolower((unsigned char)w[i]);
        if (!(isdigit(c) || (c >= 'a' && c <= 'z'))) continue;
        if (*used + 1 >= len) break;
        key[(*used)++] = (char)c;
    }
    key[*used] = '\0';
}

void gpu_key_from_name(const char *name, char *key, size_t len)
{
    if (!key || len == 0) return;
    key[0] = '\0';
    size_t used = 0;
    const char *s = name ? name : "";
    while (*s) {
        while (isspace((unsigned char)*s)) ++s;
        size_t n = word_length(s);
        if (n == 0) break;
        if (is_skipped(s, n)) { s += n; continue; }
        append_token(key, len, &used, s, n);
        /* "RTX 4090": the series word alone says nothing, the model number follows. */
        int series_only = (n == 3 && (strncasecmp(s, "rtx", 3) == 0 || strncasecmp(s, "gtx", 3) == 0));
        s += n;
        if (series_only) {
            while (isspace((unsigned char)*s)) ++s;
            append_token(key, len, &used, s, word_length(s));
        }
        break;
    }
    if (used == 0) snprintf(key, len, "gpu");
}
