/* Select-Attention's selection on the CPU: the radix select on mass (problem/top_p.h,
 * the GPU's algorithm run serially) finds the threshold a sort finds; ties go in whole;
 * the judge accepts the set from float scores and rejects sets that break each rule;
 * the filter layer's scores, peaked and flat, are what top-p needs; the harness's check
 * of a kernel's sets passes right ones and fails wrong ones. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/layouts.h"
#include "../harness/select_check.h"
#include "../kernels/registry.h"
#include "../report/table.h"
#include "../problem/kv_fill.h"
#include "../problem/top_p.h"
#include "../reference/select.h"
#include "test_problem.h"

static uint64_t lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* Scores that are multiples of 2^-10 below 2^7 sum exactly in float and in double, so
 * the radix select and the sort must agree exactly, threshold and set. */
static void test_radix_threshold_equals_sort(void **state)
{
    (void)state;
    const float ps[] = {0.5f, 0.9f, 0.95f, 0.99f, 1.0f};
    const long ns[] = {1, 7, 1000, 4099};
    uint64_t rng = 42;
    for (int ni = 0; ni < 4; ++ni)
        for (int pi = 0; pi < 5; ++pi) {
            const long n = ns[ni];
            float *f = malloc((size_t)n * sizeof *f);
            double *s = malloc((size_t)n * sizeof *s);
            unsigned char *want = malloc((size_t)n);
            assert_non_null(f);
            assert_non_null(s);
            assert_non_null(want);
            for (long i = 0; i < n; ++i) {
                /* most small, a few large: a peaked distribution */
                const uint64_t r = lcg(&rng);
                f[i] = (float)((r % 16 == 0 ? 4096 + r % 8192 : r % 64) + 1) / 1024.0f;
                s[i] = f[i];
            }
            const float t = top_p_threshold(f, n, ps[pi]);
            const long kept = reference_top_p(s, n, (double)ps[pi], want);
            long radix_kept = 0;
            for (long i = 0; i < n; ++i) {
                assert_int_equal(f[i] >= t, want[i]);
                radix_kept += f[i] >= t;
            }
            assert_int_equal(radix_kept, kept);
            assert_true(kept >= 1 && kept <= n);
            if (ps[pi] == 1.0f) assert_int_equal(kept, n);
            free(f);
            free(s);
            free(want);
        }
}

/* Equal scores all go in where the threshold falls among them. */
static void test_ties_go_in_whole(void **state)
{
    (void)state;
    float f[100];
    double s[100];
    unsigned char want[100];
    for (int i = 0; i < 100; ++i) f[i] = 0.25f;
    for (int i = 0; i < 100; ++i) s[i] = f[i];
    assert_true(top_p_threshold(f, 100, 0.3f) == 0.25f);
    assert_int_equal(reference_top_p(s, 100, 0.3, want), 100);
    /* three levels: 10 at 4, 40 at 1, 50 at 0.5 (total 105): p = 0.5 needs 52.5, which
     * the 10 at 4 (40) and then the level at 1 reach: all 50 of the two upper levels */
    for (int i = 0; i < 100; ++i) f[i] = i < 10 ? 4.0f : i < 50 ? 1.0f : 0.5f;
    for (int i = 0; i < 100; ++i) s[i] = f[i];
    assert_true(top_p_threshold(f, 100, 0.5f) == 1.0f);
    assert_int_equal(reference_top_p(s, 100, 0.5, want), 50);
    char why[200];
    assert_int_equal(reference_top_p_judge(s, 100, 0.5, want, 1e-9, why, sizeof why), 0);
}

/* Scores of any magnitude in float (sums rounded): the radix set passes the judge
 * against the scores in double; sets that break a rule fail it, each with its reason. */
