/* attnbench compare BASE.csv NEW.csv: the regression check of SPEC §8. */
#include <stdio.h>

#include "../report/compare.h"
#include "commands.h"
#include "options.h"

int cmd_compare(int argc, char **argv)
{
    options_t o;
    int status;
    if (cmd_options(argc, argv, CMD_COMPARE, &o, &status) != 0) return status;
    char msg[512];
    int rc = compare_files(o.files[0], o.files[1], o.threshold, o.changes_only, stdout, msg,
                       sizeof msg);
    if (rc == 2) cmd_error("compare", "%s", msg);
    return rc;
}
