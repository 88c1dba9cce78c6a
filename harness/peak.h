/* Measured ceilings of this GPU: `attnbench peak`, the denominator of
 * pct_peak_bw and the terms of roofline_us (SPEC §6). Callable from C11. */
#ifndef ATTNBENCH_PEAK_H
#define ATTNBENCH_PEAK_H

#include <cuda_runtime_api.h>
#include "../problem/device_info.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peak {
    double read_gbps;   /* sustained streaming read far past L2, best over launch shapes, 1e9 B/s */
    char read_shape[160]; /* the shape that read it */
    double l2_read_gbps; /* the same reads over a quarter of L2, many passes: L2 hits (shared paged blocks) */
    double copy_gbps;   /* device-to-device cudaMemcpyAsync, bytes read + written */
    double tc_tflops;   /* cublasGemmEx 8192^3, fp16 inputs and output, fp32 compute */
} peak_t;

/* Runs the four measurements (a few seconds; needs about 4.5 GiB of free device
 * memory, less is used when less is free). *out holds zeros on error. The caller
 * copies read_gbps, l2_read_gbps and tc_tflops into device_info_t's peak fields. */
cudaError_t peak_measure(const device_info_t *dev, peak_t *out);

#ifdef __cplusplus
}
#endif
#endif
