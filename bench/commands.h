/* The subcommands of attnbench; each takes argv with argv[0] = its name and
 * returns the process exit status (0 ok, 1 failure found, 2 bad input). */
#ifndef ATTNBENCH_COMMANDS_H
#define ATTNBENCH_COMMANDS_H

#include <stdio.h>
#include "options.h"

int cmd_list(int argc, char **argv);
int cmd_peak(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_table(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_merge(int argc, char **argv);

/* Prints "attnbench CMD: " and the formatted text on stderr as one line: control
 * characters in it (from file names, option values) are escaped. cmd NULL: none. */
void cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a subcommand's options into o. 0: go on. Otherwise the command is over with
 * exit status *status: 0 after --help, 2 after bad input (its one line printed). */
int cmd_options(int argc, char **argv, command_t cmd, options_t *o, int *status);

#endif
