#include "nvml.h"

#include <dlfcn.h>
#include <string.h>
#include <cuda_runtime_api.h>

/* The few NVML entry points used, as nvml.h declares them (the toolkit here ships no
 * nvml.h; the ABI of these calls is stable across driver versions). */
typedef int nvml_return_t;   /* 0: NVML_SUCCESS */
typedef struct nvml_device *nvml_device_t;
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

double nvml_spec_gbps(double mem_mhz, int bus_bits)
{
    if (!(mem_mhz > 0) || bus_bits <= 0) return 0.0;
    return 2.0 * mem_mhz * 1e6 * (bus_bits / 8.0) / 1e9;
}

int nvml_query(int device, nvml_info_t *out)
{
    memset(out, 0, sizeof *out);
    char bus_id[32];
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return -1;
    nvml_return_t (*init)(void) = (nvml_return_t (*)(void))dlsym(lib, "nvmlInit_v2");
    nvml_return_t (*shutdown)(void) = (nvml_return_t (*)(void))dlsym(lib, "nvmlShutdown");
    nvml_return_t (*by_bus)(const char *, nvml_device_t *) =
        (nvml_return_t (*)(const char *, nvml_device_t *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_return_t (*max_clock)(nvml_device_t, int, unsigned *) =
        (nvml_return_t (*)(nvml_device_t, int, unsigned *))dlsym(lib, "nvmlDeviceGetMaxClockInfo");
    nvml_return_t (*bus_width)(nvml_device_t, unsigned *) =
        (nvml_return_t (*)(nvml_device_t, unsigned *))dlsym(lib, "nvmlDeviceGetMemoryBusWidth");
    int rc = -1;
    if (init && shutdown && by_bus && max_clock && bus_width && init() == 0) {
        nvml_device_t dev;
        unsigned sm = 0, mem = 0, bits = 0;
        if (by_bus(bus_id, &dev) == 0 && max_clock(dev, NVML_CLOCK_SM, &sm) == 0 &&
            max_clock(dev, NVML_CLOCK_MEM, &mem) == 0 && bus_width(dev, &bits) == 0) {
            out->max_sm_mhz = sm;
            out->max_mem_mhz = mem;
            out->bus_bits = (int)bits;
            out->spec_gbps = nvml_spec_gbps(mem, (int)bits);
            rc = 0;
        }
        shutdown();
    }
    dlclose(lib);
    return rc;
}
