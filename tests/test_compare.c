/* Regression verdicts on fixture CSVs (tests/fixtures/compare_*.csv: six rows with
 * medians 100..600 us and 1% noise, and variants of them). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../report/compare.h"
#include "../report/compare_internal.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

int cmd_compare(int argc, char **argv);

static compare_result_t run(const char *base, const char *next, double threshold)
{
    csv_table_t b, n;
    compare_result_t r;
    char msg[256];
    assert_int_equal(csv_read(base, &b, msg, sizeof msg), 0);
    assert_int_equal(csv_read(next, &n, msg, sizeof msg), 0);
    assert_int_equal(compare_tables(&b, &n, threshold, &r, msg, sizeof msg), 0);
    csv_free(&b);
    csv_free(&n);
    return r;
}

/* Exit status and printed text of compare_files. */
static int run_files(const char *base, const char *next, char **text, char *msg, size_t len)
{
    size_t size;
    FILE *f = open_memstream(text, &size);
    int rc = compare_files(base, next, 0.05, false, f, msg, len);
    fclose(f);
    return rc;
}

static void identical_files_are_all_same(void **state)
{
    (void)state;
    compare_result_t r = run(FIXTURES "/compare_base.csv", FIXTURES "/compare_base.csv", 0.05);
    assert_int_equal(r.n, 6);
    assert_int_equal(r.count[VERDICT_SAME], 6);
    assert_int_equal(compare_exit_status(&r), 0);
    for (int i = 0; i < r.n; i++)
        assert_true(r.entries[i].change == 0.0);
    compare_free(&r);

    char *text = NULL, msg[256];
    assert_int_equal(run_files(FIXTURES "/compare_base.csv", FIXTURES "/compare_base.csv", &text,
                               msg, sizeof msg), 0);
    assert_non_null(strstr(text, "6 same"));
    assert_non_null(strstr(text, "PASS"));
    assert_non_null(strstr(text, "configuration"));
    free(text);
}

static void twenty_percent_slower_with_low_noise_is_slower(void **state)
{
    (void)state;
    compare_result_t r = run(FIXTURES "/compare_base.csv", FIXTURES "/compare_slower.csv", 0.05);
    assert_int_equal(r.count[VERDICT_SLOWER], 1);
    assert_int_equal(r.count[VERDICT_SAME], 5);
    const compare_entry_t *e = &r.entries[1];
    assert_int_equal(e->verdict, VERDICT_SLOWER);
    assert_string_equal(e->base.kernel, "fused");
    assert_int_equal(e->base.beam, 16);
    assert_true(fabs(e->change - 0.20) < 1e-9);
    assert_true(fabs(e->noise - sqrt(2.0) * 0.01) < 1e-9);
    assert_true(e->limit == 0.05);
    assert_int_equal(compare_exit_status(&r), 1);
    compare_free(&r);

    char *text = NULL, msg[256];
    assert_int_equal(run_files(FIXTURES "/compare_base.csv", FIXTURES "/compare_slower.csv", &text,
                               msg, sizeof msg), 1);
    assert_non_null(strstr(text, "+20.0"));
    assert_non_null(strstr(text, "FAIL"));
    free(text);
    /* a threshold above the change lets it pass */
    r = run(FIXTURES "/compare_base.csv", FIXTURES "/compare_slower.csv", 0.25);
    assert_int_equal(r.count[VERDICT_SAME], 6);
    compare_free(&r);
}

static void slower_within_noise_is_same(void **state)
{
    (void)state;
    /* 15% noise on both sides: limit 2 * sqrt(2) * 15% = 42% > 20% */
    compare_result_t r = run(FIXTURES "/compare_noisy_base.csv", FIXTURES "/compare_noisy_slower.csv",
                             0.05);
    assert_int_equal(r.count[VERDICT_SAME], 6);
    assert_true(fabs(r.entries[1].change - 0.20) < 1e-9);
    assert_true(fabs(r.entries[1].limit - 2 * sqrt(2.0) * 0.15) < 1e-9);
    assert_int_equal(compare_exit_status(&r), 0);
    compare_free(&r);
}

