/* The registry: every kernel of kernel_list.h, in its order. */
#include <string.h>
#include "registry.h"

#define ATTN_KERNEL(name) extern const attn_kernel_t kernel_##name;
#include "kernel_list.h"
#undef ATTN_KERNEL

const attn_kernel_t *const attn_kernels[] = {
#define ATTN_KERNEL(name) &kernel_##name,
#include "kernel_list.h"
#undef ATTN_KERNEL
    NULL,
};

const attn_kernel_t *attn_kernel_find(const char *name)
{
    for (int i = 0; attn_kernels[i]; ++i)
        if (strcmp(attn_kernels[i]->name, name) == 0) return attn_kernels[i];
    return NULL;
}

const char *attn_kernel_unsupported(const attn_kernel_t *k, const problem_t *p)
{
    if (p->step == STEP_APPEND && !k->runs_append)
        return "--step append runs on fused, bifurcated and auto (the layouts its append kernel writes)";
    return k->unsupported(p);
}
