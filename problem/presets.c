/* The paper's models. Shapes and layer counts are the paper's (Tables 1, 4, 6, 7, 8);
 * parameter counts are the paper's where it gives one (Table 4), otherwise computed
 * from the published architecture, as each `about` says. */
#include "presets.h"
#include "presets_internal.h"
#include "device_info.h"

#include <string.h>

const model_preset_t model_presets[] = {
    { "7b",
      "7B multi-head model of Tables 1/6 (32 layers, h=32, d=128, hidden 4096); "
      "parameters from the Llama-2-7B architecture GPT-Fast uses (vocab 32000, ffn 11008)",
      32, 32, 128, 32, 6.738e9 },
    { "7b-gqa",
      "GQA variant of the 7B model, Table 7 (g=8); parameters computed from the "
      "Llama-2-7B architecture with k/v projections cut to 8 heads",
      32, 8, 128, 32, 5.933e9 },
    { "mistral-7b",
      "Mistral-7B of Table 8 (32 layers, h=32, g=8, d=128); parameters as published "
      "by Mistral AI; the paper's TP=2 split is --tp 2 (the paper8 suite)",
      32, 8, 128, 32, 7.242e9 },
    { "1b-mh",
      "1B multi-head model of Table 4 (g=20, d=128, 12 layers, 1.077B parameters); "
      "h=20 keeps the MH hidden size 2560 across the family, as in Table 3",
      20, 20, 128, 12, 1.077e9 },
    { "1b-mg",
      "1B multi-group model of Table 4 (g=4, d=128, 15 layers, 1.156B parameters); "
      "h=20 keeps the MH hidden size 2560 across the family, as in Table 3",
      20, 4, 128, 15, 1.156e9 },
    { "1b-mq",
      "1B multi-query model of Table 4 (g=1, d=128, 16 layers, 1.193B parameters); "
      "h=20 keeps the MH hidden size 2560 across the family, as in Table 3",
      20, 1, 128, 16, 1.193e9 },
};
const int model_preset_count = (int)(sizeof model_presets / sizeof model_presets[0]);

const model_preset_t *preset_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (int i = 0; i < model_preset_count; i++)
        if (strcmp(model_presets[i].name, name) == 0)
            return &model_presets[i];
    return NULL;
}

double preset_weight_bytes(const model_preset_t *m)
{
    return 2.0 * m->params;
}

double preset_model_bytes(const model_preset_t *m, double kv_bytes_per_layer)
{
    return preset_weight_bytes(m) + (double)m->layers * kv_bytes_per_layer;
}

int preset_fits(const model_preset_t *m, double kv_bytes_per_layer, double device_bytes)
{
    return preset_model_bytes(m, kv_bytes_per_layer) + (double)MEM_HEADROOM <= device_bytes;
}
