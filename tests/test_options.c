/* Command-line options and suite files: every option into its field, --model and
 * its overrides, every bad input of SPEC §5 refused with one line naming the option. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../bench/options.h"
#include "../bench/suite.h"
#include "../problem/ctx_dist.h"
#include "../problem/share_map.h"
#include "../harness/grid_internal.h"

#ifndef ATTNBENCH_SUITE_DIR
#define ATTNBENCH_SUITE_DIR "bench/suites"
#endif

/* argv lives as long as the options that point into it: one buffer per call slot. */
#define SLOTS 8
static char line_buf[SLOTS][1024];
static char *argv_buf[SLOTS][64];
static int slot;

static int parse(command_t cmd, const char *line, options_t *o, char *msg, size_t len)
{
    int s = slot++ % SLOTS;
    snprintf(line_buf[s], sizeof line_buf[s], "%s", line);
    int argc = 0;
    for (char *save, *t = strtok_r(line_buf[s], " ", &save); t; t = strtok_r(NULL, " ", &save))
        argv_buf[s][argc++] = t;
    argv_buf[s][argc] = NULL;
    msg[0] = '\0';
    return options_parse(argc, argv_buf[s], cmd, o, msg, len);
}

static void parse_ok(command_t cmd, const char *line, options_t *o)
{
    char msg[512];
    int rc = parse(cmd, line, o, msg, sizeof msg);
    if (rc != 0) fail_msg("'%s' refused (%d): %s", line, rc, msg);
}

static void expect_bad(command_t cmd, const char *line, const char *needle)
{
    options_t o;
    char msg[512];
    int rc = parse(cmd, line, &o, msg, sizeof msg);
    if (rc != -1) fail_msg("'%s' accepted (%d)", line, rc);
    if (!strstr(msg, needle)) fail_msg("'%s': expected '%s' in: %s", line, needle, msg);
    if (strchr(msg, '\n') || !msg[0]) fail_msg("'%s': not one line: '%s'", line, msg);
}

/* --tp N: into the grid, and from there into every point; N must divide the heads and
 * the kv heads, and --devices must give N GPUs */
static void test_tp(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_SWEEP, "sweep --dry-run --model mistral-7b --tp 2 --beam 8,16", &o);
    assert_int_equal(o.grid.tp, 2);
    assert_true(o.grid_set & GRID_FIELD_TP);
    assert_int_equal(o.grid.heads.v[0], 32);   /* the model's full heads: split on the GPUs */
    assert_int_equal(o.grid.kv_heads.v[0], 8);
    parse_ok(CMD_RUN, "run --kernel fused --heads 32 --kv-heads 8 --tp 8", &o);
    assert_int_equal(o.grid.tp, 8);
    parse_ok(CMD_SWEEP, "sweep --dry-run --beam 4", &o);
    assert_int_equal(o.grid.tp, 1);
    parse_ok(CMD_SWEEP, "sweep --dry-run --tp 2 --devices 0,1,2 --heads 32 --kv-heads 8", &o);
    expect_bad(CMD_SWEEP, "sweep --dry-run --model mistral-7b --tp 3", "--tp 3 must divide --heads 32 and --kv-heads 8");
    expect_bad(CMD_SWEEP, "sweep --dry-run --heads 32 --kv-heads 2 --tp 4", "must divide");
    expect_bad(CMD_RUN, "run --kernel fused --heads 16 --kv-heads 1 --tp 2", "must divide");
    expect_bad(CMD_SWEEP, "sweep --dry-run --tp 2 --devices 1 --heads 32 --kv-heads 8", "--tp 2 needs 2 GPUs; --devices gives 1");
    expect_bad(CMD_SWEEP, "sweep --dry-run --tp 0", "--tp");
    expect_bad(CMD_SWEEP, "sweep --dry-run --tp 9", "--tp");
    expect_bad(CMD_SWEEP, "sweep --dry-run --tp two", "--tp");
    expect_bad(CMD_TABLE, "table --in x.csv --paper 6 --tp 2", "--tp");
}

static void test_run_options_land_in_fields(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN,
             "run --batch 2 --beam 4 --heads 16 --kv-heads 4 --head-dim 64 --ctx 1k --gen 7 "
             "--dtype bf16 --cache paged --block-size 32 --indirection --multi-block on --splits 4 "
             "--q-scaling 2.5 --layers 3 --kernel fused --out x.csv --verify --profile --hot "
             "--graph --iters 50 --warmup 2 --min-time 0.5 --seed 18446744073709551615",
             &o);
    const grid_t *g = &o.grid;
    assert_int_equal(g->batch.n, 1);
    assert_int_equal(g->batch.v[0], 2);
    assert_int_equal(g->beam.v[0], 4);
    assert_int_equal(g->heads.v[0], 16);
    assert_int_equal(g->kv_heads.v[0], 4);
    assert_int_equal(g->head_dim.v[0], 64);
    assert_int_equal(g->ctx.v[0], 1024);
    assert_int_equal(g->gen.v[0], 7);
    assert_int_equal(g->n_dtype, 1);
    assert_int_equal(g->dtype[0], DTYPE_BF16);
    assert_int_equal(g->cache[0], CACHE_PAGED);
    assert_int_equal(g->block_size.v[0], 32);
    assert_true(g->indirection);
    assert_int_equal(g->multi_block[0], MULTI_BLOCK_ON);
    assert_int_equal(g->splits.v[0], 4);
    assert_true(g->q_scaling == 2.5);
    assert_int_equal(g->layers, 3);
    assert_null(g->model);
    assert_int_equal(o.n_kernels, 1);
    assert_string_equal(o.kernels[0], "fused");
    assert_string_equal(o.out, "x.csv");
    assert_true(o.verify && o.profile && o.hot && o.graph);
    assert_false(o.resume);
    assert_int_equal(o.iters, 50);
    assert_int_equal(o.warmup, 2);
    assert_true(o.min_time_s == 0.5);
    assert_true(o.seed == UINT64_MAX);
    assert_null(o.suite);
    assert_true(o.grid_set & GRID_FIELD_BATCH);
    assert_true(o.grid_set & GRID_FIELD_INDIRECTION);
    assert_false(o.grid_set & GRID_FIELD_MODEL);
}

