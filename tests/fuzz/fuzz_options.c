/* libFuzzer target: the option parser of every command, and suite files. The first
 * byte picks what the rest is (its value mod 8): 0-6 the command line of list, peak,
 * run, sweep, verify, table or compare (words split at blanks and newlines), 7 the
 * text of a suite file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../bench/options.h"
#include "../../bench/suite.h"

#define WORDS 128

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (!freopen("/dev/null", "w", stdout)) return 0; /* --help text */
    snprintf(path, sizeof path, "/tmp/attnbench_fuzz_suite.%d.suite", (int)getpid());
    return 0;
}

static void parse_suite(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, size, f);
    fclose(f);
    suite_entry_t *e;
    int n;
    char msg[512];
    options_t base;
    const char *argv[] = {"sweep", "--dtype", "bf16", "--out", "x.csv", NULL};
    options_parse(5, (char **)argv, CMD_SWEEP, &base, msg, sizeof msg);
    if (suite_load(path, NULL, &e, &n, msg, sizeof msg) == 0) free(e);
    if (suite_load(path, &base, &e, &n, msg, sizeof msg) == 0) free(e);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int mode = data[0] % 8;
    if (mode == 7) {
        parse_suite(data + 1, size - 1);
        return 0;
    }
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    static const char *const names[] = {"list", "peak", "run", "sweep", "verify", "table", "compare"};
    char *argv[WORDS + 2];
    int argc = 0;
    argv[argc++] = (char *)names[mode];
    char *save = NULL;
    for (char *w = strtok_r(text, " \n", &save); w && argc <= WORDS; w = strtok_r(NULL, " \n", &save))
        argv[argc++] = w;
    argv[argc] = NULL;
    options_t o;
    char msg[512];
    options_parse(argc, argv, (command_t)mode, &o, msg, sizeof msg);
    free(text);
    return 0;
}
