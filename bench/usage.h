/* Help texts of attnbench and its subcommands. */
#ifndef ATTNBENCH_USAGE_H
#define ATTNBENCH_USAGE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* command NULL (or unknown): the top-level help; otherwise that subcommand's help,
 * the one place each command's help is written. */
void usage_print(FILE *f, const char *command);

#ifdef __cplusplus
}
#endif
#endif