static void test_short_forms_and_equals(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN, "run -b 3 -w 8 -H 8 -g 2 -d 128 -c 2k -t fp32 -S 16 -k cublas -o y.csv -n 7 "
                      "--gen=9",
             &o);
    assert_int_equal(o.grid.batch.v[0], 3);
    assert_int_equal(o.grid.beam.v[0], 8);
    assert_int_equal(o.grid.heads.v[0], 8);
    assert_int_equal(o.grid.kv_heads.v[0], 2);
    assert_int_equal(o.grid.head_dim.v[0], 128);
    assert_int_equal(o.grid.ctx.v[0], 2048);
    assert_int_equal(o.grid.gen.v[0], 9);
    assert_int_equal(o.grid.dtype[0], DTYPE_FP32);
    assert_int_equal(o.grid.block_size.v[0], 16);
    assert_string_equal(o.kernels[0], "cublas");
    assert_string_equal(o.out, "y.csv");
    assert_int_equal(o.iters, 7);
    /* -k is --kernels outside run */
    parse_ok(CMD_SWEEP, "sweep -k fused,auto -o s.csv -w 1:4", &o);
    assert_int_equal(o.n_kernels, 2);
    assert_string_equal(o.kernels[1], "auto");
}

static void test_defaults(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN, "run --kernel fused", &o);
    assert_int_equal(o.warmup, 3);
    assert_true(o.min_time_s == 0.1);
    assert_int_equal(o.iters, 0);
    assert_true(o.seed == 0);
    assert_int_equal(o.grid_set, 0);
    assert_null(o.out);
    assert_false(o.profile || o.hot || o.graph || o.resume);
    assert_true(o.verify && o.verify_time_s == 1.0);
    assert_true(o.max_noise_pct == 0.5 && o.max_time_s == 1.0);
    parse_ok(CMD_RUN, "run --kernel fused --max-noise 2 --max-time 0.25", &o);
    assert_true(o.max_noise_pct == 2.0 && o.max_time_s == 0.25);
    parse_ok(CMD_SWEEP, "sweep --suite quick --out x.csv --no-verify --verify-time 5", &o);
    assert_false(o.verify);
    assert_true(o.verify_time_s == 5.0);
    problem_t d = problem_default();
    assert_int_equal(o.grid.heads.v[0], d.heads);
    assert_int_equal(o.grid.ctx.v[0], d.ctx);

    parse_ok(CMD_VERIFY, "verify", &o);
    assert_string_equal(o.suite, "quick");
    assert_int_equal(o.n_kernels, 0);   /* every kernel */
    parse_ok(CMD_VERIFY, "verify --suite full --kernels fused --seed 7", &o);
    assert_string_equal(o.suite, "full");
    assert_int_equal(o.n_kernels, 1);
    assert_true(o.seed == 7);
}

static void test_sweep_lists(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_SWEEP,
             "sweep --beam 1:8 --kv-heads 32,8,1 --ctx 8k,16k --dtype fp16,bf16 "
             "--cache contiguous,paged --block-size 16,64 --multi-block off,on,auto "
             "--kernels fused,cublas,bifurcated --out s.csv --resume --verify --hot --graph",
             &o);
    assert_int_equal(o.grid.beam.n, 4);
    assert_int_equal(o.grid.beam.v[3], 8);
    assert_int_equal(o.grid.kv_heads.n, 3);
    assert_int_equal(o.grid.kv_heads.v[2], 1);
    assert_int_equal(o.grid.ctx.v[1], 16384);
    assert_int_equal(o.grid.n_dtype, 2);
    assert_int_equal(o.grid.dtype[1], DTYPE_BF16);
    assert_int_equal(o.grid.n_cache, 2);
    assert_int_equal(o.grid.cache[1], CACHE_PAGED);
    assert_int_equal(o.grid.n_multi_block, 3);
    assert_int_equal(o.grid.multi_block[0], MULTI_BLOCK_OFF);
    assert_int_equal(o.grid.multi_block[2], MULTI_BLOCK_AUTO);
    assert_int_equal(o.n_kernels, 3);
    assert_string_equal(o.kernels[0], "fused");
    assert_string_equal(o.kernels[2], "bifurcated");
    assert_true(o.resume && o.verify && o.hot && o.graph);
    assert_int_equal(grid_count(&o.grid), 4 * 3 * 2 * 2 * (1 + 2) * 3);
    assert_int_equal(o.grid_set, GRID_FIELD_BEAM | GRID_FIELD_KV_HEADS | GRID_FIELD_CTX |
                                     GRID_FIELD_DTYPE | GRID_FIELD_CACHE |
                                     GRID_FIELD_BLOCK_SIZE | GRID_FIELD_MULTI_BLOCK);
}

/* --step append and its RoPE options: one value each, into every point; the RoPE
 * options without --step append, unknown names and out-of-range numbers refused. */
