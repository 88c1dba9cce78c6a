/* The byte/FLOP model (SPEC §6) and the memory planner (SPEC §3). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "../harness/memplan.h"
#include "../harness/layouts.h"

static problem_t gqa16(void)
{
    problem_t p = problem_default();
    p.heads = 32;
    p.kv_heads = 8;
    p.head_dim = 128;
    p.ctx = 8192;
    p.gen = 128;
    p.batch = 2;
    p.beam = 16;
    return p;
}

static void test_io_model(void **state)
{
    (void)state;
    problem_t p = gqa16();
    double row = 2.0 * 8 * 128 * 2; /* K and V of 8 heads, fp16 */
    assert_true(io_kv_bytes_replicated(&p) == 32.0 * 8320 * row);
    assert_true(io_kv_bytes_unique(&p) == (2.0 * 8192 + 32.0 * 128) * row);
    assert_true(io_qo_bytes(&p) == 2.0 * 32 * 32 * 128 * 2);
    assert_true(io_flops(&p) == 4.0 * 32 * 32 * 8320 * 128);
    /* one stream: nothing is shared, both models agree */
    p.beam = 1;
    assert_true(io_kv_bytes_replicated(&p) == io_kv_bytes_unique(&p));
    p.dtype = DTYPE_FP32;
    assert_true(io_kv_bytes_unique(&p) == 2.0 * 8320 * 2 * 8 * 128 * 4);
}

static void test_io_model_paged(void **state)
{
    (void)state;
    problem_t p = gqa16();
    double row = 2.0 * 8 * 128 * 2;
    assert_true(io_kv_bytes_stored(&p) == io_kv_bytes_replicated(&p)); /* contiguous */
    p.cache = CACHE_PAGED;
    p.block_size = 64; /* 8192 = 128 full blocks shared, the 128 decoded per stream */
    assert_true(io_kv_bytes_stored(&p) == (2.0 * 8192 + 32.0 * 128) * row);
    p.ctx = 8200;      /* 8 context tokens in a partly filled block, copied per stream */
    assert_true(io_kv_bytes_stored(&p) == (2.0 * 8192 + 32.0 * (8 + 128)) * row);
    p.ctx = 10;        /* no full block: nothing shared */
    assert_true(io_kv_bytes_stored(&p) == io_kv_bytes_replicated(&p));
}

static kv_layout_t contiguous(const problem_t *p) { (void)p; return LAYOUT_CONTIGUOUS; }
static kv_layout_t paged(const problem_t *p) { (void)p; return LAYOUT_PAGED; }
static kv_layout_t bifurcated(const problem_t *p) { (void)p; return LAYOUT_BIFURCATED; }
static size_t no_workspace(const problem_t *p, const attn_plan_t *pl) { (void)p; (void)pl; return 0; }
static size_t some_workspace(const problem_t *p, const attn_plan_t *pl) { (void)p; (void)pl; return 3 << 20; }

static attn_kernel_t fake(kv_layout_t (*layout)(const problem_t *))
{
    attn_kernel_t k = {0};
    k.name = "fake";
    k.layout = layout;
    k.workspace_bytes = no_workspace;
    return k;
}

static size_t up(size_t b) { return (b + MEM_ALIGN - 1) / MEM_ALIGN * MEM_ALIGN; }

static void test_memplan_contiguous(void **state)
{
    (void)state;
    problem_t p = gqa16();
    attn_kernel_t k = fake(contiguous);
    attn_plan_t plan = {0};
    mem_plan_t m;
    mem_plan_make(&p, &k, &plan, &m);
    size_t kv = (size_t)io_kv_bytes_replicated(&p);
    assert_int_equal(m.kv[0], up(kv));
    assert_int_equal(m.kv[1], 0);
    assert_int_equal(m.q, up(32 * 32 * 128 * 2));
    assert_int_equal(m.total, up(kv) + 2 * m.q);
    assert_true(mem_plan_fits(&m, m.total + MEM_HEADROOM));
    assert_false(mem_plan_fits(&m, m.total + MEM_HEADROOM - 1));
    assert_false(mem_plan_fits(&m, 100));

    k.workspace_bytes = some_workspace;
    p.indirection = true;
    mem_plan_t mi;
    mem_plan_make(&p, &k, &plan, &mi);
    assert_int_equal(mi.workspace, up(3 << 20));
    assert_int_equal(mi.indirection, up(32 * 8320 * 4));
    assert_int_equal(mi.total, m.total + mi.workspace + mi.indirection);
}

static void test_memplan_shared_layouts_are_smaller(void **state)
{
    (void)state;
    problem_t p = gqa16();
    p.cache = CACHE_PAGED;
    p.block_size = 64;
    attn_kernel_t kc = fake(contiguous), kp = fake(paged), kb = fake(bifurcated);
    attn_plan_t plan = {0};
    mem_plan_t c, pg, b;
    problem_t pc = p;
    pc.cache = CACHE_CONTIGUOUS;
    mem_plan_make(&pc, &kc, &plan, &c);
    mem_plan_make(&p, &kp, &plan, &pg);
    mem_plan_make(&pc, &kb, &plan, &b);
    /* paged: 128 shared context blocks per request, 2 decoded blocks per stream */
    assert_int_equal(pg.num_blocks, 2 * (128 + 16 * 2));
    assert_int_equal(pg.kv_elements[0], pg.num_blocks * 2 * 8 * 64 * 128);
    assert_true(pg.block_table > 0 && pg.block_owner > 0);
    assert_true(pg.total < c.total / 8);
    /* bifurcated: context once per request, decoded per stream */
    assert_int_equal(b.kv_elements[0], 2L * 2 * 8 * 8192 * 128);
    assert_int_equal(b.kv_elements[1], 32L * 2 * 8 * 128 * 128);
    assert_true(b.total < c.total / 8);
    /* a configuration far beyond any GPU does not fit */
    pc.beam = 1024;
    pc.ctx = 131072;
    mem_plan_make(&pc, &kc, &plan, &c);
    assert_false(mem_plan_fits(&c, (size_t)141 << 30));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_io_model),
        cmocka_unit_test(test_io_model_paged),
        cmocka_unit_test(test_memplan_contiguous),
        cmocka_unit_test(test_memplan_shared_layouts_are_smaller),
    };
    return cmocka_run_group_tests_name("io and memory models", tests, NULL, NULL);
}
