/* The --out file: what an existing file gets (out_csv.h), the repair of a torn last
 * row only at the first write, the resume keys, and the reader's refusal of ok rows
 * whose times are not real times. */
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

#include "../bench/out_csv.h"
#include "../report/csv_internal.h"

static char dir[] = "/tmp/attnbench_out_csv.XXXXXX";
static char path[256];

static void row(result_row_t *r, int beam, const char *status, const char *args)
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
    if (!strcmp(status, "ok"))
        r->median_us = r->p10_us = r->p90_us = r->min_us = r->max_us = 10.0 + beam;
    snprintf(r->verified, sizeof r->verified, "skip");
    snprintf(r->version, sizeof r->version, "test");
    r->layers = 1;
    snprintf(r->args, sizeof r->args, "--kernel fused --beam %d%s", beam, args);
}

static char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    *n = fread(buf, 1, sizeof buf - 1, f);
    buf[*n] = '\0';
    fclose(f);
    return buf;
}

static void spit(const char *p, const char *text, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    fclose(f);
}

/* A results CSV of rows beam 1..n with the given statuses, in memory. */
static size_t results_text(char *buf, size_t len, const char *const *statuses, int n)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s/gen.csv", dir);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    csv_write_header(f);
    for (int i = 0; i < n; ++i) {
        result_row_t r;
        row(&r, i + 1, statuses[i], "");
        csv_write_row(f, &r);
    }
    fclose(f);
    size_t got;
    char *text = slurp(tmp, &got);
    assert_true(got < len);
    memcpy(buf, text, got + 1);
    return got;
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.csv", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static const char *const three_ok[] = {"ok", "ok", "ok"};

static void a_torn_last_row_is_cut_at_the_first_write_only(void **state)
{
    (void)state;
    static char text[1 << 15];
    size_t n = results_text(text, sizeof text, three_ok, 3);
    const char torn[] = "h100,fused,gqa,1,16,32,8,1";
    memcpy(text + n, torn, sizeof torn);
    spit(path, text, n + strlen(torn));
    out_csv_t o;
    char msg[512];
    assert_int_equal(out_csv_check(&o, path, true, false, msg, sizeof msg), 0);
    assert_int_equal(o.mode, OUT_APPEND);
    assert_int_equal(o.n_done, 3);
    size_t got;
    assert_int_equal(strlen(slurp(path, &got)), n + strlen(torn)); /* untouched so far */
    result_row_t r;
    row(&r, 9, "ok", "");
    assert_int_equal(out_csv_write(&o, &r, msg, sizeof msg), 0);
    assert_int_equal(out_csv_close(&o, msg, sizeof msg), 0);
    char *after = slurp(path, &got);
    assert_memory_equal(after, text, n);                  /* the finished rows stay */
    assert_string_equal(after + n, "h100,fused,gqa,1,9,32,8,128,8192,128,fp16,contiguous,0,0,auto,0,ok,0,"
                                   "19.000,19.000,19.000,19.000,19.000,,,,,,,,skip,,,test,,,1,"
                                   "--kernel fused --beam 9,,,,,,,0,,1,,,,,0,,,1\n");
}

/* A kill inside the last fields: a row cut inside its flags lacks the device and
 * kv_dtype columns after them, and a flags text cut short is no flags text either way;
 * inside kv_dtype, only a known name (or none, its args telling the storage) makes it a
 * finished one; inside tp_us only tp times do, inside step only attend or append (or
 * none: a row of an earlier version, its args telling), inside ctx_max only the row's
 * ctx (or 0: not recorded), inside kept only a fraction with its four decimals, and
 * inside q_len, the last column, only the count its args name (none: 1). (A cut inside a
 * device number of two digits leaves a valid row of another device: device is neither a
 * measurement nor part of the row's key.) */
