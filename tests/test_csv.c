/* CSV round trip, rejection of malformed files, and the row key. */
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

#include "../report/csv.h"
#include "../report/csv_internal.h"

static void ok_row(result_row_t *r, const char *kernel, int beam, double median)
{
    result_row_init(r);
    snprintf(r->gpu, sizeof r->gpu, "h100");
    snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
    snprintf(r->attn, sizeof r->attn, "gqa");
    r->batch = 1; r->beam = beam; r->heads = 32; r->kv_heads = 8; r->head_dim = 128;
    r->ctx = 8192; r->gen = 128;
    snprintf(r->dtype, sizeof r->dtype, "fp16");
    snprintf(r->cache, sizeof r->cache, "paged");
    r->block_size = 64; r->indirection = 1;
    snprintf(r->multi_block, sizeof r->multi_block, "auto");
    r->splits = 4;
    snprintf(r->status, sizeof r->status, "ok");
    r->iters = 100;
    r->median_us = median; r->p10_us = median - 1.5; r->p90_us = median + 2.25;
    r->min_us = median - 3; r->max_us = median + 10.125; r->noise = 0.0125;
    r->bytes = 4294967296.0; r->unique_bytes = 1073741824.0; r->flops = 68719476736.0;
    r->gbps = 2500.25; r->pct_peak_bw = 74.5; r->roofline_us = 320.5;
    snprintf(r->verified, sizeof r->verified, "yes");
    r->max_abs_err = 1.25e-4; r->rel_err = 3.5e-4;
    snprintf(r->version, sizeof r->version, "abc123-dirty");
    snprintf(r->ran, sizeof r->ran, "%s", kernel);
    snprintf(r->model, sizeof r->model, "7b-gqa");
    r->layers = 32;
    snprintf(r->args, sizeof r->args, "--kernel %s --beam %d --cache paged", kernel, beam);
    r->sm_mhz = 1755;
    r->peak_gbps = 3092;
    r->peak_tflops = 812;
    r->pct_spec_bw = 74.25;
    r->workspace_bytes = 1048576;
    snprintf(r->flags, sizeof r->flags, "noisy;throttled");
    r->device = 3;
    snprintf(r->kv_dtype, sizeof r->kv_dtype, "fp16");
}

static void oom_row(result_row_t *r)
{
    ok_row(r, "fused", 2048, NAN);
    snprintf(r->status, sizeof r->status, "oom");
    snprintf(r->verified, sizeof r->verified, "skip");
    r->iters = 0;
    r->p10_us = r->p90_us = r->min_us = r->max_us = r->noise = NAN;
    r->gbps = r->pct_peak_bw = NAN;
    r->max_abs_err = r->rel_err = NAN;
    r->sm_mhz = NAN;
    r->pct_spec_bw = NAN;
    r->flags[0] = '\0';
}

static int same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void assert_rows_equal(const result_row_t *a, const result_row_t *b)
{
    assert_string_equal(a->gpu, b->gpu);
    assert_string_equal(a->kernel, b->kernel);
    assert_string_equal(a->attn, b->attn);
    assert_int_equal(a->batch, b->batch);
    assert_int_equal(a->beam, b->beam);
    assert_int_equal(a->heads, b->heads);
    assert_int_equal(a->kv_heads, b->kv_heads);
    assert_int_equal(a->head_dim, b->head_dim);
    assert_int_equal(a->ctx, b->ctx);
    assert_int_equal(a->gen, b->gen);
    assert_string_equal(a->dtype, b->dtype);
    assert_string_equal(a->cache, b->cache);
    assert_int_equal(a->block_size, b->block_size);
    assert_int_equal(a->indirection, b->indirection);
    assert_string_equal(a->multi_block, b->multi_block);
    assert_int_equal(a->splits, b->splits);
    assert_string_equal(a->status, b->status);
    assert_int_equal(a->iters, b->iters);
    const double *da = &a->median_us, *db = &b->median_us;
    for (int i = 0; i < 12; i++)   /* median_us .. roofline_us are adjacent doubles */
        assert_true(same_double(da[i], db[i]));
    assert_string_equal(a->verified, b->verified);
    assert_true(same_double(a->max_abs_err, b->max_abs_err));
    assert_true(same_double(a->rel_err, b->rel_err));
    assert_string_equal(a->version, b->version);
    assert_string_equal(a->ran, b->ran);
    assert_string_equal(a->model, b->model);
    assert_int_equal(a->layers, b->layers);
    assert_string_equal(a->args, b->args);
    assert_true(same_double(a->sm_mhz, b->sm_mhz));
    assert_true(same_double(a->peak_gbps, b->peak_gbps));
    assert_true(same_double(a->peak_tflops, b->peak_tflops));
    assert_true(same_double(a->pct_spec_bw, b->pct_spec_bw));
    assert_true(same_double(a->workspace_bytes, b->workspace_bytes));
    assert_string_equal(a->flags, b->flags);
    assert_int_equal(a->device, b->device);
    assert_string_equal(a->kv_dtype, b->kv_dtype);
}

