/* Between the `xqa` peer (kernels/peers/xqa.cu) and TensorRT-LLM's XQA kernel as
 * FlashInfer ships it (mha.cu). XQA is configured by macros (head size, input type,
 * page size, query heads per kv head), so each configuration is its own translation
 * unit under kernels/peers/xqa/, built from xqa_instance.cuh; this header is all that
 * the peer sees of them. */
#ifndef ATTNBENCH_XQA_INSTANCE_H
#define ATTNBENCH_XQA_INSTANCE_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* The configuration every instantiation shares: FlashInfer's module for head size 128
 * and 64-token pages; the cache is of the input type (CACHE_ELEM_ENUM 0) or e4m3 (2). */
#define XQA_HEAD_DIM 128
#define XQA_PAGE_TOKENS 64
/* Keys of one CTA tile (mha.cu's ctaTile.x): its split-KV unit. */
#define XQA_CTA_KEYS 256

/* One launch, as FlashInfer's launchMHAFlashInfer takes it. Strides are in elements. */
typedef struct xqa_launch_args {
    void *out;                /* [batch, h, d] */
    const void *q;            /* [batch, h, d] */
    const void *k_pool;       /* page p of kv head j at k_pool + p*stride_page + j*stride_head */
    const void *v_pool;
    const int32_t *pages;     /* [batch, pages_per_seq], K and V share it */
    uint32_t pages_per_seq;   /* the row length of pages: max_seq_len / XQA_PAGE_TOKENS */
    const uint32_t *seq_lens; /* [batch] */
    uint32_t batch, kv_heads;
    uint32_t sub_seqs;        /* CTAs per (sequence, kv head): XQA's multi-block split */
    float q_scale;            /* multiplies q.k with kv_scale / sqrt(d) */
    float kv_scale;           /* an e4m3 cache's one scale (K's and V's); 1 otherwise */
    uint64_t stride_page, stride_token, stride_head;
    uint32_t *semaphores;     /* [batch * kv_heads], zero before the first launch */
    void *scratch;            /* scratch_bytes(sub_seqs * batch * kv_heads) */
    uint32_t smem_bytes;      /* what setup returned */
    int pdl;                  /* programmatic dependent launch */
} xqa_launch_args_t;

typedef struct xqa_instance {
    int fp16;   /* 1: fp16 inputs, 0: bf16 */
    int e4m3;   /* 1: an e4m3 cache (CACHE_ELEM_ENUM 2), 0: a cache of the input type */
    int group;  /* query heads per kv head (HEAD_GRP_SIZE) */
    /* Sets the kernel's dynamic shared memory on the current device; returns its size. */
    cudaError_t (*setup)(uint32_t *smem_bytes);
    cudaError_t (*launch)(const xqa_launch_args_t *a, cudaStream_t stream);
    /* Scratch of the multi-block partials for this many (sub-sequence, kv head) CTAs. */
    size_t (*scratch_bytes)(size_t sub_seq_ctas);
} xqa_instance_t;

/* Every instantiation: (its file kernels/peers/xqa/<name>.cu, INPUT_FP16, e4m3 cache,
 * HEAD_GRP_SIZE). The e4m3 ones are the batch grid's (h 32 over g 8 and 1); each
 * configuration compiles for minutes, so there are no more. */
#define XQA_INSTANCES(X)                                                               \
    X(fp16_g1, 1, 0, 1) X(fp16_g2, 1, 0, 2) X(fp16_g4, 1, 0, 4) X(fp16_g8, 1, 0, 8)     \
    X(fp16_g16, 1, 0, 16) X(fp16_g32, 1, 0, 32)                                         \
    X(bf16_g1, 0, 0, 1) X(bf16_g2, 0, 0, 2) X(bf16_g4, 0, 0, 4) X(bf16_g8, 0, 0, 8)     \
    X(bf16_g16, 0, 0, 16) X(bf16_g32, 0, 0, 32)                                         \
    X(fp16_e4m3_g4, 1, 1, 4) X(fp16_e4m3_g32, 1, 1, 32)

#define XQA_DECLARE(name, fp16, e4m3, group) extern const xqa_instance_t xqa_##name;
XQA_INSTANCES(XQA_DECLARE)
#undef XQA_DECLARE

#endif