static void test_step_options(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN, "run --kernel fused --step append --rope gptj --rope-base 500000 --rope-scale 8", &o);
    assert_int_equal(o.grid_set, GRID_FIELD_STEP | GRID_FIELDS_ROPE);
    problem_t *pts;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pts[0].step, STEP_APPEND);
    assert_int_equal(pts[0].rope, ROPE_GPTJ);
    assert_true(pts[0].rope_base == 500000.0 && pts[0].rope_scale == 8.0);
    free(pts);
    /* the defaults: attend; append with NeoX pairs, base 10000, no scaling */
    parse_ok(CMD_RUN, "run --kernel fused", &o);
    assert_int_equal(o.grid.step, STEP_ATTEND);
    parse_ok(CMD_SWEEP, "sweep --step append --beam 1,4 --out s.csv", &o);
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; ++i)
        assert_true(pts[i].step == STEP_APPEND && pts[i].rope == ROPE_NEOX && pts[i].rope_base == 10000.0 &&
                    pts[i].rope_scale == 1.0);
    free(pts);

    expect_bad(CMD_RUN, "run --kernel fused --step prefill", "--step: 'prefill' is not attend or append");
    expect_bad(CMD_RUN, "run --kernel fused --step append --rope llama", "--rope: 'llama' is not neox or gptj");
    expect_bad(CMD_RUN, "run --kernel fused --rope gptj", "need --step append");
    expect_bad(CMD_RUN, "run --kernel fused --step attend --rope-base 500000", "need --step append");
    expect_bad(CMD_SWEEP, "sweep --rope-scale 4 --out s.csv", "need --step append");
    expect_bad(CMD_RUN, "run --kernel fused --step append --rope-base 1", "--rope-base must be above 1");
    expect_bad(CMD_RUN, "run --kernel fused --step append --rope-base 0", "--rope-base must be positive");
    expect_bad(CMD_RUN, "run --kernel fused --step append --rope-base nan", "--rope-base: 'nan' is not a number");
    expect_bad(CMD_RUN, "run --kernel fused --step append --rope-scale 0", "--rope-scale must be positive");
    expect_bad(CMD_RUN, "run --kernel fused --step append --rope-scale x", "--rope-scale: 'x' is not a number");
    expect_bad(CMD_RUN, "run --kernel fused --step", "--step needs a value");

    /* a suite line: the same rule, on the line's own options */
    char line[] = "suite --step attend --rope gptj", ok_line[] = "suite --step append --rope gptj";
    char *argv[8], *ok_argv[8];
    int argc = 0, ok_argc = 0;
    for (char *save, *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) argv[argc++] = t;
    for (char *save, *t = strtok_r(ok_line, " ", &save); t; t = strtok_r(NULL, " ", &save)) ok_argv[ok_argc++] = t;
    argv[argc] = ok_argv[ok_argc] = NULL;
    assert_int_equal(options_parse_suite_line(argc, argv, &o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "need --step append"));
    assert_int_equal(options_parse_suite_line(ok_argc, ok_argv, &o, msg, sizeof msg), 0);
    assert_int_equal(o.grid.rope, ROPE_GPTJ);
}

/* --kv-dtype and --kv-scale: lists on the grid, one value for run; the scale axis only
 * on 8-bit points; a 16-bit cache only in the queries' dtype; bad names refused. */
static void test_kv_dtype_options(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN, "run --kernel fused --kv-dtype fp8 --kv-scale head", &o);
    assert_int_equal(o.grid.n_kv_dtype, 1);
    assert_int_equal(o.grid.kv_dtype[0], DTYPE_FP8);
    assert_int_equal(o.grid.kv_scale[0], KV_SCALE_HEAD);
    assert_int_equal(o.grid_set, GRID_FIELD_KV_DTYPE | GRID_FIELD_KV_SCALE);
    problem_t *pts;
    int n;
    char msg[256];
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pts[0].kv_quant, KV_QUANT_FP8);
    assert_int_equal(pts[0].kv_scale, KV_SCALE_HEAD);
    assert_int_equal(pts[0].dtype, DTYPE_FP16);
    assert_int_equal(problem_kv_dtype(&pts[0]), DTYPE_FP8);
    free(pts);

    /* default: the cache in --dtype, whatever that is */
    parse_ok(CMD_RUN, "run --kernel fused --dtype bf16", &o);
    assert_int_equal(o.grid.n_kv_dtype, 0);
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(pts[0].kv_quant, KV_QUANT_NONE);
    assert_int_equal(problem_kv_dtype(&pts[0]), DTYPE_BF16);
    free(pts);
    parse_ok(CMD_RUN, "run --kernel fused --dtype bf16 --kv-dtype bf16", &o);
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(pts[0].kv_quant, KV_QUANT_NONE);
    free(pts);

    /* a sweep: fp16 once, fp8 and int8 at both scales, outside the cache axis */
    parse_ok(CMD_SWEEP, "sweep --kv-dtype fp16,fp8,int8 --kv-scale tensor,head --cache contiguous,paged --out s.csv", &o);
    assert_int_equal(grid_count(&o.grid), (1 + 2 + 2) * 2);
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 10);
    const struct { kv_quant_t q; kv_scale_t s; cache_kind_t c; } want[] = {
        {KV_QUANT_NONE, KV_SCALE_TENSOR, CACHE_CONTIGUOUS}, {KV_QUANT_NONE, KV_SCALE_TENSOR, CACHE_PAGED},
        {KV_QUANT_FP8, KV_SCALE_TENSOR, CACHE_CONTIGUOUS}, {KV_QUANT_FP8, KV_SCALE_TENSOR, CACHE_PAGED},
        {KV_QUANT_FP8, KV_SCALE_HEAD, CACHE_CONTIGUOUS}, {KV_QUANT_FP8, KV_SCALE_HEAD, CACHE_PAGED},
        {KV_QUANT_INT8, KV_SCALE_TENSOR, CACHE_CONTIGUOUS}, {KV_QUANT_INT8, KV_SCALE_TENSOR, CACHE_PAGED},
        {KV_QUANT_INT8, KV_SCALE_HEAD, CACHE_CONTIGUOUS}, {KV_QUANT_INT8, KV_SCALE_HEAD, CACHE_PAGED},
    };
    for (int i = 0; i < n; ++i) {
        assert_int_equal(pts[i].kv_quant, want[i].q);
        assert_int_equal(pts[i].kv_scale, want[i].s);
        assert_int_equal(pts[i].cache, want[i].c);
    }
    free(pts);
    /* with two query dtypes, 8-bit caches go with both */
    parse_ok(CMD_SWEEP, "sweep --dtype fp16,bf16 --kv-dtype int8 --out s.csv", &o);
    assert_int_equal(grid_count(&o.grid), 2);

    expect_bad(CMD_RUN, "run --kernel fused --kv-dtype fp4", "--kv-dtype: unknown value 'fp4'");
    expect_bad(CMD_RUN, "run --kernel fused --kv-dtype fp8 --kv-scale row", "--kv-scale: unknown value 'row'");
    expect_bad(CMD_RUN, "run --kernel fused --dtype bf16 --kv-dtype fp16", "--kv-dtype fp16 must be --dtype (bf16)");
    expect_bad(CMD_SWEEP, "sweep --dtype fp16,bf16 --kv-dtype fp16,fp8 --out s.csv", "--kv-dtype fp16 must be --dtype (bf16)");
    expect_bad(CMD_RUN, "run --kernel fused --kv-dtype fp8,int8", "--kv-dtype takes one value for run");
    expect_bad(CMD_RUN, "run --kernel fused --kv-dtype fp8 --kv-scale tensor,head", "--kv-scale takes one value for run");
    expect_bad(CMD_SWEEP, "sweep --kv-dtype fp8,fp8 --out s.csv", "--kv-dtype: 'fp8' is listed twice");
    expect_bad(CMD_RUN, "run --kernel fused --dtype int8", "--dtype: unknown value 'int8'");
    expect_bad(CMD_RUN, "run --kernel fused --kv-dtype", "--kv-dtype needs a value");
}

