/* Host-side layout builders: geometry, the paged block map (prefix sharing,
 * per-stream copies, shuffling), the beam history, and materialised buffers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/layouts.h"
#include "../harness/layouts_internal.h"
#include "../problem/kv_fill.h"
#include "test_problem.h"

/* heads = 2 * kv_heads: two query heads per group */
static problem_t make_problem(int batch, int beam, int kv_heads, int head_dim, int ctx, int gen,
                              int block_size)
{
    return test_paged_problem(batch, beam, 2 * kv_heads, kv_heads, head_dim, ctx, gen, block_size);
}

static void test_geometry_values(void **state)
{
    (void)state;
    problem_t p = make_problem(3, 4, 2, 64, 100, 29, 32);
    kv_geometry_t g = kv_geometry_make(&p, LAYOUT_PAGED);
    assert_int_equal(g.layout, LAYOUT_PAGED);
    assert_int_equal(g.beam, 4);
    assert_int_equal(g.kv_heads, 2);
    assert_int_equal(g.head_dim, 64);
    assert_int_equal(g.ctx, 100);
    assert_int_equal(g.gen, 29);
    assert_int_equal(g.block_size, 32);
    assert_int_equal(g.block_shift, 5);
    assert_int_equal(g.max_blocks_per_seq, 5); /* ceil(129 / 32) */

    p.block_size = 128;
    g = kv_geometry_make(&p, LAYOUT_PAGED);
    assert_int_equal(g.block_shift, 7);
    assert_int_equal(g.max_blocks_per_seq, 2);

    p.block_size = 8;
    p.gen = 28; /* L = 128: exactly 16 blocks */
    g = kv_geometry_make(&p, LAYOUT_PAGED);
    assert_int_equal(g.block_shift, 3);
    assert_int_equal(g.max_blocks_per_seq, 16);

    g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    assert_int_equal(g.layout, LAYOUT_CONTIGUOUS);
    assert_int_equal(g.ctx, 100);
    assert_int_equal(g.gen, 28);
    assert_int_equal(g.block_size, 0);
    assert_int_equal(g.max_blocks_per_seq, 0);

    g = kv_geometry_make(&p, LAYOUT_BIFURCATED);
    assert_int_equal(g.layout, LAYOUT_BIFURCATED);
    assert_int_equal(g.beam, 4);
}

/* The formula written out independently of the implementation. */
static int64_t expected_blocks(const problem_t *p)
{
    int S = p->block_size, L = p->ctx + p->gen;
    int full_ctx = p->ctx / S, per_seq = (L + S - 1) / S;
    return (int64_t)p->batch * (full_ctx + (int64_t)p->beam * (per_seq - full_ctx));
}

static const int block_cases[][5] = {
    /* batch, beam, ctx, gen, block_size */
    {1, 1, 1, 1, 8},     {1, 4, 1, 1, 8},    {2, 3, 5, 7, 8},     {2, 3, 8, 8, 8},
    {3, 4, 37, 20, 16},  {2, 5, 64, 1, 32},  {1, 8, 100, 29, 32}, {4, 2, 17, 200, 8},
    {2, 16, 300, 13, 128}, {1, 1, 256, 256, 64},
};
#define N_BLOCK_CASES (int)(sizeof block_cases / sizeof block_cases[0])

static void test_block_count_formula(void **state)
{
    (void)state;
    /* Hand-checked numbers: B=2, W=3, ctx=37, S=16, L=57 -> 2 shared + 3*(4-2) per request. */
    problem_t p = make_problem(2, 3, 1, 8, 37, 20, 16);
    assert_int_equal(paged_block_count(&p), 2 * (2 + 3 * 2));
    p = make_problem(1, 4, 1, 8, 32, 1, 16); /* context fills 2 blocks exactly */
    assert_int_equal(paged_block_count(&p), 2 + 4 * 1);
    p = make_problem(1, 4, 1, 8, 5, 1, 16); /* context smaller than a block: nothing shared */
    assert_int_equal(paged_block_count(&p), 4);

    for (int c = 0; c < N_BLOCK_CASES; ++c) {
        const int *k = block_cases[c];
        p = make_problem(k[0], k[1], 1, 8, k[2], k[3], k[4]);
        paged_map_t m;
        assert_int_equal(paged_map_build(&p, 42, &m), 0);
        assert_int_equal(paged_block_count(&p), expected_blocks(&p));
        assert_int_equal(m.num_blocks, expected_blocks(&p));
        assert_int_equal(m.max_blocks_per_seq, kv_blocks_for(k[2] + k[3], k[4]));
        paged_map_free(&m);
        assert_null(m.table);
    }
}

