/* Model presets: the paper's shapes and the whole-model memory arithmetic. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "../problem/presets.h"
#include "../problem/presets_internal.h"
#include "../problem/device_info.h"

static void paper_shapes(void **state)
{
    (void)state;
    const model_preset_t *m = preset_find("7b");
    assert_non_null(m);
    assert_int_equal(m->heads, 32);
    assert_int_equal(m->kv_heads, 32);
    assert_int_equal(m->head_dim, 128);
    assert_int_equal(m->layers, 32);
    m = preset_find("7b-gqa");
    assert_non_null(m);
    assert_int_equal(m->kv_heads, 8);
    assert_int_equal(m->layers, 32);
    m = preset_find("mistral-7b");
    assert_non_null(m);
    assert_int_equal(m->heads, 32);
    assert_int_equal(m->kv_heads, 8);
    /* Table 4: groups, layers and parameters of the 1B family */
    static const struct { const char *name; int g, layers; double params; } t4[] = {
        { "1b-mh", 20, 12, 1.077e9 }, { "1b-mg", 4, 15, 1.156e9 }, { "1b-mq", 1, 16, 1.193e9 },
    };
    for (int i = 0; i < 3; i++) {
        m = preset_find(t4[i].name);
        assert_non_null(m);
        assert_int_equal(m->kv_heads, t4[i].g);
        assert_int_equal(m->head_dim, 128);
        assert_int_equal(m->layers, t4[i].layers);
        assert_true(m->params == t4[i].params);
        assert_int_equal(m->heads % m->kv_heads, 0);
    }
    assert_null(preset_find("13b"));
    assert_null(preset_find(NULL));
    assert_int_equal(model_preset_count, 6);
    for (int i = 0; i < model_preset_count; i++) {
        assert_true(strlen(model_presets[i].about) > 10);
        assert_int_equal(model_presets[i].heads % model_presets[i].kv_heads, 0);
    }
}

static void weights_and_whole_model_bytes(void **state)
{
    (void)state;
    const model_preset_t *m = preset_find("7b");
    assert_true(preset_weight_bytes(m) == 2.0 * m->params);
    assert_true(fabs(preset_weight_bytes(m) - 13.476e9) < 1e6);
    /* one layer's contiguous fp16 cache, W = 1, 8k + 128 keys: 2 * g * L * d * 2 bytes */
    double kv = 2.0 * 32 * (8192 + 128) * 128 * 2;
    assert_true(preset_model_bytes(m, kv) == preset_weight_bytes(m) + 32 * kv);
    assert_true(preset_model_bytes(m, 0) == preset_weight_bytes(m));
}

static void fits_or_not_on_80_gb(void **state)
{
    (void)state;
    const double gpu = 80e9;
    const model_preset_t *m = preset_find("7b");
    double kv_one = 2.0 * 32 * (8192 + 128) * 128 * 2;   /* 136 MB per layer per stream */
    /* W = 32 replicated streams: 32 * 32 layers * 136 MB = 139 GB: the paper's OOM side */
    assert_true(preset_fits(m, kv_one, gpu));
    assert_false(preset_fits(m, 32 * kv_one, gpu));
    /* the largest W that fits: (80 GB - 13.5 GB) / (32 * 136 MB) = 15.2 */
    assert_true(preset_fits(m, 15 * kv_one, gpu));
    assert_false(preset_fits(m, 16 * kv_one, gpu));
    /* GQA holds a quarter of the cache: W = 60 fits, 62 does not */
    const model_preset_t *q = preset_find("7b-gqa");
    double kv_gqa = kv_one / 4;
    assert_true(preset_fits(q, 60 * kv_gqa, gpu));
    assert_false(preset_fits(q, 64 * kv_gqa, gpu));
    /* bifurcated: the context once plus W decoded tails; W = 256 fits (35 GB),
     * W = 1024 does not (86 GB) */
    double kv_bif256 = 2.0 * 32 * 128 * 2 * (8192 + 256.0 * 128);
    double kv_bif1024 = 2.0 * 32 * 128 * 2 * (8192 + 1024.0 * 128);
    assert_true(preset_fits(m, kv_bif256, gpu));
    assert_false(preset_fits(m, kv_bif1024, gpu));
}

/* The runner's rule: the whole model fits with MEM_HEADROOM left for the CUDA context
 * and cuBLAS, the same headroom a single configuration keeps (mem_plan_fits). */
static void fits_keeps_the_headroom(void **state)
{
    (void)state;
    const model_preset_t *m = preset_find("7b");
    const double kv = 2.0 * 32 * (8192 + 128) * 128 * 2;
    const double need = preset_model_bytes(m, kv);
    assert_true(preset_fits(m, kv, need + MEM_HEADROOM));
    assert_false(preset_fits(m, kv, need + MEM_HEADROOM - 4096));
    assert_false(preset_fits(m, kv, need));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paper_shapes),
        cmocka_unit_test(weights_and_whole_model_bytes),
        cmocka_unit_test(fits_or_not_on_80_gb),
        cmocka_unit_test(fits_keeps_the_headroom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