static void a_row_torn_inside_its_flags_is_cut(void **state)
{
    (void)state;
    static char text[1 << 15];
    size_t n = results_text(text, sizeof text, three_ok, 3);
    /* the last row ends with its empty flags, its device 0, its empty kv_dtype, tp 1, its
     * empty tp_us, step, ctx_dist and ctx_total, its ctx_max 0, its empty approx_err and
     * kept and q_len 1: ",0,,1,,,,,0,,,1\n" cut, then a tail */
    static const struct { const char *tail; int whole; } tails[] = {
        {"noisy;th", 0}, {"nois", 0}, {"noisy;", 0}, {"noisy;throttled,3", 0}, {"noisy;throttled,0,int8", 0},
        {"noisy;throttled,0,,1", 0}, {"noisy;throttled,0,,1,", 0}, {"noisy;throttled,0,in,1,,,,,0,,,1", 0},
        {",0,,2,1.5,,,,0,,,1", 0}, {",0,,2,1.5;,,,,0,,,1", 0}, {",0,fp16,1,7,,,,0,,,1", 0},
        {",0,,1,,att,,,0,,,1", 0}, {",0,,1,,appen,,,0,,,1", 0}, {",0,fp16,1,,,fixed,8192,81,,,1", 0},
        {",0,fp16,1,,,fixed,81,8192,,,1", 0}, {",0,,1,,,,,0,,0.68,1", 0},
        {",0,,1,,,,,0,1.000e-02,1.5000,1", 0}, {",0,,1,,,,,0,,,", 0}, {",0,,1,,,,,0,,,16", 0},
        {",0,,1,,,,,0,,,4", 0}, {",0,,1,,,,,0,,", 0}, {",0,,1,,attend,,,0,1.000e-02,0.6875", 0},
        {",0,,1,,,,,0,,1", 0}, {"noisy;throttled,0,int8,1,,,,,0,,,1", 1},
        {"noisy;throttled,0,,1,,,,,0,,,1", 1}, {",0,fp16,1,,,,,0,,,1", 1}, {",0,,2,1.500;2.250,,,,0,,,1", 1},
        {",0,,2,1.500;2,,,,0,,,1", 1}, {",0,,1,,attend,,,0,,,1", 1}, {",0,,1,,append,,,0,,,1", 1},
        {",0,fp16,1,,,fixed,8192,8192,,,1", 1}, {",0,,1,,attend,,,0,1.000e-02,0.6875,1", 1},
        {",0,,1,,,,,0,,,1", 1},
    };
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; ++i) {
        char edited[1 << 15];
        snprintf(edited, sizeof edited, "%.*s%s", (int)(n - 16), text, tails[i].tail);
        spit(path, edited, strlen(edited));
        out_csv_t o;
        char msg[512];
        assert_int_equal(out_csv_check(&o, path, true, false, msg, sizeof msg), 0);
        if (o.n_done != 2 + tails[i].whole) fail_msg("tail '%s': %d rows kept", tails[i].tail, o.n_done);
        assert_int_equal(out_csv_close(&o, msg, sizeof msg), 0);
    }
}

static void a_complete_last_row_gets_its_newline(void **state)
{
    (void)state;
    static char text[1 << 15];
    size_t n = results_text(text, sizeof text, three_ok, 3);
    spit(path, text, n - 1);                              /* the final newline cut */
    out_csv_t o;
    char msg[512];
    assert_int_equal(out_csv_check(&o, path, true, false, msg, sizeof msg), 0);
    assert_int_equal(o.n_done, 3);                        /* the last row counts */
    result_row_t r;
    row(&r, 9, "ok", "");
    assert_int_equal(out_csv_write(&o, &r, msg, sizeof msg), 0);
    assert_int_equal(out_csv_close(&o, msg, sizeof msg), 0);
    size_t got;
    char *after = slurp(path, &got);
    assert_memory_equal(after, text, n);                  /* the newline, then the row */
    assert_int_equal(strncmp(after + n, "h100,fused,gqa,1,9,", 19), 0);
}

static void error_rows_run_again_oom_and_unsupported_do_not(void **state)
{
    (void)state;
    static char text[1 << 15];
    static const char *const statuses[] = {"ok", "error", "oom", "unsupported", "mismatch"};
    size_t n = results_text(text, sizeof text, statuses, 5);
    spit(path, text, n);
    out_csv_t o;
    char msg[512];
    assert_int_equal(out_csv_check(&o, path, true, false, msg, sizeof msg), 0);
    for (int beam = 1; beam <= 5; ++beam) {
        result_row_t r;
        char key[1024];
        row(&r, beam, "ok", "");
        csv_row_key(&r, key, sizeof key);
        assert_int_equal(out_csv_done(&o, key), beam != 2);
    }
    out_csv_close(&o, msg, sizeof msg);
}

