/* Every kernel the harness can run, in order of sophistication (the order of `list`
 * and of the sweeps). Registering a kernel is one line here: ATTN_KERNEL(name) for
 * the `const attn_kernel_t kernel_<name>` that its file under kernels/ defines with
 * C linkage. registry.c expands this list twice, for the declarations and the table.
 * No include guard: each expansion defines ATTN_KERNEL before including it. */
ATTN_KERNEL(cublas)
ATTN_KERNEL(fused)
ATTN_KERNEL(cublas_bifurcated)
ATTN_KERNEL(bifurcated)
ATTN_KERNEL(auto)
ATTN_KERNEL(share)
ATTN_KERNEL(select_filter)
ATTN_KERNEL(select_attend)
ATTN_KERNEL(select_recompute)
/* Peers: other projects' kernels under the same harness (kernels/peers/); each is
 * built from the package `make peers` fetches, and is an unsupported stub without it. */
ATTN_KERNEL(flashinfer)
ATTN_KERNEL(xqa)
ATTN_KERNEL(flashinfer_cascade)
ATTN_KERNEL(cudnn)
