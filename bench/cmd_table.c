/* attnbench table: pivots of results CSVs, and the paper's Tables 6 and 7. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../report/csv.h"
#include "../report/table.h"
#include "commands.h"

static void table_usage(FILE *f)
{
    fprintf(f,
        "usage: attnbench table --in FILE.csv [--in MORE.csv ...]\n"
        "                       [--rows COLS --cols COLS [--value COL] [--agg min|max|last]]\n"
        "                       [--paper 6|7] [--where COL=VAL[,VAL...] ...] [--layers N]\n"
        "                       [--format md|csv]\n"
        "\n"
        "Pivots a results CSV; needs no GPU.\n"
        "  --in FILE        results CSV (repeat to join files with the same columns)\n"
        "  --rows, --cols   the axes: a column name, or several joined by ',' (ctx,beam)\n"
        "  --value COL      what the cells show (default median_us); ms_per_token is\n"
        "                   median_us x layers / 1000, attention of the whole model\n"
        "  --agg            several rows in one cell: smallest (default), largest, last\n"
        "  --where COL=VAL  keep rows whose COL is one of the values (8k = 8192); repeatable\n"
        "  --paper 6|7      the bifurcated-attention paper's Table 6 (7b, MHA) or Table 7\n"
        "                   (7b-gqa, g=8): ms per token by W (samples of one context,\n"
        "                   B = 1) and context length, one column per kernel\n"
        "  --layers N       layer count for ms per token instead of the CSV's layers column\n"
        "  --format md|csv  Markdown (default) or CSV\n"
        "Cells: OOM where memory ran out, another status where the run failed, '-' where\n"
        "no row exists (and, in --paper tables, beyond the first OOM).\n");
}

int cmd_table(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "in", required_argument, NULL, 'i' },
        { "rows", required_argument, NULL, 'r' },
        { "cols", required_argument, NULL, 'c' },
        { "value", required_argument, NULL, 'v' },
        { "agg", required_argument, NULL, 'a' },
        { "where", required_argument, NULL, 'w' },
        { "paper", required_argument, NULL, 'p' },
        { "layers", required_argument, NULL, 'l' },
        { "format", required_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    table_opts_t o;
    table_opts_init(&o);
    const char *inputs[32];
    int ninputs = 0;
    char msg[512];
    char *end;

    optind = 0;   /* a fresh scan, also when called twice in one process */
    opterr = 0;
    for (;;) {
        int opt = getopt_long(argc, argv, ":h", longopts, NULL);
        if (opt == -1)
            break;
        switch (opt) {
        case 'i':
            if (ninputs == (int)(sizeof inputs / sizeof *inputs)) {
                fprintf(stderr, "attnbench table: --in: at most %d files\n", ninputs);
                return 2;
            }
            inputs[ninputs++] = optarg;
            break;
        case 'r': o.rows = optarg; break;
        case 'c': o.cols = optarg; break;
        case 'v': o.value = optarg; break;
        case 'a':
            if (strcmp(optarg, "min") == 0) o.agg = TABLE_AGG_MIN;
            else if (strcmp(optarg, "max") == 0) o.agg = TABLE_AGG_MAX;
            else if (strcmp(optarg, "last") == 0) o.agg = TABLE_AGG_LAST;
            else {
                fprintf(stderr, "attnbench table: --agg: '%s' is not min, max or last\n", optarg);
                return 2;
            }
            break;
        case 'w':
            if (o.nwhere == TABLE_MAX_WHERE) {
                fprintf(stderr, "attnbench table: --where: at most %d filters\n", TABLE_MAX_WHERE);
                return 2;
            }
            if (table_where_parse(optarg, &o.where[o.nwhere], msg, sizeof msg) != 0) {
                fprintf(stderr, "attnbench table: %s\n", msg);
                return 2;
            }
            o.nwhere++;
            break;
        case 'p':
            o.paper = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || (o.paper != 6 && o.paper != 7)) {
                fprintf(stderr, "attnbench table: --paper: '%s' is not 6 or 7\n", optarg);
                return 2;
            }
            break;
        case 'l':
            o.layers = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || o.layers <= 0) {
                fprintf(stderr, "attnbench table: --layers: '%s' is not a positive integer\n", optarg);
                return 2;
            }
            break;
        case 'f':
            if (strcmp(optarg, "md") == 0) o.format = TABLE_MD;
            else if (strcmp(optarg, "csv") == 0) o.format = TABLE_CSV;
            else {
                fprintf(stderr, "attnbench table: --format: '%s' is not md or csv\n", optarg);
                return 2;
            }
            break;
        case 'h':
            table_usage(stdout);
            return 0;
        default:
            return cmd_option_error("table", opt, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "attnbench table: unexpected argument '%s' (input goes with --in)\n",
                argv[optind]);
        return 2;
    }
    if (ninputs == 0) {
        fprintf(stderr, "attnbench table: --in FILE.csv is required (see --help)\n");
        return 2;
    }
    if (o.paper == 0 && (o.rows == NULL || o.cols == NULL)) {
        fprintf(stderr, "attnbench table: give --rows and --cols, or --paper 6|7\n");
        return 2;
    }

    csv_table_t t, more;
    if (csv_read(inputs[0], &t, msg, sizeof msg) != 0) {
        fprintf(stderr, "attnbench table: %s\n", msg);
        return 2;
    }
    for (int i = 1; i < ninputs; i++) {
        if (csv_read(inputs[i], &more, msg, sizeof msg) != 0) {
            fprintf(stderr, "attnbench table: %s\n", msg);
            csv_free(&t);
            return 2;
        }
        int rc = csv_append(&t, &more, msg, sizeof msg);
        csv_free(&more);
        if (rc != 0) {
            fprintf(stderr, "attnbench table: %s: %s\n", inputs[i], msg);
            csv_free(&t);
            return 2;
        }
    }
    int rc = table_render(stdout, &t, &o, msg, sizeof msg);
    csv_free(&t);
    if (rc != 0) {
        fprintf(stderr, "attnbench table: %s\n", msg);
        return 2;
    }
    fflush(stdout);
    return 0;
}
