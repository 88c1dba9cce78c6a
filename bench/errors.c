/* Error lines of the commands: one line each, whatever the user typed into them. */
#include <stdarg.h>
#include <stdio.h>
#include "commands.h"
#include "options.h"

void cmd_error(const char *cmd, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* control characters (a newline in a file name) are written as C escapes */
    char line[4 * sizeof text];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
        if (*p >= 0x20 && *p != 0x7f) line[n++] = (char)*p;
        else if (*p == '\n') n += (size_t)sprintf(line + n, "\\n");
        else if (*p == '\r') n += (size_t)sprintf(line + n, "\\r");
        else if (*p == '\t') n += (size_t)sprintf(line + n, "\\t");
        else n += (size_t)sprintf(line + n, "\\x%02x", *p);
    }
    line[n] = '\0';
    fprintf(stderr, "attnbench%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "", line);
}

int cmd_options(int argc, char **argv, command_t cmd, options_t *o, int *status)
{
    char msg[512];
    int rc = options_parse(argc, argv, cmd, o, msg, sizeof msg);
    if (rc < 0) cmd_error(argv[0], "%s", msg);
    *status = rc < 0 ? 2 : 0;
    return rc;
}
