/* One XQA configuration, compiled from FlashInfer's copy of TensorRT-LLM's mha.cu.
 * The file that includes this defines XQA_TYPE (fp16 or bf16), INPUT_FP16 and
 * HEAD_GRP_SIZE, and XQA_CACHE_E4M3 1 for an e4m3 cache (else the cache is of the input
 * type); the other macros are the ones FlashInfer's JIT passes for a decode module
 * (flashinfer/jit/xqa.py: -DNDEBUG=1 -DBEAM_WIDTH=1 -DUSE_INPUT_KV=0
 * -DUSE_CUSTOM_BARRIER=1, no sliding window, no speculative decoding, output in the
 * input type). On Hopper FlashInfer runs this kernel (mha.cu) for 16-bit caches and its
 * mha_sm90.cu for e4m3 ones; the e4m3 configurations here are mha.cu's, TensorRT-LLM's
 * generic XQA kernel on an e4m3 cache (docs/peers-xqa.md says what that means for the
 * comparison).
 *
 * Several configurations share one binary: each is its own translation unit (device
 * code is per unit without relocatable device code), and the two launch functions of
 * mha.cu with external linkage are renamed per configuration. */
#ifndef XQA_TYPE
#error "define XQA_TYPE, INPUT_FP16 and HEAD_GRP_SIZE before including xqa_instance.cuh"
#endif

#include "xqa_instance.h"

#ifndef NDEBUG
#define NDEBUG 1
#endif
#define BEAM_WIDTH 1
#define USE_INPUT_KV 0
#define USE_CUSTOM_BARRIER 1
#define HEAD_ELEMS XQA_HEAD_DIM
#define TOKENS_PER_PAGE XQA_PAGE_TOKENS
#if XQA_CACHE_E4M3
#define CACHE_ELEM_ENUM 2
#else
#define XQA_CACHE_E4M3 0
#define CACHE_ELEM_ENUM 0
#endif
#define SLIDING_WINDOW 0
#define LOW_PREC_OUTPUT 0
#define SPEC_DEC 0

/* Everything mha.cu takes from the toolkit and the C++ library, ahead of the renames
 * below, so that they touch no declaration of the CUDA runtime. */
#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_runtime_api.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define XQA_PASTE2(a, b) a##b
#define XQA_PASTE(a, b) XQA_PASTE2(a, b)
#if XQA_CACHE_E4M3
#define XQA_ID(prefix) XQA_PASTE(XQA_PASTE(XQA_PASTE(prefix, XQA_TYPE), _e4m3_g), HEAD_GRP_SIZE)
#else
#define XQA_ID(prefix) XQA_PASTE(XQA_PASTE(XQA_PASTE(prefix, XQA_TYPE), _g), HEAD_GRP_SIZE)
#endif

/* mha.cu sizes its kernel's shared memory in a static initializer (hostSmemSize =
 * configureKernel()), which would create a CUDA context when the program loads, before
 * main: the harness forks its GPU processes after that, and a forked child cannot use a
 * context its parent made. While mha.cu is compiled, the two runtime calls that
 * initializer makes do nothing; setup below makes them for real, on the device the
 * harness chose, and launch passes the size it found. */
static inline cudaError_t xqa_no_runtime_at_load(uint32_t *bytes)
{
    *bytes = 0;
    return cudaSuccess;
}
#define cudaMemcpyFromSymbol(dst, symbol, bytes) xqa_no_runtime_at_load(dst)
#define cudaFuncSetAttribute(fn, attr, value) cudaSuccess
#define launchMHA XQA_ID(xqa_launch_mha_)
#define launchMHAFlashInfer XQA_ID(xqa_launch_mha_flashinfer_)

#include "mha.cu"

#undef cudaMemcpyFromSymbol
#undef cudaFuncSetAttribute

static_assert(ctaTile.x == XQA_CTA_KEYS, "the peer plans splits in tiles of XQA_CTA_KEYS keys");
static_assert(tokensPerPage == XQA_PAGE_TOKENS && validElemsPerHead == XQA_HEAD_DIM, "configuration");
static_assert(allowMultiBlockMode, "the peer splits keys over the grid's x dimension");

static cudaError_t xqa_setup(uint32_t *smem_bytes)
{
    uint32_t size = 0;
    cudaError_t e = cudaMemcpyFromSymbol(&size, smemSize, sizeof(smemSize));
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(kernel_mha, cudaFuncAttributeMaxDynamicSharedMemorySize, size);
    *smem_bytes = size;
    return e;
}

/* launchMHAFlashInfer (mha.cu) line for line, with the grid's x dimension (its
 * nbSubSeqPerSeq) and the shared memory size passed in, and the launch's error
 * returned where mha.cu's checkCuda would throw (through the peer's C interface). */
static cudaError_t xqa_launch(const xqa_launch_args_t *a, cudaStream_t stream)
{
    dim3 const dimGrid{a->sub_seqs, a->kv_heads, a->batch};
    dim3 const dimCta{warp_size * ctaShapeInWarps.x, ctaShapeInWarps.y, ctaShapeInWarps.z};
    auto const launchCfg = makeLaunchConfig(dimGrid, dimCta, a->smem_bytes, stream, a->pdl != 0);
    KVCacheList<true> const cacheList{
        static_cast<GMemCacheHead *>(const_cast<void *>(a->k_pool)),
        static_cast<GMemCacheHead *>(const_cast<void *>(a->v_pool)),
        a->pages, a->seq_lens, a->pages_per_seq};
    /* strides from elements to heads */
    uint32_t const container_elems_per_head = validElemsPerHead / CacheElemConverter::ElemsPerContainer;
    uint32_t const stride_page_in_heads = static_cast<uint32_t>(a->stride_page / container_elems_per_head);
    uint32_t const stride_token_in_heads = static_cast<uint32_t>(a->stride_token / container_elems_per_head);
    uint32_t const stride_head_in_heads = static_cast<uint32_t>(a->stride_head / container_elems_per_head);
    float const *const no_scale_ptr = nullptr;  /* q and kv scales are the floats */
    float const *const no_sinks = nullptr;
    cudaError_t e = cudaLaunchKernelEx(&launchCfg, kernel_mha, a->kv_heads, a->q_scale, no_scale_ptr,
                                       static_cast<OutputHead *>(a->out),
                                       static_cast<InputHead const *>(a->q), no_sinks, cacheList,
                                       a->batch, a->kv_scale, no_scale_ptr, stride_page_in_heads,
                                       stride_token_in_heads, stride_head_in_heads, a->semaphores,
                                       a->scratch);
    return e;
}

/* The segments kernel_mha cuts the scratch into with its multi-block partials (the
 * MemSegmenter at the end of kernel_mha_impl): row maxima, row sums, then a tile of
 * nbValidRows output rows per head slice, each segment aligned to its element size. */
static size_t xqa_scratch_bytes(size_t sub_seq_ctas)
{
    using ScratchBuf = Array2D<LdGrain, nbValidRows, SharedMem::XSmemBuffer::cols>;
    using ScratchSlices = Vec<ScratchBuf, gemm1WarpsPerGrp * nbHeadSplits>;
    return 2 * sub_seq_ctas * sizeof(SMemWarpRowMax) + sizeof(ScratchSlices) /* alignment */ +
           sub_seq_ctas * sizeof(ScratchSlices);
}

const xqa_instance_t XQA_ID(xqa_) = {INPUT_FP16, XQA_CACHE_E4M3, HEAD_GRP_SIZE, xqa_setup, xqa_launch,
                                     xqa_scratch_bytes};