static void test_judge(void **state)
{
    (void)state;
    enum { N = 5000 };
    static float f[N];
    static double s[N];
    static unsigned char set[N];
    uint64_t rng = 7;
    for (int i = 0; i < N; ++i) {
        const double u = (double)(lcg(&rng) % 1000000 + 1) / 1e6;
        f[i] = (float)exp(-12.0 * u); /* exponential: a long tail of small scores */
        s[i] = f[i];
    }
    const float ps[] = {0.9f, 0.95f, 0.99f};
    char why[200];
    for (int pi = 0; pi < 3; ++pi) {
        const float t = top_p_threshold(f, N, ps[pi]);
        long kept = 0, top = 0, lowest = -1, below = -1;
        for (int i = 0; i < N; ++i) {
            kept += set[i] = f[i] >= t;
            if (f[i] > f[top]) top = i;
            if (set[i] && (lowest < 0 || f[i] < f[lowest])) lowest = i;
            if (!set[i] && (below < 0 || f[i] > f[below])) below = i;
        }
        assert_true(kept > 0 && kept < N);
        assert_int_equal(reference_top_p_judge(s, N, ps[pi], set, 1e-6, why, sizeof why), 0);
        set[top] = 0; /* a hole at the top: not a threshold set */
        assert_int_equal(reference_top_p_judge(s, N, ps[pi], set, 1e-6, why, sizeof why), 1);
        assert_non_null(strstr(why, "threshold"));
        set[top] = 1;
        /* the next token below the threshold too: not minimal */
        set[below] = 1;
        assert_int_equal(reference_top_p_judge(s, N, ps[pi], set, 1e-6, why, sizeof why), 1);
        assert_non_null(strstr(why, "minimal"));
        set[below] = 0;
        /* the lowest chosen left out, and with it every token at its score: under p */
        const float low = f[lowest];
        for (int i = 0; i < N; ++i)
            if (f[i] == low) set[i] = 0;
        assert_int_equal(reference_top_p_judge(s, N, ps[pi], set, 1e-6, why, sizeof why), 1);
        assert_non_null(strstr(why, "under p"));
    }
    memset(set, 0, sizeof set);
    assert_int_equal(reference_top_p_judge(s, N, 0.9, set, 1e-6, why, sizeof why), 1);
}

/* The filter layer's head-averaged weights over a stream's keys (its context read from
 * one materialisation per kv head): they sum to 1 and are each head's weights averaged;
 * on peaked inputs top-p at 0.9 keeps a small part of the keys, on flat ones a large part. */
static void test_filter_scores(void **state)
{
    (void)state;
    const scores_t kinds[] = {SCORES_FLAT, SCORES_PEAKED};
    long kept[2];
    for (int k = 0; k < 2; ++k) {
        problem_t p = test_problem(1, 2, 8, 2, 64, 2000, 9);
        p.scores = kinds[k];
        if (p.scores == SCORES_PEAKED) {
            p.sink_logit = 8.0;
            p.heavy_logit = 6.0;
            p.recent_logit = 4.0;
        }
        test_validate(&p);
        const ref_source_t src = test_logical_source(&p, LAYOUT_CONTIGUOUS, 5);
        double *scores = malloc((size_t)(p.ctx + p.gen) * sizeof *scores);
        unsigned char *set = malloc((size_t)(p.ctx + p.gen));
        assert_non_null(scores);
        assert_non_null(set);
        const int keys = p.ctx + p.gen;
        assert_int_equal(reference_select_scores(&src, 1, scores), keys);
        double sum = 0.0;
        for (int i = 0; i < keys; ++i) {
            assert_true(scores[i] >= 0.0);
            sum += scores[i];
        }
        assert_true(fabs(sum - 1.0) < 1e-12);
        /* each head's weights as reference_probs gives them alone, averaged */
        double *prob = malloc((size_t)keys * sizeof *prob), mean7 = 0.0;
        assert_non_null(prob);
        for (int h = 0; h < p.heads; ++h) {
            assert_int_equal(reference_probs(&src, 1, h, prob), keys);
            mean7 += prob[7] / p.heads;
        }
        assert_true(fabs(mean7 - scores[7]) < 1e-15);
        free(prob);
        kept[k] = reference_top_p(scores, keys, 0.9, set);
        char why[200];
        assert_int_equal(reference_top_p_judge(scores, keys, 0.9, set, 1e-12, why, sizeof why), 0);
        free(scores);
        free(set);
    }
    print_message("top-p 0.9 of 2009 keys keeps %ld on flat scores, %ld on peaked\n", kept[0], kept[1]);
    assert_true(kept[0] > 2009 / 4);
    assert_true(kept[1] < kept[0] / 4);
}

/* The selected step's reference (key_mask): every key marked is attention itself; one
 * key marked gives that key's V row; two keys give their two rows in the ratio of their
 * weights. */
