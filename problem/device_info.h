/* What the harness knows of the GPU a problem runs on; kernels plan from it. */
#ifndef ATTNBENCH_DEVICE_INFO_H
#define ATTNBENCH_DEVICE_INFO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct device_info {
    char name[128];          /* as the driver names it */
    char gpu[32];            /* short key used in CSVs and results/: "h100", "h200" */
    int cc;                  /* compute capability, major * 10 + minor (90: Hopper) */
    int sm_count;
    int smem_per_block_optin;
    int smem_per_sm;
    int l2_bytes;
    size_t free_bytes, total_bytes;
    double peak_read_gbps;   /* measured by `peak`; 0 before */
    double peak_tc_tflops;   /* measured fp16 tensor-core GEMM rate; 0 before */
    double peak_l2_gbps;     /* measured read rate of data L2 holds; 0 before */
} device_info_t;

/* Device memory left free for the CUDA context, cuBLAS and the driver's own needs:
 * a configuration (or a model preset's whole model) fits only with this to spare. */
#define MEM_HEADROOM ((size_t)512 << 20)

#ifdef __cplusplus
}
#endif
#endif
