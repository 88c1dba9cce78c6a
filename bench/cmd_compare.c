/* attnbench compare BASE.csv NEW.csv: the regression check of SPEC §8. */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "../report/compare.h"
#include "commands.h"

static void compare_usage(FILE *f)
{
    fprintf(f,
        "usage: attnbench compare BASE.csv NEW.csv [--threshold 0.05] [--changes]\n"
        "\n"
        "Joins the rows of two results CSVs on gpu, kernel and configuration and gives\n"
        "each a verdict: same, faster, slower, missing (only in BASE), new (only in NEW),\n"
        "broken (ok became error/mismatch/oom/unsupported, or verified yes became no),\n"
        "fixed (a failed row now ok).\n"
        "A row is slower (or faster) only when its median changed by more than\n"
        "max(threshold, 2 x sqrt(noise_base^2 + noise_new^2)), noise being each row's\n"
        "relative standard deviation: bigger than the threshold and than chance.\n"
        "  --threshold X  smallest relative change that counts (default 0.05)\n"
        "  --changes      list only rows whose verdict is not same\n"
        "Exit status: 0 pass, 1 any slower, broken or missing row, 2 bad input.\n");
}

int cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "threshold", required_argument, NULL, 't' },
        { "changes", no_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    double threshold = 0.05;
    bool changes_only = false;
    char *end;

    optind = 0;
    opterr = 0;
    for (;;) {
        int opt = getopt_long(argc, argv, ":h", longopts, NULL);
        if (opt == -1)
            break;
        switch (opt) {
        case 't':
            threshold = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !isfinite(threshold) || threshold < 0) {
                fprintf(stderr, "attnbench compare: --threshold: '%s' is not a number >= 0\n",
                        optarg);
                return 2;
            }
            break;
        case 'c':
            changes_only = true;
            break;
        case 'h':
            compare_usage(stdout);
            return 0;
        default:
            return cmd_option_error("compare", opt, argv);
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "attnbench compare: needs exactly two files, BASE.csv and NEW.csv "
                        "(got %d; see --help)\n", argc - optind);
        return 2;
    }
    char msg[512];
    int rc = compare_files(argv[optind], argv[optind + 1], threshold, changes_only, stdout,
                           msg, sizeof msg);
    if (rc == 2)
        fprintf(stderr, "attnbench compare: %s\n", msg);
    fflush(stdout);
    return rc;
}
