/* The subcommands of attnbench; each takes argv with argv[0] = its name and
 * returns the process exit status (0 ok, 1 failure found, 2 bad input). */
#ifndef ATTNBENCH_COMMANDS_H
#define ATTNBENCH_COMMANDS_H

#include <getopt.h>
#include <stdio.h>

int cmd_list(int argc, char **argv);
int cmd_peak(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_table(int argc, char **argv);
int cmd_compare(int argc, char **argv);

/* The one-line error for what getopt_long returned on a bad option of `attnbench cmd`
 * (optstring starting with ':'): ':' is an option given without its value, anything
 * else an unknown option. Returns the exit status, 2. */
static inline int cmd_option_error(const char *cmd, int opt, char **argv)
{
    if (opt == ':') fprintf(stderr, "attnbench %s: %s needs a value\n", cmd, argv[optind - 1]);
    else fprintf(stderr, "attnbench %s: unknown option '%s' (see --help)\n", cmd, argv[optind - 1]);
    return 2;
}

#endif
