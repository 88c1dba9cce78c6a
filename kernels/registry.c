/* The registry: every kernel the harness can run, in order of sophistication.
 * A new kernel is one file under kernels/ and one line here. */
#include <string.h>
#include "registry.h"

extern const attn_kernel_t kernel_cublas;
extern const attn_kernel_t kernel_fused;
extern const attn_kernel_t kernel_cublas_bifurcated;
extern const attn_kernel_t kernel_bifurcated;
extern const attn_kernel_t kernel_auto;

const attn_kernel_t *const attn_kernels[] = {
    &kernel_cublas,
    &kernel_fused,
    &kernel_cublas_bifurcated,
    &kernel_bifurcated,
    &kernel_auto,
    NULL,
};

const attn_kernel_t *attn_kernel_find(const char *name)
{
    for (int i = 0; attn_kernels[i]; ++i)
        if (strcmp(attn_kernels[i]->name, name) == 0) return attn_kernels[i];
    return NULL;
}
