#include "peak_cache.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

/* A kept file is a few hundred bytes; anything much longer is not ours. */
#define PEAK_CACHE_FILE_MAX 4096

int peak_cache_path(const char *uuid, char *path, size_t len)
{
    if (len) path[0] = '\0';
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(path, len, "%s/attnbench/peak-%s.json", xdg, uuid);
    else if (home && home[0] == '/') n = snprintf(path, len, "%s/.cache/attnbench/peak-%s.json", home, uuid);
    else return -1;
    if (n < 0 || (size_t)n >= len) {
        if (len) path[0] = '\0';
        return -1;
    }
    return 0;
}

/* The whole file as a string (caller frees), NULL when unreadable or too long. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = malloc(PEAK_CACHE_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, PEAK_CACHE_FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!text || n > PEAK_CACHE_FILE_MAX) {
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

static int same_string(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

static int number(const cJSON *o, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return -1;
    *out = v->valuedouble;
    return 0;
}

int peak_cache_load(const char *path, const peak_card_t *card, double now, peak_t *out,
                    double *measured_at)
{
    char *text = slurp(path);
    if (!text) return -1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    peak_t p;
    memset(&p, 0, sizeof p);
    double at = 0, driver = 0, sm = 0, mem = 0;
    int ok = cJSON_IsObject(o) && same_string(o, "uuid", card->uuid) && same_string(o, "name", card->name) &&
             same_string(o, "revision", card->revision) && number(o, "driver", &driver) == 0 &&
             driver == card->driver && number(o, "max_sm_mhz", &sm) == 0 && sm == card->max_sm_mhz &&
             number(o, "max_mem_mhz", &mem) == 0 && mem == card->max_mem_mhz &&
             number(o, "measured_at", &at) == 0 && at <= now && now - at <= PEAK_CACHE_MAX_AGE_S &&
             number(o, "read_gbps", &p.read_gbps) == 0 && p.read_gbps > 0 &&
             number(o, "l2_read_gbps", &p.l2_read_gbps) == 0 && p.l2_read_gbps > 0 &&
             number(o, "copy_gbps", &p.copy_gbps) == 0 && p.copy_gbps > 0 &&
             number(o, "tc_tflops", &p.tc_tflops) == 0 && p.tc_tflops > 0;
    if (ok) {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "read_shape");
        ok = cJSON_IsString(shape) && strlen(shape->valuestring) < sizeof p.read_shape;
        if (ok) strcpy(p.read_shape, shape->valuestring);
    }
    cJSON_Delete(o);
    if (!ok) return -1;
    *out = p;
    *measured_at = at;
    return 0;
}

/* mkdir -p of path's directory. */
static int make_parent(const char *path)
{
    char dir[1024];
    if (strlen(path) >= sizeof dir) return -1;
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    for (char *s = dir + 1; *s; ++s) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
        *s = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int peak_cache_store(const char *path, const peak_card_t *card, double now, const peak_t *p)
{
    if (!path[0] || make_parent(path) != 0) return -1;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "uuid", card->uuid);
    cJSON_AddStringToObject(o, "name", card->name);
    cJSON_AddNumberToObject(o, "driver", card->driver);
    cJSON_AddNumberToObject(o, "max_sm_mhz", card->max_sm_mhz);
    cJSON_AddNumberToObject(o, "max_mem_mhz", card->max_mem_mhz);
    cJSON_AddStringToObject(o, "revision", card->revision);
    cJSON_AddNumberToObject(o, "measured_at", now);
    cJSON_AddNumberToObject(o, "read_gbps", p->read_gbps);
    cJSON_AddStringToObject(o, "read_shape", p->read_shape);
    cJSON_AddNumberToObject(o, "l2_read_gbps", p->l2_read_gbps);
    cJSON_AddNumberToObject(o, "copy_gbps", p->copy_gbps);
    cJSON_AddNumberToObject(o, "tc_tflops", p->tc_tflops);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text) return -1;
    char tmp[1100];
    int rc = -1;
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) < (int)sizeof tmp) {
        FILE *f = fopen(tmp, "w");
        if (f) {
            int w = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
            if (fclose(f) == 0 && w && rename(tmp, path) == 0) rc = 0;
            else remove(tmp);
        }
    }
    free(text);
    return rc;
}

/* The current CUDA device's card: UUID, name and driver from CUDA, clocks from nv,
 * revision as given. Returns -1 when CUDA cannot say. */
static int card_current(const nvml_info_t *nv, const char *revision, peak_card_t *card)
{
    memset(card, 0, sizeof *card);
    struct cudaDeviceProp prop;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
        cudaDriverGetVersion(&card->driver) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(card->uuid, sizeof card->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
             u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    snprintf(card->name, sizeof card->name, "%s", prop.name);
    snprintf(card->revision, sizeof card->revision, "%s", revision);
    card->max_sm_mhz = nv->max_sm_mhz;
    card->max_mem_mhz = nv->max_mem_mhz;
    return 0;
}

/* The current card and its file's path: 0, or -1 (path empty) where either cannot be named. */
static int card_and_path(const nvml_info_t *nv, const char *revision, peak_card_t *card, char *path, size_t len)
{
    if (card_current(nv, revision, card) == 0 && peak_cache_path(card->uuid, path, len) == 0) return 0;
    if (len) path[0] = '\0';
    return -1;
}

int peak_keep(const nvml_info_t *nv, const char *revision, const peak_t *p, char *path, size_t len)
{
    peak_card_t card;
    if (card_and_path(nv, revision, &card, path, len) == 0 && peak_cache_store(path, &card, (double)time(NULL), p) == 0)
        return 0;
    if (len) path[0] = '\0';
    return -1;
}

cudaError_t peak_get(const device_info_t *dev, const nvml_info_t *nv, const char *revision, peak_t *out,
                     double *measured_at, char *path, size_t path_len)
{
    *measured_at = 0;
    peak_card_t card;
    const int named = card_and_path(nv, revision, &card, path, path_len) == 0;
    if (named && peak_cache_load(path, &card, (double)time(NULL), out, measured_at) == 0) return cudaSuccess;
    cudaError_t e = peak_measure(dev, out);
    /* a card that cannot be named, or a cache that cannot be written, only costs the
     * next run the measurement again */
    if (e == cudaSuccess && named && peak_cache_store(path, &card, (double)time(NULL), out) != 0) path[0] = '\0';
    return e;
}
