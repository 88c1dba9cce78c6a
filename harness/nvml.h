/* What NVML says about the GPU: its maximum SM and memory clocks and memory bus
 * width, so its theoretical DRAM bandwidth. NVML is loaded at run time
 * (libnvidia-ml.so.1 comes with the driver), so the binary and the CPU tests run
 * on machines without a driver; there every figure is 0. */
#ifndef ATTNBENCH_NVML_H
#define ATTNBENCH_NVML_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nvml_info {
    double max_sm_mhz;    /* the SM clock's maximum (boost) */
    double max_mem_mhz;   /* the memory clock's maximum */
    int bus_bits;         /* memory bus width */
    double spec_gbps;     /* theoretical DRAM bandwidth (nvml_spec_gbps), 1e9 B/s */
} nvml_info_t;

/* Theoretical bandwidth of a memory clocked at mem_mhz on a bus_bits wide bus: two
 * transfers per clock (NVML reports HBM's and GDDR's clocks so), bus_bits / 8 bytes
 * each. 0 when either is unknown (<= 0). */
double nvml_spec_gbps(double mem_mhz, int bus_bits);

/* Fills *out for CUDA device `device`. Returns 0, or -1 (out all zeros) when NVML or
 * the device cannot be reached. */
int nvml_query(int device, nvml_info_t *out);

#ifdef __cplusplus
}
#endif
#endif
