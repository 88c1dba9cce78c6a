/* attnbench list: the kernels of the registry and what each supports. */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "usage.h"
#include "../kernels/registry.h"

int cmd_list(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage_print(stdout, "list");
        return 0;
    }
    if (argc > 1) {
        cmd_error("list", "unexpected argument '%s' (list takes none)", argv[1]);
        return 2;
    }
    for (int i = 0; attn_kernels[i]; ++i) {
        const attn_kernel_t *k = attn_kernels[i];
        printf("%-18s %s\n", k->name, k->summary);
        if (k->peer) printf("%-18s peer: %s\n", "", k->peer);
        printf("%-18s supports: %s\n", "", k->supports);
    }
    return 0;
}