static void the_key_holds_q_scaling_hot_and_graph(void **state)
{
    (void)state;
    result_row_t a, b;
    char ka[1024], kb[1024];
    row(&a, 4, "ok", "");
    csv_row_key(&a, ka, sizeof ka);
    static const char *const other[] = {" --hot", " --graph", " --q-scaling 2", " --hot --graph"};
    for (int i = 0; i < 4; ++i) {
        row(&b, 4, "ok", other[i]);
        csv_row_key(&b, kb, sizeof kb);
        assert_string_not_equal(ka, kb);
    }
    row(&b, 4, "ok", " --q-scaling 1"); /* the default, written out */
    csv_row_key(&b, kb, sizeof kb);
    assert_string_equal(ka, kb);
}

static void existing_files_are_refused_unless_asked(void **state)
{
    (void)state;
    static char text[1 << 15];
    size_t n = results_text(text, sizeof text, three_ok, 3);
    spit(path, text, n);
    out_csv_t o;
    char msg[512];
    assert_int_equal(out_csv_check(&o, path, false, false, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--force"));
    assert_int_equal(out_csv_check(&o, path, false, true, msg, sizeof msg), 0);
    assert_int_equal(o.mode, OUT_REPLACE);
    out_csv_close(&o, msg, sizeof msg);
    spit(path, "not,a,results,file\n1,2,3,4\n", 26);
    assert_int_equal(out_csv_check(&o, path, false, true, msg, sizeof msg), -1);
    assert_int_equal(out_csv_check(&o, path, true, false, msg, sizeof msg), -1);
    assert_int_equal(out_csv_check(&o, dir, false, true, msg, sizeof msg), -1);
    assert_int_equal(out_csv_check(&o, "/dev/null", false, true, msg, sizeof msg), -1);
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s/fresh.csv", dir);
    assert_int_equal(out_csv_check(&o, fresh, true, false, msg, sizeof msg), 0);
    assert_int_equal(o.mode, OUT_NEW);
    assert_int_equal(access(fresh, F_OK), -1);           /* made at the first row only */
    out_csv_close(&o, msg, sizeof msg);
}

static void ok_rows_need_real_times(void **state)
{
    (void)state;
    static char text[1 << 15];
    size_t n = results_text(text, sizeof text, three_ok, 1);
    static const char *const bad[] = {"inf", "nan", "-inf", "1e999", "", "0", "-5"};
    for (int i = 0; i < 7; ++i) {
        /* the median of the one row, the 19th field */
        char edited[1 << 15];
        char *p = text;
        for (int commas = 0; commas < 18 + csv_column_count - 1; ++p) commas += *p == ',';
        /* p: start of the row's median (the header's commas, then 18 fields) */
        size_t head = (size_t)(p - text);
        char *end = strchr(p, ',');
        snprintf(edited, sizeof edited, "%.*s%s%s", (int)head, text, bad[i], end);
        csv_table_t t;
        char msg[512];
        assert_int_equal(csv_parse_text(edited, strlen(edited), "x.csv", &t, msg, sizeof msg), -1);
        assert_non_null(strstr(msg, "x.csv:2:"));
        assert_non_null(strstr(msg, "median_us"));
    }
    csv_table_t t;
    char msg[512];
    assert_int_equal(csv_parse_text(text, n, "x.csv", &t, msg, sizeof msg), 0);
    csv_free(&t);
}

static void long_texts_are_refused_not_cut(void **state)
{
    (void)state;
    static char text[1 << 15];
    size_t n = results_text(text, sizeof text, three_ok, 1);
    char edited[1 << 15];
    const char *row1 = strchr(text, '\n') + 1;
    snprintf(edited, sizeof edited, "%.*sNVIDIA H100 80GB HBM3 with a long suffix A%s",
             (int)(row1 - text), text, row1 + 4);
    csv_table_t t;
    char msg[512];
    assert_int_equal(csv_parse_text(edited, strlen(edited), "x.csv", &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "column gpu"));
    (void)n;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_torn_last_row_is_cut_at_the_first_write_only),
        cmocka_unit_test(a_row_torn_inside_its_flags_is_cut),
        cmocka_unit_test(a_complete_last_row_gets_its_newline),
        cmocka_unit_test(error_rows_run_again_oom_and_unsupported_do_not),
        cmocka_unit_test(the_key_holds_q_scaling_hot_and_graph),
        cmocka_unit_test(existing_files_are_refused_unless_asked),
        cmocka_unit_test(ok_rows_need_real_times),
        cmocka_unit_test(long_texts_are_refused_not_cut),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