/* Every table entry in range; every block used; a block used more than once is
 * exactly a full context block of one request, used by its W streams at the same
 * logical index; owner and first_pos agree with the table. */
static void check_map(const problem_t *p, const paged_map_t *m)
{
    const int W = p->beam, S = p->block_size, per_seq = m->max_blocks_per_seq;
    const int full_ctx = p->ctx / S;
    int *uses = calloc((size_t)m->num_blocks, sizeof *uses);
    int *user_request = malloc((size_t)m->num_blocks * sizeof *user_request);
    int *user_index = malloc((size_t)m->num_blocks * sizeof *user_index);
    assert_non_null(uses);
    assert_non_null(user_request);
    assert_non_null(user_index);

    for (int s = 0; s < problem_streams(p); ++s) {
        for (int j = 0; j < per_seq; ++j) {
            int32_t phys = m->table[(int64_t)s * per_seq + j];
            assert_in_range(phys, 0, m->num_blocks - 1);
            assert_int_equal(m->first_pos[phys], j * S);
            int request = s / W;
            if (j < full_ctx) {
                assert_int_equal(m->owner[phys], request * W);
                /* every stream of the request points at the same block */
                assert_int_equal(phys, m->table[(int64_t)request * W * per_seq + j]);
            } else {
                assert_int_equal(m->owner[phys], s);
            }
            if (uses[phys]++ > 0) {
                assert_int_equal(user_request[phys], request);
                assert_int_equal(user_index[phys], j);
            }
            user_request[phys] = request;
            user_index[phys] = j;
        }
    }
    for (int b = 0; b < m->num_blocks; ++b) {
        assert_true(uses[b] > 0); /* the whole pool is used */
        if (user_index[b] < full_ctx) assert_int_equal(uses[b], W);
        else assert_int_equal(uses[b], 1);
    }
    free(uses);
    free(user_request);
    free(user_index);
}

static void test_map_structure(void **state)
{
    (void)state;
    for (int c = 0; c < N_BLOCK_CASES; ++c) {
        const int *k = block_cases[c];
        problem_t p = make_problem(k[0], k[1], 1, 8, k[2], k[3], k[4]);
        paged_map_t m;
        assert_int_equal(paged_map_build(&p, 1000 + (uint64_t)c, &m), 0);
        check_map(&p, &m);
        paged_map_free(&m);
    }
}

/* A partly filled last context block is a separate copy per stream. */
static void test_partial_context_block_copied(void **state)
{
    (void)state;
    problem_t p = make_problem(2, 4, 1, 8, 37, 20, 16); /* context ends inside block 2 */
    paged_map_t m;
    assert_int_equal(paged_map_build(&p, 7, &m), 0);
    const int per_seq = m.max_blocks_per_seq;
    for (int b = 0; b < 2; ++b) {
        for (int w1 = 0; w1 < 4; ++w1) {
            int s1 = b * 4 + w1;
            int32_t blk = m.table[s1 * per_seq + 2];
            assert_int_equal(m.owner[blk], s1);
            for (int w2 = w1 + 1; w2 < 4; ++w2)
                assert_int_not_equal(blk, m.table[(b * 4 + w2) * per_seq + 2]);
            /* blocks 0 and 1 are full of context: shared */
            assert_int_equal(m.table[s1 * per_seq + 0], m.table[b * 4 * per_seq + 0]);
            assert_int_equal(m.table[s1 * per_seq + 1], m.table[b * 4 * per_seq + 1]);
        }
    }
    paged_map_free(&m);
}