static void test_model_sets_and_explicit_wins(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN, "run --model 7b-gqa --kernel fused", &o);
    assert_int_equal(o.grid.heads.v[0], 32);
    assert_int_equal(o.grid.kv_heads.v[0], 8);
    assert_int_equal(o.grid.head_dim.v[0], 128);
    assert_int_equal(o.grid.layers, 32);
    assert_string_equal(o.grid.model, "7b-gqa");
    assert_true(o.grid_set & GRID_FIELD_KV_HEADS);   /* set through the model */

    parse_ok(CMD_RUN, "run --heads 16 --model 7b-gqa --kernel fused", &o);
    assert_int_equal(o.grid.heads.v[0], 16);
    assert_int_equal(o.grid.kv_heads.v[0], 8);
    parse_ok(CMD_RUN, "run -m 7b-gqa --kv-heads 4 --layers 2 --kernel fused", &o);
    assert_int_equal(o.grid.kv_heads.v[0], 4);
    assert_int_equal(o.grid.heads.v[0], 32);
    assert_int_equal(o.grid.layers, 2);
    parse_ok(CMD_RUN, "run --head-dim 64 --model 7b --kernel fused", &o);
    assert_int_equal(o.grid.head_dim.v[0], 64);
    assert_int_equal(o.grid.kv_heads.v[0], 32);
    /* explicit values are validated with the model's: g = 3 does not divide 32 */
    expect_bad(CMD_RUN, "run --model 7b --kv-heads 3 --kernel fused", "--kv-heads 3 must divide");
}

/* --help prints to stdout; the text goes to a file here, so it can be checked. */
static int parse_help(command_t cmd, const char *line, char *text, size_t text_len)
{
    options_t o;
    char msg[256];
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fileno(tmp), STDOUT_FILENO);
    int rc = parse(cmd, line, &o, msg, sizeof msg);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(text, 1, text_len - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    return rc;
}

/* The model name outlives the command line it came from: problems carry it into CSV
 * rows long after argv (or a suite file's text) is gone. */
static void test_model_name_outlives_argv(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_SWEEP, "sweep --model 7b-gqa --out x.csv", &o);
    for (int s = 0; s < SLOTS; ++s) memset(line_buf[s], 'x', sizeof line_buf[s] - 1);
    assert_non_null(o.grid.model);
    assert_string_equal(o.grid.model, "7b-gqa");
}

static void test_help(void **state)
{
    (void)state;
    char text[8192];
    assert_int_equal(parse_help(CMD_RUN, "run --help", text, sizeof text), 1);
    assert_non_null(strstr(text, "usage: attnbench run"));
    assert_non_null(strstr(text, "--kv-heads"));
    assert_int_equal(parse_help(CMD_SWEEP, "sweep --beam 1:4 -h", text, sizeof text), 1);
    assert_non_null(strstr(text, "usage: attnbench sweep"));
    assert_int_equal(parse_help(CMD_VERIFY, "verify --help", text, sizeof text), 1);
    assert_non_null(strstr(text, "usage: attnbench verify"));
    assert_int_equal(parse_help(CMD_LIST, "list --help", text, sizeof text), 1);
    assert_non_null(strstr(text, "usage: attnbench list"));
}

static void test_bad_problems(void **state)
{
    (void)state;
    expect_bad(CMD_RUN, "run --kv-heads 3 --kernel fused", "--kv-heads 3 must divide --heads 32");
    expect_bad(CMD_SWEEP, "sweep --heads 32 --kv-heads 32,8,5 --out s.csv", "--kv-heads 5");
    expect_bad(CMD_RUN, "run --cache paged --block-size 12 --kernel fused", "--block-size 12");
    expect_bad(CMD_RUN, "run --cache paged --block-size 256 --kernel fused", "--block-size 256");
    expect_bad(CMD_RUN, "run --cache paged --block-size 4 --kernel fused", "--block-size 4");
    expect_bad(CMD_RUN, "run --block-size 12 --kernel fused", "power of two");
    expect_bad(CMD_SWEEP, "sweep --cache paged --block-size 8:256 --out s.csv", "--block-size 256");
    expect_bad(CMD_RUN, "run --batch 0 --kernel fused", "--batch");
    expect_bad(CMD_RUN, "run --ctx -5 --kernel fused", "--ctx");
    expect_bad(CMD_RUN, "run --heads 0 --kernel fused", "--heads");
    expect_bad(CMD_RUN, "run --gen 0 --kernel fused", "--gen");
    expect_bad(CMD_RUN, "run --beam -1 --kernel fused", "--beam");
    expect_bad(CMD_RUN, "run --head-dim 100 --kernel fused", "--head-dim 100");
    expect_bad(CMD_RUN, "run --layers 0 --kernel fused", "--layers");
    expect_bad(CMD_RUN, "run --q-scaling -1 --kernel fused", "--q-scaling");
    expect_bad(CMD_RUN, "run --q-scaling nan --kernel fused", "--q-scaling");
    expect_bad(CMD_RUN, "run --splits 2000 --kernel fused", "--splits 2000");
    expect_bad(CMD_RUN, "run --splits 4 --multi-block off --kernel fused", "--splits 4 contradicts");
    expect_bad(CMD_RUN, "run --ctx 1m,1m --kernel fused", "--ctx");
}