static void faster_passes(void **state)
{
    (void)state;
    compare_result_t r = run(FIXTURES "/compare_base.csv", FIXTURES "/compare_faster.csv", 0.05);
    assert_int_equal(r.entries[0].verdict, VERDICT_FASTER);
    assert_int_equal(compare_exit_status(&r), 0);
    compare_free(&r);
}

static void missing_row_fails_and_extra_row_is_new(void **state)
{
    (void)state;
    compare_result_t r = run(FIXTURES "/compare_base.csv", FIXTURES "/compare_missing.csv", 0.05);
    assert_int_equal(r.count[VERDICT_MISSING], 1);
    assert_int_equal(r.entries[3].verdict, VERDICT_MISSING);
    assert_int_equal(r.entries[3].base.beam, 64);
    assert_int_equal(compare_exit_status(&r), 1);
    compare_free(&r);

    r = run(FIXTURES "/compare_missing.csv", FIXTURES "/compare_base.csv", 0.05);
    assert_int_equal(r.n, 6);
    assert_int_equal(r.count[VERDICT_NEW], 1);
    assert_int_equal(r.entries[5].verdict, VERDICT_NEW);
    assert_int_equal(compare_exit_status(&r), 0);
    compare_free(&r);
}

static void ok_to_mismatch_is_broken(void **state)
{
    (void)state;
    compare_result_t r = run(FIXTURES "/compare_base.csv", FIXTURES "/compare_mismatch.csv", 0.05);
    assert_int_equal(r.count[VERDICT_BROKEN], 1);
    assert_int_equal(r.entries[2].verdict, VERDICT_BROKEN);
    assert_int_equal(compare_exit_status(&r), 1);
    compare_free(&r);
    /* and back: fixed, which passes */
    r = run(FIXTURES "/compare_mismatch.csv", FIXTURES "/compare_base.csv", 0.05);
    assert_int_equal(r.entries[2].verdict, VERDICT_FIXED);
    assert_int_equal(compare_exit_status(&r), 0);
    compare_free(&r);
}

static void row_rules(void **state)
{
    (void)state;
    result_row_t a, b;
    double change, noise, limit;
    result_row_init(&a);
    snprintf(a.status, sizeof a.status, "ok");
    snprintf(a.verified, sizeof a.verified, "yes");
    a.median_us = 100;
    a.noise = NAN;   /* not measured counts as no noise */
    b = a;
    b.median_us = 104;
    assert_int_equal(compare_rows(&a, &b, 0.05, &change, &noise, &limit), VERDICT_SAME);
    assert_true(noise == 0.0 && limit == 0.05);
    b.median_us = 106;
    assert_int_equal(compare_rows(&a, &b, 0.05, &change, &noise, &limit), VERDICT_SLOWER);
    /* verified yes -> no breaks even when the time is fine */
    snprintf(b.verified, sizeof b.verified, "no");
    b.median_us = 100;
    assert_int_equal(compare_rows(&a, &b, 0.05, &change, &noise, &limit), VERDICT_BROKEN);
    /* ok -> oom breaks; oom -> oom stays same; oom -> error breaks */
    b = a;
    snprintf(b.status, sizeof b.status, "oom");
    assert_int_equal(compare_rows(&a, &b, 0.05, &change, &noise, &limit), VERDICT_BROKEN);
    snprintf(a.status, sizeof a.status, "oom");
    assert_int_equal(compare_rows(&a, &b, 0.05, &change, &noise, &limit), VERDICT_SAME);
    snprintf(b.status, sizeof b.status, "error");
    assert_int_equal(compare_rows(&a, &b, 0.05, &change, &noise, &limit), VERDICT_BROKEN);
}

