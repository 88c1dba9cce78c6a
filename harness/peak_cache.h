/* The peaks `peak` measured on a card, kept for an hour in a small JSON file per card,
 * so that a `run` of one row, or a short sweep, does not spend the probe's 1.5 s again
 * (docs/DESIGN.md, "Peaks"). A kept figure is used only for the same card (its UUID),
 * driver, maximum clocks and attnbench revision; `attnbench peak` always measures and
 * rewrites it. Callable from C11. */
#ifndef ATTNBENCH_PEAK_CACHE_H
#define ATTNBENCH_PEAK_CACHE_H

#include <stddef.h>
#include "peak.h"
#include "nvml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds a kept measurement stays good. */
#define PEAK_CACHE_MAX_AGE_S 3600.0

/* What a kept measurement must match. */
typedef struct peak_card {
    char uuid[48];          /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L */
    char name[256];         /* as CUDA names it */
    int driver;             /* cudaDriverGetVersion */
    double max_sm_mhz, max_mem_mhz; /* NVML's; 0 where unknown */
    char revision[64];      /* the probe is its revision's */
} peak_card_t;

/* Where the card's file is: $XDG_CACHE_HOME/attnbench/peak-<uuid>.json, or under
 * $HOME/.cache. Returns -1 (path empty) when neither is set or the path is too long. */
int peak_cache_path(const char *uuid, char *path, size_t len);

/* Reads path into *out and *measured_at (seconds since the epoch) when it holds this
 * card's measurement, taken at most PEAK_CACHE_MAX_AGE_S before now and not after it,
 * with every rate above 0. Returns 0 then, -1 otherwise (*out untouched). */
int peak_cache_load(const char *path, const peak_card_t *card, double now, peak_t *out,
                    double *measured_at);

/* Writes the measurement taken at `now` for the card, making the directory, through a
 * temporary file renamed into place (a concurrent reader sees the old file or the new
 * one). Returns 0, or -1 when it cannot be written. */
int peak_cache_store(const char *path, const peak_card_t *card, double now, const peak_t *p);

/* Keeps p, just measured on the current CUDA device (clocks from nv), in its card's file,
 * whose path goes to path. Returns 0, or -1 (path empty) where the card or the file
 * cannot be named or written. */
int peak_keep(const nvml_info_t *nv, const char *revision, const peak_t *p, char *path, size_t len);

/* The peaks of the current device: the kept ones where peak_cache_load finds them
 * (*measured_at their time), else measured (peak_measure), kept, and *measured_at 0.
 * path receives the file's path, empty where none could be named or written. */
cudaError_t peak_get(const device_info_t *dev, const nvml_info_t *nv, const char *revision, peak_t *out,
                     double *measured_at, char *path, size_t path_len);

#ifdef __cplusplus
}
#endif
#endif