static void test_map_shuffled_and_seeded(void **state)
{
    (void)state;
    problem_t p = make_problem(4, 2, 1, 8, 17, 200, 8);
    paged_map_t a, b, c;
    assert_int_equal(paged_map_build(&p, 5, &a), 0);
    assert_int_equal(paged_map_build(&p, 5, &b), 0);
    assert_int_equal(paged_map_build(&p, 6, &c), 0);
    const int64_t entries = (int64_t)problem_streams(&p) * a.max_blocks_per_seq;
    assert_memory_equal(a.table, b.table, (size_t)entries * sizeof *a.table);
    assert_memory_not_equal(a.table, c.table, (size_t)entries * sizeof *a.table);

    /* In allocation order, an unshuffled pool would hand out 0, 1, 2, ...: count the
     * neighbours in a stream's row that are physically adjacent too. */
    int adjacent = 0, pairs = 0;
    for (int s = 0; s < problem_streams(&p); ++s)
        for (int j = 3; j + 1 < a.max_blocks_per_seq; ++j, ++pairs)
            adjacent += a.table[s * a.max_blocks_per_seq + j + 1]
                        == a.table[s * a.max_blocks_per_seq + j] + 1;
    assert_true(pairs > 100);
    assert_true(adjacent < pairs / 10);
    paged_map_free(&a);
    paged_map_free(&b);
    paged_map_free(&c);
}

/* What SPEC §2 promises of cache_indirection [B, W, L]. */
static void check_history(const problem_t *p, const int32_t *hist)
{
    const int W = p->beam, L = problem_keys(p);
    for (int b = 0; b < p->batch; ++b) {
        const int32_t *req = hist + (int64_t)b * W * L;
        for (int w = 0; w < W; ++w) {
            for (int t = 0; t < L; ++t) assert_in_range(req[w * L + t], 0, W - 1);
            for (int t = 0; t < p->ctx; ++t) assert_int_equal(req[w * L + t], w);
            assert_int_equal(req[w * L + L - 1], w);
        }
        /* Ancestry: a stream's beam at step t is a function of its beam at t+1,
         * so streams agreeing at t+1 agree at every earlier step. */
        for (int t = p->ctx; t + 1 < L; ++t)
            for (int w1 = 0; w1 < W; ++w1)
                for (int w2 = 0; w2 < W; ++w2)
                    if (req[w1 * L + t + 1] == req[w2 * L + t + 1])
                        assert_int_equal(req[w1 * L + t], req[w2 * L + t]);
    }
}