static char tmp_path[64];

static FILE *tmp_open(void)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/attnbench_csv_XXXXXX");
    int fd = mkstemp(tmp_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    return f;
}

static int read_text(const char *text, csv_table_t *t, char *msg, size_t len)
{
    FILE *f = tmp_open();
    fputs(text, f);
    fclose(f);
    int rc = csv_read(tmp_path, t, msg, len);
    unlink(tmp_path);
    return rc;
}

static void header_lists_spec_columns_in_order(void **state)
{
    (void)state;
    FILE *f = tmp_open();
    csv_write_header(f);
    fclose(f);
    f = fopen(tmp_path, "r");
    char line[1024];
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(tmp_path);
    assert_true(strncmp(line, "gpu,kernel,attn,batch,beam,heads,kv_heads,head_dim,ctx,gen,dtype,"
                              "cache,block_size,indirection,multi_block,splits,status,iters,"
                              "median_us,p10_us,p90_us,min_us,max_us,noise,bytes,unique_bytes,"
                              "flops,gbps,pct_peak_bw,roofline_us,verified,max_abs_err,rel_err,"
                              "version,", 200) == 0);
    char joined[1024] = "";
    for (int i = 0; i < csv_column_count; i++) {
        strcat(joined, csv_column_name(i));
        strcat(joined, i + 1 < csv_column_count ? "," : "\n");
    }
    assert_string_equal(line, joined);
    /* the appended columns, q_len last */
    assert_non_null(strstr(line, ",version,ran,model,layers,args,sm_mhz,peak_gbps,peak_tflops,pct_spec_bw,"
                                 "workspace_bytes,flags,device,kv_dtype,tp,tp_us,step,ctx_dist,ctx_total,ctx_max,"
                                 "approx_err,kept,q_len\n"));
}