static void test_key_mask(void **state)
{
    (void)state;
    problem_t p = test_problem(1, 2, 4, 2, 16, 50, 3);
    test_validate(&p);
    ref_source_t src = test_logical_source(&p, LAYOUT_CONTIGUOUS, 9);
    const int keys = problem_keys(&p), d = p.head_dim;
    unsigned char *mask = calloc((size_t)problem_streams(&p) * keys, 1);
    assert_non_null(mask);
    double exact[16], got[16], prob[64];
    reference_row(&src, 1, 3, exact);
    memset(mask, 1, (size_t)problem_streams(&p) * keys);
    src.key_mask = mask;
    reference_row(&src, 1, 3, got);
    for (int x = 0; x < d; ++x) assert_true(got[x] == exact[x]);
    memset(mask, 0, (size_t)problem_streams(&p) * keys);
    mask[keys + 5] = 1; /* stream 1, key 5 */
    reference_row(&src, 1, 3, got);
    const int kv = 3 / problem_group(&p);
    for (int x = 0; x < d; ++x) assert_true(fabs(got[x] - kv_stored(&src.geom, src.seed, 1, 1, kv, 5, x)) < 1e-15);
    mask[keys + 51] = 1; /* and a decoded key */
    reference_row(&src, 1, 3, got);
    src.key_mask = NULL;
    assert_int_equal(reference_probs(&src, 1, 3, prob), keys);
    const double w5 = prob[5] / (prob[5] + prob[51]), w51 = prob[51] / (prob[5] + prob[51]);
    for (int x = 0; x < d; ++x)
        assert_true(fabs(got[x] - (w5 * kv_stored(&src.geom, src.seed, 1, 1, kv, 5, x) +
                                   w51 * kv_stored(&src.geom, src.seed, 1, 1, kv, 51, x))) < 1e-12);
    free(mask);
}

static void check_row(const ref_source_t *src, const unsigned char *chosen, result_row_t *row)
{
    result_row_init(row);
    snprintf(row->kernel, sizeof row->kernel, "select-filter");
    snprintf(row->status, sizeof row->status, "ok");
    snprintf(row->verified, sizeof row->verified, "yes");
    assert_int_equal(select_check(src, chosen, 3, 10.0, row), 0);
}

/* select_check passes the reference's own sets, and select_kept counts them; one stream's
 * set with a hole at its top, or sets never written (zeros), make the row a mismatch. */
static void test_select_check(void **state)
{
    (void)state;
    problem_t p = test_problem(3, 1, 8, 2, 64, 300, 5);
    p.scores = SCORES_PEAKED;
    p.top_p = 0.9;
    test_validate(&p);
    ref_source_t src = test_logical_source(&p, LAYOUT_CONTIGUOUS, 11);
    const int streams = problem_streams(&p), keys = problem_keys(&p);
    unsigned char *chosen = malloc((size_t)streams * keys);
    double *scores = malloc((size_t)keys * sizeof *scores);
    assert_non_null(chosen);
    assert_non_null(scores);
    long kept = 0, top = 0;
    for (int s = 0; s < streams; ++s) {
        assert_int_equal(reference_select_scores(&src, s, scores), keys);
        kept += reference_top_p(scores, keys, p.top_p, chosen + (size_t)s * keys);
        if (s == streams - 1)
            for (int i = 0; i < keys; ++i) top = scores[i] > scores[top] ? i : top;
    }
    result_row_t row;
    check_row(&src, chosen, &row);
    assert_string_equal(row.status, "ok");
    assert_string_equal(row.verified, "yes");
    assert_true(fabs(select_kept(&p, chosen) - (double)kept / ((double)streams * keys)) < 1e-12);
    assert_true(select_kept(&p, chosen) > 0.0 && select_kept(&p, chosen) < 0.5);
    /* the selected step's bytes: the kept keys' K and V and positions, q and out */
    const double k = select_kept(&p, chosen);
    assert_true(fabs(io_selected_bytes(&p, k) - (io_kv_bytes_stored(&p) * k + (double)streams * keys * k * 4 +
                                                 io_qo_bytes(&p) + io_table_bytes(&p))) < 1e-6);

    chosen[(size_t)(streams - 1) * keys + top] = 0; /* the last stream's best key left out */
    check_row(&src, chosen, &row);
    assert_string_equal(row.status, "mismatch");
    assert_string_equal(row.verified, "no");

    memset(chosen, 0, (size_t)streams * keys);
    check_row(&src, chosen, &row);
    assert_string_equal(row.status, "mismatch");
    assert_true(select_kept(&p, chosen) == 0.0);
    free(chosen);
    free(scores);
}

