/* attnbench peak: what this GPU can do, measured: the ceilings every row is
 * compared with (pct_peak_bw, roofline_us). */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "usage.h"
#include "../harness/device.h"
#include "../harness/peak.h"

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
    printf("l2_read_gbps     %.0f\n", peak.l2_read_gbps);
    printf("copy_gbps        %.0f\n", peak.copy_gbps);
    printf("fp16_tc_tflops   %.0f\n", peak.tc_tflops);
    return 0;
}
