/* libFuzzer target: the results-CSV reader and everything that reads a parsed table
 * (row keys, compare's join, table's pivot and paper layouts, merge's checks of the
 * table beside itself and alone), and the --out check of an existing file (header test,
 * torn-row repair plan, resume keys). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../bench/out_csv.h"
#include "../../report/compare.h"
#include "../../report/csv.h"
#include "../../report/merge.h"
#include "../../report/table.h"

static FILE *sink;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    sink = fopen("/dev/null", "w");
    snprintf(path, sizeof path, "/tmp/attnbench_fuzz_csv.%d.csv", (int)getpid());
    return 0;
}

static void use_table(const csv_table_t *t)
{
    char msg[512], key[1024];
    for (int i = 0; i < t->nrows; ++i) {
        result_row_t r;
        if (csv_row_parse(t, i, &r) == 0) csv_row_key(&r, key, sizeof key);
    }
    table_opts_t o;
    table_opts_init(&o);
    o.rows = "ctx,kernel";
    o.cols = "beam";
    table_render(sink, t, &o, msg, sizeof msg);
    o.value = TABLE_MS_PER_TOKEN;
    o.format = TABLE_CSV;
    table_render(sink, t, &o, msg, sizeof msg);
    for (int paper = 6; paper <= 7; ++paper) {
        o.paper = paper;
        o.format = TABLE_MD;
        table_render(sink, t, &o, msg, sizeof msg);
    }
    const csv_table_t twice[2] = {*t, *t};
    const char *const paths[2] = {"a.csv", "b.csv"};
    merge_check(twice, paths, 1, msg, sizeof msg);
    merge_check(twice, paths, 2, msg, sizeof msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    csv_table_t t;
    char msg[512];
    if (csv_parse_text((const char *)data, size, "fuzz.csv", &t, msg, sizeof msg) == 0) {
        use_table(&t);
        csv_free(&t);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    compare_files(path, path, 0.05, false, sink, msg, sizeof msg); /* the join and its print */
    out_csv_t out;
    if (out_csv_check(&out, path, true, false, msg, sizeof msg) == 0) out_csv_close(&out, msg, sizeof msg);
    unlink(path);
    return 0;
}
