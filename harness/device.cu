#include "device.h"

#include <stdio.h>
#include <string.h>

cudaError_t device_query(device_info_t *dev)
{
    if (!dev) return cudaErrorInvalidValue;
    memset(dev, 0, sizeof *dev);
    int id = 0;
    cudaError_t err = cudaGetDevice(&id);
    if (err != cudaSuccess) return err;

    cudaDeviceProp prop;
    err = cudaGetDeviceProperties(&prop, id);
    if (err != cudaSuccess) return err;
    snprintf(dev->name, sizeof dev->name, "%.*s", (int)sizeof dev->name - 1, prop.name);
    gpu_key_from_name(dev->name, dev->gpu, sizeof dev->gpu);

    /* Attributes rather than cudaDeviceProp fields: stable across toolkit versions. */
    const struct { cudaDeviceAttr attr; int *dst; } attrs[] = {
        {cudaDevAttrMultiProcessorCount, &dev->sm_count},
        {cudaDevAttrMaxSharedMemoryPerBlockOptin, &dev->smem_per_block_optin},
        {cudaDevAttrMaxSharedMemoryPerMultiprocessor, &dev->smem_per_sm},
        {cudaDevAttrL2CacheSize, &dev->l2_bytes},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; ++i) {
        err = cudaDeviceGetAttribute(attrs[i].dst, attrs[i].attr, id);
        if (err != cudaSuccess) { memset(dev, 0, sizeof *dev); return err; }
    }
    dev->cc = prop.major * 10 + prop.minor;
    err = cudaMemGetInfo(&dev->free_bytes, &dev->total_bytes);
    if (err != cudaSuccess) { memset(dev, 0, sizeof *dev); return err; }
    return cudaSuccess;
}

int device_available(void)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        cudaGetLastError();   /* no driver / no device is not sticky; clear it for later calls */
        return 0;
    }
    return n > 0;
}

int device_keys(char (*keys)[32], int max)
{
    int n = 0;
    if (!device_available() || cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    if (n > max) n = max;
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) return 0;
        gpu_key_from_name(prop.name, keys[i], sizeof keys[i]);
    }
    return n;
}