static void test_beam_history_valid(void **state)
{
    (void)state;
    const int cases[][4] = {{1, 1, 5, 9}, {2, 4, 3, 16}, {3, 8, 1, 40}, {1, 16, 7, 1}, {2, 3, 9, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        problem_t p = make_problem(cases[c][0], cases[c][1], 1, 8, cases[c][2], cases[c][3], 8);
        int32_t *hist = beam_history_build(&p, 99 + c);
        assert_non_null(hist);
        check_history(&p, hist);
        free(hist);
    }
}

/* The history is not the identity: some stream reads another's K/V, and the
 * shared ancestry merges streams going back in time. */
static void test_beam_history_nontrivial(void **state)
{
    (void)state;
    problem_t p = make_problem(2, 4, 1, 8, 3, 16, 8);
    int32_t *hist = beam_history_build(&p, 3);
    int32_t *same = beam_history_build(&p, 3);
    assert_non_null(hist);
    assert_non_null(same);
    const int W = 4, L = 19;
    assert_memory_equal(hist, same, (size_t)2 * W * L * sizeof *hist);
    int foreign = 0;
    for (int b = 0; b < 2; ++b)
        for (int w = 0; w < W; ++w)
            for (int t = 3; t < L; ++t) foreign += hist[(b * W + w) * L + t] != w;
    assert_true(foreign > 10);
    /* at the first decoded step, W random parent maps composed leave fewer distinct beams */
    int distinct = 0, seen[4] = {0};
    for (int w = 0; w < W; ++w)
        if (!seen[hist[w * L + 3]]++) ++distinct;
    assert_true(distinct < W);
    free(hist);
    free(same);
}

static void test_layout_elements(void **state)
{
    (void)state;
    problem_t p = make_problem(2, 3, 2, 16, 37, 20, 16);
    const int64_t row = 2 * 2 * 16;
    kv_geometry_t g = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    assert_int_equal(layout_elements(&g, &p, 0), 6 * 57 * row);
    assert_int_equal(layout_elements(&g, &p, 1), 0);
    g = kv_geometry_make(&p, LAYOUT_PAGED);
    assert_int_equal(layout_elements(&g, &p, 0), paged_block_count(&p) * 16 * row);
    assert_int_equal(layout_elements(&g, &p, 1), 0);
    g = kv_geometry_make(&p, LAYOUT_BIFURCATED);
    assert_int_equal(layout_elements(&g, &p, 0), 2 * 37 * row);
    assert_int_equal(layout_elements(&g, &p, 1), 6 * 20 * row);
    assert_int_equal(layout_elements(&g, &p, 2), 0);
}

/* Every logical row lands where the address arithmetic says; pool slots past L are NaN. */
static void test_materialize_matches_logical(void **state)
{
    (void)state;
    const uint64_t seed = 11;
    problem_t p = make_problem(2, 3, 2, 16, 21, 6, 8); /* L = 27: 5 slots of padding */
    kv_geometry_t gc = kv_geometry_make(&p, LAYOUT_CONTIGUOUS);
    kv_geometry_t gp = kv_geometry_make(&p, LAYOUT_PAGED);
    kv_geometry_t gb = kv_geometry_make(&p, LAYOUT_BIFURCATED);
    paged_map_t m;
    assert_int_equal(paged_map_build(&p, seed, &m), 0);
    float *cont = layout_materialize(&gc, &p, seed, NULL, 0);
    float *pool = layout_materialize(&gp, &p, seed, &m, 0);
    float *ctx = layout_materialize(&gb, &p, seed, NULL, 0);
    float *dec = layout_materialize(&gb, &p, seed, NULL, 1);
    assert_non_null(cont);
    assert_non_null(pool);
    assert_non_null(ctx);
    assert_non_null(dec);
    assert_null(layout_materialize(&gp, &p, seed, NULL, 0));
    assert_null(layout_materialize(&gc, &p, seed, NULL, 1));

    int nonzero = 0;
    for (int s = 0; s < 6; ++s)
        for (int which = 0; which < 2; ++which)
            for (int h = 0; h < 2; ++h)
                for (int pos = 0; pos < 27; ++pos) {
                    int in_ctx;
                    int64_t oc = kv_row_offset(&gc, NULL, NULL, s, which, h, pos, &in_ctx);
                    int64_t op = kv_row_offset(&gp, m.table, NULL, s, which, h, pos, &in_ctx);
                    int64_t ob = kv_row_offset(&gb, NULL, NULL, s, which, h, pos, &in_ctx);
                    const float *bif = in_ctx ? ctx : dec;
                    assert_int_equal(in_ctx, pos < 21);
                    for (int x = 0; x < 16; ++x) {
                        float want = kv_logical(&gc, seed, s, which, h, pos, x);
                        assert_true(cont[oc + x] == want);
                        assert_true(pool[op + x] == want);
                        assert_true(bif[ob + x] == want);
                        nonzero += want != 0.0f;
                    }
                }
    assert_true(nonzero > 6 * 2 * 2 * 27 * 16 / 2);
    /* context is identical across a request's streams, decoded data is not */
    assert_true(kv_logical(&gc, seed, 0, 0, 0, 3, 0) == kv_logical(&gc, seed, 2, 0, 0, 3, 0));
    assert_memory_not_equal(cont + kv_contiguous_offset(&gc, 0, 0, 0, 21),
                            cont + kv_contiguous_offset(&gc, 1, 0, 0, 21), 16 * sizeof(float));

    int nan_slots = 0;
    for (int s = 0; s < 6; ++s) {
        int32_t last = m.table[s * m.max_blocks_per_seq + m.max_blocks_per_seq - 1];
        for (int slot = 27 - 24; slot < 8; ++slot) {
            assert_true(isnan(pool[kv_paged_offset(&gp, last, 1, 1, slot) + 5]));
            ++nan_slots;
        }
    }
    assert_int_equal(nan_slots, 6 * 5);
    free(cont);
    free(pool);
    free(ctx);
    free(dec);
    paged_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry_values),
        cmocka_unit_test(test_block_count_formula),
        cmocka_unit_test(test_map_structure),
        cmocka_unit_test(test_partial_context_block_copied),
        cmocka_unit_test(test_map_shuffled_and_seeded),
        cmocka_unit_test(test_beam_history_valid),
        cmocka_unit_test(test_beam_history_nontrivial),
        cmocka_unit_test(test_layout_elements),
        cmocka_unit_test(test_materialize_matches_logical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
