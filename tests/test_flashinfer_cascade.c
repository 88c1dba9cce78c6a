/* The host arithmetic of the `flashinfer-cascade` peer (kernels/peers/flashinfer_cascade.h):
 * the two levels' page lists built from the harness's paged block map, which shapes
 * FlashInfer's path runs, and its byte model. Needs neither FlashInfer nor a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../harness/layouts.h"
#include "../kernels/peers/flashinfer_cascade.h"
#include "test_problem.h"

/* Every stream's keys, read as the two levels read them (its request's shared pages,
 * then its own), are the blocks of its block-table row in order, and the levels'
 * lengths add up to ctx + gen. */
static void check_levels(const problem_t *p)
{
    paged_map_t map;
    fic_level_t lv[FIC_LEVELS];
    assert_int_equal(paged_map_build(p, 7, &map), 0);
    assert_int_equal(fic_levels_build(p, map.table, lv), 0);
    const fic_level_t *sh = &lv[FIC_SHARED], *un = &lv[FIC_UNIQUE];
    const int S = p->block_size, W = p->beam;
    assert_int_equal(sh->entries, p->batch);
    assert_int_equal(un->entries, problem_streams(p));
    assert_int_equal(sh->qo_indptr[0], 0);
    assert_int_equal(un->qo_indptr[0], 0);
    for (int b = 0; b < p->batch; ++b) {
        assert_int_equal(sh->qo_indptr[b + 1] - sh->qo_indptr[b], W); /* the request's W streams */
        assert_int_equal(sh->qo_indptr[b], b * W);
        int pages = sh->kv_indptr[b + 1] - sh->kv_indptr[b];
        assert_int_equal(sh->kv_len[b], (pages - 1) * S + sh->last_page_len[b]);
        assert_int_equal(sh->last_page_len[b], S); /* full context blocks only */
    }
    for (int s = 0; s < problem_streams(p); ++s) {
        const int b = s / W;
        const int32_t *row = map.table + (int64_t)s * map.max_blocks_per_seq;
        int n0 = sh->kv_indptr[b + 1] - sh->kv_indptr[b], n1 = un->kv_indptr[s + 1] - un->kv_indptr[s];
        assert_int_equal(un->qo_indptr[s + 1] - un->qo_indptr[s], 1);
        assert_int_equal(n0 + n1, map.max_blocks_per_seq);
        for (int j = 0; j < n0; ++j) assert_int_equal(sh->kv_indices[sh->kv_indptr[b] + j], row[j]);
        for (int j = 0; j < n1; ++j) assert_int_equal(un->kv_indices[un->kv_indptr[s] + j], row[n0 + j]);
        assert_true(un->last_page_len[s] >= 1 && un->last_page_len[s] <= S);
        assert_int_equal(un->kv_len[s], (n1 - 1) * S + un->last_page_len[s]);
        assert_int_equal(sh->kv_len[b] + un->kv_len[s], problem_keys(p));
        /* the shared pages are the request's own shared blocks, owned by its first stream */
        for (int j = 0; j < n0; ++j) assert_int_equal(map.owner[row[j]], b * W);
    }
    assert_int_equal(sh->pages, (int64_t)p->batch * (p->ctx / S));
    fic_levels_free(lv);
    paged_map_free(&map);
}

static void test_levels_partial_context_block(void **state)
{
    (void)state;
    /* ctx 40 over blocks of 16: two shared blocks; the block holding keys 32..44 is
     * each stream's own, with the end of the context and its 5 decoded keys */
    problem_t p = test_paged_problem(2, 3, 4, 2, 64, 40, 5, 16);
    check_levels(&p);
    fic_level_t lv[FIC_LEVELS];
    paged_map_t map;
    assert_int_equal(paged_map_build(&p, 1, &map), 0);
    assert_int_equal(fic_levels_build(&p, map.table, lv), 0);
    assert_int_equal(lv[FIC_SHARED].kv_len[1], 32);
    assert_int_equal(lv[FIC_UNIQUE].kv_len[5], 13);
    assert_int_equal(lv[FIC_UNIQUE].last_page_len[5], 13);
    fic_levels_free(lv);
    paged_map_free(&map);
}

