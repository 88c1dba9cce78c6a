/* merge's checks (report/merge.c) on tables read from text: one version, one set of
 * columns, no configuration twice, except a resumed file's error rows. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../report/csv.h"
#include "../report/csv_internal.h"
#include "../report/merge.h"

static void row(result_row_t *r, int beam, const char *status, const char *version)
{
    result_row_init(r);
    snprintf(r->gpu, sizeof r->gpu, "h100");
    snprintf(r->kernel, sizeof r->kernel, "fused");
    snprintf(r->attn, sizeof r->attn, "gqa");
    r->batch = 1; r->beam = beam; r->heads = 32; r->kv_heads = 8; r->head_dim = 128;
    r->ctx = 8192; r->gen = 128;
    snprintf(r->dtype, sizeof r->dtype, "fp16");
    snprintf(r->cache, sizeof r->cache, "contiguous");
    snprintf(r->multi_block, sizeof r->multi_block, "auto");
    snprintf(r->status, sizeof r->status, "%s", status);
    if (!strcmp(status, "ok")) r->median_us = r->p10_us = r->p90_us = r->min_us = r->max_us = 10.0;
    snprintf(r->verified, sizeof r->verified, "skip");
    snprintf(r->version, sizeof r->version, "%s", version);
    snprintf(r->args, sizeof r->args, "--kernel fused --beam %d", beam);
}

/* A table of rows "beam:status[:version]" separated by spaces, of ncols columns. */
static void table(csv_table_t *t, const char *spec, int ncols)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    csv_write_header_cols(f, ncols);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char status[16] = "ok", version[16] = "v1";
        int beam = atoi(w);
        char *c = strchr(w, ':');
        if (c) sscanf(c + 1, "%15[^:]:%15s", status, version);
        result_row_t r;
        row(&r, beam, status, version);
        csv_write_row_cols(f, &r, ncols);
    }
    fclose(f);
    char msg[256];
    assert_int_equal(csv_parse_text(text, size, "t.csv", t, msg, sizeof msg), 0);
    free(text);
}

static int check(const char *a, const char *b, char *msg, size_t len)
{
    csv_table_t t[2];
    table(&t[0], a, csv_column_count);
    table(&t[1], b, csv_column_count);
    const char *paths[] = {"a.csv", "b.csv"};
    int rc = merge_check(t, paths, 2, msg, len);
    csv_free(&t[0]);
    csv_free(&t[1]);
    return rc;
}

static void disjoint_shards_join(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(check("1 2 4", "8 16", msg, sizeof msg), 0);
    assert_int_equal(check("1 2:oom", "", msg, sizeof msg), 0);
    assert_int_equal(check("", "", msg, sizeof msg), 0);
}

/* A resumed shard holds its error rows and, after them, the row that ran again. */
static void a_resumed_shards_error_rows_are_history(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(check("1 2:error 4 2:error 2", "8", msg, sizeof msg), 0);
    assert_int_equal(check("1 2:error", "8 2:error", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "b.csv:3:"));
    assert_non_null(strstr(msg, "a.csv:3"));
}

static void a_configuration_twice_is_refused_naming_both_lines(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(check("1 2 4", "8 2", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "b.csv:3:"));
    assert_non_null(strstr(msg, "a.csv:3"));
    assert_int_equal(check("1 2 4 2:oom", "8", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "a.csv:5:"));
    assert_non_null(strstr(msg, "line 3"));
    assert_null(strchr(msg, '\n'));
}

static void one_version_throughout(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(check("1 2", "4 8:ok:v2", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "b.csv:3:"));
    assert_non_null(strstr(msg, "v2"));
    assert_int_equal(check("1 2:ok:v2", "4", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "a.csv:3:"));
}

static void one_set_of_columns(void **state)
{
    (void)state;
    csv_table_t t[2];
    table(&t[0], "1", csv_column_count);
    table(&t[1], "2", csv_column_count - 2);   /* an earlier version's file */
    const char *paths[] = {"a.csv", "b.csv"};
    char msg[256];
    assert_int_equal(merge_check(t, paths, 2, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "b.csv:1:"));
    assert_non_null(strstr(msg, "columns"));
    csv_free(&t[0]);
    /* files of one earlier version join */
    table(&t[0], "1", csv_column_count - 2);
    assert_int_equal(merge_check(t, paths, 2, msg, sizeof msg), 0);
    csv_free(&t[0]);
    csv_free(&t[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(disjoint_shards_join),
        cmocka_unit_test(a_resumed_shards_error_rows_are_history),
        cmocka_unit_test(a_configuration_twice_is_refused_naming_both_lines),
        cmocka_unit_test(one_version_throughout),
        cmocka_unit_test(one_set_of_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