static void round_trip_keeps_every_field(void **state)
{
    (void)state;
    result_row_t rows[3], back;
    ok_row(&rows[0], "fused", 16, 1234.5);
    oom_row(&rows[1]);
    ok_row(&rows[2], "bifurcated", 64, 88.25);
    /* a field that needs quoting survives */
    snprintf(rows[2].gpu, sizeof rows[2].gpu, "gpu \"x\", rev 2");
    /* a --tp row: the GPU count and each GPU's median */
    rows[2].tp = 2;
    snprintf(rows[2].tp_us, sizeof rows[2].tp_us, "80.500;88.250");
    /* a --q-len row: its count, named by its args as well */
    rows[0].q_len = 4;
    snprintf(rows[0].args, sizeof rows[0].args, "--kernel fused --beam 16 --cache paged --q-len 4");
    FILE *f = tmp_open();
    csv_write_header(f);
    for (int i = 0; i < 3; i++)
        csv_write_row(f, &rows[i]);
    fclose(f);

    csv_table_t t;
    char msg[256];
    assert_int_equal(csv_read(tmp_path, &t, msg, sizeof msg), 0);
    assert_int_equal(t.nrows, 3);
    assert_int_equal(t.ncols, csv_column_count);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(csv_row_parse(&t, i, &back), 0);
        assert_rows_equal(&rows[i], &back);
    }
    /* not-measured numbers are empty fields, not zeros */
    assert_string_equal(csv_cell(&t, 1, "median_us"), "");
    assert_string_equal(csv_cell(&t, 1, "gbps"), "");
    assert_string_equal(csv_cell(&t, 1, "status"), "oom");
    assert_string_equal(csv_cell(&t, 0, "median_us"), "1234.500");
    assert_null(csv_cell(&t, 0, "no_such_column"));
    assert_null(csv_cell(&t, 3, "gpu"));
    assert_string_equal(csv_cell(&t, 2, "tp"), "2");
    assert_string_equal(csv_cell(&t, 2, "tp_us"), "80.500;88.250");
    assert_string_equal(csv_cell(&t, 0, "tp"), "1");
    assert_string_equal(csv_cell(&t, 0, "tp_us"), "");
    assert_string_equal(csv_cell(&t, 0, "q_len"), "4");
    assert_string_equal(csv_cell(&t, 2, "q_len"), "1");
    assert_int_equal(csv_row_parse(&t, 0, &back), 0);
    assert_int_equal(back.q_len, 4);
    csv_free(&t);
    unlink(tmp_path);
    /* tp_us torn short of its tp times (or given on one GPU) reads as torn */
    const char *torn[] = {"80.500;", "80.500", "80.500;88.250;1.000", "x;1"};
    for (size_t k = 0; k < 4; ++k) {
        snprintf(rows[2].tp_us, sizeof rows[2].tp_us, "%s", torn[k]);
        f = tmp_open();
        csv_write_header(f);
        csv_write_row(f, &rows[2]);
        fclose(f);
        if (csv_read(tmp_path, &t, msg, sizeof msg) == 0) {
            assert_int_not_equal(csv_row_parse(&t, 0, &back), 0);
            csv_free(&t);
        }
        unlink(tmp_path);
    }
}

/* Files written before the appended columns existed still read; layers is then unknown. */
static void spec_columns_alone_are_enough(void **state)
{
    (void)state;
    result_row_t r;
    ok_row(&r, "cublas", 4, 10.0);
    FILE *f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &r);
    fclose(f);
    /* cut the appended columns off every line */
    f = fopen(tmp_path, "r");
    char a[2048], b[2048], out[4096] = "";
    assert_non_null(fgets(a, sizeof a, f));
    assert_non_null(fgets(b, sizeof b, f));
    fclose(f);
    unlink(tmp_path);
    for (char *line = a; line; line = line == a ? b : NULL) {
        char *p = line;
        for (int commas = 0; *p && commas < CSV_SPEC_COLUMNS; p++)
            commas += *p == ',';
        p[-1] = '\n';
        *p = '\0';
        strcat(out, line);
    }
    csv_table_t t;
    char msg[256];
    assert_int_equal(read_text(out, &t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, CSV_SPEC_COLUMNS);
    result_row_t back;
    assert_int_equal(csv_row_parse(&t, 0, &back), 0);
    assert_int_equal(back.layers, 0);
    assert_string_equal(back.model, "");
    assert_true(back.median_us == 10.0);
    csv_free(&t);
}

