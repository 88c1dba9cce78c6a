/* Value lists, ranges and suffixes; grid expansion: count, order, validation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "../harness/grid.h"
#include "../harness/grid_internal.h"

static void expect_list(const char *s, int n, const int *values)
{
    int_list_t l;
    char msg[256] = "";
    int rc = int_list_parse("--beam", s, &l, msg, sizeof msg);
    if (rc != 0) fail_msg("'%s' refused: %s", s, msg);
    assert_int_equal(l.n, n);
    for (int i = 0; i < n; ++i) assert_int_equal(l.v[i], values[i]);
}

static void test_plain_lists(void **state)
{
    (void)state;
    expect_list("1,2,4", 3, (int[]){1, 2, 4});
    expect_list("7", 1, (int[]){7});
    expect_list("100,3,100", 3, (int[]){100, 3, 100});   /* order and duplicates kept */
    expect_list("2147483647", 1, (int[]){2147483647});
}

static void test_suffixes(void **state)
{
    (void)state;
    expect_list("8k", 1, (int[]){8192});
    expect_list("8K,1m,2M", 3, (int[]){8192, 1048576, 2097152});
    expect_list("1k,1000", 2, (int[]){1024, 1000});
    expect_list("2047m", 1, (int[]){2047 * 1048576});
}

static void test_ranges(void **state)
{
    (void)state;
    expect_list("1:1024", 11, (int[]){1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
    expect_list("8k:32k", 3, (int[]){8192, 16384, 32768});
    expect_list("4:4", 1, (int[]){4});
    expect_list("1,4:16,100", 5, (int[]){1, 4, 8, 16, 100});
    expect_list("512:1k", 2, (int[]){512, 1024});
    int_list_t l;
    char msg[256];
    assert_int_equal(int_list_parse("--ctx", "1:1024m", &l, msg, sizeof msg), 0);
    assert_int_equal(l.n, 31);
    assert_int_equal(l.v[30], 1 << 30);
}

static void expect_error(const char *s, const char *needle)
{
    int_list_t l;
    char msg[256] = "";
    int rc = int_list_parse("--beam", s, &l, msg, sizeof msg);
    if (rc != -1) fail_msg("'%s' accepted (%d values)", s, l.n);
    if (!strstr(msg, "--beam")) fail_msg("'%s': message does not name the option: %s", s, msg);
    if (!strstr(msg, needle)) fail_msg("'%s': expected '%s' in: %s", s, needle, msg);
    if (strchr(msg, '\n')) fail_msg("'%s': message is more than one line: %s", s, msg);
}

static void test_list_errors(void **state)
{
    (void)state;
    expect_error("", "empty list");
    expect_error("1,,2", "empty value");
    expect_error("1,", "empty value");
    expect_error(",1", "empty value");
    expect_error("a", "not a number");
    expect_error("k", "not a number");
    expect_error("8x", "not a number");
    expect_error("8kk", "not a number");
    expect_error(" 1", "not a number");
    expect_error("1.5", "not a number");
    expect_error("1:2:4", "not a number");
    expect_error("0", "positive");
    expect_error("-4", "positive");
    expect_error("1,0,2", "positive");
    expect_error("0:8", "positive");
    expect_error("16:4", "backwards");
    expect_error("3:16", "powers of two");
    expect_error("1:12", "powers of two");
    expect_error("1:", "empty value");
    expect_error("3000000000", "too large");
    expect_error("2048m", "too large");
    expect_error("99999999999999999999", "too large");
    expect_error("1:1m,1:1m,1:1m,1:1m", "more than 64");
    char many[400] = "1";
    for (int i = 0; i < 64; ++i) strcat(many, ",2");
    expect_error(many, "more than 64");
    int_list_t l;
    char msg[64];
    assert_int_equal(int_list_parse("--ctx", NULL, &l, msg, sizeof msg), -1);
}

static void test_default_is_one_default_point(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    problem_t *p;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&g, &p, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 1);
    problem_t d = problem_default();
    assert_int_equal(p[0].batch, d.batch);
    assert_int_equal(p[0].beam, d.beam);
    assert_int_equal(p[0].heads, d.heads);
    assert_int_equal(p[0].kv_heads, d.kv_heads);
    assert_int_equal(p[0].head_dim, d.head_dim);
    assert_int_equal(p[0].ctx, d.ctx);
    assert_int_equal(p[0].gen, d.gen);
    assert_int_equal(p[0].dtype, d.dtype);
    assert_int_equal(p[0].cache, d.cache);
    assert_int_equal(p[0].block_size, d.block_size);
    assert_int_equal(p[0].multi_block, d.multi_block);
    assert_int_equal(p[0].splits, d.splits);
    assert_int_equal(p[0].layers, d.layers);
    assert_true(p[0].q_scaling == d.q_scaling);
    assert_null(p[0].model);
    free(p);
}

static void test_expansion_count_and_order(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    g.dtype[0] = DTYPE_FP16, g.dtype[1] = DTYPE_BF16, g.n_dtype = 2;
    g.kv_heads = (int_list_t){3, {32, 8, 1}};
    g.ctx = (int_list_t){2, {8192, 16384}};
    g.batch = (int_list_t){2, {1, 2}};
    g.beam = (int_list_t){3, {1, 4, 16}};
    g.indirection = true;
    g.q_scaling = 2.0;
    g.model = "7b";
    g.layers = 32;
    assert_int_equal(grid_count(&g), 2 * 3 * 2 * 2 * 3);
    problem_t *p;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&g, &p, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 72);
    /* outermost dtype, then kv_heads, ctx, batch, and beam fastest */
    int k = 0;
    for (int t = 0; t < 2; ++t)
        for (int gi = 0; gi < 3; ++gi)
            for (int c = 0; c < 2; ++c)
                for (int b = 0; b < 2; ++b)
                    for (int w = 0; w < 3; ++w, ++k) {
                        assert_int_equal(p[k].dtype, g.dtype[t]);
                        assert_int_equal(p[k].kv_heads, g.kv_heads.v[gi]);
                        assert_int_equal(p[k].ctx, g.ctx.v[c]);
                        assert_int_equal(p[k].batch, g.batch.v[b]);
                        assert_int_equal(p[k].beam, g.beam.v[w]);
                        assert_int_equal(p[k].heads, 32);
                        assert_true(p[k].indirection);
                        assert_true(p[k].q_scaling == 2.0);
                        assert_int_equal(p[k].layers, 32);
                        assert_string_equal(p[k].model, "7b");
                    }
    free(p);
}

