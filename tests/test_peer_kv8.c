/* The peers and an 8-bit KV cache, their static side (no GPU): where they were built,
 * `flashinfer` takes an e4m3 cache with per-tensor scales at d 128 (fp16 and bf16
 * queries, its CUDA-core and tensor-core paths), `xqa` at the configurations built for
 * it (fp16 queries, d 128, h/g 4 and 32); each turns away per-head scales and int8 with
 * a reason, and so do `flashinfer-cascade` and `cudnn` for any 8-bit cache. bytes count
 * the cache at 1 B an element (and FlashInfer's pass over the output for V's scale).
 * Peers not built are skipped: their rows say `make peers`. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "../kernels/registry.h"
#include "test_problem.h"

/* The peer `name`, or a skip where it was built without its package. */
static const attn_kernel_t *built_peer(const char *name)
{
    const attn_kernel_t *k = attn_kernel_find(name);
    assert_non_null(k);
    assert_non_null(k->peer);
    if (strstr(k->peer, "not built")) skip();
    return k;
}

/* The batch grid's shape: h 32, d 128, paged in 64-token blocks; an e4m3 cache with
 * per-tensor scales. */
static problem_t fp8_problem(int batch, int kv_heads)
{
    problem_t p = test_paged_problem(batch, 1, 32, kv_heads, 128, 8192, 128, 64);
    p.kv_quant = KV_QUANT_FP8;
    p.kv_scale = KV_SCALE_TENSOR;
    char msg[256];
    assert_int_equal(problem_validate(&p, msg, sizeof msg), 0);
    return p;
}

static void assert_reason(const attn_kernel_t *k, const problem_t *p, const char *part)
{
    const char *why = k->unsupported(p);
    assert_non_null(why);
    if (!strstr(why, part)) fail_msg("%s: \"%s\" does not say \"%s\"", k->name, why, part);
}

static void test_flashinfer_takes_e4m3(void **state)
{
    (void)state;
    const attn_kernel_t *k = built_peer("flashinfer");
    assert_non_null(strstr(k->supports, "e4m3"));
    const int kv_heads[] = {32, 8, 4, 1}; /* p 1, 4, 8 on CUDA cores; 32 on tensor cores */
    for (int i = 0; i < 4; ++i)
        for (int bf16 = 0; bf16 < 2; ++bf16) {
            problem_t p = fp8_problem(8, kv_heads[i]);
            p.dtype = bf16 ? DTYPE_BF16 : DTYPE_FP16;
            assert_null(k->unsupported(&p));
            p.cache = CACHE_CONTIGUOUS;
            assert_null(k->unsupported(&p));
        }
    problem_t p = fp8_problem(8, 8);
    p.kv_scale = KV_SCALE_HEAD;
    assert_reason(k, &p, "per kv head");
    p = fp8_problem(8, 8);
    p.kv_quant = KV_QUANT_INT8;
    assert_reason(k, &p, "int8");
    p = fp8_problem(8, 8);
    p.head_dim = 64;
    assert_reason(k, &p, "head_dim 128");
    p = fp8_problem(8, 8);
    p.dtype = DTYPE_FP32;
    assert_non_null(k->unsupported(&p));
}

static void test_xqa_takes_e4m3_where_built(void **state)
{
    (void)state;
    const attn_kernel_t *k = built_peer("xqa");
    assert_non_null(strstr(k->supports, "e4m3"));
    for (int g = 8; g >= 1; g -= 7) { /* h/g 4 and 32 */
        problem_t p = fp8_problem(32, g);
        assert_null(k->unsupported(&p));
        p.cache = CACHE_CONTIGUOUS;
        assert_null(k->unsupported(&p));
    }
    problem_t p = fp8_problem(8, 8);
    p.dtype = DTYPE_BF16;
    assert_reason(k, &p, "fp16 queries");
    p = fp8_problem(8, 4); /* h/g 8: not built for e4m3 */
    assert_reason(k, &p, "h/g 4 or 32");
    p = fp8_problem(8, 8);
    p.kv_scale = KV_SCALE_HEAD;
    assert_reason(k, &p, "per kv head");
    p = fp8_problem(8, 8);
    p.kv_quant = KV_QUANT_INT8;
    assert_reason(k, &p, "int8");
    /* the 16-bit configurations are untouched */
    p = fp8_problem(8, 4);
    p.kv_quant = KV_QUANT_NONE;
    assert_null(k->unsupported(&p));
}

static void test_other_peers_decline_8bit(void **state)
{
    (void)state;
    const char *names[] = {"flashinfer-cascade", "cudnn"};
    for (int i = 0; i < 2; ++i) {
        const attn_kernel_t *k = attn_kernel_find(names[i]);
        assert_non_null(k);
        problem_t p = test_paged_problem(1, 4, 32, 8, 128, 2048, 128, 64);
        p.kv_quant = KV_QUANT_FP8;
        assert_non_null(k->unsupported(&p));
        p.kv_quant = KV_QUANT_INT8;
        assert_non_null(k->unsupported(&p));
        if (strstr(k->peer, "not built")) continue;
        assert_reason(k, &p, "8-bit cache");
        p.kv_quant = KV_QUANT_NONE;
        assert_null(k->unsupported(&p));
    }
}

static attn_io_t io_of(const attn_kernel_t *k, const problem_t *p)
{
    const device_info_t dev = test_h100();
    attn_plan_t plan;
    memset(&plan, 0, sizeof plan);
    k->plan(p, &dev, &plan);
    return k->io(p, &plan);
}

/* The cache at 1 B an element: an e4m3 row's bytes fall by exactly the K/V bytes the
 * narrower cache saves, plus for FlashInfer one more read and write of the output. */
static void test_bytes_count_the_stored_width(void **state)
{
    (void)state;
    const char *names[] = {"flashinfer", "xqa"};
    for (int i = 0; i < 2; ++i) {
        const attn_kernel_t *k = built_peer(names[i]);
        problem_t p8 = fp8_problem(32, 8), p16 = p8;
        p16.kv_quant = KV_QUANT_NONE;
        const double saved = io_kv_bytes_stored(&p16) - io_kv_bytes_stored(&p8);
        assert_true(fabs(saved - io_kv_bytes_stored(&p16) / 2.0) < 1.0);
        const double scale_pass = strcmp(names[i], "flashinfer") ? 0.0 : io_qo_bytes(&p8);
        const double diff = io_of(k, &p16).bytes - io_of(k, &p8).bytes;
        if (fabs(diff - (saved - scale_pass)) > 1.0)
            fail_msg("%s: bytes fall by %.0f, expected %.0f", names[i], diff, saved - scale_pass);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flashinfer_takes_e4m3),
        cmocka_unit_test(test_xqa_takes_e4m3_where_built),
        cmocka_unit_test(test_other_peers_decline_8bit),
        cmocka_unit_test(test_bytes_count_the_stored_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