static void test_levels_aligned_context(void **state)
{
    (void)state;
    problem_t p = test_paged_problem(3, 4, 8, 8, 128, 32, 20, 16); /* decoded part: 16 + 4 */
    check_levels(&p);
    p = test_paged_problem(1, 5, 8, 1, 128, 64, 16, 16); /* decoded part fills its block */
    check_levels(&p);
    p = test_paged_problem(2, 1, 4, 4, 64, 300, 1, 128); /* one stream per request */
    check_levels(&p);
}

static void test_unsupported_reasons(void **state)
{
    (void)state;
    problem_t p = test_paged_problem(1, 16, 32, 8, 128, 8192, 128, 64);
    assert_null(fic_unsupported(&p));
    p.dtype = DTYPE_BF16;
    assert_null(fic_unsupported(&p));

    problem_t q = p;
    q.cache = CACHE_CONTIGUOUS;
    assert_non_null(fic_unsupported(&q));
    q = p;
    q.indirection = true;
    assert_non_null(fic_unsupported(&q));
    q = p;
    q.dtype = DTYPE_FP32;
    assert_non_null(fic_unsupported(&q));
    q = p;
    q.head_dim = 96;
    assert_non_null(fic_unsupported(&q));
    q = p;
    q.kv_quant = KV_QUANT_FP8;
    assert_non_null(strstr(fic_unsupported(&q), "8-bit cache"));
    q.kv_quant = KV_QUANT_INT8;
    assert_non_null(strstr(fic_unsupported(&q), "8-bit cache"));
    q = p;
    q.splits = 4;
    assert_non_null(fic_unsupported(&q));
    q = p;
    q.ctx = 63; /* no full block to share */
    assert_non_null(strstr(fic_unsupported(&q), "no shared level"));
    q.ctx = 64;
    assert_null(fic_unsupported(&q));
    /* MergeStateInPlace: 64 heads of 16 lanes at d 128 fit a block, 128 heads do not;
     * at d 64, 128 heads of 8 lanes do */
    q = p;
    q.heads = q.kv_heads = 64;
    assert_null(fic_unsupported(&q));
    q.heads = q.kv_heads = 128;
    assert_non_null(strstr(fic_unsupported(&q), "MergeStateInPlace"));
    q.head_dim = 64;
    assert_null(fic_unsupported(&q));
    /* the plan's same-schedule switch: ceil(BW / 128) + BW - 1 > 4096 */
    q = p;
    q.beam = 1;
    q.batch = 4064; /* 32 + 4063 = 4095 */
    assert_null(fic_unsupported(&q));
    q.batch = 4066; /* 32 + 4065 = 4097 */
    assert_non_null(strstr(fic_unsupported(&q), "4096"));
}

static void test_io_model(void **state)
{
    (void)state;
    /* ctx 40, S 16: 2 shared blocks per request, 1 block per stream beyond */
    problem_t p = test_paged_problem(2, 3, 4, 2, 64, 40, 5, 16);
    attn_io_t io = fic_io(&p, NULL);
    double pages = 2.0 * 2 + 6.0 * 1;
    assert_float_equal(io.bytes, io_kv_bytes_stored(&p) + io_qo_bytes(&p) + 4.0 * pages, 1e-6);
    assert_float_equal(io.unique_bytes, io_kv_bytes_unique(&p) + io_qo_bytes(&p) + io_table_bytes(&p), 1e-6);
    assert_float_equal(io.flops, io_flops(&p), 1e-6);
    /* shared level: 4 heads x 2 requests x one tile; unique: 4 heads x 6 streams */
    assert_int_equal(fic_works(&p, FIC_SHARED), 8);
    assert_int_equal(fic_works(&p, FIC_UNIQUE), 24);
    double o = 6.0 * 4 * 64 * 2, lse = 6.0 * 4 * 4;
    assert_float_equal(io.workspace_bytes, 4 * o + 5 * lse + 7.0 * 32 * 4, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_partial_context_block),
        cmocka_unit_test(test_levels_aligned_context),
        cmocka_unit_test(test_unsupported_reasons),
        cmocka_unit_test(test_io_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
