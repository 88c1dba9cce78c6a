/* Pivot tables on fixture CSVs: the generic pivot and the paper's Tables 6 and 7,
 * with their OOM and '-' rules and the layer scaling of ms per token.
 * tests/fixtures/paper_h100.csv holds the paper's own Table 6 / 7 numbers as
 * median_us = ms * 1000 / 32, so the tables must give back the paper's cells. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../report/csv.h"
#include "../report/table.h"
#include "../report/csv_internal.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

static csv_table_t paper, models;

static int setup(void **state)
{
    (void)state;
    char msg[256];
    if (csv_read(FIXTURES "/paper_h100.csv", &paper, msg, sizeof msg) != 0 ||
        csv_read(FIXTURES "/models_h100.csv", &models, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s (run the tests from the repository root)\n", msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    csv_free(&paper);
    csv_free(&models);
    return 0;
}

/* Renders into a string; returns the function's status. */
static int render(const csv_table_t *t, const table_opts_t *o, char **out, char *msg, size_t len)
{
    size_t size;
    FILE *f = open_memstream(out, &size);
    assert_non_null(f);
    int rc = table_render(f, t, o, msg, len);
    fclose(f);
    return rc;
}

/* The cell of CSV output in the row whose first `nlead` fields are lead[] and the
 * column named col; NULL when absent. Our outputs have no quoted commas. */
static char cell_buf[128];
static const char *out_cell(const char *out, int nlead, const char *const *lead, const char *col)
{
    char *copy = strdup(out), *save = NULL;
    const char *found = NULL;
    int want = -1;
    for (char *line = strtok_r(copy, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
        char *fields[64];
        int n = 0;
        for (char *p = line; n < 64;) {
            fields[n++] = p;
            p = strchr(p, ',');
            if (!p)
                break;
            *p++ = '\0';
        }
        if (want < 0) {
            for (int i = 0; i < n; i++)
                if (strcmp(fields[i], col) == 0)
                    want = i;
            if (want < 0)
                break;
            continue;
        }
        int match = n > want;
        for (int i = 0; i < nlead && match; i++)
            match = strcmp(fields[i], lead[i]) == 0;
        if (match) {
            snprintf(cell_buf, sizeof cell_buf, "%s", fields[want]);
            found = cell_buf;
        }
    }
    free(copy);
    return found;
}

static const char *t6(const char *out, const char *ctx, const char *w, const char *col)
{
    const char *lead[] = { ctx, w };
    return out_cell(out, 2, lead, col);
}

static const char *t1(const char *out, const char *row, const char *col)
{
    const char *lead[] = { row };
    return out_cell(out, 1, lead, col);
}

/* Options for the paper's Table `paper` in the given format. */
static table_opts_t paper_opts(int paper, table_format_t format)
{
    table_opts_t o;
    table_opts_init(&o);
    o.paper = paper;
    o.format = format;
    return o;
}

static void paper6_gives_back_the_papers_cells(void **state)
{
    (void)state;
    table_opts_t o = paper_opts(6, TABLE_CSV);
    char *out = NULL, msg[256];
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, "ctx,W,bifurcated,fused,cublas,fused paged,cublas-bifurcated\n"));
    assert_string_equal(t6(out, "8192", "1", "bifurcated"), "30.38");
    assert_string_equal(t6(out, "16384", "2048", "bifurcated"), "660.20");
    assert_string_equal(t6(out, "32768", "16", "fused paged"), "670.21");
    assert_string_equal(t6(out, "8192", "64", "cublas-bifurcated"), "15.35");
    /* several multi-block settings of fused at W=1: the best one is shown */
    assert_string_equal(t6(out, "8192", "1", "fused"), "24.06");
    /* OOM once, at the first size that ran out; '-' beyond it and where no row exists */
    assert_string_equal(t6(out, "8192", "64", "fused"), "OOM");
    assert_string_equal(t6(out, "8192", "128", "fused"), "-");
    assert_string_equal(t6(out, "8192", "2048", "cublas"), "-");
    assert_string_equal(t6(out, "8192", "512", "fused paged"), "-");
    assert_string_equal(t6(out, "32768", "1024", "bifurcated"), "OOM");
    assert_string_equal(t6(out, "32768", "2048", "bifurcated"), "-");
    /* every W of 1..2048 for every context, and nothing of Table 7's GQA rows */
    int lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 1 + 3 * 12);
    free(out);
}

