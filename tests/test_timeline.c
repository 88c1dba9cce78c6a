/* The closing time lines of run, sweep and verify (bench/timeline.c): each slot's
 * set-up and rows summed from its workers' reports, the parts that took no time left
 * out, every number in seconds to a tenth. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/timeline.h"
#include "../harness/verify.h"

/* What timeline_print writes, in a buffer the caller frees. */
static char *printed(const timeline_t *t, int rows, double end, const int *devices)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    timeline_print(f, t, rows, end, devices);
    assert_int_equal(fclose(f), 0);
    return text;
}

static void a_two_gpu_sweep_says_where_its_time_went(void **state)
{
    (void)state;
    timeline_t t;
    timeline_init(&t, 100.0);
    t.listed_s = 0.42;
    const pool_spent_t setup0 = {.total_s = 2.3, .peak_s = 1.8}, setup1 = {.total_s = 2.2, .peak_s = 1.76};
    timeline_ready(&t, 1, &setup1);
    timeline_ready(&t, 0, &setup0);
    const pool_spent_t row = {.total_s = 0.5, .verify_s = 0.1, .timing_s = 0.3};
    for (int i = 0; i < 3; ++i) timeline_row(&t, 0, &row, 103.0 + i);
    timeline_row(&t, 1, &row, 104.04);
    const int devices[2] = {2, 3};
    char *text = printed(&t, 4, 109.6, devices);
    assert_string_equal(text,
                        "# 4 rows in 9.6 s (listing the GPUs 0.4 s)\n"
                        "# device 2: set-up 2.3 s (peaks 1.8 s), 3 rows 1.5 s (verification 0.3 s, timing 0.9 s), last at 5.0 s\n"
                        "# device 3: set-up 2.2 s (peaks 1.8 s), 1 rows 0.5 s (verification 0.1 s, timing 0.3 s), last at 4.0 s\n");
    free(text);
}

/* verify measures no peaks and times nothing; a run without --devices lists no GPUs and
 * runs on the default one; a restarted worker's set-up adds to its slot's. */
static void parts_that_took_no_time_are_left_out(void **state)
{
    (void)state;
    timeline_t t;
    timeline_init(&t, 0.0);
    const pool_spent_t setup = {.total_s = 0.6};
    timeline_ready(&t, 0, &setup);
    timeline_ready(&t, 0, &setup);
    const pool_spent_t row = {.total_s = 0.25, .verify_s = 0.2};
    timeline_row(&t, 0, &row, 1.5);
    timeline_row(&t, 0, &row, 2.0);
    char *text = printed(&t, 2, 2.25, NULL);
    assert_string_equal(text, "# 2 rows in 2.2 s\n"
                              "# device 0: set-up 1.2 s, 2 rows 0.5 s (verification 0.4 s), last at 2.0 s\n");
    free(text);
    /* a worker that ran no row (fewer rows than devices, or every one already in --out) */
    timeline_init(&t, 0.0);
    timeline_ready(&t, 0, &setup);
    text = printed(&t, 0, 1.0, NULL);
    assert_string_equal(text, "# 0 rows in 1.0 s\n# device 0: set-up 0.6 s, 0 rows 0.0 s\n");
    free(text);
}

/* A slot beyond the table is not counted (nor written out of bounds). */
static void slots_beyond_the_table_are_ignored(void **state)
{
    (void)state;
    timeline_t t;
    timeline_init(&t, 0.0);
    const pool_spent_t s = {.total_s = 1.0};
    timeline_ready(&t, TIMELINE_SLOTS_MAX, &s);
    timeline_row(&t, -1, &s, 1.0);
    assert_int_equal(t.slots, 0);
    timeline_row(&t, TIMELINE_SLOTS_MAX - 1, &s, 1.0);
    assert_int_equal(t.slots, TIMELINE_SLOTS_MAX);
}

static void the_clock_runs_forward(void **state)
{
    (void)state;
    const double a = verify_seconds_now(), b = verify_seconds_now();
    assert_true(a > 0.0);
    assert_true(b >= a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_two_gpu_sweep_says_where_its_time_went),
        cmocka_unit_test(parts_that_took_no_time_are_left_out),
        cmocka_unit_test(slots_beyond_the_table_are_ignored),
        cmocka_unit_test(the_clock_runs_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