/* Rows at another --top-p are other rows (sweep --resume, compare): the key holds it. */
static void test_row_key_holds_top_p(void **state)
{
    (void)state;
    result_row_t a, b;
    result_row_init(&a);
    snprintf(a.kernel, sizeof a.kernel, "select-attend");
    b = a;
    snprintf(a.args, sizeof a.args, "--kernel select-attend --top-p 0.9");
    snprintf(b.args, sizeof b.args, "--kernel select-attend --top-p 0.95");
    char ka[1024], kb[1024];
    csv_row_key(&a, ka, sizeof ka);
    csv_row_key(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
    snprintf(b.args, sizeof b.args, "--kernel select-attend --top-p 0.9");
    csv_row_key(&b, kb, sizeof kb);
    assert_string_equal(ka, kb);
}

static void put_row(FILE *f, const char *kernel, const char *args, double us, double kept)
{
    result_row_t r;
    result_row_init(&r);
    snprintf(r.gpu, sizeof r.gpu, "h100");
    snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
    snprintf(r.model, sizeof r.model, "7b");
    snprintf(r.args, sizeof r.args, "%s", args);
    snprintf(r.dtype, sizeof r.dtype, "fp16");
    snprintf(r.cache, sizeof r.cache, "contiguous");
    snprintf(r.status, sizeof r.status, "ok");
    snprintf(r.verified, sizeof r.verified, "yes");
    r.layers = 32, r.batch = 1, r.beam = 1, r.heads = 32, r.kv_heads = 32, r.head_dim = 128;
    r.ctx = 8192, r.gen = 128, r.iters = 20;
    r.median_us = r.p10_us = r.p90_us = r.min_us = r.max_us = us;
    r.kept = kept;
    assert_int_equal(csv_write_row_cols(f, &r, csv_column_count), 0);
}

/* table --select-total: layers before the filter layer at fused's time, the filter step,
 * the layers after it at the selected step's (and at select-recompute's where measured);
 * configurations without both steps at a p give no line; a filter layer beyond the
 * model's layers is refused. */
static void test_select_total(void **state)
{
    (void)state;
    char path[] = "/tmp/attnbench_select_total.XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(csv_write_header(f), 0);
    put_row(f, "fused", "--kernel fused", 100.0, NAN);
    put_row(f, "select-filter", "--kernel select-filter --top-p 0.9", 120.0, 0.05);
    put_row(f, "select-attend", "--kernel select-attend --top-p 0.9", 10.0, 0.05);
    put_row(f, "select-attend", "--kernel select-attend --top-p 0.95", 12.0, 0.08);
    put_row(f, "select-recompute", "--kernel select-recompute --top-p 0.9", 50.0, 0.05);
    fclose(f);
    csv_table_t t;
    char msg[256];
    if (csv_read(path, &t, msg, sizeof msg) != 0) fail_msg("%s", msg);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_int_equal(select_total_render(out, &t, 15, TABLE_MD, msg, sizeof msg), 0);
    fclose(out);
    /* full 32 x 100 us; select (14 x 100 + 120 + 17 x 10) us; recomputing (14 x 100 + 120 + 17 x 50) us */
    assert_non_null(strstr(text, "| h100 | 7b | 1 | 1 | 8192 | 0.9 | 5.0% | 3.200 | 1.690 | 0.53 | 2.370 | 0.74 |"));
    assert_null(strstr(text, "| 0.95 |"));
    free(text);
    out = open_memstream(&text, &size);
    assert_int_equal(select_total_render(out, &t, 33, TABLE_MD, msg, sizeof msg), -1);
    fclose(out);
    assert_non_null(strstr(msg, "fewer than --filter-layer 33"));
    free(text);
    csv_free(&t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_radix_threshold_equals_sort),
        cmocka_unit_test(test_ties_go_in_whole),
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_filter_scores),
        cmocka_unit_test(test_select_check),
        cmocka_unit_test(test_key_mask),
        cmocka_unit_test(test_row_key_holds_top_p),
        cmocka_unit_test(test_select_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