static void paper6_markdown_has_caption_and_context_blocks(void **state)
{
    (void)state;
    table_opts_t o = paper_opts(6, TABLE_MD);
    char *out = NULL, msg[256];
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, "attention only"));
    assert_non_null(strstr(out, "32 layers"));
    assert_non_null(strstr(out, "on h100"));
    assert_non_null(strstr(out, "**Context length: 8k**"));
    assert_non_null(strstr(out, "**Context length: 32k**"));
    assert_non_null(strstr(out, "| W "));
    assert_non_null(strstr(out, "SDPA Math"));
    /* the 8k block's W=64 line */
    const char *line = strstr(out, "| 64 ");
    assert_non_null(line);
    char row[256];
    snprintf(row, sizeof row, "%.*s", (int)(strchr(line, '\n') - line), line);
    assert_non_null(strstr(row, "35.26"));
    assert_non_null(strstr(row, "OOM"));
    assert_non_null(strstr(row, "599.08"));
    free(out);
}

static void paper7_groups_columns_per_kernel_and_context(void **state)
{
    (void)state;
    table_opts_t o = paper_opts(7, TABLE_CSV);
    char *out = NULL, msg[256];
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_true(strncmp(out, "W,cublas-bifurcated 8k,cublas-bifurcated 16k,cublas-bifurcated 32k,"
                             "bifurcated 8k,", 80) == 0);
    assert_string_equal(t1(out, "1", "cublas-bifurcated 8k"), "10.56");
    assert_string_equal(t1(out, "2048", "bifurcated 8k"), "230.88");
    assert_string_equal(t1(out, "256", "fused paged 32k"), "1805.60");
    assert_string_equal(t1(out, "16", "fused 32k"), "OOM");
    assert_string_equal(t1(out, "32", "fused 32k"), "-");
    assert_string_equal(t1(out, "512", "fused paged 16k"), "OOM");
    assert_string_equal(t1(out, "1024", "fused paged 16k"), "-");
    assert_string_equal(t1(out, "256", "fused paged 8k"), "-");
    free(out);
}

static void layers_option_rescales_ms_per_token(void **state)
{
    (void)state;
    table_opts_t o = paper_opts(6, TABLE_CSV);
    o.layers = 16;
    char *out = NULL, msg[256];
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_string_equal(t6(out, "8192", "1", "bifurcated"), "15.19");   /* 30.38 / 2 */
    assert_string_equal(t6(out, "16384", "1024", "cublas-bifurcated"), "58.88"); /* 117.75/2 */
    free(out);
    o.format = TABLE_MD;
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, "16 layers (--layers)"));
    free(out);
}

static void generic_pivot_numeric_order_and_status_cells(void **state)
{
    (void)state;
    table_opts_t o;
    table_opts_init(&o);
    o.rows = "beam";
    o.cols = "kernel,cache";
    o.format = TABLE_CSV;
    char msg[256];
    assert_int_equal(table_where_parse("ctx=8k", &o.where[o.nwhere++], msg, sizeof msg), 0);
    assert_int_equal(table_where_parse("kv_heads=32", &o.where[o.nwhere++], msg, sizeof msg), 0);
    assert_int_equal(table_where_parse("batch=1", &o.where[o.nwhere++], msg, sizeof msg), 0);
    char *out = NULL;
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    /* columns in byte order, rows in numeric order */
    assert_true(strncmp(out, "beam,bifurcated contiguous,cublas contiguous,cublas-bifurcated "
                             "contiguous,fused contiguous,fused paged\n1,", 100) == 0);
    const char *p2 = strstr(out, "\n2,"), *p1024 = strstr(out, "\n1024,"), *p128 = strstr(out, "\n128,");
    assert_true(p2 && p128 && p1024 && p2 < p128 && p128 < p1024);
    /* raw median_us as the file has it; OOM for every oom row; '-' where no row */
    assert_string_equal(t1(out, "1", "bifurcated contiguous"), "949.375");
    assert_string_equal(t1(out, "64", "fused contiguous"), "OOM");
    assert_string_equal(t1(out, "128", "fused contiguous"), "OOM");
    assert_string_equal(t1(out, "512", "fused paged"), "-");
    free(out);

    /* the two fused rows of W=1: min, max and last */
    o.value = "median_us";
    o.agg = TABLE_AGG_MAX;
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    double mx = strtod(t1(out, "1", "fused contiguous"), NULL);
    free(out);
    o.agg = TABLE_AGG_MIN;
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    double mn = strtod(t1(out, "1", "fused contiguous"), NULL);
    free(out);
    assert_true(mn > 751.8 && mn < 751.9);   /* 24.06 ms * 1000 / 32 */
    assert_true(mx > 1.29 * mn && mx < 1.31 * mn);
}

