/* attnbench: benchmark and verify the decode step of LLM attention. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "usage.h"

/* the source revision, written by the Makefile into build/version.c */
extern const char attnbench_version[];

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"list", cmd_list},   {"peak", cmd_peak},   {"run", cmd_run},         {"sweep", cmd_sweep},
    {"verify", cmd_verify}, {"table", cmd_table}, {"compare", cmd_compare}, {"merge", cmd_merge},
};

/* A command's output that did not reach standard output (a full disk, /dev/full) is
 * a failure of the command: exit 1 with one line. */
static int finish(int rc)
{
    int err = fflush(stdout) != 0 ? errno : 0;
    if (err || ferror(stdout)) {
        cmd_error(NULL, "cannot write standard output: %s", err ? strerror(err) : "write error");
        return rc ? rc : 1;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        usage_print(stderr, NULL);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage_print(stdout, argc > 2 && strcmp(argv[1], "help") == 0 ? argv[2] : NULL);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("attnbench %s\n", attnbench_version);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    cmd_error(NULL, "unknown command '%s' (try attnbench --help)", argv[1]);
    return 2;
}

int main(int argc, char **argv) { return finish(run(argc, argv)); }
