/* Model presets (--model): the attention shapes and layer counts of the paper's
 * models, and the whole-model memory arithmetic that decides `oom` the way the
 * paper's tables do (weights plus every layer's cache must fit). */
#ifndef ATTNBENCH_PRESETS_H
#define ATTNBENCH_PRESETS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct model_preset {
    const char *name;
    const char *about;   /* where the numbers come from */
    int heads, kv_heads, head_dim, layers;
    double params;       /* parameter count */
} model_preset_t;

extern const model_preset_t model_presets[];
extern const int model_preset_count;

/* NULL if unknown. */
const model_preset_t *preset_find(const char *name);
/* 1 when the whole model (fp16 weights and `layers` times kv_bytes_per_layer of KV
 * cache) fits in device_bytes of GPU memory with MEM_HEADROOM (device_info.h) left
 * over, else 0: the rule that makes a model preset's row `oom`. */
int preset_fits(const model_preset_t *m, double kv_bytes_per_layer, double device_bytes);

#ifdef __cplusplus
}
#endif
#endif