static void generic_pivot_ms_per_token_uses_each_rows_layers(void **state)
{
    (void)state;
    table_opts_t o;
    table_opts_init(&o);
    o.rows = "beam";
    o.cols = "attn,kernel";
    o.value = TABLE_MS_PER_TOKEN;
    o.format = TABLE_CSV;
    char *out = NULL, msg[256];
    assert_int_equal(render(&models, &o, &out, msg, sizeof msg), 0);
    /* expected from the fixture row itself: 1b-mq has 16 layers */
    int found = 0;
    for (int r = 0; r < models.nrows; r++) {
        if (strcmp(csv_cell(&models, r, "model"), "1b-mq") || strcmp(csv_cell(&models, r, "beam"), "4") ||
            strcmp(csv_cell(&models, r, "kernel"), "fused"))
            continue;
        char want[32];
        snprintf(want, sizeof want, "%.2f", strtod(csv_cell(&models, r, "median_us"), NULL) * 16 / 1000);
        assert_string_equal(t1(out, "4", "mqa fused"), want);
        found = 1;
    }
    assert_true(found);
    assert_string_equal(t1(out, "512", "mha fused"), "OOM");
    free(out);
}

static void bad_requests_fail_with_one_line(void **state)
{
    (void)state;
    table_opts_t o;
    char *out = NULL, msg[256];

    table_opts_init(&o);
    o.rows = "beam";
    o.cols = "no_such";
    msg[0] = '\0';
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "no_such"));
    assert_null(strchr(msg, '\n'));

    table_opts_init(&o);
    o.rows = "beam";
    o.cols = "kernel";
    o.value = "speed";
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "speed"));

    table_opts_init(&o);
    o.rows = "beam";
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), -1);
    free(out);

    table_opts_init(&o);
    o.paper = 5;
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), -1);
    free(out);

    table_opts_init(&o);
    o.paper = 6;
    assert_int_equal(table_where_parse("nope=1", &o.where[o.nwhere++], msg, sizeof msg), 0);
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "nope"));

    table_where_t w;
    assert_int_equal(table_where_parse("ctx", &w, msg, sizeof msg), -1);
    assert_int_equal(table_where_parse("=8k", &w, msg, sizeof msg), -1);
    assert_int_equal(table_where_parse("ctx=", &w, msg, sizeof msg), -1);

    /* a paper table never mixes GPUs */
    int gcol = csv_column(&paper, "gpu");
    char *saved = paper.cells[0][gcol];
    paper.cells[0][gcol] = "h200";
    table_opts_init(&o);
    o.paper = 6;
    int rc = render(&paper, &o, &out, msg, sizeof msg);
    paper.cells[0][gcol] = saved;
    free(out);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(msg, "gpu="));
    /* ...unless told which */
    paper.cells[0][gcol] = "h200";
    assert_int_equal(table_where_parse("gpu=h100", &o.where[o.nwhere++], msg, sizeof msg), 0);
    rc = render(&paper, &o, &out, msg, sizeof msg);
    paper.cells[0][gcol] = saved;
    free(out);
    assert_int_equal(rc, 0);
}

static void paper_frame_without_data(void **state)
{
    (void)state;
    table_opts_t o = paper_opts(7, TABLE_CSV);
    char *out = NULL, msg[256];
    assert_int_equal(table_where_parse("gpu=h200", &o.where[o.nwhere++], msg, sizeof msg), 0);
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_string_equal(t1(out, "1", "bifurcated 16k"), "-");
    assert_string_equal(t1(out, "2048", "fused 32k"), "-");
    free(out);
}

