/* What presets.c exposes to its tests only: the terms of preset_fits.
 * Not part of the module's interface: its own source and its CPU tests include this. */
#ifndef ATTNBENCH_PRESETS_INTERNAL_H
#define ATTNBENCH_PRESETS_INTERNAL_H

#include "presets.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fp16 weights. */
double preset_weight_bytes(const model_preset_t *m);
/* The whole model's need: fp16 weights + `layers` times one layer's KV cache bytes. */
double preset_model_bytes(const model_preset_t *m, double kv_bytes_per_layer);

#ifdef __cplusplus
}
#endif
#endif
