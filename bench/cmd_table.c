/* attnbench table: pivots of results CSVs, and the paper's Tables 6 and 7. */
#include <stdio.h>

#include "../report/csv.h"
#include "../report/table.h"
#include "commands.h"
#include "options.h"

/* Reads one --in file. Files from before the kv_dtype, step, ctx_dist and q_len columns
 * get them (each row's cache was in its dtype, each step attend, its batch not ragged,
 * one query token per stream), so that --rows, --cols and --where take them whatever
 * the file. Returns 0, or 2 after the one-line error. */
static int read_input(const char *path, csv_table_t *t)
{
    char msg[512];
    if (csv_read(path, t, msg, sizeof msg) != 0) {
        cmd_error("table", "%s", msg);
        return 2;
    }
    if (csv_add_kv_dtype(t, msg, sizeof msg) != 0 || csv_add_step(t, msg, sizeof msg) != 0 ||
        csv_add_ctx_dist(t, msg, sizeof msg) != 0 || csv_add_q_len(t, msg, sizeof msg) != 0) {
        cmd_error("table", "%s: %s", path, msg);
        csv_free(t);
        return 2;
    }
    return 0;
}

int cmd_table(int argc, char **argv)
{
    options_t o;
    int status;
    if (cmd_options(argc, argv, CMD_TABLE, &o, &status) != 0) return status;
    char msg[512];
    csv_table_t t, more;
    if (read_input(o.inputs[0], &t) != 0) return 2;
    for (int i = 1; i < o.n_inputs; i++) {
        if (read_input(o.inputs[i], &more) != 0) {
            csv_free(&t);
            return 2;
        }
        int rc = csv_append(&t, &more, msg, sizeof msg);
        csv_free(&more);
        if (rc != 0) {
            cmd_error("table", "%s: %s", o.inputs[i], msg);
            csv_free(&t);
            return 2;
        }
    }
    int rc = table_render(stdout, &t, &o.table, msg, sizeof msg);
    csv_free(&t);
    if (rc != 0) {
        cmd_error("table", "%s", msg);
        return 2;
    }
    return 0;
}