static void test_bad_names(void **state)
{
    (void)state;
    expect_bad(CMD_RUN, "run --kernel nope", "--kernel: unknown kernel 'nope'");
    expect_bad(CMD_SWEEP, "sweep --kernels fused,nope --beam 1:4 --out s.csv", "--kernels: unknown kernel 'nope'");
    expect_bad(CMD_SWEEP, "sweep --kernels fused,,cublas --beam 1:4 --out s.csv", "--kernels");
    expect_bad(CMD_SWEEP, "sweep --kernels fused,fused --beam 1:4 --out s.csv", "twice");
    expect_bad(CMD_RUN, "run --dtype fp8 --kernel fused", "--dtype: unknown value 'fp8'");
    expect_bad(CMD_SWEEP, "sweep --dtype fp16,fp16 --out s.csv", "--dtype: 'fp16' is listed twice");
    expect_bad(CMD_RUN, "run --cache weird --kernel fused", "--cache: unknown value 'weird'");
    expect_bad(CMD_RUN, "run --multi-block maybe --kernel fused", "--multi-block: unknown value");
    expect_bad(CMD_RUN, "run --model 70b --kernel fused", "--model: unknown model '70b'");
    expect_bad(CMD_VERIFY, "verify --suite medium", "--suite");
}

static void test_bad_numbers(void **state)
{
    (void)state;
    expect_bad(CMD_RUN, "run --iters x --kernel fused", "--iters");
    expect_bad(CMD_RUN, "run --iters -1 --kernel fused", "--iters");
    expect_bad(CMD_RUN, "run --warmup 1.5 --kernel fused", "--warmup");
    expect_bad(CMD_RUN, "run --min-time 0 --kernel fused", "--min-time");
    expect_bad(CMD_RUN, "run --min-time abc --kernel fused", "--min-time");
    expect_bad(CMD_RUN, "run --max-noise 0 --kernel fused", "--max-noise");
    expect_bad(CMD_SWEEP, "sweep --out x.csv --max-time -1", "--max-time");
    expect_bad(CMD_SWEEP, "sweep --out x.csv --verify-time abc", "--verify-time");
    expect_bad(CMD_RUN, "run --seed abc --kernel fused", "--seed");
    expect_bad(CMD_RUN, "run --seed 99999999999999999999 --kernel fused", "--seed");
    expect_bad(CMD_RUN, "run --beam 1:3 --kernel fused", "--beam");
    expect_bad(CMD_RUN, "run --ctx 8q --kernel fused", "--ctx");
}

static void test_bad_command_lines(void **state)
{
    (void)state;
    expect_bad(CMD_RUN, "run --beam 1,2 --kernel fused", "--beam takes one value for run; use sweep for grids");
    expect_bad(CMD_RUN, "run --beam 1:4 --kernel fused", "--beam takes one value for run");
    expect_bad(CMD_RUN, "run --dtype fp16,bf16 --kernel fused", "--dtype takes one value for run");
    expect_bad(CMD_RUN, "run --cache paged,contiguous --kernel fused", "--cache takes one value");
    expect_bad(CMD_RUN, "run --beam 4", "run needs --kernel");
    expect_bad(CMD_RUN, "run --kernels fused,cublas", "does not take --kernels");
    expect_bad(CMD_RUN, "run --kernel", "--kernel needs a value");
    expect_bad(CMD_RUN, "run -k", "--kernel needs a value");
    expect_bad(CMD_SWEEP, "sweep --beam 1:4", "sweep needs --out");
    expect_bad(CMD_SWEEP, "sweep --beam 1:4 --resume", "--resume needs --out");
    expect_bad(CMD_SWEEP, "sweep --out s.csv", "sweep needs a grid");
    expect_bad(CMD_SWEEP, "sweep --beam 1:4 --out s.csv --profile", "does not take --profile");
    expect_bad(CMD_SWEEP, "sweep --beam 1:4 --out s.csv --kernel fused", "does not take --kernel");
    expect_bad(CMD_RUN, "run --kernel fused --resume", "does not take --resume");
    expect_bad(CMD_RUN, "run --kernel fused --suite quick", "does not take --suite");
    expect_bad(CMD_VERIFY, "verify --beam 4", "does not take --beam");
    expect_bad(CMD_LIST, "list --batch 1", "does not take --batch");
    expect_bad(CMD_RUN, "run --frobnicate --kernel fused", "unknown or ambiguous option '--frobnicate'");
    expect_bad(CMD_RUN, "run -x --kernel fused", "unknown option '-x'");
    expect_bad(CMD_RUN, "run --verify=yes --kernel fused", "--verify takes no value");
    expect_bad(CMD_RUN, "run stray --kernel fused", "unexpected argument 'stray'");
}

/* ---- suites ---- */

static char suite_path[64];

