#include "nvtx.h"

#include <stdint.h>
#include <stdio.h>
#include <nvtx3/nvToolsExt.h>

static nvtxDomainHandle_t attnbench_domain;

static nvtxDomainHandle_t domain(void)
{
    if (!attnbench_domain) attnbench_domain = nvtxDomainCreateA("attnbench");
    return attnbench_domain;
}

/* A colour derived from the name (FNV-1a), so that the same phase or
 * configuration keeps its colour across a timeline and neighbours differ. */
static uint32_t name_colour(const char *name)
{
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; ++c) h = (h ^ (unsigned char)*c) * 16777619u;
    return 0xff000000u | (h & 0x00ffffffu);
}

void nvtx_push(const char *name)
{
    if (!name) name = "";
    nvtxEventAttributes_t attr = {0};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.colorType = NVTX_COLOR_ARGB;
    attr.color = name_colour(name);
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = name;
    nvtxDomainRangePushEx(domain(), &attr);
}

void nvtx_pop(void)
{
    nvtxDomainRangePop(domain());
}

void nvtx_config_name(char *buf, size_t len, const char *kernel, const problem_t *p)
{
    if (!buf || len == 0) return;
    buf[0] = '\0';
    int n = 0;
    if (kernel && *kernel) {
        n = snprintf(buf, len, "%s%s", kernel, p ? " " : "");
        if (n < 0 || (size_t)n >= len) return;
    }
    if (p) problem_describe(p, buf + n, len - (size_t)n);
}
