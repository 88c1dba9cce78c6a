/* attnbench peak: what this GPU can do, measured: the ceilings every row is
 * compared with (pct_peak_bw, roofline_us). */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "usage.h"
#include "../harness/device.h"
#include "../harness/nvml.h"
#include "../harness/peak_cache.h"

/* the source revision (build/version.c): the kept peaks are its probe's */
extern const char attnbench_version[];

int cmd_peak(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage_print(stdout, "peak");
        return 0;
    }
    if (argc > 1) {
        cmd_error("peak", "unexpected argument '%s' (peak takes none)", argv[1]);
        return 2;
    }
    if (!device_available()) {
        cmd_error(NULL, "no CUDA GPU is usable on this machine; peak needs one");
        return 1;
    }
    device_info_t dev;
    peak_t peak;
    cudaError_t e = device_query(&dev);
    if (e == cudaSuccess) e = peak_measure(&dev, &peak);
    /* kept for the runs of the next hour (peak_cache.h) */
    nvml_info_t nv;
    int id = 0;
    const int have_nvml = cudaGetDevice(&id) == cudaSuccess && nvml_query(id, &nv) == 0;
    if (!have_nvml) memset(&nv, 0, sizeof nv);
    char path[1024] = "";
    if (e == cudaSuccess) peak_keep(&nv, attnbench_version, &peak, path, sizeof path);
    if (e != cudaSuccess) {
        cmd_error("peak", "%s", cudaGetErrorString(e));
        return 1;
    }
    printf("gpu              %s (%s)\n", dev.name, dev.gpu);
    printf("sms              %d\n", dev.sm_count);
    printf("l2               %.0f MiB\n", dev.l2_bytes / 1048576.0);
    printf("memory           %.1f GiB free of %.1f GiB\n", dev.free_bytes / 1073741824.0,
           dev.total_bytes / 1073741824.0);
    printf("read_gbps        %.0f\n", peak.read_gbps);
    printf("read_shape       %s\n", peak.read_shape);
    printf("l2_read_gbps     %.0f\n", peak.l2_read_gbps);
    printf("copy_gbps        %.0f\n", peak.copy_gbps);
    printf("fp16_tc_tflops   %.0f\n", peak.tc_tflops);
    /* the card's own figures (NVML): the theoretical bandwidth rows' pct_spec_bw is
     * against, and the SM clock under 90% of which a row is flagged throttled */
    if (have_nvml) {
        printf("spec_gbps        %.0f (memory clock %.0f MHz x %d-bit bus, NVML)\n", nv.spec_gbps,
               nv.max_mem_mhz, nv.bus_bits);
        printf("max_sm_mhz       %.0f\n", nv.max_sm_mhz);
        printf("read_pct_spec    %.1f\n", 100.0 * peak.read_gbps / nv.spec_gbps);
    } else {
        printf("spec_gbps        unknown (NVML not reachable)\n");
    }
    printf("kept_in          %s\n", path[0] ? path : "nowhere (no cache directory could be written)");
    return 0;
}