static const char *write_suite(const char *text)
{
    snprintf(suite_path, sizeof suite_path, "/tmp/attnbench_suite_XXXXXX");
    int fd = mkstemp(suite_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return suite_path;
}

static void test_suite_lines(void **state)
{
    (void)state;
    const char *path = write_suite("# a comment line\n"
                                   "\n"
                                   "   \t\n"
                                   "--beam 1:4 --ctx 8k --kernels fused   # trailing comment\n"
                                   "--model 7b-gqa --heads 16 --kv-heads 4 --cache paged --block-size 16,64\n"
                                   "--ctx 1 --gen 1");   /* no final newline */
    suite_entry_t *e;
    int n;
    char msg[512];
    int rc = suite_load(path, NULL, &e, &n, msg, sizeof msg);
    if (rc) fail_msg("%s", msg);
    assert_int_equal(n, 3);
    assert_int_equal(e[0].grid.beam.n, 3);
    assert_int_equal(e[0].grid.beam.v[2], 4);
    assert_int_equal(e[0].grid.ctx.v[0], 8192);
    assert_int_equal(e[0].n_kernels, 1);
    assert_string_equal(e[0].kernels[0], "fused");
    assert_int_equal(e[1].grid.heads.v[0], 16);
    assert_int_equal(e[1].grid.kv_heads.v[0], 4);
    assert_int_equal(e[1].grid.head_dim.v[0], 128);
    assert_int_equal(e[1].grid.layers, 32);
    assert_string_equal(e[1].grid.model, "7b-gqa");
    assert_int_equal(e[1].grid.block_size.n, 2);
    assert_int_equal(e[1].grid.cache[0], CACHE_PAGED);
    assert_int_equal(e[1].n_kernels, 0);
    assert_int_equal(e[2].grid.ctx.v[0], 1);
    assert_int_equal(e[2].grid.beam.v[0], 1);   /* a line starts from the defaults */
    free(e);
    unlink(path);
}

/* A ragged batch's file of lengths named bare: a suite line reads it beside the suites,
 * the command line there too where the working directory has none of that name; either
 * way the spec stays as given, so that a row's args rerun from any checkout. */
static void test_ctx_dist_file_beside_the_suites(void **state)
{
    (void)state;
    char here[4096];
    assert_non_null(getcwd(here, sizeof here));
    assert_int_equal(chdir("/"), 0);
    options_t o;
    parse_ok(CMD_RUN, "run --kernel fused --batch 64 --ctx-dist file:ragged-64k-among-1k.lens", &o);
    assert_non_null(o.grid.ctx_dist);
    assert_string_equal(o.grid.ctx_dist->spec, "file:ragged-64k-among-1k.lens");
    assert_int_equal(ctx_dist_len(o.grid.ctx_dist, 0, 0), 65536);
    expect_bad(CMD_RUN, "run --kernel fused --batch 64 --ctx-dist file:no-such-lengths.lens", "no-such-lengths.lens");
    assert_int_equal(chdir(here), 0);

    const char *path = write_suite("--batch 64 --ctx-dist file:ragged-64k-among-1k.lens --kernels fused\n");
    suite_entry_t *e;
    int n;
    char msg[512];
    if (suite_load(path, NULL, &e, &n, msg, sizeof msg)) fail_msg("%s", msg);
    assert_string_equal(e[0].grid.ctx_dist->spec, "file:ragged-64k-among-1k.lens");
    free(e);
    unlink(path);
}

static void test_suite_command_line_wins(void **state)
{
    (void)state;
    const char *path = write_suite("--heads 16 --kv-heads 4 --beam 1,2 --dtype fp16 --kernels fused\n"
                                   "--model 7b-gqa --beam 8\n");
    char line[256];
    snprintf(line, sizeof line, "sweep --suite %s --dtype bf16 --kernels cublas --out s.csv", path);
    options_t o;
    parse_ok(CMD_SWEEP, line, &o);
    assert_string_equal(o.suite, path);
    suite_entry_t *e;
    int n;
    char msg[512];
    int rc = suite_load(o.suite, &o, &e, &n, msg, sizeof msg);
    if (rc) fail_msg("%s", msg);
    assert_int_equal(n, 2);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(e[i].grid.n_dtype, 1);
        assert_int_equal(e[i].grid.dtype[0], DTYPE_BF16);
        assert_int_equal(e[i].n_kernels, 1);
        assert_string_equal(e[i].kernels[0], "cublas");
    }
    assert_int_equal(e[0].grid.beam.n, 2);
    assert_int_equal(e[0].grid.heads.v[0], 16);
    assert_int_equal(e[1].grid.kv_heads.v[0], 8);
    free(e);

    /* --model on the command line replaces the shapes of every line */
    snprintf(line, sizeof line, "sweep --suite %s --model 7b --out s.csv", path);
    parse_ok(CMD_SWEEP, line, &o);
    rc = suite_load(o.suite, &o, &e, &n, msg, sizeof msg);
    if (rc) fail_msg("%s", msg);
    assert_int_equal(e[0].grid.heads.v[0], 32);
    assert_int_equal(e[0].grid.kv_heads.v[0], 32);
    assert_int_equal(e[0].grid.layers, 32);
    assert_string_equal(e[0].grid.model, "7b");
    assert_int_equal(e[0].n_kernels, 1);   /* the line's own kernels stay */
    assert_string_equal(e[0].kernels[0], "fused");
    free(e);

    /* --kv-dtype and --kv-scale on the command line replace every line's */
    snprintf(line, sizeof line, "sweep --suite %s --kv-dtype int8 --kv-scale head --out s.csv", path);
    parse_ok(CMD_SWEEP, line, &o);
    rc = suite_load(o.suite, &o, &e, &n, msg, sizeof msg);
    if (rc) fail_msg("%s", msg);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(e[i].grid.n_kv_dtype, 1);
        assert_int_equal(e[i].grid.kv_dtype[0], DTYPE_INT8);
        assert_int_equal(e[i].grid.kv_scale[0], KV_SCALE_HEAD);
    }
    free(e);
    unlink(path);
}

static void expect_suite_bad(const char *text, const char *needle)
{
    const char *path = write_suite(text);
    suite_entry_t *e = (suite_entry_t *)&e;
    int n = -1;
    char msg[512] = "";
    assert_int_equal(suite_load(path, NULL, &e, &n, msg, sizeof msg), -1);
    if (!strstr(msg, needle)) fail_msg("expected '%s' in: %s", needle, msg);
    if (strchr(msg, '\n')) fail_msg("not one line: %s", msg);
    assert_null(e);
    assert_int_equal(n, 0);
    unlink(path);
}

static void test_suite_errors(void **state)
{
    (void)state;
    /* mkstemp picks a new name each time: match the line number and rule only */
    expect_suite_bad("--beam 1\n# ok\n--kv-heads 3\n", ":3: --kv-heads 3 must divide");
    expect_suite_bad("--beam 1 --out x.csv\n", ":1: --out is not allowed in a suite line");
    expect_suite_bad("--beam 1 --resume\n", "--resume is not allowed in a suite line");
    expect_suite_bad("--beam 1 --kernels nope\n", "unknown kernel 'nope'");
    expect_suite_bad("--beam 1 stray\n", "unexpected argument 'stray'");
    expect_suite_bad("# only comments\n\n", "no grid lines");

    suite_entry_t *e;
    int n;
    char msg[512];
    assert_int_equal(suite_load("/nonexistent/dir/x.suite", NULL, &e, &n, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "cannot read /nonexistent/dir/x.suite"));
    assert_int_equal(suite_load("no-such-suite", NULL, &e, &n, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "/no-such-suite.suite"));
    assert_int_equal(suite_load("", NULL, &e, &n, msg, sizeof msg), -1);
}