static void malformed_files_are_rejected(void **state)
{
    (void)state;
    result_row_t r;
    ok_row(&r, "fused", 1, 50.0);
    FILE *f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &r);
    fclose(f);
    f = fopen(tmp_path, "r");
    char header[2048], line[2048];
    assert_non_null(fgets(header, sizeof header, f));
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(tmp_path);

    csv_table_t t;
    char msg[256], text[8192];

    msg[0] = '\0';
    assert_int_equal(read_text("", &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "empty"));
    assert_int_equal(t.nrows, 0);

    /* a row one field short */
    snprintf(text, sizeof text, "%s%s%.*s\n", header, line, (int)(strrchr(line, ',') - line), line);
    assert_int_equal(read_text(text, &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, ":3:"));
    assert_non_null(strstr(msg, "fields"));

    /* a missing SPEC column: the header renamed */
    char *bad = strdup(header);
    memcpy(strstr(bad, "median_us"), "medianXus", 9);
    snprintf(text, sizeof text, "%s%s", bad, line);
    free(bad);
    assert_int_equal(read_text(text, &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "median_us"));

    /* a number that is not one, and an unknown status */
    char *row = strdup(line);
    memcpy(strstr(row, ",8192,"), ",81x2,", 6);
    snprintf(text, sizeof text, "%s%s", header, row);
    assert_int_equal(read_text(text, &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "ctx"));
    free(row);
    row = strdup(line);
    memcpy(strstr(row, ",ok,"), ",ko,", 4);
    snprintf(text, sizeof text, "%s%s", header, row);
    assert_int_equal(read_text(text, &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "status"));
    free(row);

    /* an unterminated quote */
    snprintf(text, sizeof text, "%s\"%s", header, line);
    assert_int_equal(read_text(text, &t, msg, sizeof msg), -1);

    /* unreadable */
    assert_int_equal(csv_read("/nonexistent/dir/x.csv", &t, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "/nonexistent/dir/x.csv"));

    /* the good file itself reads, also with CRLF line ends */
    snprintf(text, sizeof text, "%s%s", header, line);
    assert_int_equal(read_text(text, &t, msg, sizeof msg), 0);
    assert_int_equal(t.nrows, 1);
    csv_free(&t);
    char crlf[8192];
    size_t n = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            crlf[n++] = '\r';
        crlf[n++] = *p;
    }
    crlf[n] = '\0';
    assert_int_equal(read_text(crlf, &t, msg, sizeof msg), 0);
    assert_int_equal(t.nrows, 1);
    assert_string_equal(csv_cell(&t, 0, "args"), r.args);
    csv_free(&t);
}

static void key_joins_exactly_the_same_configuration(void **state)
{
    (void)state;
    result_row_t a, b;
    char ka[512], kb[512];
    ok_row(&a, "fused", 16, 100.0);
    ok_row(&b, "fused", 16, 900.0);   /* measurements differ, configuration equal */
    snprintf(b.status, sizeof b.status, "mismatch");
    snprintf(b.version, sizeof b.version, "other");
    b.noise = 0.5;
    csv_row_key(&a, ka, sizeof ka);
    csv_row_key(&b, kb, sizeof kb);
    assert_string_equal(ka, kb);

    /* a split count the planner chose is not configuration; a forced one is */
    ok_row(&b, "fused", 16, 100.0);
    b.splits = 8;
    csv_row_key(&b, kb, sizeof kb);
    assert_string_equal(ka, kb);
    result_row_t fa = a, fb = b;
    snprintf(fa.args, sizeof fa.args, "--kernel fused --splits 4");
    snprintf(fb.args, sizeof fb.args, "--kernel fused --splits 4");
    char kfa[512], kfb[512];
    csv_row_key(&fa, kfa, sizeof kfa);
    csv_row_key(&fb, kfb, sizeof kfb);
    assert_string_not_equal(kfa, kfb);

    /* each configuration column on its own changes the key */
    for (int field = 0; field < 12; field++) {
        ok_row(&b, "fused", 16, 100.0);
        switch (field) {
        case 0: b.beam = 32; break;
        case 1: b.batch = 2; break;
        case 2: b.kv_heads = 4; break;
        case 3: b.ctx = 16384; break;
        case 4: b.gen = 1; break;
        case 5: snprintf(b.dtype, sizeof b.dtype, "bf16"); break;
        case 6: snprintf(b.cache, sizeof b.cache, "contiguous"); break;
        case 7: b.block_size = 32; break;
        case 8: b.indirection = 0; break;
        case 9: snprintf(b.multi_block, sizeof b.multi_block, "off"); break;
        case 10: snprintf(b.gpu, sizeof b.gpu, "h200"); break;
        case 11: snprintf(b.kernel, sizeof b.kernel, "bifurcated"); break;
        }
        csv_row_key(&b, kb, sizeof kb);
        assert_string_not_equal(ka, kb);
    }
}