int cmd_table(int argc, char **argv);

static void command_rejects_bad_input_with_exit_2(void **state)
{
    (void)state;
    char *missing[] = { "table", "--in", "/nonexistent.csv", "--paper", "6", NULL };
    char *malformed[] = { "table", "--in", FIXTURES "/malformed_ragged.csv", "--paper", "6", NULL };
    char *paper9[] = { "table", "--in", FIXTURES "/paper_h100.csv", "--paper", "9", NULL };
    char *unknown[] = { "table", "--in", FIXTURES "/paper_h100.csv", "--bogus", NULL };
    char *no_in[] = { "table", "--paper", "6", NULL };
    char *no_axes[] = { "table", "--in", FIXTURES "/paper_h100.csv", "--rows", "beam", NULL };
    char *bad_col[] = { "table", "--in", FIXTURES "/paper_h100.csv", "--rows", "beam", "--cols",
                        "kernelz", NULL };
    char *bad_layers[] = { "table", "--in", FIXTURES "/paper_h100.csv", "--paper", "6",
                           "--layers", "0", NULL };
    char *bad_format[] = { "table", "--in", FIXTURES "/paper_h100.csv", "--paper", "6",
                           "--format", "html", NULL };
    assert_int_equal(cmd_table(5, missing), 2);
    assert_int_equal(cmd_table(5, malformed), 2);
    assert_int_equal(cmd_table(5, paper9), 2);
    assert_int_equal(cmd_table(4, unknown), 2);
    assert_int_equal(cmd_table(3, no_in), 2);
    assert_int_equal(cmd_table(5, no_axes), 2);
    assert_int_equal(cmd_table(7, bad_col), 2);
    assert_int_equal(cmd_table(7, bad_layers), 2);
    assert_int_equal(cmd_table(7, bad_format), 2);
}

/* --vs-peers on tests/fixtures/peers_h100.csv: GQA rows (B = 1, g = 8) of bifurcated and
 * fused beside the peers, where flashinfer is planted faster on one configuration,
 * slower on another, no peer has an ok row on a third, and fused ran out of memory on
 * a fourth. */
static const char *const fixture_peers[] = {"flashinfer", "xqa", "flashinfer-cascade", "cudnn"};

static table_opts_t peers_opts(table_format_t format)
{
    table_opts_t o;
    table_opts_init(&o);
    o.rows = "kv_heads,batch,beam,ctx";
    o.cols = "kernel";
    o.format = format;
    o.vs_peers = 1;
    o.peers = fixture_peers;
    o.npeers = 4;
    return o;
}

/* The fixture read into t, and the options of peers_opts(TABLE_CSV). */
static table_opts_t peers_fixture(csv_table_t *t)
{
    char msg[256];
    assert_int_equal(csv_read(FIXTURES "/peers_h100.csv", t, msg, sizeof msg), 0);
    return peers_opts(TABLE_CSV);
}