/* Every suite the project ships loads: a broken one fails here, not on a GPU. */
static void test_shipped_suites_load(void **state)
{
    (void)state;
    DIR *d = opendir(ATTNBENCH_SUITE_DIR);
    if (!d) skip();
    int loaded = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l < 7 || strcmp(de->d_name + l - 6, ".suite")) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l - 6), de->d_name);
        suite_entry_t *e;
        int n;
        char msg[512];
        if (suite_load(name, NULL, &e, &n, msg, sizeof msg)) fail_msg("suite %s: %s", name, msg);
        assert_true(n >= 1);
        free(e);
        ++loaded;
    }
    closedir(d);
    assert_true(loaded >= 1);
}

/* --scores, the peaked logits and Share-Attention's map options into the grid and every
 * point; a suite line's relative --share-map names a file beside the suite. */
static void test_scores_and_share_options(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_SWEEP, "sweep --kernels share --heads 8 --kv-heads 2 --scores peaked --sink-logit 12 "
                        "--heavy-logit 0 --recent-logit 3.5 --share-fraction 0.75 --out x.csv", &o);
    assert_int_equal(o.grid.scores, SCORES_PEAKED);
    assert_true(o.grid.sink_logit == 12.0 && o.grid.heavy_logit == 0.0 && o.grid.recent_logit == 3.5);
    assert_true(o.grid.share_fraction == 0.75);
    assert_null(o.grid.share_map);
    problem_t *pts;
    int n;
    char msg[512];
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_int_equal(pts[0].scores, SCORES_PEAKED);
    assert_true(pts[0].share_fraction == 0.75 && pts[0].recent_logit == 3.5);
    assert_int_equal(problem_share_essential(&pts[0]), 2);
    free(pts);
    parse_ok(CMD_RUN, "run --kernel share", &o);
    assert_int_equal(o.grid.scores, SCORES_FLAT);
    assert_true(o.grid.share_fraction == 0.3);
    assert_true(o.grid.top_p == 0.95);
    parse_ok(CMD_RUN, "run --kernel select-filter --top-p 0.9", &o);
    assert_true(o.grid.top_p == 0.9);
    assert_int_equal(grid_expand(&o.grid, &pts, &n, msg, sizeof msg), 0);
    assert_true(pts[0].top_p == 0.9);
    free(pts);

    const char *path = write_suite("--heads 32 --kv-heads 8 --share-map share-maps/irregular-h32.json "
                                   "--share-layer 2 --kernels share\n");
    suite_entry_t *e;
    assert_int_equal(suite_load("verify-share", NULL, &e, &n, msg, sizeof msg), 0);
    const share_map_t *m = NULL;
    for (int i = 0; i < n; ++i)
        if (e[i].grid.share_map && e[i].grid.share_map->layer == 2) m = e[i].grid.share_map;
    assert_non_null(m);
    assert_int_equal(m->heads, 32);
    assert_int_equal(m->essential, 6);
    assert_non_null(strstr(m->path, "bench/suites/share-maps/irregular-h32.json"));
    free(e);
    /* a suite elsewhere holding a shipped suite's line: the map beside the shipped suites */
    assert_int_equal(suite_load(suite_path, NULL, &e, &n, msg, sizeof msg), 0);
    assert_non_null(e[0].grid.share_map);
    assert_int_equal(e[0].grid.share_map->essential, 6);
    free(e);
    unlink(suite_path);
    path = write_suite("--heads 32 --kv-heads 8 --share-map no-such-map.json --kernels share\n");
    assert_int_equal(suite_load(path, NULL, &e, &n, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--share-map no-such-map.json: cannot read"));
    unlink(suite_path);

    expect_bad(CMD_RUN, "run --kernel share --scores sharp", "--scores");
    expect_bad(CMD_RUN, "run --kernel share --share-fraction 1", "below 1");
    expect_bad(CMD_RUN, "run --kernel share --share-layer 3", "needs --share-map");
    expect_bad(CMD_RUN, "run --kernel share --sink-logit -2", "--sink-logit");
    expect_bad(CMD_RUN, "run --kernel share --scores peaked --recent-logit 100", "--recent-logit");
    expect_bad(CMD_RUN, "run --kernel select-filter --top-p 0", "--top-p");
    expect_bad(CMD_RUN, "run --kernel select-filter --top-p 1.01", "at most 1");
    expect_bad(CMD_RUN, "run --kernel select-filter --top-p x", "--top-p");
}

/* table and compare share the option table: their options land in their fields, and
 * the run/sweep ones are refused there (and theirs elsewhere). */
static void test_table_and_compare(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_TABLE, "table --in a.csv --in b.csv --rows ctx,beam --cols kernel --value "
                        "ms_per_token --agg last --where dtype=fp16 --where beam=1,16 --layers 32 "
                        "--format csv", &o);
    assert_int_equal(o.n_inputs, 2);
    assert_string_equal(o.inputs[1], "b.csv");
    assert_string_equal(o.table.rows, "ctx,beam");
    assert_string_equal(o.table.cols, "kernel");
    assert_string_equal(o.table.value, "ms_per_token");
    assert_int_equal(o.table.agg, TABLE_AGG_LAST);
    assert_int_equal(o.table.nwhere, 2);
    assert_string_equal(o.table.where[1].vals, "1,16");
    assert_int_equal(o.table.layers, 32);
    assert_int_equal(o.grid.layers, 1);      /* not the problem's */
    assert_int_equal(o.table.format, TABLE_CSV);
    parse_ok(CMD_TABLE, "table --in a.csv --paper 7", &o);
    assert_int_equal(o.table.paper, 7);
    parse_ok(CMD_TABLE, "table --in a.csv --paper 8", &o);
    assert_int_equal(o.table.paper, 8);
    expect_bad(CMD_TABLE, "table --in a.csv --paper 9", "--paper");
    parse_ok(CMD_COMPARE, "compare base.csv --threshold 0.1 new.csv --changes", &o);
    assert_string_equal(o.files[0], "base.csv");
    assert_string_equal(o.files[1], "new.csv");
    assert_true(o.threshold == 0.1);
    assert_true(o.changes_only);
    parse_ok(CMD_COMPARE, "compare base.csv new.csv", &o);
    assert_true(o.threshold == 0.05);

    expect_bad(CMD_TABLE, "table --in a.csv --paper 4294967302", "--paper");
    expect_bad(CMD_TABLE, "table --in a.csv --paper 6 --layers 4294967297", "above the limit");
    expect_bad(CMD_TABLE, "table --in a.csv --paper 6 --layers 0", "at least 1");
    expect_bad(CMD_TABLE, "table --in a.csv --paper 6 --beam 4", "does not take --beam");
    expect_bad(CMD_TABLE, "table --in a.csv", "--rows and --cols");
    expect_bad(CMD_TABLE, "table --paper 6", "--in");
    expect_bad(CMD_TABLE, "table --in a.csv --paper 6 stray", "unexpected argument 'stray'");
    expect_bad(CMD_COMPARE, "compare a.csv", "exactly two files");
    expect_bad(CMD_COMPARE, "compare a.csv b.csv c.csv", "exactly two files");
    expect_bad(CMD_COMPARE, "compare a.csv b.csv --threshold -0.5", "--threshold");
    expect_bad(CMD_COMPARE, "compare a.csv b.csv --in c.csv", "does not take --in");
    expect_bad(CMD_SWEEP, "sweep --beam 1 --out x.csv --threshold 1", "does not take --threshold");
}

