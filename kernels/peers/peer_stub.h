/* A peer whose package is not there: `make` built it without FlashInfer's or the cuDNN
 * frontend's headers (make peers fetches them). It stays in `list`, and every row of
 * it is `unsupported` with that reason, so a sweep that names it drops nothing silently. */
#ifndef ATTNBENCH_PEER_STUB_H
#define ATTNBENCH_PEER_STUB_H

#include "../registry.h"

#define ATTN_PEER_NOT_BUILT(id, kname, ksummary, package)                               \
    static const char *id##_not_built(const problem_t *p)                               \
    {                                                                                    \
        (void)p;                                                                         \
        return "not built: `make peers` fetches " package ", then make";                \
    }                                                                                    \
    extern "C" const attn_kernel_t kernel_##id = {                                       \
        kname, ksummary, "nothing: not built (make peers)", id##_not_built,              \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, package " (not built)"};

#endif