static void vs_peers_divides_by_the_best_peer(void **state)
{
    (void)state;
    csv_table_t t;
    char msg[256], *out = NULL;
    table_opts_t o = peers_fixture(&t);
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    /* the peers leave the kernel columns for the best peer's name and time */
    assert_true(strncmp(out, "kv_heads batch beam ctx,bifurcated,fused,best peer,peer median_us\n",
                        66) == 0);
    /* flashinfer (8 us) beats fused (10 us) and bifurcated (12 us): ratios over 1 */
    assert_string_equal(t1(out, "8 1 1 2048", "fused"), "1.250");
    assert_string_equal(t1(out, "8 1 1 2048", "bifurcated"), "1.500");
    assert_string_equal(t1(out, "8 1 1 2048", "best peer"), "flashinfer");
    assert_string_equal(t1(out, "8 1 1 2048", "peer median_us"), "8.000");
    /* the best of the peers (xqa 36, flashinfer 40, cudnn 44): attnbench faster */
    assert_string_equal(t1(out, "8 1 1 8192", "fused"), "0.833");
    assert_string_equal(t1(out, "8 1 1 8192", "best peer"), "xqa");
    /* no peer has an ok row (unsupported, error, oom): '-' however our kernels did */
    assert_string_equal(t1(out, "8 1 4 2048", "fused"), "-");
    assert_string_equal(t1(out, "8 1 4 2048", "bifurcated"), "-");
    assert_string_equal(t1(out, "8 1 4 2048", "best peer"), "-");
    assert_string_equal(t1(out, "8 1 4 2048", "peer median_us"), "-");
    /* our failed row keeps its status; flashinfer-cascade is a peer too */
    assert_string_equal(t1(out, "8 1 4 8192", "fused"), "OOM");
    assert_string_equal(t1(out, "8 1 4 8192", "bifurcated"), "1.053");
    assert_string_equal(t1(out, "8 1 4 8192", "best peer"), "flashinfer-cascade");
    assert_null(strchr(out, '*'));
    free(out);

    /* Markdown: the peer's noisy mark on its time, the legend and the ratio's note */
    o = peers_opts(TABLE_MD);
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, " 36.000* |"));
    assert_non_null(strstr(out, "`*` noisy"));
    assert_non_null(strstr(out, "the best peer's median_us"));
    free(out);

    /* another --cols key beside kernel: a best peer per key, and --where narrows */
    o = peers_opts(TABLE_CSV);
    o.rows = "beam";
    o.cols = "kernel,ctx";
    assert_int_equal(table_where_parse("kernel=fused,flashinfer", &o.where[o.nwhere++], msg,
                                       sizeof msg), 0);
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_true(strncmp(out, "beam,fused 2048,fused 8192,best peer 2048,peer median_us 2048,"
                             "best peer 8192,peer median_us 8192\n", 97) == 0);
    assert_string_equal(t1(out, "1", "fused 2048"), "1.250");
    assert_string_equal(t1(out, "1", "fused 8192"), "0.750");   /* 30 / flashinfer's 40 */
    assert_string_equal(t1(out, "4", "best peer 8192"), "-");
    free(out);

    /* without the option the peers are columns like any kernel */
    o = peers_opts(TABLE_CSV);
    o.vs_peers = 0;
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_string_equal(t1(out, "8 1 1 2048", "flashinfer"), "8.000");
    assert_string_equal(t1(out, "8 1 1 2048", "cudnn"), "unsupported");
    free(out);

    /* kernel as a row axis, or a paper table: refused in one line */
    o = peers_opts(TABLE_CSV);
    o.rows = "kernel";
    o.cols = "ctx";
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "--cols"));
    assert_null(strchr(msg, '\n'));
    o = peers_opts(TABLE_CSV);
    o.paper = 6;
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "--paper"));
    csv_free(&t);
}

/* The command takes the peers' names from the registry. */
/* --ratio A/B: one column dividing two of the table's columns row by row, '-' where
 * either cell has no ok value; labels the table lacks, or a paper table, refused. */
static void ratio_divides_two_columns(void **state)
{
    (void)state;
    csv_table_t t;
    char msg[256], *out = NULL;
    table_opts_t o = peers_fixture(&t);
    o.vs_peers = 0;
    o.ratio = "fused/bifurcated";
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, ",fused/bifurcated\n"));
    assert_string_equal(t1(out, "8 1 1 2048", "fused/bifurcated"), "0.833");   /* 10 / 12 */
    assert_string_equal(t1(out, "8 1 1 2048", "flashinfer"), "8.000");          /* cells stay */
    assert_string_equal(t1(out, "8 1 4 8192", "fused/bifurcated"), "-");        /* fused: OOM */
    free(out);

    /* beside --vs-peers, of the ratios it shows */
    o.vs_peers = 1;
    o.ratio = "bifurcated/fused";
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_string_equal(t1(out, "8 1 1 2048", "bifurcated/fused"), "1.200");
    free(out);

    o.vs_peers = 0;
    o.ratio = "fused/fusedz";
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "--ratio fused/fusedz"));
    assert_null(strchr(msg, '\n'));
    o = paper_opts(6, TABLE_CSV);
    o.ratio = "fused/bifurcated";
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), -1);
    free(out);
    assert_non_null(strstr(msg, "--paper"));
    csv_free(&t);

    char *no_slash[] = { "table", "--in", FIXTURES "/peers_h100.csv", "--rows", "beam", "--cols",
                         "kernel", "--ratio", "fused", NULL };
    assert_int_equal(cmd_table(9, no_slash), 2);
}