static void malformed_file_exits_2(void **state)
{
    (void)state;
    char *text = NULL, msg[256] = "";
    assert_int_equal(run_files(FIXTURES "/compare_base.csv", FIXTURES "/malformed_ragged.csv",
                               &text, msg, sizeof msg), 2);
    free(text);
    assert_non_null(strstr(msg, "malformed_ragged.csv:4"));
    assert_int_equal(run_files("/nonexistent.csv", FIXTURES "/compare_base.csv", &text, msg,
                               sizeof msg), 2);
    free(text);
}

static void command_exit_statuses(void **state)
{
    (void)state;
    /* the command prints its table on stdout; only the status is checked here */
    char *same[] = { "compare", FIXTURES "/compare_base.csv", FIXTURES "/compare_base.csv", NULL };
    char *slow[] = { "compare", "--changes", FIXTURES "/compare_base.csv",
                     FIXTURES "/compare_slower.csv", NULL };
    char *loose[] = { "compare", FIXTURES "/compare_base.csv", FIXTURES "/compare_slower.csv",
                      "--threshold", "0.3", NULL };
    char *bad[] = { "compare", FIXTURES "/compare_base.csv", FIXTURES "/malformed_ragged.csv", NULL };
    char *one[] = { "compare", FIXTURES "/compare_base.csv", NULL };
    char *thr[] = { "compare", "--threshold", "-1", "a.csv", "b.csv", NULL };
    assert_int_equal(cmd_compare(3, same), 0);
    assert_int_equal(cmd_compare(4, slow), 1);
    assert_int_equal(cmd_compare(5, loose), 0);
    assert_int_equal(cmd_compare(3, bad), 2);
    assert_int_equal(cmd_compare(2, one), 2);
    assert_int_equal(cmd_compare(5, thr), 2);
}

/* A copy of a fixture with the sm_mhz column appended, every row at mhz. */
static void with_clock(const char *fixture, const char *path, int mhz)
{
    FILE *in = fopen(fixture, "r"), *out = fopen(path, "w");
    assert_non_null(in);
    assert_non_null(out);
    char line[4096];
    for (int first = 1; fgets(line, sizeof line, in); first = 0) {
        line[strcspn(line, "\n")] = '\0';
        if (first) fprintf(out, "%s,sm_mhz\n", line);
        else fprintf(out, "%s,%d\n", line, mhz);
    }
    fclose(in);
    fclose(out);
}

/* Each row shows the clocks its two sides ran at, "-" for a side without one. */
static void rows_show_both_sides_clocks(void **state)
{
    (void)state;
    const char *base = "/tmp/attnbench_compare_base_mhz.csv", *slower = "/tmp/attnbench_compare_slower_mhz.csv";
    with_clock(FIXTURES "/compare_base.csv", base, 1830);
    with_clock(FIXTURES "/compare_slower.csv", slower, 1520);
    char *text = NULL, msg[256];
    assert_int_equal(run_files(base, slower, &text, msg, sizeof msg), 1);
    assert_non_null(strstr(text, "MHz base/new"));
    assert_non_null(strstr(text, "1830/1520"));
    free(text);
    text = NULL;
    assert_int_equal(run_files(FIXTURES "/compare_base.csv", slower, &text, msg, sizeof msg), 1);
    assert_non_null(strstr(text, "-/1520"));
    assert_null(strstr(text, "1830"));
    free(text);
    remove(base);
    remove(slower);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_files_are_all_same),
        cmocka_unit_test(twenty_percent_slower_with_low_noise_is_slower),
        cmocka_unit_test(slower_within_noise_is_same),
        cmocka_unit_test(faster_passes),
        cmocka_unit_test(missing_row_fails_and_extra_row_is_new),
        cmocka_unit_test(ok_to_mismatch_is_broken),
        cmocka_unit_test(row_rules),
        cmocka_unit_test(malformed_file_exits_2),
        cmocka_unit_test(command_exit_statuses),
        cmocka_unit_test(rows_show_both_sides_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
