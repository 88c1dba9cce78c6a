/* The registry's kernels by name only, for the fuzz targets: the option parser
 * looks kernels up by name and never launches one, so the fuzzers build without
 * the CUDA sources. */
#include "../../kernels/registry.h"

const attn_kernel_t kernel_cublas = {.name = "cublas"};
const attn_kernel_t kernel_fused = {.name = "fused"};
const attn_kernel_t kernel_cublas_bifurcated = {.name = "cublas-bifurcated"};
const attn_kernel_t kernel_bifurcated = {.name = "bifurcated"};
const attn_kernel_t kernel_auto = {.name = "auto"};
const attn_kernel_t kernel_share = {.name = "share", .approx = ATTN_APPROX_SHARE};
/* a selection hook marks Select-Attention's steps (run when named) */
static cudaError_t no_selection(const attn_args_t *a, unsigned char *chosen)
{
    (void)a;
    (void)chosen;
    return cudaErrorNotSupported;
}
const attn_kernel_t kernel_select_filter = {.name = "select-filter", .selection = no_selection};
const attn_kernel_t kernel_select_attend = {.name = "select-attend", .approx = ATTN_APPROX_SELECT,
                                            .selection = no_selection};
const attn_kernel_t kernel_select_recompute = {.name = "select-recompute", .approx = ATTN_APPROX_RECOMPUTE,
                                               .selection = no_selection};
const attn_kernel_t kernel_flashinfer = {.name = "flashinfer", .peer = "FlashInfer 0.7.2"};
const attn_kernel_t kernel_xqa = {.name = "xqa", .peer = "FlashInfer 0.7.2"};
const attn_kernel_t kernel_flashinfer_cascade = {.name = "flashinfer-cascade", .peer = "FlashInfer 0.7.2"};
const attn_kernel_t kernel_cudnn = {.name = "cudnn", .peer = "cuDNN frontend 1.32.0"};