static void command_vs_peers_uses_the_registrys_peers(void **state)
{
    (void)state;
    char path[] = "/tmp/attnbench_vspeers_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char *ok[] = { "table", "--in", FIXTURES "/peers_h100.csv", "--rows", "kv_heads,batch,beam,ctx",
                   "--cols", "kernel", "--vs-peers", "--format", "csv", NULL };
    char *paper6[] = { "table", "--in", FIXTURES "/peers_h100.csv", "--paper", "6", "--vs-peers", NULL };
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDOUT_FILENO) >= 0);
    int rc = cmd_table(10, ok);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(fd);
    assert_int_equal(rc, 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    assert_string_equal(t1(buf, "8 1 1 2048", "fused"), "1.250");
    assert_string_equal(t1(buf, "8 1 4 8192", "best peer"), "flashinfer-cascade");
    assert_int_equal(cmd_table(6, paper6), 2);
}

/* A row's flags column shows as marks in Markdown, with their legend, and not at all
 * in CSV output or for files without the column. */
static void flags_mark_markdown_cells(void **state)
{
    (void)state;
    char path[] = "/tmp/attnbench_flags_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    csv_write_header(f);
    const char *flags[] = {"", "noisy", "throttled", "noisy;throttled"};
    for (int i = 0; i < 4; i++) {
        result_row_t r;
        result_row_init(&r);
        snprintf(r.gpu, sizeof r.gpu, "h100");
        snprintf(r.kernel, sizeof r.kernel, "fused");
        snprintf(r.status, sizeof r.status, "ok");
        snprintf(r.verified, sizeof r.verified, "yes");
        r.beam = 1 << i;
        r.ctx = 8192;
        r.median_us = r.p10_us = r.p90_us = r.min_us = r.max_us = 100.0 + i;
        snprintf(r.flags, sizeof r.flags, "%s", flags[i]);
        csv_write_row(f, &r);
    }
    fclose(f);
    char msg[256];
    csv_table_t t;
    assert_int_equal(csv_read(path, &t, msg, sizeof msg), 0);
    unlink(path);
    table_opts_t o;
    table_opts_init(&o);
    o.rows = "beam";
    o.cols = "ctx";
    char *out = NULL;
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, " 100.000 "));
    assert_non_null(strstr(out, " 101.000* "));
    assert_non_null(strstr(out, " 102.000^ "));
    assert_non_null(strstr(out, " 103.000*^ "));
    assert_non_null(strstr(out, "`*` noisy"));
    free(out);
    o.format = TABLE_CSV;
    assert_int_equal(render(&t, &o, &out, msg, sizeof msg), 0);
    assert_null(strchr(out, '*'));
    assert_null(strchr(out, '^'));
    free(out);
    csv_free(&t);
    /* files written before the column: no marks, no legend */
    o.format = TABLE_MD;
    o.rows = "beam";
    o.cols = "ctx";
    assert_int_equal(render(&paper, &o, &out, msg, sizeof msg), 0);
    assert_null(strstr(out, "noisy"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paper6_gives_back_the_papers_cells),
        cmocka_unit_test(paper6_markdown_has_caption_and_context_blocks),
        cmocka_unit_test(paper7_groups_columns_per_kernel_and_context),
        cmocka_unit_test(layers_option_rescales_ms_per_token),
        cmocka_unit_test(generic_pivot_numeric_order_and_status_cells),
        cmocka_unit_test(generic_pivot_ms_per_token_uses_each_rows_layers),
        cmocka_unit_test(bad_requests_fail_with_one_line),
        cmocka_unit_test(paper_frame_without_data),
        cmocka_unit_test(command_rejects_bad_input_with_exit_2),
        cmocka_unit_test(flags_mark_markdown_cells),
        cmocka_unit_test(vs_peers_divides_by_the_best_peer),
        cmocka_unit_test(command_vs_peers_uses_the_registrys_peers),
        cmocka_unit_test(ratio_divides_two_columns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
