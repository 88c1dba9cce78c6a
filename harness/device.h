/* What the harness learns about the GPU it runs on. Callable from C11; the CUDA
 * parts are implemented in device.cu, the name handling in gpu_key.c. */
#ifndef ATTNBENCH_DEVICE_H
#define ATTNBENCH_DEVICE_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include "../problem/device_info.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills *dev for the current device: name, short key gpu, SM count, shared-memory
 * limits (opt-in per block, per SM), L2 size, free/total memory. The measured
 * peaks (peak_read_gbps, peak_tc_tflops, peak_l2_gbps) are set to 0: peak_measure finds them.
 * On error *dev holds zeros and the error is returned. */
cudaError_t device_query(device_info_t *dev);

/* 1 when a CUDA device is usable, 0 without driver or device. Never aborts and
 * leaves no pending CUDA error behind. */
int device_available(void);

/* The short key (gpu_key_from_name) of each of the first max devices this process
 * sees; returns how many, 0 without driver or device. Initialises CUDA in the calling
 * process: `--devices` calls it in a child, so that the workers it forks after start
 * clean. */
int device_keys(char (*keys)[32], int max);

/* The short key of a device name used in CSV rows and results/<gpu>/:
 * "NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA H200" -> "h200",
 * "NVIDIA A100-SXM4-80GB" -> "a100", "NVIDIA GeForce RTX 4090" -> "rtx4090".
 * Vendor and brand words (NVIDIA, GeForce, Tesla, Quadro) are skipped, the first
 * remaining word is taken up to its first '-' (joined with the next word when it
 * is a bare "RTX"/"GTX"), lowercased and kept to [a-z0-9]. "gpu" when nothing is
 * left. Always NUL-terminates key when len > 0. */
void gpu_key_from_name(const char *name, char *key, size_t len);

#ifdef __cplusplus
}
#endif
#endif