static void test_inner_axes_order(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    g.heads = (int_list_t){2, {32, 64}};
    g.head_dim = (int_list_t){2, {64, 128}};
    g.multi_block[0] = MULTI_BLOCK_ON, g.multi_block[1] = MULTI_BLOCK_AUTO, g.n_multi_block = 2;
    g.splits = (int_list_t){2, {2, 4}};
    g.gen = (int_list_t){2, {1, 128}};
    problem_t *p;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&g, &p, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 32);
    /* heads, head_dim, multi_block, splits, gen: outermost to innermost */
    for (int k = 0; k < n; ++k) {
        assert_int_equal(p[k].heads, g.heads.v[(k >> 4) & 1]);
        assert_int_equal(p[k].head_dim, g.head_dim.v[(k >> 3) & 1]);
        assert_int_equal(p[k].multi_block, g.multi_block[(k >> 2) & 1]);
        assert_int_equal(p[k].splits, g.splits.v[(k >> 1) & 1]);
        assert_int_equal(p[k].gen, g.gen.v[k & 1]);
    }
    free(p);
}

static void test_block_sizes_only_multiply_paged(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    g.cache[0] = CACHE_CONTIGUOUS, g.cache[1] = CACHE_PAGED, g.n_cache = 2;
    g.block_size = (int_list_t){3, {16, 64, 128}};
    g.beam = (int_list_t){2, {1, 2}};
    assert_int_equal(grid_count(&g), (1 + 3) * 2);
    problem_t *p;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&g, &p, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 8);
    assert_int_equal(p[0].cache, CACHE_CONTIGUOUS);
    assert_int_equal(p[1].cache, CACHE_CONTIGUOUS);
    assert_int_equal(p[1].beam, 2);
    const int blocks[] = {16, 16, 64, 64, 128, 128};
    for (int k = 2; k < 8; ++k) {
        assert_int_equal(p[k].cache, CACHE_PAGED);
        assert_int_equal(p[k].block_size, blocks[k - 2]);
        assert_int_equal(p[k].beam, 1 + (k & 1));
    }
    free(p);
}

static void expect_invalid(const grid_t *g, const char *needle)
{
    problem_t *p = (problem_t *)&p;
    int n = -7;
    char msg[256] = "";
    assert_int_equal(grid_validate(g, msg, sizeof msg), -1);
    assert_int_equal(grid_expand(g, &p, &n, msg, sizeof msg), -1);
    if (!strstr(msg, needle)) fail_msg("expected '%s' in: %s", needle, msg);
    assert_null(p);
    assert_int_equal(n, 0);
}