/* A cache in the dtype keys as rows did before the kv_dtype column (empty, in a file of
 * then, or equal to the dtype); an 8-bit one adds its storage and scale, read from the
 * column or, in a file of then, from args. */
static void key_tells_the_kv_storage(void **state)
{
    (void)state;
    result_row_t a, b;
    char ka[512], kb[512], kv[16];
    ok_row(&a, "fused", 1, 100.0);
    ok_row(&b, "fused", 1, 100.0);
    b.kv_dtype[0] = '\0';
    csv_row_key(&a, ka, sizeof ka);
    csv_row_key(&b, kb, sizeof kb);
    assert_string_equal(ka, kb);
    assert_null(strstr(ka, "kv="));
    csv_row_kv_dtype(&b, kv, sizeof kv);
    assert_string_equal(kv, "fp16");

    snprintf(b.kv_dtype, sizeof b.kv_dtype, "fp8");
    snprintf(b.args, sizeof b.args, "--kernel fused --kv-dtype fp8 --kv-scale tensor --cache paged");
    csv_row_key(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
    assert_non_null(strstr(kb, "|kv=fp8/tensor"));
    /* the same row in a file without the column: args say it */
    result_row_t c = b;
    c.kv_dtype[0] = '\0';
    char kc[512];
    csv_row_key(&c, kc, sizeof kc);
    assert_string_equal(kb, kc);
    csv_row_kv_dtype(&c, kv, sizeof kv);
    assert_string_equal(kv, "fp8");
    /* scale and storage each count; an absent --kv-scale is tensor */
    snprintf(c.kv_dtype, sizeof c.kv_dtype, "fp8");
    snprintf(c.args, sizeof c.args, "--kernel fused --kv-dtype fp8 --kv-scale head");
    csv_row_key(&c, kc, sizeof kc);
    assert_string_not_equal(kb, kc);
    snprintf(c.args, sizeof c.args, "--kernel fused --kv-dtype fp8");
    csv_row_key(&c, kc, sizeof kc);
    assert_string_equal(kb, kc);
    snprintf(c.kv_dtype, sizeof c.kv_dtype, "int8");
    csv_row_key(&c, kc, sizeof kc);
    assert_string_not_equal(kb, kc);
}

/* --step append rows: the step column round trips; the key tells append from attend
 * and each RoPE setting apart (from args, as resume and compare read them); a row of a
 * file without the column is attend unless its args say otherwise; table's view of an
 * older file gets the column; a step text that is neither reads as torn. */
static void key_tells_the_step(void **state)
{
    (void)state;
    result_row_t a, b, back;
    ok_row(&a, "fused", 4, 10.0);
    b = a;
    snprintf(b.step, sizeof b.step, "append");
    snprintf(b.args, sizeof b.args, "--kernel fused --step append --rope neox --rope-base 10000 --rope-scale 1");
    char ka[512], kb[512], kc[512], st[16];
    csv_row_key(&a, ka, sizeof ka);
    csv_row_key(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
    assert_null(strstr(ka, "append"));
    assert_non_null(strstr(kb, "|append=neox/10000/1"));
    csv_row_step(&a, st, sizeof st);
    assert_string_equal(st, "attend");
    result_row_t c = b;
    c.step[0] = '\0';
    csv_row_step(&c, st, sizeof st);
    assert_string_equal(st, "append");
    csv_row_key(&c, kc, sizeof kc);
    assert_string_equal(kb, kc);
    snprintf(c.args, sizeof c.args, "--kernel fused --step append --rope gptj --rope-base 1e4 --rope-scale 1");
    csv_row_key(&c, kc, sizeof kc);
    assert_non_null(strstr(kc, "|append=gptj/10000/1"));
    snprintf(c.args, sizeof c.args, "--kernel fused --step append --rope neox --rope-base 10000 --rope-scale 4");
    csv_row_key(&c, kc, sizeof kc);
    assert_string_not_equal(kb, kc);

    FILE *f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &b);
    fclose(f);
    csv_table_t t;
    char msg[256];
    assert_int_equal(csv_read(tmp_path, &t, msg, sizeof msg), 0);
    assert_string_equal(csv_cell(&t, 0, "step"), "append");
    assert_int_equal(csv_row_parse(&t, 0, &back), 0);
    assert_string_equal(back.step, "append");
    csv_free(&t);
    unlink(tmp_path);
    snprintf(b.step, sizeof b.step, "appen");
    f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &b);
    fclose(f);
    if (csv_read(tmp_path, &t, msg, sizeof msg) == 0) {
        assert_int_not_equal(csv_row_parse(&t, 0, &back), 0);
        csv_free(&t);
    }
    unlink(tmp_path);

    assert_int_equal(csv_read("tests/fixtures/compare_base.csv", &t, msg, sizeof msg), 0);
    const int ncols = t.ncols;
    assert_true(csv_column(&t, "step") < 0);
    assert_int_equal(csv_add_step(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 1);
    for (int r = 0; r < t.nrows; r++) assert_string_equal(csv_cell(&t, r, "step"), "attend");
    csv_free(&t);
}

/* table's view of a file written before the kv_dtype column: every row gets it, from its
 * args or its dtype; a file that has it keeps its own. */
static void older_files_get_a_kv_dtype_column(void **state)
{
    (void)state;
    char msg[256];
    csv_table_t t;
    assert_int_equal(csv_read("tests/fixtures/compare_base.csv", &t, msg, sizeof msg), 0);
    const int ncols = t.ncols;
    assert_true(csv_column(&t, "kv_dtype") < 0);
    assert_int_equal(csv_add_kv_dtype(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 1);
    for (int r = 0; r < t.nrows; r++)
        assert_string_equal(csv_cell(&t, r, "kv_dtype"), csv_cell(&t, r, "dtype"));
    assert_int_equal(csv_add_kv_dtype(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 1);
    csv_free(&t);

    result_row_t r;
    ok_row(&r, "fused", 1, 5.0);
    snprintf(r.kv_dtype, sizeof r.kv_dtype, "int8");
    FILE *f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &r);
    fclose(f);
    assert_int_equal(csv_read(tmp_path, &t, msg, sizeof msg), 0);
    assert_int_equal(csv_add_kv_dtype(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, csv_column_count);
    assert_string_equal(csv_cell(&t, 0, "kv_dtype"), "int8");
    csv_free(&t);
    unlink(tmp_path);
}

/* Files from before --ctx-dist get its columns (every request at ctx); a ragged row is
 * another row than the fixed one of the same longest length, and its ctx_max and
 * ctx_total must agree with its ctx and batch. */
static void older_files_get_ctx_dist_columns(void **state)
{
    (void)state;
    char msg[256];
    csv_table_t t;
    assert_int_equal(csv_read("tests/fixtures/compare_base.csv", &t, msg, sizeof msg), 0);
    const int ncols = t.ncols;
    assert_int_equal(csv_add_ctx_dist(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 3);
    for (int r = 0; r < t.nrows; r++) {
        assert_string_equal(csv_cell(&t, r, "ctx_dist"), "fixed");
        assert_string_equal(csv_cell(&t, r, "ctx_max"), csv_cell(&t, r, "ctx"));
        assert_true(strtod(csv_cell(&t, r, "ctx_total"), NULL) ==
                    strtod(csv_cell(&t, r, "batch"), NULL) * strtod(csv_cell(&t, r, "ctx"), NULL));
    }
    assert_int_equal(csv_add_ctx_dist(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 3);
    csv_free(&t);

    result_row_t fixed, ragged, back;
    ok_row(&fixed, "fused", 1, 5.0);
    fixed.batch = 4;
    snprintf(fixed.ctx_dist, sizeof fixed.ctx_dist, "fixed");
    fixed.ctx_total = 4 * 8192.0;
    fixed.ctx_max = 8192;
    ragged = fixed;
    snprintf(ragged.ctx_dist, sizeof ragged.ctx_dist, "uniform:1k:8k");
    ragged.ctx_total = 20000;
    char a[1024], b[1024];
    csv_row_key(&fixed, a, sizeof a);
    csv_row_key(&ragged, b, sizeof b);
    assert_string_not_equal(a, b);
    fixed.ctx_dist[0] = '\0'; /* a row that does not record it is a fixed one */
    csv_row_key(&fixed, b, sizeof b);
    assert_string_equal(a, b);
    const double totals[] = {20000, 8191, 4 * 8192.0 + 1};
    for (int k = 0; k < 3; ++k) {
        ragged.ctx_total = totals[k];
        FILE *f = tmp_open();
        csv_write_header(f);
        csv_write_row(f, &ragged);
        fclose(f);
        /* a total outside ctx .. batch x ctx is refused with the file */
        const int read = csv_read(tmp_path, &t, msg, sizeof msg) == 0;
        assert_int_equal(read, k == 0);
        if (read) {
            assert_int_equal(csv_row_parse(&t, 0, &back), 0);
            assert_string_equal(back.ctx_dist, "uniform:1k:8k");
            assert_true(back.ctx_total == 20000 && back.ctx_max == 8192);
            csv_free(&t);
        }
        unlink(tmp_path);
    }
}

/* --q-len: n query tokens per stream is another configuration than one token's; rows of
 * one token keep the keys they had before the column; a file without the column reads
 * as one token per row, and table's view of it gets the column (from args, else 1). */
static void key_and_older_files_tell_the_q_len(void **state)
{
    (void)state;
    result_row_t a, b;
    ok_row(&a, "fused", 1, 5.0);
    b = a;
    b.q_len = 4;
    snprintf(b.args, sizeof b.args, "--kernel fused --beam 1 --cache paged --q-len 4");
    char ka[512], kb[512];
    csv_row_key(&a, ka, sizeof ka);
    csv_row_key(&b, kb, sizeof kb);
    assert_string_not_equal(ka, kb);
    assert_null(strstr(ka, "q_len"));
    assert_non_null(strstr(kb, "|q_len=4"));

    char msg[256];
    csv_table_t t;
    assert_int_equal(csv_read("tests/fixtures/compare_base.csv", &t, msg, sizeof msg), 0);
    assert_true(csv_column(&t, "q_len") < 0);
    result_row_t r;
    assert_int_equal(csv_row_parse(&t, 0, &r), 0);
    assert_int_equal(r.q_len, 1);
    const int ncols = t.ncols;
    assert_int_equal(csv_add_q_len(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 1);
    for (int i = 0; i < t.nrows; i++) assert_string_equal(csv_cell(&t, i, "q_len"), "1");
    assert_int_equal(csv_add_q_len(&t, msg, sizeof msg), 0);
    assert_int_equal(t.ncols, ncols + 1);
    csv_free(&t);
}

/* A q_len cell must be a count from 1 to 16, the one its args name. */
static void q_len_cells_match_their_args(void **state)
{
    (void)state;
    result_row_t r;
    ok_row(&r, "fused", 1, 5.0);
    r.q_len = 4;
    snprintf(r.args, sizeof r.args, "--kernel fused --q-len 4");
    FILE *f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &r);
    fclose(f);
    size_t size;
    char *text = csv_read_bytes(tmp_path, &size);
    unlink(tmp_path);
    assert_non_null(text);
    csv_table_t t;
    char msg[256];
    assert_int_equal(csv_parse_text(text, size, "x.csv", &t, msg, sizeof msg), 0);
    csv_free(&t);
    /* the last field, ",4\n", as 1 (its args say 4), 17, 0 and nothing */
    static const char *const bad[] = {"1", "17", "0", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char edited[8192];
        snprintf(edited, sizeof edited, "%.*s%s\n", (int)(size - 2), text, bad[i]);
        assert_int_equal(csv_parse_text(edited, strlen(edited), "x.csv", &t, msg, sizeof msg), -1);
        assert_non_null(strstr(msg, "q_len"));
    }
    free(text);
}

static void append_needs_the_same_columns(void **state)
{
    (void)state;
    result_row_t r;
    ok_row(&r, "fused", 1, 5.0);
    FILE *f = tmp_open();
    csv_write_header(f);
    csv_write_row(f, &r);
    csv_write_row(f, &r);
    fclose(f);
    csv_table_t a, b;
    char msg[256];
    assert_int_equal(csv_read(tmp_path, &a, msg, sizeof msg), 0);
    assert_int_equal(csv_read(tmp_path, &b, msg, sizeof msg), 0);
    unlink(tmp_path);
    assert_int_equal(csv_append(&a, &b, msg, sizeof msg), 0);
    assert_int_equal(a.nrows, 4);
    assert_string_equal(csv_cell(&a, 3, "kernel"), "fused");
    free(b.names[1]);
    b.names[1] = strdup("kernelx");
    assert_int_equal(csv_append(&a, &b, msg, sizeof msg), -1);
    assert_int_equal(a.nrows, 4);
    csv_free(&a);
    csv_free(&b);
}

/* A run appending to a file of an earlier version writes that version's columns, so
 * the file stays whole; a file whose header is not such a prefix is refused. */
static void appending_keeps_an_earlier_versions_columns(void **state)
{
    (void)state;
    char msg[256];
    result_row_t r, back;
    ok_row(&r, "bifurcated", 8, 42.0);
    /* tests/fixtures hold files written before the sm_mhz column */
    const char *old = "tests/fixtures/compare_base.csv";
    assert_int_equal(csv_file_columns(old, msg, sizeof msg), csv_column_count - 17);

    FILE *f = tmp_open();
    csv_write_header(f);
    fclose(f);
    assert_int_equal(csv_file_columns(tmp_path, msg, sizeof msg), csv_column_count);
    unlink(tmp_path);

    /* the fixture's header and rows, then a row of its columns */
    csv_table_t t;
    assert_int_equal(csv_read(old, &t, msg, sizeof msg), 0);
    const int rows = t.nrows, ncols = t.ncols;
    csv_free(&t);
    FILE *in = fopen(old, "r");
    assert_non_null(in);
    f = tmp_open();
    char line[4096];
    while (fgets(line, sizeof line, in)) fputs(line, f);
    fclose(in);
    csv_write_row_cols(f, &r, ncols);
    fclose(f);
    assert_int_equal(csv_read(tmp_path, &t, msg, sizeof msg), 0);
    assert_int_equal(t.nrows, rows + 1);
    assert_int_equal(t.ncols, ncols);
    assert_int_equal(csv_row_parse(&t, rows, &back), 0);
    assert_string_equal(back.args, r.args);
    assert_true(back.median_us == 42.0);
    assert_true(isnan(back.sm_mhz));
    assert_true(isnan(back.peak_gbps) && isnan(back.workspace_bytes));
    assert_string_equal(back.flags, "");
    csv_free(&t);
    unlink(tmp_path);

    /* two columns swapped: not a prefix of ours */
    f = tmp_open();
    fputs("gpu,attn,kernel", f);
    for (int c = 3; c < csv_column_count; c++) fprintf(f, ",%s", csv_column_name(c));
    fputc('\n', f);
    fclose(f);
    msg[0] = '\0';
    assert_int_equal(csv_file_columns(tmp_path, msg, sizeof msg), -1);
    assert_true(strstr(msg, "columns") != NULL);
    unlink(tmp_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_lists_spec_columns_in_order),
        cmocka_unit_test(round_trip_keeps_every_field),
        cmocka_unit_test(spec_columns_alone_are_enough),
        cmocka_unit_test(malformed_files_are_rejected),
        cmocka_unit_test(key_joins_exactly_the_same_configuration),
        cmocka_unit_test(key_tells_the_kv_storage),
        cmocka_unit_test(older_files_get_a_kv_dtype_column),
        cmocka_unit_test(key_tells_the_step),
        cmocka_unit_test(older_files_get_ctx_dist_columns),
        cmocka_unit_test(key_and_older_files_tell_the_q_len),
        cmocka_unit_test(q_len_cells_match_their_args),
        cmocka_unit_test(append_needs_the_same_columns),
        cmocka_unit_test(appending_keeps_an_earlier_versions_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