/* Limits stated in --help, enforced at parse time with the bounds the later code uses;
 * --force and --resume exclude each other. */
static void test_limits_and_out_flags(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_RUN, "run --kernel fused --iters 1000000 --warmup 1000000", &o);
    assert_int_equal(o.iters, 1000000);
    expect_bad(CMD_RUN, "run --kernel fused --iters 1000001", "limit of 1000000");
    expect_bad(CMD_RUN, "run --kernel fused --warmup 1000001", "limit of 1000000");
    expect_bad(CMD_RUN, "run --kernel fused --batch 64k --beam 64k", "at most 2147483647");
    expect_bad(CMD_RUN, "run --kernel fused --ctx 1m --gen 1023m", "below 2^30");
    parse_ok(CMD_RUN, "run --kernel fused --ctx 1m --gen 1022m --batch 1", &o);
    expect_bad(CMD_RUN, "run --kernel fused --layers 4294967297", "--layers");
    parse_ok(CMD_SWEEP, "sweep --beam 1 --out x.csv --force", &o);
    assert_true(o.force);
    expect_bad(CMD_SWEEP, "sweep --beam 1 --out x.csv --force --resume", "--force");
    expect_bad(CMD_SWEEP, "sweep --beam 1 --force", "--out");
    expect_bad(CMD_VERIFY, "verify --force", "does not take --force");
}

/* --shard, --devices and --dry-run for sweep and verify; merge's files. */
static void test_shards_devices_and_merge(void **state)
{
    (void)state;
    options_t o;
    parse_ok(CMD_SWEEP, "sweep --suite ci --out x.csv --shard 3/8 --devices 2,0 --resume", &o);
    assert_int_equal(o.shard, 3);
    assert_int_equal(o.shards, 8);
    assert_int_equal(o.n_devices, 2);
    assert_int_equal(o.devices[0], 2);
    assert_int_equal(o.devices[1], 0);
    assert_false(o.all_devices);
    assert_false(o.dry_run);
    parse_ok(CMD_SWEEP, "sweep --suite ci --dry-run --devices all", &o);   /* no --out needed */
    assert_true(o.dry_run && o.all_devices);
    assert_null(o.out);
    assert_int_equal(o.shards, 0);
    parse_ok(CMD_VERIFY, "verify --shard 1/1 --dry-run", &o);
    assert_int_equal(o.shard, 1);
    expect_bad(CMD_SWEEP, "sweep --suite ci --out x.csv --shard 0/2", "slices count from 1");
    expect_bad(CMD_SWEEP, "sweep --suite ci --out x.csv --shard 3/2", "I runs from 1 to N = 2");
    expect_bad(CMD_SWEEP, "sweep --suite ci --out x.csv --shard 2", "is not I/N");
    expect_bad(CMD_SWEEP, "sweep --suite ci --out x.csv --devices 0,0", "listed twice");
    expect_bad(CMD_SWEEP, "sweep --suite ci --out x.csv --devices gpu0", "--devices");
    expect_bad(CMD_SWEEP, "sweep --suite ci", "--out FILE.csv (or --dry-run)");
    expect_bad(CMD_RUN, "run --kernel fused --shard 1/2", "does not take --shard");

    parse_ok(CMD_MERGE, "merge all.csv a.csv --force b.csv", &o);
    assert_int_equal(o.n_merge_files, 3);
    assert_string_equal(o.merge_files[0], "all.csv");
    assert_string_equal(o.merge_files[2], "b.csv");
    assert_true(o.force);
    expect_bad(CMD_MERGE, "merge all.csv", "at least one input");
    expect_bad(CMD_MERGE, "merge all.csv a.csv --shard 1/2", "does not take --shard");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_options_land_in_fields),
        cmocka_unit_test(test_tp),
        cmocka_unit_test(test_short_forms_and_equals),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_sweep_lists),
        cmocka_unit_test(test_kv_dtype_options),
        cmocka_unit_test(test_model_sets_and_explicit_wins),
        cmocka_unit_test(test_model_name_outlives_argv),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_bad_problems),
        cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_bad_numbers),
        cmocka_unit_test(test_bad_command_lines),
        cmocka_unit_test(test_suite_lines),
        cmocka_unit_test(test_ctx_dist_file_beside_the_suites),
        cmocka_unit_test(test_suite_command_line_wins),
        cmocka_unit_test(test_step_options),
        cmocka_unit_test(test_suite_errors),
        cmocka_unit_test(test_scores_and_share_options),
        cmocka_unit_test(test_shipped_suites_load),
        cmocka_unit_test(test_table_and_compare),
        cmocka_unit_test(test_limits_and_out_flags),
        cmocka_unit_test(test_shards_devices_and_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