static void test_every_point_is_validated(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    g.kv_heads = (int_list_t){3, {32, 8, 3}};   /* the last point breaks g | h */
    expect_invalid(&g, "--kv-heads 3 must divide --heads 32");

    grid_default(&g);
    g.cache[0] = CACHE_PAGED;
    g.block_size = (int_list_t){2, {64, 12}};
    expect_invalid(&g, "--block-size 12");

    grid_default(&g);
    g.block_size = (int_list_t){1, {256}};       /* refused even for a contiguous cache */
    expect_invalid(&g, "--block-size 256");

    grid_default(&g);
    g.multi_block[0] = MULTI_BLOCK_ON, g.multi_block[1] = MULTI_BLOCK_OFF, g.n_multi_block = 2;
    g.splits = (int_list_t){1, {4}};
    expect_invalid(&g, "--splits 4 contradicts --multi-block off");

    grid_default(&g);
    g.head_dim = (int_list_t){2, {128, 100}};
    expect_invalid(&g, "--head-dim 100");

    grid_default(&g);
    g.beam.n = 0;
    expect_invalid(&g, "--beam: empty list");

    grid_default(&g);
    g.q_scaling = 0;
    expect_invalid(&g, "--q-scaling");
}

/* --q-len is the innermost axis: one configuration's query-token counts side by side;
 * a count above 16 or above --gen is refused with its option named. */
static void test_q_len_axis(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    g.beam = (int_list_t){2, {1, 4}};
    g.q_len = (int_list_t){3, {1, 4, 16}};
    assert_int_equal(grid_count(&g), 6);
    problem_t *p;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&g, &p, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 6);
    for (int k = 0; k < n; ++k) {
        assert_int_equal(p[k].beam, g.beam.v[k / 3]);
        assert_int_equal(p[k].q_len, g.q_len.v[k % 3]);
    }
    free(p);

    grid_default(&g);
    g.q_len = (int_list_t){2, {4, 17}};
    expect_invalid(&g, "--q-len must be from 1 to 16 (got 17)");
    grid_default(&g);
    g.gen = (int_list_t){2, {128, 3}};
    g.q_len = (int_list_t){1, {4}};
    expect_invalid(&g, "--q-len 4 needs --gen >= 4");
    grid_default(&g);
    g.q_len.n = 0;
    expect_invalid(&g, "--q-len: empty list");
}

static void test_too_many_points(void **state)
{
    (void)state;
    grid_t g;
    grid_default(&g);
    g.batch.n = g.beam.n = g.ctx.n = g.gen.n = LIST_MAX;
    for (int i = 0; i < LIST_MAX; ++i) g.batch.v[i] = g.beam.v[i] = g.ctx.v[i] = g.gen.v[i] = i + 1;
    assert_true(grid_count(&g) > GRID_POINTS_MAX);
    expect_invalid(&g, "more than");
}

static void test_override_copies_only_named_fields(void **state)
{
    (void)state;
    grid_t dst, src;
    grid_default(&dst);
    grid_default(&src);
    src.batch = (int_list_t){2, {4, 8}};
    src.beam = (int_list_t){1, {16}};
    src.dtype[0] = DTYPE_BF16, src.dtype[1] = DTYPE_FP32, src.n_dtype = 2;
    src.indirection = true;
    src.model = "7b";
    grid_override(&dst, &src, GRID_FIELD_BATCH | GRID_FIELD_DTYPE | GRID_FIELD_MODEL);
    assert_int_equal(dst.batch.n, 2);
    assert_int_equal(dst.batch.v[1], 8);
    assert_int_equal(dst.n_dtype, 2);
    assert_int_equal(dst.dtype[1], DTYPE_FP32);
    assert_string_equal(dst.model, "7b");
    assert_int_equal(dst.beam.v[0], 1);   /* not named: untouched */
    assert_false(dst.indirection);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_lists),
        cmocka_unit_test(test_suffixes),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_list_errors),
        cmocka_unit_test(test_default_is_one_default_point),
        cmocka_unit_test(test_expansion_count_and_order),
        cmocka_unit_test(test_inner_axes_order),
        cmocka_unit_test(test_block_sizes_only_multiply_paged),
        cmocka_unit_test(test_every_point_is_validated),
        cmocka_unit_test(test_q_len_axis),
        cmocka_unit_test(test_too_many_points),
        cmocka_unit_test(test_override_copies_only_named_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
